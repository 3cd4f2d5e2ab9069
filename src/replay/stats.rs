//! Selection quality of a replay, and the paired comparison of two replays of
//! the same trace.
//!
//! * **Recall**: the share of tool calls whose tool was active just before the call.
//! * **Active-set size**: over call steps; mean, median and p95 (nearest rank).
//! * **Schema tokens**: the estimated tokens of the active tools' schemas per
//!   call step ([`crate::replay::engine::schema_tokens`]).
//! * **Changes**: steps whose active set differs from the session's previous
//!   step (the first step of a session is the initial list, not a change).
//! * **No-call turns**: user turns answered by no call; their active-set size
//!   is what a policy exposes when nothing is needed.
//!
//! The paired comparison joins the call steps of two replays by trace line.
//! Recall difference (B − A) with a Wald interval for paired proportions and
//! McNemar's exact test on the discordant calls; size difference with a normal
//! interval of the mean paired difference. Intervals are at 95%.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::replay::engine::Replay;

/// Two-sided 95% quantile of the standard normal distribution.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Distribution summary of a list of numbers.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Dist {
    /// Count.
    pub n: usize,
    /// Mean (0 when empty).
    pub mean: f64,
    /// Median (mean of the two middle values when `n` is even).
    pub median: f64,
    /// 95th percentile, nearest rank.
    pub p95: f64,
    /// Maximum.
    pub max: f64,
}

impl Dist {
    /// Summarises `values`.
    pub fn of(values: &[f64]) -> Dist {
        if values.is_empty() {
            return Dist::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let rank = ((0.95 * n as f64).ceil() as usize).clamp(1, n);
        Dist {
            n,
            mean: v.iter().sum::<f64>() / n as f64,
            median,
            p95: v[rank - 1],
            max: v[n - 1],
        }
    }
}

/// Recall and size for the calls made in one conversation stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageSummary {
    /// The stage (`(none)` when unset).
    pub stage: String,
    /// Calls.
    pub calls: usize,
    /// Calls whose tool was active.
    pub hits: usize,
    /// hits / calls.
    pub recall: f64,
    /// Mean active-set size at those calls.
    pub mean_active: f64,
}

/// The selection quality of one replay.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Policy name.
    pub policy: String,
    /// Catalog size.
    pub tools: usize,
    /// Sessions replayed.
    pub sessions: usize,
    /// Tool calls replayed.
    pub calls: usize,
    /// Calls whose tool was active just before the call.
    pub hits: usize,
    /// hits / calls (0 without calls).
    pub recall: f64,
    /// Share of calls whose tool ranked in the top 1, 5, 10 and 20 by score.
    pub recall_at: BTreeMap<String, f64>,
    /// Active-set size at call steps.
    pub active: Dist,
    /// Schema tokens exposed at call steps.
    pub schema_tokens: Dist,
    /// Active-set changes per session.
    pub changes_per_session: Dist,
    /// Active-set size at no-call turns.
    pub no_call_active: Dist,
    /// Per conversation stage, sorted by name.
    pub by_stage: Vec<StageSummary>,
    /// Trace lines skipped as invalid.
    pub skipped: usize,
}

