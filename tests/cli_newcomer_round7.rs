//! Issue 29, round 7: every problem found is reported at once (item 6).
//! A copied `selection.toml` names both missing data files in one run, a
//! `--tools` file names each broken entry, `[gate]` names each bad key;
//! and the i29f leftovers (schema-keyword warnings in `guard --format
//! json`, one message for a failed audit write).

mod common;
use common::{stderr, stdout, toolgate, write};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The `× FILE:LINE:COL: …` lines of a report (as one line each: the
/// renderer wraps long ones at `│`), and its "N problems found".
fn problems(e: &str) -> (Vec<String>, Option<&str>) {
    let mut lines: Vec<String> = Vec::new();
    let mut open = false;
    for l in e.lines() {
        let t = l.trim_start();
        if let Some(rest) = t.strip_prefix('×') {
            lines.push(rest.trim().to_string());
            open = true;
        } else if open && let Some(rest) = t.strip_prefix('│') {
            let last = lines.last_mut().unwrap();
            last.push(' ');
            last.push_str(rest.trim());
        } else {
            open = false;
        }
    }
    let count = e
        .lines()
        .find(|l| l.contains("found") && l.contains("problem"));
    (lines, count)
}

/// The 1-based line and column of the first `needle` in `text`.
fn line_col(text: &str, needle: &str) -> String {
    line_col_after(text, needle, 0)
}

/// The 1-based line and column `skip` bytes after the first `needle`.
fn line_col_after(text: &str, needle: &str, skip: usize) -> String {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not in the text"))
        + skip;
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("{line}:{col}")
}

/// (1) `policies/selection.toml` copied alone to another folder: its
/// transitions file and its model folder are both missing, and both are
/// reported in one run, each at the key that names it; a misspelt weight
/// of the same copy is reported in that run too.
#[test]
fn a_copied_selection_policy_reports_every_missing_data_file_at_once() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{ROOT}/policies/selection.toml")).unwrap();
    let copy = write(d.path(), "selection.toml", &text);
    let o = toolgate(&["check", "--policy", &copy], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    let (lines, count) = problems(&e);
    let file_at = line_col(&text, "\"transitions/bfcl-multi-turn.toml\"");
    let model_at = line_col(&text, "\"models/minilm-static-128\"");
    assert!(
        lines.iter().any(|l| l.contains(&format!(
            "{copy}:{file_at}: cannot read the transitions file"
        ))),
        "{e}"
    );
    assert!(
        lines.iter().any(|l| l.contains(&format!(
            "{copy}:{model_at}: the semantic model folder {}/models/minilm-static-128 does not exist",
            d.path().display()
        ))),
        "{e}"
    );
    assert_eq!(lines.len(), 2, "{e}");
    assert_eq!(count, Some("2 problems found"), "{e}");

    // With a misspelt weight as well: three problems, one run.
    let typo = text.replacen("w_keyword = 0.8", "w_keywrd = 0.8", 1);
    assert_ne!(typo, text);
    let copy = write(d.path(), "selection.toml", &typo);
    let o = toolgate(&["eval", "--policy", &copy], None);
    let e = stderr(&o);
    let (lines, count) = problems(&e);
    let weight_at = line_col(&typo, "w_keywrd");
    assert!(
        lines.iter().any(|l| l.contains(&format!(
            "{copy}:{weight_at}: weight `w_keywrd` is not used by the formula"
        ))),
        "{e}"
    );
    assert_eq!(count, Some("3 problems found"), "{e}");
    // The compile's "was not read" echo of the read errors is not a fourth.
    assert!(!e.contains("was not read"), "{e}");

    // A model folder that is there but empty: each missing file is named.
    std::fs::create_dir_all(d.path().join("models/minilm-static-128")).unwrap();
    std::fs::write(d.path().join("models/minilm-static-128/config.json"), "{}").unwrap();
    let copy = write(d.path(), "selection.toml", &text);
    let o = toolgate(&["check", "--policy", &copy], None);
    let e = stderr(&o);
    let (lines, count) = problems(&e);
    for f in ["tokenizer.json", "model.safetensors"] {
        assert!(
            lines.iter().any(|l| l.contains(&format!(
                "{copy}:{model_at}: cannot read the semantic model file"
            )) && l.contains(f)),
            "{f}: {e}"
        );
    }
    assert!(!lines.iter().any(|l| l.contains("config.json:")), "{e}");
    assert_eq!(count, Some("3 problems found"), "{e}");
}

/// (2) A `--tools` file with three broken entries (a misspelt key, a tool
/// without a name, a second misspelt key) and a good one: all three are
/// reported, each at its place with its index, and counted right.
#[test]
fn every_broken_entry_of_a_tools_file_is_reported() {
    let d = tempfile::tempdir().unwrap();
    let text = r#"{"tools": [
  {"name": "good", "description": "fine"},
  {"name": "a", "inputschema": {"type": "object"}},
  {"description": "no name"},
  {"name": "c", "descripton": "x"}
]}
"#;
    let f = write(d.path(), "tools.json", text);
    for cmd in ["check", "eval", "guard"] {
        let mut args = vec![cmd, "--tools", &f];
        if cmd == "guard" {
            args.extend(["--tool", "good", "--args", "{}"]);
        }
        let o = toolgate(&args, None);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", stdout(&o));
        let e = stderr(&o);
        let (lines, count) = problems(&e);
        let want = [
            format!(
                "{f}:{}: tool 1 (`tools[1]`): unknown key `inputschema` (did you mean `inputSchema`?)",
                line_col(text, "\"inputschema\"")
            ),
            format!(
                "{f}:{}: tool 2 (`tools[2]`): it has no \"name\" string",
                line_col(text, "{\"description\": \"no name\"")
            ),
            format!(
                "{f}:{}: tool 3 (`tools[3]`): unknown key `descripton` (did you mean `description`?)",
                line_col(text, "\"descripton\"")
            ),
        ];
        assert_eq!(lines.len(), 3, "{cmd}: {e}");
        for (l, w) in lines.iter().zip(&want) {
            assert!(
                l.starts_with(w.as_str()),
                "{cmd}: {l}\nshould start with {w}"
            );
        }
        assert_eq!(count, Some("3 problems found"), "{cmd}: {e}");
    }
}

