//! Issue 29, today's newcomer pass: a repeated audit record named by
//! `audit summary`, `guard --args` that is not an object (or repeats a key)
//! refused as the user's input error, `explain ''` a usage error, a huge
//! `fit --target-recall` echoed bounded, `import bfcl --out FILE` named,
//! and negative `check --fuzz` / `compare --show` refused with their range.

mod common;
use common::{stderr, stdout, toolgate, write};

/// One gate audit record of an allowed call, written by `guard --audit`.
fn one_record(dir: &std::path::Path) -> String {
    let log = dir.join("audit.jsonl");
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "shell.run_command",
            "--args",
            r#"{"command":"ls"}"#,
            "--audit",
            log.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::read_to_string(log).unwrap()
}

#[test]
fn audit_summary_names_records_that_repeat_a_call_id() {
    let d = tempfile::tempdir().unwrap();
    let rec = one_record(d.path());
    let id = serde_json::from_str::<serde_json::Value>(rec.trim()).unwrap()["call_id"]
        .as_str()
        .unwrap()
        .to_string();
    // the log twice, then a malformed line with the same call_id
    let bad = format!("{{\"call_id\":\"{id}\",\"event\":\"verdict\"}}\n");
    let twice = write(d.path(), "a2.jsonl", &format!("{rec}{rec}{bad}"));
    let o = toolgate(&["audit", "summary", &twice], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("total calls: 1\n"), "{out}");
    assert!(
        out.contains("repeated: 1 record(s) repeat an earlier record of the same call_id and event (line 2): counted once"),
        "{out}"
    );
    assert!(
        out.contains("skipped: 1 line(s) that are not audit records (line 3"),
        "{out}"
    );
    let o = toolgate(&["audit", "summary", &twice, "--format", "json"], None);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["repeated_records"], 1);
    assert_eq!(v["repeated_line_numbers"], serde_json::json!([2]));
    assert_eq!(v["skipped_line_numbers"], serde_json::json!([3]));
    // a log without a repeat says nothing of repeats
    let once = write(d.path(), "a1.jsonl", &rec);
    let o = toolgate(&["audit", "summary", &once], None);
    assert!(!stdout(&o).contains("repeated"), "{}", stdout(&o));
    let o = toolgate(&["audit", "summary", &once, "--format", "json"], None);
    assert!(!stdout(&o).contains("repeated"), "{}", stdout(&o));
}

#[test]
fn guard_args_that_are_not_an_object_or_repeat_a_key_are_input_errors() {
    for (args, want) in [
        (
            "[1,2]",
            "--args is an array: the arguments must be a JSON object",
        ),
        (
            "\"x\"",
            "--args is a string: the arguments must be a JSON object",
        ),
        (
            "3",
            "--args is a number: the arguments must be a JSON object",
        ),
        (
            "true",
            "--args is a boolean: the arguments must be a JSON object",
        ),
        ("null", "--args null: the arguments must be a JSON object"),
        (
            r#"{"command":"ls","command":"rm -rf /"}"#,
            "--args: duplicate key `command` at line 1",
        ),
    ] {
        let o = toolgate(
            &["guard", "--tool", "shell.run_command", "--args", args],
            None,
        );
        assert_eq!(o.status.code(), Some(3), "{args}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args}: no verdict printed");
    }
    // an object is still a verdict (here a deny: `command` is missing)
    let o = toolgate(
        &["guard", "--tool", "shell.run_command", "--args", "{}"],
        None,
    );
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
}

#[test]
fn explain_an_empty_tool_name_is_a_usage_error() {
    let o = toolgate(&["explain", ""], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the tool name is empty"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn fit_echoes_a_huge_share_bounded() {
    for opt in ["--target-recall", "--holdout"] {
        let o = toolgate(
            &["fit", "--trace", "examples/sessions.jsonl", opt, "1e308"],
            None,
        );
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("{opt} 1e308 is out of range")),
            "{err}"
        );
        let longest = err
            .split(|c: char| !c.is_ascii_digit())
            .map(str::len)
            .max()
            .unwrap_or(0);
        assert!(longest <= 32, "{err}");
    }
}

#[test]
fn import_out_that_is_a_file_is_named() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("bfcl");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("BFCL_v4_irrelevance.json"), "").unwrap();
    let file = write(d.path(), "server.json", "{}");
    let o = toolgate(
        &[
            "import",
            "bfcl",
            "--data",
            data.to_str().unwrap(),
            "--out",
            &file,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("--out must be a folder; {file} is a file")),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("os error"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");
}

#[test]
fn negative_fuzz_and_show_name_their_range() {
    let o = toolgate(&["check", "--fuzz", "-5"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--fuzz -5 is out of range: give 1 to 1000000"),
        "{}",
        stderr(&o)
    );
    let o = toolgate(
        &[
            "compare",
            "--policy-a",
            "policies/default.toml",
            "--policy-b",
            "policies/default.toml",
            "--trace",
            "examples/sessions.jsonl",
            "--show",
            "-1",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--show -1 is out of range: give 0 or more"),
        "{}",
        stderr(&o)
    );
    // fit's shares too (clap took `-1` for an unknown option)
    for opt in ["--target-recall", "--holdout"] {
        let o = toolgate(
            &["fit", "--trace", "examples/sessions.jsonl", opt, "-1"],
            None,
        );
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{opt} -1 is out of range: give a share")),
            "{}",
            stderr(&o)
        );
    }
}
