//! `toolgate fit`: per-feature AUC on a trace, and a policy with fitted weights.

use std::path::PathBuf;

use toolgate::diag::ErrorKind;
use toolgate::load::load_policy;
use toolgate::replay::engine::ReplayOptions;
use toolgate::replay::fit::{ExampleFailure, FitOptions, FitReport, Sampling, fit_stream};
use toolgate::replay::floor::{FloorKey, FloorReport, fit_floor_stream};
use toolgate::replay::stream::TraceIndex;
use toolgate::replay::transitions::learn_transitions_stream;

use super::replay::{replay_catalog, summary_line};
use super::stream::TraceFile;
use super::{Fail, Format, PlanArgs};
use toolgate::replay::fit::format_number;

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

/// The fitted policy's text as written at `out`: its data-file references
/// still name the input policy's files.
fn relocated(text: &str, args: &PlanArgs, out: &std::path::Path) -> String {
    match &args.policy {
        Some(from) => toolgate::load::relocate_data_files(text, from, out),
        None => text.to_string(),
    }
}

/// What `fit` fits.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq)]
pub enum FitWhat {
    /// The weights of `weight * feature` terms (logistic regression) and the threshold.
    Weights,
    /// An absolute relevance floor of `[features.keyword_match.relevance]`
    /// (which one: `--floor`).
    Floor,
}

/// Which relevance floor `fit --fit floor` chooses.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq)]
pub enum FloorWhich {
    /// `min_score`: raw BM25 (grows with the catalog's size; fit it on the catalog it serves).
    #[value(name = "min-score")]
    Score,
    /// `min_score_idf`: raw BM25 in units of the rarest term's IDF (follows the catalog's size).
    #[value(name = "min-score-idf")]
    ScoreIdf,
    /// `min_coverage`: IDF-weighted share of the query's terms a tool covers (scale-free).
    #[value(name = "min-coverage")]
    Coverage,
    /// `min_share`: share of the query's attainable BM25 score (scale-free).
    #[value(name = "min-share")]
    Share,
}

impl From<FloorWhich> for FloorKey {
    fn from(w: FloorWhich) -> FloorKey {
        match w {
            FloorWhich::Score => FloorKey::Score,
            FloorWhich::ScoreIdf => FloorKey::ScoreIdf,
            FloorWhich::Coverage => FloorKey::Coverage,
            FloorWhich::Share => FloorKey::Share,
        }
    }
}

/// The request beyond [`FitOptions`].
pub struct FitRequest<'a> {
    /// Weights or floor.
    pub what: FitWhat,
    /// With [`FitWhat::Floor`]: which floor.
    pub floor: FloorWhich,
    /// Where to write the learned transitions, if asked.
    pub transitions_out: Option<&'a PathBuf>,
    /// How the weight fit samples rows of a large trace.
    pub sampling: Sampling,
}

