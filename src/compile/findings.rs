//! The load-time findings of the score bounds ([`super::bounds`], policy
//! scope), each at file:line:column:
//!
//! * the threshold, or the cold-start threshold, above the highest score
//!   (the clamped upper bound of the raw score) is an error: no tool can ever
//!   be active;
//! * the threshold, or the cold-start threshold, at or below the lowest score
//!   is a warning: every tool passes it;
//! * a term whose value can never change whether a tool is active is a
//!   warning: it is constant, or, whatever the other terms sum to, adding it
//!   never crosses a threshold. The other terms' sums are kept as a union of
//!   intervals, so discrete features (a stage hit or miss, the recency bonus
//!   or none, the complexity levels) leave gaps where a small term cannot
//!   matter. With `max_active` or `min_active` only constant terms are
//!   reported (any varying term can reorder tools);
//! * raw scores beyond the clamp, for inputs that reach them (the extreme
//!   combination of feature values), are a warning: scores past the clamp tie;
//! * a weight too large for any score to mean anything is an error, and the
//!   only finding then; raw scores all at or beyond one end of the clamp
//!   give one warning instead of the threshold's and the terms'
//!   ([`super::weights`]).

use crate::diag::{Diagnostic, ErrorKind};
use crate::parse::policy::{PolicySource, Sp};
use crate::plan::{F_COMPLEXITY, F_RECENCY, F_STAGE, N_FEATURES, Plan};

use super::bounds::{
    DomainWeights, FeatureRange, Interval, clamp, extreme_corners, num, policy_ranges, raw_bounds,
};

/// Margin of the term finding: a term is reported only when it misses every
/// threshold by at least this much.
const EPS: f64 = 1e-9;

/// At most this many intervals are kept in a union (closest ones merge).
const MAX_PIECES: usize = 256;

/// Sorts and merges overlapping intervals; merges across the smallest gaps
/// while there are more than [`MAX_PIECES`] (a superset: still sound).
fn normalize(mut v: Vec<Interval>) -> Vec<Interval> {
    v.sort_by(|a, b| a.lo.total_cmp(&b.lo));
    let mut out: Vec<Interval> = Vec::with_capacity(v.len());
    for x in v {
        match out.last_mut() {
            Some(last) if x.lo <= last.hi => *last = last.hull(x),
            _ => out.push(x),
        }
    }
    while out.len() > MAX_PIECES {
        let k = (0..out.len() - 1)
            .min_by(|&a, &b| (out[a + 1].lo - out[a].hi).total_cmp(&(out[b + 1].lo - out[b].hi)))
            .unwrap_or(0);
        let merged = out[k].hull(out[k + 1]);
        out[k] = merged;
        out.remove(k + 1);
    }
    out
}

/// The values a feature takes as a union: points for the discrete ones
/// (stage, recency, complexity levels), the interval for the others.
fn feature_set(plan: &Plan, ranges: &[FeatureRange; N_FEATURES], f: usize) -> Vec<Interval> {
    let r = &ranges[f];
    match f {
        F_STAGE | F_RECENCY => {
            normalize(r.points.iter().map(|p| Interval::point(p.value)).collect())
        }
        F_COMPLEXITY => {
            let fp = &plan.features;
            let (lo, hi) = (fp.complexity_min, fp.complexity_max);
            if hi - lo > 64 {
                return vec![r.interval];
            }
            normalize(
                (lo..=hi)
                    .map(|c| {
                        Interval::point(((c - lo) as f64 / (hi - lo) as f64).min(fp.complexity_cap))
                    })
                    .collect(),
            )
        }
        _ => vec![r.interval],
    }
}

/// The values term `k` contributes: `weight × feature` over the feature's
/// set, else its interval.
fn term_set(
    plan: &Plan,
    ranges: &[FeatureRange; N_FEATURES],
    k: usize,
    hull: Interval,
) -> Vec<Interval> {
    let t = &plan.formula.terms[k];
    match (t.linear, t.features.as_slice()) {
        (Some((f, w)), [g]) if f == *g => {
            let w = if t.sign < 0.0 { -w } else { w };
            normalize(
                feature_set(plan, ranges, f as usize)
                    .into_iter()
                    .map(|x| Interval::point(w) * x)
                    .collect(),
            )
        }
        _ => vec![hull],
    }
}

/// The Minkowski sum of unions of intervals.
fn sum_sets<'a>(sets: impl Iterator<Item = &'a [Interval]>) -> Vec<Interval> {
    let mut acc = vec![Interval::point(0.0)];
    for s in sets {
        let mut next = Vec::with_capacity(acc.len() * s.len());
        for a in &acc {
            for b in s {
                next.push(*a + *b);
            }
        }
        acc = normalize(next);
    }
    acc
}

