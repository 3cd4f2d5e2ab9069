//! The weight fit on a trace of any size, read line by line (issue 28):
//! [`fit_stream`]. It reports what [`fit`] reports, with the feature matrix
//! never materialised whole:
//!
//! * **Passes.** The caller's first pass ([`index_trace`]) checks every line.
//!   Then two passes over the sessions as [`replay_sessions`] closes them
//!   (in parallel with the feature `parallel`). The first keeps each
//!   session's state and, before every call, prepares the context once
//!   ([`crate::eval::FeatureView`], via `walk_calls`) but scores no tool:
//!   it gives the rows (only the kept rows' features and scores are
//!   computed) and, per training call, the called tool's features. The
//!   second replays the input policy and, from the same evaluation, the
//!   fitted one ([`crate::eval::Activation::rescore`], via
//!   `replay_session_rescored`: the fitted policy differs only in the
//!   weights and the threshold): both policies' quality on both splits.
//!   The threshold needs no replay: the called
//!   tool's score under the fitted weights is the fitted formula on the
//!   features the first pass saw (features do not depend on the weights,
//!   and scores not on the previous activation), and the keys are counted in
//!   a histogram of the 10⁶ + 1 values a 6-decimal threshold can take
//!   ([`RecallThreshold`]), which gives the same threshold as
//!   [`threshold_for_recall`]. The training calls' features are spilled to a
//!   temporary file (80 bytes per call) between the two steps, so memory does
//!   not grow with them.
//! * **Sampling.** A (call, tool) row is kept with a fixed probability per
//!   class: `positive_rate` for the called tool, `negative_rate` for the
//!   others ([`Sampling::rates`]: both 1 when the trace has at most
//!   [`Sampling::max_rows`] rows, else at most a quarter of `max_rows` for
//!   the called tools and the rest for the others). Whether a row is kept is
//!   a hash of `(seed, line of the call, tool index)` ([`sampled`]), so it
//!   does not depend on the order in which sessions are replayed or on the
//!   number of threads. The regression, the AUCs, the correlations and the
//!   features' ranges (for the scale of the weights) are computed on the
//!   sample; `rows` and `test_rows` still count every row. With sampling:
//!   the regression's slopes are unbiased under per-class sampling and its
//!   intercept is corrected by `−ln(positive_rate / negative_rate)`; the L2
//!   penalty is multiplied by `negative_rate`, so it weighs against the
//!   sample's loss as it would against the whole matrix's; the AUCs are
//!   estimates (AUC depends only on each class's distribution); the
//!   correlations weigh each row by the inverse of its class's rate.
//!   [`FitReport::sample`] says so, with the rates and the seed.
//! * **Held-out split.** By a hash of the session id ([`is_holdout`]), as
//!   [`fit`]'s: each session's rows are labelled as the session closes.
//!
//! Without sampling the report is the same, bit for bit, as [`fit`]'s on the
//! same trace held in memory (`tests/fit_stream.rs`, and
//! `tests/replay_golden.rs` on the CLI's output).

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use super::*;
use crate::parse::tags::ToolSpec;
use crate::plan::N_FEATURES;
use crate::replay::auc::point_biserial_weighted;
use crate::replay::engine::{ReplayOptions, replay_session_rescored, tool_tokens, walk_calls};
use crate::replay::stats::SummaryAcc;
use crate::replay::stream::{ClosedSession, TraceIndex, replay_sessions};
use crate::replay::trace::{Event, TraceError};

/// Rows kept at most by default ([`Sampling::max_rows`]): about 100 MB of
/// rows, and at least the 593,142 rows of the whole BFCL pooled trace.
pub const DEFAULT_MAX_ROWS: usize = 1_000_000;

/// How [`fit_stream`] samples rows when a trace has too many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    /// About how many (call, tool) rows to keep at most (the expected
    /// sample size; the kept count varies around it by its square root).
    pub max_rows: usize,
    /// Seed of the hash that decides which rows are kept.
    pub seed: u64,
}

impl Default for Sampling {
    fn default() -> Sampling {
        Sampling {
            max_rows: DEFAULT_MAX_ROWS,
            seed: 0,
        }
    }
}

