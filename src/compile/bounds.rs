//! Score bounds: what raw scores a policy can produce.
//!
//! Each feature's range comes from the policy's own parameters:
//! `stage_match` is `hit` or `miss`; `usage_bonus` is `min(u × multiplier,
//! cap)` for a normalised usage `u` in \[0,1\]; `recency_bonus` is 0 or
//! `bonus` (0 only, when `window_seconds` is 0); `priority_bonus` lies in
//! \[0,1\]; `complexity_penalty` between its values at the complexity range's
//! ends; `keyword_match` in \[0,1\]; `domain_match` between the lowest and the
//! highest share of the normalised domain weights a tool's domains can take,
//! over every combination of domain rules (up to [`MAX_ENUMERATED_RULES`]
//! rules; beyond, a looser interval bound), or `neutral`. The raw score's
//! interval follows by interval arithmetic over the lowered formula
//! ([`super::interval`]).
//!
//! Two scopes are computed:
//!
//! * **policy** ([`policy_ranges`]): any tool the policy admits (any set of
//!   declared domains and stages, any keywords, priority and complexity in
//!   range). The load-time findings use it, so a policy's verdict does not
//!   depend on the catalog it is loaded with.
//! * **catalog** ([`tool_ranges`]): one tool of the plan, its tags fixed
//!   (its domains, stages, keywords, priority and complexity). Tighter; the
//!   declared properties are checked over it.
//!
//! Every range also lists [`Point`]s: values the feature takes, each with the
//! [`Recipe`] that produces it, from which `compile::witness` builds a tool and
//! a session and checks that the bound is attained.
//!
//! The load-time findings built on these bounds are in [`super::findings`].

use crate::context::{SessionContext, UsageStats};
use crate::eval::condition::Facts;
use crate::parse::policy::KeywordMethod;
use crate::plan::{F_KEYWORD, N_FEATURES, Plan};

pub use super::interval::Interval;
use super::interval::eval_formula;

/// Domain rules up to this many are combined exhaustively (2^n combinations);
/// beyond, each domain weight is bounded on its own (a looser bound).
pub const MAX_ENUMERATED_RULES: usize = 12;

/// How a feature value is produced, so that a witness can be built for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Recipe {
    /// `domain_match`: exactly the domain rules `rules` apply (indices), and
    /// the tool declares `domains` (indices into the plan's domains, in order).
    Domain {
        /// Rules that apply.
        rules: Vec<usize>,
        /// The tool's domains.
        domains: Vec<usize>,
    },
    /// `keyword_match`: the intent holds every trigger term of the tool
    /// (`share` 1), half of them with nothing else (`share` 1/2: a made-up
    /// tool with two trigger terms per intent term), or none (`share` 0).
    Keyword {
        /// The share of the tool's trigger terms in the intent: 0, 1/2 or 1.
        share: f64,
    },
    /// `stage_match`: the context's stage is a preferred stage of the tool.
    Stage {
        /// Hit (else miss).
        hit: bool,
    },
    /// `usage_bonus`: the tool's normalised usage (0, 1/2 or 1).
    Usage {
        /// Normalised usage in \[0,1\].
        share: f64,
    },
    /// `priority_bonus`: the tool's `base_priority`.
    Priority(f64),
    /// `complexity_penalty`: the tool's `parameter_complexity`.
    Complexity(i64),
    /// `recency_bonus`: the tool was called within the window.
    Recency {
        /// Called within the window.
        recent: bool,
    },
    /// A value fixed by the tool's tags (catalog scope).
    Fixed,
}

/// A value a feature takes, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The feature's value.
    pub value: f64,
    /// How to produce it.
    pub recipe: Recipe,
}

/// The range of one feature: a sound interval and the values known to be
/// produced by some recipe (candidates: a witness confirms them).
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureRange {
    /// Holds every value the feature can take.
    pub interval: Interval,
    /// Values with a recipe; they include the interval's ends when a recipe
    /// for them is known.
    pub points: Vec<Point>,
}

impl FeatureRange {
    fn from_points(points: Vec<Point>) -> Self {
        let values: Vec<f64> = points.iter().map(|p| p.value).collect();
        FeatureRange {
            interval: Interval::hull_of(&values),
            points,
        }
    }
}

