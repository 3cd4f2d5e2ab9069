//! Issue 29, the newcomer pass: mistakes the binary used to accept with
//! "ok", exit codes, one audit summary for both logs, one `--tools` rule,
//! the same tool names for `explain` and `guard`.

use std::process::Output;

use serde_json::Value;

mod common;
use common::toolgate;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(o), stderr(o)))
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_tags_folder_without_tag_files_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let wrong = d.path().join("wrong");
    std::fs::create_dir(&wrong).unwrap();
    write(&wrong, "notes.json", "{}");
    for dir in [&empty, &wrong] {
        let dir = dir.to_str().unwrap();
        for cmd in [&["check", "--tags", dir][..], &["eval", "--tags", dir]] {
            let o = toolgate(cmd, None);
            assert_eq!(o.status.code(), Some(1), "{cmd:?}: {}", stdout(&o));
            let e = stderr(&o);
            assert!(e.contains("holds no tag file (*.toml)"), "{e}");
            assert!(e.contains(dir), "{e}");
            assert!(!stdout(&o).contains("ok"), "{}", stdout(&o));
        }
    }
}

#[test]
fn an_unknown_recent_tool_call_is_an_error_with_a_did_you_mean() {
    let o = toolgate(
        &["eval", "--input", "-"],
        Some(r#"{"context": {"recent_tool_calls": ["sqlite.list_tables", "sqlite.read_qery"]}}"#),
    );
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("context.recent_tool_calls[1] names `sqlite.read_qery`, which is not in the catalog (did you mean `sqlite.read_query`?)"),
        "{e}"
    );
    // The same wording as a usage entry.
    let o = toolgate(
        &["eval", "--input", "-"],
        Some(r#"{"usage": {"call_counts": {"sqlite.read_qery": 1}}}"#),
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("usage.call_counts names `sqlite.read_qery`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_trace_without_sessions_is_an_error_for_replay_compare_and_fit() {
    let d = tempfile::tempdir().unwrap();
    let empty = write(d.path(), "empty.jsonl", "");
    let blank = write(d.path(), "blank.jsonl", "\n  \n");
    let bad = write(d.path(), "bad.jsonl", "not json\n{\"x\": 1}\n");
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            &empty,
            vec![],
            "the trace has no sessions (the file holds no trace line)",
        ),
        (&blank, vec![], "the file holds no trace line"),
        (
            &bad,
            vec!["--skip-invalid"],
            "all 2 lines were skipped as invalid",
        ),
    ];
    for (trace, extra, want) in cases {
        for cmd in [
            vec!["replay", "--trace", trace],
            vec![
                "compare",
                "--policy-a",
                "policies/default.toml",
                "--policy-b",
                "policies/selection.toml",
                "--trace",
                trace,
            ],
            vec!["fit", "--trace", trace],
        ] {
            let mut args = cmd.clone();
            args.extend(&extra);
            let o = toolgate(&args, None);
            assert_eq!(o.status.code(), Some(3), "{args:?}: {}", stdout(&o));
            let e = stderr(&o);
            assert!(e.contains(want), "{args:?}: {e}");
            assert!(e.contains("docs/trace-format.md"), "{e}");
            assert!(!stdout(&o).contains("McNemar"), "{}", stdout(&o));
        }
    }
}

#[test]
fn audit_summary_of_a_file_without_audit_records_says_what_it_expected() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "notes.jsonl", "hello\n{\"a\": 1}\n");
    let o = toolgate(&["audit", "summary", &f], None);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("none of its 2 line(s) is an audit record"),
        "{e}"
    );
    assert!(e.contains("line 1: not JSON"), "{e}");
    assert!(
        e.contains("toolgate guard --audit FILE") && e.contains("toolgate mcp-proxy --audit FILE"),
        "{e}"
    );
    // an empty file (or blank lines only) holds no record either
    for (name, text) in [("empty.jsonl", ""), ("blank.jsonl", "\n\n")] {
        let f = write(d.path(), name, text);
        let o = toolgate(&["audit", "summary", &f], None);
        assert_eq!(o.status.code(), Some(3), "{name}: {}", stdout(&o));
        assert!(
            stderr(&o).contains("holds no audit record"),
            "{}",
            stderr(&o)
        );
    }
}

