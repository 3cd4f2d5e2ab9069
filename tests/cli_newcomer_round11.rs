//! Issue 29, what the eleventh newcomer pass found (items 1 "Silent
//! acceptance" and 9 "README true"): an output file that is one of the
//! command's inputs, a repeated JSON key in a `--tools` file or a trace
//! line, `compare`/`fit` on a trace without a tool call, `--holdout` shown
//! as a file, a misspelt JSON Schema type with no place, and JSON files of
//! the wrong kind (a trace as `--input`, an input as `--trace`, a
//! `tools/list` result as `--input`) accepted or misread.

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

fn policy_text() -> String {
    std::fs::read_to_string("policies/default.toml").unwrap()
}

fn trace_text() -> String {
    std::fs::read_to_string("examples/sessions.jsonl").unwrap()
}

/// (exit code, stderr) of `toolgate ARGS`.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let o = toolgate(args, None);
    (o.status.code(), stderr(&o))
}

/// Item 1: `guard --audit` never appends to one of the command's inputs
/// (the policy, a --tools file, a tag file of --tags, the --args file), nor
/// to an existing file that is not an audit log; an audit log it wrote is
/// appended to again.
#[test]
fn guard_audit_is_never_an_input_nor_a_file_of_another_kind() {
    let d = tempfile::tempdir().unwrap();
    let policy = write(d.path(), "my-policy.toml", &policy_text());
    let tools = write(
        d.path(),
        "tools.json",
        r#"{"tools": [{"name": "echo", "description": "Echo text", "inputSchema": {"type": "object"}}]}"#,
    );
    let args = write(d.path(), "args.json", "{}");
    let tags = d.path().join("tags");
    std::fs::create_dir(&tags).unwrap();
    let tag = tags.join("git.toml");
    std::fs::copy("tool-tags/git.toml", &tag).unwrap();
    let tag = tag.to_str().unwrap().to_string();
    let before = std::fs::read_to_string(&policy).unwrap();
    for (extra, target, what) in [
        (
            vec!["--policy", policy.as_str()],
            policy.as_str(),
            format!("is the file given as --policy {policy}"),
        ),
        (
            vec!["--tools", tools.as_str()],
            tools.as_str(),
            format!("is the file given as --tools {tools}"),
        ),
        (
            vec!["--tags", tags.to_str().unwrap()],
            tag.as_str(),
            format!("is a tag file of the --tags folder {}", tags.display()),
        ),
    ] {
        let mut a = vec!["guard", "--tool", "git.git_status", "--args", "{}"];
        if extra[0] == "--tools" {
            a[2] = "echo";
        }
        a.extend(extra.iter().copied());
        a.extend(["--audit", target]);
        let (code, err) = run(&a);
        assert_eq!(code, Some(3), "{a:?}: {err}");
        assert!(
            err.contains(&format!("--audit {target} {what}"))
                && err.contains("name another file for --audit"),
            "{a:?}: {err}"
        );
    }
    let at_args = format!("@{args}");
    let (code, err) = run(&[
        "guard",
        "--tool",
        "git.git_status",
        "--args",
        &at_args,
        "--audit",
        &args,
    ]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("is the file given as --args"), "{err}");
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), before);
    // an existing file that is not an audit log: what it starts with, what was expected
    let notes = write(d.path(), "notes.txt", "[score]\nthreshold = 1\n");
    let (code, err) = run(&["guard", "--tool", "git.git_status", "--audit", &notes]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "--audit {notes}: the file exists and is not an audit log: its first line `[score]` is not an audit record"
        )) && err.contains("appends one JSON line per call to an audit log"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "[score]\nthreshold = 1\n"
    );
    // a log it wrote (and an empty file) is appended to
    let log = d.path().join("audit.jsonl");
    let log = log.to_str().unwrap();
    write(d.path(), "empty.jsonl", "");
    for target in [log, log, d.path().join("empty.jsonl").to_str().unwrap()] {
        let (code, err) = run(&["guard", "--tool", "git.git_status", "--audit", target]);
        assert!(code != Some(3), "{err}");
    }
    assert_eq!(std::fs::read_to_string(log).unwrap().lines().count(), 2);
}

