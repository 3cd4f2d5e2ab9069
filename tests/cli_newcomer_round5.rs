//! Issue 29, what the fifth newcomer pass found (closing note 35, "Still
//! missing"): `mcp-proxy --config` value errors in plain words at their
//! value, weights too large for any score to mean anything, `check
//! --samples 0`, inline `--input` tools and undeclared stages located with
//! a did-you-mean, and trace numbers echoed as written.

mod common;
use common::{stderr, stdout, toolgate, write};

/// Item 1: every value error of a `--config` file stands at its value's
/// FILE:LINE:COLUMN, names the key and says what is expected in plain
/// words; numbers as written; `[server]` and `era` get their own advice;
/// all problems of the file at once.
#[test]
fn proxy_config_value_errors_name_the_key_at_the_value_in_plain_words() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            "max_concurrent_calls = -5\n",
            "1:24",
            "max_concurrent_calls must be a whole number within [1, 2305843009213693951], found -5",
        ),
        (
            "max_concurrent_calls = 1e300\n",
            "1:24",
            "max_concurrent_calls must be a whole number within [1, 2305843009213693951], found 1e300",
        ),
        (
            "debounce_ms = \"50\"\n",
            "1:15",
            "debounce_ms must be a whole number of milliseconds, found a string",
        ),
        (
            "[server]\nname = \"t\"\ncommand = \"x\"\n",
            "1:1",
            "`[server]` is one table; servers are an array of tables: write `[[server]]`",
        ),
        (
            "[[server]]\nname = \"t\"\ncommand = \"x\"\nera = \"moden\"\n",
            "4:7",
            "unknown era `moden`; did you mean `modern`? (server[0].era is one of: auto, modern, legacy)",
        ),
        (
            // rmcp reads an empty list as any host: the Host check was off
            // without a word (newcomer pass 4)
            "[http]\nallowed_hosts = []\n",
            "2:17",
            "http.allowed_hosts = [] would turn the Host check off",
        ),
        (
            "[[server]]\nname = \"t\"\nurl = \"notaurl\"\n",
            "3:7",
            "server[0].url: `notaurl` is not an http:// or https:// URL",
        ),
    ];
    for (i, (text, at, want)) in cases.iter().enumerate() {
        let p = write(d.path(), &format!("c{i}.toml"), text);
        let o = toolgate(&["mcp-proxy", "--config", &p], Some(""));
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(&format!("{p}:{at}: {want}")), "{text}: {err}");
        assert!(!err.contains("usize") && !err.contains("expected a sequence"));
        assert!(!err.contains("0000000000"), "{err}");
    }
    // every problem of one file at once, each at its own line
    let p = write(
        d.path(),
        "many.toml",
        "max_concurrent_calls = 0\n[http]\npath = \"mcp\"\n[[server]]\nname = \"t\"\ncommand = \"x\"\nera = \"legasy\"\n",
    );
    let err = stderr(&toolgate(&["mcp-proxy", "--config", &p], Some("")));
    for want in [
        format!(
            "{p}:1:24: max_concurrent_calls must be a whole number within [1, 2305843009213693951], found 0"
        ),
        format!("{p}:3:8: http.path must start with `/`"),
        format!("{p}:7:7: unknown era `legasy`; did you mean `legacy`?"),
    ] {
        assert!(err.contains(&want), "{want}\n{err}");
    }
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

/// The shipped default policy with `w_stage` set to `value`.
fn with_w_stage(value: &str) -> String {
    let full = std::fs::read_to_string("policies/default.toml").unwrap();
    let text = full.replacen("\nw_stage = 0.20", &format!("\nw_stage = {value}"), 1);
    assert_ne!(text, full);
    text
}

