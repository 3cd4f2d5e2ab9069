//! Checking a policy's declared `[[properties]]` (`toolgate check`).
//!
//! Each property is first decided statically where the formula allows:
//!
//! * `raw_score_within` / `score_within`: each tool's raw-score interval
//!   ([`CatalogBounds`]) inside the range proves it; a witness session that
//!   reaches a value outside refutes it;
//! * `monotone`: when every term that reads the feature is `weight × feature`,
//!   the sign of the summed weights decides (a counterexample is built from two
//!   made-up tools that differ in that feature only);
//! * `always_active`: a pinned tool, or a tool whose lowest score passes the
//!   highest effective threshold (and no `max_active` cut), proves it; the
//!   tool's lowest-score session, out of cold start, refutes it;
//! * `never_active`: an unpinned tool whose highest score stays below the
//!   lowest effective threshold (and no `min_active`) proves it; its
//!   highest-score session refutes it;
//! * `active_count_within`: the counts of tools that can or must pass the
//!   threshold bound it.
//!
//! Otherwise a proptest search runs (`samples` random sessions drawn by
//! [`super::strategies`], formula-level grids for `monotone`) and shrinks the
//! first failure to the smallest session it can. Every counterexample is a
//! ready `toolgate eval --input` object, and is re-evaluated through
//! [`evaluate_input`] (as `toolgate eval` reads it) before it is reported:
//! only a reproduced violation counts.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};
use serde::Serialize;
use serde_json::{Value, json};

use crate::compile::bounds::{DomainWeights, FeatureRange, Recipe, clamp, num, policy_ranges};
use crate::compile::witness::{
    BASELINE_TOOL, CatalogBounds, WITNESS_TOOL, context_json, evaluate_input, made_up_input,
    want_of,
};
use crate::context::{SessionContext, UsageStats};
use crate::eval::{Activation, Reason};
use crate::parse::policy::{PolicySource, UsageNormalization};
use crate::plan::property::{Property, PropertyKind};
use crate::plan::{F_DOMAIN, FEATURES, N_FEATURES, Plan};

use super::strategies;

/// How a property was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// From the formula and the bounds, for every session.
    Static,
    /// By a proptest search over random sessions (a counterexample is certain;
    /// "holds" means none was found).
    Search,
}

/// The verdict on one property.
#[derive(Debug, Clone, Serialize)]
pub struct PropertyReport {
    /// The property's name.
    pub name: String,
    /// Its kind key (`raw_score_within`, `monotone`, ...).
    pub kind: &'static str,
    /// Where it is declared (file:line:column).
    pub location: String,
    /// Whether it holds.
    pub holds: bool,
    /// How that was decided.
    pub method: Method,
    /// The tool a counterexample concerns.
    pub tool: Option<String>,
    /// A ready `toolgate eval --input` object that shows the violation.
    pub counterexample: Option<Value>,
    /// What was proven, or what the counterexample shows.
    pub detail: String,
    /// Sessions tried by a search.
    pub samples: Option<u64>,
}

/// Options of [`check_properties`].
#[derive(Debug, Clone, Copy)]
pub struct CheckOptions {
    /// Random sessions per searched property, unless the property sets `samples`.
    pub samples: u64,
    /// RNG seed of the searches.
    pub seed: u64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            samples: 256,
            seed: 0,
        }
    }
}

/// A session as a `toolgate eval --input` object (`now` and the usage times
/// written as seconds since the last call, so reading it back gives the
/// same times when `now` is 0).
pub fn session_input(ctx: &SessionContext, usage: &UsageStats, now: f64) -> Value {
    let mut u = serde_json::Map::new();
    let sorted = |m: &std::collections::HashMap<String, f64>, f: &dyn Fn(f64) -> f64| {
        let b: std::collections::BTreeMap<&String, f64> =
            m.iter().map(|(k, v)| (k, f(*v))).collect();
        json!(b)
    };
    if !usage.call_counts.is_empty() {
        let b: std::collections::BTreeMap<&String, u64> = usage
            .call_counts
            .iter()
            .collect::<Vec<_>>()
            .into_iter()
            .map(|(k, v)| (k, *v))
            .collect();
        u.insert("call_counts".into(), json!(b));
    }
    if !usage.last_call_at.is_empty() {
        u.insert(
            "seconds_since_last_call".into(),
            sorted(&usage.last_call_at, &|at| now - at),
        );
    }
    if !usage.usage_frequency.is_empty() {
        u.insert(
            "usage_frequency".into(),
            sorted(&usage.usage_frequency, &|f| f),
        );
    }
    json!({ "context": context_json(ctx), "usage": Value::Object(u), "now": now })
}

