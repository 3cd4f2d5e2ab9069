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

use std::sync::Arc;

use serde::Serialize;

use crate::plan::Plan;
use crate::replay::engine::{Replay, ReplayOptions, replay_with};
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
}
