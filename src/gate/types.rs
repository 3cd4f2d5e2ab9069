//! The vocabulary shared by every layer of the gate: severities, actions,
//! findings, configured checks and regexes.

use serde::{Deserialize, Serialize};

/// How serious a finding is. Ordered: `Info < Low < Medium < High < Critical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth recording, not worth acting on.
    Info,
    /// Minor risk.
    Low,
    /// Moderate risk.
    Medium,
    /// Serious risk.
    High,
    /// Irreversible damage is likely.
    Critical,
}

impl Severity {
    /// The lowercase name used in policies and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

/// What a rule asks the gate to do, and the gate's decision. Ordered:
/// `Allow < Ask < Deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Let the call run.
    Allow,
    /// Ask a human to confirm first.
    Ask,
    /// Refuse the call.
    Deny,
}

impl Action {
    /// The lowercase name used in policies and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }

    /// Parses `allow`, `ask` or `deny`.
    pub fn parse(s: &str) -> Option<Action> {
        match s {
            "allow" => Some(Action::Allow),
            "ask" => Some(Action::Ask),
            "deny" => Some(Action::Deny),
            _ => None,
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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

/// The action, severity and message of a structural check (a check whose
/// detection is code but whose outcome is configuration).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Rule id reported in findings.
    pub id: String,
    /// Severity reported in findings.
    pub severity: Severity,
    /// Action reported in findings.
    pub action: Action,
    /// Message for the model; `{detail}` is replaced by what was found.
    pub message: String,
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

/// A regex compiled when the configuration is deserialized; a pattern the
/// `regex` crate rejects (backreferences, look-around, over the size limit)
/// is a deserialization error naming the pattern, which the loader turns into
/// a policy error at the pattern's file:line:column.
#[derive(Debug, Clone)]
pub struct ConfigRegex(pub regex::Regex);

impl<'de> Deserialize<'de> for ConfigRegex {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        regex::RegexBuilder::new(&text)
            .size_limit(1 << 22)
            .build()
            .map(ConfigRegex)
            .map_err(|e| serde::de::Error::custom(format!("invalid regex {text:?}: {e}")))
    }
}

impl ConfigRegex {
    /// Whether the regex matches anywhere in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
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