impl Sampling {
    /// The per-class rates `(positive_rate, negative_rate)`, each in
    /// `[0, 1]`, for a trace of `calls` tool calls with `negatives` not-called
    /// rows per call: `(1, 1)` when `calls × (1 + negatives) <= max_rows`;
    /// else the called tools get at most a quarter of `max_rows` and the
    /// others the rest.
    pub fn rates(&self, calls: usize, negatives: usize) -> (f64, f64) {
        let total = calls as f64 * (1 + negatives) as f64;
        let max = self.max_rows as f64;
        if total <= max {
            return (1.0, 1.0);
        }
        let pos_cap = (self.max_rows / 4).max(1) as f64;
        let rp = (pos_cap / calls.max(1) as f64).min(1.0);
        let neg_total = calls as f64 * negatives as f64;
        let rn = if neg_total > 0.0 {
            ((max - rp * calls as f64) / neg_total).clamp(0.0, 1.0)
        } else {
            1.0
        };
        (rp, rn)
    }
}

/// How the rows of a streamed fit were sampled ([`FitReport::sample`]).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SampleInfo {
    /// [`Sampling::max_rows`].
    pub max_rows: usize,
    /// [`Sampling::seed`].
    pub seed: u64,
    /// Probability that a called tool's row is kept.
    pub positive_rate: f64,
    /// Probability that another tool's row is kept.
    pub negative_rate: f64,
    /// Rows kept.
    pub sampled_rows: usize,
    /// Of which in held-out sessions.
    pub sampled_test_rows: usize,
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// Whether the row of tool `tool` at the call on trace line `line` is kept
/// at `rate`: always at a rate of 1 or more, never at 0 or less, else when
/// SplitMix64 of `(seed, line, tool)`, as a number in `[0, 1)`, is below
/// `rate`.
pub fn sampled(seed: u64, line: usize, tool: usize, rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    let h = splitmix64(splitmix64(seed ^ splitmix64(line as u64)) ^ tool as u64);
    ((h >> 11) as f64) * (1.0 / (1u64 << 53) as f64) < rate
}

/// The threshold of [`threshold_for_recall`] from counts instead of a
/// sorted list: one counter per value a threshold floored to 6 decimals
/// can take in `[0, 1]` (4 MB), whatever the number of calls.
#[derive(Debug, Clone)]
pub struct RecallThreshold {
    counts: Vec<u32>,
    calls: usize,
}

impl Default for RecallThreshold {
    fn default() -> RecallThreshold {
        RecallThreshold {
            counts: vec![0; 1_000_001],
            calls: 0,
        }
    }
}

impl RecallThreshold {
    /// Counts one call: its tool's `score` and the `factor` of its effective
    /// threshold (as in [`threshold_for_recall`]).
    pub fn add(&mut self, score: f64, factor: f64) {
        let key = if factor > 0.0 {
            score / factor
        } else {
            f64::INFINITY
        };
        let b = (key.clamp(0.0, 1.0) * 1e6).floor();
        // NaN (an undefined key) counts as the lowest value.
        let b = if b.is_nan() { 0 } else { b as usize };
        self.counts[b.min(1_000_000)] += 1;
        self.calls += 1;
    }

    /// The largest threshold (6 decimals, in `[0, 1]`) at which at least
    /// `target` of the counted calls are active; 0 without calls.
    pub fn threshold(&self, target: f64) -> f64 {
        if self.calls == 0 {
            return 0.0;
        }
        let need =
            ((target.clamp(0.0, 1.0) * self.calls as f64).ceil() as usize).clamp(1, self.calls);
        let mut seen = 0usize;
        for b in (0..self.counts.len()).rev() {
            seen += self.counts[b] as usize;
            if seen >= need {
                return b as f64 / 1e6;
            }
        }
        0.0
    }
}

/// The training calls' features and factors, in a temporary file (removed
/// on drop): `N_FEATURES + 1` little-endian `f64` per call.
struct Spill {
    path: PathBuf,
    out: Option<BufWriter<std::fs::File>>,
    calls: usize,
}

static SPILLS: AtomicUsize = AtomicUsize::new(0);