/// The domain rules that apply together, and the normalised domain weights
/// with their sum they give (`None`: the neutral value applies).
pub type Combination = (Vec<usize>, Option<(Vec<f64>, f64)>);

/// The domain weights that each combination of domain rules gives.
#[derive(Debug, Clone)]
pub struct DomainWeights {
    /// Per combination (when at most [`MAX_ENUMERATED_RULES`] rules): the
    /// rules that apply, and the normalised weights with their sum (`None`:
    /// the neutral value applies).
    pub combinations: Option<Vec<Combination>>,
    /// Each domain's weight before normalisation, over every combination.
    pub weights: Vec<Interval>,
    /// Their total.
    pub total: Interval,
    /// The rules that hold in an empty context (their combination, normalised).
    pub base: Combination,
}

/// The normalised weights when exactly `rules` apply, computed as evaluate
/// computes them (`None` when the neutral value applies).
pub fn normalise(plan: &Plan, rules: &[usize]) -> Option<(Vec<f64>, f64)> {
    let mut w = plan.domain_base.clone();
    for &k in rules {
        for (d, delta) in &plan.rules[k].adjust {
            w[*d] += delta;
        }
    }
    let total: f64 = w.iter().sum();
    if w.is_empty() || total == 0.0 {
        return None;
    }
    for x in w.iter_mut() {
        *x /= total;
    }
    let t: f64 = w.iter().sum();
    (t != 0.0).then_some((w, t))
}

/// Whether the domain rules `rules` can all hold in one context: their
/// `language`, `project_type` and `stage` lists (those given) share a value.
/// Combinations that cannot are left out of the bounds (soundly: no context
/// fires them together).
pub fn compatible(plan: &Plan, rules: &[usize]) -> bool {
    let conds: Vec<_> = rules.iter().map(|&k| &plan.rules[k].condition).collect();
    let shared = |lists: Vec<&Vec<String>>| {
        let lists: Vec<&Vec<String>> = lists.into_iter().filter(|l| !l.is_empty()).collect();
        match lists.split_first() {
            None => true,
            Some((first, rest)) => first.iter().any(|x| {
                rest.iter()
                    .all(|l| l.iter().any(|y| y.eq_ignore_ascii_case(x)))
            }),
        }
    };
    shared(conds.iter().map(|c| &c.language).collect())
        && shared(conds.iter().map(|c| &c.project_type).collect())
        && shared(conds.iter().map(|c| &c.stage).collect())
}

/// The rules that hold in an empty context (no stage, language, keywords...).
pub fn base_rules(plan: &Plan) -> Vec<usize> {
    let ctx = SessionContext::default();
    let usage = UsageStats::default();
    let facts = Facts::new(&ctx, &usage, &[], &[]);
    (0..plan.rules.len())
        .filter(|&k| plan.rules[k].condition.holds(&facts).0)
        .collect()
}

impl DomainWeights {
    /// Enumerates the rule combinations of `plan` (or bounds them).
    pub fn of(plan: &Plan) -> Self {
        let n = plan.rules.len();
        let combinations = (n <= MAX_ENUMERATED_RULES).then(|| {
            let mut masks: Vec<u32> = (0..(1u32 << n)).collect();
            // fewest rules first: the simplest witness wins ties
            masks.sort_by_key(|m| (m.count_ones(), *m));
            masks
                .into_iter()
                .map(|m| (0..n).filter(|k| m & (1 << k) != 0).collect::<Vec<usize>>())
                .filter(|rules| compatible(plan, rules))
                .map(|rules| {
                    let norm = normalise(plan, &rules);
                    (rules, norm)
                })
                .collect()
        });
        let mut weights: Vec<Interval> = plan
            .domain_base
            .iter()
            .map(|&b| Interval::point(b))
            .collect();
        for r in &plan.rules {
            for (d, delta) in &r.adjust {
                let w = &mut weights[*d];
                *w = w.hull(*w + Interval::point(*delta));
            }
        }
        let total = weights.iter().fold(Interval::point(0.0), |a, w| a + *w);
        let rules = base_rules(plan);
        let norm = normalise(plan, &rules);
        DomainWeights {
            combinations,
            weights,
            total,
            base: (rules, norm),
        }
    }

