//! Issue 29, round 8: what the last newcomer pass found still said "ok"
//! to a mistake. `import bfcl` checks each file's shape at
//! FILE:LINE:COLUMN and says where BFCL's files come from; `check` reports
//! an input schema that cannot validate (the gate would deny every call);
//! `[gate]` problems are counted once, in plain words, with did-you-mean,
//! past a misspelt table name, and unknown placeholders in its messages
//! are refused; `eval` and `explain` say why every score is pinned; and
//! the small ones (a broken tag symlink, a bad `preset`, a misspelt
//! property kind, a `--tools` file given twice, `--args null`, `--plot
//! x.png`, `--policy /dev/null`, two empty `--help` texts).

mod common;
use common::{stderr, stdout, toolgate, write};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The `× FILE:LINE:COL: …` lines of a report (one line each: the
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

/// The 1-based line and column `skip` bytes after the first `needle`.
fn line_col_after(text: &str, needle: &str, skip: usize) -> String {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not in the text"))
        + skip;
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count()
        + 1;
    format!("{line}:{col}")
}

fn line_col(text: &str, needle: &str) -> String {
    line_col_after(text, needle, 0)
}

/// The shipped default policy with `from` replaced by `to` (once; the
/// edit must apply).
fn default_with(from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(format!("{ROOT}/policies/default.toml")).unwrap();
    assert!(text.contains(from), "the edit {from} applies");
    text.replacen(from, to, 1)
}

/// (1) `import bfcl`: an empty `BFCL_v4_multiple.json` is an error saying
/// the file has no question (it wrote an empty trace, exit 0), and
/// nothing is written; a `question` of a bad type is an error at
/// FILE:LINE:COLUMN of its value (it was dropped in silence).
#[test]
fn import_bfcl_refuses_an_empty_file_and_a_question_of_the_wrong_type_at_its_place() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    std::fs::create_dir_all(data.join("possible_answer")).unwrap();
    write(&data, "BFCL_v4_multiple.json", "");
    write(&data.join("possible_answer"), "BFCL_v4_multiple.json", "");
    let out = d.path().join("out");
    let (data_s, out_s) = (data.to_str().unwrap(), out.to_str().unwrap());
    let o = toolgate(&["import", "bfcl", "--data", data_s, "--out", out_s], None);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "{data_s}/BFCL_v4_multiple.json: the file has no question (it is empty)"
        )),
        "{e}"
    );
    assert!(!out.exists(), "nothing is written");

    let good = r#"{"id": "q1", "question": [[{"role": "user", "content": "weather in Paris"}]], "function": [{"name": "w", "description": "d", "parameters": {"type": "dict", "properties": {}}}]}"#;
    let bad = r#"{"id": "q2", "question": "what is the weather", "function": [{"name": "w", "description": "d", "parameters": {"type": "dict", "properties": {}}}]}"#;
    let questions = format!("{good}\n{bad}\n");
    write(&data, "BFCL_v4_multiple.json", &questions);
    write(
        &data.join("possible_answer"),
        "BFCL_v4_multiple.json",
        "{\"id\": \"q1\", \"ground_truth\": [{\"w\": {}}]}\n{\"id\": \"q2\", \"ground_truth\": [{\"w\": {}}]}\n",
    );
    let o = toolgate(&["import", "bfcl", "--data", data_s, "--out", out_s], None);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let e = stderr(&o);
    let at = line_col(&questions, "\"what is the weather\"");
    assert!(
        e.contains(&format!(
            "{data_s}/BFCL_v4_multiple.json:{at}: `question` must be an array of turns, each an array of messages, found a string"
        )),
        "{e}"
    );
    assert!(e.contains("1 problem found"), "{e}");
    assert!(!out.exists(), "nothing is written");

    // A question without an answer stands at its id, with the file's path.
    write(
        &data.join("possible_answer"),
        "BFCL_v4_multiple.json",
        "{\"id\": \"q1\", \"ground_truth\": [{\"w\": {}}]}\n",
    );
    write(
        &data,
        "BFCL_v4_multiple.json",
        &format!("{good}\n{}\n", good.replace("q1", "q3")),
    );
    let o = toolgate(&["import", "bfcl", "--data", data_s, "--out", out_s], None);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "{data_s}/BFCL_v4_multiple.json:2:8: question `q3` has no answer in possible_answer/BFCL_v4_multiple.json"
        )),
        "{e}"
    );
}

