//! Arguments through the whole gate: coercion through `anyOf`/`oneOf`,
//! `type` lists, `nullable` and `$ref` for each type, and argument roles at
//! nested and array paths (path, shell and SQL), declared in tags and
//! inferred, with benign look-alikes that stay allowed.

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::diag::SourceFile;
use toolgate::gate::{Action, Gate, Verdict};
use toolgate::load::{DEFAULT_POLICY, Sources, load_catalog, load_policy};
use toolgate::parse::policy::parse_policy;
use toolgate::parse::tags::{InlineTool, parse_tag_file};

fn inline(name: &str, schema: Value, extra: Value) -> toolgate::parse::tags::ToolSpec {
    let mut t = json!({"name": name, "input_schema": schema});
    if let (Value::Object(o), Value::Object(e)) = (&mut t, extra) {
        o.extend(e);
    }
    serde_json::from_value::<InlineTool>(t).unwrap().into_spec()
}

/// The shipped policy, its `[gate.paths] roots` set to `root` when given.
fn policy(root: Option<&std::path::Path>) -> toolgate::parse::policy::PolicySource {
    match root {
        None => load_policy(None).unwrap(),
        Some(r) => {
            let text = DEFAULT_POLICY.1.replacen(
                "roots = [\".\"]",
                &format!("roots = [{:?}]", r.display().to_string()),
                1,
            );
            parse_policy(SourceFile::new("test.toml", text)).unwrap()
        }
    }
}

fn gate(root: Option<&std::path::Path>, extra: Vec<toolgate::parse::tags::ToolSpec>) -> Gate {
    let mut tools = load_catalog(&Sources::default()).unwrap();
    tools.extend(extra);
    Gate::new(Arc::new(
        toolgate::compile::compile(&policy(root), tools).unwrap(),
    ))
}

fn typed_tool(prop: Value) -> toolgate::parse::tags::ToolSpec {
    // A `$defs` given with the property moves to the root, where `#/$defs/..` points.
    let mut prop = prop;
    let extra = prop.as_object_mut().and_then(|o| o.remove("$defs"));
    let mut schema = json!({"type": "object", "properties": {"v": prop}, "$defs": {
        "Int": {"type": "integer", "minimum": 0},
        "Num": {"type": "number"},
        "Bool": {"type": "boolean"},
        "Arr": {"type": "array", "items": {"type": "integer"}},
        "Obj": {"type": "object", "properties": {"k": {"type": "integer"}, "b": {"type": "boolean"}}, "required": ["k"]}
    }});
    if let Some(Value::Object(defs)) = extra {
        schema["$defs"].as_object_mut().unwrap().extend(defs);
    }
    inline("t.typed", schema, json!({}))
}

fn run(prop: Value, v: Value) -> Verdict {
    gate(None, vec![typed_tool(prop)]).check("t.typed", json!({ "v": v }))
}

/// The type's schema, a string that coerces to it, and the value.
fn kinds() -> Vec<(&'static str, Value, Value, Value)> {
    vec![
        (
            "integer",
            json!({"type": "integer"}),
            json!("42"),
            json!(42),
        ),
        (
            "number",
            json!({"type": "number"}),
            json!("2.5"),
            json!(2.5),
        ),
        (
            "boolean",
            json!({"type": "boolean"}),
            json!("yes"),
            json!(true),
        ),
        (
            "array",
            json!({"type": "array", "items": {"type": "integer"}}),
            json!("[\"1\", 2]"),
            json!([1, 2]),
        ),
        (
            "object",
            json!({"type": "object", "properties": {"k": {"type": "integer"}}}),
            json!("{\"k\": \"7\"}"),
            json!({"k": 7}),
        ),
    ]
}

