//! The `[gate.flow]` rules on recorded sessions (`toolgate replay --flow`):
//! which calls of a trace the flow rules would have stopped, so a policy
//! author can try rules before turning them on.
//!
//! Each session of the trace is replayed on its own, in the order of its
//! lines. Every `tool_call` is checked by the call gate with its recorded
//! `arguments` (the labels come from the verdict, see
//! [`crate::gate::flow::label_call`]), then judged against the session's
//! history at the line's time `t`; every call is then recorded in the
//! history, whatever the verdict, because the trace says it ran. A call is
//! *stopped* when a flow rule raised its decision (to `ask` or `deny`).

use serde::Serialize;

use super::trace::{Event, Trace};
use crate::gate::flow::{Armed, CallLabel, FlowHistory};
use crate::gate::{Action, check_call};
use crate::plan::Plan;

/// One call the flow rules would have stopped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stopped {
    /// The session id.
    pub session: String,
    /// The trace line (1-based).
    pub line: usize,
    /// The line's time (seconds, the trace's origin).
    pub t: f64,
    /// The tool called (canonical name).
    pub tool: String,
    /// The decision the flow rules give (`ask` or `deny`).
    pub decision: Action,
    /// The decision without the flow rules.
    pub before: Action,
    /// The rules that fired, each with the earlier calls that armed it.
    pub rules: Vec<StoppedRule>,
    /// The call's labels.
    pub labels: Vec<CallLabel>,
}

/// One rule that fired on a stopped call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoppedRule {
    /// The rule id.
    pub rule: String,
    /// Its action.
    pub action: Action,
    /// The calls that armed it (`call`: the call's number in its session).
    pub armed_by: Vec<Armed>,
}

/// What the flow rules would have done on a trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FlowReport {
    /// Sessions replayed.
    pub sessions: usize,
    /// Tool calls checked.
    pub calls: usize,
    /// Calls that carried at least one label.
    pub labelled: usize,
    /// The calls the flow rules would have stopped, in trace order per session.
    pub stopped: Vec<Stopped>,
}

/// Replays `trace` under `plan`'s `[gate.flow]` (see the module).
pub fn flow_report(plan: &Plan, trace: &Trace) -> FlowReport {
    let mut report = FlowReport::default();
    for (session, lines) in trace.sessions() {
        report.sessions += 1;
        let mut history = FlowHistory::new();
        for &i in &lines {
            let l = &trace.lines[i];
            let Event::ToolCall {
                tool, arguments, ..
            } = &l.event
            else {
                continue;
            };
            report.calls += 1;
            let mut v = check_call(plan, tool, arguments.clone());
            let before = v.decision;
            if !v.labels.is_empty() {
                report.labelled += 1;
            }
            crate::gate::flow::judge(plan, &history, &mut v, l.t);
            if !v.flow.is_empty() && v.decision > before {
                report.stopped.push(Stopped {
                    session: session.to_string(),
                    line: l.line,
                    t: l.t,
                    tool: v.tool.clone(),
                    decision: v.decision,
                    before,
                    rules: v
                        .flow
                        .iter()
                        .map(|m| StoppedRule {
                            rule: m.rule.clone(),
                            action: m.action,
                            armed_by: m.armed_by.clone(),
                        })
                        .collect(),
                    labels: v.labels.clone(),
                });
            }
            crate::gate::flow::record(plan, &mut history, &v, l.t);
        }
    }
    report
}
