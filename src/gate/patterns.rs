//! Regex danger patterns (`[[gate.patterns]]`), compiled into one
//! [`regex::RegexSet`] so a scan is linear in the text whatever the number
//! of rules.

use std::fmt;

use serde::Deserialize;

use super::types::{Action, Finding, FindingKind, Severity};

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
    rules: Vec<PatternRule>,
    set: regex::RegexSet,
    /// Per scope (text, shell, sql, path): whether any rule applies, so an
    /// argument no rule looks at is not scanned at all.
    scoped: [bool; 4],
}

fn scope_index(s: PatternScope) -> usize {
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

    /// Every rule, whatever its scope, matched against `text`, the argument
    /// at JSON pointer `path`.
    pub fn scan(&self, path: &str, text: &str) -> Vec<Finding> {
        self.scan_filtered(path, text, |_| true)
    }

    /// The rules whose scope includes `role` (or is empty) matched against
    /// `text`, the argument at JSON pointer `path`.
    pub fn scan_as(&self, role: PatternScope, path: &str, text: &str) -> Vec<Finding> {
        if !self.scoped[scope_index(role)] {
            return Vec::new();
        }
        self.scan_filtered(path, text, |r| {
            r.scope.is_empty() || r.scope.contains(&role)
        })
    }

    fn scan_filtered(
        &self,
        path: &str,
        text: &str,
        keep: impl Fn(&PatternRule) -> bool,
    ) -> Vec<Finding> {
        self.set
            .matches(text)
            .into_iter()
            .map(|i| &self.rules[i])
            .filter(|r| keep(r))
            .map(|r| Finding {
                rule_id: r.id.clone(),
                kind: FindingKind::Pattern,
                path: path.to_owned(),
                severity: r.severity,
                action: r.action,
                message: match &r.advice {
                    Some(a) => format!("{} found in {path}. {a}", r.description),
                    None => format!("{} found in {path}.", r.description),
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: &str, pattern: &str, scope: Vec<PatternScope>) -> PatternRule {
        PatternRule {
            id: id.into(),
            pattern: pattern.into(),
            description: "d".into(),
            severity: Severity::High,
            action: Action::Deny,
            advice: None,
            scope,
        }
    }

    #[test]
    fn backreference_is_an_error_naming_the_rule() {
        let err = PatternSet::compile(&[rule("ok", "a+", vec![]), rule("bad", r"(a)\1", vec![])])
            .unwrap_err();
        assert_eq!(err.rule_id, "bad");
        assert_eq!(err.index, 1);
        assert!(err.to_string().contains("bad"), "{err}");
        assert!(!err.message.is_empty());
    }

    #[test]
    fn lookaround_is_an_error() {
        let err = PatternSet::compile(&[rule("look", "a(?=b)", vec![])]).unwrap_err();
        assert_eq!(err.rule_id, "look");
    }

    #[test]
    fn scan_reports_every_matching_rule() {
        let set = PatternSet::compile(&[
            rule("a", "(?i)drop\\s+table", vec![]),
            rule("b", "rm\\s+-rf", vec![PatternScope::Text]),
            rule("c", "zzz", vec![]),
        ])
        .unwrap();
        let f = set.scan("/q", "DROP  TABLE x; rm -rf /");
        let ids: Vec<_> = f.iter().map(|f| f.rule_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(f[0].path, "/q");
        assert_eq!(f[0].kind, FindingKind::Pattern);
        let f = set.scan_as(PatternScope::Shell, "/q", "DROP  TABLE x; rm -rf /");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rule_id, "a");
    }
}
