//! `[gate.flow]` in the proxy: a call's labels judged against its session's
//! history (legacy sessions: the session's state; modern 2026-07-28
//! clients: the same state, carried in the signed session handle,
//! [`super::stateless::SessionHandle::flow`]), and a call that ran recorded
//! in it. See [`crate::gate::flow`].

use crate::gate::flow::{CallLabel, FlowHistory};
use crate::plan::Plan;

use super::gate::Decision;

/// The gate's `decision` on a call of `tool` carrying `labels`, raised by
/// the flow rules it completes after `history` at unix time `now`: an
/// `allow` becomes an `ask` (the reason names the calls that armed the
/// rule) or a `deny`; an `ask` becomes a `deny` for a deny rule, else keeps
/// its reason with the flow's added. A `deny` stays.
pub(crate) fn judge(
    plan: &Plan,
    history: &FlowHistory,
    tool: &str,
    decision: Decision,
    labels: &[CallLabel],
    now: f64,
) -> Decision {
    if labels.is_empty() || matches!(decision, Decision::Deny { .. }) {
        return decision;
    }
    let g = crate::gate::compiled(plan);
    let matches = history.check(&g.flow, labels, now);
    if matches.is_empty() {
        return decision;
    }
    // the findings and message the library gives
    let before = match decision {
        Decision::Allow(_) => crate::gate::Action::Allow,
        _ => crate::gate::Action::Ask,
    };
    let v = crate::gate::flow::raised(&g.flow, tool, before, matches);
    let flow_reasons: Vec<&str> = v.findings.iter().map(|f| f.message.as_str()).collect();
    match (v.decision, decision) {
        (crate::gate::Action::Deny, _) => Decision::Deny { message: v.message },
        (_, Decision::Ask { reason }) => Decision::Ask {
            reason: format!("{reason} {}", flow_reasons.join(" ")),
        },
        _ => Decision::Ask { reason: v.message },
    }
}

/// Records a call of `tool` that ran, with its labels, in `history`.
pub(crate) fn record(plan: &Plan, history: &mut FlowHistory, tool: &str, labels: &[CallLabel]) {
    let g = crate::gate::compiled(plan);
    if g.flow.is_active() {
        history.record(&g.flow, tool, labels, super::proxy::unix_now());
    }
}