/// Item 1: `fit --out`, `--transitions-out` and `compare --plot` never
/// overwrite an input (told by inode: a symlink to the trace is the
/// trace), nor each other, before any work; the input is left as it was.
#[test]
fn fit_and_compare_outputs_are_never_their_inputs() {
    let d = tempfile::tempdir().unwrap();
    let trace = write(d.path(), "t.jsonl", &trace_text());
    let policy = write(d.path(), "p.toml", &policy_text());
    let link = d.path().join("link.jsonl");
    std::os::unix::fs::symlink(&trace, &link).unwrap();
    let link = link.to_str().unwrap();
    let svg = d.path().join("t.svg");
    std::fs::hard_link(&trace, &svg).unwrap();
    let svg = svg.to_str().unwrap();
    let x = d.path().join("x.toml");
    let x = x.to_str().unwrap();
    let cases: [(Vec<&str>, String); 5] = [
        (
            vec!["fit", "--trace", &trace, "--out", &trace],
            format!("--out {trace} is the file given as --trace {trace}"),
        ),
        (
            vec!["fit", "--trace", &trace, "--out", link],
            format!("--out {link} is the file given as --trace {trace}"),
        ),
        (
            vec![
                "fit",
                "--trace",
                &trace,
                "--policy",
                &policy,
                "--transitions-out",
                &policy,
            ],
            format!("--transitions-out {policy} is the file given as --policy {policy}"),
        ),
        (
            vec!["fit", "--trace", &trace, "--out", x, "--transitions-out", x],
            format!("--out {x} is also given as --transitions-out"),
        ),
        (
            vec![
                "compare",
                "--policy-a",
                &policy,
                "--policy-b",
                &policy,
                "--trace",
                &trace,
                "--plot",
                svg,
            ],
            format!("--plot {svg} is the file given as --trace {trace}"),
        ),
    ];
    for (args, want) in &cases {
        let (code, err) = run(args);
        assert_eq!(code, Some(3), "{args:?}: {err}");
        assert!(err.contains(want.as_str()), "{args:?}: {err}");
        // before any work: nothing was read or written
        assert!(
            !err.contains("AUC") && !std::path::Path::new(x).exists(),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_to_string(&trace).unwrap(), trace_text());
}

/// Item 1: `import bfcl --out` is neither its `--data` folder nor inside it.
#[test]
fn import_out_is_not_inside_its_data_folder() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("bfcl");
    std::fs::create_dir(&data).unwrap();
    // a BFCL folder (the refusal comes before its files are converted)
    std::fs::write(data.join("BFCL_v4_irrelevance.json"), "").unwrap();
    let data_s = data.to_str().unwrap();
    let inside = data.join("out");
    for (out, want) in [
        (data_s.to_string(), "is the --data folder".to_string()),
        (
            inside.to_str().unwrap().to_string(),
            format!("is inside the --data folder {data_s}"),
        ),
        (format!("{data_s}/./"), "is the --data folder".to_string()),
    ] {
        let (code, err) = run(&["import", "bfcl", "--data", data_s, "--out", &out]);
        assert_eq!(code, Some(3), "{out}: {err}");
        assert!(
            err.contains(&format!("--out {out} {want}")) && err.contains("name a folder outside"),
            "{out}: {err}"
        );
    }
    assert!(!inside.exists());
}

/// Item 1: `mcp-proxy`'s audit, pins and shadow log are none of the files
/// it reads (the --config file, the policy), given as options or in the
/// configuration (named at their key), and the audit is an audit log.
#[test]
fn mcp_proxy_outputs_are_not_its_inputs() {
    let d = tempfile::tempdir().unwrap();
    let policy = write(d.path(), "p.toml", &policy_text());
    let server = "[[server]]\nname = \"x\"\ncommand = \"cat\"\n";
    let c1 = write(
        d.path(),
        "c1.toml",
        &format!("audit = \"c1.toml\"\n{server}"),
    );
    let c2 = write(
        d.path(),
        "c2.toml",
        &format!("pins = \"p.toml\"\npolicy = \"p.toml\"\n{server}"),
    );
    let notes = write(d.path(), "notes.txt", "hello\n");
    let cases: [(Vec<&str>, String); 4] = [
        (
            vec!["--server", "x=cat", "--policy", &policy, "--audit", &policy],
            format!("--audit {policy} is the file given as --policy {policy}"),
        ),
        (
            vec!["--config", &c1],
            format!(
                "{c1}:1:9: audit {} is the file given as --config {c1}",
                d.path().join("c1.toml").display()
            ),
        ),
        (
            vec!["--config", &c2],
            format!(
                "{c2}:1:8: pins {} is the file given as policy",
                d.path().join("p.toml").display()
            ),
        ),
        (
            vec!["--server", "x=cat", "--audit", &notes],
            format!("--audit {notes}: the file exists and is not an audit log"),
        ),
    ];
    for (args, want) in &cases {
        let mut a = vec!["mcp-proxy"];
        a.extend(args.iter().copied());
        let o = toolgate(&a, Some(""));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains(want.as_str()), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), policy_text());
}