/// Summarises a replay.
pub fn summarize(r: &Replay) -> Summary {
    let calls: Vec<_> = r.steps.iter().filter(|s| s.called.is_some()).collect();
    let hits = calls.iter().filter(|s| s.hit).count();
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let mut recall_at = BTreeMap::new();
    for k in [1usize, 5, 10, 20] {
        let n = calls
            .iter()
            .filter(|s| s.rank.is_some_and(|x| x <= k))
            .count();
        recall_at.insert(format!("top{k}"), ratio(n, calls.len()));
    }
    let mut stages: BTreeMap<String, (usize, usize, f64)> = BTreeMap::new();
    for s in &calls {
        let e = stages
            .entry(s.stage.clone().unwrap_or_else(|| "(none)".into()))
            .or_default();
        e.0 += 1;
        e.1 += s.hit as usize;
        e.2 += s.active_count as f64;
    }
    let sizes: Vec<f64> = calls.iter().map(|s| s.active_count as f64).collect();
    let tokens: Vec<f64> = calls.iter().map(|s| s.schema_tokens as f64).collect();
    let changes: Vec<f64> = r.sessions.iter().map(|s| s.changes as f64).collect();
    let no_call: Vec<f64> = r
        .steps
        .iter()
        .filter(|s| s.called.is_none())
        .map(|s| s.active_count as f64)
        .collect();
    Summary {
        policy: r.plan.policy_name.clone(),
        tools: r.plan.tools.len(),
        sessions: r.sessions.len(),
        calls: calls.len(),
        hits,
        recall: ratio(hits, calls.len()),
        recall_at,
        active: Dist::of(&sizes),
        schema_tokens: Dist::of(&tokens),
        changes_per_session: Dist::of(&changes),
        no_call_active: Dist::of(&no_call),
        by_stage: stages
            .into_iter()
            .map(|(stage, (c, h, a))| StageSummary {
                stage,
                calls: c,
                hits: h,
                recall: ratio(h, c),
                mean_active: a / c.max(1) as f64,
            })
            .collect(),
        skipped: r.skipped.len(),
    }
}

/// A call where exactly one policy had the called tool active.
#[derive(Debug, Clone, Serialize)]
pub struct Discordant {
    /// Trace line of the call.
    pub line: usize,
    /// Session id.
    pub session: String,
    /// Called tool.
    pub tool: String,
    /// Which policy had it active: `"a"` or `"b"`.
    pub active_in: &'static str,
    /// Active-set size under A.
    pub size_a: usize,
    /// Active-set size under B.
    pub size_b: usize,
}

/// The paired comparison of two replays of the same trace.
#[derive(Debug, Clone, Serialize)]
pub struct Paired {
    /// Calls present in both replays.
    pub calls: usize,
    /// Calls active under both.
    pub both: usize,
    /// Calls active under A only.
    pub a_only: usize,
    /// Calls active under B only.
    pub b_only: usize,
    /// Calls active under neither.
    pub neither: usize,
    /// Recall of B minus recall of A.
    pub recall_diff: f64,
    /// 95% interval of the recall difference (Wald, paired proportions),
    /// cut to [−1, 1]: a difference of two shares cannot leave it.
    pub recall_diff_ci: (f64, f64),
    /// Two-sided exact McNemar p-value (binomial test on the discordant calls).
    pub mcnemar_p: f64,
    /// Mean of (size under B − size under A) over the paired calls.
    pub size_diff: f64,
    /// 95% interval of that mean (normal approximation).
    pub size_diff_ci: (f64, f64),
    /// The calls where exactly one policy had the tool active, in trace order.
    pub discordant: Vec<Discordant>,
}

/// ln(n!) by summation (exact enough for the discordant counts of a trace).
fn ln_factorial(n: usize) -> f64 {
    (2..=n).map(|k| (k as f64).ln()).sum()
}

/// Two-sided exact binomial test of `k` successes in `n` trials with p = 1/2:
/// twice the smaller tail, capped at 1.
pub fn binomial_two_sided(k: usize, n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let m = k.min(n - k);
    let lnf_n = ln_factorial(n);
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let mut tail = 0.0;
    let mut lnf_i = 0.0; // ln(i!)
    let mut lnf_ni = lnf_n; // ln((n-i)!)
    for i in 0..=m {
        if i > 0 {
            lnf_i += (i as f64).ln();
            lnf_ni -= ((n - i + 1) as f64).ln();
        }
        tail += (lnf_n - lnf_i - lnf_ni - ln2n).exp();
    }
    (2.0 * tail).min(1.0)
}

