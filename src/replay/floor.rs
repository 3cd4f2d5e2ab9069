//! Choosing the absolute relevance floor from traces
//! (`toolgate fit --fit floor`).
//!
//! `[features.keyword_match.relevance] min_score` gives `keyword_match = 0`
//! to every tool whose raw BM25 score is below it, so a request that nothing
//! fits exposes little. Raising it trades recall on calls for smaller sets on
//! turns without a call. Given a trace with calls (and, ideally, no-call
//! turns: questions nothing should answer), the floor is chosen on the
//! training sessions (the same hash split as the weight fit):
//!
//! 1. replay with the floor at 0 and record, per call, whether the called
//!    tool was active and its raw BM25 score;
//! 2. the floor is the largest value at which at least `target` of the
//!    training calls stay active (a call stays active iff it was and its raw
//!    score reaches the floor: the floor removes tools below it and never
//!    changes the others' `keyword_match`, since the best tool always passes
//!    when anything does);
//! 3. the policy text is rewritten with only that value changed, and both
//!    policies are replayed on the training and the held-out sessions, calls
//!    and no-call turns alike, so the effect is measured, not assumed.

use std::sync::Arc;

use serde::Serialize;

use crate::compile::compile;
use crate::diag::SourceFile;
use crate::load::load_data_files;
use crate::parse::policy::{PolicySource, parse_policy};
use crate::parse::tags::ToolSpec;
use crate::plan::Plan;
use crate::replay::engine::{ReplayOptions, replay, replay_with};
use crate::replay::fit::{format_number, is_holdout};
use crate::replay::stats::{Summary, summarize};
use crate::replay::trace::Trace;

/// Recall and set sizes of the policy before and after, on one split.
#[derive(Debug, Clone, Serialize)]
pub struct FloorSplit {
    /// The input policy.
    pub before: Summary,
    /// The policy with the chosen floor.
    pub after: Summary,
}

/// What [`fit_floor`] found.
#[derive(Debug, Clone, Serialize)]
pub struct FloorReport {
    /// `min_score` before and after.
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
    if calls.is_empty() {
        return 0.0;
    }
    let need = (target.clamp(0.0, 1.0) * calls.len() as f64).ceil() as usize;
    let mut raws: Vec<f64> = calls.iter().filter(|c| c.0).map(|c| c.1).collect();
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

fn with_floor(policy: &PolicySource, floor: f64) -> Result<String, String> {
    let span = policy
        .features
        .bm25
        .as_ref()
        .and_then(|b| b.relevance.as_ref())
        .map(|r| r.min_score.clone())
        .filter(|s| {
            policy
                .file
                .text
                .get(s.span.clone())
                .is_some_and(|t| t.parse::<f64>().is_ok())
        })
        .ok_or("the policy needs `min_score = <number>` in [features.keyword_match.relevance] (method = \"bm25\") for the floor to be fitted")?
        .span;
    let mut text = policy.file.text.to_string();
    text.replace_range(span, &format_number(floor));
    Ok(text)
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

/// Chooses `min_score` for `target` recall on the training sessions of
/// `trace` (held out: the share `holdout`, by a hash of the session id).
pub fn fit_floor(
    policy: &PolicySource,
    catalog: &[ToolSpec],
    trace: &Trace,
    target: f64,
    holdout: f64,
    opts: &ReplayOptions,
) -> Result<FloorReport, String> {
    let name = policy.file.name.clone();
    let before_floor = policy
        .features
        .bm25
        .as_ref()
        .and_then(|b| b.relevance.as_ref())
        .map(|r| r.min_score.value)
        .unwrap_or(0.0);
    let zero = plan_of(&with_floor(policy, 0.0)?, &name, catalog)?;
    let train = split(trace, holdout, false);
    let test = split(trace, holdout, true);
    let mut calls = Vec::new();
    replay_with(&zero, &train, opts, |step, act| {
        if let Some(c) = step.called {
            calls.push((step.hit, act.keyword_raw(c)));
        }
    })
    .map_err(|e| e.to_string())?;
    let floor = floor_for_recall(&calls, target);
    let text = with_floor(policy, floor)?;
    let before = plan_of(&policy.file.text, &name, catalog)?;
    let after = plan_of(&text, &name, catalog)?;
    let quality = |t: &Trace| -> Result<FloorSplit, String> {
        Ok(FloorSplit {
            before: summarize(&replay(&before, t, opts).map_err(|e| e.to_string())?),
            after: summarize(&replay(&after, t, opts).map_err(|e| e.to_string())?),
        })
    };
    Ok(FloorReport {
        floor: (before_floor, floor),
        target_recall: target,
        train_calls: (calls.len(), calls.iter().filter(|c| c.0).count()),
        train: quality(&train)?,
        test: quality(&test)?,
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
