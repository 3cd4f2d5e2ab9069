//! Keyword extraction: from a raw user message to intent keywords, and from a
//! tool's trigger keywords to comparable terms.
//!
//! The seed extracts `\b[a-z]{3,}\b` from the lowercased message, drops stop
//! words and keeps the first 10. That drops every non-ASCII word, so a Chinese
//! request yields nothing. This extractor is Unicode-aware and reproduces the
//! seed on ASCII text:
//!
//! * the lowercased text is cut into runs of word characters (letters, digits,
//!   `_`), as the seed's `\b` does;
//! * inside a run, CJK characters (Han, kana, Hangul) and other characters form
//!   separate segments;
//! * a non-CJK segment is a term when it has at least `min_length` characters
//!   and (with `letters_only`) only letters — so `abc1` and `a_b` are dropped as
//!   the seed drops them, while `café` or `привет` are kept;
//! * a CJK segment is cut into overlapping character bigrams (or single
//!   characters, per `cjk`), so `数据库` yields `数据`, `据库`; `min_length` does
//!   not apply to CJK terms;
//! * stop words are removed and the first `max_count` terms kept, duplicates included.
//!
//! Trigger keywords pass through [`Analyzer::expand_keyword`], which applies the
//! same CJK cutting (but no length or stop-word filter), so `数据库` in a tag
//! matches a message that contains it.

use std::collections::HashSet;

use crate::parse::policy::{CjkMode, KeywordParams};

/// Whether `c` belongs to a script written without spaces (Han, Hiragana,
/// Katakana) or to Hangul.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x31F0..=0x31FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF |
        0xF900..=0xFAFF | 0xAC00..=0xD7AF | 0x1100..=0x11FF | 0x3130..=0x318F |
        0x20000..=0x2FA1F)
}

/// The keyword extractor of a policy.
#[derive(Debug, Clone)]
pub struct Analyzer {
    params: KeywordParams,
    stop: HashSet<String>,
}

impl Analyzer {
    /// Builds the extractor from `[keywords]`.
    pub fn new(params: &KeywordParams) -> Self {
        Analyzer {
            stop: params.stop_words.iter().map(|s| s.to_lowercase()).collect(),
            params: params.clone(),
        }
    }

    fn cjk_terms(&self, seg: &[char], out: &mut Vec<String>) {
        match self.params.cjk {
            CjkMode::Off => {}
            CjkMode::Unigrams => out.extend(seg.iter().map(|c| c.to_string())),
            CjkMode::Bigrams => {
                if seg.len() == 1 {
                    out.push(seg[0].to_string());
                } else {
                    out.extend(seg.windows(2).map(|w| w.iter().collect::<String>()));
                }
            }
        }
    }

    /// Cuts lowercased `text` into raw terms; `filter_words` applies the length
    /// and letters-only filters to non-CJK segments.
    fn segments(&self, text: &str, filter_words: bool, out: &mut Vec<String>) {
        let lower = text.to_lowercase();
        let chars: Vec<char> = lower.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let is_word = |c: char| c.is_alphanumeric() || c == '_';
            if !is_word(c) {
                i += 1;
                continue;
            }
            let start = i;
            while i < chars.len() && is_word(chars[i]) {
                i += 1;
            }
            let run = &chars[start..i];
            let mut j = 0;
            while j < run.len() {
                let cjk = is_cjk(run[j]);
                let s = j;
                while j < run.len() && is_cjk(run[j]) == cjk {
                    j += 1;
                }
                let seg = &run[s..j];
                if cjk {
                    self.cjk_terms(seg, out);
                } else if !filter_words
                    || (seg.len() >= self.params.min_length
                        && (!self.params.letters_only || seg.iter().all(|c| c.is_alphabetic())))
                {
                    out.push(seg.iter().collect());
                }
            }
        }
    }

    /// `[keywords] min_length`: the shortest word kept, in characters.
    pub fn min_length(&self) -> usize {
        self.params.min_length
    }

    /// Whether `lowercased` is one of the `[keywords]` stop words.
    pub fn is_stop_word(&self, lowercased: &str) -> bool {
        self.stop.contains(lowercased)
    }

    /// Intent keywords of a user message: at most `max_count`, in message order,
    /// duplicates kept (as the seed does).
    pub fn extract(&self, text: &str) -> Vec<String> {
        let mut raw = Vec::new();
        self.segments(text, true, &mut raw);
        raw.into_iter()
            .filter(|t| !self.stop.contains(t))
            .take(self.params.max_count)
            .collect()
    }

    /// Keywords for an untagged tool, from its description (seed 000
    /// `_extract_keywords_from_description`), at most `max` of them.
    pub fn extract_max(&self, text: &str, max: usize) -> Vec<String> {
        let mut raw = Vec::new();
        self.segments(text, true, &mut raw);
        raw.into_iter()
            .filter(|t| !self.stop.contains(t))
            .take(max)
            .collect()
    }

    /// The comparable terms of one trigger or intent keyword: lowercased, CJK
    /// segments cut as in [`Analyzer::extract`]; ASCII words come back unchanged
    /// but lowercased. No length or stop-word filter.
    pub fn expand_keyword(&self, kw: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.expand_into(kw, &mut out);
        out
    }

    /// [`Analyzer::expand_keyword`], appending to `out` (no allocation beyond
    /// the terms themselves).
    pub fn expand_into(&self, kw: &str, out: &mut Vec<String>) {
        if kw.is_ascii() {
            out.push(kw.to_ascii_lowercase());
        } else if !kw.chars().any(is_cjk) {
            out.push(kw.to_lowercase());
        } else {
            self.segments(kw, false, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seedlike() -> Analyzer {
        Analyzer::new(&KeywordParams {
            min_length: 3,
            max_count: 10,
            stop_words: [
                "the", "a", "an", "to", "of", "in", "for", "and", "or", "is", "are",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            letters_only: true,
            cjk: CjkMode::Bigrams,
        })
    }

    #[test]
    fn ascii_like_the_seed() {
        let a = seedlike();
        assert_eq!(
            a.extract("Read the FILE and abc1 x_yz go foo-bar"),
            vec!["read", "file", "foo", "bar"]
        );
    }

    #[test]
    fn chinese_yields_bigrams_that_match_a_tag() {
        let a = seedlike();
        let terms = a.extract("帮我查一下数据库中的所有用户表");
        let tag = a.expand_keyword("数据库");
        assert_eq!(tag, vec!["数据", "据库"]);
        assert!(tag.iter().all(|t| terms.contains(t)), "{terms:?}");
    }

    #[test]
    fn mixed_scripts_split() {
        let a = seedlike();
        assert_eq!(a.extract("查users表"), vec!["查", "users", "表"]);
    }
}
