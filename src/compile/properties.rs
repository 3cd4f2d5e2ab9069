//! Resolving a policy's `[[properties]]` against the plan: tool names to
//! indices, feature names to slots (see [`crate::plan::property`]). A tool
//! that is not in the catalog is dropped from the property with a warning
//! (the same policy serves other catalogs), unless its name is a near miss of
//! a catalog tool, which is an error (a typo); a feature that does not exist
//! is an error.

use super::at;
use crate::diag::{ErrorKind, Sink};
use crate::parse::policy::{PolicySource, Sp};
use crate::parse::properties::PropertyKindSource;
use crate::plan::property::{Property, PropertyKind};
use crate::plan::{FEATURES, Plan};

/// Resolves every declared property of `policy` against `plan`.
pub(super) fn compile_properties(
    policy: &PolicySource,
    plan: &Plan,
    sink: &mut Sink,
    warnings: &mut Vec<String>,
) -> Vec<Property> {
    let mut out = Vec::new();
    for p in &policy.properties {
        let Some(kind) = &p.kind else { continue };
        let location = {
            let (l, c) = policy.file.line_col(p.span.start);
            format!("{}:{l}:{c}", policy.file.name)
        };
        let mut resolve = |names: &[Sp<String>], sink: &mut Sink| -> Option<Vec<usize>> {
            let mut ids = Vec::new();
            let mut missing = Vec::new();
            for n in names {
                match plan.tool_index(&n.value) {
                    Some(i) => {
                        if !ids.contains(&i) {
                            ids.push(i)
                        }
                    }
                    None => {
                        let close = plan
                            .by_name
                            .keys()
                            // a distance of at most 2 needs lengths at most 2 apart
                            .filter(|k| {
                                k.chars().count().abs_diff(n.value.chars().count()) <= 2
                                    && strsim::levenshtein(k, &n.value) <= 2
                            })
                            .min_by_key(|k| strsim::levenshtein(k, &n.value));
                        match close {
                            Some(close) => sink.push(
                                at(
                                    policy,
                                    ErrorKind::UnknownName,
                                    n.span.clone(),
                                    format!(
                                        "property `{}`: tool `{}` is not in the catalog",
                                        crate::diag::echo(&p.name),
                                        crate::diag::echo(&n.value)
                                    ),
                                )
                                .with_help(format!("did you mean `{}`?", crate::diag::echo(close))),
                            ),
                            None => missing.push(n.value.as_str()),
                        }
                    }
                }
            }
            if !missing.is_empty() {
                warnings.push(format!(
                    "{location}: property `{}`: tool(s) {} not in the catalog{}",
                    crate::diag::echo(&p.name),
                    crate::diag::echo_list(&missing, ", ", crate::diag::MAX_ECHOED_ITEMS),
                    if ids.is_empty() {
                        "; skipped"
                    } else {
                        "; checked for the others"
                    }
                ));
            }
            (!ids.is_empty()).then_some(ids)
        };
        let kind = match kind {
            PropertyKindSource::RawScoreWithin(r) => Some(PropertyKind::RawScoreWithin {
                low: r.value.0,
                high: r.value.1,
            }),
            PropertyKindSource::ScoreWithin(r) => Some(PropertyKind::ScoreWithin {
                low: r.value.0,
                high: r.value.1,
            }),
            PropertyKindSource::Monotone {
                feature,
                increasing,
            } => match FEATURES.iter().position(|f| *f == feature.value) {
                Some(f) => Some(PropertyKind::Monotone {
                    feature: f,
                    increasing: *increasing,
                }),
                None => {
                    sink.push(
                        at(
                            policy,
                            ErrorKind::UnknownName,
                            feature.span.clone(),
                            format!(
                                "property `{}`: `{}` is not a feature (one of {})",
                                crate::diag::echo(&p.name),
                                crate::diag::echo(&feature.value),
                                FEATURES.join(", ")
                            ),
                        )
                        .with_suggestion(&feature.value, FEATURES.iter().copied()),
                    );
                    None
                }
            },
            PropertyKindSource::AlwaysActive(names) => {
                resolve(names, sink).map(PropertyKind::AlwaysActive)
            }
            PropertyKindSource::NeverActive(names) => {
                resolve(names, sink).map(PropertyKind::NeverActive)
            }
            PropertyKindSource::ActiveCountWithin(r) => Some(PropertyKind::ActiveCountWithin {
                low: r.value.0 as usize,
                high: r.value.1 as usize,
            }),
        };
        let tools = if p.tools.is_empty() {
            None
        } else {
            match resolve(&p.tools, sink) {
                Some(ids) => Some(ids),
                None => continue,
            }
        };
        if let Some(kind) = kind {
            out.push(Property {
                name: p.name.clone(),
                kind,
                tools,
                samples: p.samples,
                location,
            });
        }
    }
    out
}
