//! Where a value stands in a JSON text: the byte span of the value (or of
//! a key) at a JSON path, for messages that point at a value `serde_json`
//! accepted but a later check refused (a negative count, a misspelt key of
//! a trace line).
//!
//! `serde_json` reports a location only for the errors it finds itself;
//! this scanner walks the text once more, down the path only (siblings are
//! skipped without building anything, nesting without recursion), so
//! locating a value costs one pass over the text before it. On a text that
//! is not JSON it gives up (`None`): the caller has already parsed it.

use std::ops::Range;

/// One step of a JSON path: an object's key or an array's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seg<'a> {
    /// The member named so (the first one, should the key repeat).
    Key(&'a str),
    /// The element at this 0-based index.
    Index(usize),
}

/// The byte span in `text` of the value at `path` (the whole text's value
/// for an empty path); `None` when the path does not exist.
pub fn value_span(text: &str, path: &[Seg<'_>]) -> Option<Range<usize>> {
    let mut s = Scanner {
        b: text.as_bytes(),
        i: 0,
    };
    s.ws();
    s.descend(path)?;
    let start = s.i;
    s.skip_value()?;
    Some(start..s.i)
}

/// The byte span in `text` of the key `key` (with its quotes) of the object
/// at `path`; `None` when there is no such object or key.
pub fn key_span(text: &str, path: &[Seg<'_>], key: &str) -> Option<Range<usize>> {
    let mut s = Scanner {
        b: text.as_bytes(),
        i: 0,
    };
    s.ws();
    s.descend(path)?;
    s.member(key)
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    /// Moves to the start of the value at `path`.
    fn descend(&mut self, path: &[Seg<'_>]) -> Option<()> {
        for seg in path {
            match *seg {
                Seg::Key(k) => {
                    self.member(k)?;
                }
                Seg::Index(n) => {
                    self.eat(b'[')?;
                    for _ in 0..n {
                        self.ws();
                        self.skip_value()?;
                        self.eat(b',')?;
                    }
                    self.ws();
                    if self.b.get(self.i) == Some(&b']') {
                        return None;
                    }
                }
            }
        }
        Some(())
    }

    /// In the object starting here, finds member `key`: returns its key's
    /// span and leaves the scanner at the start of its value.
    fn member(&mut self, key: &str) -> Option<Range<usize>> {
        self.eat(b'{')?;
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return None;
            }
            let k = self.i;
            self.skip_string()?;
            let raw = &self.b[k..self.i];
            let same = if raw.contains(&b'\\') {
                serde_json::from_slice::<String>(raw).ok().as_deref() == Some(key)
            } else {
                &raw[1..raw.len() - 1] == key.as_bytes()
            };
            self.eat(b':')?;
            self.ws();
            if same {
                return Some(k..k + raw.len());
            }
            self.skip_value()?;
            self.eat(b',')?;
        }
    }

    fn skip_string(&mut self) -> Option<()> {
        self.i += 1;
        while let Some(&c) = self.b.get(self.i) {
            self.i += 1;
            match c {
                b'"' => return Some(()),
                b'\\' => self.i += 1,
                _ => {}
            }
        }
        None
    }

    /// Skips one value (nested arrays and objects by counting brackets).
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            let c = *self.b.get(self.i)?;
            match c {
                b'"' => self.skip_string()?,
                b'[' | b'{' => {
                    depth += 1;
                    self.i += 1;
                }
                b']' | b'}' => {
                    depth = depth.checked_sub(1)?;
                    self.i += 1;
                }
                b',' | b':' | b' ' | b'\t' | b'\n' | b'\r' if depth > 0 => self.i += 1,
                _ => {
                    // a number or a literal: up to a delimiter
                    while self.i < self.b.len()
                        && !matches!(
                            self.b[self.i],
                            b',' | b']' | b'}' | b':' | b' ' | b'\t' | b'\n' | b'\r'
                        )
                    {
                        self.i += 1;
                    }
                }
            }
            if depth == 0 {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_keys_are_found_down_their_path() {
        let t = "{\"a\": [1, {\"b\\u0063\": -3e300}], \"s\": \"x,]\" ,\n \"n\": {\"k\": null}}";
        let at = |p: &[Seg<'_>]| value_span(t, p).map(|r| &t[r]);
        assert_eq!(
            at(&[Seg::Key("a"), Seg::Index(1), Seg::Key("bc")]),
            Some("-3e300")
        );
        assert_eq!(at(&[Seg::Key("a"), Seg::Index(0)]), Some("1"));
        assert_eq!(at(&[Seg::Key("s")]), Some("\"x,]\""));
        assert_eq!(at(&[Seg::Key("n")]), Some("{\"k\": null}"));
        assert_eq!(at(&[Seg::Key("n"), Seg::Key("k")]), Some("null"));
        assert_eq!(at(&[Seg::Key("a"), Seg::Index(2)]), None);
        assert_eq!(at(&[Seg::Key("zz")]), None);
        assert_eq!(at(&[Seg::Key("s"), Seg::Key("x")]), None);
        assert_eq!(at(&[]), Some(t));
        let k = key_span(t, &[Seg::Key("n")], "k").unwrap();
        assert_eq!(&t[k], "\"k\"");
        // not JSON: no answer, no panic
        assert_eq!(
            value_span("{\"a\": [1, ", &[Seg::Key("a"), Seg::Index(3)]),
            None
        );
        assert_eq!(value_span("]]]", &[]), None);
    }
}
