//! Choosing the absolute relevance floor from traces
//! (`toolgate fit --fit floor`).
//!
//! A floor of `[features.keyword_match.relevance]` — `min_score` (raw BM25),
//! `min_score_idf` (raw BM25 in units of `idf₁`), `min_coverage` (IDF-weighted share of the query a tool covers) or
//! `min_share` (share of the query's attainable score) — gives
//! `keyword_match = 0` to every tool below it, so a request that nothing
//! fits exposes little. Raising it trades recall on calls for smaller sets on
//! turns without a call. Given a trace with calls (and, ideally, no-call
//! turns: questions nothing should answer), the floor is chosen on the
//! training sessions (the same hash split as the weight fit):
//!
//! 1. replay with that floor at 0 and record, per call, whether the called
//!    tool was active and its measure (raw score, coverage or share);
//! 2. the floor is the largest value at which at least `target` of the
//!    training calls keep an active tool whose measure reaches the floor.
//!    For `min_score` and `min_score_idf` that is exact: the best tool always passes when
//!    anything does, so the floor never changes the others' `keyword_match`.
//!    For `min_coverage` and `min_share` the best raw score may fail while
//!    another tool passes; the divisor then drops and the passing tools'
//!    `keyword_match` rises, so recall is *at least* the target;
//! 3. the policy text is rewritten with only that value changed, and both
//!    policies are replayed on the training and the held-out sessions, calls
//!    and no-call turns alike, so the effect is measured, not assumed.

use std::io::BufRead;
use std::sync::Arc;

use serde::Serialize;

use crate::compile::compile;
use crate::diag::SourceFile;
use crate::load::load_data_files;
use crate::parse::policy::{PolicySource, parse_policy};
use crate::parse::tags::ToolSpec;
use crate::plan::Plan;
use crate::replay::engine::{ReplayOptions, replay, replay_session, replay_with, tool_tokens};
use crate::replay::fit::{format_number, is_holdout};
use crate::replay::stats::{Summary, SummaryAcc, summarize};
use crate::replay::stream::{ClosedSession, TraceIndex, replay_sessions};
use crate::replay::trace::{Trace, TraceError};

/// Recall and set sizes of the policy before and after, on one split.
#[derive(Debug, Clone, Serialize)]
pub struct FloorSplit {
    /// The input policy.
    pub before: Summary,
    /// The policy with the chosen floor.
    pub after: Summary,
}

/// Which floor of `[features.keyword_match.relevance]` [`fit_floor`] chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FloorKey {
    /// `min_score`: raw BM25 (grows with the catalog's size).
    #[serde(rename = "min_score")]
    Score,
    /// `min_score_idf`: raw BM25 in units of `idf₁` (does not grow with the catalog).
    #[serde(rename = "min_score_idf")]
    ScoreIdf,
    /// `min_coverage`: IDF-weighted share of the query's terms, in \[0,1\].
    #[serde(rename = "min_coverage")]
    Coverage,
    /// `min_share`: share of the query's attainable BM25 score, in \[0,1\].
    #[serde(rename = "min_share")]
    Share,
}

impl FloorKey {
    /// The policy key.
    pub fn key(self) -> &'static str {
        match self {
            FloorKey::Score => "min_score",
            FloorKey::ScoreIdf => "min_score_idf",
            FloorKey::Coverage => "min_coverage",
            FloorKey::Share => "min_share",
        }
    }
}

/// What [`fit_floor`] found.
#[derive(Debug, Clone, Serialize)]
pub struct FloorReport {
    /// The key that was fitted.
    pub key: FloorKey,
    /// Its value before and after.
    pub floor: (f64, f64),
    /// Target recall on the training calls.
    pub target_recall: f64,
    /// Training calls, and how many were active with the floor at 0.
    pub train_calls: (usize, usize),
    /// Quality on the training sessions.
    pub train: FloorSplit,
    /// Quality on the held-out sessions.
    pub test: FloorSplit,
    /// The new policy text (only `min_score` changed).
    #[serde(skip)]
    pub policy_text: String,
}

/// The largest floor at which `target` of the calls stay active: `calls`
/// holds, per call, whether its tool was active with no floor and its raw
/// score. Floored to 4 decimals; 0 when the target cannot be reached.
pub fn floor_for_recall(calls: &[(bool, f64)], target: f64) -> f64 {
    let raws: Vec<f64> = calls.iter().filter(|c| c.0).map(|c| c.1).collect();
    floor_for_active(raws, calls.len(), target)
}

/// [`floor_for_recall`] from the raw scores of the calls whose tool was
/// active (`raws`, any order) and the number of calls (`calls`, at least
/// `raws.len()`).
pub fn floor_for_active(mut raws: Vec<f64>, calls: usize, target: f64) -> f64 {
    if calls == 0 {
        return 0.0;
    }
    let need = (target.clamp(0.0, 1.0) * calls as f64).ceil() as usize;
    if need == 0 {
        return raws.iter().copied().fold(0.0, f64::max);
    }
    if raws.len() < need {
        return 0.0;
    }
    raws.sort_by(|a, b| b.total_cmp(a));
    ((raws[need - 1] * 1e4).floor() / 1e4).max(0.0)
}