/// (1) The hint says where BFCL's files come from (the public gorilla
/// repository's folder, the `--help` example), not the project's own
/// `../shared/data/bfcl`, which a newcomer does not have; `--help` shows
/// the example.
#[test]
fn import_bfcl_says_where_the_files_come_from() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let o = toolgate(
        &[
            "import",
            "bfcl",
            "--data",
            d.path().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(!e.contains("../shared"), "{e}");
    assert!(
        e.contains("berkeley-function-call-leaderboard/bfcl_eval/data/ of the public gorilla repository (https://github.com/ShishirPatil/gorilla)"),
        "{e}"
    );
    assert!(
        e.contains("see `toolgate import bfcl --help` for an example"),
        "{e}"
    );
    let h = stdout(&toolgate(&["import", "bfcl", "--help"], None));
    assert!(
        h.contains("toolgate import bfcl --data gorilla/berkeley-function-call-leaderboard/bfcl_eval/data --out bfcl"),
        "{h}"
    );
}

/// (2) A tool whose `inputSchema` has an invalid regex `pattern` or a
/// `$ref` to nothing loads, but the gate denies every call of it
/// (`schema.schema_unusable`); `check` said "ok". It is now an error
/// (exit 1) at the bad keyword's place in the tools file, and `guard`
/// still denies the call (fail closed).
#[test]
fn check_reports_a_schema_that_cannot_validate_at_the_keyword() {
    let d = tempfile::tempdir().unwrap();
    let tools = r##"{"tools": [
 {"name": "re_tool", "description": "find things by a regular expression", "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "pattern": "("}}}},
 {"name": "ref_tool", "description": "look a definition up", "inputSchema": {"type": "object", "properties": {"q": {"$ref": "#/$defs/nosuch"}}}},
 {"name": "fine_tool", "description": "a tool with a schema that works", "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "pattern": "^a+$"}}}}
]}"##;
    let f = write(d.path(), "tools.json", tools);
    let o = toolgate(&["check", "--tools", &f], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    let (lines, count) = problems(&e);
    let want = [
        format!(
            "{f}:{}: tool `re_tool`: its inputSchema cannot validate arguments",
            line_col_after(tools, "\"pattern\": \"(\"", "\"pattern\": ".len())
        ),
        format!(
            "{f}:{}: tool `ref_tool`: its inputSchema cannot validate arguments",
            line_col(tools, "\"#/$defs/nosuch\"")
        ),
    ];
    for w in &want {
        assert!(lines.iter().any(|l| l.starts_with(w.as_str())), "{w}\n{e}");
    }
    assert!(
        lines
            .iter()
            .all(|l| l
                .contains("the call gate would deny every call of it (`schema.schema_unusable`)")),
        "{e}"
    );
    assert!(!lines.iter().any(|l| l.contains("fine_tool")), "{e}");
    assert_eq!(count, Some("2 problems found"), "{e}");
    // What check reports is what guard does.
    let o = toolgate(
        &[
            "guard",
            "--tools",
            &f,
            "--tool",
            "re_tool",
            "--args",
            "{\"q\": \"a\"}",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(7));
    assert!(
        stdout(&o).contains("schema.schema_unusable"),
        "{}",
        stdout(&o)
    );
    let o = toolgate(
        &[
            "guard",
            "--tools",
            &f,
            "--tool",
            "fine_tool",
            "--args",
            "{\"q\": \"aa\"}",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// (3) `severity = "hihg"` in a `[[gate.patterns]]` entry was two problems
/// (the value, then the required key "missing"), in serde's words: now one,
/// at the value, with the dotted key path, the allowed values and a
/// did-you-mean.
#[test]
fn a_bad_gate_enum_value_is_one_problem_with_a_did_you_mean() {
    let d = tempfile::tempdir().unwrap();
    let from = "description = \"Dangerous file deletion (rm -r)\"\nadvice = \"Do not pass shell commands in this argument; use the shell tool, which checks the command.\"\nseverity = \"high\"";
    let bad = default_with(from, &from.replace("\"high\"", "\"hihg\""));
    let f = write(d.path(), "policy.toml", &bad);
    let o = toolgate(&["check", "--policy", &f], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    let (lines, count) = problems(&e);
    assert_eq!(count, Some("1 problem found"), "{e}");
    let at = line_col(&bad, "\"hihg\"");
    assert!(
        lines[0].starts_with(&format!(
            "{f}:{at}: `gate.patterns[0].severity` has the unknown value `hihg`; allowed values: info, low, medium, high, critical"
        )),
        "{e}"
    );
    assert!(e.contains("help: did you mean `high`?"), "{e}");
    assert!(
        !e.contains("unknown variant") && !e.contains("missing field"),
        "{e}"
    );
}

/// (3) A misspelt table name (`[gate.limitz]`) stopped the `[gate]` read:
/// it is reported in plain words (not serde's "unknown field …, expected
/// one of …") and the rest is read on: a typo in `[gate.limits]` and a
/// `1e308` byte limit come out in the same run, the number as written in
/// a plain range message (not "expected usize").
#[test]
fn a_misspelt_gate_table_is_reported_and_the_rest_is_read_on() {
    let d = tempfile::tempdir().unwrap();
    let bad = default_with("[gate.execution]", "[gate.executoin]")
        .replacen("max_depth = 32 ", "max_dept = 32 ", 1)
        .replacen(
            "max_argument_bytes = 1048576",
            "max_argument_bytes = 1e308",
            1,
        );
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
            "{f}:{}: unknown key `executoin` in [gate] (did you mean `execution`?)",
            line_col(&bad, "executoin")
        ),
    ];
    for w in &want {
        assert!(lines.iter().any(|l| l.starts_with(w.as_str())), "{w}\n{e}");
    }
    let big = format!(
        "{f}:{}: `gate.limits.max_argument_bytes` must be a whole number from 0 to 18446744073709551615, found 1e308",
        line_col_after(
            &bad,
            "max_argument_bytes = 1e308",
            "max_argument_bytes = ".len()
        )
    );
    assert!(lines.iter().any(|l| l.starts_with(&big)), "{big}\n{e}");
    assert_eq!(count, Some("3 problems found"), "{e}");
    assert!(
        !e.contains("unknown field") && !e.contains("expected usize"),
        "{e}"
    );
}

/// (3) A placeholder typo in a `[gate.checks]` message (`{detial}`) was
/// accepted and reached the model as written: it is a load error at the
/// placeholder, naming the allowed placeholders, with a did-you-mean.
#[test]
fn an_unknown_placeholder_in_a_gate_message_is_a_load_error() {
    let d = tempfile::tempdir().unwrap();
    let from = "unknown_tool = { id = \"call.unknown-tool\", severity = \"high\", action = \"deny\", message = \"{detail}\" }";
    let bad = default_with(from, &from.replace("{detail}", "Not allowed: {detial}"));
    let f = write(d.path(), "policy.toml", &bad);
    let o = toolgate(&["check", "--policy", &f], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    let (lines, count) = problems(&e);
    assert_eq!(count, Some("1 problem found"), "{e}");
    assert!(
        lines[0].starts_with(&format!(
            "{f}:{}: `gate.checks.unknown_tool.message` holds the unknown placeholder `{{detial}}`: the gate fills only {{detail}} here",
            line_col(&bad, "{detial}")
        )),
        "{e}"
    );
    assert!(e.contains("help: did you mean `{detail}`?"), "{e}");
    // The shipped policy's placeholders all load (the shipped check passes).
    assert_eq!(toolgate(&["check"], None).status.code(), Some(0));
}

/// (4) `w_stage = 1e10` pins every score at 1: every tool is active.
/// `check` warned; `eval` and `explain` said nothing of why. They print
/// the same warning on stderr, once (stdout stays the report).
#[test]
fn eval_and_explain_say_why_every_score_is_pinned() {
    let d = tempfile::tempdir().unwrap();
    let text = default_with("w_stage = 0.20", "w_stage = 1e10");
    // (the policy's activation examples fail under such weights: left out)
    let start = text.find("[[examples]]").unwrap();
    let end = text
        .find("# Calls and the decision the call gate must reach")
        .unwrap();
    let text = format!("{}{}", &text[..start], &text[end..]);
    let f = write(d.path(), "policy.toml", &text);
    let check = toolgate(&["check", "--policy", &f], None);
    let c = stdout(&check);
    let warning = c
        .lines()
        .find(|l| l.contains("every score is 1, so the threshold and every term decide nothing"))
        .unwrap_or_else(|| panic!("check warns\n{c}{}", stderr(&check)))
        .trim()
        .to_string();
    let input = format!("{ROOT}/examples/sql-session.json");
    for args in [
        vec!["eval", "--policy", &f, "--input", &input],
        vec![
            "explain",
            "sqlite.read_query",
            "--policy",
            &f,
            "--input",
            &input,
        ],
        vec!["eval", "--policy", &f, "--format", "json"],
    ] {
        let o = toolgate(&args, None);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(
            e.matches(&warning).count(),
            1,
            "{args:?}: {e}\nwant {warning}"
        );
        assert!(
            !stdout(&o).contains("decide nothing"),
            "stdout is the report"
        );
    }
    // A policy without the problem prints no warning.
    let o = toolgate(&["eval", "--input", &input], None);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

/// (5) A broken `*.toml` symlink in `--tags` was skipped in silence: it is
/// an error naming the file and its missing target.
#[test]
fn a_broken_tag_file_link_is_named() {
    let d = tempfile::tempdir().unwrap();
    let tags = d.path().join("tags");
    std::fs::create_dir(&tags).unwrap();
    std::fs::copy(
        format!("{ROOT}/tool-tags/time.toml"),
        tags.join("time.toml"),
    )
    .unwrap();
    std::os::unix::fs::symlink("gone.toml", tags.join("git.toml")).unwrap();
    let o = toolgate(&["check", "--tags", tags.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "cannot read {}/git.toml: a symbolic link to `gone.toml`, which does not exist",
            tags.display()
        )),
        "{e}"
    );
}

/// (5) `"preset": "nosuch"` in `--input` was ignored: it is an error at
/// its value, with a did-you-mean among the seed presets; the seed's own
/// presets still load.
#[test]
fn an_unknown_preset_in_an_input_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let text = "{\"message\": \"list the tables\",\n \"preset\": \"artcle\"}";
    let f = write(d.path(), "in.json", text);
    let o = toolgate(&["eval", "--input", &f], None);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "{f}:{}: `preset` `artcle` is not a seed preset (did you mean `article`?); the seed vectors' presets: article, registry",
            line_col(text, "\"artcle\"")
        )),
        "{e}"
    );
    let ok = write(d.path(), "ok.json", "{\"preset\": \"registry\"}");
    assert_eq!(
        toolgate(&["eval", "--input", &ok], None).status.code(),
        Some(0)
    );
}

/// (5) `score_withn` in `[[properties]]` was two problems ("states nothing"
/// and an unknown key, listing name, tools, samples): one, at the key,
/// with a did-you-mean.
#[test]
fn a_misspelt_property_kind_gets_a_did_you_mean() {
    let d = tempfile::tempdir().unwrap();
    let bad = default_with("score_within = [0.0, 1.0]", "score_withn = [0.0, 1.0]");
    let f = write(d.path(), "policy.toml", &bad);
    let o = toolgate(&["check", "--policy", &f], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    let (lines, count) = problems(&e);
    assert_eq!(count, Some("1 problem found"), "{e}");
    assert!(
        lines[0].starts_with(&format!(
            "{f}:{}: unknown key `score_withn` in [properties[1]], so property `scores stay within the clamp` states nothing",
            line_col(&bad, "score_withn")
        )),
        "{e}"
    );
    assert!(e.contains("help: did you mean `score_within`?"), "{e}");
}

/// (5) The same `--tools` file given twice said "tool name `a` is already
/// used" at its own place: it says the file is given twice, naming both
/// options.
#[test]
fn a_tools_file_given_twice_is_named_once() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "t.json",
        r#"[{"name": "a", "description": "x"}, {"name": "b", "description": "y"}]"#,
    );
    let other = format!("{}/./t.json", d.path().display());
    let o = toolgate(&["check", "--tools", &f, "--tools", &other], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    let canonical = std::fs::canonicalize(&f).unwrap();
    assert!(
        e.contains(&format!(
            "the tools file {} is given twice: as the 1st --tools ({f}) and as the 2nd ({other}); give each --tools file once",
            canonical.display()
        )),
        "{e}"
    );
    assert!(!e.contains("already used"), "{e}");
    assert!(e.contains("1 problem found"), "{e}");
}

/// (5) `guard --args null` was checked as `{}`: it is refused, the
/// arguments must be a JSON object (exit 3, an input error).
#[test]
fn guard_refuses_null_arguments() {
    let o = toolgate(
        &["guard", "--tool", "time.get_current_time", "--args", "null"],
        None,
    );
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("--args null: the arguments must be a JSON object; give '{}' for a call without arguments"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "no verdict: {}", stdout(&o));
}

/// (5) `compare --plot x.png` wrote SVG under a PNG name: only `.svg` is
/// accepted (exit 2), nothing is written.
#[test]
fn compare_plots_svg_files_only() {
    let d = tempfile::tempdir().unwrap();
    let trace = write(
        d.path(),
        "t.jsonl",
        "{\"session\": \"s\", \"t\": 0, \"event\": \"user_message\", \"text\": \"list the tables\"}\n{\"session\": \"s\", \"t\": 1, \"event\": \"tool_call\", \"tool\": \"sqlite.list_tables\"}\n",
    );
    let p = format!("{ROOT}/policies/default.toml");
    let png = d.path().join("x.png");
    let o = toolgate(
        &[
            "compare",
            "--policy-a",
            &p,
            "--policy-b",
            &p,
            "--trace",
            &trace,
            "--plot",
            png.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o)
            .contains("the plot is written as SVG only, so the file must end in .svg, not .png"),
        "{}",
        stderr(&o)
    );
    assert!(!png.exists());
    let svg = d.path().join("x.SVG");
    let o = toolgate(
        &[
            "compare",
            "--policy-a",
            &p,
            "--policy-b",
            &p,
            "--trace",
            &trace,
            "--plot",
            svg.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}

/// (5) `--policy /dev/null` said "cannot read /dev/null: not a regular
/// file" without the option: the option is named.
#[test]
fn a_device_given_as_policy_is_named_with_its_option() {
    let o = toolgate(&["check", "--policy", "/dev/null"], None);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("--policy /dev/null: not a regular file (a character device)"),
        "{e}"
    );
    let o = toolgate(&["check", "--tools", "/dev/null"], None);
    assert!(
        stderr(&o).contains("--tools /dev/null: not a regular file"),
        "{}",
        stderr(&o)
    );
}

/// (5) `explain --input` and `compare --skip-invalid` (and `fit
/// --skip-invalid`) had no `--help` text.
#[test]
fn every_option_of_explain_compare_and_fit_has_help() {
    for (cmd, option) in [
        ("explain", "--input"),
        ("compare", "--skip-invalid"),
        ("fit", "--skip-invalid"),
    ] {
        let h = stdout(&toolgate(&[cmd, "--help"], None));
        let lines: Vec<&str> = h.lines().collect();
        let i = lines
            .iter()
            .position(|l| l.trim_start().starts_with(option))
            .unwrap_or_else(|| panic!("{cmd} --help lists {option}\n{h}"));
        // the help stands after the option (and its value name), or on
        // the next line, indented
        let same = lines[i].trim_start()[option.len()..]
            .trim_start_matches(|c: char| c != ' ')
            .trim();
        let next = lines.get(i + 1).map_or("", |l| l.trim());
        let next_is_help = !next.starts_with('-') && !next.is_empty();
        assert!(
            same.len() > 10 || next_is_help,
            "{cmd} {option} has help text:\n{h}"
        );
    }
}
