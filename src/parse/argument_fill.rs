//! `[features.argument_fill]`: "can the request fill the tool's required
//! parameters?" (issue 24, "nothing fits" per question). A per-tool gate on
//! the two request terms: a tool for which the latest user messages hold a
//! value for less than `min_fraction` of its required parameters gets
//! `keyword_match = 0` and `semantic_match = 0` (stage, usage, recency and
//! transitions still count). What counts as a value for a parameter is
//! described in `text::argument_fill`; the word lists it reads are the
//! policy's, below. Every key is documented in `docs/policy-reference.md`
//! and `docs/selection-nothing-fits.md`.

use std::ops::Range;

use crate::diag::ErrorKind;
use crate::parse::reader::Table;

/// `[features.argument_fill]`, as read.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgumentFillParams {
    /// `min_fraction`, in \[0,1\]: the share of a tool's required
    /// parameters the request must hold a value for (a tool with no
    /// required parameter always passes). 0 turns the gate off.
    pub min_fraction: f64,
    /// `turns`: how many earlier user messages (besides the latest) are
    /// searched for values too (0 = the latest message only).
    pub turns: usize,
    /// `values`: `"distinct"` (each required parameter needs its own value
    /// in the request: three number parameters need three numbers) or
    /// `"any"` (one value of the parameter's kind anywhere is enough).
    pub distinct: bool,
    /// `number_words`: words that stand for a number ("two", "dozen",
    /// "half"), lowercased; a digit always does.
    pub number_words: Vec<String>,
    /// `time_words`: words that give a time span or date ("today",
    /// "decade", "monday"), lowercased: they fill a number parameter whose
    /// name or description holds one of `time_units`, and any string
    /// parameter.
    pub time_words: Vec<String>,
    /// `time_units`: words of a parameter's name or description that make
    /// it a time quantity ("days", "years", "duration"), lowercased.
    pub time_units: Vec<String>,
    /// `place_parameters`: words of a string parameter's name that make it
    /// a place ("location", "city"): it needs a name, quote, locator or
    /// number, not just any new word.
    pub place_parameters: Vec<String>,
    /// `name_parameters`: words of a string parameter's name that make it
    /// a name ("name", "title"): the same as a place.
    pub name_parameters: Vec<String>,
    /// `time_parameters`: words of a string parameter's name that make it
    /// a date or period ("date", "season"): it needs a number or a time
    /// word.
    pub time_parameters: Vec<String>,
    /// `context_parameters`: words of a parameter's name that say the
    /// session, not the request, supplies it ("repo" of `repo_path`,
    /// "cwd"): such a parameter is always filled.
    pub context_parameters: Vec<String>,
    /// `filler_words`: words that are never a value (function words and
    /// request verbs: "what", "please", "find"), lowercased.
    pub filler_words: Vec<String>,
    /// Span of the table (for messages).
    pub span: Range<usize>,
}

fn words(t: &Table<'_, '_>, key: &str) -> Option<Vec<String>> {
    t.require(key)?;
    let list = t.str_list(key)?;
    Some(list.into_iter().map(|(s, _)| s.to_lowercase()).collect())
}

/// Reads `[features.argument_fill]` (every key required: the word lists are
/// part of the rule and live in the policy).
pub fn read_argument_fill(t: &Table<'_, '_>) -> Option<ArgumentFillParams> {
    let min_fraction = t.req_f64("min_fraction").and_then(|(x, span)| {
        if (0.0..=1.0).contains(&x) {
            Some(x)
        } else {
            t.reader().error(
                ErrorKind::OutOfRange,
                span,
                format!(
                    "`{}.min_fraction` must be within [0, 1], found {x}",
                    t.path()
                ),
            );
            None
        }
    });
    let turns = t
        .require("turns")
        .and_then(|_| t.int("turns"))
        .and_then(|(n, span)| {
            if (0..=100).contains(&n) {
                Some(n as usize)
            } else {
                t.reader().error(
                    ErrorKind::OutOfRange,
                    span,
                    format!("`{}.turns` must be within [0, 100], found {n}", t.path()),
                );
                None
            }
        });
    let distinct = t.require("values").and_then(|_| {
        crate::parse::policy::choice(t, "values", &[("distinct", true), ("any", false)])
    });
    let number_words = words(t, "number_words");
    let time_words = words(t, "time_words");
    let time_units = words(t, "time_units");
    let filler_words = words(t, "filler_words");
    let place_parameters = words(t, "place_parameters");
    let name_parameters = words(t, "name_parameters");
    let time_parameters = words(t, "time_parameters");
    let context_parameters = words(t, "context_parameters");
    Some(ArgumentFillParams {
        min_fraction: min_fraction?,
        turns: turns?,
        distinct: distinct?,
        number_words: number_words?,
        time_words: time_words?,
        time_units: time_units?,
        filler_words: filler_words?,
        place_parameters: place_parameters?,
        name_parameters: name_parameters?,
        time_parameters: time_parameters?,
        context_parameters: context_parameters?,
        span: t.span.clone(),
    })
}