#[test]
fn every_type_coerces_through_every_union_form() {
    for (name, t, sent, want) in kinds() {
        let ty = t["type"].clone();
        let forms = [
            ("anyOf [T, null]", json!({"anyOf": [t, {"type": "null"}]})),
            ("anyOf [null, T]", json!({"anyOf": [{"type": "null"}, t]})),
            ("oneOf [T, null]", json!({"oneOf": [t, {"type": "null"}]})),
            ("type [T, null]", {
                let mut x = t.clone();
                x["type"] = json!([ty, "null"]);
                x
            }),
            ("nullable", {
                let mut x = t.clone();
                x["nullable"] = json!(true);
                x
            }),
            ("$ref", json!({"$ref": "#/$defs/T", "$defs": {"T": t}})),
            (
                "anyOf [$ref, null]",
                json!({"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}], "$defs": {"T": t}}),
            ),
            ("allOf [T]", json!({"allOf": [t], "description": "d"})),
        ];
        for (form, prop) in forms {
            let v = run(prop.clone(), sent.clone());
            assert_eq!(v.decision, Action::Allow, "{name} {form}: {}", v.message);
            assert_eq!(v.arguments["v"], want, "{name} {form}");
            assert!(!v.coercions.is_empty(), "{name} {form}: not listed");
            assert_eq!(v.coercions[0].path, "/v", "{name} {form}");
            assert_eq!(v.coercions[0].to, name, "{name} {form}");
            // null passes where the form allows it, untouched.
            if form != "$ref" && form != "allOf [T]" {
                let v = run(prop.clone(), Value::Null);
                assert_eq!(
                    v.decision,
                    Action::Allow,
                    "{name} {form} null: {}",
                    v.message
                );
                assert_eq!(v.arguments["v"], Value::Null);
                assert!(v.coercions.is_empty());
            }
        }
    }
}

#[test]
fn the_branch_already_satisfied_wins_then_the_first_that_converts() {
    // "5" satisfies the string branch: stays a string, wherever it is listed.
    for prop in [
        json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
        json!({"type": ["integer", "string"]}),
    ] {
        let v = run(prop.clone(), json!("5"));
        assert_eq!(v.arguments["v"], json!("5"), "{prop}");
        assert!(v.coercions.is_empty());
    }
    // A string branch it does not satisfy (enum) does not hold it back.
    let v = run(
        json!({"anyOf": [{"type": "string", "enum": ["auto"]}, {"type": "integer"}]}),
        json!("5"),
    );
    assert_eq!(v.arguments["v"], json!(5), "{}", v.message);
    let v = run(
        json!({"anyOf": [{"type": "string", "enum": ["auto"]}, {"type": "integer"}]}),
        json!("auto"),
    );
    assert_eq!(v.arguments["v"], json!("auto"));
    // Several convert: the first written wins.
    let v = run(
        json!({"anyOf": [{"type": "boolean"}, {"type": "integer"}]}),
        json!("1"),
    );
    assert_eq!(v.arguments["v"], json!(true));
    let v = run(
        json!({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}),
        json!("1"),
    );
    assert_eq!(v.arguments["v"], json!(1));
    let v = run(json!({"type": ["boolean", "integer"]}), json!("1"));
    assert_eq!(v.arguments["v"], json!(true));
    // A conversion that then fails its branch gives way to one that passes.
    let v = run(
        json!({"anyOf": [{"type": "integer", "minimum": 10}, {"type": "number", "maximum": 5}]}),
        json!("3"),
    );
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
    assert_eq!(v.arguments["v"], json!(3));
    // Object branches: the one whose shape fits after coercion.
    let prop = json!({"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "integer"}}, "required": ["kind", "n"]},
        {"type": "object", "properties": {"kind": {"const": "b"}, "flag": {"type": "boolean"}}, "required": ["kind", "flag"]}
    ]});
    let v = run(prop.clone(), json!({"kind": "b", "flag": "no"}));
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
    assert_eq!(v.arguments["v"], json!({"kind": "b", "flag": false}));
    let v = run(prop, json!({"kind": "a", "n": "4"}));
    assert_eq!(v.arguments["v"], json!({"kind": "a", "n": 4}));
}

#[test]
fn lossy_and_impossible_conversions_are_refused_with_a_usable_message() {
    let opt_int = json!({"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "How many results"});
    let v = run(opt_int.clone(), json!("3.5"));
    assert_eq!(v.decision, Action::Deny);
    assert!(v.message.contains("whole number"), "{}", v.message);
    assert_eq!(v.arguments["v"], json!("3.5"));
    let v = run(opt_int.clone(), json!("lots"));
    assert_eq!(v.decision, Action::Deny);
    assert!(
        v.message.contains("an integer or null") && v.message.contains("How many results"),
        "{}",
        v.message
    );
    // "null" is a string, not null: never turned into null, 0 or "".
    let v = run(opt_int, json!("null"));
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    // Two types tried, both lossy: one message naming both.
    let v = run(
        json!({"type": ["integer", "boolean", "null"]}),
        json!("2.5"),
    );
    assert_eq!(v.decision, Action::Deny);
    assert!(
        v.message.contains("integer") && v.message.contains("boolean"),
        "{}",
        v.message
    );
    // The closest branch explains a union failure.
    let v = run(
        json!({"anyOf": [{"$ref": "#/$defs/Int"}, {"type": "null"}]}),
        json!("-4"),
    );
    assert_eq!(v.decision, Action::Deny);
    assert!(v.message.contains("minimum"), "{}", v.message);
}

#[test]
fn nested_objects_and_array_items_through_refs_and_unions() {
    let prop =
        json!({"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/Obj"}, {"type": "null"}]}});
    let v = run(
        prop,
        json!([{"k": "1", "b": "true"}, null, "{\"k\": \"2\"}"]),
    );
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
    assert_eq!(
        v.arguments["v"],
        json!([{"k": 1, "b": true}, null, {"k": 2}])
    );
    let paths: Vec<&str> = v.coercions.iter().map(|c| c.path.as_str()).collect();
    // Object members in serde_json's (sorted) order, then array order.
    assert_eq!(paths, ["/v/0/b", "/v/0/k", "/v/2", "/v/2/k"]);
}

