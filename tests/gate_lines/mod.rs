//! Shared by the gate's round-3 tests (tests/gate_round3.rs and
//! tests/gate_round3_leftovers.rs): the shipped gate, a shell line checked
//! through `shell.run_command`, and a list of lines that must all get one
//! decision.

// each test file uses some of them
#![allow(dead_code)]

use std::sync::Arc;

use serde_json::json;
use toolgate::gate::{Action, Gate, Verdict};
use toolgate::load::{Sources, load_plan};

/// The gate of the shipped policy and catalog.
pub fn shipped() -> Gate {
    Gate::new(Arc::new(load_plan(&Sources::default()).unwrap()))
}

/// `line` as the `command` of `shell.run_command`.
pub fn shell(g: &Gate, line: &str) -> Verdict {
    g.check("shell.run_command", json!({ "command": line }))
}

/// The rule ids of a verdict's findings.
pub fn rules(v: &Verdict) -> Vec<&str> {
    v.findings.iter().map(|f| f.rule_id.as_str()).collect()
}

/// Each line gets `want`; with `rule`, one of its findings has that id.
pub fn expect_lines(g: &Gate, want: Action, rule: Option<&str>, lines: &[&str]) {
    for line in lines {
        let v = shell(g, line);
        assert_eq!(v.decision, want, "{line}: {:?} {}", rules(&v), v.message);
        if let Some(r) = rule {
            assert!(rules(&v).contains(&r), "{line}: {:?} lacks {r}", rules(&v));
        }
    }
}
