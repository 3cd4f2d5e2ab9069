//! Reading a policy's `[gate]` with serde, reporting every problem at once
//! (issue 29, item 6). serde stops at the first problem of a document; to
//! find the next one, the key-value that holds the problem is blanked out
//! (its bytes become spaces, its newlines stay, so every byte offset of the
//! text still holds) and the text is read again: the blanked key takes its
//! shipped value, as if left out. A misspelt table name (`[gate.limitz]`)
//! is blanked with its whole table, header and keys. This repeats until
//! the text reads, or a problem cannot be pinned to a key-value of its own
//! (a missing key), or [`MAX_PROBLEMS`] are found. A required key that is
//! missing only because its bad value was blanked (a `severity = "hihg"`
//! of a `[[gate.patterns]]` entry) is not a second problem: the read stops
//! there.
//!
//! Each message is in plain words ([`super::gate_words`]): the dotted key
//! path, a did-you-mean for an unknown key or value, the allowed values,
//! the range of a whole number.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use crate::diag::Diagnostic;
use crate::parse::policy::PolicySource;
use crate::plan::gate::config::{GateConfig, Wrapper, shipped};

/// At most this many problems of `[gate]` are collected in one read.
pub const MAX_PROBLEMS: usize = 64;

/// The configuration of `policy`'s `[gate]` (the shipped one when absent)
/// and every problem found reading it: `(Some(config), [])` when it reads;
/// `(Some(config), problems)` when the text reads with the problem keys
/// blanked (their shipped values in `config`; the range checks can still
/// run on it); `(None, problems)` when it does not.
pub fn read_gate(policy: &PolicySource) -> (Option<GateConfig>, Vec<Diagnostic>) {
    let mut text = policy.file.text.to_string();
    let mut problems: Vec<Diagnostic> = Vec::new();
    let mut blanked: Vec<Range<usize>> = Vec::new();
    let mut blanked_keys: Vec<String> = Vec::new();
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
        if let Some(rest) = e.message().trim().strip_prefix("missing field `")
            && blanked_keys
                .iter()
                .any(|k| rest.split('`').next() == Some(k.as_str()))
        {
            return (None, problems);
        }
        let doc = DeTable::parse(&text).ok();
        problems.push(diagnostic(policy, &e, doc.as_ref().map(|d| d.get_ref())));
        let next = span
            .filter(|_| problems.len() < MAX_PROBLEMS)
            .and_then(|sp| {
                doc.as_ref()
                    .and_then(|d| entry_at(&text, d.get_ref(), sp.start))
            });
        drop(doc);
        match next {
            Some((entry, key)) => {
                crate::diag::blank(&mut text, entry.clone());
                if DeTable::parse(&text).is_err() {
                    return (None, problems);
                }
                blanked.push(entry);
                blanked_keys.push(key);
            }
            None => return (None, problems),
        }
    }
}

/// The problem serde reports, at its span (the `[gate]` table when it has
/// none), in plain words ([`super::gate_words::plain`]): the dotted key
/// path of the value, a number quoted as written (serde writes `1e308` in
/// 309 digits), a did-you-mean for an unknown key or value.
fn diagnostic(policy: &PolicySource, e: &toml::de::Error, doc: Option<&DeTable<'_>>) -> Diagnostic {
    let msg = e.message().trim();
    let text = &policy.file.text;
    let path = e
        .span()
        .zip(doc)
        .and_then(|(sp, d)| super::gate_words::key_path_at(d, sp.start))
        .unwrap_or_default();
    let written = e.span().and_then(|sp| text.get(sp));
    let (kind, message, help) = super::gate_words::plain(msg, &path, written);
    let span = e
        .span()
        .or_else(|| policy.gate.as_ref().map(|g| g.span.clone()))
        .unwrap_or(0..0);
    let d = Diagnostic::at(kind, &policy.file, span, message);
    match help {
        Some(h) => d.with_help(h),
        None => d,
    }
}

/// What to blank for the problem at byte `at` of `text` (`doc`, its tree),
/// with the key's name: the innermost key-value whose key or value holds
/// `at`, from the key's start to the value's end, when its value is not a
/// table; for a table (a misspelt table name), the whole table: from the
/// start of the key's line to the end of the line of its last key or
/// value, nested tables included.
fn entry_at(text: &str, doc: &DeTable<'_>, at: usize) -> Option<(Range<usize>, String)> {
    find_in_table(text, doc, at)
}

