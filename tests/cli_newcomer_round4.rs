//! Issue 29, what the fourth newcomer pass still found (part A:
//! diagnostics): non-UTF-8 inline `--args`, policies cut short, input
//! numbers out of range located and echoed as written, policy numbers
//! range-checked at their value, and did-you-means where a key, a tool
//! name or a type is wrong.

mod common;
use common::{stderr, stdout, toolgate, write};

/// The rendered report with miette's wrapping undone (a wrapped message
/// continues on a line that starts with `│`).
fn flat(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        match line.trim_start().strip_prefix("│ ") {
            Some(rest) if !out.is_empty() => {
                out.push(' ');
                out.push_str(rest);
            }
            _ => {
                out.push('\n');
                out.push_str(line);
            }
        }
    }
    out
}

fn default_policy() -> String {
    std::fs::read_to_string("policies/default.toml").unwrap()
}

/// 1-based line and column (in characters) of byte `at` of `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = 1 + before.matches('\n').count();
    let col = 1 + before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count();
    (line, col)
}

/// The byte offset of `needle` in `text` (the first one).
fn find(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("`{needle}` is not in the text"))
}

/// Item 1: Inline `--args` bytes that are not UTF-8: an input error (exit 3)
/// naming the argument and the byte offset, not clap's usage error (2).
#[cfg(unix)]
#[test]
fn non_utf8_inline_args_name_the_argument_and_the_byte() {
    use std::os::unix::ffi::OsStrExt;
    let args = std::ffi::OsStr::from_bytes(b"{\"command\": \"\xff\"}");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["guard", "--tool", "shell.run_command", "--args"])
        .arg(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("error: --args is not valid UTF-8 at byte 13 (line 1, column 14)"),
        "{err}"
    );
    assert!(!err.contains("invalid UTF-8 was detected"), "{err}");
    // valid UTF-8 still goes through (a deny verdict, exit 7)
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
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
}

/// Item 2: A policy cut short: a cut that leaves invalid TOML is rejected at
/// the cut, one that drops a required section is rejected naming it; a cut
/// inside a comment loads, and `check` warns at the end of the file that it
/// does not end with a newline; a cut just after a newline cannot be told
/// from a complete file (README says so).
#[test]
fn a_policy_cut_short_is_rejected_at_the_cut_or_warned_about() {
    let d = tempfile::tempdir().unwrap();
    let full = default_policy();

    // Inside a key: invalid TOML, the error at the cut's line.
    let at = find(&full, "\nmax_trial_values = ") + "\nmax_trial".len();
    let p = write(d.path(), "mid-key.toml", &full[..at]);
    let o = toolgate(&["check", "--policy", &p], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let (line, _) = line_col(&full, at);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("mid-key.toml:{line}:")) && err.contains("TOML syntax error"),
        "{err}"
    );

    // Before `[score]`: the required section is named.
    let at = find(&full, "\n[score]") + 1;
    let p = write(d.path(), "no-score.toml", &full[..at]);
    let o = toolgate(&["check", "--policy", &p], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("missing the required key `score`"),
        "{}",
        stderr(&o)
    );

    // Inside the comment above [gate.limits]: valid TOML; loads, warned.
    let at = find(&full, "# Bounds on one call") + 10;
    let p = write(d.path(), "in-comment.toml", &full[..at]);
    let o = toolgate(&["check", "--policy", &p], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let (line, col) = line_col(&full, at);
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "warning: {p}:{line}:{col}: the file does not end with a newline: if it was cut short, what followed the cut is missing"
        )),
        "{out}"
    );

    // Just after a newline: nothing tells it from a complete file.
    let at = find(&full, "# Bounds on one call");
    let p = write(d.path(), "at-newline.toml", &full[..at]);
    let o = toolgate(&["check", "--policy", &p], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("does not end with a newline"));
    // The complete file gets no such warning either.
    let p = write(d.path(), "full.toml", &full);
    let o = toolgate(&["check", "--policy", &p], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("does not end with a newline"));
}

