//! The seed-vector key `preset` of an input (issue 29): a seed-vector line
//! names the seed preset its expectations come from, `article` (the
//! seed's function version, `policies/seed-article.toml`) or `registry`
//! (its `ConditionalToolRegistry`, `policies/default.toml`). The key is
//! accepted so that a vector can be fed as is, and does not pick the
//! policy; any other value is a mistake (`"nosuch"`), refused with a
//! did-you-mean instead of being ignored.

use crate::diag::json_path::{Seg, value_span};

use super::{EvalInput, InputError};

/// The presets of the seed's vectors (`tests/data/seed-vectors/*.jsonl`).
pub const SEED_PRESETS: &[&str] = &["article", "registry"];

/// The problem with `input`'s `preset`, if any: the message, without a
/// place.
pub fn problem(input: &EvalInput) -> Option<String> {
    let v = input.preset.as_ref()?;
    let known = SEED_PRESETS.join(", ");
    let Some(s) = v.as_str() else {
        return Some(format!(
            "`preset` must be the name of a seed preset ({known}), found {}",
            crate::diag::json_kind(v)
        ));
    };
    if SEED_PRESETS.contains(&s) {
        return None;
    }
    let hint = crate::diag::did_you_mean(s, SEED_PRESETS.iter().copied())
        .map(|m| format!(" (did you mean `{m}`?)"))
        .unwrap_or_default();
    Some(format!(
        "`preset` `{}` is not a seed preset{hint}; the seed vectors' presets: {known} (the key only labels a seed-vector line: the policy comes from --policy)",
        crate::diag::echo(s)
    ))
}

/// [`problem`], located at the `preset` value of `text`.
pub(super) fn check(input: &EvalInput, text: &str) -> Result<(), InputError> {
    let Some(message) = problem(input) else {
        return Ok(());
    };
    let (line, column) = value_span(text, &[Seg::Key("preset")]).map_or((0, 0), |s| {
        crate::diag::SourceFile::new("", text).line_col(s.start)
    });
    Err(InputError {
        line,
        column,
        message,
    })
}