fn find_in_table(text: &str, t: &DeTable<'_>, at: usize) -> Option<(Range<usize>, String)> {
    for (k, v) in t.iter() {
        let (ks, vs) = (k.span(), v.span());
        let whole = ks.start.min(vs.start)..ks.end.max(vs.end);
        if let Some(inner) = find_in_value(text, v.get_ref(), at) {
            return Some(inner);
        }
        let key = k.get_ref().to_string();
        match v.get_ref() {
            DeValue::Table(inner) if ks.contains(&at) => {
                let start = text[..ks.start].rfind('\n').map_or(0, |i| i + 1);
                let mut end = whole.end.max(ks.end);
                last_end(inner, &mut end);
                let end = text[end..].find('\n').map_or(text.len(), |i| end + i);
                return Some((start..end, key));
            }
            DeValue::Table(_) => {}
            // a misspelt array of tables (`[[gate.patternz]]`): every entry
            DeValue::Array(items)
                if ks.contains(&at)
                    && !items.is_empty()
                    && items
                        .iter()
                        .all(|x| matches!(x.get_ref(), DeValue::Table(_))) =>
            {
                let start = text[..ks.start].rfind('\n').map_or(0, |i| i + 1);
                let mut end = whole.end.max(ks.end);
                for x in items.iter() {
                    end = end.max(x.span().end);
                    if let DeValue::Table(inner) = x.get_ref() {
                        last_end(inner, &mut end);
                    }
                }
                let end = text[end..].find('\n').map_or(text.len(), |i| end + i);
                return Some((start..end, key));
            }
            _ if whole.contains(&at) && ks.end <= vs.start => return Some((whole, key)),
            _ => {}
        }
    }
    None
}

/// Raises `end` to the end of every key and value under `t`.
fn last_end(t: &DeTable<'_>, end: &mut usize) {
    for (k, v) in t.iter() {
        *end = (*end).max(k.span().end).max(v.span().end);
        match v.get_ref() {
            DeValue::Table(inner) => last_end(inner, end),
            DeValue::Array(a) => {
                for x in a.iter() {
                    *end = (*end).max(x.span().end);
                    if let DeValue::Table(inner) = x.get_ref() {
                        last_end(inner, end);
                    }
                }
            }
            _ => {}
        }
    }
}

fn find_in_value(text: &str, v: &DeValue<'_>, at: usize) -> Option<(Range<usize>, String)> {
    match v {
        DeValue::Table(t) => find_in_table(text, t, at),
        DeValue::Array(a) => a.iter().find_map(|x| find_in_value(text, x.get_ref(), at)),
        _ => None,
    }
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
        assert_eq!(
            d[0],
            "p.toml:8:1: unknown key `max_dept` in [gate.limits] (did you mean `max_depth`?)"
        );
        assert_eq!(
            d[1],
            "p.toml:9:22: `gate.limits.max_argument_bytes` must be a whole number from 0 to 18446744073709551615, found the string \"big\""
        );
        assert_eq!(
            d[2],
            "p.toml:11:19: `gate.execution.timeout_seconds` must be a number, found the string \"x\""
        );
        // A misspelt table name: reported, and the rest is read on.
        let (read, d) = problems(&format!(
            "{base}[gate.limitz]\nmax_depth = 3\n[gate.limits]\nmax_dept = 3\n"
        ));
        assert!(read, "{d:?}");
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(
            d[0].starts_with("p.toml:7:7: unknown key `limitz` in [gate] (did you mean `limits`?)"),
            "{d:?}"
        );
        assert!(
            d[1].starts_with("p.toml:10:1: unknown key `max_dept`"),
            "{d:?}"
        );
    }

    #[test]
    fn a_bad_value_of_a_required_key_is_one_problem() {
        let base = "[policy]\nname = \"x\"\n[activation]\nthreshold = 0.5\n[score]\nformula = \"keyword_match\"\n";
        let (_, d) = problems(&format!(
            "{base}[[gate.patterns]]\nid = \"p\"\npattern = \"x\"\ndescription = \"d\"\nseverity = \"hihg\"\naction = \"deny\"\n"
        ));
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].contains("`gate.patterns[0].severity` has the unknown value `hihg`; allowed values: info, low, medium, high, critical (did you mean `high`?)"),
            "{d:?}"
        );
    }

    #[test]
    fn blanking_keeps_offsets() {
        let mut t = "a = [\n 1,\n 2]\nb = 3\n".to_string();
        let at = |t: &str, i: usize| entry_at(t, DeTable::parse(t).unwrap().get_ref(), i);
        let (r, key) = at(&t, 7).unwrap();
        assert_eq!((&t[r.clone()], key.as_str()), ("a = [\n 1,\n 2]", "a"));
        crate::diag::blank(&mut t, r);
        assert_eq!(t, "     \n   \n   \nb = 3\n");
        assert_eq!(at(&t, t.find('3').unwrap()).map(|x| x.0), Some(14..19));
        // a table: from its header's line to its last key's line
        let t = "[x]\nk = 1\n[x.typo]\na = 1\nb = [\n 2]\n[x.z]\nc = 3\n";
        let (r, key) = at(t, t.find("typo").unwrap()).unwrap();
        assert_eq!(
            (&t[r], key.as_str()),
            ("[x.typo]\na = 1\nb = [\n 2]", "typo")
        );
        // an array of tables: every entry
        let t = "[x]\nk = 1\n[[x.typo]]\na = 1\n[[x.typo]]\na = 2\n[x.z]\nc = 3\n";
        let (r, key) = at(t, t.find("typo").unwrap()).unwrap();
        assert_eq!(
            (&t[r], key.as_str()),
            ("[[x.typo]]\na = 1\n[[x.typo]]\na = 2", "typo")
        );
    }
}