/// Runs the fit and prints (and writes) its result.
pub fn run_fit(
    o: &mut String,
    args: &PlanArgs,
    trace_path: &str,
    opts: &FitOptions,
    out: Option<&PathBuf>,
    req: &FitRequest<'_>,
    format: Format,
) -> Result<(), Fail> {
    // Every pass reads the trace line by line (bounded memory).
    if req.what == FitWhat::Weights {
        let policy = load_policy(args.policy.as_deref()).map_err(Fail::Load)?;
        let catalog = replay_catalog(args)?;
        let file = TraceFile::open(trace_path)?;
        if let Some(path) = req.transitions_out {
            let index = file.index(trace_path, opts.skip_invalid, &[])?;
            TraceFile::needs_calls(trace_path, &index, catalog.len(), "fit")?;
            write_transitions(o, (&file, &index), trace_path, opts, path, format)?;
        }
        let plan = toolgate::compile::compile(&policy, catalog.clone())
            .map(std::sync::Arc::new)
            .map_err(|e| Fail::Input(format!("{trace_path}: {e}")))?;
        let index = file.index(trace_path, opts.skip_invalid, &[&plan])?;
        TraceFile::needs_calls(trace_path, &index, catalog.len(), "fit")?;
        let report = fit_stream(
            (&policy, &plan, &catalog),
            &index,
            || file.open_reader(),
            opts,
            &req.sampling,
        )
        .map_err(|e| Fail::Input(format!("{trace_path}: {e}")))?;
        return report_fit(o, args, report, trace_path, opts, out, format);
    }
    // --fit floor: the trace's syntax is checked before the policy is read.
    let file = TraceFile::open(trace_path)?;
    let index = file.index(trace_path, opts.skip_invalid, &[])?;
    let policy = load_policy(args.policy.as_deref()).map_err(Fail::Load)?;
    let catalog = replay_catalog(args)?;
    if let Some(path) = req.transitions_out {
        write_transitions(o, (&file, &index), trace_path, opts, path, format)?;
    }
    let ropts = ReplayOptions {
        skip_invalid: opts.skip_invalid,
        keep_active: false,
    };
    let report = fit_floor_stream(
        (&policy, &catalog),
        &index,
        || file.open_reader(),
        req.floor.into(),
        opts.target_recall,
        opts.holdout,
        &ropts,
    )
    .map_err(|e| Fail::Input(format!("{trace_path}: {e}")))?;
    if let Some(path) = out {
        let text = relocated(&report.policy_text, args, path);
        std::fs::write(path, text)
            .map_err(|e| Fail::Input(format!("cannot write {}: {e}", path.display())))?;
    }
    if format == Format::Json {
        let mut v = serde_json::to_value(&report).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("written".into(), serde_json::json!(out));
        }
        w!(o, "{v}");
    } else {
        print_floor(o, &report, trace_path, opts, out);
    }
    Ok(())
}

/// Writes the transitions of the training sessions of the trace (`file`,
/// indexed as `index`) to `path`.
fn write_transitions(
    o: &mut String,
    (file, index): (&TraceFile, &TraceIndex),
    trace_path: &str,
    opts: &FitOptions,
    path: &std::path::Path,
    format: Format,
) -> Result<(), Fail> {
    let reader = file
        .open_reader()
        .map_err(|e| Fail::Input(format!("{trace_path}: {e}")))?;
    let counts = learn_transitions_stream(reader, index, opts.holdout)
        .map_err(|e| Fail::Input(format!("{trace_path}: {e}")))?;
    let source = format!(
        "From {trace_path}: the training sessions ({:.0}% held out by a hash of the session id).",
        100.0 * opts.holdout
    );
    std::fs::write(path, counts.to_toml(&source))
        .map_err(|e| Fail::Input(format!("cannot write {}: {e}", path.display())))?;
    if format == Format::Text {
        w!(
            o,
            "wrote {}: {} transitions from {} training sessions",
            path.display(),
            counts.pairs,
            counts.sessions
        );
    }
    Ok(())
}