#[test]
fn nested_unions_and_self_references_stay_bounded() {
    // A recursive tree of optional nodes, 30 levels deep, leaves as strings.
    let schema = json!({"type": "object", "properties": {"v": {"$ref": "#/$defs/Node"}}, "$defs": {
        "Node": {"anyOf": [
            {"type": "object", "properties": {"n": {"type": "integer"}, "next": {"$ref": "#/$defs/Node"}}},
            {"type": "null"}
        ]}
    }});
    let mut v = json!({"n": "0", "next": null});
    for i in 1..30 {
        v = json!({"n": i.to_string(), "next": v});
    }
    let g = gate(None, vec![inline("t.tree", schema, json!({}))]);
    let started = std::time::Instant::now();
    let verdict = g.check("t.tree", json!({ "v": v }));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(verdict.decision, Action::Allow, "{}", verdict.message);
    assert_eq!(verdict.arguments["v"]["n"], json!(29));
    assert_eq!(verdict.coercions.len(), 30);
}

// ---------------------------------------------------------------------------
// Roles at nested and array paths.
// ---------------------------------------------------------------------------

/// A Claude-Code-like multi-edit tool, a workflow tool with shell steps, a
/// batch SQL tool: roles declared at nested paths in a tag file.
const TAGS: &str = r#"
[[tool]]
name = "edit.multi_edit"
description = "Apply several edits to files."
arguments = { "/edits/*/file_path" = "path" }
input_schema = '''{"type": "object", "properties": {"edits": {"type": "array", "items": {"type": "object",
  "properties": {"file_path": {"type": "string"}, "old_string": {"type": "string"}, "new_string": {"type": "string"}},
  "required": ["file_path", "old_string", "new_string"]}}}, "required": ["edits"]}'''