/// (1) `[gate]` is read by serde, which stops at the first problem: a
/// misspelt key, a wrong type and a value out of range in the shipped
/// policy's `[gate]` are now reported in one run, each at its place (the
/// misspelt key with a did-you-mean).
#[test]
fn every_bad_key_of_gate_is_reported_at_once() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{ROOT}/policies/default.toml")).unwrap();
    let bad = text
        .replacen("max_depth = 32 ", "max_dept = 32 ", 1)
        .replacen("timeout_seconds = 30.0", "timeout_seconds = \"30\"", 1)
        .replacen("backoff_factor = 2.0", "backoff_factor = 0.5", 1);
    for edit in [
        "max_dept = 32 ",
        "timeout_seconds = \"30\"",
        "backoff_factor = 0.5",
    ] {
        assert!(bad.contains(edit), "the edit {edit} applies");
    }
    let f = write(d.path(), "policy.toml", &bad);
    let o = toolgate(&["check", "--policy", &f], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    let (lines, count) = problems(&e);
    let want = [
        format!(
            "{f}:{}: unknown key `max_dept` in [gate.limits] (did you mean `max_depth`?)",
            line_col(&bad, "max_dept")
        ),
        format!(
            "{f}:{}: `gate.execution.timeout_seconds` must be a number, found the string \"30\"",
            line_col(&bad, "\"30\"")
        ),
        format!(
            "{f}:{}: `gate.execution.backoff_factor` must be at least 1, found 0.5",
            line_col_after(&bad, "backoff_factor = 0.5", "backoff_factor = ".len())
        ),
    ];
    for w in &want {
        assert!(lines.iter().any(|l| l.starts_with(w.as_str())), "{w}\n{e}");
    }
    assert!(e.contains("help: did you mean `max_depth`?"), "{e}");
    assert_eq!(count, Some("3 problems found"), "{e}");
}

