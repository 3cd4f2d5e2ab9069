//! The weight fit itself (feature `fit`): the logistic regression
//! (linfa-logistic) and [`fit`], the whole-matrix fit of a trace held in
//! memory (the exact reference of [`super::stream::fit_stream`]).

use super::*;
use crate::compile::compile;
use crate::diag::SourceFile;
use crate::load::parse_with_data;
use crate::parse::tags::ToolSpec;
use crate::replay::engine::replay;
use crate::replay::stats::{Summary, summarize};
use linfa::prelude::*;
use linfa_logistic::LogisticRegression;
use ndarray::{Array1, Array2};

/// Logistic regression of `rows.y` on the given feature slots, over the rows
/// selected by `keep`. Returns the coefficients (in `features` order) and
/// the intercept, oriented so that a positive coefficient means "more likely
/// to be the called tool".
pub fn logistic(
    rows: &Rows,
    features: &[usize],
    keep: impl Fn(usize) -> bool,
    l2: f64,
    max_iterations: u64,
) -> Result<(Vec<f64>, f64), String> {
    let idx: Vec<usize> = (0..rows.y.len()).filter(|&i| keep(i)).collect();
    if features.is_empty() {
        return Err("the formula has no `weight * feature` term to fit".into());
    }
    let mut x = Array2::<f64>::zeros((idx.len(), features.len()));
    for (r, &i) in idx.iter().enumerate() {
        for (c, &f) in features.iter().enumerate() {
            x[[r, c]] = rows.x[i][f];
        }
    }
    let y: Array1<bool> = idx.iter().map(|&i| rows.y[i]).collect();
    if !y.iter().any(|b| *b) || y.iter().all(|b| *b) {
        return Err("the training rows need both called and not-called tools".into());
    }
    let data = Dataset::new(x, y);
    let model = LogisticRegression::default()
        .alpha(l2)
        .max_iterations(max_iterations)
        .fit(&data)
        .map_err(|e| format!("logistic regression failed: {e}"))?;
    let flip = if model.labels().pos.class { 1.0 } else { -1.0 };
    Ok((
        model.params().iter().map(|b| b * flip).collect(),
        model.intercept() * flip,
    ))
}

/// Options of [`fit`].
#[derive(Debug, Clone, Copy)]
pub struct FitOptions {
    /// Recall the threshold is chosen for, on the training sessions.
    pub target_recall: f64,
    /// Share of sessions held out (by a hash of their id).
    pub holdout: f64,
    /// L2 penalty of the regression.
    pub l2: f64,
    /// Iterations of the solver (L-BFGS).
    pub max_iterations: u64,
    /// Not-called tools kept per call (all when `None`).
    pub negatives: Option<usize>,
    /// Skip invalid trace lines.
    pub skip_invalid: bool,
    /// Drop the policy's `[[examples]]` that fail under the fitted
    /// weights from the fitted policy (otherwise the fitted policy does not
    /// load, [`FitReport::load_error`], and should not be written).
    pub drop_failing_examples: bool,
}

/// A policy example that does not hold under the fitted weights.
#[derive(Debug, Clone, Serialize)]
pub struct ExampleFailure {
    /// The example's `name`.
    pub name: String,
    /// 1-based line of the example in the policy file.
    pub line: usize,
    /// What fails, each as `file:line:column: message`.
    pub errors: Vec<String>,
    /// `file:line:column` of a failing property (its `[[properties]]`
    /// table); empty for an example, whose errors name it.
    #[serde(skip)]
    pub location: String,
}

/// A weight before and after the fit.
#[derive(Debug, Clone, Serialize)]
pub struct FittedWeight {
    /// Weight name.
    pub weight: String,
    /// Feature it multiplies.
    pub feature: &'static str,
    /// Logistic coefficient of the feature (log-odds per unit).
    pub coefficient: f64,
    /// Value in the input policy.
    pub before: f64,
    /// Value written.
    pub after: f64,
}

/// Selection quality of one policy on one split.
#[derive(Debug, Clone, Serialize)]
pub struct SplitQuality {
    /// Input policy.
    pub before: Summary,
    /// Fitted policy.
    pub after: Summary,
}