    /// Whether the neutral value can apply.
    fn neutral_possible(&self) -> bool {
        match &self.combinations {
            Some(c) => c.iter().any(|(_, n)| n.is_none()),
            None => self.weights.is_empty() || self.total.contains(0.0),
        }
    }
}

/// `domain_match` of a tool with `domains` under normalised weights.
pub fn domain_value(plan: &Plan, norm: &Option<(Vec<f64>, f64)>, domains: &[usize]) -> f64 {
    match norm {
        None => plan.features.domain_neutral,
        Some((w, t)) => {
            let mut matched = 0.0;
            for &d in domains {
                matched += w[d];
            }
            matched / t
        }
    }
}

/// An interval for `domain_match` when the rule combinations are not
/// enumerated: the domains' weight intervals over the total's.
fn domain_fallback(plan: &Plan, dw: &DomainWeights, domains: Option<&[usize]>) -> Interval {
    let neutral = Interval::point(plan.features.domain_neutral);
    if dw.weights.is_empty() || dw.total.lo <= 0.0 {
        return Interval::everything().hull(neutral);
    }
    let (num, distinct) = match domains {
        Some(ds) => {
            let num = ds
                .iter()
                .fold(Interval::point(0.0), |a, &d| a + dw.weights[d]);
            let mut seen = ds.to_vec();
            seen.sort_unstable();
            seen.dedup();
            (num, seen.len() == ds.len())
        }
        None => {
            // any set of distinct domains: the negative parts to the positive parts
            let lo: f64 = dw.weights.iter().map(|w| w.lo.min(0.0)).sum();
            let hi: f64 = dw.weights.iter().map(|w| w.hi.max(0.0)).sum();
            (Interval::new(lo, hi), true)
        }
    };
    let mut share = num / dw.total;
    if distinct && dw.weights.iter().all(|w| w.lo >= 0.0) {
        share.lo = share.lo.max(0.0);
        share.hi = share.hi.min(1.0);
    }
    share
}

/// `domain_match` over any tool the policy admits (any set of distinct domains).
fn policy_domain(plan: &Plan, dw: &DomainWeights) -> FeatureRange {
    let mut points: Vec<Point> = Vec::new();
    let mut lo: Option<Point> = None;
    let mut hi: Option<Point> = None;
    let mut neutral: Option<Point> = None;
    let consider = |p: Point, lo: &mut Option<Point>, hi: &mut Option<Point>| {
        if lo.as_ref().is_none_or(|l| p.value < l.value) {
            *lo = Some(p.clone());
        }
        if hi.as_ref().is_none_or(|h| p.value > h.value) {
            *hi = Some(p);
        }
    };
    let combos: Vec<Combination> = match &dw.combinations {
        Some(c) => c.clone(),
        None => vec![dw.base.clone()],
    };
    for (rules, norm) in &combos {
        match norm {
            None => {
                if neutral.is_none() {
                    neutral = Some(Point {
                        value: plan.features.domain_neutral,
                        recipe: Recipe::Domain {
                            rules: rules.clone(),
                            domains: vec![],
                        },
                    });
                }
            }
            Some((w, _)) => {
                let pos: Vec<usize> = (0..w.len()).filter(|&d| w[d] > 0.0).collect();
                let neg: Vec<usize> = (0..w.len()).filter(|&d| w[d] < 0.0).collect();
                for ds in [neg, pos] {
                    let p = Point {
                        value: domain_value(plan, norm, &ds),
                        recipe: Recipe::Domain {
                            rules: rules.clone(),
                            domains: ds,
                        },
                    };
                    consider(p, &mut lo, &mut hi);
                }
            }
        }
    }
    points.extend(lo);
    points.extend(hi);
    if let Some(n) = neutral {
        points.push(n);
    }
    // intermediate values in the empty context: one domain at a time
    if let (rules, norm @ Some((w, _))) = &dw.base {
        for d in 0..w.len().min(8) {
            points.push(Point {
                value: domain_value(plan, norm, &[d]),
                recipe: Recipe::Domain {
                    rules: rules.clone(),
                    domains: vec![d],
                },
            });
        }
    }
    dedup_points(&mut points);
    let mut range = FeatureRange::from_points(points);
    if dw.combinations.is_none() {
        range.interval = range.interval.hull(domain_fallback(plan, dw, None));
    }
    if dw.neutral_possible() {
        range.interval = range
            .interval
            .hull(Interval::point(plan.features.domain_neutral));
    }
    range
}