[[tool]]
name = "ci.run_steps"
description = "Run workflow steps."
arguments = { "/steps/*/run" = "shell", "/steps/*/argv" = "shell_argv", "/options/cwd" = "path" }
input_schema = '''{"type": "object", "properties": {
  "steps": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "run": {"type": "string"}, "argv": {"type": "array", "items": {"type": "string"}}}}},
  "options": {"type": "object", "properties": {"cwd": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}}}'''

[[tool]]
name = "db.batch"
description = "Run several read queries."
read_only = true
arguments = { "/queries/*/sql" = "sql", "/files/*" = "path" }
input_schema = '''{"type": "object", "properties": {
  "queries": {"type": "array", "items": {"type": "object", "properties": {"label": {"type": "string"}, "sql": {"type": "string"}}}},
  "files": {"type": "object", "additionalProperties": {"type": "string"}}}}'''
"#;

fn tagged_gate(root: &std::path::Path) -> Gate {
    let tools = parse_tag_file(SourceFile::new("nested.toml", TAGS.to_string())).unwrap();
    gate(Some(root), tools)
}

fn tmp_root() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap().join("root");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
    (tmp, root)
}

fn edit(path: &str) -> Value {
    json!({"file_path": path, "old_string": "a", "new_string": "b"})
}

