//! `toolgate replay`: walk a recorded trace and print every step.

use std::sync::Arc;

use toolgate::Plan;
use toolgate::compile::compile;
use toolgate::load::{Sources, load_catalog};
use toolgate::parse::tags::ToolSpec;
use toolgate::replay::engine::Step;
use toolgate::replay::stats::Summary;
use toolgate::replay::trace::{Trace, parse_trace};

use super::{Fail, PlanArgs};

/// Reads and parses a trace file (`-` = stdin). A trace with no session (an
/// empty file, only blank lines, or every line skipped) is an input error:
/// there is nothing to replay. (Sessions without a tool call are valid: they
/// measure what is listed when nothing is needed.)
pub fn read_trace(path: &str, skip_invalid: bool) -> Result<Trace, Fail> {
    let text = super::read_text(path).map_err(Fail::Input)?;
    let trace = parse_trace(&text, skip_invalid).map_err(|first| {
        // Every bad line at once (issue 29).
        let all = match skip_invalid {
            false => parse_trace(&text, true)
                .map(|t| t.skipped)
                .unwrap_or_default(),
            true => Vec::new(),
        };
        Fail::Input(super::stream::every_bad_line(path, first, all))
    })?;
    if trace.lines.is_empty() {
        let what = if trace.skipped.is_empty() {
            "the file holds no trace line".to_string()
        } else {
            format!("all {} lines were skipped as invalid", trace.skipped.len())
        };
        return Err(Fail::Input(format!(
            "{path}: the trace has no sessions ({what}), so there is nothing to replay; a trace is JSON Lines, one event per line, e.g. {{\"session\": \"s1\", \"t\": 4, \"event\": \"tool_call\", \"tool\": \"sqlite.list_tables\"}} (docs/trace-format.md)"
        )));
    }
    Ok(trace)
}

/// The catalog of a replay: as for every command ([`load_catalog`]):
/// `--tags DIR` and/or `--tools FILE`; with `--tools` and no `--tags`, the
/// tools alone; with neither, the embedded tags.
pub fn replay_catalog(args: &PlanArgs) -> Result<Vec<ToolSpec>, Fail> {
    load_catalog(&Sources {
        policy: None,
        tags: args.tags.clone(),
        tools: args.tools.clone(),
    })
    .map_err(Fail::Load)
}

/// The plan of a replay: the policy of `args` with [`replay_catalog`].
pub fn replay_plan(args: &PlanArgs) -> Result<Arc<Plan>, Fail> {
    let policy = toolgate::load::load_policy_partial(args.policy.as_deref());
    let catalog = replay_catalog(args);
    match (policy, catalog) {
        (Ok(p), Ok(c)) => compile(&p, c).map(Arc::new).map_err(Fail::Load),
        // (only the data files failed: the policy's other problems too)
        (Err(e), Ok(c)) => Err(Fail::Load(toolgate::load::compile_failed_policy(e, c))),
        (Err(e), Err(Fail::Load(b))) => {
            let mut a = e.error;
            a.diagnostics.extend(b.diagnostics);
            Err(Fail::Load(a))
        }
        (Err(e), _) => Err(Fail::Load(e.error)),
        (_, Err(e)) => Err(e),
    }
}

/// ` [a, b, … 3 more]`: at most `max` names of `idx`, each clipped
/// (`super::bounded`), sorted; empty when `max` is 0 (`--max-names 0`:
/// counts only).
fn names(plan: &Plan, idx: &[usize], max: usize) -> String {
    if max == 0 {
        return String::new();
    }
    let mut v: Vec<&str> = idx
        .iter()
        .take(max)
        .map(|&i| plan.tools[i].name.as_str())
        .collect();
    v.sort_unstable();
    let mut s = v
        .iter()
        .map(|n| super::bounded::name(n))
        .collect::<Vec<_>>()
        .join(", ");
    if idx.len() > max {
        s.push_str(&format!(", {}", toolgate::diag::more(idx.len() - max)));
    }
    format!(" [{s}]")
}

/// One line of summary numbers, shared by `replay` and `fit`.
pub fn summary_line(s: &Summary) -> String {
    if s.calls == 0 {
        return format!(
            "no tool calls to score ({} session(s), {} tools)",
            s.sessions, s.tools
        );
    }
    format!(
        "recall {:.1}% ({}/{} calls) | active set mean {:.1}, median {}, p95 {} of {} tools | schema tokens mean {:.0} | changes per session {:.2} | no-call turns {} (mean active {:.1})",
        100.0 * s.recall,
        s.hits,
        s.calls,
        s.active.mean,
        s.active.median,
        s.active.p95,
        s.tools,
        s.schema_tokens.mean,
        s.changes_per_session.mean,
        s.no_call_active.n,
        s.no_call_active.mean,
    )
}

/// One step of the JSON output (`steps[]`); `session` is its session's id.
pub fn step_json(plan: &Plan, session: &str, s: &Step) -> serde_json::Value {
    serde_json::json!({
        "line": s.line,
        "session": session,
        "t": s.t,
        "tool": s.called.map(|c| plan.tools[c].name.clone()),
        "active": s.hit,
        "score": s.score,
        "rank": s.rank,
        "active_count": s.active_count,
        "schema_tokens": s.schema_tokens,
        "initial": s.initial,
        "added": s.added.iter().map(|&i| plan.tools[i].name.as_str()).collect::<Vec<_>>(),
        "removed": s.removed.iter().map(|&i| plan.tools[i].name.as_str()).collect::<Vec<_>>(),
        "stage": s.stage,
    })
}

/// One step of the text output (one line, no newline).
pub fn step_text(plan: &Plan, s: &Step, max_names: usize) -> String {
    let what = match s.called {
        Some(c) => format!(
            "call {:<32} {} rank {:>3} score {:.3}",
            super::bounded::name(&plan.tools[c].name),
            if s.hit { "ACTIVE  " } else { "INACTIVE" },
            s.rank.unwrap_or(0),
            s.score.unwrap_or(0.0)
        ),
        None => format!("{:<54}", "(turn without a call)"),
    };
    let change = if s.initial {
        format!("initial list of {}", s.active_count)
    } else if s.added.is_empty() && s.removed.is_empty() {
        "no change".to_string()
    } else {
        let mut parts = Vec::new();
        if !s.added.is_empty() {
            parts.push(format!(
                "+{}{}",
                s.added.len(),
                names(plan, &s.added, max_names)
            ));
        }
        if !s.removed.is_empty() {
            parts.push(format!(
                "-{}{}",
                s.removed.len(),
                names(plan, &s.removed, max_names)
            ));
        }
        parts.join(" ")
    };
    format!(
        "  line {:>5} t={:<8} {} | active {:>4} | {}",
        s.line,
        super::bounded::number(s.t),
        what,
        s.active_count,
        change
    )
}
