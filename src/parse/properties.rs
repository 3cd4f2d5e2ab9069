//! Reading a policy's `[[properties]]`: statements about its scores that
//! `toolgate check` proves or refutes (see `docs/policy-reference.md`).
//!
//! Each entry has a `name` and exactly one kind key:
//!
//! | key | value | holds when |
//! | --- | --- | --- |
//! | `raw_score_within` | `[low, high]` | every tool's raw score lies in the range, in every session |
//! | `score_within` | `[low, high]` | likewise for the clamped score |
//! | `monotone` | `{ feature, direction }` | raising the feature (all else equal) never lowers (`increasing`) or never raises (`decreasing`) the raw score |
//! | `always_active` | `[tool, ...]` | these tools are active in every session |
//! | `never_active` | `[tool, ...]` | these tools are active in no session |
//! | `active_count_within` | `[low, high]` | the number of active tools lies in the range, in every session |
//!
//! Optional keys: `tools` (the `*_within` score kinds: only these tools;
//! default every tool of the catalog) and `samples` (random sessions tried
//! when the property cannot be decided statically). This stage checks only
//! what the file can: the shapes, ranges and the kind; tool and feature names
//! are resolved when the policy is compiled.

use std::ops::Range;

use crate::diag::{Diagnostic, ErrorKind};
use crate::parse::policy::Sp;
use crate::parse::reader::Table;

/// The kind keys of `[[properties]]`, in the order they are documented.
pub const PROPERTY_KINDS: [&str; 6] = [
    "raw_score_within",
    "score_within",
    "monotone",
    "always_active",
    "never_active",
    "active_count_within",
];

/// Most random sessions a property may ask for (`samples`).
pub const MAX_SAMPLES: u64 = 100_000;

/// What a property states, as written (names not yet resolved).
#[derive(Debug, Clone, PartialEq)]
pub enum PropertyKindSource {
    /// `raw_score_within = [low, high]`.
    RawScoreWithin(Sp<(f64, f64)>),
    /// `score_within = [low, high]`.
    ScoreWithin(Sp<(f64, f64)>),
    /// `monotone = { feature, direction }`; `increasing` is true for
    /// `direction = "increasing"`.
    Monotone {
        /// The feature's name, as written.
        feature: Sp<String>,
        /// `direction = "increasing"` (true) or `"decreasing"` (false).
        increasing: bool,
    },
    /// `always_active = [tool, ...]`.
    AlwaysActive(Vec<Sp<String>>),
    /// `never_active = [tool, ...]`.
    NeverActive(Vec<Sp<String>>),
    /// `active_count_within = [low, high]` (tool counts).
    ActiveCountWithin(Sp<(u64, u64)>),
}

/// One `[[properties]]` entry as read.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertySource {
    /// Name shown in reports (default `property N`).
    pub name: String,
    /// What it states; `None` when the entry was invalid (the load fails).
    pub kind: Option<PropertyKindSource>,
    /// `tools`: the tools a `*_within` score property is about (empty = all).
    pub tools: Vec<Sp<String>>,
    /// `samples`: random sessions tried by a search, if given (1 to [`MAX_SAMPLES`]).
    pub samples: Option<u64>,
    /// Span of the entry.
    pub span: Range<usize>,
}

/// A `[low, high]` pair of finite numbers with `low <= high`.
fn pair_f64(t: &Table<'_, '_>, key: &str) -> Option<Sp<(f64, f64)>> {
    let v = t.get(key)?;
    let pair = match v.raw() {
        toml::de::DeValue::Array(a) if a.len() == 2 => {
            let x = |i: usize| {
                crate::parse::reader::de_to_json(a[i].get_ref()).and_then(|j| j.as_f64())
            };
            x(0).zip(x(1))
        }
        _ => None,
    };
    match pair {
        Some((lo, hi)) if lo.is_finite() && hi.is_finite() && lo <= hi => {
            Some(Sp::new((lo, hi), v.span.clone()))
        }
        _ => {
            t.reader().error(
                ErrorKind::InvalidValue,
                v.span.clone(),
                format!(
                    "`properties.{key}` must be two finite numbers [low, high] with low <= high"
                ),
            );
            None
        }
    }
}

/// A `[low, high]` pair of whole numbers `0 <= low <= high`.
fn pair_count(t: &Table<'_, '_>, key: &str) -> Option<Sp<(u64, u64)>> {
    let v = t.get(key)?;
    let pair = match v.raw() {
        toml::de::DeValue::Array(a) if a.len() == 2 => {
            let x = |i: usize| {
                crate::parse::reader::de_to_json(a[i].get_ref()).and_then(|j| j.as_u64())
            };
            x(0).zip(x(1))
        }
        _ => None,
    };
    match pair {
        Some((lo, hi)) if lo <= hi => Some(Sp::new((lo, hi), v.span.clone())),
        _ => {
            t.reader().error(
                ErrorKind::InvalidValue,
                v.span.clone(),
                format!(
                    "`properties.{key}` must be two whole numbers [low, high] with 0 <= low <= high"
                ),
            );
            None
        }
    }
}