/// (3) The schema-keyword warnings that `guard` prints in the text format
/// are in `guard --format json` too, as `warnings` (`[]` when none).
#[test]
fn guard_json_carries_the_schema_keyword_warnings() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "t.json",
        r#"{"tools":[{"name":"d","inputSchema":{"type":"object","propertes":{"n":{"type":"integer"}}}},{"name":"e","inputSchema":{"type":"object"}}]}"#,
    );
    let run = |tool: &str| {
        let o = toolgate(
            &[
                "guard", "--tools", &f, "--tool", tool, "--args", "{}", "--format", "json",
            ],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        (v, stderr(&o))
    };
    let (v, e) = run("d");
    let w = v["warnings"].as_array().expect("a warnings array");
    assert_eq!(w.len(), 1, "{v}");
    let w = w[0].as_str().unwrap();
    assert!(w.contains("inputSchema keyword `propertes`"), "{w}");
    assert!(w.contains("did you mean `properties`?"), "{w}");
    assert_eq!(v["decision"], "allow", "{v}");
    // (JSON on stdout only: no text warning on stderr beside it)
    assert!(!e.contains("warning:"), "{e}");
    let (v, _) = run("e");
    assert_eq!(v["warnings"], serde_json::json!([]), "{v}");
}

/// (3) An audit record that cannot be written is said once, by the
/// message that names the option and the path, not also by a log line.
#[cfg(target_os = "linux")]
#[test]
fn a_failed_audit_write_is_reported_once() {
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "sqlite.read_query",
            "--args",
            r#"{"query":"select 1"}"#,
            "--audit",
            "/dev/full",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let e = stderr(&o);
    assert_eq!(e.matches("cannot write an audit record").count(), 1, "{e}");
    assert!(
        e.contains(
            "error: --audit /dev/full: cannot write an audit record: No space left on device"
        ),
        "{e}"
    );
    assert!(!e.contains("ERROR"), "{e}");
}

/// (3) A `--config` root that is not a folder stands at its element of
/// `roots` (from the TOML spans, not a search of the text: a comment that
/// names the same path came first), and every bad root is named.
#[test]
fn config_roots_stand_at_their_element() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("afile"), "x").unwrap();
    let text = "# roots = [\"nowhere\"] was the old setting\nroots = [\n  \"nowhere\",\n  \".\",\n  'afile',\n]\n\n[[server]]\nname = \"a\"\ncommand = \"true\"\n";
    let cfg = write(d.path(), "proxy.toml", text);
    let o = toolgate(&["mcp-proxy", "--config", &cfg], Some(""));
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let e = stderr(&o);
    let dir = d.path().display();
    assert!(
        e.contains(&format!("{cfg}:3:3: roots: {dir}/nowhere: no such folder")),
        "{e}"
    );
    assert!(
        e.contains(&format!("{cfg}:5:3: roots: {dir}/afile: not a folder")),
        "{e}"
    );
}

/// (4) The sweep: eight keys misspelt across one policy (required and
/// optional keys, a weight, two `[gate]` keys) are eight problems in one
/// run, each at its key; a misspelt required key is one problem (at the
/// typo), not also a "missing" one at its table.
#[test]
fn eight_typos_in_one_policy_are_eight_problems_at_their_keys() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{ROOT}/policies/default.toml")).unwrap();
    let typos = [
        (
            "recent_calls_window = 5",
            "recent_calls_windw = 5",
            "unknown key `recent_calls_windw` in [activation], and the required key `recent_calls_window` is missing",
        ),
        (
            "hysteresis_margin = 0.0",
            "hysteresis_margn = 0.0",
            "unknown key `hysteresis_margn` in [activation]",
        ),
        (
            "w_stage = 0.20",
            "w_stag = 0.20",
            "weight `w_stag` is not used by the formula",
        ),
        (
            "neutral = 0.5",
            "nuetral = 0.5",
            "unknown key `nuetral` in [features.domain_match], and the required key `neutral` is missing",
        ),
        (
            "multiplier = 2.0",
            "multiplyer = 2.0",
            "unknown key `multiplyer` in [features.usage_bonus], and the required key `multiplier` is missing",
        ),
        (
            "bonus = 0.15",
            "bonsu = 0.15",
            "unknown key `bonsu` in [features.recency_bonus], and the required key `bonus` is missing",
        ),
        (
            "max_depth = 32 ",
            "max_dept = 32 ",
            "unknown key `max_dept` in [gate.limits]",
        ),
        (
            "backoff_factor = 2.0",
            "backof_factor = 2.0",
            "unknown key `backof_factor` in [gate.execution]",
        ),
    ];
    let mut bad = text.clone();
    for (from, to, _) in typos {
        assert!(bad.contains(from), "{from}");
        bad = bad.replacen(from, to, 1);
    }
    let f = write(d.path(), "policy.toml", &bad);
    let o = toolgate(&["check", "--policy", &f], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    let (lines, count) = problems(&e);
    for (_, to, want) in typos {
        let at = format!("{f}:{}: {want}", line_col(&bad, to));
        assert!(lines.iter().any(|l| l.starts_with(&at)), "{at}\n{e}");
    }
    assert_eq!(count, Some("8 problems found"), "{e}");
    assert!(!e.contains("is missing the required key"), "{e}");
}

