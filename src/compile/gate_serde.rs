//! Reading a policy's `[gate]` with serde, reporting every problem at once
//! (issue 29, item 6). serde stops at the first problem of a document; to
//! find the next one, the key-value that holds the problem is blanked out
//! (its bytes become spaces, its newlines stay, so every byte offset of the
//! text still holds) and the text is read again: the blanked key takes its
//! shipped value, as if left out. This repeats until the text reads, or a
//! problem cannot be pinned to a key-value of its own (a missing key, a
//! misspelt table name), or [`MAX_PROBLEMS`] are found.
//!
//! An unknown key gets a did-you-mean among the keys serde lists as
//! expected.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use crate::diag::{Diagnostic, ErrorKind};
use crate::parse::policy::PolicySource;
use crate::plan::gate::config::{GateConfig, Wrapper, shipped};

/// At most this many problems of `[gate]` are collected in one read.
pub const MAX_PROBLEMS: usize = 64;

/// The error kind of a serde message.
fn error_kind(msg: &str) -> ErrorKind {
    if msg.starts_with("unknown field") {
        ErrorKind::UnknownKey
    } else if msg.starts_with("invalid type") {
        ErrorKind::WrongType
    } else if msg.starts_with("missing field") {
        ErrorKind::MissingKey
    } else {
        ErrorKind::InvalidValue
    }
}

/// The configuration of `policy`'s `[gate]` (the shipped one when absent)
/// and every problem found reading it: `(Some(config), [])` when it reads;
/// `(Some(config), problems)` when the text reads with the problem keys
/// blanked (their shipped values in `config`; the range checks can still
/// run on it); `(None, problems)` when it does not.
pub fn read_gate(policy: &PolicySource) -> (Option<GateConfig>, Vec<Diagnostic>) {
    let mut text = policy.file.text.to_string();
    let mut problems: Vec<Diagnostic> = Vec::new();
    let mut blanked: Vec<Range<usize>> = Vec::new();
    loop {
        let e = match toml::from_str::<Wrapper>(&text) {
            Ok(Wrapper { gate: Some(g) }) => return (Some(g), problems),
            Ok(Wrapper { gate: None }) => return (Some(shipped().clone()), problems),
            Err(e) => e,
        };
        let span = e.span();
        // A problem at a table around a key blanked before (a key it then
        // misses) is a consequence of the blanking, not the author's.
        if let Some(sp) = &span
            && blanked
                .iter()
                .any(|b| sp.start <= b.start && b.end <= sp.end)
        {
            return (None, problems);
        }
        problems.push(diagnostic(policy, &e));
        let next = span
            .filter(|_| problems.len() < MAX_PROBLEMS)
            .and_then(|sp| entry_at(&text, sp.start));
        match next {
            Some(entry) => {
                blank(&mut text, entry.clone());
                if DeTable::parse(&text).is_err() {
                    return (None, problems);
                }
                blanked.push(entry);
            }
            None => return (None, problems),
        }
    }
}

/// The problem serde reports, at its span (the `[gate]` table when it has
/// none), in the policy's own words: a float quoted as written (serde
/// writes `1e308` in 309 digits), an unknown key with a did-you-mean.
fn diagnostic(policy: &PolicySource, e: &toml::de::Error) -> Diagnostic {
    let mut msg = e.message().trim().to_string();
    if let (Some(sp), Some(rest)) = (e.span(), msg.strip_prefix("invalid type: floating point `"))
        && let Some((_, tail)) = rest.split_once('`')
        && let Some(written) = policy.file.text.get(sp)
    {
        msg = format!(
            "invalid type: floating point `{}`{tail}",
            crate::diag::number_as_written(written)
        );
    }
    let span = e
        .span()
        .or_else(|| policy.gate.as_ref().map(|g| g.span.clone()))
        .unwrap_or(0..0);
    let d = Diagnostic::at(
        error_kind(&msg),
        &policy.file,
        span,
        format!("[gate]: {msg}"),
    );
    match unknown_field(&msg) {
        Some((got, expected)) => d.with_suggestion(got, expected),
        None => d,
    }
}