/// Prints the weight fit's report and writes the fitted policy when it loads.
fn report_fit(
    o: &mut String,
    args: &PlanArgs,
    report: FitReport,
    trace_path: &str,
    opts: &FitOptions,
    out: Option<&PathBuf>,
    format: Format,
) -> Result<(), Fail> {
    // A fitted policy that does not load, or whose declared properties fail,
    // is never written.
    let properties_fail = !report.failing_properties.is_empty() && !report.examples_dropped;
    let write = out.filter(|_| report.load_error.is_none() && !properties_fail);
    if let Some(path) = write {
        let text = relocated(&report.policy_text, args, path);
        std::fs::write(path, text)
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
    // Why nothing was written, once on stderr; the failing examples and
    // properties are listed (once each) on stdout, so only the other load
    // problems of the fitted policy are rendered as errors.
    let examples = report.failing_examples.len();
    let properties = report.failing_properties.len();
    let why = match (&report.load_error, properties_fail) {
        (Some(_), _) if examples > 0 => format!(
            "{examples} of the policy's [[examples]] fail under the fitted weights (listed above); rerun with --drop-failing-examples to write it without them, or edit the examples"
        ),
        (Some(_), _) => "it does not load".to_string(),
        (None, true) => format!(
            "{properties} of the policy's [[properties]] fail under the fitted weights (listed above); rerun with --drop-failing-examples to write it without them, or edit the properties"
        ),
        (None, false) => return Ok(()),
    };
    let others = report.load_error.map(|mut e| {
        e.diagnostics.retain(|d| d.kind != ErrorKind::ExampleFailed);
        e
    });
    Err(Fail::NotWritten(
        others.filter(|e| !e.diagnostics.is_empty()),
        format!("the fitted policy was not written: {why}"),
    ))
}

fn print_floor(
    o: &mut String,
    r: &FloorReport,
    trace: &str,
    opts: &FitOptions,
    out: Option<&PathBuf>,
) {
    w!(
        o,
        "trace {trace}: relevance floor for {:.1}% recall on the training sessions ({:.0}% held out by id hash)",
        100.0 * r.target_recall,
        100.0 * opts.holdout
    );
    w!(
        o,
        "  {} {} -> {}  ({} training calls, {} active with no floor)",
        r.key.key(),
        format_number(r.floor.0),
        format_number(r.floor.1),
        r.train_calls.0,
        r.train_calls.1
    );
    for (name, q) in [("training", &r.train), ("held-out", &r.test)] {
        w!(o, "{name} sessions:");
        w!(o, "  before: {}", summary_line(&q.before));
        w!(o, "  after:  {}", summary_line(&q.after));
    }
    match out {
        Some(p) => w!(o, "wrote {}", p.display()),
        None => w!(o, "(no --out: the policy was not written)"),
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
    if let Some(s) = &r.sample {
        w!(
            o,
            "  sampled {} rows ({} held out) for the regression, the AUCs and r: the called tool's row at rate {:.4}, the others' at rate {:.6} (seed {}, --max-rows {})",
            s.sampled_rows,
            s.sampled_test_rows,
            s.positive_rate,
            s.negative_rate,
            s.seed,
            s.max_rows
        );
    }
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
    print_failures(o, "examples", &r.failing_examples, r.examples_dropped);
    print_failures(
        o,
        "declared properties",
        &r.failing_properties,
        r.examples_dropped,
    );
    match out {
        Some(p) => w!(o, "wrote {}", p.display()),
        None if r.load_error.is_some()
            || (!r.failing_properties.is_empty() && !r.examples_dropped) =>
        {
            w!(o, "not written (see the error)")
        }
        None => w!(o, "(no --out: the fitted policy was not written)"),
    }
}

/// Lists the examples or properties (`what`) that fail under the fitted
/// weights, each with its line and errors; nothing when there are none.
fn print_failures(o: &mut String, what: &str, failures: &[ExampleFailure], dropped: bool) {
    if failures.is_empty() {
        return;
    }
    w!(
        o,
        "{what} that fail under the fitted weights ({}){}:",
        failures.len(),
        if dropped {
            ", dropped from the fitted policy"
        } else {
            ""
        }
    );
    // Each failure once, at the place that fails (its `file:line:column`),
    // with its name.
    let kind = if what == "examples" {
        "example"
    } else {
        "property"
    };
    for f in failures {
        let named = format!("`{}`", f.name);
        for e in &f.errors {
            if e.contains(&named) {
                w!(o, "  {e}");
            } else if let Some(detail) = e.strip_prefix(&format!("{}: ", f.location)) {
                w!(o, "  {}: {kind} {named}: {detail}", f.location);
            } else {
                w!(o, "  {kind} {named} (line {}): {e}", f.line);
            }
        }
        if f.errors.is_empty() {
            w!(o, "  {kind} {named} (line {})", f.line);
        }
    }
}