/// The thresholds a session can face: (lowest, highest) effective threshold.
fn threshold_range(plan: &Plan) -> (f64, f64) {
    let t = plan.threshold;
    match plan.cold_start {
        Some((_, f)) => (t.min(t * f), t.max(t * f)),
        None => (t, t),
    }
}

struct Checker<'a> {
    policy: &'a PolicySource,
    plan: &'a Arc<Plan>,
    cb: &'a CatalogBounds,
    opts: CheckOptions,
}

/// The outcome of one check before it becomes a report.
struct Verdict {
    holds: bool,
    method: Method,
    tool: Option<String>,
    counterexample: Option<Value>,
    detail: String,
    samples: Option<u64>,
}

impl Verdict {
    fn proven(detail: String) -> Self {
        Verdict {
            holds: true,
            method: Method::Static,
            tool: None,
            counterexample: None,
            detail,
            samples: None,
        }
    }
    fn refuted(method: Method, tool: Option<String>, input: Value, detail: String) -> Self {
        Verdict {
            holds: false,
            method,
            tool,
            counterexample: Some(input),
            detail,
            samples: None,
        }
    }
}

/// Checks every declared property of `plan` (compiled from `policy`) over
/// its catalog. `cb` are the catalog's bounds ([`CatalogBounds::of`]).
pub fn check_properties(
    policy: &PolicySource,
    plan: &Arc<Plan>,
    cb: &CatalogBounds,
    opts: CheckOptions,
) -> Vec<PropertyReport> {
    let c = Checker {
        policy,
        plan,
        cb,
        opts,
    };
    plan.properties
        .iter()
        .map(|p| {
            let v = c.check(p);
            PropertyReport {
                name: p.name.clone(),
                kind: p.kind.key(),
                location: p.location.clone(),
                holds: v.holds,
                method: v.method,
                tool: v.tool,
                counterexample: v.counterexample,
                detail: v.detail,
                samples: v.samples,
            }
        })
        .collect()
}

/// What a session must show for a score property: (tool, message) of the first breach.
type Breach = Option<(Option<usize>, String)>;