/// For serde's "unknown field `x`, expected one of `a`, `b`" (or
/// "expected `a`"): `x` and the expected keys.
fn unknown_field(msg: &str) -> Option<(&str, Vec<&str>)> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (got, rest) = rest.split_once('`')?;
    Some((got, rest.split('`').skip(1).step_by(2).collect()))
}

/// The byte range of the innermost key-value of `text` whose key or value
/// holds byte `at`, from the key's start to the value's end, when its
/// value is not a table (a `[table]` cannot be blanked without moving its
/// keys to the table before it).
fn entry_at(text: &str, at: usize) -> Option<Range<usize>> {
    let doc = DeTable::parse(text).ok()?;
    find_in_table(doc.get_ref(), at)
}

fn find_in_table(t: &DeTable<'_>, at: usize) -> Option<Range<usize>> {
    for (k, v) in t.iter() {
        let (ks, vs) = (k.span(), v.span());
        let whole = ks.start.min(vs.start)..ks.end.max(vs.end);
        if let Some(inner) = find_in_value(v.get_ref(), at) {
            return Some(inner);
        }
        if whole.contains(&at) && !matches!(v.get_ref(), DeValue::Table(_)) && ks.end <= vs.start {
            return Some(whole);
        }
    }
    None
}

fn find_in_value(v: &DeValue<'_>, at: usize) -> Option<Range<usize>> {
    match v {
        DeValue::Table(t) => find_in_table(t, at),
        DeValue::Array(a) => a.iter().find_map(|x| find_in_value(x.get_ref(), at)),
        _ => None,
    }
}

/// Writes spaces over `range` of `text`, keeping its newlines (and so
/// every line, column and byte offset of the rest).
fn blank(text: &mut String, range: Range<usize>) {
    let blanked: String = text[range.clone()]
        .chars()
        .map(|c| match c {
            '\n' | '\r' => c.to_string(),
            c => " ".repeat(c.len_utf8()),
        })
        .collect();
    text.replace_range(range, &blanked);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::SourceFile;

    fn problems(text: &str) -> (bool, Vec<String>) {
        let (p, _) =
            crate::parse::policy::parse_policy_partial(SourceFile::new("p.toml", text)).unwrap();
        let (cfg, d) = read_gate(&p);
        (cfg.is_some(), d.iter().map(|d| d.to_string()).collect())
    }

    #[test]
    fn every_bad_key_of_gate_is_reported() {
        let base = "[policy]\nname = \"x\"\n[activation]\nthreshold = 0.5\n[score]\nformula = \"keyword_match\"\n";
        let text = format!(
            "{base}[gate.limits]\nmax_dept = 32\nmax_argument_bytes = \"big\"\n[gate.execution]\ntimeout_seconds = \"x\"\n"
        );
        let (read, d) = problems(&text);
        assert!(read, "{d:?}");
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(
            d[0].starts_with("p.toml:8:1: [gate]: unknown field `max_dept`"),
            "{d:?}"
        );
        assert!(
            d[1].starts_with("p.toml:9:22: [gate]: invalid type: string \"big\""),
            "{d:?}"
        );
        assert!(
            d[2].starts_with("p.toml:11:19: [gate]: invalid type: string \"x\""),
            "{d:?}"
        );
        let (p, _) =
            crate::parse::policy::parse_policy_partial(SourceFile::new("p.toml", text.as_str()))
                .unwrap();
        let (_, d) = read_gate(&p);
        assert_eq!(d[0].help.as_deref(), Some("did you mean `max_depth`?"));
        // A misspelt table name: reported, and the read stops there.
        let (read, d) = problems(&format!("{base}[gate.limitz]\nmax_depth = 3\n"));
        assert!(!read);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].contains("unknown field `limitz`"), "{d:?}");
    }

    #[test]
    fn blanking_keeps_offsets() {
        let mut t = "a = [\n 1,\n 2]\nb = 3\n".to_string();
        let r = entry_at(&t, 7).unwrap();
        assert_eq!(&t[r.clone()], "a = [\n 1,\n 2]");
        blank(&mut t, r);
        assert_eq!(t, "     \n   \n   \nb = 3\n");
        assert_eq!(entry_at(&t, t.find('3').unwrap()), Some(14..19));
    }
}
