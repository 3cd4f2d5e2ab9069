//! Weights too large for a score to mean anything (issue 29): an error at
//! the weight's value, echoed as written.
//!
//! A score is a sum of terms in `f64` and then clamped to the policy's
//! `[activation] clamp = [low, high]`. Once a weight's magnitude exceeds
//! `(high − low) / ε` (ε = 2⁻⁵², `f64::EPSILON`: 4.5e15 for the clamp
//! `[0, 1]`), one rounding step of its term is wider than the whole clamp:
//! every other term is lost to rounding, each score lands outside the
//! clamp or at one of its ends, and the threshold decides nothing. Such a
//! weight (`w_stage = 1e300`) is refused, whatever the formula does with
//! it; the bound comes from the clamp and the arithmetic, not from a
//! constant of the formula. A smaller weight that still drowns the other
//! terms loads, with the bound findings' warnings ([`super::findings`]).

use crate::diag::{Diagnostic, ErrorKind};
use crate::parse::policy::PolicySource;

/// The largest weight magnitude that keeps every term within rounding of
/// the clamp `[low, high]`: `(high − low) / f64::EPSILON` (`None` for an
/// empty or non-finite clamp, where no score varies anyway).
pub fn max_weight(clamp: (f64, f64)) -> Option<f64> {
    let width = clamp.1 - clamp.0;
    (width.is_finite() && width > 0.0).then(|| width / f64::EPSILON)
}

/// One error per weight of `[score.weights]` beyond [`max_weight`], at
/// the weight's value (its key when the value cannot be found), the number
/// as written (`1e300`, never 301 digits).
pub fn absurd_weights(policy: &PolicySource) -> Vec<Diagnostic> {
    let (lo, hi) = policy.activation.clamp.value;
    let Some(max) = max_weight((lo, hi)) else {
        return Vec::new();
    };
    let text: &str = &policy.file.text;
    let mut out = Vec::new();
    for (name, w) in &policy.weights {
        if w.abs() <= max {
            continue;
        }
        let span = value_span(text, &name.value).unwrap_or(name.span.clone());
        let written = text
            .get(span.clone())
            .filter(|s| {
                s.trim_start()
                    .starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c))
            })
            .map(|s| crate::diag::number_as_written(s).into_owned())
            .unwrap_or_else(|| crate::diag::short_number(*w));
        out.push(
            Diagnostic::at(
                ErrorKind::OutOfRange,
                &policy.file,
                span,
                format!(
                    "weight `{}` = {written} is too large for any score to mean anything: scores are clamped to [{}, {}], and a term this large rounds every other term away; a weight's magnitude must be at most {max:.1e} (the clamp's width / 2^-52): weights are relative, scale them down together",
                    crate::diag::echo(&name.value),
                    crate::diag::short_number(lo),
                    crate::diag::short_number(hi),
                ),
            ),
        );
    }
    out
}

/// The byte span of `[score.weights] NAME`'s value, from toml's spanned
/// tree (a value written as `score.weights.NAME = …` or in an inline table
/// is found the same way).
pub(super) fn value_span(text: &str, name: &str) -> Option<std::ops::Range<usize>> {
    use toml::de::{DeTable, DeValue};
    fn get<'a>(t: &'a DeTable<'a>, k: &str) -> Option<&'a toml::Spanned<DeValue<'a>>> {
        t.iter()
            .find(|(key, _)| key.get_ref().as_ref() == k)
            .map(|(_, v)| v)
    }
    let doc = DeTable::parse(text).ok()?;
    let DeValue::Table(score) = get(doc.get_ref(), "score")?.get_ref() else {
        return None;
    };
    let DeValue::Table(weights) = get(score, "weights")?.get_ref() else {
        return None;
    };
    get(weights, name).map(|v| v.span())
}

/// The words that mark the warning of [`pinned_scores`] among a plan's
/// `warnings` (`eval` and `explain` print that one warning, on standard
/// error: it says why every tool is active, or none).
pub const PINNED_SCORES: &str = "so the threshold and every term decide nothing";

/// Whether `warning`, one of a plan's `warnings`, is the one of
/// [`pinned_scores`].
pub fn is_pinned_scores(warning: &str) -> bool {
    warning.contains(PINNED_SCORES)
}

/// The one finding of a policy whose raw scores all lie at or beyond one
/// end of the clamp `[lo, hi]` (`raw`: their bounds): every score is that
/// end, so the threshold and every term decide nothing. A warning at the
/// largest weight's value (the formula when it has no weight), naming it as
/// written; it replaces the threshold and term findings, which would each
/// say the same.
pub fn pinned_scores(policy: &PolicySource, raw: (f64, f64), clamp: (f64, f64)) -> Diagnostic {
    use crate::compile::bounds::num;
    let text: &str = &policy.file.text;
    let largest = policy
        .weights
        .iter()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()));
    let (span, weight) = match largest {
        Some((name, w)) => {
            let span = value_span(text, &name.value).unwrap_or(name.span.clone());
            let written = text
                .get(span.clone())
                .map(|s| crate::diag::number_as_written(s).into_owned())
                .unwrap_or_else(|| num(*w));
            (
                span,
                format!(
                    "; the largest weight is `{}` = {written} (weights are relative: scale them together)",
                    crate::diag::echo(&name.value)
                ),
            )
        }
        None => (policy.formula.span.clone(), String::new()),
    };
    let (end, side) = if raw.0 >= clamp.1 {
        (clamp.1, "at or above the clamp's upper bound")
    } else {
        (clamp.0, "at or below the clamp's lower bound")
    };
    Diagnostic::at(
        ErrorKind::OutOfRange,
        &policy.file,
        span,
        format!(
            "every raw score lies in [{}, {}], {side} {}: every score is {}, {PINNED_SCORES}{weight}",
            num(raw.0),
            num(raw.1),
            num(end),
            num(end)
        ),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bound_is_the_clamps_width_over_epsilon() {
        assert_eq!(super::max_weight((0.0, 1.0)), Some(1.0 / f64::EPSILON));
        assert_eq!(super::max_weight((-1.0, 1.0)), Some(2.0 / f64::EPSILON));
        assert_eq!(super::max_weight((0.5, 0.5)), None);
    }
}
