//! Feature analysis and weight fitting on recorded sessions.
//!
//! Seed 000 says its weights came from a regression over 500 tool calls and
//! reports each feature's AUC. This module does the same on a trace:
//!
//! 1. **Rows.** Before every tool call, every tool of the catalog is a row: its
//!    feature values (as the policy computes them) and whether it is the tool
//!    called next ([`collect_rows`]).
//! 2. **AUC.** Each feature's ROC AUC for that label, and its point-biserial
//!    correlation ([`feature_stats`]).
//! 3. **Fit** (feature `fit`). A logistic regression (linfa-logistic, L2) on
//!    the features that the formula weighs with a named weight
//!    (`w_x * feature`, [`weight_terms`]), on the training sessions only.
//!    The coefficients are scaled so that the weighted terms add up to at most 1
//!    on the observed feature ranges, and written as the new weights; terms
//!    without a named weight (such as a bare `recency_bonus`) are kept as they are.
//! 4. **Threshold.** The largest threshold at which the training calls reach the
//!    target recall (accounting for the cold-start factor).
//! 5. **Hold-out.** Sessions are split by a hash of their id; the report gives
//!    recall and active-set size on the held-out sessions for the input policy
//!    and for the fitted one, so the fit can be trusted (or not).
//!
//! The new policy is the input file's text with only the weight values and the
//! threshold replaced ([`rewrite_policy`]); comments and layout are kept.

use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;

use crate::parse::policy::PolicySource;
use crate::plan::{FEATURES, Plan};
use crate::replay::auc::{auc, point_biserial};
use crate::replay::engine::{ReplayOptions, replay_with};
use crate::replay::trace::{Trace, TraceError};

/// One feature vector per (call, tool).
#[derive(Debug, Clone, Default)]
pub struct Rows {
    /// Feature values, in [`FEATURES`] order.
    pub x: Vec<[f64; FEATURES.len()]>,
    /// The policy's clamped score.
    pub score: Vec<f64>,
    /// Whether the tool is the one called.
    pub y: Vec<bool>,
    /// Whether the row belongs to a held-out session.
    pub test: Vec<bool>,
}

/// Whether session `id` belongs to the held-out share `fraction` (FNV-1a hash
/// of the id; stable across runs and trace orderings).
pub fn is_holdout(id: &str, fraction: f64) -> bool {
    let mut h = 0xcbf29ce484222325u64;
    for b in id.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    ((h % 1_000_000) as f64) < fraction * 1_000_000.0
}

/// Replays `trace` against `plan` and collects one row per (call, tool). With
/// `negatives = Some(k)`, at most `k` tools that were not called are kept per
/// call (an even stride over the catalog, offset by the line number), which
/// leaves AUCs unbiased and bounds memory on large catalogs.
pub fn collect_rows(
    plan: &Arc<Plan>,
    trace: &Trace,
    opts: &ReplayOptions,
    holdout: f64,
    negatives: Option<usize>,
) -> Result<Rows, TraceError> {
    let mut rows = Rows::default();
    let held: Vec<bool> = trace
        .sessions()
        .iter()
        .map(|(id, _)| is_holdout(id, holdout))
        .collect();
    let n = plan.tools.len();
    replay_with(plan, trace, opts, |step, act| {
        let Some(c) = step.called else { return };
        let stride = match negatives {
            Some(k) if k > 0 && n > k + 1 => (n - 1).div_ceil(k),
            Some(0) => usize::MAX,
            _ => 1,
        };
        let offset = step.line % stride.clamp(1, n.max(1));
        for (i, s) in act.tools.iter().enumerate() {
            let pos = i == c;
            if !pos && (stride == usize::MAX || i % stride != offset) {
                continue;
            }
            rows.x.push(act.features(i));
            rows.score.push(s.score);
            rows.y.push(pos);
            rows.test.push(held[step.session]);
        }
    })?;
    Ok(rows)
}

