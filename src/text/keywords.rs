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
//! * a non-CJK segment longer than [`MAX_KEYWORD_CHARS`] (100) characters is
//!   not a term: no tag keyword is that long, BERT's WordPiece reads such a
//!   word as one unknown token, and it would cost every later stage (BM25,
//!   the embedding) time in proportion to its length;
//! * stop words are removed and the first `max_count` terms kept, duplicates
//!   included — except when the message has CJK terms and more candidates than
//!   `max_count` (below).
//!
//! **Ranking CJK candidates.** Overlapping bigrams of a sentence written
//! without spaces include pairs that straddle two words (`下数` in
//! `一下数据库`); keeping the first `max_count` lets them crowd out real words
//! further on (`用户`). Once the plan knows its catalog
//! ([`Analyzer::learn_catalog`]), the extractor ranks the candidates before the
//! cut, in three tiers, message order within a tier:
//!
//! 1. terms of the catalog's vocabulary (the tools' trigger keywords and the
//!    domain rules' keywords), the most informative first: inverse document
//!    frequency over the tools, `ln(1 + N / df)`;
//! 2. other terms;
//! 3. bigrams that straddle the boundary of a known word: a catalog or rule
//!    keyword, or a stop word, found in the CJK text (`数据库` and `一下` are
//!    known, so `下数` and `库中` cross a boundary, `用户` does not).
//!
//! The terms kept are returned in message order. Messages without CJK terms,
//! and messages with at most `max_count` candidates, are cut exactly as the
//! seed cuts them, so the seed presets still reproduce the seed's vectors.
//!
//! Trigger keywords pass through [`Analyzer::expand_keyword`], which applies the
//! same CJK cutting (but no length or stop-word filter), so `数据库` in a tag
//! matches a message that contains it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::parse::policy::{CjkMode, KeywordParams};

/// The longest word (in characters) kept as an intent keyword or a
/// description keyword: 100, the `max_input_chars_per_word` of BERT's
/// WordPiece (a longer word is one unknown token to the semantic model). A
/// bound on untrusted input (a 10,000-character word in a message), not a
/// constant of the activation formula; the seed's `\b[a-z]{3,}\b` has no
/// upper bound, so only words longer than this differ from the seed.
pub const MAX_KEYWORD_CHARS: usize = 100;

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
    /// What the catalog teaches about terms (see the module docs); empty
    /// until [`Analyzer::learn_catalog`].
    catalog: Arc<CatalogTerms>,
}

/// Term statistics of a catalog, for ranking CJK candidates.
#[derive(Debug, Clone, Default)]
struct CatalogTerms {
    /// Informativeness of each vocabulary term: `ln(1 + N / df)` over the N
    /// tools (a rule-only term counts as in one tool).
    idf: HashMap<String, f64>,
    /// Known words written in CJK (keywords and stop words), as characters.
    words: Vec<Vec<char>>,
}

/// The tools' side of what [`Analyzer::learn_catalog`] learns: in how many
/// tools each keyword term appears, and the CJK words they name.
#[derive(Debug, Clone, Default)]
pub struct ToolTerms {
    df: HashMap<String, usize>,
    words: Vec<Vec<char>>,
    n: usize,
}

/// Records `kw` as a known CJK word (two characters or more), once.
fn known_word(kw: &str, words: &mut Vec<Vec<char>>) {
    if kw.chars().any(is_cjk) {
        let w: Vec<char> = kw.to_lowercase().chars().collect();
        if w.len() >= 2 && !words.contains(&w) {
            words.push(w);
        }
    }
}

/// One candidate term of a message, before the cut.
struct Candidate {
    term: String,
    cjk: bool,
    /// A bigram across the boundary of a known word.
    crossing: bool,
}

impl Analyzer {
    /// Builds the extractor from `[keywords]`.
    pub fn new(params: &KeywordParams) -> Self {
        Analyzer {
            stop: params.stop_words.iter().map(|s| s.to_lowercase()).collect(),
            params: params.clone(),
            catalog: Arc::default(),
        }
    }

