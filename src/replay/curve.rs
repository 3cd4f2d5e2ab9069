//! Recall against active-set size, as the threshold sweeps: the curve that
//! `toolgate compare --plot` draws for each policy.
//!
//! One replay gives, before every call, every tool's score, the called
//! tool's score and its rank. At any threshold `t` the active set is then
//! the tools scoring at least `t`, cut to `max_active` and raised to
//! `min_active` (pinned tools count in both); the call is a hit when its
//! tool scores at least `t` within the cap, or ranks within `min_active`.
//! Hysteresis is ignored (it depends on the previous evaluation, which the
//! threshold also changes): the curve is exact for policies without it and
//! an approximation otherwise. The policy's own operating point (its real
//! replay) is reported beside the curve.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::eval::Activation;
use crate::plan::Plan;
use crate::replay::engine::{Replay, ReplayOptions, replay_with};
use crate::replay::stats::Dist;
use crate::replay::trace::{Trace, TraceError};

/// Scores before each call of a replay.
#[derive(Debug, Clone, Default)]
pub struct CurveData {
    /// Per call: the called tool's score, its 1-based rank, and every
    /// tool's score above 0, highest first.
    pub calls: Vec<(f64, usize, Vec<f64>)>,
    /// `activation.max_active`.
    pub max_active: Option<usize>,
    /// `activation.min_active`.
    pub min_active: usize,
    /// Pinned tools (always active).
    pub pinned: usize,
}

/// One point of the curve.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct CurvePoint {
    /// The threshold.
    pub threshold: f64,
    /// Share of calls whose tool would be active.
    pub recall: f64,
    /// Mean active-set size over the calls.
    pub mean_active: f64,
    /// Median active-set size over the calls.
    pub median_active: f64,
}

/// Replays `trace` against `plan` (as [`crate::replay::engine::replay`]) and
/// keeps what the curve needs.
pub fn replay_for_curve(
    plan: &Arc<Plan>,
    trace: &Trace,
    opts: &ReplayOptions,
) -> Result<(Replay, CurveData), TraceError> {
    let mut data = CurveData {
        max_active: plan.max_active,
        min_active: plan.min_active,
        pinned: plan.pinned.len(),
        ..Default::default()
    };
    let r = replay_with(plan, trace, opts, |step, act| {
        if let (Some(c), Some(rank)) = (step.called, step.rank) {
            let mut s: Vec<f64> = act
                .tools
                .iter()
                .map(|t| t.score)
                .filter(|x| *x > 0.0)
                .collect();
            s.sort_by(|a, b| b.total_cmp(a));
            data.calls.push((act.tools[c].score, rank, s));
        }
    })?;
    Ok((r, data))
}

impl CurveData {
    /// Recall and set size at threshold `t`.
    pub fn point(&self, t: f64) -> CurvePoint {
        let n = self.calls.len();
        if n == 0 {
            return CurvePoint {
                threshold: t,
                recall: 0.0,
                mean_active: 0.0,
                median_active: 0.0,
            };
        }
        let cap = self.max_active.unwrap_or(usize::MAX);
        let mut hits = 0;
        let mut sizes = Vec::with_capacity(n);
        for (score, rank, scores) in &self.calls {
            let above = scores.partition_point(|x| *x >= t);
            let size = (above + self.pinned).min(cap).max(self.min_active);
            sizes.push(size as f64);
            let cap_left = cap.saturating_sub(self.pinned);
            if (*score >= t && *score > 0.0 && *rank <= cap_left) || *rank <= self.min_active {
                hits += 1;
            }
        }
        let d = crate::replay::stats::Dist::of(&sizes);
        CurvePoint {
            threshold: t,
            recall: hits as f64 / n as f64,
            mean_active: d.mean,
            median_active: d.median,
        }
    }

    /// The curve at `steps + 1` thresholds evenly spaced over [0, 1], highest
    /// threshold first (smallest sets first).
    pub fn curve(&self, steps: usize) -> Vec<CurvePoint> {
        let steps = steps.max(1);
        (0..=steps)
            .rev()
            .map(|k| self.point(k as f64 / steps as f64))
            .collect()
    }
}

/// The curve of [`CurveData::curve`] accumulated call by call, without
/// keeping any call's scores (what the streamed `compare --plot` uses):
/// per threshold `k / steps`, the number of hits and a histogram of the
/// active-set sizes. Memory: `steps + 1` counters and histograms of at most
/// one entry per distinct size (sizes are at most the catalog's size), whatever
/// the number of calls. [`CurveAcc::curve`] gives the same points, bit for
/// bit, as [`CurveData::curve`] on the same calls, in any order of adding
/// and merging.
#[derive(Debug, Clone)]
pub struct CurveAcc {
    steps: usize,
    max_active: Option<usize>,
    min_active: usize,
    pinned: usize,
    calls: usize,
    hits: Vec<u64>,
    sizes: Vec<BTreeMap<u64, u64>>,
    /// Scratch: tool scores per threshold level of one call.
    levels: Vec<usize>,
}

impl CurveAcc {
    /// An empty curve of `plan`'s set controls over `steps + 1` thresholds
    /// (`steps` at least 1).
    pub fn new(plan: &Plan, steps: usize) -> CurveAcc {
        let steps = steps.max(1);
        CurveAcc {
            steps,
            max_active: plan.max_active,
            min_active: plan.min_active,
            pinned: plan.pinned.len(),
            calls: 0,
            hits: vec![0; steps + 1],
            sizes: vec![BTreeMap::new(); steps + 1],
            levels: vec![0; steps + 1],
        }
    }