/// Item 2: a repeated key in a `--tools` file or a trace line is refused at
/// its second occurrence (FILE:LINE:COLUMN / trace line L, column C), as
/// `--input` refuses one, instead of the last value winning.
#[test]
fn a_repeated_json_key_is_refused_in_tools_files_and_traces() {
    let d = tempfile::tempdir().unwrap();
    let tools = write(
        d.path(),
        "tools.json",
        "{\"tools\": [\n  {\"name\": \"a\", \"description\": \"x\",\n   \"inputSchema\": {\"type\": \"object\", \"type\": \"string\"}}\n]}\n",
    );
    let (code, err) = run(&["check", "--tools", &tools]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        flat(&err).contains(&format!("{tools}:3:38: duplicate key `type`")),
        "{err}"
    );
    let trace = write(
        d.path(),
        "t.jsonl",
        "{\"session\": \"s\", \"t\": 0, \"event\": \"context\"}\n{\"session\": \"s\", \"t\": 1, \"event\": \"tool_call\", \"tool\": \"git.git_status\", \"tool\": \"sqlite.read_query\"}\n",
    );
    for cmd in ["replay", "fit"] {
        let (code, err) = run(&[cmd, "--trace", &trace]);
        assert_eq!(code, Some(3), "{cmd}: {err}");
        assert!(
            err.contains(&format!(
                "{trace}: trace line 2, column 74: duplicate key `tool`"
            )),
            "{cmd}: {err}"
        );
    }
    // --input's own refusal, for comparison
    let input = write(
        d.path(),
        "in.json",
        "{\"message\": \"a\", \"message\": \"b\"}",
    );
    let (code, err) = run(&["eval", "--input", &input]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("duplicate field `message`"), "{err}");
}

