//! The policy's own `[[examples]]`, run on the plan just compiled: each
//! example's input is evaluated (activation expectations) and each of its
//! calls goes through the call gate (decision expectations). This is the
//! one part of compile that runs the runtimes, which is why compile sits
//! above eval and gate in the layering.

use super::at;
use std::sync::Arc;

use crate::diag::{ErrorKind, LoadError, Sink, echo};
use crate::parse::policy::{PolicySource, Sp};
use crate::plan::Plan;

/// Why `s` is (in)active, in an example's failure: the score against the
/// effective threshold when that decided it, else the set control that did
/// (`max_active`, `min_active`, `pinned`, hysteresis) or the NaN score, so
/// a tool cut by `max_active` is not said to be below the threshold.
fn why(plan: &Plan, s: &crate::eval::ToolScore, threshold: f64) -> String {
    use crate::eval::Reason::*;
    let score = format!("score {:.4}", s.score);
    match s.reason {
        BelowThreshold => format!("{score} < effective threshold {threshold:.4}"),
        AboveThreshold => format!("{score}, effective threshold {threshold:.4}"),
        MaxActive => format!(
            "cut by max_active = {}: {score} >= effective threshold {threshold:.4}, but {} ranked before it",
            plan.max_active.unwrap_or(0),
            match plan.max_active.unwrap_or(0) {
                1 => "1 tool".to_string(),
                k => format!("{k} tools"),
            }
        ),
        MinActive => format!(
            "added to reach min_active = {}: {score} < effective threshold {threshold:.4}",
            plan.min_active
        ),
        Pinned => format!("pinned by the policy's [activation] pinned; {score}"),
        Hysteresis => format!("kept by hysteresis: {score} < effective threshold {threshold:.4}"),
        InvalidScore => "the formula gave NaN for it".to_string(),
    }
}

