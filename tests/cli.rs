//! The real `toolgate` binary, run as a user would.

use std::process::{Command, Output, Stdio};

mod common;
use common::toolgate;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn check_passes_on_the_shipped_defaults() {
    let o = toolgate(&["check"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("ok: policy `default`"), "{out}");
    assert!(out.contains("tools: 71"), "{out}");
    assert!(out.contains("examples: 3 checked"), "{out}");
}

#[test]
fn check_passes_on_both_presets_from_files() {
    for p in ["policies/default.toml", "policies/seed-article.toml"] {
        let o = toolgate(
            &[
                "check",
                "--policy",
                p,
                "--tags",
                "tool-tags",
                "--format",
                "json",
            ],
            None,
        );
        assert!(o.status.success(), "{p}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["ok"], true);
        assert_eq!(v["tools"], 71);
    }
}

#[test]
fn check_reports_a_bad_policy_with_location_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    let text = std::fs::read_to_string("policies/default.toml")
        .unwrap()
        .replacen("w_keyword = 0.25", "w_keyword = \"high\"", 1);
    std::fs::write(&p, &text).unwrap();
    let o = toolgate(&["check", "--policy", p.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(1));
    let line = text
        .lines()
        .position(|l| l.starts_with("w_keyword"))
        .unwrap()
        + 1;
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "bad.toml:{line}:13: `score.weights.w_keyword` must be a number, found a string"
        )),
        "{err}"
    );
    assert!(
        err.contains("toolgate::wrong_type"),
        "miette report missing: {err}"
    );
    assert!(stdout(&o).is_empty());
}