/// AUC and correlation of one feature.
#[derive(Debug, Clone, Serialize)]
pub struct FeatureStat {
    /// Feature name.
    pub feature: &'static str,
    /// ROC AUC for "this tool is called next" (`None` when undefined).
    pub auc: Option<f64>,
    /// Point-biserial correlation with the label (`None` when the feature is constant).
    pub r: Option<f64>,
    /// The weight that multiplies it in the formula, if any.
    pub weight: Option<String>,
}

/// AUC and correlation of every feature over `rows` (selected by `keep`).
pub fn feature_stats(
    rows: &Rows,
    terms: &[WeightTerm],
    keep: impl Fn(usize) -> bool,
) -> Vec<FeatureStat> {
    let idx: Vec<usize> = (0..rows.y.len()).filter(|&i| keep(i)).collect();
    let y: Vec<bool> = idx.iter().map(|&i| rows.y[i]).collect();
    FEATURES
        .iter()
        .enumerate()
        .map(|(f, name)| {
            let x: Vec<f64> = idx.iter().map(|&i| rows.x[i][f]).collect();
            FeatureStat {
                feature: name,
                auc: auc(&x, &y),
                r: point_biserial(&x, &y),
                weight: terms
                    .iter()
                    .find(|t| t.feature == f)
                    .map(|t| t.weight.clone()),
            }
        })
        .collect()
}

/// A formula term `[-] weight * feature` with a named weight from `[score.weights]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WeightTerm {
    /// The weight's name.
    pub weight: String,
    /// The feature slot.
    pub feature: usize,
    /// +1 or −1: whether the term is added or subtracted.
    pub sign: f64,
    /// The weight's current value.
    pub value: f64,
}

/// The terms of `plan`'s formula that multiply one feature by one named weight.
pub fn weight_terms(policy: &PolicySource, plan: &Plan) -> Vec<WeightTerm> {
    let mut out: Vec<WeightTerm> = Vec::new();
    for t in &plan.formula.terms {
        let (Some(_), [f]) = (t.linear, t.features.as_slice()) else {
            continue;
        };
        let idents: Vec<&str> = t
            .text
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .filter(|s| !s.is_empty())
            .collect();
        let named: Vec<&(crate::parse::policy::Sp<String>, f64)> = policy
            .weights
            .iter()
            .filter(|(n, _)| idents.contains(&n.value.as_str()))
            .collect();
        if let [(name, value)] = named.as_slice()
            && out.iter().all(|w| w.feature != *f as usize)
        {
            out.push(WeightTerm {
                weight: name.value.clone(),
                feature: *f as usize,
                sign: t.sign,
                value: *value,
            });
        }
    }
    out
}

/// Span of the value that follows the key at `key_span` (`key = value`).
fn value_span(text: &str, key_span: &Range<usize>) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    let mut i = key_span.end;
    // Skip a closing quote of a quoted key, spaces and the `=`.
    while i < bytes.len() && matches!(bytes[i], b'"' | b'\'' | b' ' | b'\t') {
        i += 1;
    }
    if bytes.get(i) != Some(&b'=') {
        return None;
    }
    i += 1;
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
        i += 1;
    }
    let start = i;
    while i < bytes.len()
        && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'+' | b'-' | b'.' | b'_'))
    {
        i += 1;
    }
    (i > start).then_some(start..i)
}

/// A number as written into a policy: at most 6 decimals, no trailing zeros.
pub fn format_number(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0');
    let s = s
        .strip_suffix('.')
        .map(|p| format!("{p}.0"))
        .unwrap_or(s.to_string());
    if s == "-0.0" { "0.0".into() } else { s }
}