/// Runs the policy's `[[examples]]` against `plan`. An example naming a tool
/// that is not in the catalog, or one whose tags `[auto_tags]` derived (a
/// `--tools` catalog, not tag files), is skipped with a warning (the same
/// policy can be used with other catalogs); a failing expectation is an
/// error.
pub(super) fn check_examples(policy: &PolicySource, plan: Plan) -> Result<Plan, LoadError> {
    let mut sink = Sink::default();
    let (mut checked, mut skipped) = (0, 0);
    let mut warnings = Vec::new();
    // Evaluation reads the plan through an `Arc`; it is moved in and taken
    // back out below, never copied (a 10,000-tool plan is ~100 MB of copy).
    let shared = Arc::new(plan);
    for ex in &policy.examples {
        let names: Vec<&Sp<String>> = ex.active.iter().chain(ex.inactive.iter()).collect();
        let mut typo = false;
        for n in &names {
            if shared.tool_index(&n.value).is_none() {
                let close = shared
                    .by_name
                    .keys()
                    // a distance of at most 2 needs lengths at most 2 apart
                    .filter(|k| {
                        k.chars().count().abs_diff(n.value.chars().count()) <= 2
                            && strsim::levenshtein(k, &n.value) <= 2
                    })
                    .min_by_key(|k| strsim::levenshtein(k, &n.value));
                if let Some(close) = close {
                    // a near miss is a typo, not a tool of another catalog
                    sink.push(
                        at(
                            policy,
                            ErrorKind::ExampleFailed,
                            n.span.clone(),
                            format!(
                                "example `{}`: tool `{}` is not in the catalog",
                                echo(&ex.name),
                                echo(&n.value)
                            ),
                        )
                        .with_help(format!("did you mean `{}`?", echo(close))),
                    );
                    typo = true;
                }
            }
        }
        if typo {
            continue;
        }
        // Skipped: a tool not in the catalog, or one whose tags
        // `[auto_tags]` derived (a `--tools` catalog): the expectations were
        // written against tag files, and a tool of the same name with
        // derived tags is another tool as far as its score goes (newcomer
        // pass 5: a user's captured sqlite catalog failed the shipped
        // policy's example and stopped every command).
        let tools_where = |pick: &dyn Fn(Option<usize>) -> bool| -> String {
            let v: Vec<&str> = names
                .iter()
                .filter(|n| pick(shared.tool_index(&n.value)))
                .map(|n| n.value.as_str())
                .collect();
            crate::diag::echo(&v.join(", ")).to_string()
        };
        let missing = tools_where(&|i| i.is_none());
        let derived = tools_where(&|i| i.is_some_and(|i| shared.tools[i].auto_tagged));
        let skip = if !missing.is_empty() {
            Some(format!("tool(s) {missing} not in the catalog"))
        } else if !derived.is_empty() {
            Some(format!(
                "tool(s) {derived} have tags derived by [auto_tags], not the tag files the example was written for"
            ))
        } else {
            None
        };
        if let Some(why) = skip {
            warnings.push(format!("example `{}` skipped: {why}", echo(&ex.name)));
            skipped += 1;
            continue;
        }
        let input = match crate::input::EvalInput::from_json(&ex.input) {
            Ok(i) => i,
            Err(e) => {
                sink.push(at(
                    policy,
                    ErrorKind::InvalidValue,
                    ex.span.clone(),
                    format!("example `{}`: {e}", echo(&ex.name)),
                ));
                continue;
            }
        };
        let (ctx, usage, now) = match input.resolve(&shared) {
            Ok(x) => x,
            Err(e) => {
                sink.push(at(
                    policy,
                    ErrorKind::InvalidValue,
                    ex.span.clone(),
                    format!("example `{}`: {e}", echo(&ex.name)),
                ));
                continue;
            }
        };
        let act = shared.evaluate(&ctx, &usage, now);
        for n in &ex.active {
            let s = act.get(&n.value).expect("checked above");
            if !s.active {
                sink.push(at(
                    policy,
                    ErrorKind::ExampleFailed,
                    n.span.clone(),
                    format!(
                        "example `{}`: `{}` must be active but is not ({})",
                        echo(&ex.name),
                        echo(&n.value),
                        why(&shared, s, act.effective_threshold)
                    ),
                ));
            }
        }
        for n in &ex.inactive {
            let s = act.get(&n.value).expect("checked above");
            if s.active {
                sink.push(at(
                    policy,
                    ErrorKind::ExampleFailed,
                    n.span.clone(),
                    format!(
                        "example `{}`: `{}` must be inactive but is active ({})",
                        echo(&ex.name),
                        echo(&n.value),
                        why(&shared, s, act.effective_threshold)
                    ),
                ));
            }
        }
        let mut calls_run = 0;
        for call in &ex.calls {
            if check_example_call(policy, &shared, &ex.name, call, &mut sink, &mut warnings) {
                calls_run += 1;
            }
        }
        // An example none of whose expectations ran holds nothing: skipped.
        if names.is_empty() && calls_run == 0 {
            skipped += 1;
            warnings.push(if ex.calls.is_empty() {
                format!(
                    "example `{}` skipped: it expects nothing (no active, inactive or calls)",
                    echo(&ex.name)
                )
            } else {
                format!(
                    "example `{}` skipped: none of its {} call(s) could be checked (the skipped calls are listed above)",
                    echo(&ex.name),
                    ex.calls.len()
                )
            });
            continue;
        }
        checked += 1;
    }
    let mut plan = Arc::try_unwrap(shared).unwrap_or_else(|still_shared| (*still_shared).clone());
    plan.examples_checked = checked;
    plan.examples_skipped = skipped;
    if plan.tools.is_empty() {
        warnings.push("the catalog is empty: no tool can be active".to_string());
    }
    plan.warnings.extend(warnings);
    sink.finish(plan)
}

/// Checks one `[[examples.calls]]` entry against the plan's call gate. A call
/// expected to be allowed or asked for a tool missing from the catalog is
/// skipped with a warning, like activation examples. Returns whether the
/// call was checked (held or failed), `false` when it was skipped.
fn check_example_call(
    policy: &PolicySource,
    plan: &Plan,
    example: &str,
    call: &crate::parse::policy::ExampleCall,
    sink: &mut Sink,
    warnings: &mut Vec<String>,
) -> bool {
    if plan.tool_index(&call.tool.value).is_none() && call.decision.value != "deny" {
        warnings.push(format!(
            "example `{}`: call to `{}` skipped: tool not in the catalog",
            echo(example),
            echo(&call.tool.value)
        ));
        return false;
    }
    #[cfg(feature = "gate")]
    {
        let Some(expected) = crate::gate::Action::parse(&call.decision.value) else {
            return false;
        };
        if let Err(m) =
            crate::gate::check_example_call(plan, &call.tool.value, &call.arguments, expected)
        {
            sink.push(at(
                policy,
                ErrorKind::ExampleFailed,
                call.span.clone(),
                format!("example `{}`: {m}", echo(example)),
            ));
        }
        true
    }
    #[cfg(not(feature = "gate"))]
    {
        let _ = (policy, sink);
        warnings.push(format!(
            "example `{}`: call to `{}` skipped: built without the `gate` feature",
            echo(example),
            echo(&call.tool.value)
        ));
        false
    }
}