/// Item 2: a weight too large for any score to mean anything is one load
/// error at its value, as written; a large one that pins every score to
/// the clamp's end is one warning, not nine; no number in 300 digits.
#[test]
fn an_absurd_weight_is_one_error_at_its_value_as_written() {
    let d = tempfile::tempdir().unwrap();
    let text = with_w_stage("1e300");
    let (line, col) = line_col(&text, text.find("w_stage = 1e300").unwrap() + 10);
    let p = write(d.path(), "huge.toml", &text);
    for cmd in ["check", "eval"] {
        let o = toolgate(&[cmd, "--policy", &p], None);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "{p}:{line}:{col}: weight `w_stage` = 1e300 is too large for any score to mean anything"
            )),
            "{cmd}: {err}"
        );
        assert!(err.contains("1 problem found"), "{cmd}: {err}");
        assert!(!err.contains("0000000000") && !stdout(&o).contains("0000000000"));
    }
    // 1e10 loads (scores are computable), with one warning instead of the
    // threshold's and the seven terms'
    let mut t: toml::Table = toml::from_str(&with_w_stage("1e10")).unwrap();
    // they expect the seed's active sets and score ranges
    t.remove("examples");
    t.remove("properties");
    // (written back as toml writes it, then as a user would: `1e10`)
    let text =
        toml::to_string(&t)
            .unwrap()
            .replacen("w_stage = 10000000000.0", "w_stage = 1e10", 1);
    assert!(text.contains("w_stage = 1e10"), "{text}");
    let p = write(d.path(), "large.toml", &text);
    let o = toolgate(&["check", "--policy", &p], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let warnings: Vec<&str> = out.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{out}");
    assert!(
        warnings[0].contains("every score is 1, so the threshold and every term decide nothing; the largest weight is `w_stage` = 1e10"),
        "{out}"
    );
    assert!(!out.contains("can never change any activation"), "{out}");
}

/// Item 3: `check --samples 0` checks nothing: refused as an option out
/// of range (exit 2, like `--fuzz 0`: tests/cli_newcomer_echoes.rs), not
/// "no counterexample in 0 random combinations".
#[test]
fn check_with_zero_samples_is_refused() {
    let o = toolgate(&["check", "--samples", "0"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--samples 0 is out of range: give 1 to 100000")
            && err.contains("check nothing"),
        "{err}"
    );
    assert!(!stdout(&o).contains("no counterexample"));
    let o = toolgate(&["check", "--samples", "1"], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Item 4: errors in an `--input` file's inline tools stand at the input
/// file's line:column, a misspelt stage with its did-you-mean; an
/// undeclared `conversation_stage` is located with a did-you-mean, in an
/// input and in a trace.
#[test]
fn inline_tools_and_stages_of_an_input_are_located_with_a_did_you_mean() {
    let d = tempfile::tempdir().unwrap();
    let input = "{\n  \"message\": \"list tables\",\n  \"tools\": [\n    {\"name\": \"a\", \"base_priority\": 5, \"parameter_complexity\": 2, \"domains\": [\"database\"]},\n    {\"name\": \"b\", \"base_priority\": 0.5, \"parameter_complexity\": 2, \"preferred_stages\": [\"debuging\"]}\n  ]\n}\n";
    let p = write(d.path(), "tools.json", input);
    let o = toolgate(&["eval", "--input", &p], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    let (l1, c1) = line_col(input, input.find(": 5,").unwrap() + 2);
    let (l2, c2) = line_col(input, input.find("\"debuging\"").unwrap());
    assert!(
        err.contains(&format!(
            "{p}:{l1}:{c1}: tool `a`: base_priority must be within [0, 1], found 5"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{p}:{l2}:{c2}: tool `b`: stage `debuging` is not declared"
        )) && err.contains("did you mean `debugging`?"),
        "{err}"
    );
    // half a set of tags: at the tool's object
    let input = "{\n \"tools\": [\n  {\"name\": \"a\", \"domains\": [\"database\"]}\n ]\n}\n";
    let p = write(d.path(), "half.json", input);
    let err = stderr(&toolgate(&["eval", "--input", &p], None));
    assert!(
        err.contains(&format!(
            "{p}:3:3: tools[0]: tool `a`: base_priority and parameter_complexity are required"
        )),
        "{err}"
    );
    // an undeclared conversation_stage
    let input = "{\n  \"context\": {\"conversation_stage\": \"debuging\"}\n}\n";
    let p = write(d.path(), "stage.json", input);
    let o = toolgate(&["eval", "--input", &p], None);
    assert_eq!(o.status.code(), Some(3));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{p}:2:37: conversation stage `debuging` is not declared"
        )) && err.contains("(did you mean `debugging`?)"),
        "{err}"
    );
    // ... and in a trace
    let trace = "{\"session\":\"a\",\"t\":1,\"event\":\"context\",\"stage\":\"debuging\"}\n{\"session\":\"a\",\"t\":5,\"event\":\"tool_call\",\"tool\":\"sqlite.read_query\"}\n";
    let p = write(d.path(), "stage.jsonl", trace);
    let o = toolgate(&["replay", "--trace", &p], None);
    assert_eq!(o.status.code(), Some(3));
    let err = stderr(&o);
    let col = 1 + trace.find("\"debuging\"").unwrap();
    assert!(
        err.contains(&format!(
            "trace line 1, column {col}: stage `debuging` is not declared"
        )) && err.contains("did you mean `debugging`?"),
        "{err}"
    );
}

/// Item 5: a trace time is echoed as written, never in 301 digits.
#[test]
fn trace_times_are_echoed_as_written() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "t.jsonl",
        "{\"session\":\"a\",\"t\":1e300,\"event\":\"user_message\",\"text\":\"hi\"}\n{\"session\":\"a\",\"t\":5,\"event\":\"tool_call\",\"tool\":\"sqlite.read_query\"}\n",
    );
    let o = toolgate(&["replay", "--trace", &p], None);
    assert_eq!(o.status.code(), Some(3));
    let err = stderr(&o);
    assert!(
        err.contains("trace line 2: time goes back in session `a`: t = 5 after t = 1e300"),
        "{err}"
    );
    assert!(!err.contains("0000000000"), "{err}");
}

