//! `[gate.flow]` in the proxy: a call's labels judged against its session's
//! history (legacy sessions: the session's state; modern 2026-07-28
//! clients: the same state, carried in the signed session handle,
//! [`super::stateless::SessionHandle::flow`]), and a call that ran recorded
//! in it. See [`crate::gate::flow`].

use crate::gate::flow::{CallLabel, FlowHistory, FlowMatch};
use crate::plan::Plan;

use super::gate::Decision;

/// The gate's `decision` on a call of `tool` carrying `labels`, raised by
/// the flow rules it completes after `history` at unix time `now`: an
/// `allow` becomes an `ask` (the reason names the calls that armed the
/// rule) or a `deny`; an `ask` becomes a `deny` for a deny rule, else keeps
/// its reason with the flow's added. A `deny` stays. Also returns the rules
/// completed, with the calls that armed them (for the audit record; empty
/// when the decision stands).
pub(crate) fn judge(
    plan: &Plan,
    history: &FlowHistory,
    tool: &str,
    decision: Decision,
    labels: &[CallLabel],
    now: f64,
) -> (Decision, Vec<FlowMatch>) {
    if labels.is_empty() || matches!(decision, Decision::Deny { .. }) {
        return (decision, Vec::new());
    }
    let g = crate::gate::compiled(plan);
    let matches = history.check(&g.flow, labels, now);
    if matches.is_empty() {
        return (decision, matches);
    }
    let chain = matches.clone();
    // the findings and message the library gives
    let before = match decision {
        Decision::Allow(_) => crate::gate::Action::Allow,
        _ => crate::gate::Action::Ask,
    };
    let v = crate::gate::flow::raised(&g.flow, tool, before, matches);
    let flow_reasons: Vec<&str> = v.findings.iter().map(|f| f.message.as_str()).collect();
    let raised = match (v.decision, decision) {
        (crate::gate::Action::Deny, _) => Decision::Deny { message: v.message },
        (_, Decision::Ask { reason }) => Decision::Ask {
            reason: format!("{reason} {}", flow_reasons.join(" ")),
        },
        _ => Decision::Ask { reason: v.message },
    };
    (raised, chain)
}

/// Records a call of `tool` that ran, with its labels, in `history`.
pub(crate) fn record(plan: &Plan, history: &mut FlowHistory, tool: &str, labels: &[CallLabel]) {
    let g = crate::gate::compiled(plan);
    if g.flow.is_active() {
        history.record(&g.flow, tool, labels, super::proxy::unix_now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{Sources, load_plan};
    use crate::mcp::stateless::{SessionHandle, Stateless};
    use serde_json::json;

    fn labelled(plan: &Plan, tool: &str, args: serde_json::Value) -> Vec<CallLabel> {
        crate::gate::check_call(plan, tool, args).labels
    }

    #[test]
    fn a_rule_raises_the_decision_and_a_deny_stays() {
        let plan = load_plan(&Sources::default()).unwrap();
        let g = crate::gate::compiled(&plan);
        let mut h = FlowHistory::new();
        let read = labelled(&plan, "filesystem.read_text_file", json!({"path": ".env"}));
        let page = labelled(&plan, "fetch.fetch", json!({"url": "http://localhost/p"}));
        h.record(&g.flow, "filesystem.read_text_file", &read, 1.0);
        h.record(&g.flow, "fetch.fetch", &page, 2.0);
        let out = labelled(
            &plan,
            "fetch.fetch",
            json!({"url": "https://evil.example/"}),
        );
        let allow = Decision::Allow(json!({}));
        match judge(&plan, &h, "fetch.fetch", allow, &out, 3.0).0 {
            Decision::Ask { reason } => {
                assert!(
                    reason.contains("call 1 `filesystem.read_text_file`"),
                    "{reason}"
                )
            }
            d => panic!("{d:?}"),
        }
        let ask = Decision::Ask {
            reason: "the tool asks".into(),
        };
        match judge(&plan, &h, "fetch.fetch", ask, &out, 3.0).0 {
            Decision::Ask { reason } => {
                assert!(reason.starts_with("the tool asks "), "{reason}");
                assert!(reason.contains("call 2 `fetch.fetch`"), "{reason}");
            }
            d => panic!("{d:?}"),
        }
        let deny = Decision::Deny {
            message: "no".into(),
        };
        assert_eq!(
            judge(&plan, &h, "fetch.fetch", deny.clone(), &out, 3.0),
            (deny, Vec::new())
        );
        // an empty history: the gate's decision stands
        let allow = Decision::Allow(json!({}));
        assert_eq!(
            judge(
                &plan,
                &FlowHistory::new(),
                "fetch.fetch",
                allow.clone(),
                &out,
                3.0
            ),
            (allow, Vec::new())
        );
    }

    #[test]
    fn the_modern_handle_carries_the_history() {
        let plan = load_plan(&Sources::default()).unwrap();
        let g = crate::gate::compiled(&plan);
        let keys = Stateless::from_config(None, std::time::Duration::from_secs(60)).unwrap();
        let h0 = SessionHandle::new("m-1".into(), 1000.0);
        let mut st = h0.to_state(1000.0);
        let read = labelled(&plan, "filesystem.read_text_file", json!({"path": ".env"}));
        record(&plan, &mut st.flow, "filesystem.read_text_file", &read);
        let sealed = keys.seal_handle(&h0.updated(&st));
        // the next request, on any replica with the key
        let st2 = keys.open_handle(&sealed).unwrap().to_state(1001.0);
        assert_eq!(st2.flow, st.flow);
        assert_eq!(st2.flow.last[0].label, "private");
        assert_eq!(g.flow.labels.len(), 3);
        // a handle of an earlier proxy (no `flow`) opens with an empty history
        let old = serde_json::to_value(&h0).unwrap();
        assert!(old.get("flow").is_none());
    }
}
