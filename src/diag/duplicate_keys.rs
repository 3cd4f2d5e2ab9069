//! Duplicate object keys in argument text (`{"command":"rm -rf ~","command":"ls"}`).
//!
//! RFC 8259 §4 says the names within an object SHOULD be unique and leaves
//! what a parser does with repeats open: serde_json keeps the last, other
//! parsers the first. A gate that read the last value while a first-key-wins
//! consumer of the same text runs the first would pass `ls` and run
//! `rm -rf ~`, so argument text with a repeated key is refused (the gate
//! fails closed), and so are a `--tools` file and a trace line with one
//! (issue 29: the last value won silently). Checked once the text parsed as
//! JSON, by a second pass that builds nothing but the keys of one object at
//! a time.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// The first repeated key of `text`, with serde_json's position
/// (`duplicate key `k` at line L column C`), or `None` when every object
/// has unique keys or the text is not JSON (the caller reports that).
pub fn first_duplicate(text: &str) -> Option<String> {
    find(text).map(|d| {
        format!(
            "duplicate key `{}` at line {} column {}",
            crate::diag::echo(&d.key),
            d.line,
            d.column
        )
    })
}

/// A repeated key of a JSON text, and where its second occurrence stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The key as decoded (escapes resolved), not clipped.
    pub key: String,
    /// Byte offset of the second occurrence's opening quote in the text.
    pub offset: usize,
    /// Its 1-based line.
    pub line: usize,
    /// Its 1-based column, in characters.
    pub column: usize,
}

/// The first repeated key of `text` (in reading order), or `None` when
/// every object has unique keys or the text is not JSON.
pub fn find(text: &str) -> Option<DuplicateKey> {
    let e = match serde_json::from_str::<Unique>(text) {
        Err(e) if e.is_data() => e,
        _ => return None,
    };
    // The custom message is the key itself; serde_json appends its place.
    let shown = e.to_string();
    let key = shown
        .rsplit_once(" at line ")
        .map_or(shown.as_str(), |(k, _)| k)
        .to_string();
    // serde_json stands just past the key (its column counts bytes): the
    // key's opening quote is the last unescaped `"` before its closing one.
    let line_start: usize = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let end = (line_start + e.column()).min(text.len());
    let b = text.as_bytes();
    let close = (0..end).rev().find(|&i| b[i] == b'"')?;
    let escaped = |i: usize| (0..i).rev().take_while(|&j| b[j] == b'\\').count() % 2 == 1;
    let offset = (0..close)
        .rev()
        .find(|&i| b[i] == b'"' && !escaped(i))
        .unwrap_or(close);
    let column = 1 + text[line_start.min(offset)..offset].chars().count();
    Some(DuplicateKey {
        key,
        offset,
        line: e.line(),
        column,
    })
}

struct Unique;

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Unique;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_str<E>(self, _: &str) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_unit<E>(self) -> Result<Unique, E> {
        Ok(Unique)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
        while seq.next_element::<Unique>()?.is_some() {}
        Ok(Unique)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
        let mut seen = HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            if seen.contains(&k) {
                // the key alone: `find` reads it back
                return Err(de::Error::custom(k));
            }
            map.next_value::<Unique>()?;
            seen.insert(k);
        }
        Ok(Unique)
    }
}

#[cfg(test)]
mod tests {
    use super::first_duplicate;

    #[test]
    fn a_repeated_key_at_any_depth_is_found_and_unique_keys_pass() {
        let d = first_duplicate(r#"{"command":"rm -rf ~","command":"ls"}"#).unwrap();
        assert!(d.starts_with("duplicate key `command` at line 1"), "{d}");
        assert!(first_duplicate(r#"{"a":{"b":1,"b":2}}"#).is_some());
        assert!(first_duplicate(r#"{"a":[{"x":1},{"x":1,"x":2}]}"#).is_some());
        // an escaped spelling of the same key is the same key
        assert!(first_duplicate(r#"{"command":"a","comm\u0061nd":"b"}"#).is_some());
        assert_eq!(
            first_duplicate(r#"{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}"#),
            None
        );
        assert_eq!(first_duplicate("[1, \"x\", null, true, 1.5, -3]"), None);
        assert_eq!(first_duplicate("{not json"), None);
    }

    #[test]
    fn the_second_occurrence_is_located_in_characters() {
        let t = "{\n  \"é\": 1,\n  \"a\": {\"k\": 1, \"k\": 2}}";
        let d = super::find(t).unwrap();
        assert_eq!((d.key.as_str(), d.line, d.column), ("k", 3, 17), "{d:?}");
        assert_eq!(&t[d.offset..d.offset + 3], "\"k\"");
        let d = super::find(r#"{"a\"b":1,"a\"b":2}"#).unwrap();
        assert_eq!((d.key.as_str(), d.column), ("a\"b", 11), "{d:?}");
    }
}
