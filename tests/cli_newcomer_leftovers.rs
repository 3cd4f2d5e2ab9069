//! Issue 29, what a second newcomer pass still found open: an unused weight
//! located with a did-you-mean, bounded tool names and snippets in tag
//! files, where an unknown tool stands in an `eval` input, UTF-8 columns,
//! `fit`'s failing examples named once, the clamp findings and the declared
//! properties saying which tools each covers, a misspelt required argument,
//! and "… N more" on capped lists.

mod common;
use common::{stderr, stdout, toolgate, write};

fn default_policy() -> String {
    std::fs::read_to_string("policies/default.toml").unwrap()
}

/// The 1-based line of the first line of `text` starting with `prefix`.
fn line_of(text: &str, prefix: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starts with {prefix}"))
        + 1
}

/// (a) An unused weight stands at its key, with a did-you-mean against the
/// formula's weights; a huge key is echoed clipped.
#[test]
fn an_unused_weight_is_located_with_a_did_you_mean() {
    let d = tempfile::tempdir().unwrap();
    let text = default_policy().replacen("\nw_usage =", "\nw_usgae = 0.1\nw_usage =", 1);
    let line = line_of(&text, "w_usgae");
    let p = write(d.path(), "unused.toml", &text);
    let o = toolgate(&["check", "--policy", &p], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "warning: {p}:{line}:1: weight `w_usgae` is not used by the formula, so it has no effect (did you mean the formula's `w_usage`?"
        )),
        "{out}"
    );
    let huge = "w".repeat(100_000);
    let text = default_policy().replacen("\nw_usage =", &format!("\n{huge} = 0.1\nw_usage ="), 1);
    let p = write(d.path(), "huge.toml", &text);
    let o = toolgate(&["check", "--policy", &p], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // was 103 KB: the key whole
    assert!(out.len() < 20_000, "{} bytes", out.len());
    assert!(out.contains("… 99800 more characters"), "{out}");
}

/// (b) A tool name longer than a tag file allows is an error at its
/// file:line:column, echoed clipped; a snippet whose context line is huge
/// is not echoed.
#[test]
fn tag_file_names_and_snippets_are_bounded() {
    let d = tempfile::tempdir().unwrap();
    let tags = d.path().join("tags");
    std::fs::create_dir(&tags).unwrap();
    let name = "x".repeat(100_000);
    write(
        &tags,
        "long.toml",
        &format!(
            "[[tool]]\nname = \"{name}\"\ndescription = \"d\"\ndomains = []\nbase_priority = 0.5\nparameter_complexity = 1\n"
        ),
    );
    let dir = tags.to_str().unwrap();
    let o = toolgate(&["check", "--tags", dir], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    // was 404 KB of stdout
    assert!(
        out.len() + err.len() < 4_000,
        "{} + {} bytes",
        out.len(),
        err.len()
    );
    // (the renderer wraps the message: checked in pieces)
    assert!(
        err.contains("long.toml:2:8: tool name")
            && err.contains("… 99800 more characters` is 100000 characters long; a tag file's names are at most 256"),
        "{err}"
    );
    // A missing key in a file whose neighbouring line is 100,000 characters.
    std::fs::remove_file(tags.join("long.toml")).unwrap();
    write(
        &tags,
        "snippet.toml",
        &format!(
            "[[tool]]\nname = \"ok\"\ndescription = \"{name}\"\ndomains = []\nbase_priority = 0.5\nparameter_complexity = 1\nfoo = 1\n"
        ),
    );
    let o = toolgate(&["check", "--tags", dir], None);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    // was 200 KB: the source lines around the key
    assert!(err.len() < 1_000, "{} bytes", err.len());
    assert!(err.contains("snippet.toml:7:1: unknown key `foo`"), "{err}");
}

/// (c) An input naming a tool outside the loaded catalog: where it stands
/// in the input, which catalog is loaded, and how to add the tool.
#[test]
fn an_unknown_tool_in_an_input_names_its_place_and_the_catalog() {
    let d = tempfile::tempdir().unwrap();
    let tags = d.path().join("tags");
    std::fs::create_dir(&tags).unwrap();
    std::fs::copy("tool-tags/time.toml", tags.join("time.toml")).unwrap();
    let dir = tags.to_str().unwrap();
    let input = write(
        d.path(),
        "in.json",
        "{\n  \"message\": \"hi\",\n  \"context\": {\"recent_tool_calls\": [\"time.get_curent_time\"]}\n}\n",
    );
    let o = toolgate(&["eval", "--tags", dir, "--input", &input], None);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{input}:3:37: context.recent_tool_calls[0] names `time.get_curent_time`, which is not in the catalog (did you mean `time.get_current_time`?)")),
        "{e}"
    );
    assert!(
        e.contains(&format!("the loaded catalog: 2 tool(s) from --tags {dir}"))
            && e.contains(&format!("declare it in a tag file in {dir}"))
            && e.contains("--tools FILE"),
        "{e}"
    );
    // A shipped tool outside this catalog: the shipped file is named.
    let o = toolgate(
        &["eval", "--tags", dir, "--input", "-"],
        Some("{\"usage\": {\"call_counts\": {\"sqlite.read_query\": 2}}}"),
    );
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(
        e.contains("-:1:28: usage.call_counts names `sqlite.read_query`")
            && e.contains("the shipped tool-tags/sqlite.toml declares it"),
        "{e}"
    );
}

