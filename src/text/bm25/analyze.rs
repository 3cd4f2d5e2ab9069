//! The term analysis shared by BM25 documents and queries: word runs,
//! identifier pieces, stop words and length, stemming, and the memoised
//! interning of a catalog's terms (see the parent module's docs).

use std::sync::Arc;

use rust_stemmers::Stemmer;
use serde_json::Value;

use crate::parse::policy::Bm25Params;
use crate::text::keywords::{Analyzer, is_cjk};

/// The term analysis shared by documents and queries.
pub struct Bm25Analyzer<'a> {
    pub(super) params: &'a Bm25Params,
    analyzer: &'a Analyzer,
    stemmer: Option<Stemmer>,
    /// The interning tables, when memoised ([`Bm25Analyzer::memoized`]).
    pub(super) memo: Option<std::cell::RefCell<Memo>>,
}

/// What a memoised analysis remembers: every distinct term (interned, by
/// id), the term of every identifier piece (`None`: dropped) and the terms
/// of every word run (a range of `seq`).
#[derive(Default)]
pub(super) struct Memo {
    ids: rustc_hash::FxHashMap<Arc<str>, u32>,
    pub(super) terms: Vec<Arc<str>>,
    pieces: rustc_hash::FxHashMap<Box<str>, Option<u32>>,
    runs: rustc_hash::FxHashMap<Box<str>, (u32, u32)>,
    seq: Vec<u32>,
}

impl Memo {
    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let t: Arc<str> = Arc::from(term);
        let id = self.terms.len() as u32;
        self.terms.push(t.clone());
        self.ids.insert(t, id);
        id
    }
}

impl<'a> Bm25Analyzer<'a> {
    /// Builds the analysis from the BM25 parameters and the policy's keyword extractor.
    pub fn new(params: &'a Bm25Params, analyzer: &'a Analyzer) -> Self {
        Bm25Analyzer {
            params,
            analyzer,
            stemmer: params.stemmer.map(Stemmer::create),
            memo: None,
        }
    }

    /// The same analysis, remembering what it computed (for indexing a
    /// catalog, whose words repeat: lowercasing, the stop-word test and
    /// stemming run once per distinct piece, the cutting once per distinct
    /// word run, and each distinct term is allocated once).
    pub fn memoized(mut self) -> Self {
        self.memo = Some(Default::default());
        self
    }

    /// Whether documents read the input schema ([`ToolText::input_schema`]):
    /// the `parameters` or `parameter_descriptions` field has a weight.
    pub fn reads_parameters(&self) -> bool {
        let f = &self.params.fields;
        f.parameters > 0.0 || f.parameter_descriptions > 0.0
    }

    /// The term of one identifier piece, `None` when it is dropped (too
    /// short, a stop word).
    fn term(&self, piece: &str) -> Option<String> {
        if piece.is_empty() {
            return None;
        }
        // Digits have no case and no suffix to stem.
        if piece.bytes().all(|b| b.is_ascii_digit()) {
            return (piece.len() >= self.analyzer.min_length()
                && !self.analyzer.is_stop_word(piece))
            .then(|| piece.to_string());
        }
        let lower = piece.to_lowercase();
        if lower.chars().count() < self.analyzer.min_length() || self.analyzer.is_stop_word(&lower)
        {
            return None;
        }
        Some(match &self.stemmer {
            Some(s) => s.stem(&lower).into_owned(),
            None => lower,
        })
    }

    /// Appends the terms of `text` to `out` (duplicates kept).
    pub fn terms(&self, text: &str, out: &mut Vec<String>) {
        word_runs(text, |run| self.run_terms(run, out));
    }

    /// The terms of one word run, uncached.
    fn run_terms(&self, run: &str, out: &mut Vec<String>) {
        if run.chars().any(is_cjk) {
            for t in self.analyzer.expand_keyword(run) {
                if t.chars().any(is_cjk) {
                    out.push(t);
                } else {
                    self.split(&t, &mut |p| out.extend(self.term(p)));
                }
            }
        } else {
            self.split(run, &mut |p| out.extend(self.term(p)));
        }
    }

    /// [`Bm25Analyzer::terms`] as interned term ids of `memo`, each word
    /// run cut once.
    pub(super) fn term_ids(&self, memo: &mut Memo, text: &str, out: &mut Vec<u32>) {
        word_runs(text, |run| {
            if let Some(&(start, end)) = memo.runs.get(run) {
                out.extend_from_slice(&memo.seq[start as usize..end as usize]);
                return;
            }
            let len = out.len();
            if run.chars().any(is_cjk) {
                let mut v = Vec::new();
                self.run_terms(run, &mut v);
                out.extend(v.iter().map(|t| memo.intern(t)));
            } else {
                self.split(run, &mut |p| {
                    if p.is_empty() {
                        return;
                    }
                    let t = match memo.pieces.get(p) {
                        Some(t) => *t,
                        None => {
                            let t = self.term(p).map(|t| memo.intern(&t));
                            memo.pieces.insert(p.into(), t);
                            t
                        }
                    };
                    out.extend(t);
                });
            }
            let start = memo.seq.len() as u32;
            memo.seq.extend_from_slice(&out[len..]);
            memo.runs.insert(run.into(), (start, memo.seq.len() as u32));
        });
    }

    /// Cuts one word run (no CJK) into identifier pieces when configured
    /// ([`identifier_pieces`]), else calls `f` with the whole run.
    fn split(&self, run: &str, f: &mut dyn FnMut(&str)) {
        if self.params.split_identifiers {
            identifier_pieces(run, f);
        } else {
            f(run);
        }
    }
}

/// Calls `f` with every word run of `text` (letters, digits, `_`).
pub(crate) fn word_runs(text: &str, mut f: impl FnMut(&str)) {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (is_word(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                f(&text[s..i]);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        f(&text[s..]);
    }
}

/// Cuts one word run (no CJK) into identifier pieces, calling `f` with each
/// (possibly empty) piece, a slice of `run`: at `_`, at a lower-to-upper
/// case change, between letters and non-letters, and before the last
/// capital of a run of capitals (`HTTPServer` → `HTTP`, `Server`).
pub(crate) fn identifier_pieces(run: &str, f: &mut dyn FnMut(&str)) {
    let mut start = 0;
    let mut prev: Option<char> = None;
    let mut chars = run.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '_' {
            f(&run[start..i]);
            start = i + 1;
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let next_lower = chars.peek().is_some_and(|(_, n)| n.is_lowercase());
            let boundary = (p.is_lowercase() && c.is_uppercase())
                || (p.is_alphabetic() != c.is_alphabetic())
                // `HTTPServer`: the last capital starts a new word.
                || (p.is_uppercase() && c.is_uppercase() && next_lower);
            if boundary {
                f(&run[start..i]);
                start = i;
            }
        }
        prev = Some(c);
    }
    f(&run[start..]);
}

/// Collects parameter names and descriptions of a JSON Schema (nested object
/// properties and array items included).
pub(super) fn schema_text<'v>(
    schema: &'v Value,
    names: &mut Vec<&'v str>,
    descs: &mut Vec<&'v str>,
    depth: usize,
) {
    if depth > 8 {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
        for (k, v) in props {
            names.push(k);
            if let Some(d) = v.get("description").and_then(|d| d.as_str()) {
                descs.push(d);
            }
            schema_text(v, names, descs, depth + 1);
        }
    }
    if let Some(items) = schema.get("items") {
        schema_text(items, names, descs, depth + 1);
    }
}