/// (4) The sweep, in a tag file: six keys or values misspelt over two
/// tools are six problems, in the order of the file.
#[test]
fn six_typos_in_one_tag_file_are_six_problems_in_file_order() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{ROOT}/tool-tags/sqlite.toml")).unwrap();
    // (the first two tools: read_query, then write_query)
    let second = text.find("name = \"sqlite.write_query\"").unwrap();
    let (a, b) = text.split_at(second);
    let a = a
        .replacen("preferred_stages", "prefered_stages", 1)
        .replacen("base_priority", "base_priorty", 1)
        .replacen(
            "arguments = { query = \"sql\" }",
            "arguments = { qurey = \"sql\" }",
            1,
        );
    let b = b
        .replacen("trigger_keywords", "trigger_keyword", 1)
        .replacen("risk_level = \"dangerous\"", "risk_level = \"dangerus\"", 1)
        .replacen(
            "arguments = { query = \"sql\" }",
            "argument = { query = \"sql\" }",
            1,
        );
    let bad = format!("{a}{b}");
    std::fs::create_dir(d.path().join("tags")).unwrap();
    let f = write(&d.path().join("tags"), "sqlite.toml", &bad);
    let tags = d.path().join("tags");
    let o = toolgate(&["check", "--tags", tags.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    let (lines, count) = problems(&e);
    let want = [
        (
            line_col(&bad, "prefered_stages"),
            "unknown key `prefered_stages` in [tool[0]]",
        ),
        (
            line_col(&bad, "base_priorty"),
            "unknown key `base_priorty` in [tool[0]], and the required key `base_priority` is missing",
        ),
        (
            line_col(&bad, "qurey"),
            "argument `qurey` names no parameter",
        ),
        (
            line_col(&bad, "trigger_keyword "),
            "unknown key `trigger_keyword` in [tool[1]]",
        ),
        (
            line_col(&bad, "\"dangerus\""),
            "risk_level \"dangerus\" is not one of",
        ),
        (
            line_col(&bad, "argument ="),
            "unknown key `argument` in [tool[1]]",
        ),
    ];
    assert_eq!(lines.len(), want.len(), "{e}");
    for (l, (at, w)) in lines.iter().zip(&want) {
        let w = format!("{f}:{at}: {w}");
        assert!(l.starts_with(&w), "{l}\nshould start with {w}");
    }
    assert_eq!(count, Some("6 problems found"), "{e}");
}

/// (4) The sweep, in an `--input` file: five keys misspelt at three
/// levels are five problems in one run, each at its key, counted.
#[test]
fn five_typos_in_one_input_are_five_problems() {
    let d = tempfile::tempdir().unwrap();
    let text = r#"{
  "mesage": "Which users signed up last week?",
  "context": {
    "conversation_stag": "exploration",
    "active_languge": "sql",
    "recent_tool_calls": ["sqlite.list_tables"]
  },
  "usage": {
    "call_count": {"sqlite.list_tables": 1},
    "seconds_since_last_cal": {"sqlite.list_tables": 240.0}
  }
}
"#;
    let f = write(d.path(), "in.json", text);
    let o = toolgate(&["eval", "--input", &f], None);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let e = stderr(&o);
    let lines: Vec<&str> = e.lines().collect();
    let want = [
        (
            "\"mesage\"",
            "unknown key `mesage` at the top level of the input (did you mean `message`?)",
        ),
        (
            "\"conversation_stag\"",
            "unknown key `conversation_stag` in `context` (did you mean `conversation_stage`?)",
        ),
        (
            "\"active_languge\"",
            "unknown key `active_languge` in `context` (did you mean `active_language`?)",
        ),
        (
            "\"call_count\"",
            "unknown key `call_count` in `usage` (did you mean `call_counts`?)",
        ),
        (
            "\"seconds_since_last_cal\"",
            "unknown key `seconds_since_last_cal` in `usage` (did you mean `seconds_since_last_call`?)",
        ),
    ];
    assert_eq!(lines.len(), want.len() + 1, "{e}");
    for (i, (key, w)) in want.iter().enumerate() {
        let at = line_col(text, key);
        let l = lines[i].strip_prefix("error: ").unwrap_or(lines[i]);
        assert!(
            l.starts_with(&format!("{f}:{at}: {w}")),
            "{l}\nshould start with {f}:{at}: {w}"
        );
    }
    assert_eq!(lines[want.len()], "5 problems found", "{e}");
}