impl Spill {
    fn new() -> Result<Spill, String> {
        let path = std::env::temp_dir().join(format!(
            "toolgate-fit-{}-{}.bin",
            std::process::id(),
            SPILLS.fetch_add(1, Ordering::Relaxed)
        ));
        let f = std::fs::File::create(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(Spill {
            path,
            out: Some(BufWriter::with_capacity(1 << 16, f)),
            calls: 0,
        })
    }

    fn push(&mut self, rec: &[f64; N_FEATURES + 1]) -> Result<(), String> {
        let out = self.out.as_mut().expect("open until read back");
        for v in rec {
            out.write_all(&v.to_le_bytes())
                .map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        }
        self.calls += 1;
        Ok(())
    }

    /// Reads every record back, in the order written.
    fn read(&mut self, mut each: impl FnMut(&[f64; N_FEATURES + 1])) -> Result<(), String> {
        let err = |e: std::io::Error| format!("cannot read back {}: {e}", self.path.display());
        if let Some(mut out) = self.out.take() {
            out.flush().map_err(err)?;
        }
        let mut r =
            BufReader::with_capacity(1 << 16, std::fs::File::open(&self.path).map_err(err)?);
        let mut buf = [0u8; 8 * (N_FEATURES + 1)];
        let mut rec = [0.0f64; N_FEATURES + 1];
        for _ in 0..self.calls {
            r.read_exact(&mut buf).map_err(err)?;
            for (k, v) in rec.iter_mut().enumerate() {
                *v = f64::from_le_bytes(buf[8 * k..8 * k + 8].try_into().expect("8 bytes"));
            }
            each(&rec);
        }
        Ok(())
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        self.out = None;
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What the first pass keeps of one session.
struct FirstPass {
    rows: Rows,
    counted: usize,
    calls: Vec<[f64; N_FEATURES + 1]>,
    test: bool,
    has_call: bool,
}

/// Per-feature AUC and correlation over the sampled `rows`; correlations
/// weigh a row by `weights.0` (called tool) or `weights.1` (other tools):
/// the inverse sampling rates. With both weights 1, [`feature_stats`].
fn sampled_feature_stats(
    rows: &Rows,
    terms: &[WeightTerm],
    weights: (f64, f64),
) -> Vec<FeatureStat> {
    let mut out = feature_stats(rows, terms, |_| true);
    if weights != (1.0, 1.0) {
        for (f, s) in out.iter_mut().enumerate() {
            let x: Vec<f64> = rows.x.iter().map(|x| x[f]).collect();
            s.r = point_biserial_weighted(&x, &rows.y, weights);
        }
    }
    out
}

/// [`fit`] on a trace read line by line: `plan` is `policy` compiled with
/// `catalog`, `index` the first pass over the trace against it
/// ([`crate::replay::stream::index_trace`] with `opts.skip_invalid`), and
/// `open` opens the trace for each of the two further passes. See the
/// module documentation for what is sampled and what is exact. Errors: the
/// trace cannot be read again or changed between passes, the temporary
/// file cannot be written, or the fit itself fails as [`fit`] does.
pub fn fit_stream<R: BufRead>(
    (policy, plan, catalog): (&PolicySource, &Arc<Plan>, &[ToolSpec]),
    index: &TraceIndex,
    mut open: impl FnMut() -> Result<R, TraceError>,
    opts: &FitOptions,
    sampling: &Sampling,
) -> Result<FitReport, String> {
    let ropts = ReplayOptions {
        skip_invalid: opts.skip_invalid,
        keep_active: false,
    };
    let n = plan.tools.len();
    // The not-called rows per call, as `collect_rows` strides them.
    let stride = match opts.negatives {
        Some(k) if k > 0 && n > k + 1 => (n - 1).div_ceil(k),
        Some(0) => usize::MAX,
        _ => 1,
    };
    let per_call = match stride {
        usize::MAX => 0,
        s => n.div_ceil(s).min(n.saturating_sub(1)),
    };
    let (rp, rn) = sampling.rates(index.tool_calls, per_call);
    let seed = sampling.seed;
    let tokens = tool_tokens(plan);

    // First pass: the rows and the training calls' features; only the
    // features are computed (of the rows kept and of the called tool), no
    // score of a tool not kept, no active set.
    let first = |s: ClosedSession| -> Result<FirstPass, TraceError> {
        let test = is_holdout(&s.id, opts.holdout);
        let mut rows = Rows::default();
        let mut counted = 0usize;
        let mut calls = Vec::new();
        walk_calls(plan, &s.lines, &ropts, &mut Vec::new(), |line, c, view| {
            if !test {
                let mut rec = [0.0; N_FEATURES + 1];
                rec[..N_FEATURES].copy_from_slice(&view.features(c));
                rec[N_FEATURES] = view.threshold_factor;
                calls.push(rec);
            }
            let offset = line % stride.clamp(1, n.max(1));
            for i in 0..n {
                let pos = i == c;
                if !pos && (stride == usize::MAX || i % stride != offset) {
                    continue;
                }
                counted += 1;
                if !sampled(seed, line, i, if pos { rp } else { rn }) {
                    continue;
                }
                rows.x.push(view.features(i));
                rows.score.push(view.score(i));
                rows.y.push(pos);
                rows.test.push(test);
            }
        })?;
        Ok(FirstPass {
            rows,
            counted,
            calls,
            test,
            has_call: s
                .lines
                .iter()
                .any(|l| matches!(l.event, Event::ToolCall { .. })),
        })
    };
    let mut rows = Rows::default();
    let (mut total, mut total_test) = (0usize, 0usize);
    let (mut sessions, mut holdout_sessions, mut test_has_call) = (0usize, 0usize, false);
    let mut spill = Spill::new()?;
    let mut failure: Option<String> = None;
    replay_sessions(open().map_err(|e| e.to_string())?, index, first, |r| {
        let p = match r {
            Ok(p) if failure.is_none() => p,
            Ok(_) => return,
            Err(e) => {
                failure.get_or_insert(e.to_string());
                return;
            }
        };
        rows.x.extend(p.rows.x);
        rows.score.extend(p.rows.score);
        rows.y.extend(p.rows.y);
        rows.test.extend(p.rows.test);
        total += p.counted;
        let k = p.test as usize;
        if p.test {
            total_test += p.counted;
        }
        sessions += 1;
        holdout_sessions += k;
        test_has_call |= p.test && p.has_call;
        for rec in &p.calls {
            if let Err(e) = spill.push(rec) {
                failure.get_or_insert(e);
                return;
            }
        }
    })
    .map_err(|e| e.to_string())?;
    if let Some(e) = failure {
        return Err(e);
    }

    // The regression and the statistics, on the sample.
    let terms = weight_terms(policy, plan);
    let features = sampled_feature_stats(&rows, &terms, (1.0 / rp, 1.0 / rn));
    let score_auc = auc(&rows.score, &rows.y);
    let slots: Vec<usize> = terms.iter().map(|t| t.feature).collect();
    let l2 = if rn < 1.0 { opts.l2 * rn } else { opts.l2 };
    let (beta, intercept) = logistic(&rows, &slots, |i| !rows.test[i], l2, opts.max_iterations)?;
    let intercept = if (rp, rn) == (1.0, 1.0) {
        intercept
    } else {
        intercept - (rp / rn).ln()
    };
    let (fitted_auc_train, fitted_auc_test) = predictor_auc(&rows, &slots, &beta);
    let (weights, new_weights, fixed_terms) = fitted_weights(plan, &terms, &rows, &beta)?;

    // The threshold: the training calls' scores under the fitted weights.
    let name = policy.file.name.clone();
    let text_w = rewrite_policy(policy, &new_weights, None)?;
    let (_, plan_w) = plan_of(&text_w, &name, catalog)?;
    let (lo, hi) = plan_w.clamp;
    let mut keys = RecallThreshold::default();
    spill.read(|rec| {
        let raw = plan_w.formula.eval(&rec[..N_FEATURES], None);
        let score = if raw.is_nan() {
            lo
        } else {
            raw.min(hi).max(lo)
        };
        keys.add(score, rec[N_FEATURES]);
    })?;
    drop(spill);
    let threshold = keys.threshold(opts.target_recall);
    let Rewritten {
        text,
        plan_new,
        failing_examples,
        failing_properties,
        examples_dropped,
        load_error,
    } = rewritten(policy, catalog, &new_weights, threshold, opts)?;

    // Second pass: both policies' quality, the fitted one rescoring the
    // input policy's features at every step (its policy differs only in
    // the weights and the threshold).
    let second = |s: ClosedSession| -> Result<([SummaryAcc; 2], usize, bool), TraceError> {
        let mut skipped = Vec::new();
        let [(steps_a, sum_a), (steps_b, sum_b)] = replay_session_rescored(
            (plan, &plan_new),
            (s.index, &s.id),
            &s.lines,
            &ropts,
            &tokens,
            &mut skipped,
        )?;
        let mut acc: [SummaryAcc; 2] = Default::default();
        acc[0].add_session(&steps_a, &sum_a);
        acc[1].add_session(&steps_b, &sum_b);
        Ok((acc, skipped.len(), is_holdout(&s.id, opts.holdout)))
    };
    let mut before = [SummaryAcc::default(), SummaryAcc::default()];
    let mut after = [SummaryAcc::default(), SummaryAcc::default()];
    let mut skipped_before = [0usize; 2];
    let mut failure: Option<String> = None;
    replay_sessions(
        open().map_err(|e| e.to_string())?,
        index,
        second,
        |r| match r {
            Ok((acc, skipped, test)) => {
                before[test as usize].merge(&acc[0]);
                after[test as usize].merge(&acc[1]);
                skipped_before[test as usize] += skipped;
            }
            Err(e) => {
                failure.get_or_insert(e.to_string());
            }
        },
    )
    .map_err(|e| e.to_string())?;
    if let Some(e) = failure {
        return Err(e);
    }
    // The same catalog and stages: the same lines skipped.
    let skipped_after = skipped_before;
    let quality = |k: usize| SplitQuality {
        before: before[k].finish(plan, skipped_before[k]),
        after: after[k].finish(&plan_new, skipped_after[k]),
    };
    let sample = ((rp, rn) != (1.0, 1.0)).then(|| SampleInfo {
        max_rows: sampling.max_rows,
        seed,
        positive_rate: rp,
        negative_rate: rn,
        sampled_rows: rows.y.len(),
        sampled_test_rows: rows.test.iter().filter(|t| **t).count(),
    });
    Ok(FitReport {
        rows: total,
        test_rows: total_test,
        features,
        score_auc,
        fitted_auc_train,
        fitted_auc_test,
        intercept,
        weights,
        fixed_terms,
        threshold: (plan.threshold, threshold),
        target_recall: opts.target_recall,
        train: quality(0),
        test: test_has_call.then(|| quality(1)),
        sessions,
        holdout_sessions,
        policy_text: text,
        failing_examples,
        failing_properties,
        examples_dropped,
        load_error,
        sample,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_threshold_is_the_sorted_one() {
        let mut x = 0x1234_5678u64;
        let mut next = || {
            x = splitmix64(x);
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in [1usize, 2, 7, 100, 1000] {
            let calls: Vec<(f64, f64)> = (0..n)
                .map(|k| {
                    let s = if k % 5 == 0 { 1.0 } else { next() };
                    let f = if k % 3 == 0 { 0.6 } else { 1.0 };
                    (s, f)
                })
                .collect();
            let mut h = RecallThreshold::default();
            for &(s, f) in &calls {
                h.add(s, f);
            }
            for t in [0.0, 0.3, 0.5, 0.9, 0.95, 1.0] {
                assert_eq!(h.threshold(t), threshold_for_recall(&calls, t), "{n} {t}");
            }
        }
        assert_eq!(RecallThreshold::default().threshold(0.9), 0.0);
    }

    #[test]
    fn rates_keep_everything_that_fits() {
        let s = Sampling {
            max_rows: 1000,
            seed: 0,
        };
        assert_eq!(s.rates(10, 99), (1.0, 1.0));
        let (rp, rn) = s.rates(100, 99);
        assert_eq!(rp, 1.0);
        assert!((100.0 * rp + 9900.0 * rn - 1000.0).abs() < 1e-9);
        let (rp, rn) = s.rates(10_000, 999);
        assert_eq!(rp, 0.025);
        assert!((10_000.0 * rp + 9_990_000.0 * rn - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn sampling_keeps_about_the_rate() {
        let kept = (0..100_000)
            .filter(|&i| sampled(7, i / 100, i % 100, 0.1))
            .count();
        assert!((9_500..10_500).contains(&kept), "{kept}");
        assert!((0..1000).all(|i| sampled(7, i, 3, 1.0)));
        assert!((0..1000).all(|i| !sampled(7, i, 3, 0.0)));
        // another seed keeps other rows
        let same = (0..10_000)
            .filter(|&i| sampled(7, i, 0, 0.5) == sampled(8, i, 0, 0.5))
            .count();
        assert!((4_500..5_500).contains(&same), "{same}");
    }
}
