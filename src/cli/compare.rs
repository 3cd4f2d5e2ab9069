//! `toolgate compare`: replay one trace under two policies, side by side.

use toolgate::replay::curve::CurvePoint;
use toolgate::replay::stats::{Paired, Summary};

use super::Format;
use super::bounded::name;

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// A p-value as people read it: `< 0.001`, else 3 decimals below 0.01 and
/// 2 above (`0.0039` prints as `0.004`, `1` as `1.00`).
pub fn p_value(p: f64) -> String {
    if p.is_nan() {
        "-".into()
    } else if p < 0.001 {
        "< 0.001".into()
    } else if p < 0.01 {
        format!("= {p:.3}")
    } else {
        format!("= {:.2}", p.min(1.0))
    }
}

/// The column labels: the policy names, or their files when the names are
/// the same (a copy of a policy with one weight changed keeps its name).
pub fn labels(a: &toolgate::Plan, b: &toolgate::Plan) -> (String, String) {
    let file = |p: &toolgate::Plan| p.sources.first().cloned().unwrap_or_default();
    let (a, b) = if a.policy_name != b.policy_name {
        (a.policy_name.clone(), b.policy_name.clone())
    } else if file(a) != file(b) {
        (file(a), file(b))
    } else {
        (a.policy_name.clone(), b.policy_name.clone())
    };
    // (a policy's `name` is any string: clipped, `super::bounded`)
    (name(&a).into_owned(), name(&b).into_owned())
}

/// Rows of a two-column table, printed with widths that fit every cell.
#[derive(Default)]
struct Table {
    rows: Vec<(String, String, String)>,
}

impl Table {
    fn row(&mut self, label: &str, a: String, b: String) {
        self.rows.push((label.to_string(), a, b));
    }

    fn print(&self, o: &mut String) {
        let w = |f: fn(&(String, String, String)) -> &String| {
            self.rows
                .iter()
                .map(|r| f(r).chars().count())
                .max()
                .unwrap_or(0)
                .min(super::report::MAX_COLUMN)
        };
        let (wl, wa, wb) = (w(|r| &r.0), w(|r| &r.1).max(12), w(|r| &r.2).max(12));
        for (l, a, b) in &self.rows {
            let line = format!("  {l:<wl$}   {a:>wa$}   {b:>wb$}");
            w!(o, "{}", line.trim_end());
        }
    }
}

/// Thresholds swept for the plot (`CURVE_STEPS + 1` points over [0, 1]).
pub const CURVE_STEPS: usize = 200;

/// Draws `compare --plot`: both policies' recall / active-set curves, each
/// with its plan, its summary (the operating point) and its points.
pub fn plot_curves(
    path: &std::path::Path,
    trace_name: &str,
    a: (&toolgate::Plan, &Summary, &[CurvePoint]),
    b: (&toolgate::Plan, &Summary, &[CurvePoint]),
) -> Result<(), String> {
    let file = |p: &toolgate::Plan| p.sources.first().cloned().unwrap_or_default();
    let series = [
        super::plot::Series {
            label: format!("A: {} ({})", a.1.policy, file(a.0)),
            curve: a.2,
            summary: a.1,
        },
        super::plot::Series {
            label: format!("B: {} ({})", b.1.policy, file(b.0)),
            curve: b.2,
            summary: b.1,
        },
    ];
    let name = std::path::Path::new(trace_name)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| trace_name.to_string());
    super::plot::draw(
        path,
        &format!("{name}: {} calls, {} tools", a.1.calls, a.1.tools),
        &series,
    )
}

/// Prints a comparison from its summaries and paired numbers; `discordant`
/// is the number of discordant calls (`paired.discordant` may hold only the
/// first `show` of them in the text format).
pub fn print_summaries(
    o: &mut String,
    trace_name: &str,
    (a, sa): (&toolgate::Plan, &Summary),
    (b, sb): (&toolgate::Plan, &Summary),
    (p, discordant): (&Paired, usize),
    format: Format,
    show: usize,
) {
    let (la, lb) = labels(a, b);
    if format == Format::Json {
        w!(
            o,
            "{}",
            serde_json::json!({
                "trace": trace_name,
                "labels": {"a": la, "b": lb},
                "files": {"a": a.sources.first(), "b": b.sources.first()},
                "a": sa,
                "b": sb,
                "paired": p
            })
        );
        return;
    }
    print_text(o, trace_name, (sa, &la), (sb, &lb), (p, discordant), show);
}

