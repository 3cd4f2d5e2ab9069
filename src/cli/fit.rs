//! `toolgate fit`: per-feature AUC on a trace, and a policy with fitted weights.

use std::path::PathBuf;

use toolgate::diag::{Diagnostic, ErrorKind};
use toolgate::load::load_policy;
use toolgate::replay::fit::{FitOptions, FitReport, fit};

use super::replay::{read_trace, replay_catalog, summary_line};
use super::{Fail, Format, PlanArgs};

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

/// Runs the fit and prints (and writes) its result.
pub fn run_fit(
    o: &mut String,
    args: &PlanArgs,
    trace_path: &str,
    opts: &FitOptions,
    out: Option<&PathBuf>,
    format: Format,
) -> Result<(), Fail> {
    let trace = read_trace(trace_path, opts.skip_invalid)?;
    let policy = load_policy(args.policy.as_deref()).map_err(Fail::Load)?;
    let catalog = replay_catalog(args)?;
    let report = fit(&policy, &catalog, &trace, opts)
        .map_err(|e| Fail::Input(format!("{trace_path}: {e}")))?;
    // A fitted policy that does not load is never written.
    let write = out.filter(|_| report.load_error.is_none());
    if let Some(path) = write {
        std::fs::write(path, &report.policy_text)
            .map_err(|e| Fail::Input(format!("cannot write {}: {e}", path.display())))?;
    }
    if format == Format::Json {
        let mut v = serde_json::to_value(&report).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.remove("policy_text");
            m.insert("written".into(), serde_json::json!(write));
        }
        w!(o, "{v}");
    } else {
        print_text(o, &report, trace_path, opts, write);
    }
    match report.load_error {
        Some(mut e) => {
            e.diagnostics.push(
                Diagnostic::bare(
                    ErrorKind::ExampleFailed,
                    format!(
                        "the fitted policy was not written: {} of the policy's [[examples]] fail under the fitted weights",
                        report.failing_examples.len()
                    ),
                )
                .with_help(
                    "rerun with --drop-failing-examples to write it without them, or edit the examples",
                ),
            );
            Err(Fail::Load(e))
        }
        None => Ok(()),
    }
}

fn print_text(
    o: &mut String,
    r: &FitReport,
    trace: &str,
    opts: &FitOptions,
    out: Option<&PathBuf>,
) {
    w!(
        o,
        "trace {trace}: {} rows (call x tool), {} of them in held-out sessions ({:.0}% of sessions by id hash)",
        r.rows,
        r.test_rows,
        100.0 * opts.holdout
    );
    w!(o);
    w!(
        o,
        "  {:<20} {:>7} {:>8}   {:<14} {:>9} {:>9} {:>9}",
        "feature",
        "AUC",
        "r",
        "weight",
        "before",
        "after",
        "log-odds"
    );
    for f in &r.features {
        let fitted = r.weights.iter().find(|w| w.feature == f.feature);
        w!(
            o,
            "  {:<20} {:>7} {:>8}   {:<14} {:>9} {:>9} {:>9}",
            f.feature,
            opt(f.auc),
            opt(f.r),
            f.weight.as_deref().unwrap_or("-"),
            fitted
                .map(|w| format!("{:.4}", w.before))
                .unwrap_or_else(|| "-".into()),
            fitted
                .map(|w| format!("{:.4}", w.after))
                .unwrap_or_else(|| "-".into()),
            fitted
                .map(|w| format!("{:.3}", w.coefficient))
                .unwrap_or_else(|| "-".into()),
        );
    }
    w!(
        o,
        "  AUC of the policy's score: {} | of the fitted predictor: train {}, held-out {} | intercept {:.3}",
        opt(r.score_auc),
        opt(r.fitted_auc_train),
        opt(r.fitted_auc_test),
        r.intercept
    );
    if !r.fixed_terms.is_empty() {
        w!(
            o,
            "  terms kept as they are (no named weight): {}",
            r.fixed_terms.join(", ")
        );
    }
    w!(
        o,
        "  threshold {} -> {} (target recall {:.1}% on the training sessions)",
        r.threshold.0,
        r.threshold.1,
        100.0 * r.target_recall
    );
    w!(o);
    w!(o, "training sessions (in-sample):");
    w!(o, "  before: {}", summary_line(&r.train.before));
    w!(o, "  after:  {}", summary_line(&r.train.after));
    match &r.test {
        Some(q) => {
            w!(
                o,
                "held-out sessions ({} of {}):",
                r.holdout_sessions,
                r.sessions
            );
            w!(o, "  before: {}", summary_line(&q.before));
            w!(o, "  after:  {}", summary_line(&q.after));
        }
        None => w!(
            o,
            "held-out sessions: none with a call ({} of {} session(s) held out at --holdout {}): the trace is too small to check the fit out of sample; record more sessions or raise --holdout",
            r.holdout_sessions,
            r.sessions,
            opts.holdout
        ),
    }
    if !r.failing_examples.is_empty() {
        w!(
            o,
            "examples that fail under the fitted weights ({}){}:",
            r.failing_examples.len(),
            if r.examples_dropped {
                ", dropped from the fitted policy"
            } else {
                ""
            }
        );
        for f in &r.failing_examples {
            w!(o, "  line {}: `{}`", f.line, f.name);
            for e in &f.errors {
                w!(o, "    {e}");
            }
        }
    }
    match out {
        Some(p) => w!(o, "wrote {}", p.display()),
        None if r.load_error.is_some() => {
            w!(
                o,
                "not written: the fitted policy does not load (see the errors)"
            )
        }
        None => w!(o, "(no --out: the fitted policy was not written)"),
    }
}
