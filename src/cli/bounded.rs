//! Bounded echoes in the CLI's normal output (issue 29, items 2 and 5):
//! every name, id or value that comes from a user, a model or a file (a
//! tool name, a session id, a clause of a message, a trace time) is printed
//! with the limits the error messages use, so a 120,000-character tool name
//! or a time of `1e300` cannot make the output megabytes long:
//!
//! * a name or value: [`toolgate::diag::echo`], at most
//!   [`toolgate::diag::MAX_ECHOED_CHARS`] characters, then
//!   ` … N more characters`;
//! * a number: [`toolgate::diag::short_number`], at most
//!   [`toolgate::diag::MAX_ECHOED_NUMBER`] characters in plain form, else
//!   the exponent form (`1e300`);
//! * a list: at most [`MAX_LISTED`] items, then [`toolgate::diag::more`]
//!   (`… N more`).
//!
//! `--format json` keeps every value whole: it is for scripts, which read
//! what they asked for.

use std::borrow::Cow;

pub use toolgate::diag::{echo as name, short_number as number};

/// At most this many items of a list of names or terms in one line of text
/// output (intent terms, trigger keywords, clauses); the rest are counted
/// (`… N more`).
pub const MAX_LISTED: usize = toolgate::diag::MAX_ECHOED_ITEMS;

/// The first [`MAX_LISTED`] of `items`, each clipped ([`name`]), joined by
/// `sep`, then `… N more` for the rest; `none` when there are none.
pub fn list<S: AsRef<str>>(items: &[S], sep: &str) -> String {
    list_capped(items, sep, MAX_LISTED)
}

/// [`list`] with the cap `cap` (a cap of 0 gives only `… N more`).
pub fn list_capped<S: AsRef<str>>(items: &[S], sep: &str, cap: usize) -> String {
    toolgate::diag::echo_list(items, sep, cap)
}

/// `x` with `prec` decimals (`12.346`), or in [`number`]'s exponent form
/// when that takes more than [`toolgate::diag::MAX_ECHOED_NUMBER`]
/// characters (`1e300`, not 304 characters).
pub fn fixed(x: f64, prec: usize) -> String {
    let s = format!("{x:.prec$}");
    if s.len() <= toolgate::diag::MAX_ECHOED_NUMBER {
        s
    } else {
        number(x)
    }
}

/// `v` with every string (and object key) clipped ([`name`]), and whether
/// anything was clipped: a witness or counterexample input printed in text
/// stays valid JSON of bounded size.
pub fn clip_json(v: &serde_json::Value) -> (serde_json::Value, bool) {
    use serde_json::Value;
    let mut clipped = false;
    fn walk(v: &Value, clipped: &mut bool) -> Value {
        match v {
            Value::String(s) => {
                let c = name(s);
                if let Cow::Owned(o) = c {
                    *clipped = true;
                    Value::String(o)
                } else {
                    v.clone()
                }
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(x, clipped)).collect()),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| {
                        let k = match name(k) {
                            Cow::Owned(o) => {
                                *clipped = true;
                                o
                            }
                            Cow::Borrowed(b) => b.to_string(),
                        };
                        (k, walk(x, clipped))
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let out = walk(v, &mut clipped);
    (out, clipped)
}

/// `v` as one line of JSON for the text output, strings clipped
/// ([`clip_json`]); when something was clipped, a note says where the
/// whole value is.
pub fn json_line(v: &serde_json::Value) -> String {
    let (c, clipped) = clip_json(v);
    let text = serde_json::to_string(&c).unwrap_or_default();
    if clipped {
        format!("{text} (long strings clipped; --format json gives them whole)")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_names_and_json_are_bounded() {
        assert_eq!(list::<&str>(&[], ", "), "none");
        assert_eq!(list_capped(&["a", "b", "c"], ", ", 2), "a, b, … 1 more");
        let long = "x".repeat(1000);
        let l = list(&[long.as_str()], " ");
        assert!(l.ends_with("… 800 more characters"), "{l}");
        let v = serde_json::json!({"tools": [{"name": long}], "n": 1});
        let (c, clipped) = clip_json(&v);
        assert!(clipped);
        assert!(c.to_string().len() < 300, "{c}");
        assert!(!clip_json(&serde_json::json!({"a": "b"})).1);
        assert_eq!(number(1e300), "1e300");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(fixed(12.3456, 3), "12.346");
        assert_eq!(fixed(-1e300, 3), "-1e300");
    }
}
