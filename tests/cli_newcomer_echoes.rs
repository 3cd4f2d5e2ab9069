//! Issue 29, the fresh newcomer pass's leftovers of stop 36: bounded echoes
//! outside error messages (item 5), numbers of at most 32 characters, one
//! exit code for option values out of range, `fit`'s options named, `replay
//! --max-names 0`, `max_active = 0`, a `TOOLGATE_STATE_DIR` that names a
//! file, and a TOML file given to an option that reads JSON.

mod common;
use common::{stderr, stdout, toolgate, write};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The longest run of ASCII digits in `text`.
fn longest_digit_run(text: &str) -> usize {
    text.split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0)
}

/// The JSON error object of a `--format json` run's stderr.
fn json_error(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(stderr(o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stderr(o)))
}

/// (1) A 120,000-character tool name (`check --tools`, `explain`, `eval`,
/// `guard` and its message to the model), a 100,000-character session id
/// (`replay`) and policy name (`compare`) are echoed clipped, with the
/// marker the error messages use; the output stays a few KB (it was 484
/// KB, 121 KB, 120 KB, 240 KB and 100 KB).
#[test]
fn long_names_and_ids_are_clipped_in_normal_output() {
    let d = tempfile::tempdir().unwrap();
    let name = "a".repeat(120_000);
    let tools = serde_json::json!({"tools": [{
        "name": name, "description": "reads a file", "inputSchema": {"type": "object"}
    }]});
    let tools = write(d.path(), "big.json", &tools.to_string());
    let marker = "… 119800 more characters";
    for args in [
        vec!["check", "--tools", &tools],
        vec!["explain", &name, "--tools", &tools],
        vec!["eval", "--tools", &tools],
        vec!["guard", "--tool", &name, "--tools", &tools],
    ] {
        let o = toolgate(&args, None);
        assert_eq!(o.status.code(), Some(0), "{:?}: {}", &args[..1], stderr(&o));
        let out = stdout(&o);
        assert!(out.len() < 20_000, "{:?}: {} bytes", &args[..1], out.len());
        assert!(
            out.contains(marker),
            "{:?}: {}",
            &args[..1],
            &out[..out.len().min(2000)]
        );
    }
    // check's witness inputs stay valid, bounded JSON, and say so
    let o = toolgate(&["check", "--tools", &tools], None);
    assert!(
        stdout(&o).contains("(long strings clipped; --format json gives them whole)"),
        "{}",
        stdout(&o)
    );
    let id = "s".repeat(100_000);
    let trace = [
        serde_json::json!({"session": id, "t": 0, "event": "user_message", "text": "list the tables"}),
        serde_json::json!({"session": id, "t": 1, "event": "tool_call", "tool": "sqlite.list_tables"}),
    ]
    .map(|l| l.to_string())
    .join("\n");
    let trace = write(d.path(), "t.jsonl", &trace);
    let o = toolgate(&["replay", "--trace", &trace], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.len() < 5_000, "{} bytes", out.len());
    assert!(out.contains("… 99800 more characters"), "{out}");
    // compare's column labels are the policies' names (any string)
    let policy = std::fs::read_to_string(format!("{ROOT}/policies/default.toml")).unwrap();
    let named = |n: &str| policy.replacen("name = \"default\"", &format!("name = \"{n}\""), 1);
    let a = write(d.path(), "a.toml", &named(&"A".repeat(100_000)));
    let b = write(d.path(), "b.toml", &named(&"B".repeat(100_000)));
    let sessions = format!("{ROOT}/examples/sessions.jsonl");
    let o = toolgate(
        &[
            "compare",
            "--policy-a",
            &a,
            "--policy-b",
            &b,
            "--trace",
            &sessions,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.len() < 20_000, "{} bytes", out.len());
    assert!(
        out.contains("… 99800 more characters"),
        "{}",
        &out[..out.len().min(2000)]
    );
}

/// (2) A trace time `1e300` (`replay`'s text) and an audit record's
/// `latency_ms: 1e300` (`audit summary`) print in exponent form, not in
/// 301 digits; no number of either output is longer than 32 characters.
#[test]
fn huge_numbers_print_in_exponent_form() {
    let d = tempfile::tempdir().unwrap();
    let trace = [
        r#"{"session": "a", "t": 0, "event": "user_message", "text": "list the tables"}"#,
        r#"{"session": "a", "t": 1e300, "event": "tool_call", "tool": "sqlite.list_tables"}"#,
    ]
    .join("\n");
    let trace = write(d.path(), "t.jsonl", &trace);
    let o = toolgate(&["replay", "--trace", &trace], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("t=1e300"), "{out}");
    assert!(longest_digit_run(&out) <= 32, "{out}");
    let audit = d.path().join("audit.jsonl");
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "time.get_current_time",
            "--args",
            r#"{"timezone": "UTC"}"#,
            "--audit",
            audit.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let log = std::fs::read_to_string(&audit).unwrap();
    let mut record: serde_json::Value = serde_json::from_str(log.trim()).unwrap();
    record["latency_ms"] = serde_json::json!(1e300);
    let log = write(d.path(), "big.jsonl", &format!("{record}\n"));
    let o = toolgate(&["audit", "summary", &log], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("p50 1.00e297 s"), "{out}");
    assert!(longest_digit_run(&out) <= 32, "{out}");
}

/// (3) `check --samples 0` and `check --fuzz 0` are both options out of
/// range: bad command-line usage, exit 2 (README's table), `usage` in JSON.
#[test]
fn option_values_out_of_range_share_one_exit_code() {
    for (option, value) in [("--samples", "0"), ("--fuzz", "0"), ("--samples", "100001")] {
        let o = toolgate(&["check", option, value], None);
        assert_eq!(o.status.code(), Some(2), "{option} {value}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{option} {value} is out of range")),
            "{}",
            stderr(&o)
        );
        let o = toolgate(&["check", option, value, "--format", "json"], None);
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(json_error(&o)["error"]["kind"], "usage", "{}", stderr(&o));
    }
}