#[test]
fn check_fuzz_passes_on_the_default_and_catches_nan() {
    let o = toolgate(&["check", "--fuzz", "300", "--seed", "7"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("fuzz: 300 random sessions, 0 violation(s)"));

    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nan.toml");
    let text = std::fs::read_to_string("policies/default.toml")
        .unwrap()
        .replacen(
            "formula = \"w_domain*domain_match",
            "formula = \"math::sqrt((stage_match - 0.2) * (stage_match - 0.8)) + w_domain*domain_match",
            1,
        );
    let text = text.split("[[examples]]").next().unwrap().to_string();
    std::fs::write(&p, text).unwrap();
    let o = toolgate(
        &["check", "--policy", p.to_str().unwrap(), "--fuzz", "50"],
        None,
    );
    assert_eq!(o.status.code(), Some(4), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("the formula gave NaN"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn eval_json_has_the_documented_shape() {
    let o = toolgate(
        &[
            "eval",
            "--input",
            "examples/sql-session.json",
            "--format",
            "json",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["effective_threshold"].as_f64().unwrap(), 0.4 * 0.6);
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 71);
    let rq = tools
        .iter()
        .find(|t| t["name"] == "sqlite.read_query")
        .unwrap();
    assert_eq!(rq["active"], true);
    let terms = rq["terms"].as_object().unwrap();
    for f in [
        "domain_match",
        "keyword_match",
        "stage_match",
        "usage_bonus",
        "priority_bonus",
        "complexity_penalty",
        "recency_bonus",
    ] {
        assert!(terms.contains_key(f), "missing term {f}");
    }
    let sum: f64 = terms
        .values()
        .map(|t| t["contribution"].as_f64().unwrap())
        .sum();
    assert!((sum - rq["raw_score"].as_f64().unwrap()).abs() < 1e-12);
    // active tools come first
    let first_inactive = tools.iter().position(|t| t["active"] == false).unwrap();
    assert!(tools[first_inactive..].iter().all(|t| t["active"] == false));
}

#[test]
fn eval_accepts_a_seed_vector_line_as_is() {
    let line = std::fs::read_to_string("tests/data/seed-vectors/registry.jsonl")
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    let o = toolgate(&["eval", "--input", "-", "--format", "json"], Some(&line));
    assert!(o.status.success(), "{}", stderr(&o));
    let out: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        out["effective_threshold"],
        v["expected"]["effective_threshold"]
    );
    let mut active: Vec<String> = out["active"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    active.sort();
    let want: Vec<String> = serde_json::from_value(v["expected"]["active"].clone()).unwrap();
    assert_eq!(active, want);
}

#[test]
fn eval_text_lists_active_tools_first() {
    let o = toolgate(&["eval", "--input", "examples/chinese-request.json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let active = out.find("ACTIVE (").unwrap();
    let inactive = out.find("INACTIVE (").unwrap();
    assert!(active < inactive);
    let rq = out.find("sqlite.read_query").unwrap();
    assert!(
        rq > active && rq < inactive,
        "the Chinese database request must activate sqlite.read_query:\n{out}"
    );
    assert!(out.contains("数据 据库"), "{out}");
    // Ranked before the cut to max_count = 10: the real word 用户 is kept,
    // the pairs across word boundaries (下数 across 一下|数据库, 库中) go.
    let terms = out
        .lines()
        .find_map(|l| l.strip_prefix("intent terms: "))
        .unwrap();
    let terms: Vec<&str> = terms.split(' ').collect();
    assert_eq!(terms.len(), 10, "{terms:?}");
    assert!(terms.contains(&"用户"), "{terms:?}");
    assert!(
        !terms.contains(&"下数") && !terms.contains(&"库中"),
        "{terms:?}"
    );
}

#[test]
fn explain_gives_terms_and_reason() {
    let o = toolgate(
        &[
            "explain",
            "sqlite.read_query",
            "--input",
            "examples/sql-session.json",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("sqlite.read_query: ACTIVE"), "{out}");
    assert!(out.contains("w_domain * domain_match"));
    assert!(out.contains("cold start: 3 calls < 5"));
    let o = toolgate(
        &[
            "explain",
            "sqlite.read_querry",
            "--input",
            "examples/sql-session.json",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(5));
    assert!(
        stderr(&o).contains("did you mean `sqlite.read_query`?"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_input_is_exit_3_with_a_clear_message() {
    let o = toolgate(
        &["eval", "--input", "-"],
        Some("{\"context\": {\"conversation_stage\": 3}}"),
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains(
            "error: -:1:36: `context.conversation_stage` must be a string, found the number 3"
        ),
        "{}",
        stderr(&o)
    );
    let o = toolgate(
        &["eval", "--input", "-"],
        Some("{\"context\": {\"conversation_stage\": \"debuging\"}}"),
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("did you mean `debugging`?"),
        "{}",
        stderr(&o)
    );
    let o = toolgate(
        &["eval", "--input", "-"],
        Some("{\"usage\": {\"call_counts\": {\"nope\": 1}}}"),
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("`nope`, which is not in the catalog"));
    let o = toolgate(&["eval", "--input", "-"], Some("{\"contxt\": {}}"));
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("error: -:1:2: unknown key `contxt` at the top level of the input (did you mean `context`?)"),
        "{}",
        stderr(&o)
    );
}

/// The six bad inputs of the newcomer pass: each error names the file and the
/// place once, the JSON path, the JSON type expected, and no Rust type.
#[test]
fn input_errors_name_the_json_path_and_type() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string("examples/sql-session.json")
        .unwrap()
        .replace("420.0", "\"seven minutes\"");
    let cases = [
        (
            text.as_str(),
            "bad.json:9:47: `context.session_duration_seconds` must be a number, found the string \"seven minutes\"",
        ),
        (
            "",
            "bad.json:1:1: the input is empty; expected a JSON object",
        ),
        (
            "{\"context\": {\"active_files\": \"a.py\"}}",
            "bad.json:1:35: `context.active_files` must be an array, found the string \"a.py\"",
        ),
        (
            "{\"usage\": {\"call_counts\": {\"git.git_log\": \"3\"}}}",
            "`usage.call_counts[`git.git_log`]` must be a number, found the string \"3\"",
        ),
        (
            "{\"context\": {\"project_typ\": \"web\"}}",
            "unknown key `project_typ` in `context` (did you mean `project_type`?)",
        ),
        (
            "{\"message\": \"hi\"",
            "bad.json:1:16: the input ends inside an object",
        ),
    ];
    for (input, want) in cases {
        let f = dir.path().join("bad.json");
        std::fs::write(&f, input).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["eval", "--input", "bad.json"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{e}");
        assert!(e.contains(want), "want {want}\ngot {e}");
        for rust in ["f64", "u64", "struct ", "sequence", "EOF", " at line "] {
            assert!(!e.contains(rust), "{rust} in {e}");
        }
    }
}

/// Outside the repository the shipped policy and tags come from the binary,
/// and `check` says so.
#[test]
fn check_marks_the_embedded_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let out = run(&["check"]);
    assert!(
        out.starts_with("ok: policy `default` from policies/default.toml (embedded)\n"),
        "{out}"
    );
    assert!(
        out.contains("tools: 71 (0 auto-tagged) from 10 file(s) (embedded tool-tags/)"),
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&run(&["check", "--format", "json"])).unwrap();
    assert_eq!(json["sources"][0], "policies/default.toml (embedded)");
    std::fs::write(
        dir.path().join("mine.toml"),
        toolgate::load::DEFAULT_POLICY.1,
    )
    .unwrap();
    let out = run(&["check", "--policy", "mine.toml"]);
    assert!(
        out.starts_with("ok: policy `default` from mine.toml\n"),
        "{out}"
    );
}

#[test]
fn tools_from_mcp_and_openai_are_auto_tagged() {
    let dir = tempfile::tempdir().unwrap();
    let openai = dir.path().join("openai.json");
    std::fs::write(
        &openai,
        r#"[{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather forecast for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]"#,
    )
    .unwrap();
    let mcp = dir.path().join("mcp.json");
    std::fs::write(&mcp, r#"{"tools": [{"name": "translate", "description": "Translate text between languages", "inputSchema": {"type": "object"}}]}"#).unwrap();
    let o = toolgate(
        &[
            "eval",
            "--tools",
            openai.to_str().unwrap(),
            "--tools",
            mcp.to_str().unwrap(),
            "--format",
            "json",
            "--input",
            "-",
        ],
        Some(r#"{"message": "what is the weather forecast in Paris"}"#),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let w = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "get_weather")
        .unwrap();
    assert!(
        w["terms"]["keyword_match"]["value"].as_f64().unwrap() > 0.0,
        "{w}"
    );
    assert_eq!(w["terms"]["priority_bonus"]["value"], 0.3);
    // `--tools` without `--tags`: the two imported tools alone (issue 29).
    assert_eq!(v["tools"].as_array().unwrap().len(), 2);
}

#[test]
fn a_real_mcp_catalog_file_imports_with_namespaces() {
    let catalog = "../shared/data/mcp-catalogs/everything.json";
    if !std::path::Path::new(catalog).exists() {
        eprintln!("skipping: {catalog} not present");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("only.toml"),
        std::fs::read_to_string("tool-tags/demo.toml").unwrap(),
    )
    .unwrap();
    let o = toolgate(
        &[
            "check",
            "--tags",
            dir.path().to_str().unwrap(),
            "--tools",
            catalog,
            "--format",
            "json",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["auto_tagged"], 13);
    let o = toolgate(
        &[
            "explain",
            "everything.echo",
            "--tags",
            dir.path().to_str().unwrap(),
            "--tools",
            catalog,
        ],
        None,
    );
    assert!(stdout(&o).contains("auto-tagged"), "{}", stdout(&o));
}

#[test]
fn closed_stdout_is_not_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["eval", "--input", "examples/sql-session.json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}