/// The policy's text with the given weights and threshold replaced; everything
/// else (comments, layout, other keys) is kept byte for byte.
pub fn rewrite_policy(
    policy: &PolicySource,
    weights: &[(String, f64)],
    threshold: Option<f64>,
) -> Result<String, String> {
    let text = &policy.file.text;
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    for (name, w) in weights {
        let (key, _) = policy
            .weights
            .iter()
            .find(|(n, _)| &n.value == name)
            .ok_or_else(|| format!("weight `{name}` is not in [score.weights]"))?;
        let span = value_span(text, &key.span).ok_or_else(|| {
            format!("cannot find the value of weight `{name}` in the policy text")
        })?;
        edits.push((span, format_number(*w)));
    }
    if let Some(t) = threshold {
        let span = policy.activation.threshold.span.clone();
        if span.is_empty() || span.end > text.len() {
            return Err("cannot find `activation.threshold` in the policy text".into());
        }
        edits.push((span, format_number(t)));
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0.start));
    let mut out = text.to_string();
    for (span, v) in edits {
        // A comment after the value keeps its column (one space at least).
        let rest = &text[span.end..];
        let pad = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        let (span, v) = if pad > 0 && rest[pad..].starts_with('#') && !rest[..pad].contains('\t') {
            let width = (pad + span.len()).saturating_sub(v.len()).max(1);
            (
                span.start..span.end + pad,
                format!("{v}{}", " ".repeat(width)),
            )
        } else {
            (span, v)
        };
        out.replace_range(span, &v);
    }
    Ok(out)
}

/// Whether `line` is a TOML table header (`[x]` or `[[x]]`).
fn header(line: &str) -> Option<String> {
    let t = line.trim();
    let inner = t.strip_prefix("[[").and_then(|r| r.split("]]").next());
    let inner = inner.or_else(|| t.strip_prefix('[').and_then(|r| r.split(']').next()))?;
    Some(inner.chars().filter(|c| !c.is_whitespace()).collect())
}

/// The policy's text without the `[[examples]]` blocks that contain the
/// given 1-based lines: each from its header up to the next header that is
/// not one of its sub-tables (`[[examples.calls]]`), leaving the comments and
/// blank lines just above that next header (they belong to it). An example
/// written inline (`examples = [...]`) cannot be dropped: an error.
pub fn drop_examples(text: &str, lines: &[usize]) -> Result<String, String> {
    let tables: Vec<(usize, &str)> = lines.iter().map(|&l| (l, "examples")).collect();
    drop_tables(text, &tables)
}

/// The policy's text without the array-of-tables blocks (`[[examples]]`,
/// `[[properties]]`, ...) that contain the given 1-based lines, each given
/// with its table name; see [`drop_examples`]. A line outside such a table
/// is an error.
pub fn drop_tables(text: &str, tables: &[(usize, &str)]) -> Result<String, String> {
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let mut drop = vec![false; all.len()];
    for &(line, table) in tables {
        let at = line.saturating_sub(1).min(all.len().saturating_sub(1));
        let start = (0..=at)
            .rev()
            .find(|&i| header(all[i]).as_deref() == Some(table))
            .filter(|&i| all[i].trim_start().starts_with("[["))
            .ok_or_else(|| {
                format!("the entry at line {line} is not a [[{table}]] table; remove it by hand")
            })?;
        let sub = format!("{table}.");
        let mut end = start + 1;
        while end < all.len() {
            match header(all[end]) {
                Some(h) if !h.starts_with(&sub) => break,
                _ => end += 1,
            }
        }
        // Keep the trailing comments and blank lines that introduce what follows.
        if end < all.len() {
            while end > start + 1 && {
                let t = all[end - 1].trim();
                t.is_empty() || t.starts_with('#')
            } {
                end -= 1;
            }
        }
        drop[start..end].iter_mut().for_each(|d| *d = true);
    }
    Ok(all
        .iter()
        .zip(&drop)
        .filter(|(_, d)| !**d)
        .map(|(l, _)| *l)
        .collect())
}

/// The largest threshold (floored to 6 decimals, within [0,1]) at which at
/// least `target` of the calls are active. Each call is `(score, factor)`:
/// the called tool's score and the factor its effective threshold had (1, or
/// the cold-start factor), so the call is active iff `score >= threshold * factor`.
pub fn threshold_for_recall(calls: &[(f64, f64)], target: f64) -> f64 {
    if calls.is_empty() {
        return 0.0;
    }
    let mut keys: Vec<f64> = calls
        .iter()
        .map(|&(s, f)| if f > 0.0 { s / f } else { f64::INFINITY })
        .collect();
    keys.sort_by(|a, b| b.total_cmp(a));
    let need = ((target.clamp(0.0, 1.0) * keys.len() as f64).ceil() as usize).clamp(1, keys.len());
    let t = keys[need - 1].clamp(0.0, 1.0);
    (t * 1e6).floor() / 1e6
}