/// `domain_match` of one tool (its domains fixed) over every rule combination.
fn tool_domain(plan: &Plan, dw: &DomainWeights, domains: &[usize]) -> FeatureRange {
    let Some(combos) = &dw.combinations else {
        let (rules, norm) = &dw.base;
        let p = Point {
            value: domain_value(plan, norm, domains),
            recipe: Recipe::Domain {
                rules: rules.clone(),
                domains: domains.to_vec(),
            },
        };
        let mut r = FeatureRange::from_points(vec![p]);
        r.interval = r.interval.hull(domain_fallback(plan, dw, Some(domains)));
        return r;
    };
    let mut lo: Option<(f64, &Vec<usize>)> = None;
    let mut hi: Option<(f64, &Vec<usize>)> = None;
    for (rules, norm) in combos {
        let v = domain_value(plan, norm, domains);
        if v.is_nan() {
            continue;
        }
        if lo.is_none_or(|l| v < l.0) {
            lo = Some((v, rules));
        }
        if hi.is_none_or(|h| v > h.0) {
            hi = Some((v, rules));
        }
    }
    let mut points: Vec<Point> = [lo, hi]
        .into_iter()
        .flatten()
        .map(|(v, rules)| Point {
            value: v,
            recipe: Recipe::Domain {
                rules: rules.clone(),
                domains: domains.to_vec(),
            },
        })
        .collect();
    dedup_points(&mut points);
    FeatureRange::from_points(points)
}

fn dedup_points(points: &mut Vec<Point>) {
    let mut seen: Vec<u64> = Vec::new();
    points.retain(|p| {
        let b = p.value.to_bits();
        if seen.contains(&b) {
            false
        } else {
            seen.push(b);
            true
        }
    });
}

fn usage_value(plan: &Plan, share: f64) -> f64 {
    let fp = &plan.features;
    (share * fp.usage_multiplier).min(fp.usage_cap)
}

fn penalty(plan: &Plan, c: i64) -> f64 {
    let fp = &plan.features;
    ((c - fp.complexity_min) as f64 / (fp.complexity_max - fp.complexity_min) as f64)
        .min(fp.complexity_cap)
}

fn usage_range(plan: &Plan, grid: bool) -> FeatureRange {
    let shares: &[f64] = if grid { &[0.0, 0.5, 1.0] } else { &[0.0, 1.0] };
    let mut points: Vec<Point> = shares
        .iter()
        .map(|&s| Point {
            value: usage_value(plan, s),
            recipe: Recipe::Usage { share: s },
        })
        .collect();
    dedup_points(&mut points);
    let mut r = FeatureRange::from_points(points);
    // min(u * m, cap) is monotone in u: its ends bound it
    r.interval = r.interval.hull(Interval::new(
        usage_value(plan, 0.0),
        usage_value(plan, 1.0),
    ));
    r
}

fn recency_range(plan: &Plan) -> FeatureRange {
    let fp = &plan.features;
    let mut points = vec![Point {
        value: 0.0,
        recipe: Recipe::Recency { recent: false },
    }];
    // called 0 s ago counts when 0 < window
    if fp.recency_window_seconds > 0.0 {
        points.push(Point {
            value: fp.recency_bonus,
            recipe: Recipe::Recency { recent: true },
        });
    }
    dedup_points(&mut points);
    FeatureRange::from_points(points)
}

/// `transition_match`: 0 (no call before, or a last call it does not follow)
/// and, with `[features.transition_match]`, at most `max(declared, 1)` (a
/// smoothed probability, or the declared value). The upper end is listed as
/// a point for searches, but no witness is built for it: a bound that needs
/// it is reported as a bound only.
fn transition_range(plan: &Plan) -> FeatureRange {
    let mut r = FeatureRange::from_points(vec![Point {
        value: 0.0,
        recipe: Recipe::Fixed,
    }]);
    if let Some(t) = &plan.transitions {
        let hi = t.declared.max(1.0);
        // Listed for searches (monotonicity); no witness reaches it.
        r.points.push(Point {
            value: hi,
            recipe: Recipe::Fixed,
        });
        r.interval = Interval::new(0.0, hi);
    }
    r
}