fn print_text(
    o: &mut String,
    trace: &str,
    (a, la): (&Summary, &str),
    (b, lb): (&Summary, &str),
    (p, discordant): (&Paired, usize),
    show: usize,
) {
    w!(
        o,
        "trace {trace}: {} sessions, {} calls, {} invalid line(s) skipped",
        a.sessions,
        a.calls,
        a.skipped.max(b.skipped)
    );
    w!(o);
    let mut t = Table::default();
    t.row("", format!("A: {la}"), format!("B: {lb}"));
    t.row("catalog tools", a.tools.to_string(), b.tools.to_string());
    t.row("calls", a.calls.to_string(), b.calls.to_string());
    t.row("recall (tool active at call)", pct(a.recall), pct(b.recall));
    for k in ["top1", "top5", "top10", "top20"] {
        t.row(
            &format!("  called tool ranked {k}"),
            pct(a.recall_at[k]),
            pct(b.recall_at[k]),
        );
    }
    t.row(
        "active set: mean",
        format!("{:.2}", a.active.mean),
        format!("{:.2}", b.active.mean),
    );
    t.row(
        "  median / p95 / max",
        format!("{} / {} / {}", a.active.median, a.active.p95, a.active.max),
        format!("{} / {} / {}", b.active.median, b.active.p95, b.active.max),
    );
    t.row(
        "schema tokens per step: mean",
        format!("{:.0}", a.schema_tokens.mean),
        format!("{:.0}", b.schema_tokens.mean),
    );
    t.row(
        "  p95",
        format!("{:.0}", a.schema_tokens.p95),
        format!("{:.0}", b.schema_tokens.p95),
    );
    t.row(
        "list changes per session",
        format!("{:.2}", a.changes_per_session.mean),
        format!("{:.2}", b.changes_per_session.mean),
    );
    t.row(
        "no-call turns: active mean",
        format!("{:.1} (n={})", a.no_call_active.mean, a.no_call_active.n),
        format!("{:.1} (n={})", b.no_call_active.mean, b.no_call_active.n),
    );
    t.row(
        "by stage (recall, mean active set):",
        String::new(),
        String::new(),
    );
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
        t.row(&format!("  {st}"), cell(a), cell(b));
    }
    t.print(o);
    w!(o);
    w!(o, "paired, B - A, over {} calls:", p.calls);
    w!(
        o,
        "  recall      {:+.1} pts  [95% CI {:+.1}, {:+.1}]  McNemar exact p {}  (active in both {}, A only {}, B only {}, neither {})",
        100.0 * p.recall_diff,
        100.0 * p.recall_diff_ci.0,
        100.0 * p.recall_diff_ci.1,
        p_value(p.mcnemar_p),
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
    if discordant > 0 && show == 0 {
        w!(
            o,
            "calls where exactly one policy had the tool active: {} (list them with --show N)",
            discordant
        );
    } else if discordant > 0 {
        w!(
            o,
            "calls where exactly one policy had the tool active ({}{}):",
            discordant,
            if discordant > show {
                format!(", first {show}")
            } else {
                String::new()
            }
        );
        let shown = || p.discordant.iter().take(show);
        let cap = super::report::MAX_COLUMN;
        let ws = shown()
            .map(|d| name(&d.session).chars().count())
            .max()
            .unwrap_or(0)
            .min(cap);
        let wt = shown()
            .map(|d| name(&d.tool).chars().count())
            .max()
            .unwrap_or(0)
            .min(cap);
        let wn = shown().map(|d| d.line.to_string().len()).max().unwrap_or(0);
        for d in shown() {
            w!(
                o,
                "  line {:>wn$}  {:<ws$}  {:<wt$}  active in {} only (sizes A {}, B {})",
                d.line,
                name(&d.session),
                name(&d.tool),
                d.active_in.to_uppercase(),
                d.size_a,
                d.size_b
            );
        }
        let listed = p.discordant.len().min(show);
        if discordant > listed {
            w!(o, "  {}", toolgate::diag::more(discordant - listed));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::p_value;

    #[test]
    fn p_values_read_as_people_write_them() {
        assert_eq!(p_value(0.00390625), "= 0.004");
        assert_eq!(p_value(0.0004), "< 0.001");
        assert_eq!(p_value(1.0), "= 1.00");
        assert_eq!(p_value(0.0625), "= 0.06");
        assert_eq!(p_value(f64::NAN), "-");
    }
}