/// Everything [`fit`] found.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    /// Rows (call × tool) analysed.
    pub rows: usize,
    /// Of which held out.
    pub test_rows: usize,
    /// Per-feature AUC and correlation over all rows.
    pub features: Vec<FeatureStat>,
    /// AUC of the input policy's score, over all rows.
    pub score_auc: Option<f64>,
    /// AUC of the fitted linear predictor on training rows.
    pub fitted_auc_train: Option<f64>,
    /// AUC of the fitted linear predictor on held-out rows.
    pub fitted_auc_test: Option<f64>,
    /// Intercept of the regression.
    pub intercept: f64,
    /// Weights before and after.
    pub weights: Vec<FittedWeight>,
    /// Formula terms left as they were (no named weight).
    pub fixed_terms: Vec<String>,
    /// Threshold before and after.
    pub threshold: (f64, f64),
    /// Target recall.
    pub target_recall: f64,
    /// Quality on the training sessions.
    pub train: SplitQuality,
    /// Quality on the held-out sessions; `None` when no call of the
    /// trace falls in a held-out session (too few sessions for the
    /// `holdout` share), so nothing was checked out of sample.
    pub test: Option<SplitQuality>,
    /// Sessions in the trace.
    pub sessions: usize,
    /// Of which held out.
    pub holdout_sessions: usize,
    /// The new policy file (without the failing examples when
    /// [`FitOptions::drop_failing_examples`] is set).
    pub policy_text: String,
    /// The input policy's `[[examples]]` that fail under the fitted weights.
    pub failing_examples: Vec<ExampleFailure>,
    /// The input policy's declared `[[properties]]` that fail under the
    /// fitted weights (checked as `toolgate check` does; empty without
    /// the `proptest` feature). Like failing examples, they keep the
    /// policy from being written unless dropped.
    pub failing_properties: Vec<ExampleFailure>,
    /// Whether the failing examples and properties were removed from
    /// `policy_text`.
    pub examples_dropped: bool,
    /// Why `policy_text` does not load (`None` when it loads, examples
    /// included): do not write it. Set when examples fail and were not
    /// dropped.
    #[serde(skip)]
    pub load_error: Option<crate::diag::LoadError>,
    /// How the rows were sampled, when they were (the streamed fit on a
    /// trace with more rows than [`Sampling::max_rows`]); `None` when every
    /// row was used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleInfo>,
}

fn split(trace: &Trace, holdout: f64, test: bool) -> Trace {
    Trace {
        lines: trace
            .lines
            .iter()
            .filter(|l| is_holdout(&l.session, holdout) == test)
            .cloned()
            .collect(),
        skipped: Vec::new(),
    }
}

pub(super) fn plan_of(
    text: &str,
    name: &str,
    catalog: &[ToolSpec],
) -> Result<(PolicySource, Arc<Plan>), String> {
    let mut src = parse_with_data(SourceFile::new(name, text)).map_err(|e| e.to_string())?;
    // The policy's examples were written for its old weights; whether they
    // still hold is checked separately (`FitReport::failing_examples`).
    src.examples.clear();
    let plan = compile(&src, catalog.to_vec()).map_err(|e| e.to_string())?;
    Ok((src, Arc::new(plan)))
}