/// A proxy audit line as `mcp-proxy --audit` writes it (src/mcp/audit.rs).
fn proxy_line(
    tool: &str,
    decision: &str,
    confirmed: &str,
    ms: f64,
    outcome: &str,
    attempts: u32,
) -> String {
    format!(
        r#"{{"time":1764412345.123,"session":"6f2a","tool":"{tool}","name":"{}","server":"sqlite","via":null,"decision":"{decision}","confirmed":{confirmed},"latency_ms":{ms},"outcome":"{outcome}","attempts":{attempts},"detail":null}}"#,
        tool.replace('.', "__")
    )
}

#[test]
fn audit_summary_reads_the_proxy_log_and_the_gate_log() {
    let d = tempfile::tempdir().unwrap();
    let log = [
        proxy_line("sqlite.read_query", "allow", "null", 4.0, "ok", 1),
        proxy_line("sqlite.read_query", "allow", "null", 8.0, "ok", 1),
        proxy_line("sqlite.write_query", "ask", "true", 20.0, "ok", 1),
        proxy_line("sqlite.write_query", "ask", "false", 1.0, "declined", 0),
        proxy_line(
            "sqlite.write_query",
            "ask",
            "null",
            0.5,
            "input_required",
            0,
        ),
        proxy_line(
            "sqlite.write_query",
            "none",
            "null",
            0.2,
            "state_refused",
            0,
        ),
        proxy_line("shell.run", "deny", "null", 0.3, "denied", 0),
        proxy_line(
            "sqlite.read_query",
            "allow",
            "null",
            2.0,
            "definition_changed",
            0,
        ),
    ]
    .join("\n");
    let proxy = write(d.path(), "proxy.jsonl", &log);
    let o = toolgate(&["audit", "summary", &proxy, "--format", "json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = json(&o);
    assert_eq!(s["total_calls"], 7, "{s}");
    assert_eq!(s["proxy_records"], 8);
    assert_eq!(s["successes"], 3);
    assert_eq!(s["skipped_lines"], 0);
    assert_eq!(s["decisions"]["allow"], 2);
    assert_eq!(s["decisions"]["ask"], 3);
    assert_eq!(s["decisions"]["deny"], 1);
    assert_eq!(s["decisions"]["none"], 1);
    assert_eq!(s["confirmations"]["asked"], 3);
    assert_eq!(s["confirmations"]["confirmed"], 1);
    assert_eq!(s["confirmations"]["declined"], 1);
    assert_eq!(s["confirmations"]["unanswered"], 1);
    assert_eq!(s["downstream"]["calls"], 3);
    assert_eq!(s["downstream"]["p50_ms"], 8.0);
    assert_eq!(s["downstream"]["p95_ms"], 20.0);
    assert_eq!(s["error_breakdown"]["input_required"], 1);
    assert_eq!(s["error_breakdown"]["state_refused"], 1);
    assert_eq!(s["error_breakdown"]["declined"], 1);
    assert_eq!(s["error_breakdown"]["denied"], 1);
    assert_eq!(s["events"]["definition_changed"], 1);

    let o = toolgate(&["audit", "summary", &proxy], None);
    let out = stdout(&o);
    for needle in [
        "total calls: 7",
        "success rate: 42.9%",
        "decisions: allow 2, ask 3, deny 1, none 1",
        "confirmations: 3 asked, 1 confirmed, 1 declined, 1 unanswered",
        "downstream latency: p50 8.0 ms, p95 20.0 ms (3 forwarded call(s))",
        "  state_refused: 1",
        "other events: definition_changed 1",
    ] {
        assert!(out.contains(needle), "{needle}\n{out}");
    }

    // A gate log from `guard --audit`, and both in one file.
    let gate = d.path().join("gate.jsonl");
    let g = gate.to_str().unwrap();
    for args in [r#"{"query": "select 1"}"#, r#"{"query": "drop table t"}"#] {
        toolgate(
            &[
                "guard",
                "--tool",
                "sqlite.read_query",
                "--args",
                args,
                "--audit",
                g,
            ],
            None,
        );
    }
    let both = format!("{log}\n{}", std::fs::read_to_string(&gate).unwrap());
    let both = write(d.path(), "both.jsonl", &both);
    let o = toolgate(&["audit", "summary", &both, "--format", "json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = json(&o);
    assert_eq!(s["total_calls"], 9, "{s}");
    assert_eq!(s["gate_records"], 2);
    assert_eq!(s["proxy_records"], 8);
}

#[test]
fn malformed_guard_args_are_an_input_error_not_a_deny() {
    for args in ["{bad", "{\"query\": ", ""] {
        let o = toolgate(
            &["guard", "--tool", "sqlite.read_query", "--args", args],
            None,
        );
        assert_eq!(o.status.code(), Some(3), "{args}: {}", stdout(&o));
        assert!(stderr(&o).contains("--args is not JSON"), "{}", stderr(&o));
        assert!(!stdout(&o).contains("decision"), "{}", stdout(&o));
    }
    // Valid JSON is still judged by the gate.
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "shell.run_command",
            "--args",
            r#"{"command": "rm -rf /"}"#,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(7), "{}", stdout(&o));
}

#[test]
fn a_missing_proxy_config_is_exit_3() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("nope.toml");
    let o = toolgate(&["mcp-proxy", "--config", missing.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot read the --config file"),
        "{}",
        stderr(&o)
    );
    let o = toolgate(&["mcp-proxy", "--config", d.path().to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

#[test]
fn the_readme_exit_code_table_covers_every_subcommand() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let start = readme
        .find("| code | meaning | subcommands |")
        .expect("the table");
    let table: String = readme[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .collect::<Vec<_>>()
        .join("\n");
    for code in 0..=7 {
        assert!(table.contains(&format!("| `{code}` |")), "{code}\n{table}");
    }
    let help = stdout(&toolgate(&["--help"], None));
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 11, "{commands:?}");
    for c in commands {
        let c = if c == "audit" { "audit summary" } else { c };
        let c = if c == "import" { "import bfcl" } else { c };
        assert!(table.contains(&format!("`{c}")), "`{c}` missing\n{table}");
    }
    assert!(table.contains("guard --args"), "{table}");
    assert!(table.contains("mcp-proxy --config"), "{table}");
}

#[test]
fn tools_without_tags_mean_the_tools_alone_for_every_command() {
    let d = tempfile::tempdir().unwrap();
    let tools = write(
        d.path(),
        "tools.json",
        r#"{"tools": [{"name": "get_forecast", "description": "Weather forecast for a city",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]}"#,
    );
    let trace = write(
        d.path(),
        "t.jsonl",
        r#"{"session": "s1", "t": 0, "event": "user_message", "text": "weather in Paris"}
{"session": "s1", "t": 1, "event": "tool_call", "tool": "get_forecast"}
"#,
    );
    let o = toolgate(&["eval", "--tools", &tools, "--format", "json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json(&o)["tools"].as_array().unwrap().len(), 1);
    let o = toolgate(&["check", "--tools", &tools, "--format", "json"], None);
    assert_eq!(json(&o)["tools"], 1, "{}", stderr(&o));
    // A shipped tool is not in that catalog, for any command.
    let o = toolgate(&["explain", "sqlite.read_query", "--tools", &tools], None);
    assert_eq!(o.status.code(), Some(5), "{}", stdout(&o));
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "sqlite.read_query",
            "--args",
            r#"{"query": "select 1"}"#,
            "--tools",
            &tools,
            "--format",
            "json",
        ],
        None,
    );
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("unknown"), "{}", stdout(&o));
    let o = toolgate(
        &[
            "replay", "--trace", &trace, "--tools", &tools, "--format", "json",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json(&o)["summary"]["calls"], 1);
    // With --tags, the tools are added to the tag files.
    let o = toolgate(
        &[
            "eval",
            "--tags",
            "tool-tags",
            "--tools",
            &tools,
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(json(&o)["tools"].as_array().unwrap().len(), 72);
    // The rule is written in --help.
    let help = stdout(&toolgate(&["eval", "--help"], None));
    assert!(
        help.contains("without --tags, the catalog is these tools alone"),
        "{help}"
    );
}

#[test]
fn explain_and_guard_take_the_same_names() {
    for name in ["sqlite.read_query", "sqlite__read_query"] {
        let o = toolgate(&["explain", name], None);
        assert!(o.status.success(), "explain {name}: {}", stderr(&o));
        assert!(
            stdout(&o).starts_with("sqlite.read_query:"),
            "{}",
            stdout(&o)
        );
        let o = toolgate(
            &[
                "guard",
                "--tool",
                name,
                "--args",
                r#"{"query": "select 1"}"#,
                "--format",
                "json",
            ],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "guard {name}: {}", stdout(&o));
        let m = json(&o)["message"].as_str().unwrap_or_default().to_string();
        assert!(m.contains("`sqlite.read_query` is allowed"), "{m}");
    }
    // A name that is neither is refused by both.
    let o = toolgate(&["explain", "sqlite__read_qery"], None);
    assert_eq!(o.status.code(), Some(5));
    let o = toolgate(&["guard", "--tool", "sqlite__read_qery"], None);
    assert_eq!(o.status.code(), Some(7));
    assert!(stdout(&o).contains("Unknown tool"), "{}", stdout(&o));
}

#[test]
fn a_misspelt_weight_is_reported_at_its_key() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string("policies/default.toml").unwrap();
    let line = text
        .lines()
        .position(|l| l.starts_with("w_stage ="))
        .expect("w_stage in the shipped policy")
        + 1;
    let typo =
        text.replacen("\nw_stage =", "\nw_stag =", 1)
            .replacen("\nw_usage =", "\nw_usag =", 1);
    let p = write(d.path(), "typo.toml", &typo);
    let o = toolgate(&["check", "--policy", &p], None);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "typo.toml:{line}:1: weight `w_stag` is not used by the formula, and the formula's `w_stage` has no weight in [score.weights]"
        )),
        "{e}"
    );
    assert!(e.contains("rename the key `w_stag` to `w_stage`"), "{e}");
    // Both misspellings at once.
    assert!(e.contains("rename the key `w_usag` to `w_usage`"), "{e}");
    assert!(e.contains("2 problems found"), "{e}");
    // It never suggests writing the misspelling into the formula.
    assert!(!e.contains("did you mean `w_stag`"), "{e}");
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

fn write_bytes(dir: &std::path::Path, name: &str, parts: &[&[u8]]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, parts.concat()).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_byte_order_mark_is_accepted_in_every_input() {
    let d = tempfile::tempdir().unwrap();
    let policy = std::fs::read("policies/default.toml").unwrap();
    let policy = write_bytes(d.path(), "bom.toml", &[BOM, &policy]);
    let tags = d.path().join("tags");
    std::fs::create_dir(&tags).unwrap();
    for f in std::fs::read_dir("tool-tags").unwrap() {
        let f = f.unwrap().path();
        if f.extension().is_some_and(|x| x == "toml") {
            let text = std::fs::read(&f).unwrap();
            write_bytes(
                &tags,
                f.file_name().unwrap().to_str().unwrap(),
                &[BOM, &text],
            );
        }
    }
    let tags = tags.to_str().unwrap();
    let o = toolgate(&["check", "--policy", &policy, "--tags", tags], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("tools: 71"), "{}", stdout(&o));
    let tools = write_bytes(
        d.path(),
        "tools.json",
        &[
            BOM,
            br#"{"tools": [{"name": "get_forecast", "description": "Weather"}]}"#,
        ],
    );
    let o = toolgate(&["eval", "--tools", &tools], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let input = write_bytes(
        d.path(),
        "in.json",
        &[BOM, br#"{"message": "list tables"}"#],
    );
    let o = toolgate(&["eval", "--input", &input], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = write_bytes(
        d.path(),
        "t.jsonl",
        &[
            BOM,
            br#"{"session": "s1", "t": 0, "event": "tool_call", "tool": "sqlite.list_tables"}"#,
        ],
    );
    let o = toolgate(&["replay", "--trace", &trace], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let args = write_bytes(d.path(), "args.json", &[BOM, br#"{"query": "select 1"}"#]);
    let at = format!("@{args}");
    let o = toolgate(
        &["guard", "--tool", "sqlite.read_query", "--args", &at],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn invalid_utf8_is_reported_with_its_byte_offset() {
    let d = tempfile::tempdir().unwrap();
    let input = write_bytes(
        d.path(),
        "in.json",
        &[b"{\n\"message\": \"a", b"\xFF", b"\"}"],
    );
    let o = toolgate(&["eval", "--input", &input], None);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("in.json: not valid UTF-8 at byte 15 (line 2, column 14)"),
        "{}",
        stderr(&o)
    );
    let trace = write_bytes(d.path(), "t.jsonl", &[b"\xC3"]);
    let o = toolgate(&["replay", "--trace", &trace], None);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("t.jsonl: trace line 1: not valid UTF-8 at byte 0 (line 1, column 1)"),
        "{}",
        stderr(&o)
    );
    let args = write_bytes(d.path(), "a.json", &[b"{\"query\": \"\xFF\"}"]);
    let at = format!("@{args}");
    let o = toolgate(
        &["guard", "--tool", "sqlite.read_query", "--args", &at],
        None,
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("not valid UTF-8 at byte 11 (line 1, column 12)"),
        "{}",
        stderr(&o)
    );
    let tags = d.path().join("tags");
    std::fs::create_dir(&tags).unwrap();
    write_bytes(&tags, "x.toml", &[b"[[tool]]\nname = \"\xFF\"\n"]);
    let o = toolgate(&["check", "--tags", tags.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("x.toml: not valid UTF-8 at byte 17 (line 2, column 9)"),
        "{}",
        stderr(&o)
    );
}

#[test]
#[cfg(unix)]
fn a_file_argument_that_is_not_utf8_is_named() {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::OsStr::from_bytes(b"/tmp/in-\xFF.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("eval")
        .arg("--input")
        .arg(name)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("'--input <FILE>'") && e.contains("is not UTF-8"),
        "{e}"
    );
}

#[test]
fn a_huge_name_is_echoed_clipped() {
    let huge = "x".repeat(120_000);
    let d = tempfile::tempdir().unwrap();
    let audit = d.path().join("audit.jsonl");
    let o = toolgate(
        &["guard", "--tool", &huge, "--audit", audit.to_str().unwrap()],
        None,
    );
    assert_eq!(o.status.code(), Some(7));
    let out = stdout(&o);
    // was 480 KB: the name four times over
    assert!(out.len() < 4_000, "{} bytes", out.len());
    assert!(out.contains("… 119800 more characters"), "{out}");
    let line = std::fs::read_to_string(&audit).unwrap();
    assert!(line.len() < 2_000, "{} bytes", line.len());
    let o = toolgate(&["explain", &huge], None);
    assert_eq!(o.status.code(), Some(5));
    assert!(stderr(&o).len() < 1_000, "{} bytes", stderr(&o).len());
    assert!(stderr(&o).contains("… 119800 more characters"));
    let input = format!(r#"{{"usage": {{"call_counts": {{"{huge}": 1}}}}}}"#);
    let o = toolgate(&["eval", "--input", "-"], Some(&input));
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).len() < 1_000, "{} bytes", stderr(&o).len());
}

/// Issue 29 item 6: every problem found is reported at once, also across
/// stages: a tag file with a syntax error does not hide another file's
/// undeclared domain.
#[test]
fn problems_of_every_tag_file_are_reported_together() {
    let d = tempfile::tempdir().unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let time = std::fs::read_to_string(format!("{root}/tool-tags/time.toml")).unwrap();
    let bad = time.replacen("domains = [", "domains = [\"time_travel\", ", 1);
    assert_ne!(bad, time);
    write(d.path(), "time.toml", &bad);
    write(d.path(), "broken.toml", "[[tool]\nname = \"b\"\n");
    let dir = d.path().to_str().unwrap();
    let o = toolgate(&["check", "--tags", dir], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(e.contains("broken.toml:1:8: TOML syntax error"), "{e}");
    assert!(
        e.contains("domain `time_travel` is not declared in [domains]"),
        "{e}"
    );
    assert!(e.contains("2 problems found"), "{e}");
}

/// Issue 29 item 5: a huge name or value in an input or a trace is echoed
/// clipped, with a marker saying how much was cut.
#[test]
fn huge_names_in_inputs_and_traces_are_echoed_clipped() {
    let d = tempfile::tempdir().unwrap();
    let n = "x".repeat(120_000);
    let msg = serde_json::json!({"session": "s", "t": 0, "event": "user_message", "text": "hi"});
    let lines = [
        serde_json::json!({"session": "s", "t": 1, "event": "tool_call", "tool": n}),
        serde_json::json!({"session": "s", "t": 1, "event": n}),
        serde_json::json!({"session": "s", "t": 1, "event": "context", "stage": n}),
        serde_json::json!({"session": "s", "t": 1, "event": "tool_call", "tool": "time.get_current_time", n.clone(): 1}),
    ];
    for (i, l) in lines.iter().enumerate() {
        let trace = write(d.path(), &format!("t{i}.jsonl"), &format!("{msg}\n{l}\n"));
        let o = toolgate(&["replay", "--trace", &trace], None);
        assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.len() < 2_000, "line {i}: {} bytes echoed", e.len());
        assert!(e.contains("more characters"), "{e}");
    }
    let inputs = [
        serde_json::json!({"message": "hi", "context": {"conversation_stage": n}}),
        serde_json::json!({"message": "hi", n.clone(): 1}),
        serde_json::json!({"message": "hi", "usage": {"call_counts": {n.clone(): -1}}}),
    ];
    for (i, input) in inputs.iter().enumerate() {
        let f = write(d.path(), &format!("in{i}.json"), &input.to_string());
        let o = toolgate(&["eval", "--input", &f], None);
        assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
        let e = stderr(&o);
        assert!(e.len() < 2_000, "input {i}: {} bytes echoed", e.len());
        assert!(e.contains("more characters"), "input {i}: {e}");
    }
}

#[test]
fn audit_summary_cuts_long_lists_and_long_names_of_a_crafted_log() {
    // issue 29 (h): every list the CLI cuts says "… N more"; the error kinds
    // of a crafted log were printed all, each whole. (The kinds are the gate
    // records' free-form `error_kind`: an outcome outside the known ones is
    // a skipped line since round 6, tests/cli_newcomer_round6.rs.)
    let d = tempfile::tempdir().unwrap();
    let gate_line = |i: usize, kind: &str| {
        format!(
            r#"{{"time":"t","event":"verdict","call_id":"c{i}","tool":"sqlite.read_query","decision":"deny","rule_ids":[],"args_digest":"d","args_preview":"{{}}","latency_ms":1.0,"outcome":"denied","error_kind":"{kind}"}}"#
        )
    };
    let mut lines: Vec<String> = (0..30)
        .map(|i| gate_line(i, &format!("kind_{i:02}")))
        .collect();
    let long = "x".repeat(5_000);
    lines.push(gate_line(30, &long));
    let log = write(d.path(), "crafted.jsonl", &lines.join("\n"));
    let o = toolgate(&["audit", "summary", &log], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("  kind_00: 1"), "{out}");
    assert!(out.contains("… 11 more"), "{out}");
    assert!(!out.contains("kind_29"), "{out}");
    assert!(out.len() < 4_000, "{} bytes", out.len());
    // the JSON summary is data: every kind, whole
    let o = toolgate(&["audit", "summary", &log, "--format", "json"], None);
    let s = json(&o);
    assert_eq!(s["error_breakdown"].as_object().unwrap().len(), 31, "{s}");
}