    /// Learns the catalog's vocabulary, for ranking CJK candidates (module
    /// docs): `tools` gives each tool's trigger keywords, `rule_keywords` the
    /// domain rules' keywords. Replaces what was learnt before.
    pub fn learn_catalog<'a, T>(
        &mut self,
        tools: impl IntoIterator<Item = T>,
        rule_keywords: impl IntoIterator<Item = &'a str>,
    ) where
        T: IntoIterator<Item = &'a str>,
    {
        let terms = self.tool_terms(tools);
        self.learn_with(&terms, rule_keywords);
    }

    /// The tools' half of [`Analyzer::learn_catalog`], kept by a compiled
    /// catalog so that a policy edit only adds its rules' keywords
    /// ([`Analyzer::learn_with`]). Reads only `[keywords]`, not what was learnt.
    pub fn tool_terms<'a, T>(&self, tools: impl IntoIterator<Item = T>) -> ToolTerms
    where
        T: IntoIterator<Item = &'a str>,
    {
        let mut df: HashMap<String, usize> = HashMap::new();
        let mut words: Vec<Vec<char>> = Vec::new();
        let mut n = 0usize;
        let mut terms: HashSet<String> = HashSet::new();
        for tool in tools {
            n += 1;
            terms.clear();
            for kw in tool {
                known_word(kw, &mut words);
                terms.extend(self.expand_keyword(kw));
            }
            for t in terms.drain() {
                *df.entry(t).or_insert(0) += 1;
            }
        }
        ToolTerms { df, words, n }
    }

    /// [`Analyzer::learn_catalog`] from the tools' terms and the rules' keywords.
    pub fn learn_with<'a>(
        &mut self,
        tools: &ToolTerms,
        rule_keywords: impl IntoIterator<Item = &'a str>,
    ) {
        let mut df = tools.df.clone();
        let mut words = tools.words.clone();
        for kw in rule_keywords {
            known_word(kw, &mut words);
            for t in self.expand_keyword(kw) {
                df.entry(t).or_insert(1);
            }
        }
        for s in &self.params.stop_words {
            known_word(s, &mut words);
        }
        let n = tools.n.max(1) as f64;
        let idf = df
            .into_iter()
            .map(|(t, d)| (t, (1.0 + n / d.max(1) as f64).ln()))
            .collect();
        self.catalog = Arc::new(CatalogTerms { idf, words });
    }

    /// The candidate terms of `text` with what ranking needs: whether each
    /// comes from CJK text and whether it crosses a known word's boundary.
    fn candidates(&self, text: &str) -> Vec<Candidate> {
        let mut out = Vec::new();
        self.walk(text, true, |seg, cjk| {
            if cjk {
                self.cjk_candidates(seg, &mut out);
            } else {
                out.push(Candidate {
                    term: seg.iter().collect(),
                    cjk: false,
                    crossing: false,
                });
            }
        });
        out
    }

    fn cjk_candidates(&self, seg: &[char], out: &mut Vec<Candidate>) {
        let mut terms = Vec::new();
        self.cjk_terms(seg, &mut terms);
        if self.params.cjk != CjkMode::Bigrams || seg.len() < 2 {
            out.extend(terms.into_iter().map(|term| Candidate {
                term,
                cjk: true,
                crossing: false,
            }));
            return;
        }
        // Occurrences [start, end) of known words in the segment.
        let mut occ: Vec<(usize, usize)> = Vec::new();
        for w in &self.catalog.words {
            if w.len() <= seg.len() {
                for s in 0..=seg.len() - w.len() {
                    if seg[s..s + w.len()] == w[..] {
                        occ.push((s, s + w.len()));
                    }
                }
            }
        }
        for (i, term) in terms.into_iter().enumerate() {
            // Bigram i covers characters i and i + 1; the boundary between
            // them is position i + 1.
            let inside = occ.iter().any(|&(s, e)| s <= i && i + 2 <= e);
            let boundary = occ.iter().any(|&(s, e)| s == i + 1 || e == i + 1);
            out.push(Candidate {
                term,
                cjk: true,
                crossing: boundary && !inside,
            });
        }
    }

    /// The candidates kept for a cut to `max`: the first `max` (the seed's
    /// rule), or the best ranked when CJK terms compete (module docs).
    fn cut(&self, text: &str, max: usize) -> Vec<String> {
        let cands: Vec<Candidate> = self
            .candidates(text)
            .into_iter()
            .filter(|c| !self.stop.contains(&c.term))
            .collect();
        if cands.len() <= max || !cands.iter().any(|c| c.cjk) {
            return cands.into_iter().take(max).map(|c| c.term).collect();
        }
        let rank = |c: &Candidate| -> (u8, f64) {
            match self.catalog.idf.get(&c.term) {
                Some(&idf) => (0, -idf),
                None if c.crossing => (2, 0.0),
                None => (1, 0.0),
            }
        };
        let mut order: Vec<usize> = (0..cands.len()).collect();
        order.sort_by(|&a, &b| {
            let (ra, rb) = (rank(&cands[a]), rank(&cands[b]));
            ra.0.cmp(&rb.0).then(ra.1.total_cmp(&rb.1)).then(a.cmp(&b))
        });
        let mut keep = vec![false; cands.len()];
        for &i in order.iter().take(max) {
            keep[i] = true;
        }
        cands
            .into_iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(c, _)| c.term)
            .collect()
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

    /// Walks lowercased `text`: runs of word characters, split into CJK and
    /// other segments; `filter_words` applies the length and letters-only
    /// filters to the non-CJK segments. `emit(segment, is_cjk)`.
    fn walk(&self, text: &str, filter_words: bool, mut emit: impl FnMut(&[char], bool)) {
        let lower = text.to_lowercase();
        let chars: Vec<char> = lower.chars().collect();
        let is_word = |c: char| c.is_alphanumeric() || c == '_';
        let mut i = 0;
        while i < chars.len() {
            if !is_word(chars[i]) {
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
                if cjk
                    || !filter_words
                    || (seg.len() >= self.params.min_length
                        && seg.len() <= MAX_KEYWORD_CHARS
                        && (!self.params.letters_only || seg.iter().all(|c| c.is_alphabetic())))
                {
                    emit(seg, cjk);
                }
            }
        }
    }

    /// Cuts lowercased `text` into raw terms; `filter_words` applies the length
    /// and letters-only filters to non-CJK segments.
    fn segments(&self, text: &str, filter_words: bool, out: &mut Vec<String>) {
        self.walk(text, filter_words, |seg, cjk| {
            if cjk {
                self.cjk_terms(seg, out);
            } else {
                out.push(seg.iter().collect());
            }
        });
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
    /// duplicates kept (as the seed does); CJK candidates are ranked before
    /// the cut (module docs).
    pub fn extract(&self, text: &str) -> Vec<String> {
        self.cut(text, self.params.max_count)
    }

    /// Keywords for an untagged tool, from its description (seed 000
    /// `_extract_keywords_from_description`), at most `max` of them.
    pub fn extract_max(&self, text: &str, max: usize) -> Vec<String> {
        if text.is_ascii() {
            // What the general path below computes for ASCII text (no CJK,
            // lowercasing per byte), stopping at `max` words.
            let mut out = Vec::new();
            let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
            for run in text.split(|c: char| !is_word(c)) {
                if out.len() >= max {
                    break;
                }
                if run.is_empty()
                    || run.len() < self.params.min_length
                    || run.len() > MAX_KEYWORD_CHARS
                    || (self.params.letters_only && !run.bytes().all(|b| b.is_ascii_alphabetic()))
                {
                    continue;
                }
                let w = run.to_ascii_lowercase();
                if !self.stop.contains(&w) {
                    out.push(w);
                }
            }
            return out;
        }
        self.extract_max_general(text, max)
    }

    fn extract_max_general(&self, text: &str, max: usize) -> Vec<String> {
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

    #[test]
    fn ascii_keyword_extraction_equals_the_general_path() {
        let texts: [String; 6] = [
            "Get the weather forecast for a city, in Celsius (v2)!".into(),
            "read_file_2 reads A FILE; the file's lines... 42 x ab abc".into(),
            "".into(),
            "   ".into(),
            "The the THE of and".into(),
            format!("keep {} drop {} end", "k".repeat(100), "d".repeat(101)),
        ];
        for letters_only in [true, false] {
            for min_length in [0, 1, 3] {
                let a = Analyzer::new(&KeywordParams {
                    min_length,
                    letters_only,
                    ..seedlike().params.clone()
                });
                for t in &texts {
                    let t = t.as_str();
                    for max in [0, 2, 100] {
                        assert_eq!(
                            a.extract_max(t, max),
                            a.extract_max_general(t, max),
                            "{t:?}"
                        );
                    }
                }
            }
        }
    }

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
    fn words_longer_than_the_cap_are_not_keywords() {
        let a = seedlike();
        let long = "q".repeat(10_000);
        let edge = "é".repeat(MAX_KEYWORD_CHARS);
        let over = "é".repeat(MAX_KEYWORD_CHARS + 1);
        assert_eq!(
            a.extract(&format!("delete {long} file {edge} {over}")),
            vec!["delete".to_string(), "file".into(), edge.clone()]
        );
        assert_eq!(
            a.extract_max(&format!("delete {long} file"), 10),
            vec!["delete", "file"]
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
    fn cjk_candidates_are_ranked_before_the_cut() {
        let mut a = seedlike();
        a.params
            .stop_words
            .extend(["帮我".to_string(), "一下".to_string()]);
        a = Analyzer::new(&a.params);
        let msg = "帮我查一下数据库中的所有用户表";
        // Without a catalog: the first ten, `用户` cut.
        let first = a.extract(msg);
        assert_eq!(first.len(), 10);
        assert!(!first.contains(&"用户".to_string()), "{first:?}");
        a.learn_catalog(
            [vec!["sql", "数据库", "查询"], vec!["time", "时间"]],
            ["数据表"],
        );
        let ranked = a.extract(msg);
        assert_eq!(
            ranked,
            vec![
                "我查", "查一", "数据", "据库", "中的", "的所", "所有", "有用", "用户", "户表"
            ]
        );
        // `下数` and `库中` straddle `一下`/`数据库`: ranked last, cut.
        assert!(!ranked.contains(&"下数".to_string()) && !ranked.contains(&"库中".to_string()));
        // Catalog terms come first even at the end of a long message.
        let long = "请问今天天气怎么样我们明天去哪里玩比较好呢时间";
        let r = a.extract(long);
        assert_eq!(r.len(), 10);
        assert_eq!(r.last().map(String::as_str), Some("时间"), "{r:?}");
        // ASCII-only messages keep the seed's first-ten rule, catalog or not.
        let ascii = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo sql";
        assert_eq!(a.extract(ascii), seedlike().extract(ascii));
        assert!(!a.extract(ascii).contains(&"sql".to_string()));
    }

    #[test]
    fn mixed_scripts_split() {
        let a = seedlike();
        assert_eq!(a.extract("查users表"), vec!["查", "users", "表"]);
    }
}