/// Newcomer pass 4: `eval`'s table padded its tool column to the longest
/// name, and `std::fmt` panics on a width above 65,535: a 70,000-character
/// tool name crashed `eval` (exit 101). The column is capped now.
#[test]
fn eval_does_not_panic_on_a_tool_name_wider_than_fmt_allows() {
    let d = tempfile::tempdir().unwrap();
    let name = "c".repeat(70_000);
    let tools = serde_json::json!({"tools": [
        {"name": name, "description": "a tool with a very long name", "inputSchema": {"type": "object"}}
    ]});
    let p = write(d.path(), "bt.json", &tools.to_string());
    let o = toolgate(&["eval", "--tools", &p], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert!(stdout(&o).contains("score"), "{}", stdout(&o));
}

/// Newcomer pass 4: `guard --args` with a repeated key was judged by its
/// last value (serde_json's reading), so `rm -rf ~` followed by `ls` was
/// allowed; a first-key-wins consumer of the same text runs `rm -rf ~`.
/// A repeated key is refused now; the same call with one key is allowed.
#[test]
fn guard_refuses_argument_text_with_a_repeated_key() {
    let tool = ["guard", "--tool", "shell.run_command", "--args"];
    let dup = toolgate(
        &[&tool[..], &[r#"{"command":"rm -rf ~","command":"ls"}"#]].concat(),
        None,
    );
    assert_ne!(dup.status.code(), Some(0), "{}", stdout(&dup));
    let all = format!("{}{}", stdout(&dup), stderr(&dup));
    assert!(all.contains("duplicate key `command`"), "{all}");
    let one = toolgate(&[&tool[..], &[r#"{"command":"ls"}"#]].concat(), None);
    assert_eq!(one.status.code(), Some(0), "{}", stdout(&one));
}