#[cfg(feature = "fit")]
mod logistic;
#[cfg(feature = "fit")]
pub use logistic::*;
#[cfg(feature = "fit")]
mod stream;
#[cfg(feature = "fit")]
pub use stream::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_by_hand() {
        let calls = [(0.9, 1.0), (0.5, 1.0), (0.3, 0.6), (0.1, 1.0)];
        // keys: 0.9, 0.5, 0.5, 0.1 → 75% needs the 3rd: 0.5.
        assert_eq!(threshold_for_recall(&calls, 0.75), 0.5);
        assert_eq!(threshold_for_recall(&calls, 1.0), 0.1);
        assert_eq!(threshold_for_recall(&calls, 0.2), 0.9);
        assert_eq!(threshold_for_recall(&[], 0.9), 0.0);
    }

    #[test]
    fn numbers() {
        assert_eq!(format_number(0.25), "0.25");
        assert_eq!(format_number(1.0), "1.0");
        assert_eq!(format_number(-0.0000001), "0.0");
        assert_eq!(format_number(0.1234567), "0.123457");
    }

    #[test]
    fn comments_keep_their_column() {
        let (name, text) = crate::defaults::DEFAULT_POLICY;
        let src =
            crate::parse::policy::parse_policy(crate::diag::SourceFile::new(name, text)).unwrap();
        let line = |t: &str| {
            t.lines()
                .find(|l| l.starts_with("threshold = "))
                .unwrap()
                .to_string()
        };
        let before = line(text);
        let out = rewrite_policy(&src, &[("w_stage".into(), 0.468288)], Some(0.677768)).unwrap();
        let after = line(&out);
        assert!(after.starts_with("threshold = 0.677768 "), "{after}");
        assert_eq!(after.find('#'), before.find('#'), "{before}\n{after}");
        assert!(out.contains("\nw_stage = 0.468288\n"));
        assert_eq!(out.lines().count(), text.lines().count());
    }

    #[test]
    fn value_spans() {
        let t = "w_a = 0.30   # c\n{ w_b = -1e-3, w_c=2 }";
        assert_eq!(&t[value_span(t, &(0..3)).unwrap()], "0.30");
        assert_eq!(&t[value_span(t, &(19..22)).unwrap()], "-1e-3");
        assert_eq!(&t[value_span(t, &(32..35)).unwrap()], "2");
    }

    #[test]
    fn dropping_examples_keeps_the_rest() {
        let t = "[activation]\nthreshold = 0.4\n\n# first\n[[examples]]\nname = \"a\"\n[[examples.calls]]\ntool = \"x\"\n\n# the second one\n[[examples]]\nname = \"b\"\n\n[keywords]\nmin_length = 3\n";
        let out = drop_examples(t, &[6]).unwrap();
        assert_eq!(
            out,
            "[activation]\nthreshold = 0.4\n\n# first\n\n# the second one\n[[examples]]\nname = \"b\"\n\n[keywords]\nmin_length = 3\n"
        );
        let out = drop_examples(t, &[6, 12]).unwrap();
        assert_eq!(
            out,
            "[activation]\nthreshold = 0.4\n\n# first\n\n# the second one\n\n[keywords]\nmin_length = 3\n"
        );
        // the last block runs to the end of the file
        let t2 = "[a]\nx = 1\n[[examples]]\nname = \"c\"\n# trailing\n";
        assert_eq!(drop_examples(t2, &[4]).unwrap(), "[a]\nx = 1\n");
        assert!(drop_examples("examples = [{name = \"x\"}]\n", &[1]).is_err());
    }

    #[test]
    fn holdout_is_stable() {
        let n = (0..1000)
            .filter(|i| is_holdout(&format!("s{i}"), 0.2))
            .count();
        assert!((150..250).contains(&n), "{n}");
        assert!(!is_holdout("x", 0.0));
        assert!(is_holdout("x", 1.0));
    }
}