/// Item 3: An input number out of its range stands at its value (file:line:
/// column) and is echoed as written, clipped.
#[test]
fn input_numbers_out_of_range_are_located_and_echoed_as_written() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            "{\n  \"usage\": {\"call_counts\": {\"sqlite.read_query\": -3}}\n}\n",
            "-3",
            "usage.call_counts[`sqlite.read_query`] must be a whole number >= 0",
        ),
        (
            "{\"context\": {\n    \"session_duration_seconds\": -5.0}}\n",
            "-5.0",
            "`context.session_duration_seconds` must be a finite number >= 0",
        ),
        (
            "{\"usage\": {\n \"seconds_since_last_call\": {\n  \"sqlite.read_query\": -1e-3}}}\n",
            "-1e-3",
            "usage.seconds_since_last_call[`sqlite.read_query`] must be a finite number >= 0",
        ),
        (
            "{\"usage\": {\"call_counts\": {\"a\": 1, \"sqlite.read_query\": 1e300}}}\n",
            "1e300",
            "usage.call_counts[`sqlite.read_query`] must be a whole number >= 0",
        ),
        (
            "{\"usage\": {\"usage_frequency\": {\"sqlite.read_query\": 2}}}\n",
            "2",
            "usage.usage_frequency[`sqlite.read_query`] must be within [0, 1]",
        ),
    ];
    for (i, (text, written, what)) in cases.iter().enumerate() {
        let p = write(d.path(), &format!("in{i}.json"), text);
        let (line, col) = line_col(text, find(text, &format!(": {written}")) + 2);
        for cmd in [
            vec!["eval", "--input", &p],
            vec!["explain", "sqlite.read_query", "--input", &p],
        ] {
            let o = toolgate(&cmd, None);
            assert_eq!(o.status.code(), Some(3), "{cmd:?}: {}", stdout(&o));
            let err = stderr(&o);
            assert!(
                err.contains(&format!("{p}:{line}:{col}: {what}"))
                    && err.trim_end().ends_with(&format!("found {written}")),
                "{cmd:?}: {err}"
            );
        }
    }
    // A number past what a float holds, and NaN, are named as such.
    let p = write(d.path(), "big.json", "{\"now\": 1e400}");
    let err = stderr(&toolgate(&["eval", "--input", &p], None));
    assert!(
        err.contains("number out of range (a number must lie within ±1.7976931348623157e308)"),
        "{err}"
    );
    let p = write(d.path(), "nan.json", "{\"now\": NaN}");
    let err = stderr(&toolgate(&["eval", "--input", &p], None));
    assert!(
        err.contains(&format!(
            "{p}:1:9: invalid JSON: JSON has no NaN or Infinity"
        )),
        "{err}"
    );
}

