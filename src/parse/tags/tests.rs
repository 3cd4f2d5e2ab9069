//! Unit tests of the tag-file and tool-listing readers (`super`).

use super::*;

#[test]
fn fast_and_generic_tool_listings_agree() {
    let bad = |m: String| LoadError::single(Diagnostic::bare(ErrorKind::Syntax, m));
    let cases = [
        r#"[{"type": "function", "function": {"name": "a", "description": "d", "parameters": {"type": "object"}}}]"#,
        r#"[{"type": "function", "function": {"name": "a", "parameters": null, "strict": true}}]"#,
        r#"[{"type": "function"}]"#,
        r#"[{"name": "b", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}, "title": "B", "outputSchema": {"type": "object"}, "execution": {"taskSupport": "forbidden"}, "icons": [], "_meta": {"x": [1, {"y": 2}]}}]"#,
        r#"[{"name": "b", "description": null}]"#,
        r#"{"server": "s", "tools": [{"name": "c"}]}"#,
        r#"{"server": 5, "result": {"tools": [{"name": "c"}]}}"#,
        r#"{"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}"#,
    ];
    for c in cases {
        let fast = fast_listing(c).unwrap_or_else(|| panic!("fast path refused {c}"));
        let generic = generic_listing(c, &bad, &|_, m| bad(m), &mut Vec::new()).unwrap();
        assert_eq!(fast, generic, "{c}");
    }
    // Shapes the fast path leaves to the generic one (which reports them).
    for c in [
        r#"[{"type": "function", "function": "f"}]"#,
        r#"[{"name": "a", "name": "b"}]"#,
        r#"{"tools": null, "result": {"tools": []}}"#,
        r#"{"tools": 3}"#,
        r#"{"other": []}"#,
        r#"[{"name": "a"}] x"#,
        "3",
    ] {
        assert!(fast_listing(c).is_none(), "{c}");
    }
    let f = |t: &str| import_tools_json("t.json", t).map(|v| v.len());
    // A repeated key is refused (issue 29), not read as its last value.
    let dup = f(r#"[{"name": "a", "name": "b"}]"#).unwrap_err();
    assert!(
        format!("{dup:?}").contains("duplicate key `name`"),
        "{dup:?}"
    );
    assert!(f(r#"{"tools": null, "result": {"tools": []}}"#).is_err());
    assert!(f(r#"[{"type": "function", "function": "f"}]"#).is_err());
    // Unknown keys of a tool (issue 29): the fast path declines them,
    // the generic path refuses them at the key.
    for (c, key) in [
        (
            r#"[{"name": "a", "inputschema": {}}]"#,
            "key `inputschema` (did you mean `inputSchema`?)",
        ),
        (
            r#"[{"type": "function", "function": {"name": "a"}, "name": "x"}]"#,
            "key `name`",
        ),
        (
            r#"[{"type": "function", "function": {"name": "a", "descripton": "d"}}]"#,
            "key `descripton` (did you mean `description`?)",
        ),
        (
            r#"[{"type": "functon", "function": {"name": "a"}}]"#,
            "type `functon` (did you mean `function`?)",
        ),
        (r#"[{"name": "a", "function": {}}]"#, "key `function`"),
    ] {
        assert!(fast_listing(c).is_none(), "{c}");
        let e = import_tools_json("t.json", c).unwrap_err().to_string();
        assert!(e.contains(&format!("unknown {key}")), "{c}: {e}");
    }
}

#[test]
fn tool_file_syntax_errors_are_located_once() {
    let err = import_tools_json(
        "t.json",
        "[{\"name\": \"a\", \"inputSchema\": {\"type\": \"object\",}}]",
    )
    .unwrap_err();
    let d = err.diagnostics[0].to_string();
    assert_eq!(d, "t.json:1:49: not valid JSON: trailing comma");
    let err = import_tools_json("t.json", "[\n  {\"name\": \"é\"\n  x]").unwrap_err();
    assert!(
        err.diagnostics[0]
            .to_string()
            .starts_with("t.json:3:3: not valid JSON: "),
        "{err}"
    );
}

#[test]
fn tools_of_a_json_file_are_located_at_their_names() {
    let text = "{\"server\": \"s\", \"tools\": [\n  {\"name\": \"a\", \"description\": \"say \\\"name\\\": \\\"b\\\"\"},\n  {\"name\" : \"b\", \"inputSchema\": {\"type\": \"object\"}}]}";
    let tools = import_tools_json("t.json", text).unwrap();
    let at = |i: usize| {
        let t: &ToolSpec = &tools[i];
        t.file.as_ref().unwrap().line_col(t.name.span.start)
    };
    // `b` inside a's description (escaped) is not b's declaration
    assert_eq!((at(0), at(1)), ((2, 12), (3, 13)));
    assert_eq!(&text[tools[1].name.span.clone()], "\"b\"");
    assert_eq!(tools[1].aliases[0].span, tools[1].name.span);
    // a name written with other escapes is found nowhere: no location
    assert_eq!(locate_name(r#"{"name": "\u0061"}"#, 0, "a"), None);
}

#[test]
fn tag_input_schema_problems_point_into_the_value() {
    let tool = |schema: &str| {
        format!("[[tool]]\nname = \"t\"\ndescription = \"d\"\ninput_schema = {schema}\n")
    };
    // Not an object: at the value, naming what it is.
    let err = parse_tag_file(SourceFile::new("t.toml", tool("'true'"))).unwrap_err();
    assert_eq!(
        err.diagnostics[0].to_string(),
        "t.toml:4:16: input_schema must be a JSON object (a JSON Schema for the arguments), found a boolean"
    );
    // A JSON error inside a multi-line literal string: at its place in the file.
    let text = tool("'''\n{\"type\": \"object\",\n  \"properties\": {\"a\": 1,}}'''");
    let err = parse_tag_file(SourceFile::new("t.toml", text)).unwrap_err();
    let d = err.diagnostics[0].to_string();
    assert!(
        d.starts_with("t.toml:6:25: input_schema is not valid JSON: trailing comma"),
        "{d}"
    );
    // A basic string with escapes: at the string.
    let err = parse_tag_file(SourceFile::new("t.toml", tool(r#""{\"a\": }""#))).unwrap_err();
    assert!(
        err.diagnostics[0].to_string().starts_with("t.toml:4:16: "),
        "{err}"
    );
    // The span is kept for the compile's schema check.
    let tools = parse_tag_file(SourceFile::new("t.toml", tool("'{\"properties\": 5}'"))).unwrap();
    assert_eq!(
        tools[0].input_schema_span,
        Some(53..72),
        "the value `{{\"properties\": 5}}` with its quotes"
    );
}

#[test]
fn tag_files_report_bad_role_paths_at_the_key() {
    let text = "[[tool]]\nname = \"t\"\narguments = { \"/a//b\" = \"path\", ok = \"sql\" }\n";
    let err = parse_tag_file(SourceFile::new("t.toml", text)).unwrap_err();
    let d = &err.diagnostics[0];
    assert!(d.to_string().starts_with("t.toml:3:15:"), "{d}");
    assert!(d.message.contains("empty segment"), "{d}");
}
