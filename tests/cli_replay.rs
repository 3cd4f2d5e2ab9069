//! The real binary on a slice of BFCL (tests/data/bfcl-slice): import, replay,
//! compare, fit, and bad traces.

use std::path::Path;
use std::process::{Command, Output};

fn toolgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn ok(args: &[&str]) -> String {
    let o = toolgate(args);
    assert!(
        o.status.success(),
        "toolgate {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn import(dir: &Path) {
    let out = ok(&[
        "import",
        "bfcl",
        "--data",
        "tests/data/bfcl-slice",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.contains("pooled.jsonl: 50 sessions"), "{out}");
    for f in [
        "catalog.json",
        "multi_turn_catalog.json",
        "multiple.jsonl",
        "live_multiple.jsonl",
        "pooled.jsonl",
        "irrelevance.jsonl",
        "multi_turn.jsonl",
    ] {
        assert!(dir.join(f).exists(), "{f}");
    }
}

#[test]
fn bfcl_slice_default_vs_selection() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    import(d);
    let p = |f: &str| d.join(f).display().to_string();
    let json = ok(&[
        "compare",
        "--policy-a",
        "policies/default.toml",
        "--policy-b",
        "policies/selection.toml",
        "--trace",
        &p("pooled.jsonl"),
        "--tools",
        &p("catalog.json"),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let (a, b) = (&v["a"], &v["b"]);
    assert_eq!(a["calls"], 50);
    assert_eq!(b["calls"], 50);
    let tools = b["tools"].as_u64().unwrap();
    assert!(tools > 100, "the pooled slice catalog has {tools} tools");
    // The seed's default barely exposes anything on an auto-tagged catalog;
    // the selection policy finds the needed tool with a small set.
    assert!(a["recall"].as_f64().unwrap() < 0.5, "{a}");
    assert!(b["recall"].as_f64().unwrap() >= 0.8, "{b}");
    assert!(b["active"]["median"].as_f64().unwrap() <= 10.0, "{b}");
    let paired = &v["paired"];
    assert_eq!(paired["calls"], 50);
    assert!(paired["recall_diff"].as_f64().unwrap() > 0.0);

    // The text report, readable at a glance.
    let text = ok(&[
        "compare",
        "--policy-a",
        "policies/default.toml",
        "--policy-b",
        "policies/selection.toml",
        "--trace",
        &p("pooled.jsonl"),
        "--tools",
        &p("catalog.json"),
    ]);
    for needle in [
        "recall (tool active at call)",
        "median / p95 / max",
        "schema tokens per step",
        "list changes per session",
        "by stage",
        "paired, B - A, over 50 calls",
        "McNemar",
        "active in B only",
    ] {
        assert!(text.contains(needle), "{needle}\n{text}");
    }

    // Irrelevance: no calls, only what is exposed when nothing fits.
    let json = ok(&[
        "replay",
        "--policy",
        "policies/selection.toml",
        "--trace",
        &p("irrelevance.jsonl"),
        "--tools",
        &p("catalog.json"),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["summary"]["calls"], 0);
    assert_eq!(v["summary"]["no_call_active"]["n"], 20);

    // Multi-turn sessions, several steps each, against their own catalog.
    let text = ok(&[
        "replay",
        "--policy",
        "policies/selection.toml",
        "--trace",
        &p("multi_turn.jsonl"),
        "--tools",
        &p("multi_turn_catalog.json"),
    ]);
    assert!(text.contains("session multi_turn_base_1"), "{text}");
    assert!(text.contains("call cd "), "{text}");
    assert!(text.contains("recall "), "{text}");
}

#[test]
fn fit_writes_a_policy_that_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    import(d);
    let p = |f: &str| d.join(f).display().to_string();
    let out = ok(&[
        "fit",
        "--trace",
        &p("multi_turn.jsonl"),
        "--policy",
        "policies/selection.toml",
        "--tools",
        &p("multi_turn_catalog.json"),
        "--target-recall",
        "0.9",
        "--holdout",
        "0.25",
        "--out",
        &p("fitted.toml"),
    ]);
    for needle in [
        "keyword_match",
        "AUC",
        "held-out sessions:",
        "threshold 0.67 ->",
        "wrote",
    ] {
        assert!(out.contains(needle), "{needle}\n{out}");
    }
    // The fitted policy loads with the catalog it was fitted on (its examples,
    // written for the shipped tags, are skipped there).
    // (`--tools` without `--tags`: that catalog alone.)
    let check = ok(&[
        "check",
        "--policy",
        &p("fitted.toml"),
        "--tools",
        &p("multi_turn_catalog.json"),
    ]);
    assert!(check.contains("ok: policy `selection`"), "{check}");
    let fitted = std::fs::read_to_string(d.join("fitted.toml")).unwrap();
    let original = std::fs::read_to_string("policies/selection.toml").unwrap();
    assert_eq!(fitted.lines().count(), original.lines().count());
}

/// Two policies with one name (a copy with one weight changed): the columns
/// are labelled by file, aligned however long the labels and tool names, and
/// the p-value reads as people write it.
#[test]
fn compare_labels_columns_by_file_and_aligns_them() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp
        .path()
        .join("a-rather-long-folder-name-for-the-copy-of-the-default-policy.toml");
    let text = std::fs::read_to_string("policies/default.toml")
        .unwrap()
        .replace("\nw_stage = 0.20", "\nw_stage = 0.05");
    std::fs::write(&copy, text).unwrap();
    let c = copy.display().to_string();
    let out = ok(&[
        "compare",
        "--policy-a",
        "policies/default.toml",
        "--policy-b",
        &c,
        "--trace",
        "examples/sessions.jsonl",
    ]);
    let header = out.lines().nth(2).unwrap();
    assert!(
        header.contains("A: policies/default.toml") && header.ends_with(&format!("B: {c}")),
        "{out}"
    );
    assert!(out.contains("McNemar exact p = 0.004 "), "{out}");
    // The Wald interval (-104.6 unclipped) stays within what a share can do.
    assert!(out.contains("[95% CI -100.0, -59.0]"), "{out}");
    // Every row of the table ends in the same column.
    let rows: Vec<&str> = out
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.trim_end().ends_with(':'))
        .collect();
    assert!(rows.len() > 10, "{out}");
    let w = rows[0].chars().count();
    assert!(rows.iter().all(|r| r.chars().count() == w), "{out}");
    // The discordant calls: `active in` in one column.
    let cols: Vec<usize> = out
        .lines()
        .filter(|l| l.starts_with("  line "))
        .map(|l| l.find("active in").unwrap())
        .collect();
    assert!(
        cols.len() > 2 && cols.iter().all(|&x| x == cols[0]),
        "{out}"
    );
}

/// The README's fit on the shipped sample trace: the default policy's
/// examples fail under the fitted weights, so nothing is written unless they
/// are dropped; three sessions are too few to hold any out.
#[test]
fn fit_never_writes_a_policy_that_does_not_load() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("fitted.toml");
    let o = out.display().to_string();
    // The default policy plus a property tied to its own weights' range,
    // which the fitted weights break.
    let policy = tmp.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "{}\n[[properties]]\nname = \"raw scores stay within the formula's own range [0.01, 1.15]\"\nraw_score_within = [0.01, 1.15]\n",
            std::fs::read_to_string("policies/default.toml").unwrap()
        ),
    )
    .unwrap();
    let policy = policy.display().to_string();
    let args = [
        "fit",
        "--trace",
        "examples/sessions.jsonl",
        "--policy",
        &policy,
        "--target-recall",
        "0.95",
        "--out",
        &o,
    ];
    let r = toolgate(&args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr),
    );
    assert_eq!(r.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(!out.exists(), "a policy that does not load was written");
    assert!(
        stderr.contains("the fitted policy was not written")
            && stderr.contains("--drop-failing-examples"),
        "{stderr}"
    );
    assert!(
        stdout.contains("examples that fail under the fitted weights (1):")
            && stdout.contains("`SQL exploration exposes the read query tool, not the clock`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the trace is too small to check the fit out of sample"),
        "{stdout}"
    );
    assert!(!stdout.contains("0/0"), "{stdout}");
    // The default policy's declared range of raw scores is its own weights':
    // the fitted weights move it, and fit says so.
    assert!(
        stdout.contains("declared properties that fail under the fitted weights (1):")
            && stdout.contains("`raw scores stay within the formula's own range [0.01, 1.15]`"),
        "{stdout}"
    );
    assert_eq!(
        stdout
            .matches("declared properties that fail under the fitted weights")
            .count(),
        1,
        "{stdout}"
    );

    let mut dropping = args.to_vec();
    dropping.push("--drop-failing-examples");
    let text = ok(&dropping);
    assert!(
        text.contains("dropped from the fitted policy") && text.contains("wrote"),
        "{text}"
    );
    let check = ok(&["check", "--policy", &o]);
    assert!(check.contains("examples: 2 checked, all hold"), "{check}");
    let fitted = std::fs::read_to_string(&out).unwrap();
    assert!(!fitted.contains("SQL exploration exposes"), "{fitted}");
    assert!(
        !fitted.contains("raw scores stay within the formula's own range"),
        "{fitted}"
    );
    assert!(fitted.contains("scores stay within the clamp"), "{fitted}");
    assert!(fitted.contains("Chinese database request"));

    // JSON: no held-out quality, the failing example, what was written.
    let mut json = dropping.clone();
    json.extend(["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&ok(&json)).unwrap();
    assert!(v["test"].is_null(), "{v}");
    assert_eq!(v["sessions"], 3);
    let policy = std::fs::read_to_string("policies/default.toml").unwrap();
    let header = policy
        .find("[[examples]]\nname = \"SQL exploration")
        .unwrap();
    let line = policy[..header].matches('\n').count() + 1;
    assert_eq!(v["failing_examples"][0]["line"], line);
    assert_eq!(v["examples_dropped"], true);
    assert_eq!(v["written"], o.as_str());
}

#[test]
fn bad_trace_lines_are_named_or_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("bad.jsonl");
    std::fs::write(
        &trace,
        "{\"session\":\"a\",\"t\":5,\"event\":\"user_message\",\"text\":\"list the tables\"}\n\
         {\"session\":\"a\",\"t\":6,\"event\":\"tool_call\",\"tool\":\"nope\"}\n\
         {\"session\":\"a\",\"t\":4,\"event\":\"tool_call\",\"tool\":\"sqlite.list_tables\"}\n\
         {oops\n\
         {\"session\":\"a\",\"t\":7,\"event\":\"tool_call\",\"tool\":\"sqlite.list_tables\"}\n",
    )
    .unwrap();
    let t = trace.display().to_string();
    // Parse errors come first (line 3 goes back in time)...
    let o = toolgate(&["replay", "--trace", &t]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("trace line 3") && err.contains("time goes back"),
        "{err}"
    );
    // ...an unknown tool is named with its line when the trace parses.
    let good_but_unknown = tmp.path().join("unknown.jsonl");
    std::fs::write(
        &good_but_unknown,
        "{\"session\":\"a\",\"t\":6,\"event\":\"tool_call\",\"tool\":\"nope\"}\n",
    )
    .unwrap();
    let o = toolgate(&["replay", "--trace", &good_but_unknown.display().to_string()]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("trace line 1: tool `nope` is not in the catalog"),
        "{err}"
    );
    // --skip-invalid skips and counts all three.
    let out = ok(&["replay", "--trace", &t, "--skip-invalid"]);
    assert!(out.contains("3 invalid line(s) skipped"), "{out}");
    assert!(out.contains("skipped: trace line 2: tool `nope`"), "{out}");
    assert!(
        out.contains("skipped: trace line 4: not valid JSON"),
        "{out}"
    );
    assert!(out.contains("call sqlite.list_tables"), "{out}");
}
