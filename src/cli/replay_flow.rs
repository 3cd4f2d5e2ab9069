//! `toolgate replay --flow`: prints [`toolgate::replay::flow::FlowReport`].

use toolgate::replay::flow::FlowReport;

use super::Format;
use super::bounded::{name, number};

/// Prints the report: a summary line, then each stopped call with the
/// calls that armed its rules (text), or the report as JSON.
pub fn print(o: &mut String, r: &FlowReport, format: Format) {
    if format == Format::Json {
        w!(
            o,
            "{}",
            serde_json::to_string_pretty(r).unwrap_or_else(|_| "{}".into())
        );
        return;
    }
    w!(
        o,
        "flow: {} sessions, {} calls, {} labelled, {} stopped",
        r.sessions,
        r.calls,
        r.labelled,
        r.stopped.len()
    );
    for s in &r.stopped {
        w!(
            o,
            "session {} line {} t={} {}: {} (was {})",
            name(&s.session),
            s.line,
            number(s.t),
            name(&s.tool),
            s.decision,
            s.before
        );
        for m in &s.rules {
            w!(o, "  rule {} ({}), armed by:", m.rule, m.action);
            for a in &m.armed_by {
                w!(
                    o,
                    "    call {} {} at t={}: {}: {}",
                    a.call,
                    name(&a.tool),
                    number(a.at),
                    a.label,
                    a.why
                );
            }
        }
    }
}