/// (4) `fit`'s `--l2 -1`, `--l2 nan`, `--max-iterations 0` and
/// `--negatives 0` are refused before the trace is read, each naming the
/// option, the value and the range (exit 2, like `--target-recall`).
#[test]
fn fit_refuses_each_regression_option_out_of_range() {
    let trace = format!("{ROOT}/examples/sessions.jsonl");
    for (option, value, shown, range) in [
        ("--l2", "-1", "-1", "a finite L2 penalty of 0 or more"),
        ("--l2", "nan", "NaN", "a finite L2 penalty of 0 or more"),
        ("--l2", "inf", "inf", "a finite L2 penalty of 0 or more"),
        ("--max-iterations", "0", "0", "1 or more solver iterations"),
        (
            "--negatives",
            "0",
            "0",
            "1 or more not-called tools per call",
        ),
    ] {
        let o = toolgate(&["fit", "--trace", &trace, option, value], None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{option} {value}: {e}");
        assert!(
            e.contains(&format!("{option} {shown} is out of range: give {range}")),
            "{option} {value}: {e}"
        );
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    }
    // 0 is a valid penalty (no regularisation)
    let o = toolgate(
        &[
            "fit",
            "--trace",
            &trace,
            "--l2",
            "0",
            "--drop-failing-examples",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// (5) `replay --max-names 0` prints the counts of the list changes only
/// (`+7 -17`), not `+7 [, … 7 more]`.
#[test]
fn replay_with_zero_names_prints_counts_only() {
    let trace = format!("{ROOT}/examples/sessions.jsonl");
    let o = toolgate(&["replay", "--trace", &trace, "--max-names", "0"], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains('['), "{out}");
    assert!(!out.contains("more"), "{out}");
    let changed = out
        .lines()
        .filter(|l| l.contains("| +") || l.contains("| -"))
        .count();
    assert!(changed > 0, "{out}");
    // and a positive cap still lists names
    let o = toolgate(&["replay", "--trace", &trace, "--max-names", "1"], None);
    assert!(stdout(&o).contains(", … "), "{}", stdout(&o));
}

/// (6) `max_active = 0` is refused at its value (file:line:column), and an
/// example whose tool `max_active` cut says so, instead of "score 0.41 <
/// effective threshold 0.24".
#[test]
fn max_active_zero_is_refused_and_a_cut_is_named() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{ROOT}/policies/default.toml")).unwrap();
    let with = |k: &str| text.replacen("# max_active = 10 ", &format!("max_active = {k} #"), 1);
    assert_ne!(with("0"), text);
    let zero = write(d.path(), "zero.toml", &with("0"));
    let o = toolgate(&["check", "--policy", &zero], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    let line = with("0")
        .lines()
        .position(|l| l.starts_with("max_active = 0"))
        .unwrap()
        + 1;
    assert!(
        e.contains(&format!(
            "{zero}:{line}:14: `activation.max_active` = 0 leaves every session with no active tool"
        )),
        "{e}"
    );
    assert!(!e.contains("effective threshold"), "{e}");
    let one = write(d.path(), "one.toml", &with("1"));
    let o = toolgate(&["check", "--policy", &one], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("must be active but is not (cut by max_active = 1: score"),
        "{e}"
    );
    assert!(!e.contains(" < effective threshold"), "{e}");
}

/// (7) `TOOLGATE_STATE_DIR` naming a file: the message says it names a
/// file, not a folder, and names the variable (exit 3).
#[test]
fn a_state_dir_that_names_a_file_is_said_plainly() {
    let d = tempfile::tempdir().unwrap();
    let file = write(d.path(), "state", "");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "guard",
            "--tool",
            "time.get_current_time",
            "--session",
            "s1",
        ])
        .env("TOOLGATE_STATE_DIR", &file)
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{e}");
    assert!(
        e.contains(&format!(
            "TOOLGATE_STATE_DIR={file}: this names a file, not a folder"
        )),
        "{e}"
    );
    assert!(!e.contains("is not a folder"), "{e}");
}

/// (8) A TOML file given to an option that reads JSON: `--tools` with a
/// tag file, `--input` and `--trace` with a policy. The error says what the
/// file is and which option takes it (the exit code stays that of the
/// failure: 1 for `--tools`, 3 for inputs).
#[test]
fn a_toml_file_for_a_json_option_names_the_option_that_takes_it() {
    let tags = format!("{ROOT}/tool-tags/time.toml");
    let o = toolgate(&["check", "--tools", &tags], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!("--tools {tags} is a tool-tag file (TOML"))
            && e.contains("--tags takes the folder that holds it"),
        "{e}"
    );
    assert!(e.contains("--tools takes a JSON catalog"), "{e}");
    assert!(!e.contains("not valid JSON"), "{e}");
    let d = tempfile::tempdir().unwrap();
    let policy = write(
        d.path(),
        "my-policy.toml",
        &std::fs::read_to_string(format!("{ROOT}/policies/default.toml")).unwrap(),
    );
    for (cmd, option) in [("eval", "--input"), ("replay", "--trace")] {
        let o = toolgate(&[cmd, option, &policy], None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{cmd}: {e}");
        assert!(
            e.contains(&format!("{option} {policy} is a policy (TOML"))
                && e.contains("--policy takes it"),
            "{cmd}: {e}"
        );
        assert!(
            !e.to_lowercase().contains("invalid json") && !e.contains("not valid JSON"),
            "{e}"
        );
    }
    // a JSON input with a .toml name is read as JSON
    let json = write(d.path(), "input.toml", r#"{"context": {}}"#);
    let o = toolgate(&["eval", "--input", &json], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Newcomer pass 5: a user's own catalog with a tool named like one of the
/// shipped tags (`sqlite.read_query`, captured from the real server) is
/// auto-tagged; the shipped policy's example about that tool was written for
/// the tag file's tags, so it is skipped with a warning instead of failing
/// the load of every command.
#[test]
fn a_users_catalog_does_not_fail_the_shipped_policys_examples() {
    let d = tempfile::tempdir().unwrap();
    let cat = write(
        d.path(),
        "sqcat.json",
        r#"{"server":"sqlite","tools":[{"name":"read_query","description":"Execute a SELECT query",
            "inputSchema":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}]}"#,
    );
    let o = toolgate(
        &[
            "guard",
            "--tools",
            &cat,
            "--tool",
            "sqlite.read_query",
            "--args",
            r#"{"query":"SELECT 1"}"#,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("decision: allow"), "{}", stdout(&o));
    let o = toolgate(&["check", "--tools", &cat], None);
    let e = format!("{}{}", stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(
        e.contains("skipped: tool(s) sqlite.read_query have tags derived by [auto_tags]"),
        "{e}"
    );
}