/// The byte spans of the formula's top-level terms in the policy text, when
/// the formula is written as a plain string and splits into as many terms as
/// the lowered formula has.
fn term_spans(policy: &PolicySource, n: usize) -> Option<Vec<std::ops::Range<usize>>> {
    let f: &Sp<String> = &policy.formula;
    let raw = policy.file.text.get(f.span.clone())?;
    let quote = raw.chars().next()?;
    if !(quote == '"' || quote == '\'') || raw.get(1..raw.len() - 1)? != f.value {
        return None;
    }
    let base = f.span.start + 1;
    let s = f.value.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut prev: Option<u8> = None; // last non-space byte
    for (i, &c) in s.iter().enumerate() {
        match c {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b'+' | b'-' if depth == 0 => {
                let operand_before = prev.is_some_and(|p| {
                    p.is_ascii_alphanumeric() || p == b'_' || p == b')' || p == b'.'
                });
                // 1e-5: a sign inside a number
                let exponent = matches!(prev, Some(b'e' | b'E'))
                    && i >= 2
                    && s[..i - 1]
                        .iter()
                        .rev()
                        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'.' || **b == b'_')
                        .last()
                        .is_some_and(|b| b.is_ascii_digit());
                if operand_before && !exponent {
                    out.push(start..i);
                    start = i + 1;
                }
            }
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            prev = Some(c);
        }
    }
    out.push(start..s.len());
    if out.len() != n {
        return None;
    }
    Some(
        out.into_iter()
            .map(|r| {
                let text = &f.value[r.clone()];
                let lead = text.len() - text.trim_start().len();
                let trail = text.len() - text.trim_end().len();
                base + r.start + lead..base + r.end - trail
            })
            .collect(),
    )
}

/// Load-time findings of the score bounds (policy scope): errors and warnings.
#[derive(Debug, Default)]
pub struct Findings {
    /// Problems that fail the load.
    pub errors: Vec<Diagnostic>,
    /// Problems reported beside a good plan.
    pub warnings: Vec<Diagnostic>,
    /// Facts worth knowing that are no problem: raw scores beyond the
    /// declared clamp (the policy clamps on purpose, as the seed's formula
    /// does), over any tool the policy admits.
    pub notes: Vec<Diagnostic>,
}

