//! serde's messages about a policy's `[gate]`, in plain words (issue 29):
//! `unknown field `max_dept`, expected one of `max_depth`, …` becomes
//! "unknown key `max_dept` in [gate.limits]" with a did-you-mean;
//! `unknown variant `hihg`, expected one of `info`, …` becomes "`…severity`
//! has the unknown value `hihg`; allowed values: info, …"; `invalid type:
//! floating point `1e308`, expected usize` becomes "`gate.limits.max_argument_bytes`
//! must be a whole number from 0 to 18446744073709551615, found 1e308" (the
//! number as written, clipped: [`crate::diag::number_as_written`]).
//!
//! The dotted key path comes from the place of the problem in the policy's
//! TOML tree ([`key_path_at`]); serde's own message has none.

use toml::de::{DeTable, DeValue};

use crate::diag::{ErrorKind, did_you_mean, echo, number_as_written};

/// A serde message about `[gate]` rewritten: its kind, the sentence, and
/// a help (a did-you-mean, or the known keys). `path` is the dotted key
/// path of the value (or of the unknown key) the message is about (empty
/// when unknown); `written` the source text of that value.
pub(crate) fn plain(
    msg: &str,
    path: &str,
    written: Option<&str>,
) -> (ErrorKind, String, Option<String>) {
    let at = if path.is_empty() {
        "a key of [gate]".to_string()
    } else {
        format!("`{path}`")
    };
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let (key, rest) = rest.split_once('`').unwrap_or((rest, ""));
        let known = backticked(rest);
        let table = path
            .strip_suffix(key)
            .map(|p| p.trim_end_matches('.'))
            .filter(|p| !p.is_empty())
            .unwrap_or("gate");
        let help = match did_you_mean(key, known.iter().copied()) {
            Some(s) => Some(format!("did you mean `{s}`?")),
            None if known.is_empty() => None,
            None => Some(format!("known keys here: {}", known.join(", "))),
        };
        return (
            ErrorKind::UnknownKey,
            format!("unknown key `{}` in [{table}]", echo(key)),
            help,
        );
    }
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let (got, rest) = rest.split_once('`').unwrap_or((rest, ""));
        let known = backticked(rest);
        let help = did_you_mean(got, known.iter().copied()).map(|s| format!("did you mean `{s}`?"));
        return (
            ErrorKind::InvalidValue,
            format!(
                "{at} has the unknown value `{}`; allowed values: {}",
                echo(got),
                known.join(", ")
            ),
            help,
        );
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let key = rest.split('`').next().unwrap_or(rest);
        let table = if path.is_empty() { "gate" } else { path };
        return (
            ErrorKind::MissingKey,
            format!("[{table}] is missing the required key `{key}`"),
            None,
        );
    }
    for (prefix, kind) in [
        ("invalid type: ", ErrorKind::WrongType),
        ("invalid value: ", ErrorKind::OutOfRange),
    ] {
        if let Some(rest) = msg.strip_prefix(prefix)
            && let Some((found, expected)) = rest.rsplit_once(", expected ")
        {
            let found = found_words(found, written);
            // A number where a whole number of a given range belongs is
            // a range problem, whatever its TOML type.
            let kind = match whole_range(expected) {
                Some(_) if found.starts_with(|c: char| c == '-' || c.is_ascii_digit()) => {
                    ErrorKind::OutOfRange
                }
                _ => kind,
            };
            return (
                kind,
                format!("{at} must be {}, found {found}", expected_words(expected)),
                None,
            );
        }
    }
    let text = if path.is_empty() {
        format!("[gate]: {msg}")
    } else {
        format!("`{path}`: {msg}")
    };
    (ErrorKind::InvalidValue, text, None)
}

/// The backticked names of serde's "expected one of `a`, `b`" (or
/// "expected `a` or `b`").
fn backticked(rest: &str) -> Vec<&str> {
    rest.split('`').skip(1).step_by(2).collect()
}

/// The range of serde's name of an unsigned or signed integer type.
fn whole_range(expected: &str) -> Option<(i128, u128)> {
    Some(match expected.trim() {
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "u64" | "usize" => (0, u64::MAX.into()),
        "i8" => (i8::MIN.into(), i8::MAX as u128),
        "i16" => (i16::MIN.into(), i16::MAX as u128),
        "i32" => (i32::MIN.into(), i32::MAX as u128),
        "i64" | "isize" => (i64::MIN.into(), i64::MAX as u128),
        _ => return None,
    })
}

/// serde's wording of a type (`usize`, `a sequence`, `struct X`) in TOML's terms.
fn expected_words(expected: &str) -> String {
    let e = expected.trim();
    if let Some((lo, hi)) = whole_range(e) {
        return format!("a whole number from {lo} to {hi}");
    }
    match e {
        "f32" | "f64" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a string" | "a borrowed string" | "a character" | "a char" => "a string".into(),
        _ if e.starts_with("struct ") || e.starts_with("a map") => "a table".into(),
        _ if e.starts_with("a sequence") || e.starts_with("a tuple") => "an array".into(),
        _ => e.to_string(),
    }
}

