//! The ranges of an input's numbers (issue 29): `now` finite, a session
//! duration and the seconds since a call finite and ≥ 0, a call count a
//! whole number ≥ 0 that fits in 64 bits, a usage frequency in \[0,1\].
//! Checked once the JSON is read: with the text at hand a violation is
//! located at its value (`line:column`) and the value echoed as written,
//! clipped ([`crate::diag::number_as_written`]); from a JSON value (a
//! policy example) it is echoed in short form
//! ([`crate::diag::short_number`]).

use crate::diag::json_path::{Seg, value_span};

use super::{EvalInput, InputError};

/// A number outside its range: where it is and what it must be.
pub(super) struct OutOfRange<'a> {
    /// The JSON path down to the value.
    pub segs: Vec<Seg<'a>>,
    /// The path as messages write it (`usage.call_counts[`t`]`).
    pub path: String,
    /// What the value must be (`a whole number >= 0`).
    pub rule: &'static str,
    /// The value as read.
    pub value: f64,
}

impl OutOfRange<'_> {
    /// `PATH must be RULE, found VALUE`, the value as `found` gives it.
    pub fn message(&self, found: &str) -> String {
        format!("{} must be {}, found {found}", self.path, self.rule)
    }
}

/// One usage map's check: its key, the map, what a value must be, and the
/// test.
type UsageRule<'a> = (
    &'static str,
    &'a std::collections::BTreeMap<String, f64>,
    &'static str,
    fn(f64) -> bool,
);

/// Every number of `input` outside its range, in the order of the keys.
pub(super) fn out_of_range(input: &EvalInput) -> Vec<OutOfRange<'_>> {
    let mut out = Vec::new();
    if !input.now.is_finite() {
        out.push(OutOfRange {
            segs: vec![Seg::Key("now")],
            path: "`now`".into(),
            rule: "a finite number of seconds",
            value: input.now,
        });
    }
    let d = input.context.session_duration_seconds;
    if !(d.is_finite() && d >= 0.0) {
        out.push(OutOfRange {
            segs: vec![Seg::Key("context"), Seg::Key("session_duration_seconds")],
            path: "`context.session_duration_seconds`".into(),
            rule: "a finite number >= 0",
            value: d,
        });
    }
    let u = &input.usage;
    let maps: [UsageRule<'_>; 3] = [
        (
            "call_counts",
            &u.call_counts,
            "a whole number >= 0 (at most 18446744073709551615)",
            |v| v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64,
        ),
        (
            "seconds_since_last_call",
            &u.seconds_since_last_call,
            "a finite number >= 0",
            |v| v.is_finite() && v >= 0.0,
        ),
        (
            "usage_frequency",
            &u.usage_frequency,
            "within [0, 1]",
            |v| v.is_finite() && (0.0..=1.0).contains(&v),
        ),
    ];
    for (section, map, rule, ok) in maps {
        for (k, &v) in map.iter() {
            if !ok(v) {
                out.push(OutOfRange {
                    segs: vec![Seg::Key("usage"), Seg::Key(section), Seg::Key(k)],
                    path: format!("usage.{section}[`{}`]", crate::diag::echo(k)),
                    rule,
                    value: v,
                });
            }
        }
    }
    out
}

/// The first number of `input` (in the text's order) outside its range, as
/// an error at its value in `text`, echoed as written there.
pub(super) fn check(input: &EvalInput, text: &str) -> Result<(), InputError> {
    match problems(input, text).into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Every number of `input` outside its range, in the text's order, each
/// as an error at its value in `text`, echoed as written there (one whose
/// value is not found in the text comes last, unlocated, in short form).
pub(super) fn problems(input: &EvalInput, text: &str) -> Vec<InputError> {
    let mut located: Vec<_> = out_of_range(input)
        .into_iter()
        .map(|o| {
            let span = value_span(text, &o.segs);
            (span.as_ref().map_or(usize::MAX, |s| s.start), span, o)
        })
        .collect();
    located.sort_by_key(|(at, _, _)| *at);
    located
        .into_iter()
        .map(|(_, span, o)| match span {
            None => InputError {
                line: 0,
                column: 0,
                message: o.message(&crate::diag::short_number(o.value)),
            },
            Some(span) => {
                let (line, column) = crate::diag::SourceFile::new("", text).line_col(span.start);
                InputError {
                    line,
                    column,
                    message: o.message(&crate::diag::number_as_written(&text[span])),
                }
            }
        })
        .collect()
}
