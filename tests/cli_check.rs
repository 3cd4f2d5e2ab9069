//! `toolgate check` through the real binary: the score bounds (text and
//! JSON), the declared properties and their exit code, and every reported
//! counterexample fed to `toolgate eval --input`, which must show the
//! violation.

mod common;

use common::toolgate;
use serde_json::Value;

const DEFAULT: &str = include_str!("../policies/default.toml");

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn check_prints_the_default_policys_exact_bounds() {
    let out = toolgate(&["check"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "score bounds, any tool the policy admits: raw [0.01, 1.15], clamped [0.01, 1], exact (both attained)"
        ),
        "{text}"
    );
    assert!(
        text.contains("properties: 6 declared, 6 hold, 0 fail"),
        "{text}"
    );
    assert!(
        text.contains("note: policies/default.toml (embedded):12:9: for some tool the policy admits, raw scores reach 1.15"),
        "{text}"
    );
}

#[test]
fn check_json_gives_score_bounds_and_properties() {
    let out = toolgate(&["check", "--format", "json"], None);
    assert!(out.status.success());
    let v = json(&out);
    let b = &v["score_bounds"];
    let raw: Vec<f64> = b["raw"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(
        (raw[0] - 0.01).abs() < 1e-12 && (raw[1] - 1.15).abs() < 1e-12,
        "{raw:?}"
    );
    assert_eq!(b["clamped"][1], 1.0);
    assert_eq!(b["exact"], true);
    assert!(v["catalog_bounds"]["raw"].is_array());
    let props = v["properties"].as_array().unwrap();
    assert_eq!(props.len(), 6);
    for p in props {
        for key in ["name", "holds", "method", "tool", "counterexample"] {
            assert!(p.get(key).is_some(), "{key} missing in {p}");
        }
        assert_eq!(p["holds"], true);
        assert_eq!(p["method"], "static");
    }
    assert_eq!(v["ok"], true);
}

#[test]
fn the_witnesses_of_the_bounds_reproduce_with_eval() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(&toolgate(&["check", "--format", "json"], None));
    for scope in ["score_bounds", "catalog_bounds"] {
        for (end, i) in [("lowest", 0), ("highest", 1)] {
            let w = &v[scope][end];
            let f = dir.path().join(format!("{scope}-{end}.json"));
            std::fs::write(&f, w["input"].to_string()).unwrap();
            let out = toolgate(
                &["eval", "--input", f.to_str().unwrap(), "--format", "json"],
                None,
            );
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let e = json(&out);
            let tool = e["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == w["tool"])
                .unwrap();
            let bound = v[scope]["raw"][i].as_f64().unwrap();
            assert!(
                (tool["raw_score"].as_f64().unwrap() - bound).abs() < 1e-12,
                "{tool}"
            );
        }
    }
}

/// One failing property of each kind.
const FAILING: &str = r#"
[[properties]]
name = "raw below 0.95"
raw_score_within = [0.0, 0.95]

[[properties]]
name = "scores above 0.05"
score_within = [0.05, 1.0]

[[properties]]
name = "complexity helps"
monotone = { feature = "complexity_penalty", direction = "increasing" }

[[properties]]
name = "the file reader is always available"
always_active = ["filesystem.read_text_file"]

[[properties]]
name = "the shell never shows"
never_active = ["shell.run_command"]

[[properties]]
name = "at most 10 tools"
active_count_within = [0, 10]
"#;

#[test]
fn failing_properties_exit_4_and_every_counterexample_reproduces_with_eval() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, format!("{DEFAULT}\n{FAILING}")).unwrap();
    let p = policy.to_str().unwrap();
    let out = toolgate(&["check", "--policy", p, "--format", "json"], None);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["ok"], false);
    let props = v["properties"].as_array().unwrap();
    let failing: Vec<&Value> = props.iter().filter(|p| p["holds"] == false).collect();
    assert_eq!(failing.len(), 6, "{props:?}");
    for (k, prop) in failing.iter().enumerate() {
        let c = &prop["counterexample"];
        assert!(c.is_object(), "{prop}");
        let f = dir.path().join(format!("cex{k}.json"));
        std::fs::write(&f, serde_json::to_string_pretty(c).unwrap()).unwrap();
        let out = toolgate(
            &[
                "eval",
                "--policy",
                p,
                "--input",
                f.to_str().unwrap(),
                "--format",
                "json",
            ],
            None,
        );
        assert!(
            out.status.success(),
            "{prop}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let e = json(&out);
        let tools = e["tools"].as_array().unwrap();
        let get = |name: &str| {
            tools
                .iter()
                .find(|t| t["name"] == name)
                .unwrap_or_else(|| panic!("{name} not in {e}"))
        };
        let tool = prop["tool"].as_str();
        let name = prop["name"].as_str().unwrap();
        match name {
            "raw below 0.95" => assert!(get(tool.unwrap())["raw_score"].as_f64().unwrap() > 0.95),
            "scores above 0.05" => assert!(get(tool.unwrap())["score"].as_f64().unwrap() < 0.05),
            "complexity helps" => {
                let raised = get(tool.unwrap())["raw_score"].as_f64().unwrap();
                let base = get("toolgate.baseline")["raw_score"].as_f64().unwrap();
                assert!(raised < base, "{raised} vs {base}");
            }
            "the file reader is always available" => {
                assert_eq!(get(tool.unwrap())["active"], false)
            }
            "the shell never shows" => assert_eq!(get(tool.unwrap())["active"], true),
            "at most 10 tools" => {
                assert!(tool.is_none());
                assert!(e["active"].as_array().unwrap().len() > 10);
            }
            other => panic!("unexpected property {other}"),
        }
    }
    // the text output names each failure, its counterexample and how to reproduce it
    let out = toolgate(&["check", "--policy", p], None);
    assert_eq!(out.status.code(), Some(4));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("FAILED: policy `default`"), "{text}");
    assert!(
        text.contains("properties: 12 declared, 6 hold, 6 fail"),
        "{text}"
    );
    assert!(
        text.contains("FAIL the file reader is always available [always_active, Static]"),
        "{text}"
    );
    assert!(
        text.contains("counterexample (tool filesystem.read_text_file): {"),
        "{text}"
    );
}

#[test]
fn an_unreachable_threshold_fails_to_load_naming_the_highest_score() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    let text = DEFAULT
        .replacen("w_domain = 0.30", "w_domain = 0.0", 1)
        .replacen("threshold = 0.4 ", "threshold = 0.9 ", 1);
    std::fs::write(&policy, &text).unwrap();
    let out = toolgate(&["check", "--policy", policy.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("threshold 0.9 can never be reached: the highest score is 0.85"),
        "{err}"
    );
    assert!(err.contains("policy.toml:11:13"), "{err}");
}