/// Item 3: on a trace with sessions and no tool call, `compare` says so
/// in replay's plain words (its no-call-turn rows still measure an
/// irrelevance trace); the weights fit is an input error (exit 3), not
/// statistics over 0 calls.
#[test]
fn compare_and_fit_need_a_tool_call() {
    let d = tempfile::tempdir().unwrap();
    let trace = write(
        d.path(),
        "t.jsonl",
        "{\"session\": \"s\", \"t\": 0, \"event\": \"context\", \"stage\": \"exploration\"}\n{\"session\": \"s\", \"t\": 1, \"event\": \"user_message\", \"text\": \"hi\"}\n",
    );
    let o = toolgate(&["replay", "--trace", &trace], None);
    assert!(stdout(&o).contains("no tool calls to score (1 session(s), 71 tools)"));
    let p = "policies/default.toml";
    // compare still measures the turns without a call (an irrelevance
    // trace), with a note that the recall rows are empty
    let args = [
        "compare",
        "--policy-a",
        p,
        "--policy-b",
        p,
        "--trace",
        &trace,
    ];
    let o = toolgate(&args, None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    assert!(
        err.contains(&format!(
            "note: {trace}: no tool calls to score (1 session(s), 71 tools)"
        )) && err.contains("recall rows are over 0 calls"),
        "{args:?}: {err}"
    );
    // the weights fit has nothing to fit without a call
    let args = ["fit", "--trace", &trace];
    let o = toolgate(&args, None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
    assert!(
        err.contains(&format!(
            "{trace}: no tool calls to score (1 session(s), 71 tools)"
        )) && err.contains("needs `tool_call` events"),
        "{args:?}: {err}"
    );
    assert!(!stdout(&o).contains("over 0 calls"), "{}", stdout(&o));
}

/// Item 4: every `--option F` of README's command table takes a file, as
/// `--help` says (`--holdout` takes a share, not a file).
#[test]
fn the_readme_writes_f_only_for_options_that_take_a_file() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let mut wrong = Vec::new();
    for row in readme.lines().filter(|l| l.starts_with("| `toolgate ")) {
        let cmd: Vec<&str> = row[11..]
            .split_whitespace()
            .take_while(|w| !w.starts_with('-') && !w.starts_with('['))
            .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
            .collect();
        let words: Vec<&str> = row.split_whitespace().collect();
        for w in words.windows(2) {
            let opt = w[0].trim_start_matches('[');
            if !opt.starts_with("--") || !w[1].trim_end_matches(']').starts_with('F') {
                continue;
            }
            if w[1].trim_end_matches(']').trim_end_matches("...") != "F"
                && !w[1].starts_with("F|")
                && !w[1].starts_with("F\\")
            {
                continue;
            }
            let mut a = cmd.clone();
            a.push("--help");
            let help = stdout(&toolgate(&a, None));
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{opt} ")))
                .unwrap_or_default()
                .to_string();
            if !line.contains("FILE") {
                wrong.push(format!("{cmd:?} {opt}: {}", line.trim()));
            }
        }
    }
    assert!(wrong.is_empty(), "README writes F for: {wrong:?}");
    let help = stdout(&toolgate(&["fit", "--help"], None));
    assert!(help.contains("--holdout <SHARE>"), "{help}");
}

/// Item 5: a `type` that is not a JSON Schema type is reported at its JSON
/// pointer and at its value's place in the tools file, with the types and
/// a did-you-mean; other meta-schema errors carry the pointer too.
#[test]
fn a_misspelt_schema_type_is_named_at_its_pointer() {
    let d = tempfile::tempdir().unwrap();
    let text = "{\"tools\": [\n  {\"name\": \"ok\"},\n  {\"name\": \"a\", \"inputSchema\": {\"type\": \"object\",\n    \"properties\": {\"name\": {\"type\": \"strng\"}}}}\n]}\n";
    let tools = write(d.path(), "tools.json", text);
    let (code, err) = run(&["check", "--tools", &tools]);
    assert_eq!(code, Some(1), "{err}");
    let err = flat(&err);
    assert!(
        err.contains(&format!(
            "{tools}:4:37: tool `a`: input_schema is not a valid JSON Schema: `/properties/name/type`: `strng` is not a JSON Schema type (did you mean `string`?); the types are array, boolean, integer, null, number, object, string"
        )),
        "{err}"
    );
    let openai = write(
        d.path(),
        "openai.json",
        r#"[{"type": "function", "function": {"name": "b", "parameters": {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": ["integr", "null"]}]}}}}}]"#,
    );
    let err = flat(&run(&["check", "--tools", &openai]).1);
    assert!(
        err.contains("`/properties/x/anyOf/1/type`: `integr` is not a JSON Schema type (did you mean `integer`?)"),
        "{err}"
    );
    let other = write(
        d.path(),
        "other.json",
        r#"{"tools": [{"name": "c", "inputSchema": {"type": "object", "properties": {"x": {"minimum": "a"}}}}]}"#,
    );
    let err = flat(&run(&["check", "--tools", &other]).1);
    assert!(
        err.contains(&format!("{other}:1:92: tool `c`: input_schema is not a valid JSON Schema: `/properties/x/minimum`:")),
        "{err}"
    );
}

/// Item 6: a trace given as `--input`, an input as `--trace`, and a
/// `tools/list` result as `--input` (scored silently before, as an empty
/// session over those tools) are named by their shape, with the option
/// that takes them.
#[test]
fn json_files_of_the_wrong_kind_are_named() {
    let d = tempfile::tempdir().unwrap();
    let trace = "examples/sessions.jsonl";
    let input = "examples/sql-session.json";
    let catalog = "examples/server.json";
    let looks_trace = "looks like a trace (JSON Lines of session events";
    let looks_input = "looks like a session input (one JSON object with context, message, usage): pass it as --input";
    let looks_catalog = "looks like a tool catalog (an MCP tools/list result or an OpenAI tools array): pass it as --tools";
    let p = "policies/default.toml";
    let cases: [(Vec<&str>, i32, String); 7] = [
        (
            vec!["eval", "--input", trace],
            3,
            format!("--input {trace} {looks_trace}"),
        ),
        (
            vec!["explain", "git.git_status", "--input", trace],
            3,
            format!("--input {trace} {looks_trace}"),
        ),
        (
            vec!["replay", "--trace", input],
            3,
            format!("--trace {input} {looks_input}"),
        ),
        (
            vec![
                "compare",
                "--policy-a",
                p,
                "--policy-b",
                p,
                "--trace",
                input,
            ],
            3,
            format!("--trace {input} {looks_input}"),
        ),
        (
            vec!["eval", "--input", catalog],
            3,
            format!("--input {catalog} {looks_catalog}"),
        ),
        (
            vec!["eval", "--tools", trace],
            1,
            format!("--tools {trace} {looks_trace}"),
        ),
        (
            vec!["eval", "--tools", input],
            1,
            format!("--tools {input} {looks_input}"),
        ),
    ];
    for (args, code, want) in &cases {
        let o = toolgate(args, None);
        let err = flat(&stderr(&o));
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {err}");
        assert!(err.contains(want.as_str()), "{args:?}: {err}");
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    }
    // on stdin too; and an input with inline tools and a session still runs
    let text = std::fs::read_to_string(catalog).unwrap();
    let o = toolgate(&["eval", "--input", "-"], Some(&text));
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains(&format!("--input - {looks_catalog}")));
    let inline = text.replacen('{', "{\"context\": {},", 1);
    let f = write(d.path(), "inline.json", &inline);
    let o = toolgate(&["eval", "--input", &f], None);
    assert!(o.status.success(), "{}", stderr(&o));
}
