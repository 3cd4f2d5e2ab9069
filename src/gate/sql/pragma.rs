//! SQLite's `PRAGMA` statement, read by its own small grammar
//! (<https://sqlite.org/pragma.html>): `PRAGMA [schema.]name`,
//! `PRAGMA [schema.]name = value` or `PRAGMA [schema.]name(value)`, where a
//! value is a name, a number or a quoted string. sqlparser reads only some
//! of these (`PRAGMA table_info(users)` and `PRAGMA journal_mode = WAL` do
//! not parse), so a single statement of exactly this shape is read here
//! first; anything else (comments, several statements, other values) goes
//! to sqlparser, which fails closed.

/// One `PRAGMA` statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pragma<'a> {
    /// The schema, when qualified (`main` in `PRAGMA main.table_info(t)`).
    pub(crate) schema: Option<&'a str>,
    /// The pragma's name, as written.
    pub(crate) name: &'a str,
    /// Its argument, as written (quotes kept).
    pub(crate) value: Option<&'a str>,
    /// The argument was given with `=` (always a setting), not in
    /// parentheses (a setting or, for some pragmas, a table or index name).
    pub(crate) assigns: bool,
}

fn ident_len(s: &str) -> usize {
    let b = s.as_bytes();
    if b.first()
        .is_none_or(|c| !(c.is_ascii_alphabetic() || *c == b'_'))
    {
        return 0;
    }
    b.iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count()
}

/// The length of a value at the start of `s`: a name, a signed number, or
/// a string in `'...'` or `"..."` without a quote inside.
fn value_len(s: &str) -> usize {
    let b = s.as_bytes();
    match b.first() {
        Some(q @ (b'\'' | b'"')) => match s[1..].find(*q as char) {
            Some(k) => k + 2,
            None => 0,
        },
        Some(c) if c.is_ascii_digit() || *c == b'-' || *c == b'+' => {
            let n = 1 + b[1..]
                .iter()
                .take_while(|c| c.is_ascii_digit() || **c == b'.')
                .count();
            if b[..n].iter().any(u8::is_ascii_digit) {
                n
            } else {
                0
            }
        }
        _ => ident_len(s),
    }
}

/// Reads `sql` as one `PRAGMA` statement (an optional `;` at the end);
/// `None` when it is anything else.
pub(crate) fn parse_pragma(sql: &str) -> Option<Pragma<'_>> {
    let s = sql.trim();
    let s = s.strip_suffix(';').unwrap_or(s).trim_end();
    let head = s.get(..6)?;
    if !head.eq_ignore_ascii_case("pragma") {
        return None;
    }
    let rest = &s[6..];
    let s = rest.trim_start();
    if s.len() == rest.len() {
        return None; // `PRAGMAx`
    }
    let n = ident_len(s);
    if n == 0 {
        return None;
    }
    let (mut schema, mut name) = (None, &s[..n]);
    let mut s = &s[n..];
    if let Some(after) = s.strip_prefix('.') {
        let m = ident_len(after);
        if m == 0 {
            return None;
        }
        schema = Some(name);
        name = &after[..m];
        s = &after[m..];
    }
    let s = s.trim_start();
    if s.is_empty() {
        return Some(Pragma {
            schema,
            name,
            value: None,
            assigns: false,
        });
    }
    let (assigns, s) = if let Some(v) = s.strip_prefix('=') {
        (true, v.trim_start())
    } else if let Some(v) = s.strip_prefix('(') {
        (false, v.trim_start())
    } else {
        return None;
    };
    let k = value_len(s);
    if k == 0 {
        return None;
    }
    let value = &s[..k];
    let tail = s[k..].trim_start();
    let tail = if assigns {
        tail
    } else {
        tail.strip_prefix(')')?.trim_start()
    };
    tail.is_empty().then_some(Pragma {
        schema,
        name,
        value: Some(value),
        assigns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_forms() {
        let p = parse_pragma("PRAGMA table_info(users)").unwrap();
        assert_eq!(
            (p.name, p.value, p.assigns),
            ("table_info", Some("users"), false)
        );
        let p = parse_pragma("pragma main.index_list( 'users' ) ;").unwrap();
        assert_eq!(p.schema, Some("main"));
        assert_eq!((p.name, p.value), ("index_list", Some("'users'")));
        let p = parse_pragma("PRAGMA journal_mode = WAL").unwrap();
        assert_eq!(
            (p.name, p.value, p.assigns),
            ("journal_mode", Some("WAL"), true)
        );
        let p = parse_pragma("PRAGMA cache_size = -2000").unwrap();
        assert_eq!(p.value, Some("-2000"));
        let p = parse_pragma("PRAGMA writable_schema").unwrap();
        assert_eq!((p.name, p.value), ("writable_schema", None));
    }

    #[test]
    fn anything_else_is_left_to_sqlparser() {
        for s in [
            "PRAGMA table_info(users); DROP TABLE users",
            "PRAGMA table_info(users) -- x",
            "PRAGMA /* x */ table_info(users)",
            "PRAGMA table_info(users",
            "PRAGMA table_info(a, b)",
            "PRAGMA 1x",
            "PRAGMAtable_info",
            "PRAGMA x = 'a'b'",
            "SELECT 1",
            "PRAGMA x = -",
            "",
        ] {
            assert_eq!(parse_pragma(s), None, "{s}");
        }
    }
}