/// Analyses and fits `policy` on `trace` with the catalog `catalog`.
pub fn fit(
    policy: &PolicySource,
    catalog: &[ToolSpec],
    trace: &Trace,
    opts: &FitOptions,
) -> Result<FitReport, String> {
    let name = policy.file.name.clone();
    let plan = Arc::new(compile(policy, catalog.to_vec()).map_err(|e| e.to_string())?);
    let ropts = ReplayOptions {
        skip_invalid: opts.skip_invalid,
        keep_active: false,
    };
    let rows = collect_rows(&plan, trace, &ropts, opts.holdout, opts.negatives)
        .map_err(|e| e.to_string())?;
    let terms = weight_terms(policy, &plan);
    let features = feature_stats(&rows, &terms, |_| true);
    let score_auc = auc(&rows.score, &rows.y);
    let slots: Vec<usize> = terms.iter().map(|t| t.feature).collect();
    let (beta, intercept) = logistic(
        &rows,
        &slots,
        |i| !rows.test[i],
        opts.l2,
        opts.max_iterations,
    )?;
    let (fitted_auc_train, fitted_auc_test) = predictor_auc(&rows, &slots, &beta);
    let (weights, new_weights, fixed_terms) = fitted_weights(&plan, &terms, &rows, &beta)?;

    // Threshold on the training sessions, with the new weights.
    let train_trace = split(trace, opts.holdout, false);
    let test_trace = split(trace, opts.holdout, true);
    let text_w = rewrite_policy(policy, &new_weights, None)?;
    let (_, plan_w) = plan_of(&text_w, &name, catalog)?;
    let mut calls = Vec::new();
    replay_with(&plan_w, &train_trace, &ropts, |step, act| {
        if let Some(c) = step.called {
            let factor = if act.threshold > 0.0 {
                act.effective_threshold / act.threshold
            } else {
                1.0
            };
            calls.push((act.tools[c].score, factor));
        }
    })
    .map_err(|e| e.to_string())?;
    let threshold = threshold_for_recall(&calls, opts.target_recall);
    let Rewritten {
        text,
        plan_new,
        failing_examples,
        failing_properties,
        examples_dropped,
        load_error,
    } = rewritten(policy, catalog, &new_weights, threshold, opts)?;
    let quality = |t: &Trace| -> Result<SplitQuality, String> {
        let a = replay(&plan, t, &ropts).map_err(|e| e.to_string())?;
        let b = replay(&plan_new, t, &ropts).map_err(|e| e.to_string())?;
        Ok(SplitQuality {
            before: summarize(&a),
            after: summarize(&b),
        })
    };
    Ok(FitReport {
        rows: rows.y.len(),
        test_rows: rows.test.iter().filter(|t| **t).count(),
        features,
        score_auc,
        fitted_auc_train,
        fitted_auc_test,
        intercept,
        weights,
        fixed_terms,
        threshold: (plan.threshold, threshold),
        target_recall: opts.target_recall,
        train: quality(&train_trace)?,
        test: if test_trace
            .lines
            .iter()
            .any(|l| matches!(l.event, crate::replay::trace::Event::ToolCall { .. }))
        {
            Some(quality(&test_trace)?)
        } else {
            None
        },
        sessions: trace.sessions().len(),
        holdout_sessions: trace
            .sessions()
            .iter()
            .filter(|(id, _)| is_holdout(id, opts.holdout))
            .count(),
        policy_text: text,
        failing_examples,
        failing_properties,
        examples_dropped,
        load_error,
        sample: None,
    })
}

/// AUC of the fitted linear predictor (`beta` on the feature `slots`) on
/// the training rows and on the held-out rows of `rows`.
pub(super) fn predictor_auc(
    rows: &Rows,
    slots: &[usize],
    beta: &[f64],
) -> (Option<f64>, Option<f64>) {
    let linear = |i: usize| -> f64 { slots.iter().zip(beta).map(|(&f, b)| b * rows.x[i][f]).sum() };
    let pick = |test: bool| -> (Vec<f64>, Vec<bool>) {
        (0..rows.y.len())
            .filter(|&i| rows.test[i] == test)
            .map(|i| (linear(i), rows.y[i]))
            .unzip()
    };
    let (s_train, y_train) = pick(false);
    let (s_test, y_test) = pick(true);
    (auc(&s_train, &y_train), auc(&s_test, &y_test))
}

/// The new weights from the coefficients `beta` of the weighted `terms`:
/// scaled so that the weighted terms add up to at most 1 on the ranges the
/// features take in `rows`. Returns the weights before and after, the
/// `(name, value)` pairs to write, and the formula terms left as they are.
pub(super) type NewWeights = (Vec<FittedWeight>, Vec<(String, f64)>, Vec<String>);

/// See [`NewWeights`].
pub(super) fn fitted_weights(
    plan: &Plan,
    terms: &[WeightTerm],
    rows: &Rows,
    beta: &[f64],
) -> Result<NewWeights, String> {
    let slots: Vec<usize> = terms.iter().map(|t| t.feature).collect();
    // Scale: the weighted terms add up to at most 1 on the observed ranges.
    let mut top = 0.0;
    for (&f, b) in slots.iter().zip(beta) {
        let hi = rows.x.iter().map(|x| x[f]).fold(0.0, f64::max);
        let lo = rows.x.iter().map(|x| x[f]).fold(f64::INFINITY, f64::min);
        top += if *b > 0.0 { b * hi } else { b * lo.min(0.0) };
    }
    if top.is_nan() || top <= 0.0 {
        return Err(
            "no feature of the formula predicts the called tool (every fitted coefficient is <= 0)"
                .into(),
        );
    }
    let scale = 1.0 / top;
    let weights: Vec<FittedWeight> = terms
        .iter()
        .zip(beta)
        .map(|(t, b)| FittedWeight {
            weight: t.weight.clone(),
            feature: FEATURES[t.feature],
            coefficient: *b,
            before: t.value,
            after: t.sign * b * scale,
        })
        .collect();
    let new_weights: Vec<(String, f64)> = weights
        .iter()
        .map(|w| (w.weight.clone(), w.after))
        .collect();
    let fixed_terms: Vec<String> = plan
        .formula
        .terms
        .iter()
        .filter(|t| {
            !terms
                .iter()
                .any(|w| t.features.as_slice() == [w.feature as u8] && t.linear.is_some())
        })
        .map(|t| t.text.clone())
        .collect();
    Ok((weights, new_weights, fixed_terms))
}

