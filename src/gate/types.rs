//! The vocabulary shared by every layer of the gate: findings and the
//! decision they make, with the configured severities, actions, checks and
//! regexes (defined with the plan, [`crate::plan::gate::types`]).

use serde::Serialize;

pub use crate::plan::gate::types::{Action, Check, ConfigRegex, Severity};

/// Which layer produced a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FindingKind {
    /// The tool is not registered.
    Tool,
    /// The arguments are not valid JSON, too large or too deep.
    Input,
    /// The arguments do not satisfy the tool's JSON Schema (after coercion).
    Schema,
    /// A regex rule from `[[gate.patterns]]`.
    Pattern,
    /// A shell rule or check from `[gate.shell]`.
    Shell,
    /// A SQL rule or check from `[gate.sql]`.
    Sql,
    /// A path check from `[gate.paths]`.
    Path,
    /// The input could not be parsed (fail closed).
    Parse,
    /// The tool itself (its risk level or confirmation flag), from `[gate.risk]`.
    Risk,
    /// A data-flow rule over the session's history, from `[gate.flow]`.
    Flow,
}

/// One effect the gate found a call has (`toolgate guard` lists them):
/// a shell command reading, writing or deleting a path, running code,
/// contacting the network, changing the system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectFound {
    /// `read`, `write`, `delete`, `chdir`, `script`, `exec`, `code`,
    /// `install`, `url`, `network`, `system`, `remote`, `project`, `env`.
    /// Borrowed from the gate's own names (no allocation per effect);
    /// `"write".into()` makes one, and it compares with `==` to a `&str`
    /// or a `String`.
    pub kind: std::borrow::Cow<'static, str>,
    /// What the command names: the operand, option value or variable, as
    /// written after quote removal.
    pub operand: String,
    /// For paths, where it lands: absolute (relative to the first root when
    /// the line starts there), `~/...` under the home directory, or
    /// `dynamic` when only known at run time; for code and commands, the
    /// program or language; otherwise the operand.
    pub resolved: String,
}

/// One thing the gate found in one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Id of the rule or check that fired, from the configuration.
    pub rule_id: String,
    /// Which layer produced it.
    pub kind: FindingKind,
    /// JSON pointer of the argument, e.g. `/command` or `/command/2` (empty
    /// for the whole call).
    pub path: String,
    /// How serious it is.
    pub severity: Severity,
    /// What this rule asks for.
    pub action: Action,
    /// Written for the model: what was found and what to do instead.
    pub message: String,
}

/// One coercion the gate made to a call's arguments: the value at `path`
/// was sent as a `from` and is passed on as a `to` (both JSON Schema type
/// names; `from` is always `string`: only strings are ever coerced).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coerced {
    /// JSON pointer of the value, e.g. `/count` or `/edits/0/line`.
    pub path: String,
    /// The type the value was sent as.
    pub from: &'static str,
    /// The type it was coerced to.
    pub to: &'static str,
}

impl Check {
    /// Builds a finding of `kind` at `path` with `detail` put into the message.
    pub fn finding(&self, kind: FindingKind, path: &str, detail: &str) -> Finding {
        Finding {
            rule_id: self.id.clone(),
            kind,
            path: path.to_owned(),
            severity: self.severity,
            action: self.action,
            message: fill(&self.message, detail),
        }
    }

    /// As [`Check::finding`], with the rule id `<id>.<suffix>` (the schema
    /// findings: `schema.required`, `schema.coercion`, ...).
    pub fn sub_finding(
        &self,
        suffix: &str,
        kind: FindingKind,
        path: &str,
        detail: &str,
    ) -> Finding {
        Finding {
            rule_id: format!("{}.{suffix}", self.id),
            ..self.finding(kind, path, detail)
        }
    }
}

/// Replaces `{detail}` in a configured message; appends the detail when the
/// message has no placeholder.
pub(crate) fn fill(message: &str, detail: &str) -> String {
    if message.contains("{detail}") {
        message.replace("{detail}", detail)
    } else if detail.is_empty() {
        message.to_owned()
    } else {
        format!("{message} ({detail})")
    }
}

/// The most severe action among `findings` (`Deny > Ask > Allow`); `Allow`
/// when there are none.
pub fn decide(findings: &[Finding]) -> Action {
    findings
        .iter()
        .map(|f| f.action)
        .max()
        .unwrap_or(Action::Allow)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(action: Action) -> Finding {
        Finding {
            rule_id: "r".into(),
            kind: FindingKind::Shell,
            path: "/x".into(),
            severity: Severity::Low,
            action,
            message: String::new(),
        }
    }

    #[test]
    fn decide_takes_most_severe_action() {
        assert_eq!(decide(&[]), Action::Allow);
        assert_eq!(decide(&[f(Action::Allow)]), Action::Allow);
        assert_eq!(decide(&[f(Action::Ask), f(Action::Allow)]), Action::Ask);
        assert_eq!(
            decide(&[f(Action::Ask), f(Action::Deny), f(Action::Allow)]),
            Action::Deny
        );
    }

    #[test]
    fn severity_is_ordered() {
        assert!(Severity::Info < Severity::Low);
        assert!(Severity::Low < Severity::Medium);
        assert!(Severity::Medium < Severity::High);
        assert!(Severity::High < Severity::Critical);
    }

    #[test]
    fn fill_places_detail() {
        assert_eq!(fill("a {detail} b", "x"), "a x b");
        assert_eq!(fill("a", "x"), "a (x)");
        assert_eq!(fill("a", ""), "a");
    }
}
