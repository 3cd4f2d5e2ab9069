//! Recall at any rank and multi-step completeness, over a replay's steps.
//!
//! [`crate::replay::stats`] reports recall at the policy's cut and at the
//! fixed ranks 1, 5, 10 and 20; comparing a policy's cut with a plain ranker
//! needs recall at other ranks too (3, 8, the policy's own median set size),
//! and multi-step requests need *completeness*: every tool a request calls
//! already active before its first call (the agent sees the whole plan's
//! tools at once, as Seal-Tools' multi-tool queries expect).
//!
//! * **Recall at k**: share of calls whose tool ranked at most `k`
//!   ([`crate::replay::engine::Step::rank`]).
//! * **Completeness**: over sessions with calls, the share whose distinct
//!   called tools were all in the active set of the session's first call
//!   step (needs [`crate::replay::engine::ReplayOptions::keep_active`]);
//!   reported for all sessions and for those calling two or more distinct
//!   tools.
//! * **Splits**: a session belongs to the held-out part when
//!   [`crate::replay::fit::is_holdout`] says so for its id (a hash, the
//!   split `toolgate fit` uses).

use crate::replay::engine::Replay;
use crate::replay::fit::is_holdout;

/// Which sessions a report covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Split {
    /// Every session.
    All,
    /// Sessions not in the held-out fraction (the tuning half).
    Train(f64),
    /// Sessions in the held-out fraction.
    HeldOut(f64),
}

impl Split {
    /// Whether session `id` belongs to this split.
    pub fn contains(&self, id: &str) -> bool {
        match *self {
            Split::All => true,
            Split::Train(f) => !is_holdout(id, f),
            Split::HeldOut(f) => is_holdout(id, f),
        }
    }
}

/// Recall at ranks, the active set, and completeness of one split.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankReport {
    /// Sessions with at least one call.
    pub sessions: usize,
    /// Calls scored.
    pub calls: usize,
    /// Calls whose tool was active (recall at the policy's cut).
    pub hits: usize,
    /// `(k, calls whose tool ranked ≤ k)` for each requested `k`.
    pub at: Vec<(usize, usize)>,
    /// Active-set sizes at the call steps, sorted.
    pub sizes: Vec<usize>,
    /// Sessions whose called tools were all active at the first call step.
    pub complete: usize,
    /// Sessions calling two or more distinct tools.
    pub multi: usize,
    /// Of those, the complete ones.
    pub multi_complete: usize,
}

impl RankReport {
    /// The report of `split` over the steps of `r` (no-call steps ignored),
    /// with recall at each of `ks`. Completeness needs the active sets
    /// (`keep_active`); without them no session counts as complete.
    pub fn of(r: &Replay, split: Split, ks: &[usize]) -> RankReport {
        let mut out = RankReport {
            at: ks.iter().map(|&k| (k, 0)).collect(),
            ..Default::default()
        };
        // Per session: (first call step's active set, distinct called tools).
        let mut per: Vec<Option<(Vec<usize>, Vec<usize>)>> = vec![None; r.sessions.len()];
        for s in &r.steps {
            let Some(called) = s.called else { continue };
            if !split.contains(&r.sessions[s.session].id) {
                continue;
            }
            out.calls += 1;
            out.hits += s.hit as usize;
            out.sizes.push(s.active_count);
            for (k, n) in out.at.iter_mut() {
                *n += s.rank.is_some_and(|x| x <= *k) as usize;
            }
            let e = per[s.session].get_or_insert_with(|| (s.active.clone(), Vec::new()));
            if !e.1.contains(&called) {
                e.1.push(called);
            }
        }
        out.sizes.sort_unstable();
        for (active, called) in per.iter().flatten() {
            out.sessions += 1;
            let complete = called.iter().all(|c| active.contains(c));
            out.complete += complete as usize;
            if called.len() >= 2 {
                out.multi += 1;
                out.multi_complete += complete as usize;
            }
        }
        out
    }

    /// Recall at the policy's cut, in \[0,1\] (0 without calls).
    pub fn recall(&self) -> f64 {
        ratio(self.hits, self.calls)
    }

    /// Recall at rank `k` if it was requested, in \[0,1\].
    pub fn recall_at(&self, k: usize) -> Option<f64> {
        self.at
            .iter()
            .find(|(x, _)| *x == k)
            .map(|(_, n)| ratio(*n, self.calls))
    }

    /// Median active-set size over the call steps (the upper median of an
    /// even count, as `toolgate replay` reports it; 0 without calls).
    pub fn median_size(&self) -> usize {
        self.sizes.get(self.sizes.len() / 2).copied().unwrap_or(0)
    }

    /// Mean active-set size over the call steps.
    pub fn mean_size(&self) -> f64 {
        if self.sizes.is_empty() {
            0.0
        } else {
            self.sizes.iter().sum::<usize>() as f64 / self.sizes.len() as f64
        }
    }

    /// Completeness over all sessions with calls, in \[0,1\].
    pub fn completeness(&self) -> f64 {
        ratio(self.complete, self.sessions)
    }

    /// Completeness over the sessions calling two or more distinct tools.
    pub fn multi_completeness(&self) -> f64 {
        ratio(self.multi_complete, self.multi)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}
