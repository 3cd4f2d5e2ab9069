//! Prints the gate's whole verdict for every line of case files, one JSON
//! line each, so two builds can be compared byte for byte (`diff`): a gate
//! change that should not move a decision, a rule id, a message or an
//! effect is checked by running this before and after it.
//!
//! ```sh
//! cargo run --example gate_verdicts -- tests/data/cases/*.jsonl \
//!     ../shared/data/cases/benign-commands.jsonl > before.jsonl
//! # ... the change ...
//! cargo run --example gate_verdicts -- (the same files) > after.jsonl
//! diff before.jsonl after.jsonl
//! ```
//!
//! Each argument is a file: `*.jsonl` holds guard cases
//! (`{"id", "kind", "value", "schema"?}`, the format of
//! `tests/data/cases/README.md`), checked with the tools
//! `tests/guard_cases.rs` uses for each kind (`shell.run_command`,
//! `shell.shell_execute`, `sqlite.write_query`, `sqlite.read_query`, or a
//! tool with the case's schema); any other file holds one shell line a
//! line, checked as the `command` of `shell.run_command`. The output line
//! is `{"file", "id", "decision", "rules", "verdict"}` (`id`: the case id,
//! or the line number). A case line that is not JSON, or of an unknown
//! kind, ends the run with exit 2 naming the file and line.

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::gate::Gate;
use toolgate::load::{Sources, load_catalog, load_policy};
use toolgate::parse::tags::InlineTool;

/// One checked line: the tool, its arguments and the id printed for it.
struct Call {
    id: String,
    tool: String,
    args: Value,
}

fn fail(msg: String) -> ! {
    eprintln!("gate_verdicts: {msg}");
    std::process::exit(2);
}

/// The calls of one file, and the schema tools its cases declare.
fn calls(path: &str) -> (Vec<Call>, Vec<(String, Value)>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(format!("{path}: {e}")));
    let mut out = Vec::new();
    let mut schemas = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if path.ends_with(".jsonl") {
            if line.trim().is_empty() {
                continue;
            }
            let c: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| fail(format!("{path}:{}: {e}", n + 1)));
            let id = c["id"].as_str().unwrap_or("").to_string();
            let value = c["value"].clone();
            let (tool, args) = match c["kind"].as_str().unwrap_or("") {
                "shell" => ("shell.run_command".to_string(), json!({ "command": value })),
                "shell-argv" => (
                    "shell.shell_execute".to_string(),
                    json!({ "command": value }),
                ),
                "sql-write" => ("sqlite.write_query".to_string(), json!({ "query": value })),
                "sql-read" => ("sqlite.read_query".to_string(), json!({ "query": value })),
                "schema" => {
                    let name = format!("case.{id}");
                    schemas.push((name.clone(), c["schema"].clone()));
                    (name, value)
                }
                other => fail(format!("{path}:{}: unknown kind `{other}`", n + 1)),
            };
            out.push(Call { id, tool, args });
        } else {
            out.push(Call {
                id: (n + 1).to_string(),
                tool: "shell.run_command".to_string(),
                args: json!({ "command": line }),
            });
        }
    }
    (out, schemas)
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        fail("give one or more case files (*.jsonl) or files of shell lines".into());
    }
    let mut read: Vec<(String, Vec<Call>)> = Vec::new();
    let mut schemas: Vec<(String, Value)> = Vec::new();
    for f in &files {
        let (c, s) = calls(f);
        read.push((f.clone(), c));
        schemas.extend(s);
    }
    let policy = load_policy(None).unwrap_or_else(|e| fail(format!("{e:?}")));
    let mut tools = load_catalog(&Sources::default()).unwrap_or_else(|e| fail(format!("{e:?}")));
    for (name, schema) in schemas {
        let t: InlineTool = serde_json::from_value(json!({"name": name, "input_schema": schema}))
            .unwrap_or_else(|e| fail(format!("{name}: {e}")));
        tools.push(t.into_spec());
    }
    let plan =
        toolgate::compile::compile(&policy, tools).unwrap_or_else(|e| fail(format!("{e:?}")));
    let gate = Gate::new(Arc::new(plan));
    for (file, calls) in read {
        for c in calls {
            let v = gate.check(&c.tool, c.args);
            let line = json!({
                "file": file,
                "id": c.id,
                "decision": v.decision,
                "rules": v.rule_ids(),
                "verdict": v,
            });
            println!("{line}");
        }
    }
}