/// serde's wording of a value found (`string "x"`, `floating point `1e308``)
/// in TOML's terms; a number is quoted as `written` when it is given.
fn found_words(found: &str, written: Option<&str>) -> String {
    let f = found.trim();
    let ticked = |prefix: &str| {
        f.strip_prefix(prefix)
            .map(|rest| rest.trim().trim_matches('`').to_string())
    };
    if let Some(s) = f.strip_prefix("string ") {
        return format!("the string {}", echo(s));
    }
    if let Some(n) = ticked("integer ").or_else(|| ticked("floating point ")) {
        return match written {
            Some(w) if !w.trim().is_empty() => number_as_written(w).into_owned(),
            _ => number_as_written(&n).into_owned(),
        };
    }
    if let Some(b) = ticked("boolean ") {
        return b;
    }
    match f {
        "sequence" => "an array".into(),
        "map" => "a table".into(),
        _ => f.to_string(),
    }
}

/// The dotted key path (`gate.checks.unknown_tool.severity`, array
/// elements as `gate.patterns[3]`) of the innermost key of `doc` whose key
/// or value holds byte `at`.
pub(crate) fn key_path_at(doc: &DeTable<'_>, at: usize) -> Option<String> {
    let mut path = String::new();
    in_table(doc, at, &mut path).then_some(path)
}

fn in_table(t: &DeTable<'_>, at: usize, path: &mut String) -> bool {
    for (k, v) in t.iter() {
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(k.get_ref());
        // children first: a header table's keys lie outside its own span
        if in_value(v.get_ref(), at, path) {
            return true;
        }
        if k.span().contains(&at)
            || (v.span().contains(&at) && !matches!(v.get_ref(), DeValue::Table(_)))
        {
            return true;
        }
        path.truncate(len);
    }
    false
}

fn in_value(v: &DeValue<'_>, at: usize, path: &mut String) -> bool {
    match v {
        DeValue::Table(t) => in_table(t, at, path),
        DeValue::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                if in_value(x.get_ref(), at, path)
                    || (x.span().contains(&at) && !matches!(x.get_ref(), DeValue::Table(_)))
                {
                    return true;
                }
                path.truncate(len);
            }
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_read_plainly() {
        let (k, m, h) = plain(
            "unknown field `max_dept`, expected one of `max_argument_bytes`, `max_depth`",
            "gate.limits.max_dept",
            None,
        );
        assert_eq!(k, ErrorKind::UnknownKey);
        assert_eq!(m, "unknown key `max_dept` in [gate.limits]");
        assert_eq!(h.as_deref(), Some("did you mean `max_depth`?"));
        let (k, m, h) = plain(
            "unknown variant `hihg`, expected one of `info`, `low`, `medium`, `high`, `critical`",
            "gate.checks.unknown_tool.severity",
            Some("\"hihg\""),
        );
        assert_eq!(k, ErrorKind::InvalidValue);
        assert_eq!(
            m,
            "`gate.checks.unknown_tool.severity` has the unknown value `hihg`; allowed values: info, low, medium, high, critical"
        );
        assert_eq!(h.as_deref(), Some("did you mean `high`?"));
        let (k, m, _) = plain(
            "invalid type: floating point `1e308`, expected usize",
            "gate.limits.max_argument_bytes",
            Some("1e308"),
        );
        assert_eq!(k, ErrorKind::OutOfRange);
        assert_eq!(
            m,
            "`gate.limits.max_argument_bytes` must be a whole number from 0 to 18446744073709551615, found 1e308"
        );
        let (k, m, _) = plain(
            "invalid type: string \"30\", expected f64",
            "gate.execution.timeout_seconds",
            Some("\"30\""),
        );
        assert_eq!(k, ErrorKind::WrongType);
        assert_eq!(
            m,
            "`gate.execution.timeout_seconds` must be a number, found the string \"30\""
        );
        let (_, m, _) = plain("missing field `id`", "gate.patterns[2]", None);
        assert_eq!(m, "[gate.patterns[2]] is missing the required key `id`");
    }

    #[test]
    fn key_paths_are_found_in_headers_inline_tables_and_arrays() {
        let text = "[gate.limits]\nmax_depth = 3\n[gate.checks]\nx = { severity = \"hihg\" }\n[[gate.patterns]]\nid = \"a\"\n[[gate.patterns]]\nid = 5\n";
        let doc = DeTable::parse(text).unwrap();
        let at = |needle: &str| key_path_at(doc.get_ref(), text.find(needle).unwrap());
        assert_eq!(at("3").as_deref(), Some("gate.limits.max_depth"));
        assert_eq!(at("\"hihg\"").as_deref(), Some("gate.checks.x.severity"));
        assert_eq!(at("5").as_deref(), Some("gate.patterns[1].id"));
        assert_eq!(at("limits").as_deref(), Some("gate.limits"));
    }
}
