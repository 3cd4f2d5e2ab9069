//! `toolgate compare`: replay one trace under two policies, side by side.

use toolgate::replay::curve::CurveData;
use toolgate::replay::engine::Replay;
use toolgate::replay::stats::{Paired, Summary, paired, summarize};

use super::Format;

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn row(o: &mut String, label: &str, a: String, b: String) {
    w!(o, "  {label:<30} {a:>22} {b:>22}");
}

/// Thresholds swept for the plot (`CURVE_STEPS + 1` points over [0, 1]).
const CURVE_STEPS: usize = 200;

/// Draws `compare --plot`: both policies' recall / active-set curves.
pub fn plot_compare(
    path: &std::path::Path,
    trace_name: &str,
    a: (&Replay, &CurveData),
    b: (&Replay, &CurveData),
) -> Result<(), String> {
    let (sa, sb) = (summarize(a.0), summarize(b.0));
    let (ca, cb) = (a.1.curve(CURVE_STEPS), b.1.curve(CURVE_STEPS));
    let file = |r: &Replay| r.plan.sources.first().cloned().unwrap_or_default();
    let series = [
        super::plot::Series {
            label: format!("A: {} ({})", sa.policy, file(a.0)),
            curve: &ca,
            summary: &sa,
        },
        super::plot::Series {
            label: format!("B: {} ({})", sb.policy, file(b.0)),
            curve: &cb,
            summary: &sb,
        },
    ];
    let name = std::path::Path::new(trace_name)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| trace_name.to_string());
    super::plot::draw(
        path,
        &format!("{name}: {} calls, {} tools", sa.calls, sa.tools),
        &series,
    )
}

/// Prints the comparison of two replays of the same trace.
pub fn print_compare(
    o: &mut String,
    trace_name: &str,
    a: &toolgate::replay::engine::Replay,
    b: &toolgate::replay::engine::Replay,
    format: Format,
    show: usize,
) {
    let sa = summarize(a);
    let sb = summarize(b);
    let p = paired(a, b);
    if format == Format::Json {
        w!(
            o,
            "{}",
            serde_json::json!({"trace": trace_name, "a": sa, "b": sb, "paired": p})
        );
        return;
    }
    print_text(o, trace_name, &sa, &sb, &p, show);
}

fn print_text(o: &mut String, trace: &str, a: &Summary, b: &Summary, p: &Paired, show: usize) {
    w!(
        o,
        "trace {trace}: {} sessions, {} calls, {} invalid line(s) skipped",
        a.sessions,
        a.calls,
        a.skipped.max(b.skipped)
    );
    w!(o);
    row(
        o,
        "",
        format!("A: {}", a.policy),
        format!("B: {}", b.policy),
    );
    row(o, "catalog tools", a.tools.to_string(), b.tools.to_string());
    row(o, "calls", a.calls.to_string(), b.calls.to_string());
    row(
        o,
        "recall (tool active at call)",
        pct(a.recall),
        pct(b.recall),
    );
    for k in ["top1", "top5", "top10", "top20"] {
        row(
            o,
            &format!("  called tool ranked {k}"),
            pct(a.recall_at[k]),
            pct(b.recall_at[k]),
        );
    }
    row(
        o,
        "active set: mean",
        format!("{:.2}", a.active.mean),
        format!("{:.2}", b.active.mean),
    );
    row(
        o,
        "  median / p95 / max",
        format!("{} / {} / {}", a.active.median, a.active.p95, a.active.max),
        format!("{} / {} / {}", b.active.median, b.active.p95, b.active.max),
    );
    row(
        o,
        "schema tokens per step: mean",
        format!("{:.0}", a.schema_tokens.mean),
        format!("{:.0}", b.schema_tokens.mean),
    );
    row(
        o,
        "  p95",
        format!("{:.0}", a.schema_tokens.p95),
        format!("{:.0}", b.schema_tokens.p95),
    );
    row(
        o,
        "list changes per session",
        format!("{:.2}", a.changes_per_session.mean),
        format!("{:.2}", b.changes_per_session.mean),
    );
    row(
        o,
        "no-call turns: active mean",
        format!("{:.1} (n={})", a.no_call_active.mean, a.no_call_active.n),
        format!("{:.1} (n={})", b.no_call_active.mean, b.no_call_active.n),
    );
    w!(o, "  by stage (recall, mean active set):");
    let mut stages: Vec<&str> = a.by_stage.iter().map(|s| s.stage.as_str()).collect();
    for s in &b.by_stage {
        if !stages.contains(&s.stage.as_str()) {
            stages.push(&s.stage);
        }
    }
    for st in stages {
        let cell = |x: &Summary| {
            x.by_stage
                .iter()
                .find(|s| s.stage == st)
                .map(|s| format!("{} ({:.1}) n={}", pct(s.recall), s.mean_active, s.calls))
                .unwrap_or_else(|| "-".into())
        };
        row(o, &format!("  {st}"), cell(a), cell(b));
    }
    w!(o);
    w!(o, "paired, B - A, over {} calls:", p.calls);
    w!(
        o,
        "  recall      {:+.1} pts  [95% CI {:+.1}, {:+.1}]  McNemar exact p = {:.3e}  (active in both {}, A only {}, B only {}, neither {})",
        100.0 * p.recall_diff,
        100.0 * p.recall_diff_ci.0,
        100.0 * p.recall_diff_ci.1,
        p.mcnemar_p,
        p.both,
        p.a_only,
        p.b_only,
        p.neither
    );
    w!(
        o,
        "  active set  {:+.2} tools  [95% CI {:+.2}, {:+.2}]",
        p.size_diff,
        p.size_diff_ci.0,
        p.size_diff_ci.1
    );
    if !p.discordant.is_empty() && show == 0 {
        w!(
            o,
            "calls where exactly one policy had the tool active: {} (list them with --show N)",
            p.discordant.len()
        );
    } else if !p.discordant.is_empty() {
        w!(
            o,
            "calls where exactly one policy had the tool active ({}{}):",
            p.discordant.len(),
            if p.discordant.len() > show {
                format!(", first {show}")
            } else {
                String::new()
            }
        );
        for d in p.discordant.iter().take(show) {
            w!(
                o,
                "  line {:>5}  {:<24} {:<40} active in {} only (sizes A {}, B {})",
                d.line,
                d.session,
                d.tool,
                d.active_in.to_uppercase(),
                d.size_a,
                d.size_b
            );
        }
    }
}
