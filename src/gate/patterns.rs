//! Scanning text with the regex danger patterns (`[[gate.patterns]]`,
//! compiled with the plan into one [`regex::RegexSet`]).

use super::types::{Finding, FindingKind};
use crate::plan::gate::patterns::scope_index;

pub use crate::plan::gate::patterns::{PatternError, PatternRule, PatternScope, PatternSet};

impl PatternSet {
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
    use crate::gate::types::{Action, Severity};

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
