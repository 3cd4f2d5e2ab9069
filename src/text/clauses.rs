//! Cutting a request into clauses (`[features.keyword_match.clauses]`).
//!
//! A multi-step request lists its steps one after the other ("Get the quote
//! for a restaurant. After that, create an administrator. Finally, retrieve
//! the guidelines."). A clause ends after each of the policy's `split_after`
//! strings that is followed by whitespace or ends the text: with
//! `[".", "!", "?", ";"]` the steps above are three clauses, while `3.5`,
//! `v1.2` or `example.com` stay inside theirs. The policy decides the
//! strings; nothing here knows a language.

/// The clauses of `text`, in order, trimmed, empty ones dropped: `text` cut
/// after each occurrence of a `split_after` string that is followed by
/// whitespace or by the end of the text (a string that itself ends with
/// whitespace, such as `"\n"`, cuts wherever it occurs). Without any cut the
/// whole (trimmed) text is the one clause.
pub fn split_clauses<'a>(text: &'a str, split_after: &[String]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < text.len() {
        if !text.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let rest = &text[i..];
        let hit = split_after.iter().find_map(|d| {
            if d.is_empty() || !rest.starts_with(d.as_str()) {
                return None;
            }
            let end = i + d.len();
            let ends_ws = d.chars().last().is_some_and(char::is_whitespace);
            let followed =
                end >= text.len() || text[end..].chars().next().is_some_and(char::is_whitespace);
            (ends_ws || followed).then_some(end)
        });
        match hit {
            Some(end) => {
                push(&mut out, &text[start..end]);
                start = end;
                i = end;
            }
            None => i += 1,
        }
    }
    push(&mut out, &text[start..]);
    out
}

fn push<'a>(out: &mut Vec<&'a str>, s: &'a str) {
    let s = s.trim();
    if !s.is_empty() {
        out.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sentences_are_clauses_and_numbers_are_not_cut() {
        let s = d(&[".", "!", "?", ";"]);
        assert_eq!(
            split_clauses(
                "Get the quote for 3.5 kg. After that, create an admin! Finally; done?",
                &s
            ),
            [
                "Get the quote for 3.5 kg.",
                "After that, create an admin!",
                "Finally;",
                "done?"
            ]
        );
        assert_eq!(
            split_clauses("visit example.com now", &s),
            ["visit example.com now"]
        );
        assert_eq!(split_clauses("  one step  ", &s), ["one step"]);
        assert_eq!(split_clauses(" . ", &s), ["."]);
        assert!(split_clauses("   ", &s).is_empty());
    }

    #[test]
    fn a_whitespace_delimiter_cuts_anywhere_and_unicode_is_kept_whole() {
        let s = d(&["\n", "。"]);
        assert_eq!(split_clauses("a\nb\n\nc", &s), ["a", "b", "c"]);
        // "。" is followed by a letter, not whitespace: no cut; at the end: a cut.
        assert_eq!(
            split_clauses("查询数据库。列出表。", &s),
            ["查询数据库。列出表。"]
        );
        assert_eq!(split_clauses("查询。 列出", &s), ["查询。", "列出"]);
    }
}