/// Item 4: Policy numbers with a natural range are checked at their value, and
/// echoed as written (`1e308`, not 309 digits).
#[test]
fn policy_numbers_are_range_checked_at_their_value_and_echoed_short() {
    let d = tempfile::tempdir().unwrap();
    let full = default_policy();
    let cases = [
        (
            "threshold = 0.4 ",
            "threshold = -0.4 ",
            "-0.4",
            "threshold -0.4 is below the lowest score 0: every tool passes it (scores are clamped to [0, 1])",
        ),
        (
            "threshold = 0.4 ",
            "threshold = 1e308 ",
            "1e308",
            "threshold 1e308 can never be reached: the highest score is 1",
        ),
        (
            "threshold_factor = 0.6",
            "threshold_factor = 1e308",
            "1e308",
            "`activation.cold_start.threshold_factor` must be within [0, 1], found 1e308",
        ),
        (
            "window_seconds = 300.0",
            "window_seconds = -3e300",
            "-3e300",
            "`features.recency_bonus.window_seconds` must be within [0, ∞], found -3e300",
        ),
        (
            "max_depth = 32 ",
            "max_depth = 0 ",
            "0",
            "`gate.limits.max_depth` must be 1 or more, found 0",
        ),
        (
            "max_argument_bytes = 1048576",
            "max_argument_bytes = 1e308",
            "1e308",
            "`gate.limits.max_argument_bytes` must be a whole number from 0 to 18446744073709551615, found 1e308",
        ),
        (
            "timeout_seconds = 30.0",
            "timeout_seconds = 1e308",
            "1e308",
            "`gate.execution.timeout_seconds` must be a positive number of seconds (at most 18446744073709551615), found 1e308",
        ),
        (
            "backoff_factor = 2.0",
            "backoff_factor = 0.5",
            "0.5",
            "`gate.execution.backoff_factor` must be at least 1, found 0.5",
        ),
    ];
    for (i, (from, to, written, what)) in cases.iter().enumerate() {
        let text = full.replacen(&format!("\n{from}"), &format!("\n{to}"), 1);
        assert_ne!(text, full, "{from}");
        let (line, col) = line_col(
            &text,
            find(&text, &format!("\n{to}")) + 1 + to.find(written).unwrap(),
        );
        let p = write(d.path(), &format!("p{i}.toml"), &text);
        let o = toolgate(&["check", "--policy", &p], None);
        assert_eq!(o.status.code(), Some(1), "{to}: {}", stdout(&o));
        let err = flat(&stderr(&o));
        assert!(err.contains(&format!("{p}:{line}:{col}: ")), "{to}: {err}");
        assert!(err.contains(what), "{to}: {err}");
        // was 309 digits
        assert!(!err.contains("00000000000000000000"), "{to}: {err}");
    }
    // A threshold below a clamp that goes below 0 is fine (tests/validation.rs
    // has the shifted formula); at the clamp's lower bound it is a top-k.
    let text = full.replacen("\nthreshold = 0.4 ", "\nthreshold = 0.0 ", 1);
    let p = write(d.path(), "zero.toml", &text);
    let err = flat(&stderr(&toolgate(&["check", "--policy", &p], None)));
    assert!(!err.contains("is below the lowest score"), "{err}");
}

/// Item 5a: A misspelt key of a `mcp-proxy --config` file: its file:line:column
/// and a did-you-mean (exit 2, a bad configuration).
#[test]
fn a_misspelt_proxy_config_key_gets_its_place_and_a_did_you_mean() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "proxy.toml",
        "max_concurent_calls = 4\n\n[[server]]\nname = \"t\"\ncommand = \"x\"\n",
    );
    let o = toolgate(&["mcp-proxy", "--config", &p], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{p}:1:1: unknown key `max_concurent_calls` (did you mean `max_concurrent_calls`?); known keys here: "
        )),
        "{err}"
    );
    let p = write(
        d.path(),
        "server.toml",
        "[[server]]\nname = \"t\"\ncomand = \"x\"\n",
    );
    let err = stderr(&toolgate(&["mcp-proxy", "--config", &p], None));
    assert!(
        err.contains(&format!(
            "{p}:3:1: unknown key `comand` (did you mean `command`?)"
        )),
        "{err}"
    );
}

/// Item 5b: `explain` of a name the catalog does not hold: the close names, and
/// which catalog is loaded.
#[test]
fn explain_of_an_unknown_tool_suggests_close_names_and_names_the_catalog() {
    let o = toolgate(&["explain", "sqlite.red_query"], None);
    assert_eq!(o.status.code(), Some(5));
    let err = stderr(&o);
    assert!(
        err.contains("unknown tool `sqlite.red_query` (did you mean one of: `sqlite.read_query`")
            && err
                .contains("the loaded catalog: 71 tool(s) from the shipped tool-tags/ (embedded)"),
        "{err}"
    );
    let o = toolgate(
        &["explain", "nosuch", "--tools", "examples/server.json"],
        None,
    );
    assert_eq!(o.status.code(), Some(5));
    let err = stderr(&o);
    assert!(
        err.contains("unknown tool `nosuch`; no name of the catalog is close")
            && err.contains("from --tools examples/server.json"),
        "{err}"
    );
}

