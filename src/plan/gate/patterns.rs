//! Regex danger patterns (`[[gate.patterns]]`), compiled into one
//! [`regex::RegexSet`] so a scan is linear in the text whatever the number
//! of rules.

use std::fmt;

use serde::Deserialize;

use super::types::{Action, Severity};

/// The role of an argument, used to scope pattern rules: a shell command line
/// or SQL text is analyzed by its parser, so a rule scoped to `text` does not
/// second-guess it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatternScope {
    /// Free text, or any argument with no more specific role.
    Text,
    /// A shell command line or argv element.
    Shell,
    /// SQL text.
    Sql,
    /// A file system path.
    Path,
}

/// One regex rule from `[[gate.patterns]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternRule {
    /// Rule id reported in findings.
    pub id: String,
    /// Regex in the syntax of the `regex` crate (no backreferences or
    /// look-around: matching is linear time). Checked when the policy is
    /// read, so a bad pattern is an error at its file:line:column.
    #[serde(deserialize_with = "valid_regex")]
    pub pattern: String,
    /// What the pattern detects, for the model.
    pub description: String,
    /// Severity reported in findings.
    pub severity: Severity,
    /// Action reported in findings.
    pub action: Action,
    /// What to do instead, appended to the message when present.
    #[serde(default)]
    pub advice: Option<String>,
    /// Roles of arguments the rule applies to; empty means every role.
    #[serde(default)]
    pub scope: Vec<PatternScope>,
}

fn valid_regex<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let text = String::deserialize(d)?;
    match regex::Regex::new(&text) {
        Ok(_) => Ok(text),
        Err(e) => Err(serde::de::Error::custom(format!(
            "pattern {text:?} is not accepted by the linear-time regex engine: {e}"
        ))),
    }
}

/// A pattern that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    /// Id of the offending rule.
    pub rule_id: String,
    /// Index of the rule in the list that was compiled, so the caller can
    /// point at its file, line and column.
    pub index: usize,
    /// The regex crate's error text.
    pub message: String,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pattern rule {:?} (#{}) does not compile: {}",
            self.rule_id, self.index, self.message
        )
    }
}

impl std::error::Error for PatternError {}

/// Compiled pattern rules.
#[derive(Debug, Clone)]
pub struct PatternSet {
    pub(crate) rules: Vec<PatternRule>,
    pub(crate) set: regex::RegexSet,
    /// Per scope (text, shell, sql, path): whether any rule applies, so an
    /// argument no rule looks at is not scanned at all.
    pub(crate) scoped: [bool; 4],
}

/// Slot of `s` in [`PatternSet`]'s per-scope flags.
pub(crate) fn scope_index(s: PatternScope) -> usize {
    match s {
        PatternScope::Text => 0,
        PatternScope::Shell => 1,
        PatternScope::Sql => 2,
        PatternScope::Path => 3,
    }
}

impl PatternSet {
    /// Compiles `rules`. The first rule whose regex the `regex` crate rejects
    /// (a backreference, look-around, a size limit...) is reported with its
    /// id and the regex error.
    pub fn compile(rules: &[PatternRule]) -> Result<Self, PatternError> {
        for (index, rule) in rules.iter().enumerate() {
            // Compile one by one first: RegexSet's error does not say which.
            regex::Regex::new(&rule.pattern).map_err(|e| PatternError {
                rule_id: rule.id.clone(),
                index,
                message: e.to_string(),
            })?;
        }
        let set = regex::RegexSet::new(rules.iter().map(|r| r.pattern.as_str())).map_err(|e| {
            PatternError {
                rule_id: "*".into(),
                index: rules.len(),
                message: e.to_string(),
            }
        })?;
        let mut scoped = [false; 4];
        for r in rules {
            if r.scope.is_empty() {
                scoped = [true; 4];
            }
            for sc in &r.scope {
                scoped[scope_index(*sc)] = true;
            }
        }
        Ok(Self {
            rules: rules.to_vec(),
            set,
            scoped,
        })
    }

    /// A set with no rule.
    pub fn empty() -> Self {
        Self {
            rules: Vec::new(),
            set: regex::RegexSet::empty(),
            scoped: [false; 4],
        }
    }

    /// The compiled rules, in order.
    pub fn rules(&self) -> &[PatternRule] {
        &self.rules
    }
}