#[test]
fn every_edit_path_is_checked_not_only_the_first() {
    let (_tmp, root) = tmp_root();
    let g = tagged_gate(&root);
    let ok = edit("src/main.rs");
    let v = g.check(
        "edit.multi_edit",
        json!({"edits": [ok, edit("/root/.bashrc")]}),
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    assert_eq!(v.findings[0].path, "/edits/1/file_path");
    assert_eq!(v.findings[0].rule_id, "path.outside-roots");
    assert!(v.message.contains("edits/1/file_path"), "{}", v.message);
    // The last of many.
    let mut edits: Vec<Value> = (0..6).map(|_| edit("src/main.rs")).collect();
    edits.push(edit("../../etc/passwd"));
    let v = g.check("edit.multi_edit", json!({ "edits": edits }));
    assert_eq!(v.decision, Action::Deny);
    assert_eq!(v.findings[0].path, "/edits/6/file_path");
    // Benign look-alikes: outside paths quoted in the edited text are text.
    let v = g.check(
        "edit.multi_edit",
        json!({"edits": [
            {"file_path": "src/main.rs", "old_string": "/root/.bashrc", "new_string": "../../etc/passwd"},
            edit(&root.join("src/new.rs").display().to_string())
        ]}),
    );
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
}

#[test]
fn shell_steps_at_any_index_are_analysed() {
    let (_tmp, root) = tmp_root();
    let g = tagged_gate(&root);
    let v = g.check(
        "ci.run_steps",
        json!({"steps": [{"name": "build", "run": "cargo build"}, {"name": "clean", "run": "rm -rf /"}]}),
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    assert_eq!(v.findings[0].path, "/steps/1/run");
    let v = g.check(
        "ci.run_steps",
        json!({"steps": [{"argv": ["ls"]}, {"argv": ["sudo", "rm", "-rf", "/"]}]}),
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    assert!(
        v.findings[0].path.starts_with("/steps/1/argv"),
        "{:?}",
        v.findings
    );
    let v = g.check(
        "ci.run_steps",
        json!({"steps": [{"run": "git status"}], "options": {"cwd": "/etc"}}),
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    assert_eq!(v.findings[0].path, "/options/cwd");
    // Benign look-alikes: the dangerous words are data, or a step name.
    let v = g.check(
        "ci.run_steps",
        json!({"steps": [
            {"name": "rm -rf /", "run": "grep -rn \"rm -rf /\" docs/"},
            {"argv": ["echo", "DROP TABLE users"]}
        ], "options": {"cwd": null}}),
    );
    // The step *name* is free text: the seed's text patterns see it.
    assert!(
        v.findings.iter().all(|f| f.path == "/steps/0/name"),
        "{:?}",
        v.findings
    );
    let v = g.check(
        "ci.run_steps",
        json!({"steps": [{"name": "search", "run": "grep -rn \"rm -rf /\" docs/"}]}),
    );
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
}

#[test]
fn sql_in_every_query_and_paths_in_every_map_value() {
    let (_tmp, root) = tmp_root();
    let g = tagged_gate(&root);
    let v = g.check(
        "db.batch",
        json!({"queries": [{"sql": "SELECT 1"}, {"sql": "DROP TABLE users"}]}),
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    assert_eq!(v.findings[0].path, "/queries/1/sql");
    let v = g.check(
        "db.batch",
        json!({"queries": [{"sql": "SELECT 1"}], "files": {"a": "src/main.rs", "b": "/etc/shadow"}}),
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    assert_eq!(v.findings[0].path, "/files/b");
    // Benign: the keyword is a string literal, the label is free text.
    let v = g.check(
        "db.batch",
        json!({"queries": [
            {"label": "notes about dropped tables", "sql": "SELECT 'DROP TABLE users' AS note"},
            {"sql": "SELECT name FROM users WHERE id = 3"}
        ], "files": {"a": "src/main.rs"}}),
    );
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
}

#[test]
fn roles_are_inferred_at_any_depth() {
    let (_tmp, root) = tmp_root();
    let schema = json!({"type": "object", "properties": {
        "edits": {"type": "array", "items": {"$ref": "#/$defs/Edit"}},
        "target": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "note": {"type": "string"}
    }, "$defs": {"Edit": {"type": "object", "properties": {
        "file_path": {"type": "string"}, "new_string": {"type": "string"}}}}});
    // The namespace `filesystem` puts the tool in the path rules' categories.
    let g = gate(
        Some(&root),
        vec![inline("filesystem.multi_edit", schema.clone(), json!({}))],
    );
    let cg = g.config();
    let idx = g.plan().tool_index("filesystem.multi_edit").unwrap();
    let roles: Vec<&str> = cg.tools[idx]
        .roles
        .iter()
        .map(|(p, _)| p.as_str())
        .collect();
    assert!(roles.contains(&"/edits/*/file_path"), "{roles:?}");
    assert!(!roles.contains(&"target"), "{roles:?}");
    let v = g.check(
        "filesystem.multi_edit",
        json!({"edits": [{"file_path": "src/main.rs"}, {"file_path": "/root/.bashrc"}]}),
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    assert_eq!(v.findings[0].path, "/edits/1/file_path");
    // A tool outside the path rules' scope: the fallback rules still see
    // `file_path` at any depth (attack report 2, item 2) ...
    let g = gate(
        Some(&root),
        vec![inline("notes.multi_edit", schema, json!({}))],
    );
    let v = g.check(
        "notes.multi_edit",
        json!({"edits": [{"file_path": "/root/.bashrc"}]}),
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    assert_eq!(v.findings[0].path, "/edits/0/file_path");
    // ... and `file` (verify pass: `save(file, content)` wrote ~/.bashrc),
    // but not the scoped rules' wider `source`, which outside a file tool
    // is often not a path: nothing inferred for it.
    let schema = json!({"type": "object", "properties": {
        "edits": {"type": "array", "items": {"type": "object", "properties": {
            "source": {"type": "string"}, "file": {"type": "string"}}}}}});
    let g = gate(
        Some(&root),
        vec![inline("notes.multi_edit", schema, json!({}))],
    );
    let v = g.check(
        "notes.multi_edit",
        json!({"edits": [{"source": "/root/.bashrc", "file": "/etc/passwd"}]}),
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    assert_eq!(v.findings[0].path, "/edits/0/file");
    let v = g.check(
        "notes.multi_edit",
        json!({"edits": [{"source": "/root/.bashrc"}]}),
    );
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
}

#[test]
fn role_paths_that_name_nothing_are_policy_errors_with_locations() {
    let cases = [
        (
            r#""/edits/*/file_pth" = "path""#,
            "names no parameter",
            "nested.toml:5:",
        ),
        (
            r#""edits/*/file_path" = "path""#,
            "starts with `/`",
            "nested.toml:5:",
        ),
        (
            r#""/edits//file_path" = "path""#,
            "empty segment",
            "nested.toml:5:",
        ),
        (
            r#""/edits/~2" = "path""#,
            "`~` must be followed",
            "nested.toml:5:",
        ),
        (r#"file = "path""#, "did you mean", "nested.toml:5:"),
    ];
    for (decl, want, at) in cases {
        let text = format!(
            "[[tool]]\nname = \"edit.x\"\ninput_schema = '''{{\"type\": \"object\", \"properties\": {{\"edits\": {{\"type\": \"array\", \"items\": {{\"type\": \"object\", \"properties\": {{\"file_path\": {{\"type\": \"string\"}}}}}}}}, \"files\": {{\"type\": \"string\"}}}}}}'''\n\narguments = {{ {decl} }}\n"
        );
        let err = match parse_tag_file(SourceFile::new("nested.toml", text)) {
            Err(e) => e,
            Ok(tools) => {
                let mut all = load_catalog(&Sources::default()).unwrap();
                all.extend(tools);
                toolgate::compile::compile(&load_policy(None).unwrap(), all).unwrap_err()
            }
        };
        let shown = err
            .diagnostics
            .iter()
            .map(|d| format!("{} {d} {:?}", d.location().unwrap_or_default(), d.help))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(shown.contains(want), "{decl}: {shown}");
        assert!(shown.contains(at), "{decl}: {shown}");
    }
}

#[test]
fn a_name_and_its_one_segment_path_are_the_same_role() {
    let (_tmp, root) = tmp_root();
    for decl in [
        r#"path = "path""#,
        r#""/path" = "path""#,
        r#""/*" = "path""#,
    ] {
        let text = format!(
            "[[tool]]\nname = \"w.write\"\ninput_schema = '''{{\"type\": \"object\", \"properties\": {{\"path\": {{\"type\": \"string\"}}}}}}'''\narguments = {{ {decl} }}\n"
        );
        let tools = parse_tag_file(SourceFile::new("w.toml", text)).unwrap();
        let g = gate(Some(&root), tools);
        let v = g.check("w.write", json!({"path": "/etc/passwd"}));
        assert_eq!(v.decision, Action::Deny, "{decl}: {}", v.message);
        assert_eq!(v.findings[0].path, "/path");
        let v = g.check("w.write", json!({"path": "src/main.rs"}));
        assert_eq!(v.decision, Action::Allow, "{decl}: {}", v.message);
    }
}

#[test]
fn a_schema_that_drifted_from_its_tags_warns_and_falls_back_to_inference() {
    // The MCP proxy serves the live server's schema with the shipped tags.
    // Here the server renamed `query` to `sql`: the declared role names
    // nothing, so the plan warns and infers roles from the live schema.
    let mut tools = load_catalog(&Sources::default()).unwrap();
    let t = tools
        .iter_mut()
        .find(|t| t.name.value == "sqlite.write_query")
        .unwrap();
    t.input_schema = json!({"type": "object", "properties": {"sql": {"type": "string"}}}).into();
    let plan = toolgate::compile::compile(&load_policy(None).unwrap(), tools).unwrap();
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("sqlite.write_query") && w.contains("`query`")),
        "{:?}",
        plan.warnings
    );
    let g = Gate::new(Arc::new(plan));
    let v = g.check("sqlite.write_query", json!({"sql": "DELETE FROM users"}));
    assert_eq!(v.decision, Action::Deny, "{}", v.message);
    assert_eq!(v.findings[0].path, "/sql");
    let v = g.check(
        "sqlite.write_query",
        json!({"sql": "DELETE FROM users WHERE id = 3"}),
    );
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
}