/// Compares replays `a` and `b` of the same trace, call by call.
pub fn paired(a: &Replay, b: &Replay) -> Paired {
    let b_calls: HashMap<usize, &crate::replay::engine::Step> = b
        .steps
        .iter()
        .filter(|s| s.called.is_some())
        .map(|s| (s.line, s))
        .collect();
    let (mut both, mut a_only, mut b_only, mut neither) = (0, 0, 0, 0);
    let mut diffs = Vec::new();
    let mut discordant = Vec::new();
    for sa in a.steps.iter().filter(|s| s.called.is_some()) {
        let Some(sb) = b_calls.get(&sa.line) else {
            continue;
        };
        diffs.push(sb.active_count as f64 - sa.active_count as f64);
        match (sa.hit, sb.hit) {
            (true, true) => both += 1,
            (false, false) => neither += 1,
            (x, _) => {
                if x {
                    a_only += 1;
                } else {
                    b_only += 1;
                }
                discordant.push(Discordant {
                    line: sa.line,
                    session: a.sessions[sa.session].id.clone(),
                    tool: a.plan.tools[sa.called.unwrap_or_default()].name.clone(),
                    active_in: if x { "a" } else { "b" },
                    size_a: sa.active_count,
                    size_b: sb.active_count,
                });
            }
        }
    }
    let n = diffs.len();
    let size = Dist::of(&diffs);
    let sd = if n > 1 {
        (diffs.iter().map(|d| (d - size.mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    paired_from(
        [both, a_only, b_only, neither],
        n,
        size.mean,
        sd,
        discordant,
    )
}

impl Dist {
    /// Summarises non-negative integer values given as a histogram
    /// (value → count): the same numbers as [`Dist::of`] on the values
    /// themselves, exactly, while their sum stays below 2^53.
    pub fn of_counts(hist: &BTreeMap<u64, u64>) -> Dist {
        let n: u64 = hist.values().sum();
        if n == 0 {
            return Dist::default();
        }
        let total: u128 = hist.iter().map(|(&v, &c)| v as u128 * c as u128).sum();
        // The value at 0-based rank `k` of the sorted values.
        let at = |k: u64| {
            let mut seen = 0;
            for (&v, &c) in hist {
                seen += c;
                if k < seen {
                    return v as f64;
                }
            }
            0.0
        };
        let median = if n % 2 == 1 {
            at(n / 2)
        } else {
            (at(n / 2 - 1) + at(n / 2)) / 2.0
        };
        let rank = ((0.95 * n as f64).ceil() as u64).clamp(1, n);
        Dist {
            n: n as usize,
            mean: total as f64 / n as f64,
            median,
            p95: at(rank - 1),
            max: hist.keys().next_back().copied().unwrap_or(0) as f64,
        }
    }
}

/// The [`Summary`] of a replay, accumulated session by session without
/// keeping the steps: counts and histograms of integer values (active-set
/// sizes, schema tokens, changes), so [`SummaryAcc::finish`] gives the same
/// numbers as [`summarize`], whatever the order in which sessions are added
/// or accumulators merged. Memory: one histogram entry per distinct value.
#[derive(Debug, Clone, Default)]
pub struct SummaryAcc {
    sessions: usize,
    calls: usize,
    hits: usize,
    ranked: [usize; 4],
    stages: BTreeMap<String, (usize, usize, f64)>,
    sizes: BTreeMap<u64, u64>,
    tokens: BTreeMap<u64, u64>,
    changes: BTreeMap<u64, u64>,
    no_call: BTreeMap<u64, u64>,
}

const RANKS: [usize; 4] = [1, 5, 10, 20];

impl SummaryAcc {
    /// Adds one session: its steps and its totals.
    pub fn add_session(
        &mut self,
        steps: &[crate::replay::engine::Step],
        session: &crate::replay::engine::SessionSummary,
    ) {
        self.sessions += 1;
        *self.changes.entry(session.changes as u64).or_default() += 1;
        for s in steps {
            if s.called.is_none() {
                *self.no_call.entry(s.active_count as u64).or_default() += 1;
                continue;
            }
            self.calls += 1;
            self.hits += s.hit as usize;
            for (k, n) in RANKS.iter().zip(self.ranked.iter_mut()) {
                *n += s.rank.is_some_and(|x| x <= *k) as usize;
            }
            let e = self
                .stages
                .entry(s.stage.clone().unwrap_or_else(|| "(none)".into()))
                .or_default();
            e.0 += 1;
            e.1 += s.hit as usize;
            e.2 += s.active_count as f64;
            *self.sizes.entry(s.active_count as u64).or_default() += 1;
            *self.tokens.entry(s.schema_tokens).or_default() += 1;
        }
    }

    /// Adds everything `other` accumulated.
    pub fn merge(&mut self, other: &SummaryAcc) {
        self.sessions += other.sessions;
        self.calls += other.calls;
        self.hits += other.hits;
        for (a, b) in self.ranked.iter_mut().zip(other.ranked) {
            *a += b;
        }
        for (k, v) in &other.stages {
            let e = self.stages.entry(k.clone()).or_default();
            e.0 += v.0;
            e.1 += v.1;
            e.2 += v.2;
        }
        for (mine, theirs) in [
            (&mut self.sizes, &other.sizes),
            (&mut self.tokens, &other.tokens),
            (&mut self.changes, &other.changes),
            (&mut self.no_call, &other.no_call),
        ] {
            for (k, v) in theirs {
                *mine.entry(*k).or_default() += v;
            }
        }
    }

    /// The summary of a replay of `plan` with `skipped` invalid lines.
    pub fn finish(&self, plan: &crate::plan::Plan, skipped: usize) -> Summary {
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        Summary {
            policy: plan.policy_name.clone(),
            tools: plan.tools.len(),
            sessions: self.sessions,
            calls: self.calls,
            hits: self.hits,
            recall: ratio(self.hits, self.calls),
            recall_at: RANKS
                .iter()
                .zip(self.ranked)
                .map(|(k, n)| (format!("top{k}"), ratio(n, self.calls)))
                .collect(),
            active: Dist::of_counts(&self.sizes),
            schema_tokens: Dist::of_counts(&self.tokens),
            changes_per_session: Dist::of_counts(&self.changes),
            no_call_active: Dist::of_counts(&self.no_call),
            by_stage: self
                .stages
                .iter()
                .map(|(stage, &(c, h, a))| StageSummary {
                    stage: stage.clone(),
                    calls: c,
                    hits: h,
                    recall: ratio(h, c),
                    mean_active: a / c.max(1) as f64,
                })
                .collect(),
            skipped,
        }
    }
}

/// The [`Paired`] comparison accumulated session by session: counts, one
/// `i32` size difference per paired call (the interval's variance is summed
/// in trace order, as [`paired`] does, so the numbers are the same bits), and
/// the first `keep` discordant calls ([`PairedAcc::discordant_total`] counts
/// them all). Sessions must be added, or accumulators merged, in order of
/// first appearance.
#[derive(Debug, Clone, Default)]
pub struct PairedAcc {
    both: usize,
    a_only: usize,
    b_only: usize,
    neither: usize,
    diffs: Vec<i32>,
    discordant: Vec<Discordant>,
    /// Discordant calls seen, kept or not.
    pub discordant_total: usize,
    keep: usize,
}

impl PairedAcc {
    /// An empty accumulator that keeps the first `keep` discordant calls
    /// (`usize::MAX`: all of them).
    pub fn new(keep: usize) -> PairedAcc {
        PairedAcc {
            keep,
            ..PairedAcc::default()
        }
    }

    /// Adds one session's steps under A and under B (`tools`: the catalog
    /// names, plan order; `session`: its id).
    pub fn add_session(
        &mut self,
        a: &[crate::replay::engine::Step],
        b: &[crate::replay::engine::Step],
        session: &str,
        tools: &crate::plan::Plan,
    ) {
        let b_calls: HashMap<usize, &crate::replay::engine::Step> = b
            .iter()
            .filter(|s| s.called.is_some())
            .map(|s| (s.line, s))
            .collect();
        for sa in a.iter().filter(|s| s.called.is_some()) {
            let Some(sb) = b_calls.get(&sa.line) else {
                continue;
            };
            self.diffs
                .push(sb.active_count as i32 - sa.active_count as i32);
            match (sa.hit, sb.hit) {
                (true, true) => self.both += 1,
                (false, false) => self.neither += 1,
                (x, _) => {
                    if x {
                        self.a_only += 1;
                    } else {
                        self.b_only += 1;
                    }
                    self.discordant_total += 1;
                    if self.discordant.len() < self.keep {
                        self.discordant.push(Discordant {
                            line: sa.line,
                            session: session.to_string(),
                            tool: tools.tools[sa.called.unwrap_or_default()].name.clone(),
                            active_in: if x { "a" } else { "b" },
                            size_a: sa.active_count,
                            size_b: sb.active_count,
                        });
                    }
                }
            }
        }
    }

    /// Appends `other`, whose sessions come after this one's.
    pub fn append(&mut self, other: PairedAcc) {
        self.both += other.both;
        self.a_only += other.a_only;
        self.b_only += other.b_only;
        self.neither += other.neither;
        self.diffs.extend(other.diffs);
        self.discordant_total += other.discordant_total;
        let room = self.keep.saturating_sub(self.discordant.len());
        self.discordant
            .extend(other.discordant.into_iter().take(room));
    }

    /// The comparison (its `discordant` holds the calls kept).
    pub fn finish(self) -> Paired {
        let n = self.diffs.len();
        let total: i64 = self.diffs.iter().map(|&d| d as i64).sum();
        let mean = if n == 0 { 0.0 } else { total as f64 / n as f64 };
        let sd = if n > 1 {
            (self
                .diffs
                .iter()
                .map(|&d| (d as f64 - mean).powi(2))
                .sum::<f64>()
                / (n - 1) as f64)
                .sqrt()
        } else {
            0.0
        };
        paired_from(
            [self.both, self.a_only, self.b_only, self.neither],
            n,
            mean,
            sd,
            self.discordant,
        )
    }
}

/// The paired numbers from the four counts (both, A only, B only, neither),
/// the number of paired calls, the size differences' mean and standard
/// deviation, and the discordant calls.
fn paired_from(
    [both, a_only, b_only, neither]: [usize; 4],
    n: usize,
    mean: f64,
    sd: f64,
    discordant: Vec<Discordant>,
) -> Paired {
    let nf = n.max(1) as f64;
    let recall_diff = (b_only as f64 - a_only as f64) / nf;
    let disc = (a_only + b_only) as f64;
    let se = if n == 0 {
        0.0
    } else {
        ((disc - (b_only as f64 - a_only as f64).powi(2) / nf).max(0.0)).sqrt() / nf
    };
    let half = Z95 * sd / nf.sqrt();
    Paired {
        calls: n,
        both,
        a_only,
        b_only,
        neither,
        recall_diff,
        recall_diff_ci: (
            (recall_diff - Z95 * se).max(-1.0),
            (recall_diff + Z95 * se).min(1.0),
        ),
        mcnemar_p: binomial_two_sided(a_only, a_only + b_only),
        size_diff: mean,
        size_diff_ci: (mean - half, mean + half),
        discordant,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dist_by_hand() {
        let d = Dist::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((d.n, d.mean, d.median, d.max), (4, 2.5, 2.5, 4.0));
        assert_eq!(d.p95, 4.0);
        let v: Vec<f64> = (1..=20).map(|x| x as f64).collect();
        assert_eq!(Dist::of(&v).p95, 19.0);
        assert_eq!(Dist::of(&[]).n, 0);
    }

    #[test]
    fn dist_of_counts_is_dist_of_the_values() {
        for values in [
            vec![4u64, 1, 3, 2],
            vec![7],
            vec![5, 5, 0, 9, 9, 9, 2],
            (0..41).map(|x| x * x % 17).collect(),
        ] {
            let mut hist = BTreeMap::new();
            for &v in &values {
                *hist.entry(v).or_default() += 1;
            }
            let f: Vec<f64> = values.iter().map(|&v| v as f64).collect();
            assert_eq!(Dist::of_counts(&hist), Dist::of(&f), "{values:?}");
        }
        assert_eq!(Dist::of_counts(&BTreeMap::new()), Dist::default());
    }

    #[test]
    fn binomial_by_hand() {
        // n = 5, k = 0: 2 * (1/32) = 0.0625.
        assert!((binomial_two_sided(0, 5) - 0.0625).abs() < 1e-12);
        // n = 4, k = 1: 2 * (1 + 4)/16 = 0.625.
        assert!((binomial_two_sided(1, 4) - 0.625).abs() < 1e-12);
        assert_eq!(binomial_two_sided(2, 4), 1.0);
        assert_eq!(binomial_two_sided(0, 0), 1.0);
    }
}