fn plan_of(text: &str, name: &str, catalog: &[ToolSpec]) -> Result<Arc<Plan>, String> {
    let mut src = parse_policy(SourceFile::new(name, text)).map_err(|e| e.to_string())?;
    load_data_files(&mut src).map_err(|e| e.to_string())?;
    src.examples.clear();
    compile(&src, catalog.to_vec())
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

fn floor_of(policy: &PolicySource, key: FloorKey) -> Option<crate::parse::policy::Sp<f64>> {
    let r = policy.features.bm25.as_ref()?.relevance.as_ref()?;
    Some(match key {
        FloorKey::Score => r.min_score.clone(),
        FloorKey::ScoreIdf => r.min_score_idf.clone(),
        FloorKey::Coverage => r.min_coverage.clone(),
        FloorKey::Share => r.min_share.clone(),
    })
}

fn with_floor(policy: &PolicySource, key: FloorKey, floor: f64) -> Result<String, String> {
    let span = floor_of(policy, key)
        .filter(|s| {
            policy
                .file
                .text
                .get(s.span.clone())
                .is_some_and(|t| t.parse::<f64>().is_ok())
        })
        .ok_or_else(|| format!("the policy needs `{} = <number>` in [features.keyword_match.relevance] (method = \"bm25\") for the floor to be fitted", key.key()))?
        .span;
    let mut text = policy.file.text.to_string();
    text.replace_range(span, &format_number(floor));
    Ok(text)
}

/// The measure `key` compares with its floor, for tool `c` of `act`.
fn measure(key: FloorKey, idf1: f64, act: &crate::eval::Activation, c: usize) -> f64 {
    let (coverage, share) = act.keyword_relevance(c);
    match key {
        FloorKey::Score => act.keyword_raw(c),
        FloorKey::ScoreIdf => act.keyword_raw(c) / idf1,
        FloorKey::Coverage => coverage,
        FloorKey::Share => share,
    }
}

/// `idf₁` of a plan's BM25 index (1 without one), the unit of `min_score_idf`.
fn idf1_of(plan: &Plan) -> f64 {
    plan.bm25
        .as_ref()
        .map(|i| i.idf_of_df(1))
        .filter(|x| *x > 0.0)
        .unwrap_or(1.0)
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

/// Chooses the floor `key` for `target` recall on the training sessions of
/// `trace` (held out: the share `holdout`, by a hash of the session id).
/// The policy must set `key` to a number (its other floors stay as they are).
pub fn fit_floor(
    policy: &PolicySource,
    catalog: &[ToolSpec],
    trace: &Trace,
    key: FloorKey,
    target: f64,
    holdout: f64,
    opts: &ReplayOptions,
) -> Result<FloorReport, String> {
    let name = policy.file.name.clone();
    let before_floor = floor_of(policy, key).map(|s| s.value).unwrap_or(0.0);
    let zero = plan_of(&with_floor(policy, key, 0.0)?, &name, catalog)?;
    let idf1 = idf1_of(&zero);
    let train = split(trace, holdout, false);
    let test = split(trace, holdout, true);
    let mut calls = Vec::new();
    replay_with(&zero, &train, opts, |step, act| {
        if let Some(c) = step.called {
            calls.push((step.hit, measure(key, idf1, act, c)));
        }
    })
    .map_err(|e| e.to_string())?;
    let floor = floor_for_recall(&calls, target);
    let text = with_floor(policy, key, floor)?;
    let before = plan_of(&policy.file.text, &name, catalog)?;
    let after = plan_of(&text, &name, catalog)?;
    let quality = |t: &Trace| -> Result<FloorSplit, String> {
        Ok(FloorSplit {
            before: summarize(&replay(&before, t, opts).map_err(|e| e.to_string())?),
            after: summarize(&replay(&after, t, opts).map_err(|e| e.to_string())?),
        })
    };
    Ok(FloorReport {
        key,
        floor: (before_floor, floor),
        target_recall: target,
        train_calls: (calls.len(), calls.iter().filter(|c| c.0).count()),
        train: quality(&train)?,
        test: quality(&test)?,
        policy_text: text,
    })
}

/// [`fit_floor`] on a trace read line by line: `index` is the first pass
/// over it ([`crate::replay::stream::index_trace`], with
/// `opts.skip_invalid`; no plan is needed: each replay checks the lines
/// against its plan, as the in-memory replays do) and `open` opens the trace
/// for each of the two further passes, in which sessions are replayed as
/// [`replay_sessions`] closes them (in parallel with the feature
/// `parallel`):
///
/// 1. the policy with the floor at 0, on the training sessions: per call
///    whether its tool was active, and its measure when it was;
/// 2. the input policy and the floored one, on every session: each split's
///    summary, accumulated ([`SummaryAcc`]) without keeping the steps.
///
/// Memory holds the open sessions' lines, the summaries' histograms and
/// one `f64` per training call whose tool was active (8 MB per million
/// calls; [`floor_for_recall`] needs them sorted), not the trace. The report
/// is the same as [`fit_floor`]'s on the trace held in memory, for any
/// number of threads. Errors: as [`fit_floor`]'s (the first invalid line of
/// the first training session, then of the first held-out session, without
/// `skip_invalid`), or the trace cannot be read again.
#[allow(clippy::too_many_arguments)]
pub fn fit_floor_stream<R: BufRead>(
    (policy, catalog): (&PolicySource, &[ToolSpec]),
    index: &TraceIndex,
    mut open: impl FnMut() -> Result<R, TraceError>,
    key: FloorKey,
    target: f64,
    holdout: f64,
    opts: &ReplayOptions,
) -> Result<FloorReport, String> {
    let name = policy.file.name.clone();
    let before_floor = floor_of(policy, key).map(|s| s.value).unwrap_or(0.0);
    let zero = plan_of(&with_floor(policy, key, 0.0)?, &name, catalog)?;
    let idf1 = idf1_of(&zero);
    let tokens = tool_tokens(&zero);

    // Pass 1: the floor at 0, on the training sessions.
    let first = |s: ClosedSession| -> Option<Result<(usize, Vec<f64>), TraceError>> {
        if is_holdout(&s.id, holdout) {
            return None;
        }
        let mut calls = 0usize;
        let mut active = Vec::new();
        let r = replay_session(
            &zero,
            (s.index, &s.id),
            &s.lines,
            opts,
            &tokens,
            &mut Vec::new(),
            |step, act| {
                if let Some(c) = step.called {
                    calls += 1;
                    if step.hit {
                        active.push(measure(key, idf1, act, c));
                    }
                }
            },
        );
        Some(r.map(|_| (calls, active)))
    };
    let (mut calls, mut active) = (0usize, Vec::new());
    let mut failure: Option<TraceError> = None;
    replay_sessions(
        open().map_err(|e| e.to_string())?,
        index,
        first,
        |r| match r {
            Some(Ok((n, a))) if failure.is_none() => {
                calls += n;
                active.extend(a);
            }
            Some(Err(e)) => {
                failure.get_or_insert(e);
            }
            _ => {}
        },
    )
    .map_err(|e| e.to_string())?;
    if let Some(e) = failure {
        return Err(e.to_string());
    }
    let active_calls = active.len();
    let floor = floor_for_active(active, calls, target);
    let text = with_floor(policy, key, floor)?;
    let before = plan_of(&policy.file.text, &name, catalog)?;
    let after = plan_of(&text, &name, catalog)?;

    // Pass 2: both policies on both splits.
    let (tokens_b, tokens_a) = (tool_tokens(&before), tool_tokens(&after));
    type Split = ([SummaryAcc; 2], [usize; 2]);
    let second = |s: ClosedSession| -> Result<(bool, Split), TraceError> {
        let mut out: Split = Default::default();
        for (k, (plan, tokens)) in [(&before, &tokens_b), (&after, &tokens_a)]
            .into_iter()
            .enumerate()
        {
            let mut skipped = Vec::new();
            let (steps, summary) = replay_session(
                plan,
                (s.index, &s.id),
                &s.lines,
                opts,
                tokens,
                &mut skipped,
                |_, _| {},
            )?;
            out.0[k].add_session(&steps, &summary);
            out.1[k] = skipped.len();
        }
        Ok((is_holdout(&s.id, holdout), out))
    };
    // [split][policy]
    let mut acc: [Split; 2] = Default::default();
    // The first error, in order of first appearance: of a held-out
    // session (the training ones were replayed without error in pass 1,
    // against a plan with the same catalog and stages).
    let mut failure: Option<TraceError> = None;
    replay_sessions(
        open().map_err(|e| e.to_string())?,
        index,
        second,
        |r| match r {
            Ok((test, (s, n))) => {
                let a = &mut acc[test as usize];
                for k in 0..2 {
                    a.0[k].merge(&s[k]);
                    a.1[k] += n[k];
                }
            }
            Err(e) => {
                failure.get_or_insert(e);
            }
        },
    )
    .map_err(|e| e.to_string())?;
    if let Some(e) = failure {
        return Err(e.to_string());
    }
    let quality = |(s, n): &Split| FloorSplit {
        before: s[0].finish(&before, n[0]),
        after: s[1].finish(&after, n[1]),
    };
    Ok(FloorReport {
        key,
        floor: (before_floor, floor),
        target_recall: target,
        train_calls: (calls, active_calls),
        train: quality(&acc[0]),
        test: quality(&acc[1]),
        policy_text: text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_by_hand() {
        let calls = [(true, 9.0), (true, 3.0), (false, 50.0), (true, 5.5)];
        // 2 of 4 must stay: the 2nd largest raw of the active calls, 5.5.
        assert_eq!(floor_for_recall(&calls, 0.5), 5.5);
        // 3 of 4: all three active calls, floor 3.
        assert_eq!(floor_for_recall(&calls, 0.75), 3.0);
        // 4 of 4 is out of reach: no floor.
        assert_eq!(floor_for_recall(&calls, 1.0), 0.0);
        assert_eq!(floor_for_recall(&[], 0.9), 0.0);
    }
}
