//! Every key problem of an `--input` file at once (issue 29, item 6).
//! serde stops at the first misspelt key or wrong type; to find the next
//! one, the member that holds the problem (`"mesage": "…"`, with its comma)
//! is blanked out (its bytes become spaces, its newlines stay, so every
//! line and column of the rest still holds) and the text is read again,
//! until it reads, a problem cannot be pinned to an object member, or
//! [`MAX_PROBLEMS`] are found.

use crate::diag::json_path::{Seg, key_span, value_span};

use super::{EvalInput, InputError, describe};

/// At most this many problems of one input are collected.
pub const MAX_PROBLEMS: usize = 20;

/// The key and type problems of `text` (a JSON object that parses), in the
/// order serde meets them, each at its place (an unknown key at its first
/// quote); empty when it deserializes.
pub fn serde_problems(text: &str) -> Vec<InputError> {
    let mut text = text.to_string();
    let mut out: Vec<InputError> = Vec::new();
    while out.len() < MAX_PROBLEMS {
        let mut de = serde_json::Deserializer::from_str(&text);
        let e = match serde_path_to_error::deserialize::<_, EvalInput>(&mut de) {
            Ok(_) => break,
            Err(e) => e,
        };
        out.push(InputError {
            line: e.inner().line(),
            column: e.inner().column(),
            message: describe(e.path(), &crate::diag::json_message(e.inner())),
        });
        let mut segs: Vec<Seg<'_>> = Vec::new();
        for s in e.path().iter() {
            match s {
                serde_path_to_error::Segment::Map { key } => segs.push(Seg::Key(key)),
                serde_path_to_error::Segment::Seq { index } => segs.push(Seg::Index(*index)),
                _ => return out,
            }
        }
        let Some(Seg::Key(key)) = segs.pop() else {
            return out;
        };
        let Some(member) = member_span(&text, &segs, key) else {
            return out;
        };
        // An unknown key stands at its key's first quote (serde gives the
        // last one).
        if let Some(last) = out.last_mut()
            && last.message.starts_with("unknown key")
            && let Some(k) = key_span(&text, &segs, key)
        {
            let (line, column) = crate::diag::SourceFile::new("", text.as_str()).line_col(k.start);
            (last.line, last.column) = (line, column);
        }
        let mut blanked = text.clone();
        crate::diag::blank(&mut blanked, member);
        if serde_json::from_str::<serde_json::Value>(&blanked).is_err() {
            return out;
        }
        text = blanked;
    }
    out
}

/// The byte range of member `key` of the object at `path`, from its key to
/// its value, with the comma that separates it from the next member (or,
/// for the last member, from the one before).
fn member_span(text: &str, path: &[Seg<'_>], key: &str) -> Option<std::ops::Range<usize>> {
    let k = key_span(text, path, key)?;
    let mut value_path = path.to_vec();
    value_path.push(Seg::Key(key));
    let v = value_span(text, &value_path)?;
    let b = text.as_bytes();
    let mut end = v.end;
    while end < b.len() && b[end].is_ascii_whitespace() {
        end += 1;
    }
    if b.get(end) == Some(&b',') {
        return Some(k.start..end + 1);
    }
    let mut start = k.start;
    while start > 0 && b[start - 1].is_ascii_whitespace() {
        start -= 1;
    }
    match start > 0 && b[start - 1] == b',' {
        true => Some(start - 1..v.end),
        false => Some(k.start..v.end),
    }
}

/// The problems of the input file `name` as the CLI prints them: one
/// `name:line:column: message` line each, then `N problems found` when
/// there are several.
pub fn render(name: &str, problems: &[InputError]) -> String {
    let mut out: Vec<String> = problems.iter().map(|p| p.in_file(name)).collect();
    if problems.len() > 1 {
        out.push(format!("{} problems found", problems.len()));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_misspelt_key_of_an_input_is_found() {
        let text = "{\n  \"mesage\": \"x\",\n  \"context\": {\"conversation_stag\": \"a\", \"active_languge\": \"sql\"},\n  \"usage\": {\"call_count\": {}}\n}\n";
        let p = serde_problems(text);
        let got: Vec<(usize, &str)> = p
            .iter()
            .map(|e| (e.line, e.message.split(';').next().unwrap()))
            .collect();
        assert_eq!(got.len(), 4, "{p:?}");
        assert!(
            got[0]
                .1
                .starts_with("unknown key `mesage` at the top level"),
            "{got:?}"
        );
        assert!(
            got[1]
                .1
                .starts_with("unknown key `conversation_stag` in `context`"),
            "{got:?}"
        );
        assert!(
            got[2]
                .1
                .starts_with("unknown key `active_languge` in `context`"),
            "{got:?}"
        );
        assert!(
            got[3].1.starts_with("unknown key `call_count` in `usage`"),
            "{got:?}"
        );
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [2, 3, 3, 4]);
        assert!(serde_problems("{\"message\": \"x\"}").is_empty());
    }

    #[test]
    fn a_member_is_blanked_with_one_comma() {
        for (t, key, want) in [
            ("{\"a\": 1, \"b\": 2}", "a", "{        \"b\": 2}"),
            ("{\"a\": 1, \"b\": 2}", "b", "{\"a\": 1        }"),
            ("{\"a\": [1, 2]}", "a", "{           }"),
        ] {
            let mut s = t.to_string();
            crate::diag::blank(&mut s, member_span(t, &[], key).unwrap());
            assert_eq!(s, want);
            serde_json::from_str::<serde_json::Value>(&s).unwrap();
        }
    }
}
