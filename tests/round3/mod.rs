//! Helpers shared by the issue-30 gate tests (`gate_written_then_run`,
//! `gate_side_channels`, `gate_builtin_code`, `gate_program_spellings`):
//! each line goes through the real gate (`Gate::check` with the shipped
//! policy and tools, the crate root as the allowed root) and through the
//! real `toolgate guard` binary.
#![allow(dead_code)]

use std::process::Command;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use toolgate::gate::{Action, Gate, Verdict};
use toolgate::load::{Sources, load_plan};

fn gate() -> &'static Gate {
    static G: OnceLock<Gate> = OnceLock::new();
    G.get_or_init(|| Gate::new(Arc::new(load_plan(&Sources::default()).unwrap())))
}

/// The verdict on one command line of `shell.run_command`.
pub fn line(l: &str) -> Verdict {
    gate().check("shell.run_command", json!({ "command": l }))
}

fn explain(v: &Verdict) -> String {
    format!(
        "{:?} {:?} {:?}",
        v.decision,
        v.rule_ids(),
        v.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    )
}

/// Each line gets `want`, with a finding of rule `rule` among its findings.
pub fn expect(want: Action, rule: &str, lines: &[&str]) {
    let bad: Vec<String> = lines
        .iter()
        .map(|l| (l, line(l)))
        .filter(|(_, v)| v.decision != want || !v.rule_ids().contains(&rule))
        .map(|(l, v)| format!("{l:?} -> {}", explain(&v)))
        .collect();
    assert!(
        bad.is_empty(),
        "expected {want:?} with `{rule}`:\n{}",
        bad.join("\n")
    );
}

/// Each line is allowed.
pub fn allowed(lines: &[&str]) {
    let bad: Vec<String> = lines
        .iter()
        .map(|l| (l, line(l)))
        .filter(|(_, v)| v.decision != Action::Allow)
        .map(|(l, v)| format!("{l:?} -> {}", explain(&v)))
        .collect();
    assert!(bad.is_empty(), "expected allow:\n{}", bad.join("\n"));
}

/// `toolgate guard` on one command line: its exit code and the rule ids of
/// its JSON findings.
pub fn guard(l: &str) -> (i32, Vec<String>) {
    let args = json!({ "command": l }).to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "guard",
            "--tool",
            "shell.run_command",
            "--args",
            &args,
            "--format",
            "json",
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    let rules = v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["rule_id"].as_str().map(str::to_string))
        .collect();
    (o.status.code().unwrap_or(-1), rules)
}

/// `toolgate guard` exits `code` on each line (0 allow, 6 ask, 7 deny),
/// with `rule` among the findings (none checked for `""`).
pub fn guard_expect(code: i32, rule: &str, lines: &[&str]) {
    for l in lines {
        let (c, rules) = guard(l);
        assert_eq!(c, code, "{l:?}: exit {c}, findings {rules:?}");
        assert!(
            rule.is_empty() || rules.iter().any(|r| r == rule),
            "{l:?}: no `{rule}` in {rules:?}"
        );
    }
}