/// (d) A non-UTF-8 byte is located by line and column (in characters) as
/// well as by its byte offset in the file, a byte-order mark counted.
#[test]
fn invalid_utf8_is_located_by_line_and_column() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("in.json");
    std::fs::write(&p, b"\xEF\xBB\xBF{\n\"message\": \"\xC3\xA9\xFF\"}").unwrap();
    let o = toolgate(&["eval", "--input", p.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(3));
    // byte 3 + 2 + 12 + 2 = 19 of the file; column 14 (é is one character)
    assert!(
        stderr(&o).contains("in.json: not valid UTF-8 at byte 19 (line 2, column 14)"),
        "{}",
        stderr(&o)
    );
}

/// (e) `fit` names each failing example once, at the place that fails, and
/// does not count its "not written" summary as a problem.
#[test]
fn fit_names_a_failing_example_once() {
    let o = toolgate(
        &[
            "fit",
            "--trace",
            "examples/sessions.jsonl",
            "--target-recall",
            "0.95",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let all = stdout(&o) + &stderr(&o);
    let name = "`SQL exploration exposes the read query tool, not the clock`";
    assert_eq!(all.matches(name).count(), 1, "{all}");
    assert!(
        all.contains(&format!(
            "policies/default.toml (embedded):135:13: example {name}: `time.convert_time` must be inactive"
        )),
        "{all}"
    );
    assert!(!all.contains("line 130"), "{all}");
    assert!(!all.contains("problems found"), "{all}");
    assert!(
        stderr(&o).contains("error: the fitted policy was not written: 1 of the policy's [[examples]] fail under the fitted weights (listed above)"),
        "{}",
        stderr(&o)
    );
}

/// (f) The shipped policy's declared clamp is a note, not a warning, that
/// says it covers any tool the policy admits; the loaded tools' range and
/// the declared properties say they cover the loaded tools.
#[test]
fn clamp_findings_and_properties_say_which_tools_they_cover() {
    let o = toolgate(&["check"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains("warning:"), "{out}");
    assert!(
        out.contains("note: policies/default.toml (embedded):12:9: for some tool the policy admits, raw scores reach 1.15, above the declared clamp's upper bound 1")
            && out.contains("as it declares (the seed's formula clamps by design)"),
        "{out}"
    );
    assert!(
        out.contains("note: the 71 loaded tools' raw scores lie in [0.048289, 0.968824], within the clamp [0, 1]; the declared properties below are checked over these tools"),
        "{out}"
    );
    let d = tempfile::tempdir().unwrap();
    let text = default_policy().replacen("\nw_stage = 0.20", "\nw_stage = 0.05", 1);
    let p = write(d.path(), "stage.toml", &text);
    let o = toolgate(&["check", "--policy", &p], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("for some tool the policy admits, raw scores go down to -0.035, below the declared clamp's lower bound 0"),
        "{out}"
    );
    assert!(
        out.contains("the 71 loaded tools' raw scores lie in [0.003289, 0.818824], within the clamp")
            && out.contains("every raw score lies in [0.003289, 0.818824] (interval bounds over the 71 loaded tool(s)), within [0, 1.5]"),
        "{out}"
    );
}

/// (g) A required parameter missing next to an undeclared argument close to
/// its name: the misspelling is named with a suggestion.
#[test]
fn a_misspelt_required_argument_is_suggested() {
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "shell.run_command",
            "--args",
            r#"{"comand":"ls"}"#,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Missing required parameter `command`")
            && out.contains("The arguments have `comand`, which `shell.run_command` does not declare: did you mean `command`? Rename it."),
        "{out}"
    );
}

/// (h) Capped lists end with "… N more": `replay --max-names`, `compare
/// --show`, a load with more problems than are shown, an enum's values
/// in a gate message, the calls of inline code. (`find_tools` cut by its
/// limit: tests/mcp/test_discovery.py.)
#[test]
fn capped_lists_say_how_many_more() {
    // replay: added/removed tool names per step
    let o = toolgate(
        &[
            "replay",
            "--trace",
            "examples/sessions.jsonl",
            "--max-names",
            "2",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains(", … 5 more]"), "{out}");
    assert!(!out.contains("... ("), "{out}");

    // compare: the discordant calls beyond --show
    let d = tempfile::tempdir().unwrap();
    let strict = default_policy().replacen("threshold = 0.4 ", "threshold = 0.6 ", 1);
    let b = write(d.path(), "strict.toml", &strict);
    let o = toolgate(
        &[
            "compare",
            "--policy-a",
            "policies/default.toml",
            "--policy-b",
            &b,
            "--trace",
            "examples/sessions.jsonl",
            "--show",
            "1",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let n: usize = out
        .split("calls where exactly one policy had the tool active (")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no discordant calls: {out}"));
    assert!(n > 1, "{out}");
    assert!(out.contains(&format!("\n  … {} more\n", n - 1)), "{out}");

    // a load with more problems than are shown
    let tags = d.path().join("tags");
    std::fs::create_dir(&tags).unwrap();
    let many: String = (0..60)
        .map(|i| format!("[[tool]]\nname = \"t{i}\"\nbogus = 1\n"))
        .collect();
    write(&tags, "many.toml", &many);
    let o = toolgate(&["check", "--tags", tags.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    let total: usize = e
        .lines()
        .last()
        .and_then(|l| l.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no count: {e}"));
    assert!(
        e.contains(&format!("\n… {} more problems\n", total - 50)),
        "{}",
        &e[e.len().saturating_sub(300)..]
    );

    // an enum of 30 values, in the message for a value of the wrong type
    let values: Vec<String> = (0..30).map(|i| format!("\"v{i}\"")).collect();
    let tools = write(
        d.path(),
        "tools.json",
        &format!(
            r#"{{"tools": [{{"name": "pick", "description": "Pick one", "inputSchema": {{"type": "object", "properties": {{"mode": {{"type": "string", "enum": [{}]}}}}, "required": ["mode"]}}}}]}}"#,
            values.join(", ")
        ),
    );
    let o = toolgate(
        &[
            "guard",
            "--tools",
            &tools,
            "--tool",
            "pick",
            "--args",
            r#"{"mode": [1]}"#,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("\"v9\", … 20 more; got [1]"), "{out}");

    // the calls inline code makes that the policy does not allow
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "shell.run_command",
            "--args",
            r#"{"command": "python3 -c \"import os, subprocess, shutil, socket; os.system(1); subprocess.run(2); shutil.rmtree(3); socket.socket(); os.remove(4); os.kill(1, 9)\""}"#,
        ],
        None,
    );
    let out = stdout(&o);
    assert!(
        out.contains("the code uses `import shutil`, `import socket`, `import subprocess`, `os.kill`, … 11 more."),
        "{out}"
    );
}

#[test]
fn undeclared_argument_names_are_echoed_clipped_and_listed_with_a_cap() {
    // newcomer pass of stop 34: a 100,000-character argument name came
    // back whole in the verdict's message (100 KB) and its finding (200 KB)
    let d = tempfile::tempdir().unwrap();
    // first in any key order (sorted or as written): listed, and the pointer
    let long = format!("a{}", "x".repeat(100_000));
    let mut args = serde_json::Map::new();
    args.insert("command".into(), "ls".into());
    args.insert(long.clone(), 1.into());
    for i in 0..30 {
        args.insert(format!("extra_{i:02}"), 1.into());
    }
    let file = write(
        d.path(),
        "args.json",
        &serde_json::Value::Object(args).to_string(),
    );
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "shell.run_command",
            "--args",
            &format!("@{file}"),
        ],
        None,
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(7), "{out}{}", stderr(&o));
    assert!(out.contains("not declared"), "{out}");
    assert!(out.contains("more characters"), "{out}");
    assert!(out.contains("… 11 more"), "{out}");
    assert!(out.len() < 8_000, "{} bytes", out.len());
    assert!(!out.contains(&long[..1_000]), "the name came back whole");
}

#[test]
fn a_tools_file_that_lists_no_tool_is_an_error() {
    // newcomer pass of stop 34: `[]` or `{"tools":[]}` gave "0 tools, 0
    // active" and exit 0, the mistake issue 29 item 1 fixed for --tags
    let d = tempfile::tempdir().unwrap();
    for (name, text) in [("a.json", "[]"), ("b.json", r#"{"tools": []}"#)] {
        let f = write(d.path(), name, text);
        let o = toolgate(&["eval", "--tools", &f], None);
        assert!(!o.status.success(), "{}", stdout(&o));
        let err = stderr(&o);
        assert!(err.contains("lists no tool"), "{err}");
        assert!(err.contains(name), "{err}");
    }
    // a tools file with a tool still works
    let f = write(
        d.path(),
        "c.json",
        r#"[{"name": "a.tool", "description": "d", "inputSchema": {"type": "object"}}]"#,
    );
    let o = toolgate(&["eval", "--tools", &f], None);
    assert!(o.status.success(), "{}", stderr(&o));
}
