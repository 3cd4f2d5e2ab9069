//! Risk gates (`[gate.risk]`): the tool's risk level, its
//! requires-confirmation flag and the findings make one decision.
//!
//! The rules of the table are tried in order and the first whose conditions
//! all hold decides; when none holds, the strictest finding action decides.
//! The shipped table reproduces seed 002: a dangerous finding on a tool that
//! is not destructive is denied, a destructive tool asks for confirmation,
//! and a tool that requires confirmation asks.

use super::config::{RiskConfig, RiskDecision, RiskRule};
use super::types::{Action, Finding, decide};
use crate::parse::tags::RiskLevel;

/// The tool-level facts the table looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolRisk {
    /// The tool's risk level (the policy's default when the tags say nothing).
    pub risk_level: RiskLevel,
    /// The user must confirm every call.
    pub requires_confirmation: bool,
}

/// Whether `rule`'s conditions hold.
pub fn rule_matches(rule: &RiskRule, tool: ToolRisk, findings: &[Finding]) -> bool {
    if let Some(levels) = &rule.risk_level
        && !levels.contains(&tool.risk_level)
    {
        return false;
    }
    if let Some(c) = rule.requires_confirmation
        && c != tool.requires_confirmation
    {
        return false;
    }
    if let Some(min) = rule.min_severity {
        match findings.iter().map(|f| f.severity).max() {
            Some(s) if s >= min => {}
            _ => return false,
        }
    }
    if let Some(actions) = &rule.finding_action
        && !actions.contains(&decide(findings))
    {
        return false;
    }
    true
}

/// The decision for a call with `findings` to a tool with `tool`'s risk
/// facts, and the rule that made it (`None`: no rule held, the findings
/// decided).
pub fn decide_risk<'c>(
    cfg: &'c RiskConfig,
    tool: ToolRisk,
    findings: &[Finding],
) -> (Action, Option<&'c RiskRule>) {
    let strictest = decide(findings);
    for rule in &cfg.rules {
        if rule_matches(rule, tool, findings) {
            let d = match rule.decision {
                RiskDecision::Allow => Action::Allow,
                RiskDecision::Ask => Action::Ask,
                RiskDecision::Deny => Action::Deny,
                RiskDecision::Finding => strictest,
            };
            return (d, Some(rule));
        }
    }
    (strictest, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::types::{FindingKind, Severity};

    fn f(sev: Severity, action: Action) -> Finding {
        Finding {
            rule_id: "r".into(),
            kind: FindingKind::Pattern,
            path: "/x".into(),
            severity: sev,
            action,
            message: String::new(),
        }
    }

    fn t(level: RiskLevel, confirm: bool) -> ToolRisk {
        ToolRisk {
            risk_level: level,
            requires_confirmation: confirm,
        }
    }

    #[test]
    fn shipped_table_reproduces_seed_002() {
        let cfg = &crate::gate::config::shipped().risk;
        let deny = [f(Severity::High, Action::Deny)];
        // A dangerous finding on a tool that is not destructive: blocked.
        assert_eq!(
            decide_risk(cfg, t(RiskLevel::Safe, false), &deny).0,
            Action::Deny
        );
        assert_eq!(
            decide_risk(cfg, t(RiskLevel::Dangerous, true), &deny).0,
            Action::Deny
        );
        // A destructive tool asks, even with a (non-critical) dangerous finding.
        assert_eq!(
            decide_risk(cfg, t(RiskLevel::Destructive, false), &deny).0,
            Action::Ask
        );
        assert_eq!(
            decide_risk(cfg, t(RiskLevel::Destructive, false), &[]).0,
            Action::Ask
        );
        // Requires confirmation: asks.
        assert_eq!(
            decide_risk(cfg, t(RiskLevel::Safe, true), &[]).0,
            Action::Ask
        );
        // Nothing found on a plain tool: allowed; an ask finding asks.
        assert_eq!(
            decide_risk(cfg, t(RiskLevel::Safe, false), &[]).0,
            Action::Allow
        );
        assert_eq!(
            decide_risk(
                cfg,
                t(RiskLevel::Dangerous, false),
                &[f(Severity::High, Action::Ask)]
            )
            .0,
            Action::Ask
        );
        // Critical findings are denied whatever the tool.
        assert_eq!(
            decide_risk(
                cfg,
                t(RiskLevel::Destructive, false),
                &[f(Severity::Critical, Action::Deny)]
            )
            .0,
            Action::Deny
        );
    }
}