impl Checker<'_> {
    fn samples(&self, p: &Property) -> u64 {
        p.samples.unwrap_or(self.opts.samples)
    }

    fn check(&self, p: &Property) -> Verdict {
        match &p.kind {
            PropertyKind::RawScoreWithin { low, high } => self.within(p, *low, *high, false),
            PropertyKind::ScoreWithin { low, high } => self.within(p, *low, *high, true),
            PropertyKind::Monotone {
                feature,
                increasing,
            } => self.monotone(p, *feature, *increasing),
            PropertyKind::AlwaysActive(tools) => self.active(p, tools, true),
            PropertyKind::NeverActive(tools) => self.active(p, tools, false),
            PropertyKind::ActiveCountWithin { low, high } => self.count(p, *low, *high),
        }
    }

    /// Runs `input` and returns the activation, if it loads.
    fn run(&self, input: &Value) -> Option<Activation> {
        evaluate_input(Some(self.policy), self.plan, input).ok()
    }

    /// A proptest search over sessions focused on `focus`; the test returns
    /// the first breach. The shrunk failing session is re-run from its eval
    /// input before it is reported.
    fn search(
        &self,
        p: &Property,
        focus: &[usize],
        test: &dyn Fn(&Activation) -> Breach,
        proven_detail: String,
    ) -> Verdict {
        let samples = self.samples(p);
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&self.opts.seed.to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
        let config = Config {
            cases: samples.min(u32::MAX as u64) as u32,
            failure_persistence: None,
            max_shrink_iters: 4096,
            ..Config::default()
        };
        let mut runner = TestRunner::new_with_rng(config, rng);
        let plan = self.plan.clone();
        let strategy = strategies::session_for(&plan, focus);
        let result = runner.run(&strategy, |(ctx, usage, now)| {
            let act = plan.evaluate(&ctx, &usage, now);
            match test(&act) {
                None => Ok(()),
                Some((_, m)) => Err(TestCaseError::fail(m)),
            }
        });
        let mut v = match result {
            Ok(()) => Verdict {
                holds: true,
                method: Method::Search,
                tool: None,
                counterexample: None,
                detail: proven_detail,
                samples: None,
            },
            Err(TestError::Fail(_, (ctx, usage, now))) => {
                let mut input = session_input(&ctx, &usage, now);
                if plan.features.usage_normalization == UsageNormalization::BusiestTool
                    && let Some(u) = input["usage"].as_object_mut()
                {
                    // frequencies are not read under this normalisation
                    u.remove("usage_frequency");
                }
                match self.run(&input).and_then(|act| test(&act)) {
                    Some((tool, msg)) => Verdict::refuted(
                        Method::Search,
                        tool.map(|i| plan.tools[i].name.clone()),
                        input,
                        msg,
                    ),
                    None => Verdict {
                        holds: true,
                        method: Method::Search,
                        tool: None,
                        counterexample: None,
                        detail: format!(
                            "{proven_detail} (a failure found by the search did not reproduce from its input)"
                        ),
                        samples: None,
                    },
                }
            }
            Err(TestError::Abort(m)) => Verdict {
                holds: true,
                method: Method::Search,
                tool: None,
                counterexample: None,
                detail: format!("search aborted: {m}"),
                samples: None,
            },
        };
        v.samples = Some(samples);
        if v.holds {
            v.detail = format!(
                "no counterexample in {samples} random sessions: {}",
                v.detail
            );
        }
        v
    }

    fn within(&self, p: &Property, low: f64, high: f64, clamped: bool) -> Verdict {
        let plan = self.plan;
        let what = if clamped { "score" } else { "raw score" };
        let scope: Vec<usize> = p
            .tools
            .clone()
            .unwrap_or_else(|| (0..plan.tools.len()).collect());
        if scope.is_empty() {
            return Verdict::proven("the catalog has no tool to score".into());
        }
        let f = |x: f64| if clamped { clamp(plan, x) } else { x };
        let (mut lo, mut hi, mut nan) = (f64::INFINITY, f64::NEG_INFINITY, false);
        for &i in &scope {
            let r = self.cb.tools[i].raw;
            if !r.is_empty() {
                lo = lo.min(f(r.lo));
                hi = hi.max(f(r.hi));
            }
            nan |= r.nan && !clamped;
        }
        let range = format!("[{}, {}]", num(low), num(high));
        if !nan && low <= lo && hi <= high {
            return Verdict::proven(format!(
                "every {what} lies in [{}, {}] (interval bounds over the {} loaded tool(s)), within {range}",
                num(lo),
                num(hi),
                scope.len()
            ));
        }
        let outside = |x: f64| x.is_nan() || x < low || x > high;
        // Static counterexamples: each offending tool's extreme session, worst first.
        let mut offenders: Vec<(f64, usize, bool)> = Vec::new();
        for &i in &scope {
            let r = self.cb.tools[i].raw;
            if f(r.hi) > high {
                offenders.push((f(r.hi) - high, i, true));
            }
            if f(r.lo) < low {
                offenders.push((low - f(r.lo), i, false));
            }
        }
        offenders.sort_by(|a, b| b.0.total_cmp(&a.0));
        for &(_, i, highest) in offenders.iter().take(16) {
            if let Some((input, _)) = self.cb.corner_input(plan, i, highest)
                && let Some(act) = self.run(&input)
            {
                let s = act.tools[i];
                let x = if clamped { s.score } else { s.raw_score };
                if outside(x) {
                    return Verdict::refuted(
                        Method::Static,
                        Some(plan.tools[i].name.clone()),
                        input,
                        format!(
                            "{what} of `{}` is {}, outside {range}",
                            plan.tools[i].name,
                            num(x)
                        ),
                    );
                }
            }
        }
        let test = |act: &Activation| -> Breach {
            scope.iter().find_map(|&i| {
                let s = act.tools[i];
                let x = if clamped { s.score } else { s.raw_score };
                outside(x).then(|| {
                    (
                        Some(i),
                        format!(
                            "{what} of `{}` is {}, outside {range}",
                            plan.tools[i].name,
                            num(x)
                        ),
                    )
                })
            })
        };
        self.search(
            p,
            &scope,
            &test,
            format!(
                "interval bounds [{}, {}] were not all attained",
                num(lo),
                num(hi)
            ),
        )
    }

    fn active(&self, p: &Property, tools: &[usize], always: bool) -> Verdict {
        let plan = self.plan;
        let (t_min, t_max) = threshold_range(plan);
        let pinned = |i: usize| plan.pinned.contains(&i);
        let mut undecided = Vec::new();
        for &i in tools {
            let r = self.cb.tools[i].raw;
            let name = &plan.tools[i].name;
            let proven = if always {
                pinned(i)
                    || (plan.max_active.is_none()
                        && !r.nan
                        && !r.is_empty()
                        && clamp(plan, r.lo) >= t_max)
            } else {
                !pinned(i) && plan.min_active == 0 && (r.is_empty() || clamp(plan, r.hi) < t_min)
            };
            if proven {
                continue;
            }
            // the tool's least (or most) favourable session
            let input = if pinned(i) {
                Some(json!({}))
            } else {
                self.cb.corner_input(plan, i, !always).map(|(input, _)| {
                    if always {
                        self.out_of_cold_start(input, i)
                    } else {
                        input
                    }
                })
            };
            if let Some(input) = input
                && let Some(act) = self.run(&input)
                && act.tools[i].active != always
            {
                return Verdict::refuted(
                    Method::Static,
                    Some(name.clone()),
                    input,
                    self.activity_detail(&act, i),
                );
            }
            undecided.push(i);
        }
        if undecided.is_empty() {
            return Verdict::proven(if always {
                format!(
                    "each tool is pinned or its lowest score passes the highest effective threshold {}",
                    num(t_max)
                )
            } else {
                format!(
                    "no tool is pinned and each one's highest score stays below the lowest effective threshold {}",
                    num(t_min)
                )
            });
        }
        let test = |act: &Activation| -> Breach {
            undecided
                .iter()
                .find(|&&i| act.tools[i].active != always)
                .map(|&i| (Some(i), self.activity_detail(act, i)))
        };
        self.search(p, &undecided, &test, "the bounds do not decide it".into())
    }

    fn activity_detail(&self, act: &Activation, i: usize) -> String {
        let s = act.tools[i];
        let name = crate::diag::echo(&self.plan.tools[i].name);
        if s.active {
            format!(
                "`{name}` is active (score {}, effective threshold {}, reason {:?})",
                num(s.score),
                num(act.effective_threshold),
                s.reason
            )
        } else if s.reason == Reason::MaxActive {
            format!(
                "`{name}` is inactive: its score {} passes the effective threshold {} but max_active {} cuts it",
                num(s.score),
                num(act.effective_threshold),
                self.plan.max_active.unwrap_or(0)
            )
        } else {
            let why = if s.reason == Reason::InvalidScore {
                " (NaN score)"
            } else {
                ""
            };
            format!(
                "`{name}` is inactive (score {} < effective threshold {}{why})",
                num(s.score),
                num(act.effective_threshold)
            )
        }
    }

    /// Adds calls so that the session is out of cold start (the threshold at
    /// its highest) without changing tool `i`'s usage share.
    fn out_of_cold_start(&self, mut input: Value, i: usize) -> Value {
        let plan = self.plan;
        let Some((min_calls, f)) = plan.cold_start else {
            return input;
        };
        if f >= 1.0 || min_calls == 0 {
            return input;
        }
        let name = plan.tools[i].name.clone();
        let counts = input["usage"]
            .as_object_mut()
            .map(|u| u.entry("call_counts").or_insert(json!({})));
        let Some(Value::Object(counts)) = counts else {
            return input;
        };
        let frequency = plan.features.usage_normalization == UsageNormalization::Frequency;
        let own = counts.get(&name).and_then(|v| v.as_u64()).unwrap_or(0);
        if frequency || own > 0 {
            counts.insert(name, json!(min_calls.max(own)));
        } else if let Some(other) = (0..plan.tools.len()).find(|&j| j != i) {
            counts.insert(plan.tools[other].name.clone(), json!(min_calls));
        }
        input
    }

    fn count(&self, p: &Property, low: usize, high: usize) -> Verdict {
        let plan = self.plan;
        let (t_min, t_max) = threshold_range(plan);
        let n = plan.tools.len();
        let pinned = |i: usize| plan.pinned.contains(&i);
        let can = (0..n)
            .filter(|&i| {
                let r = self.cb.tools[i].raw;
                pinned(i) || (!r.is_empty() && clamp(plan, r.hi) >= t_min)
            })
            .count();
        let must = (0..n)
            .filter(|&i| {
                let r = self.cb.tools[i].raw;
                pinned(i) || (!r.nan && !r.is_empty() && clamp(plan, r.lo) >= t_max)
            })
            .count();
        let never_nan = (0..n).filter(|&i| !self.cb.tools[i].raw.nan).count();
        let cap = |x: usize| match plan.max_active {
            Some(k) => x.min(k.max(plan.pinned.len())),
            None => x,
        };
        let upper = cap(can).max(plan.min_active.min(n));
        let lower = cap(must).max(plan.min_active.min(never_nan));
        if low <= lower && upper <= high {
            return Verdict::proven(format!(
                "between {lower} and {upper} tools can be active (from the bounds and the set controls), within [{low}, {high}]"
            ));
        }
        let test = |act: &Activation| -> Breach {
            let k = act.tools.iter().filter(|t| t.active).count();
            (k < low || k > high).then(|| {
                (
                    None,
                    format!("{k} tools are active, outside [{low}, {high}]"),
                )
            })
        };
        let all: Vec<usize> = (0..n).collect();
        self.search(
            p,
            &all,
            &test,
            format!("the bounds allow {lower} to {upper} active tools"),
        )
    }

    fn monotone(&self, p: &Property, feature: usize, increasing: bool) -> Verdict {
        let plan = self.plan;
        let fname = FEATURES[feature];
        let dir = if increasing {
            "increasing"
        } else {
            "decreasing"
        };
        let reading: Vec<_> = plan
            .formula
            .terms
            .iter()
            .filter(|t| t.features.contains(&(feature as u8)))
            .collect();
        if reading.is_empty() {
            return Verdict::proven(format!("the formula does not read {fname}"));
        }
        let dw = DomainWeights::of(plan);
        let grid = policy_ranges(plan, &dw, true);
        if grid[feature].interval.is_point() {
            return Verdict::proven(format!(
                "{fname} only takes the value {} under this policy",
                num(grid[feature].interval.lo)
            ));
        }
        let linear = reading
            .iter()
            .all(|t| t.features.len() == 1 && t.linear.is_some());
        if linear {
            let coef: f64 = reading
                .iter()
                .map(|t| t.linear.map_or(0.0, |(_, w)| w * t.sign))
                .sum();
            let ok = if increasing { coef >= 0.0 } else { coef <= 0.0 };
            if ok {
                return Verdict::proven(format!(
                    "the formula is linear in {fname} with weight {}",
                    num(coef)
                ));
            }
            // every pair of points refutes it: take the simplest
            if let Some(v) =
                self.monotone_pairs(&grid, feature, increasing, Method::Static, &[0; N_FEATURES])
            {
                return v;
            }
        }
        // non-linear: search the grid of attainable values, then confirm with a session
        let counts: [usize; N_FEATURES] = std::array::from_fn(|f| grid[f].points.len().max(1));
        let strategy = (
            prop::array::uniform::<_, N_FEATURES>(0usize..64),
            0usize..64,
            0usize..64,
        )
            .prop_map(move |(picks, a, b)| {
                let picks: [usize; N_FEATURES] = std::array::from_fn(|f| picks[f] % counts[f]);
                (picks, a % counts[feature], b % counts[feature])
            });
        let samples = self.samples(p);
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&self.opts.seed.to_le_bytes());
        let mut runner = TestRunner::new_with_rng(
            Config {
                cases: samples.min(u32::MAX as u64) as u32,
                failure_persistence: None,
                ..Config::default()
            },
            TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
        );
        let value_at = |picks: &[usize; N_FEATURES], at: usize| {
            let x: [f64; N_FEATURES] = std::array::from_fn(|f| {
                grid[f].points[if f == feature { at } else { picks[f] }].value
            });
            plan.formula.eval(&x, None)
        };
        let breaks = |picks: &[usize; N_FEATURES], a: usize, b: usize| {
            let (va, vb) = (grid[feature].points[a].value, grid[feature].points[b].value);
            if va >= vb {
                return false;
            }
            let (ra, rb) = (value_at(picks, a), value_at(picks, b));
            if increasing { rb < ra } else { rb > ra }
        };
        let result = runner.run(&strategy, |(picks, a, b)| {
            if breaks(&picks, a, b) {
                Err(TestCaseError::fail("not monotone"))
            } else {
                Ok(())
            }
        });
        let mut v = match result {
            Err(TestError::Fail(_, (picks, a, b))) => {
                self.realize_pair(&grid, feature, increasing, &picks, a, b, Method::Search)
                    .or_else(|| self.monotone_pairs(&grid, feature, increasing, Method::Search, &picks))
                    .unwrap_or_else(|| Verdict {
                        holds: true,
                        method: Method::Search,
                        tool: None,
                        counterexample: None,
                        detail: format!(
                            "the formula is not {dir} in {fname} for some feature values, but no session reaches them"
                        ),
                        samples: None,
                    })
            }
            _ => Verdict {
                holds: true,
                method: Method::Search,
                tool: None,
                counterexample: None,
                detail: format!(
                    "no counterexample in {samples} random combinations of attainable feature values"
                ),
                samples: None,
            },
        };
        v.samples = Some(samples);
        v
    }

    /// A counterexample from the first pair of `feature` points (lower, higher)
    /// that breaks the direction, the other features at `base`.
    fn monotone_pairs(
        &self,
        grid: &[FeatureRange; N_FEATURES],
        feature: usize,
        increasing: bool,
        method: Method,
        base: &[usize; N_FEATURES],
    ) -> Option<Verdict> {
        let n = grid[feature].points.len();
        for a in 0..n {
            for b in 0..n {
                if let Some(v) = self.realize_pair(grid, feature, increasing, base, a, b, method) {
                    return Some(v);
                }
            }
        }
        None
    }

    /// Two made-up tools in one session: `toolgate.baseline` with `feature` at
    /// point `a`, `toolgate.witness` at point `b` (higher), every other feature
    /// at `picks`. Confirmed by evaluating the input.
    #[allow(clippy::too_many_arguments)]
    fn realize_pair(
        &self,
        grid: &[FeatureRange; N_FEATURES],
        feature: usize,
        increasing: bool,
        picks: &[usize; N_FEATURES],
        a: usize,
        b: usize,
        method: Method,
    ) -> Option<Verdict> {
        let plan = self.plan;
        let points = &grid[feature].points;
        if points[a].value >= points[b].value {
            return None;
        }
        if feature == F_DOMAIN {
            // both tools in one session: the same domain rules must apply
            let rules = |r: &Recipe| match r {
                Recipe::Domain { rules, .. } => Some(rules.clone()),
                _ => None,
            };
            if rules(&points[a].recipe) != rules(&points[b].recipe) {
                return None;
            }
        }
        let mut ca = crate::compile::bounds::Corner {
            picks: *picks,
            value: 0.0,
        };
        ca.picks[feature] = a;
        let mut cb = ca.clone();
        cb.picks[feature] = b;
        let (rules, low) = want_of(grid, &ca, BASELINE_TOOL);
        let (_, high) = want_of(grid, &cb, WITNESS_TOOL);
        let input = made_up_input(plan, &rules, &[low, high])?;
        let act = self.run(&input)?;
        let (sa, sb) = (act.get(BASELINE_TOOL)?, act.get(WITNESS_TOOL)?);
        let broken = if increasing {
            sb.raw_score < sa.raw_score
        } else {
            sb.raw_score > sa.raw_score
        };
        let fname = FEATURES[feature];
        broken.then(|| {
            Verdict::refuted(
                method,
                Some(WITNESS_TOOL.to_string()),
                input,
                format!(
                    "raising {fname} from {} (`{BASELINE_TOOL}`) to {} (`{WITNESS_TOOL}`), all else equal, {} the raw score from {} to {}",
                    num(points[a].value),
                    num(points[b].value),
                    if sb.raw_score < sa.raw_score { "lowers" } else { "raises" },
                    num(sa.raw_score),
                    num(sb.raw_score)
                ),
            )
        })
    }
}