/// (4) The sweep, in a trace: four keys misspelt on four lines are four
/// problems in one run (replay, and the streamed fit), each at its line
/// and column, in line order, counted.
#[test]
fn four_typos_in_one_trace_are_four_problems() {
    let d = tempfile::tempdir().unwrap();
    let text = concat!(
        r#"{"session": "sql", "t": 0, "event": "context", "stag": "exploration", "language": "sql"}"#,
        "\n",
        r#"{"session": "sql", "t": 2.5, "event": "user_message", "txt": "which tables hold the orders?"}"#,
        "\n",
        r#"{"session": "sql", "t": 4, "event": "tool_call", "tool": "sqlite.list_tables", "arguments": {}, "outcom": "ok"}"#,
        "\n",
        r#"{"session": "sql", "t": 9, "event": "tool_call", "tool": "sqlite.describe_table", "argumnts": {"table_name": "orders"}, "outcome": "ok"}"#,
        "\n",
        r#"{"session": "sql", "t": 30, "event": "context", "stage": "debugging"}"#,
        "\n",
    );
    let f = write(d.path(), "trace.jsonl", text);
    let want = [
        (
            1,
            "\"stag\"",
            "unknown key `stag` in a `context` event (did you mean `stage`?)",
        ),
        (
            2,
            "\"txt\"",
            "unknown key `txt` in a `user_message` event (did you mean `text`?)",
        ),
        (
            3,
            "\"outcom\"",
            "unknown key `outcom` in a `tool_call` event (did you mean `outcome`?)",
        ),
        (
            4,
            "\"argumnts\"",
            "unknown key `argumnts` in a `tool_call` event (did you mean `arguments`?)",
        ),
    ];
    for cmd in [
        &["replay", "--trace", &f][..],
        &["replay", "--flow", "--trace", &f][..],
        &["fit", "--trace", &f][..],
    ] {
        let o = toolgate(cmd, None);
        assert_eq!(o.status.code(), Some(3), "{cmd:?}: {}", stdout(&o));
        let e = stderr(&o);
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), want.len() + 1, "{cmd:?}: {e}");
        for (i, (n, key, w)) in want.iter().enumerate() {
            let line = text.lines().nth(n - 1).unwrap();
            let col = line.find(key).unwrap() + 1;
            let l = lines[i].strip_prefix("error: ").unwrap_or(lines[i]);
            let w = format!("{f}: trace line {n}, column {col}: {w}");
            assert!(l.starts_with(&w), "{cmd:?}: {l}\nshould start with {w}");
        }
        assert_eq!(lines[want.len()], "4 problems found", "{cmd:?}: {e}");
    }
}