/// The fitted policy: its text, its plan, the examples and properties
/// that fail under it (dropped from the text with
/// [`FitOptions::drop_failing_examples`]) and why the text does not load.
pub(super) struct Rewritten {
    pub text: String,
    pub plan_new: Arc<Plan>,
    pub failing_examples: Vec<ExampleFailure>,
    pub failing_properties: Vec<ExampleFailure>,
    pub examples_dropped: bool,
    pub load_error: Option<crate::diag::LoadError>,
}

/// `policy` with the `new_weights` and `threshold` written in; see [`Rewritten`].
pub(super) fn rewritten(
    policy: &PolicySource,
    catalog: &[ToolSpec],
    new_weights: &[(String, f64)],
    threshold: f64,
    opts: &FitOptions,
) -> Result<Rewritten, String> {
    let name = policy.file.name.clone();
    let text = rewrite_policy(policy, new_weights, Some(threshold))?;
    let (_, plan_new) = plan_of(&text, &name, catalog)?;
    let failing_examples = failing_examples(&text, &name, catalog)?;
    let failing_properties = failing_properties(&text, &name, catalog)?;
    let examples_dropped = opts.drop_failing_examples
        && !(failing_examples.is_empty() && failing_properties.is_empty());
    let text = if examples_dropped {
        let tables: Vec<(usize, &str)> = failing_examples
            .iter()
            .map(|f| (f.line, "examples"))
            .chain(failing_properties.iter().map(|f| (f.line, "properties")))
            .collect();
        drop_tables(&text, &tables)?
    } else {
        text
    };
    let load_error = parse_with_data(SourceFile::new(name.as_str(), text.as_str()))
        .and_then(|src| compile(&src, catalog.to_vec()))
        .err();
    Ok(Rewritten {
        text,
        plan_new,
        failing_examples,
        failing_properties,
        examples_dropped,
        load_error,
    })
}

/// The declared properties of the policy `text` that fail on its own
/// plan (examples left out), checked as `toolgate check` checks them.
#[cfg(feature = "proptest")]
fn failing_properties(
    text: &str,
    name: &str,
    catalog: &[ToolSpec],
) -> Result<Vec<ExampleFailure>, String> {
    use crate::compile::witness::CatalogBounds;
    use crate::fuzz::properties::{CheckOptions, check_properties};
    let (src, plan) = plan_of(text, name, catalog)?;
    if plan.properties.is_empty() {
        return Ok(Vec::new());
    }
    let cb = CatalogBounds::of(&plan);
    Ok(check_properties(&src, &plan, &cb, CheckOptions::default())
        .into_iter()
        .filter(|r| !r.holds)
        .map(|r| {
            // `location` is `file:line:column`.
            let mut parts = r.location.rsplitn(3, ':');
            let line = parts.nth(1).and_then(|l| l.parse().ok()).unwrap_or(0);
            ExampleFailure {
                name: r.name,
                line,
                errors: vec![format!("{}: {}", r.location, r.detail)],
                location: r.location,
            }
        })
        .collect())
}

/// Without the `proptest` feature properties are not checked.
#[cfg(not(feature = "proptest"))]
fn failing_properties(
    _text: &str,
    _name: &str,
    _catalog: &[ToolSpec],
) -> Result<Vec<ExampleFailure>, String> {
    Ok(Vec::new())
}

/// The examples of the policy `text` that fail on its own plan, each
/// checked alone (so every failure is attributed to its example).
fn failing_examples(
    text: &str,
    name: &str,
    catalog: &[ToolSpec],
) -> Result<Vec<ExampleFailure>, String> {
    let src = parse_with_data(SourceFile::new(name, text)).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for ex in &src.examples {
        let mut one = src.clone();
        one.examples = vec![ex.clone()];
        if let Err(e) = compile(&one, catalog.to_vec()) {
            out.push(ExampleFailure {
                name: ex.name.clone(),
                line: text[..ex.span.start.min(text.len())].matches('\n').count() + 1,
                errors: e.diagnostics.iter().map(|d| d.to_string()).collect(),
                location: String::new(),
            });
        }
    }
    Ok(out)
}