/// The static findings of `plan` (compiled from `policy`), over any tool the
/// policy admits:
///
/// * the threshold, or the cold-start threshold, above the highest score
///   (the clamped upper bound of the raw score): an error;
/// * the threshold, or the cold-start threshold, at or below the lowest
///   score: a warning (every tool passes it);
/// * a term whose value can never change whether a tool is active (it is
///   constant, or the other terms always decide before it counts): a warning;
/// * raw scores beyond the clamp for inputs that reach them: a note (the
///   clamp is declared, so cutting them is by design), saying that it
///   covers any tool the policy admits.
pub fn findings(policy: &PolicySource, plan: &Plan) -> Findings {
    // A weight past the clamp's rounding (super::weights) makes every bound
    // below meaningless: its error alone.
    let mut out = Findings {
        errors: super::weights::absurd_weights(policy),
        ..Findings::default()
    };
    if !out.errors.is_empty() {
        return out;
    }
    let dw = DomainWeights::of(plan);
    let ranges = policy_ranges(plan, &dw, false);
    let b = raw_bounds(plan, &ranges);
    let (clo, chi) = plan.clamp;
    let at = |kind: ErrorKind, span: std::ops::Range<usize>, msg: String| {
        Diagnostic::at(kind, &policy.file, span, msg)
    };
    let t = plan.threshold;
    let t_span = policy.activation.threshold.span.clone();
    let raw = b.raw;
    let highest = if raw.is_empty() {
        clo
    } else {
        clamp(plan, raw.hi)
    };
    let lowest = if raw.is_empty() {
        clo
    } else {
        clamp(plan, raw.lo)
    };
    let highest_text = if !raw.is_empty() && raw.hi > chi {
        format!(
            "{} (raw scores reach {} and are clamped to [{}, {}])",
            num(highest),
            num(raw.hi),
            num(clo),
            num(chi)
        )
    } else {
        num(highest)
    };
    let cold = policy.activation.cold_start.as_ref();
    if t > highest {
        out.errors.push(
            at(
                ErrorKind::OutOfRange,
                t_span.clone(),
                format!("threshold {} can never be reached: the highest score is {highest_text}", num(t)),
            )
            .with_help(format!(
                "no tool can ever be active; lower the threshold to at most {} or raise the weights",
                num(highest)
            )),
        );
    }
    let tc = plan.cold_start.map(|(_, f)| t * f);
    if let (Some(tc), Some(c)) = (tc, cold)
        && tc > highest
        && t <= highest
    {
        out.errors.push(at(
            ErrorKind::OutOfRange,
            c.threshold_factor.span.clone(),
            format!(
                "the cold-start threshold {} (threshold {} × {}) can never be reached: the highest score is {highest_text}",
                num(tc),
                num(t),
                num(c.threshold_factor.value)
            ),
        ));
    }
    // Every score at one end of the clamp: one finding says it all.
    if !raw.is_empty() && (raw.lo >= chi || raw.hi <= clo) {
        out.warnings.push(super::weights::pinned_scores(
            policy,
            (raw.lo, raw.hi),
            (clo, chi),
        ));
        return out;
    }
    if t <= lowest {
        out.warnings.push(at(
            ErrorKind::OutOfRange,
            t_span.clone(),
            format!(
                "threshold {} is at or below the lowest score {}: every tool passes it in every session",
                num(t),
                num(lowest)
            ),
        ));
    } else if let (Some(tc), Some(c)) = (tc, cold)
        && tc <= lowest
    {
        out.warnings.push(at(
            ErrorKind::OutOfRange,
            c.threshold_factor.span.clone(),
            format!(
                "the cold-start threshold {} is at or below the lowest score {}: every tool passes it until the session has made {} calls",
                num(tc),
                num(lowest),
                c.min_calls
            ),
        ));
    }

    // Terms that never change an activation.
    let mut thresholds = vec![t];
    thresholds.extend(tc);
    if plan.hysteresis_margin > 0.0 {
        let m = plan.hysteresis_margin;
        thresholds.extend(thresholds.clone().iter().map(|x| x - m));
    }
    let deciding: Vec<f64> = thresholds
        .iter()
        .copied()
        .filter(|&x| clo < x && x <= chi)
        .collect();
    let ranked = plan.max_active.is_some() || plan.min_active > 0;
    let spans = term_spans(policy, plan.formula.terms.len());
    if !deciding.is_empty() {
        let sets: Vec<Vec<Interval>> = (0..plan.formula.terms.len())
            .map(|k| term_set(plan, &ranges, k, b.terms[k]))
            .collect();
        for (k, term) in plan.formula.terms.iter().enumerate() {
            let c = b.terms[k];
            if c.nan || c.is_empty() {
                continue;
            }
            let text = if term.sign < 0.0 {
                format!("-({})", term.text)
            } else {
                term.text.clone()
            };
            let span = spans
                .as_ref()
                .map(|s| s[k].clone())
                .unwrap_or(policy.formula.span.clone());
            if c.lo == c.hi {
                let msg = if c.lo == 0.0 {
                    format!("term `{text}` is always 0: it never changes any activation")
                } else {
                    format!(
                        "term `{text}` is always {}: it shifts every score alike and never changes any activation by itself (fold it into the threshold)",
                        num(c.lo)
                    )
                };
                out.warnings.push(at(ErrorKind::InvalidValue, span, msg));
                continue;
            }
            if ranked {
                // a term that never decides a threshold still reorders tools
                // for max_active and min_active
                continue;
            }
            let rest = sum_sets(
                sets.iter()
                    .enumerate()
                    .filter(|(j, _)| *j != k)
                    .map(|(_, s)| s.as_slice()),
            );
            if rest.iter().any(|r| r.nan || r.is_empty()) || rest.is_empty() {
                continue;
            }
            // The term matters when some value r of the other terms has
            // r + lo < threshold <= r + hi.
            let inert = deciding.iter().all(|&x| {
                rest.iter()
                    .all(|r| r.lo + c.lo >= x + EPS || r.hi + c.hi < x - EPS)
            });
            if inert {
                let shown: Vec<String> = rest
                    .iter()
                    .take(4)
                    .map(|r| {
                        if r.lo == r.hi {
                            num(r.lo)
                        } else {
                            format!("[{}, {}]", num(r.lo), num(r.hi))
                        }
                    })
                    .collect();
                let more = if rest.len() > 4 {
                    format!(", {}", crate::diag::more(rest.len() - 4))
                } else {
                    String::new()
                };
                out.warnings.push(at(
                    ErrorKind::InvalidValue,
                    span,
                    format!(
                        "term `{text}` (from {} to {}) can never change any activation: the other terms sum to {}{more}, and from none of these values does it cross the threshold {}",
                        num(c.lo),
                        num(c.hi),
                        shown.join(" or "),
                        deciding.iter().map(|x| num(*x)).collect::<Vec<_>>().join(" or ")
                    ),
                ));
            }
        }
    }

    // Raw scores beyond the clamp, for inputs that reach them (the extreme
    // combinations of feature values).
    let (lo_corner, hi_corner) = extreme_corners(plan, &ranges);
    let clamp_span = policy.activation.clamp.span.clone();
    if let Some(h) = hi_corner
        && h.value > chi
    {
        out.notes.push(at(
            ErrorKind::OutOfRange,
            clamp_span.clone(),
            format!(
                "for some tool the policy admits, raw scores reach {}, above the declared clamp's upper bound {}: the clamp makes every score from {} to {} a {} (they tie), as it declares (the seed's formula clamps by design)",
                num(h.value),
                num(chi),
                num(chi),
                num(h.value),
                num(chi)
            ),
        ));
    }
    if let Some(l) = lo_corner
        && l.value < clo
    {
        out.notes.push(at(
            ErrorKind::OutOfRange,
            clamp_span,
            format!(
                "for some tool the policy admits, raw scores go down to {}, below the declared clamp's lower bound {}: the clamp makes every score from {} to {} a {}, as it declares (the seed's formula clamps by design)",
                num(l.value),
                num(clo),
                num(l.value),
                num(clo),
                num(clo)
            ),
        ));
    }
    out
}
