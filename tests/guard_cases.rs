//! The 98 guard cases (`tests/data/cases/guard-cases.jsonl`, a copy of
//! `shared/data/cases/`): each must reach its expected decision under the
//! shipped default policy, through the real gate (`Gate::check`), with the
//! tools the README names: `shell.run_command` (shell), `shell.shell_execute`
//! (shell-argv), `sqlite.write_query` (sql-write), `sqlite.read_query`
//! (sql-read); schema cases register a tool with the case's schema.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::gate::{Action, Gate};
use toolgate::load::{Sources, load_catalog, load_policy};
use toolgate::parse::tags::InlineTool;

#[derive(Deserialize)]
struct Case {
    id: String,
    kind: String,
    value: Value,
    expect: String,
    why: String,
    #[serde(default)]
    schema: Option<Value>,
    #[serde(default)]
    coerced: Option<Value>,
}

fn case_files() -> Vec<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![manifest.join("tests/data/cases/guard-cases.jsonl")];
    for shared in [
        manifest.join("../shared/data/cases/guard-cases.jsonl"),
        manifest.join("../../shared/data/cases/guard-cases.jsonl"),
    ] {
        if shared.exists() {
            files.push(shared);
            break;
        }
    }
    files
}

fn gate_with(extra: Vec<(String, Value)>) -> Gate {
    let policy = load_policy(None).unwrap();
    let mut tools = load_catalog(&Sources::default()).unwrap();
    for (name, schema) in extra {
        let t: InlineTool =
            serde_json::from_value(json!({"name": name, "input_schema": schema})).unwrap();
        tools.push(t.into_spec());
    }
    Gate::new(Arc::new(
        toolgate::compile::compile(&policy, tools).unwrap(),
    ))
}

fn cases(path: &PathBuf) -> Vec<Case> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_guard_case_reaches_its_decision() {
    for file in case_files() {
        let all = cases(&file);
        assert!(all.len() >= 98, "{}: {} cases", file.display(), all.len());
        let schemas: Vec<(String, Value)> = all
            .iter()
            .filter_map(|c| c.schema.clone().map(|s| (format!("case.{}", c.id), s)))
            .collect();
        let gate = gate_with(schemas);
        let mut failures = Vec::new();
        for c in &all {
            let (tool, args) = match c.kind.as_str() {
                "shell" => ("shell.run_command".to_string(), json!({"command": c.value})),
                "shell-argv" => (
                    "shell.shell_execute".to_string(),
                    json!({"command": c.value}),
                ),
                "sql-write" => ("sqlite.write_query".to_string(), json!({"query": c.value})),
                "sql-read" => ("sqlite.read_query".to_string(), json!({"query": c.value})),
                "schema" => (format!("case.{}", c.id), c.value.clone()),
                other => panic!("{}: unknown kind {other}", c.id),
            };
            let v = gate.check(&tool, args);
            let ok = match c.expect.as_str() {
                "allow" => v.decision == Action::Allow,
                "ask" => v.decision == Action::Ask,
                "deny" => v.decision == Action::Deny,
                "not-allow" => v.decision != Action::Allow,
                other => panic!("{}: unknown expectation {other}", c.id),
            };
            let coerced_ok = match (&c.coerced, v.decision) {
                (Some(want), Action::Allow) => &v.arguments == want,
                _ => true,
            };
            if !ok || !coerced_ok {
                failures.push(format!(
                    "{} [{}] {}: expected {}, got {} ({})\n    arguments: {}\n    message: {}",
                    c.id, c.kind, c.value, c.expect, v.decision, c.why, v.arguments, v.message
                ));
            }
            // Every non-allow verdict explains itself.
            if v.decision != Action::Allow {
                assert!(!v.findings.is_empty(), "{}: no findings", c.id);
                assert!(v.message.len() > 20, "{}: {}", c.id, v.message);
            }
        }
        assert!(
            failures.is_empty(),
            "{}: {} of {} cases failed:\n{}",
            file.display(),
            failures.len(),
            all.len(),
            failures.join("\n")
        );
    }
}

#[test]
fn schema_errors_name_the_parameter_and_what_is_expected() {
    let file = &case_files()[0];
    let all = cases(file);
    let schema = all.iter().find_map(|c| c.schema.clone()).unwrap();
    let gate = gate_with(vec![("case.tool".into(), schema)]);
    let msg = |args: Value| {
        let v = gate.check("case.tool", args);
        assert_eq!(v.decision, Action::Deny, "{}", v.message);
        v.message
    };
    let m = msg(json!({"depth": "3.5"}));
    assert!(m.contains("depth") && m.contains("integer"), "{m}");
    let m = msg(json!({"depth": 1, "recursive": "maybe"}));
    for s in ["recursive", "true", "yes", "1", "false", "no", "0"] {
        assert!(m.contains(s), "{s} missing: {m}");
    }
    let m = msg(json!({"depth": 1, "mode": "turbo"}));
    assert!(m.contains("\"fast\"") && m.contains("\"safe\""), "{m}");
    let m = msg(json!({"time": 1}));
    assert!(m.contains("depth") && m.contains("integer"), "{m}");
    let m = msg(json!({"depth": 1, "colour": "red"}));
    assert!(m.contains("colour"), "{m}");
    for p in ["depth", "time", "recursive", "zip", "tags", "mode"] {
        assert!(m.contains(p), "{p} missing: {m}");
    }
}
