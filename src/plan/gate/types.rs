//! The vocabulary of the gate's configuration: severities, actions,
//! configured checks and regexes.

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