/// Item 5c: Trace lines: a misspelt required key at its column with a
/// did-you-mean; a value of the wrong type at its column, saying what was
/// expected and what was found.
#[test]
fn trace_key_and_type_errors_give_the_column() {
    let d = tempfile::tempdir().unwrap();
    let ok = "{\"session\": \"s\", \"t\": 0, \"event\": \"user_message\", \"text\": \"hi\"}\n";
    let cases = [
        (
            "{\"sesion\": \"s\", \"t\": 1, \"event\": \"tool_call\", \"tool\": \"sqlite.read_query\"}",
            "\"sesion\"",
            "unknown key `sesion` (did you mean `session`?); missing `session` (the session id)",
        ),
        (
            "{\"session\": \"s\", \"t\": \"5\", \"event\": \"tool_call\", \"tool\": \"sqlite.read_query\"}",
            "\"5\"",
            "`t` must be a number of seconds, found a string \"5\"",
        ),
        (
            "{\"session\": \"s\", \"t\": 5, \"event\": \"tool_call\", \"tool\": [\"sqlite.read_query\"]}",
            "[\"sqlite",
            "`tool` must be a non-empty string, found an array [\"sqlite.read_query\"]",
        ),
        (
            "{\"session\": \"s\", \"t\": 5, \"event\": \"tool_call\", \"tool\": \"sqlite.read_query\", \"argumnts\": {}}",
            "\"argumnts\"",
            "unknown key `argumnts` in a `tool_call` event (did you mean `arguments`?)",
        ),
    ];
    for (i, (line, at, what)) in cases.iter().enumerate() {
        let p = write(d.path(), &format!("t{i}.jsonl"), &format!("{ok}{line}\n"));
        let col = 1 + line[..find(line, at)].chars().count();
        let o = toolgate(&["replay", "--trace", &p], None);
        assert_eq!(o.status.code(), Some(3), "{line}: {}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("{p}: trace line 2, column {col}: {what}")),
            "{line}: {err}"
        );
    }
}

/// Item 5d: A tools file: a misspelt or mistyped `tools` and a tool without a
/// name are located (file:line:column, the tool's index).
#[test]
fn tool_file_shape_errors_are_located() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            "{\"tool\": [{\"name\": \"a\", \"description\": \"d\"}]}\n",
            "\"tool\"",
            "unknown key `tool` (did you mean `tools`?); expected an MCP tools/list result",
        ),
        (
            "{\"tools\": {\"name\": \"a\"}}\n",
            "{\"name\"",
            "`tools` must be an array of tools, found an object",
        ),
        (
            "[\n  {\"type\": \"function\", \"function\": {\"name\": \"ok\", \"description\": \"d\"}},\n  {\"type\": \"function\", \"function\": {\"description\": \"no name\"}}\n]\n",
            "{\"type\": \"function\", \"function\": {\"description\"",
            "tool 1 (`[1]`): its \"function\" object has no \"name\" string",
        ),
        (
            "{\"tools\": [{\"name\": \"a\"}, {\"name\": 7}]}\n",
            "{\"name\": 7}",
            "tool 1 (`tools[1]`): it has no \"name\" string, found a number",
        ),
    ];
    for (i, (text, at, what)) in cases.iter().enumerate() {
        let p = write(d.path(), &format!("tools{i}.json"), text);
        let (line, col) = line_col(text, find(text, at));
        let o = toolgate(&["check", "--tools", &p], None);
        assert_eq!(o.status.code(), Some(1), "{text}: {}", stdout(&o));
        let err = flat(&stderr(&o));
        assert!(
            err.contains(&format!("{p}:{line}:{col}: {what}")),
            "{text}: {err}"
        );
    }
}
