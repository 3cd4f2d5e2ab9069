//! Issue 29, the third newcomer pass: a misspelt key of a `--tools` tool
//! is an error (and a misspelt schema keyword a warning), an audit record
//! that cannot be written fails `guard` (exit 3), `audit summary` skips a
//! line that is not UTF-8 instead of giving up, and `mcp-proxy` checks its
//! roots are folders.

mod common;
use common::{stderr, stdout, toolgate};

fn write(dir: &std::path::Path, name: &str, text: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

const SCHEMA: &str = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}"#;

/// (1) A misspelt `inputSchema` used to be ignored: the tool then had no
/// schema and `{"anything": "goes"}` was allowed. Now the file is refused
/// at the key, with a did-you-mean; spelt right, the call is denied.
#[test]
fn a_misspelt_key_of_an_mcp_tool_is_an_error_at_the_key() {
    let d = tempfile::tempdir().unwrap();
    let bad = write(
        d.path(),
        "t.json",
        format!(r#"{{"tools":[{{"name":"d","inputschema":{SCHEMA}}}]}}"#).as_bytes(),
    );
    let call = ["--tool", "d", "--args", r#"{"anything":"goes"}"#];
    let o = toolgate(&[&["guard", "--tools", &bad][..], &call].concat(), None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{bad}:1:23: tool 0 (`tools[0]`): unknown key `inputschema` (did you mean `inputSchema`?)")),
        "{e}"
    );
    assert!(!stdout(&o).contains("decision: allow"), "{}", stdout(&o));
    // With --format json, the kind says what it is.
    let o = toolgate(
        &[&["guard", "--tools", &bad, "--format", "json"][..], &call].concat(),
        None,
    );
    let v: serde_json::Value = serde_json::from_str(stderr(&o).trim()).unwrap();
    assert_eq!(v["error"]["kind"], "unknown_key", "{v}");
    let good = write(
        d.path(),
        "g.json",
        format!(r#"{{"tools":[{{"name":"d","inputSchema":{SCHEMA}}}]}}"#).as_bytes(),
    );
    let o = toolgate(&[&["guard", "--tools", &good][..], &call].concat(), None);
    assert_eq!(o.status.code(), Some(7), "{}{}", stdout(&o), stderr(&o));
}

/// (1) The OpenAI shape: a misspelt key of `function` and a misspelt
/// `type` are named (the latter used to read "it has no \"name\" string").
#[test]
fn openai_tools_with_misspelt_keys_or_type_are_refused() {
    let d = tempfile::tempdir().unwrap();
    for (text, at, want) in [
        (
            format!(r#"[{{"type":"function","function":{{"name":"d","paramters":{SCHEMA}}}}}]"#),
            "1:44",
            "unknown key `paramters` (did you mean `parameters`?)",
        ),
        (
            r#"[{"type":"function","function":{"name":"d","descripton":"x"}}]"#.to_string(),
            "1:44",
            "unknown key `descripton` (did you mean `description`?)",
        ),
        (
            r#"[{"type":"functon","function":{"name":"d"}}]"#.to_string(),
            "1:10",
            "unknown type `functon` (did you mean `function`?)",
        ),
    ] {
        let f = write(d.path(), "o.json", text.as_bytes());
        let o = toolgate(&["check", "--tools", &f], None);
        assert_eq!(o.status.code(), Some(1), "{text}: {}", stdout(&o));
        let e = stderr(&o);
        assert!(
            e.contains(&format!("{f}:{at}: tool 0 (`[0]`): {want}")),
            "{text}: {e}"
        );
        assert!(!e.contains("no \"name\" string"), "{e}");
    }
}

/// (1) Every real catalog still loads, with all its tools: the keys of the
/// MCP specification's Tool that toolgate does not read (`title`,
/// `outputSchema`, `execution`, `annotations`, ...) stay accepted.
#[test]
fn the_real_catalogs_still_load_with_every_tool() {
    let dir = "../shared/data/mcp-catalogs";
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let tools = v["tools"].as_array().unwrap().len();
        let f = p.to_str().unwrap();
        let o = toolgate(
            &["eval", "--policy", "policies/selection.toml", "--tools", f],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{f}: {}", stderr(&o));
        assert!(
            stdout(&o).contains(&format!("| {tools} tools,")),
            "{f}: {}",
            stdout(&o).lines().next().unwrap_or_default()
        );
        n += 1;
    }
    assert!(n >= 9, "{n} catalogs");
}

/// (1) A misspelt keyword inside a schema is a warning with a
/// did-you-mean (JSON Schema allows unknown keywords): in `check` and in
/// `guard` for the tool called.
#[test]
fn misspelt_schema_keywords_are_warned_about() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "t.json",
        br#"{"tools":[{"name":"d","inputSchema":{"type":"object","propertes":{"n":{"type":"integer"}},"requird":["n"],"x-ui":{}}}]}"#,
    );
    let want = [
        "tool `d`: inputSchema keyword `propertes` is not JSON Schema 2020-12 (did you mean `properties`?)",
        "tool `d`: inputSchema keyword `requird` is not JSON Schema 2020-12 (did you mean `required`?)",
    ];
    let o = toolgate(&["check", "--tools", &f], None);
    let out = stdout(&o);
    for w in want {
        assert!(out.contains(&format!("warning: {w}")), "{out}");
    }
    assert!(!out.contains("`x-ui`"), "{out}");
    let o = toolgate(
        &[
            "guard",
            "--tools",
            &f,
            "--tool",
            "d",
            "--args",
            r#"{"n": 1}"#,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for w in want {
        assert!(
            stderr(&o).contains(&format!("warning: {w}")),
            "{}",
            stderr(&o)
        );
    }
    // A clean schema: no warning.
    let o = toolgate(
        &[
            "guard",
            "--tools",
            "examples/server.json",
            "--tool",
            "search",
            "--args",
            r#"{"query": "x"}"#,
        ],
        None,
    );
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

/// (2) An audit record that cannot be written is a failure: exit 3 with
/// the message (the verdict still printed), not exit 0.
#[test]
fn an_audit_record_that_cannot_be_written_exits_3() {
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
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
    assert!(stdout(&o).contains("decision: allow"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains(
            "error: --audit /dev/full: cannot write an audit record: No space left on device"
        ),
        "{}",
        stderr(&o)
    );
}

/// (3) One line that is not UTF-8 is skipped (named by line and byte
/// offset), not the end of the summary; a BOM at the start is accepted.
#[test]
fn audit_summary_skips_a_line_that_is_not_utf8() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("a.jsonl");
    let log_s = log.to_str().unwrap();
    let o = toolgate(
        &[
            "guard",
            "--tools",
            "examples/server.json",
            "--tool",
            "search",
            "--args",
            r#"{"query": "x"}"#,
            "--audit",
            log_s,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let good = std::fs::read(&log).unwrap();
    let mut bytes = good.clone();
    bytes.extend_from_slice(b"{\"x\":\"\xff\"}\n");
    std::fs::write(&log, &bytes).unwrap();
    let o = toolgate(&["audit", "summary", log_s], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("total calls: 1"), "{out}");
    let offset = good.len() + 6;
    assert!(
        out.contains(&format!(
            "skipped: 1 line(s) that are not audit records (line 2; line 2: not valid UTF-8 (byte offset {offset} of the file))"
        )),
        "{out}"
    );
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(&good);
    std::fs::write(&log, &bom).unwrap();
    let o = toolgate(&["audit", "summary", log_s], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("total calls: 1"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("skipped"), "{}", stdout(&o));
}

/// (4) A `--root` (or a config file's `roots` entry) that does not exist or
/// is a file: exit 2, naming the option (or file:line:column) and the path.
#[test]
fn mcp_proxy_roots_must_be_folders() {
    let server = ["--server", "a=true"];
    for (root, why) in [
        ("/nonexistent/dir", "no such folder"),
        ("examples/sql-session.json", "not a folder"),
    ] {
        let o = toolgate(
            &[&["mcp-proxy", "--root", root][..], &server].concat(),
            Some(""),
        );
        assert_eq!(o.status.code(), Some(2), "{root}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("error: --root {root}: {why}")),
            "{}",
            stderr(&o)
        );
    }
    let d = tempfile::tempdir().unwrap();
    let cfg = write(
        d.path(),
        "c.toml",
        b"# proxy\nroots = [\"nope\"]\n\n[[server]]\nname = \"a\"\ncommand = \"true\"\n",
    );
    let o = toolgate(&["mcp-proxy", "--config", &cfg], Some(""));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let missing = d.path().join("nope");
    assert!(
        stderr(&o).contains(&format!(
            "error: {cfg}:2:10: roots: {}: no such folder",
            missing.display()
        )),
        "{}",
        stderr(&o)
    );
}
