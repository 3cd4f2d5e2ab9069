//! The shared guard cases (`guard-cases.jsonl`, 98 cases, and
//! `guard-cases-2.jsonl`, 37 more from public reports against other agents'
//! guards; copies in `tests/data/cases/`, and `../shared/data/cases/` when
//! present): each must reach its expected decision under the shipped
//! default policy, through the real gate (`Gate::check`), with the tools the
//! README names: `shell.run_command` (shell), `shell.shell_execute`
//! (shell-argv), `sqlite.write_query` (sql-write), `sqlite.read_query`
//! (sql-read); schema cases register a tool with the case's schema.
//!
//! The everyday commands (`benign-commands.jsonl`, 40) must all be
//! allowed; with the project's own `benign-commands-more.jsonl` they are
//! the measure of the price of failing closed: the share allowed is
//! reported in docs/gate.md, and every command that asks is listed here
//! with its reason (a change in that list fails the test).

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

/// The copies of a case file: ours, and the shared one when present.
fn case_files_named(name: &str) -> Vec<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![manifest.join("tests/data/cases").join(name)];
    for shared in [
        manifest.join("../shared/data/cases").join(name),
        manifest.join("../../shared/data/cases").join(name),
    ] {
        if shared.exists() {
            files.push(shared);
            break;
        }
    }
    files
}

fn case_files() -> Vec<PathBuf> {
    case_files_named("guard-cases.jsonl")
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

fn run_cases(file: &PathBuf, min: usize) {
    let all = cases(file);
    assert!(all.len() >= min, "{}: {} cases", file.display(), all.len());
    let schemas: Vec<(String, Value)> = all
        .iter()
        .filter_map(|c| c.schema.clone().map(|s| (format!("case.{}", c.id), s)))
        .collect();
    let gate = gate_with(schemas);
    let mut failures = Vec::new();
    for c in &all {
        let v = check_case(&gate, c);
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

fn check_case(gate: &Gate, c: &Case) -> toolgate::gate::Verdict {
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
    gate.check(&tool, args)
}

#[test]
fn every_guard_case_reaches_its_decision() {
    for file in case_files() {
        run_cases(&file, 98);
    }
}

#[test]
fn every_second_set_guard_case_reaches_its_decision() {
    for file in case_files_named("guard-cases-2.jsonl") {
        run_cases(&file, 37);
    }
}

#[test]
fn the_shared_everyday_commands_are_all_allowed() {
    for file in case_files_named("benign-commands.jsonl") {
        let all = cases(&file);
        assert!(all.len() >= 40, "{}: {}", file.display(), all.len());
        run_cases(&file, 40);
    }
}

/// The everyday commands that ask, each with the reason: the price of
/// failing closed, reported in docs/gate.md ("Everyday commands").
const ASKING: &[(&str, &str)] = &[
    (
        "npx tsc --noEmit",
        "npx runs a package binary and downloads the package when it is not installed",
    ),
    (
        "npm install --save-dev typescript",
        "installs a package named in the line (its install scripts run)",
    ),
    (
        "pip install requests",
        "installs a package named in the line (its install scripts run)",
    ),
    (
        "docker build -t app .",
        "docker reaches the container daemon, which can change the host (system)",
    ),
    (
        "docker compose up -d",
        "docker reaches the container daemon, which can change the host (system)",
    ),
    (
        "perl -pi -e 's/\\r$//' scripts/run.sh",
        "inline Perl: no maintained Perl parser on crates.io, so the code cannot be checked",
    ),
    (
        "git worktree add ../wt-feature feature",
        "writes `../wt-feature`, outside the project root",
    ),
];

#[test]
fn everyday_commands_are_allowed_or_ask_for_a_listed_reason() {
    let gate = gate_with(Vec::new());
    let mut total = 0;
    let mut asking: Vec<(String, String)> = Vec::new();
    for name in ["benign-commands.jsonl", "benign-commands-more.jsonl"] {
        let file = &case_files_named(name)[0];
        for c in cases(file) {
            total += 1;
            let v = check_case(&gate, &c);
            assert_ne!(
                v.decision,
                Action::Deny,
                "{}: {} -> {}",
                c.id,
                c.value,
                v.message
            );
            if v.decision != Action::Allow {
                asking.push((
                    c.value.as_str().unwrap_or("").to_string(),
                    v.message.clone(),
                ));
            }
        }
    }
    let allowed = total - asking.len();
    let share = allowed as f64 / total as f64;
    println!(
        "everyday commands: {allowed} of {total} allowed ({:.1}%)",
        share * 100.0
    );
    for (c, m) in &asking {
        println!("  asks: {c}\n        {m}");
    }
    assert!(total >= 300, "{total} everyday commands");
    assert!(share >= 0.95, "{allowed} of {total} allowed");
    let listed: Vec<&str> = ASKING.iter().map(|(c, _)| *c).collect();
    let got: Vec<&str> = asking.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(
        got, listed,
        "the commands that ask changed: update ASKING and docs/gate.md"
    );
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

/// Everyday commands held out: written after the policy was tuned on the
/// two files above and not used to tune it. Their share is reported beside
/// the in-sample one (docs/gate.md); it must stay at least 90%.
#[test]
fn held_out_everyday_commands_are_mostly_allowed() {
    let gate = gate_with(Vec::new());
    let file = &case_files_named("benign-commands-heldout.jsonl")[0];
    let all = cases(file);
    let mut asking = Vec::new();
    for c in &all {
        let v = check_case(&gate, c);
        assert_ne!(
            v.decision,
            Action::Deny,
            "{}: {} -> {}",
            c.id,
            c.value,
            v.message
        );
        if v.decision != Action::Allow {
            asking.push(format!("{}: {}\n        {}", c.id, c.value, v.message));
        }
    }
    let allowed = all.len() - asking.len();
    println!(
        "held-out everyday commands: {allowed} of {} allowed ({:.1}%)",
        all.len(),
        100.0 * allowed as f64 / all.len() as f64
    );
    for a in &asking {
        println!("  asks: {a}");
    }
    assert!(all.len() >= 100);
    assert!(allowed * 10 >= all.len() * 9, "{allowed} of {}", all.len());
}