/// `semantic_match`: 0 (a request with no known token, or a tool no closer
/// than orthogonal) and, with `[features.semantic_match]`, up to 1 (the
/// closest tool under normalization `"best"`). The upper end is listed as a
/// point for searches; no witness is built for it.
fn semantic_range(plan: &Plan) -> FeatureRange {
    let mut r = FeatureRange::from_points(vec![Point {
        value: 0.0,
        recipe: Recipe::Fixed,
    }]);
    if plan.semantic.is_some() {
        r.points.push(Point {
            value: 1.0,
            recipe: Recipe::Fixed,
        });
        r.interval = Interval::new(0.0, 1.0);
    }
    r
}

fn stage_range(plan: &Plan, can_hit: bool) -> FeatureRange {
    let fp = &plan.features;
    let mut points = vec![Point {
        value: fp.stage_miss,
        recipe: Recipe::Stage { hit: false },
    }];
    if can_hit && !plan.stages.is_empty() {
        points.push(Point {
            value: fp.stage_hit,
            recipe: Recipe::Stage { hit: true },
        });
    }
    dedup_points(&mut points);
    FeatureRange::from_points(points)
}

fn keyword_range(can_match: bool, half: bool) -> FeatureRange {
    let shares: &[f64] = match (can_match, half) {
        (false, _) => &[0.0],
        (true, false) => &[0.0, 1.0],
        (true, true) => &[0.0, 0.5, 1.0],
    };
    FeatureRange::from_points(
        shares
            .iter()
            .map(|&s| Point {
                value: s,
                recipe: Recipe::Keyword { share: s },
            })
            .collect(),
    )
}

/// The features' ranges over any tool the policy admits. With `grid`,
/// intermediate values are listed too (usage 1/2, priority 1/2, every
/// complexity level, single domains), for searches.
pub fn policy_ranges(plan: &Plan, dw: &DomainWeights, grid: bool) -> [FeatureRange; N_FEATURES] {
    let fp = &plan.features;
    let mut domain = policy_domain(plan, dw);
    if !grid {
        // ends and neutral only
        let keep: Vec<Point> = domain
            .points
            .iter()
            .filter(|p| {
                p.value == domain.interval.lo
                    || p.value == domain.interval.hi
                    || p.value == fp.domain_neutral
            })
            .cloned()
            .collect();
        domain.points = keep;
    }
    let priorities: &[f64] = if grid { &[0.0, 0.5, 1.0] } else { &[0.0, 1.0] };
    let priority = FeatureRange::from_points(
        priorities
            .iter()
            .map(|&p| Point {
                value: p,
                recipe: Recipe::Priority(p),
            })
            .collect(),
    );
    let (cmin, cmax) = (fp.complexity_min, fp.complexity_max);
    let mut levels: Vec<i64> = vec![cmin, cmax];
    if grid {
        let steps = (cmax - cmin).min(8);
        for k in 1..steps {
            levels.push(cmin + (cmax - cmin) * k / steps);
        }
    }
    let mut cpoints: Vec<Point> = levels
        .iter()
        .map(|&c| Point {
            value: penalty(plan, c),
            recipe: Recipe::Complexity(c),
        })
        .collect();
    dedup_points(&mut cpoints);
    let complexity = FeatureRange::from_points(cpoints);
    let mut out = [
        domain,
        keyword_range(true, grid && fp.keyword_method != KeywordMethod::Bm25),
        stage_range(plan, true),
        usage_range(plan, grid),
        priority,
        complexity,
        recency_range(plan),
        transition_range(plan),
        semantic_range(plan),
    ];
    if fp.keyword_method == KeywordMethod::Bm25 {
        out[F_KEYWORD].interval = Interval::new(0.0, 1.0);
    }
    out
}