fn tool_list(t: &Table<'_, '_>, key: &str) -> Option<Vec<Sp<String>>> {
    let v = t.get(key)?;
    let list = v.str_list()?;
    if list.is_empty() {
        t.reader().error(
            ErrorKind::InvalidValue,
            v.span.clone(),
            format!("`properties.{key}` must name at least one tool"),
        );
        return None;
    }
    Some(list.into_iter().map(|(s, r)| Sp::new(s, r)).collect())
}

fn read_monotone(t: &Table<'_, '_>) -> Option<PropertyKindSource> {
    let v = t.get("monotone")?;
    let m = v.table()?;
    let feature = m
        .require("feature")
        .and_then(|f| f.string().map(|s| Sp::new(s, f.span.clone())));
    let direction = m.require("direction").and_then(|d| {
        let s = d.string()?;
        match s.as_str() {
            "increasing" => Some(true),
            "decreasing" => Some(false),
            _ => {
                m.reader().push(
                    Diagnostic::at(
                        ErrorKind::InvalidValue,
                        &m.reader().file,
                        d.span.clone(),
                        format!(
                            "`properties.monotone.direction` = \"{s}\" is not one of: increasing, decreasing"
                        ),
                    )
                    .with_suggestion(&s, ["increasing", "decreasing"]),
                );
                None
            }
        }
    });
    Some(PropertyKindSource::Monotone {
        feature: feature?,
        increasing: direction?,
    })
}

/// Reads every `[[properties]]` entry of the policy's root table.
pub fn read_properties(root: &Table<'_, '_>) -> Vec<PropertySource> {
    let mut out = Vec::new();
    for (i, t) in root.tables("properties").into_iter().enumerate() {
        let name = t
            .str("name")
            .map(|x| x.0)
            .unwrap_or_else(|| format!("property {}", i + 1));
        let present: Vec<&str> = PROPERTY_KINDS
            .iter()
            .copied()
            .filter(|k| t.key_span(k).is_some())
            .collect();
        let misspelt = present
            .is_empty()
            .then(|| {
                t.keys().into_iter().find_map(|(k, span)| {
                    crate::diag::did_you_mean(&k, PROPERTY_KINDS.iter().copied())
                        .map(|m| (k, span, m))
                })
            })
            .flatten();
        let kind = match present.as_slice() {
            // A misspelt kind key (`score_withn`) is one problem, at the
            // key, with a did-you-mean (not "states nothing" and "unknown
            // key" both).
            [] if misspelt.is_some() => {
                let (key, span, meant) = misspelt.unwrap_or_default();
                let _ = t.get(&key);
                t.reader().push(
                    Diagnostic::at(
                        ErrorKind::UnknownKey,
                        &t.reader().file,
                        span,
                        format!(
                            "unknown key `{}` in [{}], so property `{name}` states nothing",
                            crate::diag::echo(&key),
                            t.path()
                        ),
                    )
                    .with_help(format!("did you mean `{meant}`?")),
                );
                None
            }
            [] => {
                t.reader().push(Diagnostic::at(
                    ErrorKind::MissingKey,
                    &t.reader().file,
                    t.span.clone(),
                    format!(
                        "property `{name}` states nothing: give exactly one of {}",
                        PROPERTY_KINDS.join(", ")
                    ),
                ));
                None
            }
            [k] => match *k {
                "raw_score_within" => pair_f64(&t, k).map(PropertyKindSource::RawScoreWithin),
                "score_within" => pair_f64(&t, k).map(PropertyKindSource::ScoreWithin),
                "monotone" => read_monotone(&t),
                "always_active" => tool_list(&t, k).map(PropertyKindSource::AlwaysActive),
                "never_active" => tool_list(&t, k).map(PropertyKindSource::NeverActive),
                _ => pair_count(&t, k).map(PropertyKindSource::ActiveCountWithin),
            },
            [_, second, ..] => {
                let span = t.key_span(second).unwrap_or(t.span.clone());
                t.reader().error(
                    ErrorKind::InvalidValue,
                    span,
                    format!(
                        "property `{name}` states {} things ({}): give exactly one per [[properties]] entry",
                        present.len(),
                        present.join(", ")
                    ),
                );
                // mark the others as read, so they are not also reported unknown
                for k in &present {
                    let _ = t.get(k);
                }
                None
            }
        };
        let tools = match t.get("tools") {
            Some(v) => {
                let scored = matches!(
                    kind,
                    Some(
                        PropertyKindSource::RawScoreWithin(_) | PropertyKindSource::ScoreWithin(_)
                    )
                );
                if !scored && kind.is_some() {
                    t.reader().error(
                        ErrorKind::InvalidValue,
                        v.span.clone(),
                        "`properties.tools` only applies to raw_score_within and score_within",
                    );
                }
                v.str_list()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(s, r)| Sp::new(s, r))
                    .collect()
            }
            None => Vec::new(),
        };
        let samples = t.int("samples").and_then(|(n, span)| {
            if n < 1 || n as u64 > MAX_SAMPLES {
                t.reader().error(
                    ErrorKind::OutOfRange,
                    span,
                    format!("`properties.samples` must be within [1, {MAX_SAMPLES}], found {n}"),
                );
                None
            } else {
                Some(n as u64)
            }
        });
        out.push(PropertySource {
            name,
            kind,
            tools,
            samples,
            span: t.span.clone(),
        });
    }
    out
}