    /// The largest `k` with `k / steps <= s`, for `s >= 0`.
    fn level(&self, s: f64) -> usize {
        let n = self.steps;
        let t = |k: usize| k as f64 / n as f64;
        let mut k = ((s * n as f64).floor().max(0.0) as usize).min(n);
        while k < n && t(k + 1) <= s {
            k += 1;
        }
        while k > 0 && t(k) > s {
            k -= 1;
        }
        k
    }

    /// Adds one call: the activation before it, the called tool (plan
    /// index) and its 1-based rank.
    pub fn add(&mut self, act: &Activation, called: usize, rank: usize) {
        self.levels.iter_mut().for_each(|c| *c = 0);
        for t in &act.tools {
            if t.score > 0.0 {
                let l = self.level(t.score);
                self.levels[l] += 1;
            }
        }
        let score = act.tools[called].score;
        let cap = self.max_active.unwrap_or(usize::MAX);
        let cap_left = cap.saturating_sub(self.pinned);
        let top = (score > 0.0 && rank <= cap_left).then(|| self.level(score));
        self.calls += 1;
        let mut above = 0usize;
        for k in (0..=self.steps).rev() {
            above += self.levels[k];
            let size = (above + self.pinned).min(cap).max(self.min_active);
            *self.sizes[k].entry(size as u64).or_default() += 1;
            if top.is_some_and(|l| k <= l) || rank <= self.min_active {
                self.hits[k] += 1;
            }
        }
    }

    /// Adds everything `other` accumulated (same plan and steps).
    pub fn merge(&mut self, other: &CurveAcc) {
        self.calls += other.calls;
        for (a, b) in self.hits.iter_mut().zip(&other.hits) {
            *a += b;
        }
        for (mine, theirs) in self.sizes.iter_mut().zip(&other.sizes) {
            for (k, v) in theirs {
                *mine.entry(*k).or_default() += v;
            }
        }
    }

    /// The points, highest threshold first, as [`CurveData::curve`].
    pub fn curve(&self) -> Vec<CurvePoint> {
        (0..=self.steps)
            .rev()
            .map(|k| {
                let t = k as f64 / self.steps as f64;
                if self.calls == 0 {
                    return CurvePoint {
                        threshold: t,
                        recall: 0.0,
                        mean_active: 0.0,
                        median_active: 0.0,
                    };
                }
                let d = Dist::of_counts(&self.sizes[k]);
                CurvePoint {
                    threshold: t,
                    recall: self.hits[k] as f64 / self.calls as f64,
                    mean_active: d.mean,
                    median_active: d.median,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_by_hand() {
        let d = CurveData {
            calls: vec![(0.9, 1, vec![0.9, 0.5, 0.2]), (0.3, 3, vec![0.6, 0.4, 0.3])],
            max_active: Some(2),
            min_active: 0,
            pinned: 0,
        };
        let p = d.point(0.5);
        assert_eq!((p.recall, p.mean_active), (0.5, 1.5));
        // At 0.25 the second call's tool scores enough but ranks 3rd: the cap cuts it.
        let p = d.point(0.25);
        assert_eq!((p.recall, p.mean_active, p.median_active), (0.5, 2.0, 2.0));
        let c = d.curve(4);
        assert_eq!(c.len(), 5);
        assert_eq!(c[0].threshold, 1.0);
        assert!(c.windows(2).all(|w| w[0].mean_active <= w[1].mean_active));
    }

    #[test]
    fn the_accumulated_curve_is_the_kept_one() {
        use crate::replay::engine::replay_session;
        use crate::replay::trace::parse_trace;
        for policy in ["policies/default.toml", "policies/selection.toml"] {
            let plan = Arc::new(
                crate::load::load_plan(&crate::load::Sources {
                    policy: Some(policy.into()),
                    tags: None,
                    tools: Vec::new(),
                })
                .unwrap(),
            );
            let text = include_str!("../../examples/sessions.jsonl");
            let trace = parse_trace(text, true).unwrap();
            let opts = ReplayOptions {
                skip_invalid: true,
                keep_active: false,
            };
            let (_, data) = replay_for_curve(&plan, &trace, &opts).unwrap();
            // Session by session, odd and even sessions apart, then merged.
            let tokens = crate::replay::engine::tool_tokens(&plan);
            let mut parts = [CurveAcc::new(&plan, 50), CurveAcc::new(&plan, 50)];
            for (k, (id, lines)) in trace.sessions().into_iter().enumerate() {
                let acc = &mut parts[k % 2];
                replay_session(
                    &plan,
                    (k, id),
                    lines.iter().map(|&l| &trace.lines[l]),
                    &opts,
                    &tokens,
                    &mut Vec::new(),
                    |step, act| {
                        if let (Some(c), Some(r)) = (step.called, step.rank) {
                            acc.add(act, c, r);
                        }
                    },
                )
                .unwrap();
            }
            let [mut a, b] = parts;
            a.merge(&b);
            assert!(data.calls.len() > 5);
            assert_eq!(a.curve(), data.curve(50));
        }
    }
}