/// The features' ranges for tool `i` of the plan (its tags fixed).
pub fn tool_ranges(plan: &Plan, dw: &DomainWeights, i: usize) -> [FeatureRange; N_FEATURES] {
    let t = &plan.tools[i];
    let domains: Vec<usize> = t.domains.iter().map(|&d| d as usize).collect();
    let fixed = |v: f64| FeatureRange {
        interval: Interval::point(v),
        points: vec![Point {
            value: v,
            recipe: Recipe::Fixed,
        }],
    };
    let can_match = match plan.features.keyword_method {
        KeywordMethod::Bm25 => true,
        _ => !t.keyword_ids.is_empty(),
    };
    let mut keyword = keyword_range(can_match, false);
    if plan.features.keyword_method == KeywordMethod::Bm25 {
        keyword.interval = Interval::new(0.0, 1.0);
    }
    [
        tool_domain(plan, dw, &domains),
        keyword,
        stage_range(plan, t.stage_mask != 0),
        usage_range(plan, false),
        fixed(t.base_priority),
        fixed(t.complexity_penalty),
        recency_range(plan),
        transition_range(plan),
        semantic_range(plan),
    ]
}

/// The intervals of a set of ranges.
pub fn intervals(ranges: &[FeatureRange; N_FEATURES]) -> [Interval; N_FEATURES] {
    std::array::from_fn(|f| ranges[f].interval)
}

/// Which features the formula reads.
pub fn used_features(plan: &Plan) -> [bool; N_FEATURES] {
    let mut used = [false; N_FEATURES];
    for t in &plan.formula.terms {
        for &f in &t.features {
            used[f as usize] = true;
        }
    }
    used
}

/// A combination of feature points: one index into each feature's `points`,
/// and the raw score the formula gives there.
#[derive(Debug, Clone, PartialEq)]
pub struct Corner {
    /// Per feature, an index into its range's points.
    pub picks: [usize; N_FEATURES],
    /// The formula's value there.
    pub value: f64,
}

impl Corner {
    /// The feature values of this corner.
    pub fn features(&self, ranges: &[FeatureRange; N_FEATURES]) -> [f64; N_FEATURES] {
        std::array::from_fn(|f| ranges[f].points[self.picks[f]].value)
    }
}

/// The lowest and highest formula values over every combination of points
/// (features the formula does not read keep their first point). NaN values
/// are skipped.
pub fn extreme_corners(
    plan: &Plan,
    ranges: &[FeatureRange; N_FEATURES],
) -> (Option<Corner>, Option<Corner>) {
    let used = used_features(plan);
    let counts: [usize; N_FEATURES] = std::array::from_fn(|f| {
        if used[f] {
            ranges[f].points.len()
        } else {
            1.min(ranges[f].points.len())
        }
    });
    if counts.contains(&0) {
        return (None, None);
    }
    let mut lo: Option<Corner> = None;
    let mut hi: Option<Corner> = None;
    let mut picks = [0usize; N_FEATURES];
    loop {
        let x: [f64; N_FEATURES] = std::array::from_fn(|f| ranges[f].points[picks[f]].value);
        let v = plan.formula.eval(&x, None);
        if !v.is_nan() {
            if lo.as_ref().is_none_or(|l| v < l.value) {
                lo = Some(Corner { picks, value: v });
            }
            if hi.as_ref().is_none_or(|h| v > h.value) {
                hi = Some(Corner { picks, value: v });
            }
        }
        // next combination
        let mut f = 0;
        loop {
            if f == N_FEATURES {
                return (lo, hi);
            }
            picks[f] += 1;
            if picks[f] < counts[f] {
                break;
            }
            picks[f] = 0;
            f += 1;
        }
    }
}

/// The raw-score bounds of one scope: the interval and each term's.
#[derive(Debug, Clone)]
pub struct RawBounds {
    /// Holds every raw score.
    pub raw: Interval,
    /// Each term's signed contribution.
    pub terms: Vec<Interval>,
}

/// Interval-evaluates the plan's formula over `ranges`.
pub fn raw_bounds(plan: &Plan, ranges: &[FeatureRange; N_FEATURES]) -> RawBounds {
    let (raw, terms) = eval_formula(&plan.formula, &intervals(ranges));
    RawBounds { raw, terms }
}

/// `x` clamped as evaluate clamps scores.
pub fn clamp(plan: &Plan, x: f64) -> f64 {
    x.min(plan.clamp.1).max(plan.clamp.0)
}

/// A number for messages: at most 6 decimals, no trailing zeros; past
/// [`crate::diag::MAX_ECHOED_NUMBER`] characters, the exponent form.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.len() > crate::diag::MAX_ECHOED_NUMBER {
        // 1e300: the exponent form, never 301 digits
        return format!("{x:e}");
    }
    if s == "-0" { "0".into() } else { s.to_string() }
}
