//! BM25 keyword matching (`[features.keyword_match] method = "bm25"`).
//!
//! The seed's keyword term is a Jaccard over two short lists: a tool with ten
//! trigger words and a message with ten intent words share at best a few, so
//! the term barely separates tools in a large catalog. BM25 instead ranks every
//! tool's text against the message:
//!
//! * **Documents.** Each tool is a bag of terms drawn from weighted *fields*:
//!   its name, description, parameter names, parameter descriptions and
//!   trigger keywords (`[features.keyword_match.fields]`). A term's frequency
//!   is the field-weighted sum of its counts and the document length the
//!   field-weighted sum of the field lengths (a simplified BM25F).
//! * **Terms.** Text is cut into word runs; with `split_identifiers`, runs are
//!   also cut at `_`, `.`, lower→upper case changes and letter/digit changes
//!   (`getWeather_v2` → `get`, `weather`, `v`, `2`); CJK runs are cut as the
//!   `[keywords]` extractor does; stop words of `[keywords]` and pieces shorter
//!   than its `min_length` (CJK terms excepted) are dropped; with a
//!   `stemmer`, every term is stemmed (Snowball, `rust-stemmers`).
//! * **Index.** At compile time every tool's document is turned into postings:
//!   for each term, the tools that contain it with the precomputed weight
//!   `idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg_len))`,
//!   `idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`.
//! * **Query.** The intent keywords go through the same analysis; each distinct
//!   query term adds its postings once (`query_term_count = "distinct"`, the
//!   default), or times its number of occurrences in the message
//!   (`"occurrences"`, textbook BM25). The raw scores are unbounded, so they are
//!   normalised per evaluation: `keyword_match = raw / max(best raw, score_floor)`,
//!   which keeps the feature in [0,1] (the best tool gets 1 unless the floor is
//!   above its score).
//!
//! * **Weighted queries.** A query is a list of (term, weight): the latest
//!   message's terms weigh 1, remembered terms of earlier messages less
//!   (`[keywords.memory]`), related terms from the catalog less again
//!   (`[features.keyword_match.expansion]`); a tool's raw score is the
//!   weighted sum of its term weights ([`Bm25Index::weighted_query`],
//!   [`Bm25Index::score`]).
//! * **Absolute relevance** (`[features.keyword_match.relevance]`). Before the
//!   relative normalisation, a tool gets 0 when its raw score is below
//!   `min_score`, or below `min_score_idf` times `idf₁` (the IDF of a term
//!   exactly one tool has, `ln(1 + (N − 0.5) / 1.5)`), when it covers less than `min_coverage` of the query's
//!   IDF-weighted mass (`Σ w·idf` of the query terms it contains ÷ the
//!   query's mass), or when its raw score is below `min_share` of the query's
//!   attainable score (`(k1 + 1)` × the mass). The mass counts the query
//!   terms the catalog knows, or with `query_terms = "all"` every term, an
//!   unknown one at `idf₁`. Raw scores grow with the catalog (IDF ~ `ln N`);
//!   `min_score_idf` follows that growth, coverage and share are ratios. The best *passing* tool sets the divisor. When nothing passes,
//!   every tool gets 0: a request that nothing fits exposes nothing through
//!   its keywords.
//! * **Expansion from the catalog.** At build time, two terms are related by
//!   the cosine of the sets of tools that contain them,
//!   `shared / sqrt(df(a) · df(b))`; each term keeps its `neighbours` most
//!   related terms (ties: lower term id) with a similarity of at least
//!   `min_similarity` over at least `min_shared` tools. A query term brings
//!   each relative with weight `weight · similarity · its own weight` (a term
//!   already in the query keeps the larger weight). "remove" then reaches a
//!   `delete_file` whose description also says "remove" elsewhere in the
//!   catalog's usage; a word the catalog never uses cannot be expanded.
//!
//! Per evaluation the cost is the postings of the query terms plus one pass over
//! the tools; nothing per tool depends on the vocabulary size.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::parse::policy::Bm25Params;
use crate::parse::selection::{ExpansionParams, QueryCounting, QueryTerms};
use crate::text::keywords::Analyzer;

mod analyze;

pub use analyze::Bm25Analyzer;
use analyze::schema_text;
pub(crate) use analyze::{identifier_pieces, word_runs};

/// The text of one tool, split into the fields BM25 indexes.
#[derive(Debug, Clone, Default)]
pub struct ToolText<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Description.
    pub description: &'a str,
    /// The JSON Schema of the arguments (parameter names and descriptions are read from it).
    pub input_schema: Option<&'a Value>,
    /// Trigger keywords.
    pub keywords: &'a [String],
}

/// The BM25 index of a catalog, built at compile time. The index data sit
/// behind `Arc`s, so a plan that reuses a compiled catalog (a policy-only
/// reload, `compile::CompileCache`) shares them and only replaces `params`
/// (the query-time parameters: relevance floors, score floor).
#[derive(Debug, Clone)]
pub struct Bm25Index {
    /// The parameters it was built with (the query-time ones may have been
    /// replaced by a later policy's, see [`Bm25Index::with_params`]).
    pub params: Bm25Params,
    /// Term → id.
    pub terms: Arc<HashMap<String, u32>>,
    /// Per term id: `(tool index, weight)` for every tool containing the term.
    pub postings: Arc<Vec<Vec<(u32, f64)>>>,
    /// Field-weighted document length per tool.
    pub doc_len: Arc<Vec<f64>>,
    /// Mean document length.
    pub avg_len: f64,
    /// IDF per term id.
    pub idf: Arc<Vec<f64>>,
    /// Per term id: related terms and their similarity, best first (empty
    /// without `[features.keyword_match.expansion]`).
    pub related: Arc<Vec<Vec<(u32, f64)>>>,
}

/// One tool's BM25 document before indexing: its distinct terms in order of
/// first occurrence with their field-weighted frequencies, and its
/// field-weighted length. Depends only on the tool and on the analysis
/// parameters ([`Bm25Params::same_index`]), so a compiled catalog keeps it.
/// Terms are shared strings: the analysis of a catalog interns them (one
/// allocation per distinct term, not per occurrence).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bm25Doc {
    /// `(term, frequency)`, first occurrence first.
    pub terms: Vec<(Arc<str>, f64)>,
    /// Field-weighted length.
    pub len: f64,
}

impl Bm25Doc {
    /// The document of `t` under the analysis `a` (fields weighted by `a`'s
    /// parameters); the terms are interned by `a` when it is memoised
    /// ([`Bm25Analyzer::memoized`]).
    pub fn of(a: &Bm25Analyzer<'_>, t: &ToolText<'_>) -> Bm25Doc {
        let f = &a.params.fields;
        let mut memo = a.memo.as_ref().map(|m| m.borrow_mut());
        // (term id, frequency) with interning, else (term, frequency).
        let mut ids: Vec<(u32, f64)> = Vec::new();
        let mut plain: Vec<(String, f64)> = Vec::new();
        let mut out_ids: Vec<u32> = Vec::new();
        let mut out: Vec<String> = Vec::new();
        let mut len = 0.0;
        // A field of several texts is analysed as their concatenation with
        // spaces (a space ends a word run, so no term spans two texts).
        let mut add = |texts: &mut dyn Iterator<Item = &str>, weight: f64| {
            if weight <= 0.0 {
                return;
            }
            // documents are short: a linear search beats hashing
            if let Some(memo) = memo.as_deref_mut() {
                out_ids.clear();
                for text in texts {
                    a.term_ids(memo, text, &mut out_ids);
                }
                len += weight * out_ids.len() as f64;
                for &id in &out_ids {
                    match ids.iter_mut().find(|(t, _)| *t == id) {
                        Some(e) => e.1 += weight,
                        None => ids.push((id, 0.0 + weight)),
                    }
                }
            } else {
                out.clear();
                for text in texts {
                    a.terms(text, &mut out);
                }
                len += weight * out.len() as f64;
                for term in out.drain(..) {
                    match plain.iter_mut().find(|(t, _)| *t == term) {
                        Some(e) => e.1 += weight,
                        None => plain.push((term, 0.0 + weight)),
                    }
                }
            }
        };
        add(&mut std::iter::once(t.name), f.name);
        add(&mut std::iter::once(t.description), f.description);
        if a.reads_parameters() {
            let (mut names, mut descs) = (Vec::new(), Vec::new());
            if let Some(s) = t.input_schema {
                schema_text(s, &mut names, &mut descs, 0);
            }
            add(&mut names.into_iter(), f.parameters);
            add(&mut descs.into_iter(), f.parameter_descriptions);
        }
        add(&mut t.keywords.iter().map(String::as_str), f.keywords);
        let terms = match &memo {
            Some(m) => ids
                .into_iter()
                .map(|(id, f)| (m.terms[id as usize].clone(), f))
                .collect(),
            None => plain.into_iter().map(|(t, f)| (Arc::from(t), f)).collect(),
        };
        Bm25Doc { terms, len }
    }
}

impl Bm25Params {
    /// Whether an index built with `self` is the index `other` builds: every
    /// parameter but the query-time ones (`score_floor`, `relevance`) equal.
    pub fn same_index(&self, other: &Bm25Params) -> bool {
        self.k1.to_bits() == other.k1.to_bits()
            && self.b.to_bits() == other.b.to_bits()
            && self.fields == other.fields
            && self.split_identifiers == other.split_identifiers
            && self.stemmer == other.stemmer
            && self.expansion == other.expansion
    }
}

/// Raw BM25 scores of one query, with what the relevance floors need.
#[derive(Debug, Clone, Default)]
pub struct Scored {
    /// Raw score per tool.
    pub raw: Vec<f64>,
    /// Per tool: `Σ w·idf` of the query terms it contains (empty unless the
    /// policy has `[features.keyword_match.relevance]`).
    pub covered: Vec<f64>,
    /// `Σ w·idf` of the query terms the catalog knows.
    pub known_mass: f64,
    /// `Σ w·idf₁` of the query terms no tool contains, `idf₁` being the IDF of
    /// a term exactly one tool contains (0 unless `query_terms = "all"`).
    pub unknown_mass: f64,
    /// The divisor of the normalisation: `max(best passing raw score, score_floor)`
    /// (0 when nothing passes and there is no floor).
    pub divisor: f64,
    /// `idf₁`, the IDF of a term exactly one tool of the catalog contains
    /// (the unit of `min_score_idf`).
    pub idf1: f64,
}

impl Scored {
    /// The query's mass the coverage and share floors divide by: the known
    /// terms', plus the unknown terms' with `query_terms = "all"`.
    #[inline]
    fn mass(&self, params: &Bm25Params) -> f64 {
        match params.relevance.as_ref().map(|r| r.query_terms) {
            Some(QueryTerms::All) => self.known_mass + self.unknown_mass,
            _ => self.known_mass,
        }
    }

    /// IDF-weighted coverage of tool `i`, in \[0,1\]: `Σ w·idf` of the query
    /// terms it contains ÷ the query's mass (0 for an empty query, and when
    /// the policy has no relevance table).
    #[inline]
    pub fn coverage(&self, params: &Bm25Params, i: usize) -> f64 {
        let m = self.mass(params);
        if m > 0.0 {
            (self.covered.get(i).copied().unwrap_or(0.0) / m).min(1.0)
        } else {
            0.0
        }
    }

    /// Share of the attainable score of tool `i`, in \[0,1\]: its raw score ÷
    /// `(k1 + 1) · mass`, the score of a tool holding every query term with
    /// an unbounded term frequency (0 for an empty query).
    #[inline]
    pub fn share(&self, params: &Bm25Params, i: usize) -> f64 {
        let m = self.mass(params) * (params.k1 + 1.0);
        if m > 0.0 {
            (self.raw.get(i).copied().unwrap_or(0.0) / m).min(1.0)
        } else {
            0.0
        }
    }

    /// Whether tool `i` passes the relevance floors of `params`.
    #[inline]
    pub fn passes(&self, params: &Bm25Params, i: usize) -> bool {
        let raw = self.raw.get(i).copied().unwrap_or(0.0);
        match &params.relevance {
            None => true,
            Some(r) => {
                raw >= r.min_score.value
                    && raw >= r.min_score_idf.value * self.idf1
                    && (r.min_coverage.value <= 0.0
                        || self.coverage(params, i) >= r.min_coverage.value)
                    && (r.min_share.value <= 0.0 || self.share(params, i) >= r.min_share.value)
            }
        }
    }

    /// `keyword_match` of tool `i`: its raw score ÷ the divisor when it passes
    /// the floors, else 0.
    #[inline]
    pub fn normalized(&self, params: &Bm25Params, i: usize) -> f64 {
        if self.divisor > 0.0 && self.passes(params, i) {
            self.raw.get(i).copied().unwrap_or(0.0) / self.divisor
        } else {
            0.0
        }
    }
}

/// A weighted query ([`Bm25Index::weighted_query`]): `(term id, weight)` of
/// the known terms, sorted by id, and the mass of the unknown ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// `(term id, weight)`, one per known term, sorted by id.
    pub terms: Vec<(u32, f64)>,
    /// `Σ w·idf₁` of the distinct terms no tool contains (see
    /// [`Scored::unknown_mass`]); 0 unless `query_terms = "all"`.
    pub unknown_mass: f64,
}

impl Bm25Index {
    /// Indexes `tools` (in catalog order).
    pub fn build(params: &Bm25Params, analyzer: &Analyzer, tools: &[ToolText<'_>]) -> Self {
        let a = Bm25Analyzer::new(params, analyzer).memoized();
        let docs: Vec<Bm25Doc> = tools.iter().map(|t| Bm25Doc::of(&a, t)).collect();
        Self::from_docs(params, &docs.iter().collect::<Vec<_>>())
    }

    /// This index under the query-time parameters of `params` (which must
    /// give the same index, [`Bm25Params::same_index`]); the index data are
    /// shared, not copied.
    pub fn with_params(&self, params: &Bm25Params) -> Self {
        debug_assert!(self.params.same_index(params));
        Bm25Index {
            params: params.clone(),
            ..self.clone()
        }
    }

    /// Indexes the documents of a catalog, one per tool in catalog order
    /// (what [`Bm25Index::build`] does after analysing each tool).
    pub fn from_docs(params: &Bm25Params, tools: &[&Bm25Doc]) -> Self {
        Self::from_doc_iter(params, tools.iter().map(|d| Cow::Borrowed(*d)))
    }

    /// [`Bm25Index::from_docs`] of documents that may be owned: each owned
    /// document is freed as soon as it is read, and (without expansion) each
    /// term list as soon as its postings are written, so that indexing a
    /// large catalog does not hold its documents twice.
    pub(crate) fn from_doc_iter<'a>(
        params: &Bm25Params,
        tools: impl ExactSizeIterator<Item = Cow<'a, Bm25Doc>>,
    ) -> Self {
        let mut ids: rustc_hash::FxHashMap<Arc<str>, u32> = Default::default();
        // A document's terms are distinct, so its (id, tf) list is a map.
        let mut docs: Vec<Vec<(u32, f64)>> = Vec::with_capacity(tools.len());
        let mut doc_len = Vec::with_capacity(tools.len());
        for d in tools {
            let mut tf: Vec<(u32, f64)> = Vec::with_capacity(d.terms.len());
            for (term, f) in &d.terms {
                let next = ids.len() as u32;
                let id = match ids.get(&**term) {
                    Some(id) => *id,
                    None => {
                        ids.insert(term.clone(), next);
                        next
                    }
                };
                tf.push((id, *f));
            }
            docs.push(tf);
            doc_len.push(d.len);
        }
        let n = docs.len() as f64;
        let avg_len = if docs.is_empty() {
            0.0
        } else {
            doc_len.iter().sum::<f64>() / n
        };
        let terms: HashMap<String, u32> =
            ids.into_iter().map(|(t, id)| (t.to_string(), id)).collect();
        let mut df = vec![0u32; terms.len()];
        for d in &docs {
            for (id, _) in d {
                df[*id as usize] += 1;
            }
        }
        // Each term's list has exactly its document frequency's room.
        let mut postings: Vec<Vec<(u32, f64)>> =
            df.iter().map(|&d| Vec::with_capacity(d as usize)).collect();
        let (k1, b) = (params.k1, params.b);
        let keep_docs = params.expansion.is_some();
        for i in 0..docs.len() {
            let norm = if avg_len > 0.0 {
                1.0 - b + b * doc_len[i] / avg_len
            } else {
                1.0
            };
            let d = if keep_docs {
                Cow::Borrowed(&docs[i])
            } else {
                Cow::Owned(std::mem::take(&mut docs[i]))
            };
            for &(id, tf) in d.iter() {
                let dfi = df[id as usize] as f64;
                let idf = (1.0 + (n - dfi + 0.5) / (dfi + 0.5)).ln();
                let w = idf * tf * (k1 + 1.0) / (tf + k1 * norm);
                postings[id as usize].push((i as u32, w));
            }
        }
        for p in &mut postings {
            p.sort_unstable_by_key(|x| x.0);
        }
        let idf: Vec<f64> = df
            .iter()
            .map(|&d| (1.0 + (n - d as f64 + 0.5) / (d as f64 + 0.5)).ln())
            .collect();
        let related = match &params.expansion {
            Some(e) => related_terms(e, &docs, &postings, &df),
            None => Vec::new(),
        };
        Bm25Index {
            params: params.clone(),
            terms: Arc::new(terms),
            postings: Arc::new(postings),
            doc_len: Arc::new(doc_len),
            avg_len,
            idf: Arc::new(idf),
            related: Arc::new(related),
        }
    }

    /// The weighted query of a conversation: `turns` holds each message's
    /// intent keywords with its weight (the latest message 1, earlier ones
    /// less). Each distinct known term keeps its largest weight (with
    /// `query_term_count = "occurrences"`, a message's weight times the
    /// term's count in it); with
    /// expansion, each term's relatives join with `weight · similarity` times
    /// the term's own weight. Terms with weight 0 are dropped. Unknown terms
    /// are dropped too (see [`Bm25Index::query`] for their mass).
    pub fn weighted_query(
        &self,
        analyzer: &Analyzer,
        turns: &[(&[String], f64)],
    ) -> Vec<(u32, f64)> {
        self.query(analyzer, turns).terms
    }

    /// [`Bm25Index::weighted_query`], with the mass of the unknown terms
    /// (each distinct unknown term with its largest weight, times `idf₁`)
    /// when the policy's relevance floors count them (`query_terms = "all"`).
    pub fn query(&self, analyzer: &Analyzer, turns: &[(&[String], f64)]) -> Query {
        let a = Bm25Analyzer::new(&self.params, analyzer);
        let want_unknown = self
            .params
            .relevance
            .as_ref()
            .is_some_and(|r| r.query_terms == QueryTerms::All);
        let occurrences = self.params.query_counting == QueryCounting::Occurrences;
        let mut q: Vec<(u32, f64)> = Vec::new();
        let mut unknown: Vec<(String, f64)> = Vec::new();
        let mut out = Vec::new();
        let mut turn: Vec<(u32, f64)> = Vec::new();
        for (keywords, w) in turns {
            if *w <= 0.0 {
                continue;
            }
            out.clear();
            for k in *keywords {
                a.terms(k, &mut out);
            }
            turn.clear();
            for t in out.drain(..) {
                match self.terms.get(&t) {
                    Some(&id) => turn.push((id, *w)),
                    None if want_unknown => unknown.push((t, *w)),
                    None => {}
                }
            }
            if occurrences {
                // One entry per term of this message: its weight times its count.
                turn.sort_unstable_by_key(|x| x.0);
                let mut k = 0;
                while k < turn.len() {
                    let id = turn[k].0;
                    let mut sum = 0.0;
                    while k < turn.len() && turn[k].0 == id {
                        sum += turn[k].1;
                        k += 1;
                    }
                    q.push((id, sum));
                }
            } else {
                q.append(&mut turn);
            }
        }
        dedup_max(&mut q);
        if let (Some(e), false) = (&self.params.expansion, self.related.is_empty()) {
            let direct = q.len();
            for k in 0..direct {
                let (id, w) = q[k];
                for &(r, sim) in &self.related[id as usize] {
                    let x = e.weight * sim * w;
                    if x > 0.0 {
                        q.push((r, x));
                    }
                }
            }
            dedup_max(&mut q);
        }
        let mut unknown_mass = 0.0;
        if !unknown.is_empty() {
            unknown.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
            unknown.dedup_by(|a, b| a.0 == b.0);
            let idf1 = self.idf_of_df(1);
            unknown_mass = unknown.iter().map(|(_, w)| w * idf1).sum();
        }
        Query {
            terms: q,
            unknown_mass,
        }
    }

    /// The IDF of a term `df` tools contain, `ln(1 + (N − df + 0.5) / (df + 0.5))`,
    /// never below 0.
    pub fn idf_of_df(&self, df: usize) -> f64 {
        let n = self.doc_len.len() as f64;
        let d = df as f64;
        (1.0 + (n - d + 0.5) / (d + 0.5)).ln().max(0.0)
    }

    /// Scores every tool for a weighted query of known terms: raw scores,
    /// coverage (when the policy has relevance floors) and the normalisation
    /// divisor over the tools that pass the relevance floors.
    pub fn score(&self, query: &[(u32, f64)], out: &mut Scored) {
        self.score_query(query, 0.0, out)
    }

    /// [`Bm25Index::score`] for a [`Query`] (its unknown terms count in the
    /// coverage and share floors with `query_terms = "all"`).
    pub fn score_query(&self, query: &[(u32, f64)], unknown_mass: f64, out: &mut Scored) {
        let n = self.doc_len.len();
        out.raw.clear();
        out.raw.resize(n, 0.0);
        let want_cov = self.params.relevance.is_some();
        out.covered.clear();
        if want_cov {
            out.covered.resize(n, 0.0);
        }
        let mut mass = 0.0;
        for &(id, w) in query {
            let idf = self.idf[id as usize];
            mass += w * idf;
            for &(tool, x) in &self.postings[id as usize] {
                out.raw[tool as usize] += w * x;
                if want_cov {
                    out.covered[tool as usize] += w * idf;
                }
            }
        }
        out.known_mass = mass;
        out.unknown_mass = unknown_mass;
        out.idf1 = self.idf_of_df(1);
        let mut best = 0.0f64;
        for i in 0..n {
            if out.raw[i] > best && out.passes(&self.params, i) {
                best = out.raw[i];
            }
        }
        out.divisor = best.max(self.params.score_floor);
    }

    /// Distinct term ids of the intent keywords (unknown terms are dropped).
    pub fn query_ids(&self, analyzer: &Analyzer, intent: &[String]) -> Vec<u32> {
        let a = Bm25Analyzer::new(&self.params, analyzer);
        let mut out = Vec::new();
        for k in intent {
            a.terms(k, &mut out);
        }
        let mut seen = HashSet::new();
        out.into_iter()
            .filter_map(|t| self.terms.get(&t).copied())
            .filter(|id| seen.insert(*id))
            .collect()
    }

    /// Raw BM25 scores of every tool for the query `ids` (into `scores`, which
    /// is resized to the catalog), and the best of them.
    pub fn raw_scores(&self, ids: &[u32], scores: &mut Vec<f64>) -> f64 {
        scores.clear();
        scores.resize(self.doc_len.len(), 0.0);
        for &id in ids {
            for &(tool, w) in &self.postings[id as usize] {
                scores[tool as usize] += w;
            }
        }
        scores.iter().copied().fold(0.0, f64::max)
    }

    /// `keyword_match` of every tool for one message's intent keywords: raw
    /// scores divided by `max(best passing score, score_floor)`; 0 for tools
    /// below the relevance floors, and for all when the divisor is 0.
    pub fn normalized(&self, analyzer: &Analyzer, intent: &[String]) -> Vec<f64> {
        let q = self.query(analyzer, &[(intent, 1.0)]);
        let mut s = Scored::default();
        self.score_query(&q.terms, q.unknown_mass, &mut s);
        (0..self.doc_len.len())
            .map(|i| s.normalized(&self.params, i))
            .collect()
    }
}

/// Sorts `q` by term id and keeps one entry per term, with its largest weight.
fn dedup_max(q: &mut Vec<(u32, f64)>) {
    q.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    q.dedup_by_key(|x| x.0);
}

/// The related terms of every term (see the module docs): cosine of the two
/// terms' tool sets, at least `min_shared` shared tools and `min_similarity`,
/// the `neighbours` best per term (ties: lower term id).
fn related_terms(
    e: &ExpansionParams,
    docs: &[Vec<(u32, f64)>],
    postings: &[Vec<(u32, f64)>],
    df: &[u32],
) -> Vec<Vec<(u32, f64)>> {
    let mut out = vec![Vec::new(); postings.len()];
    let mut shared: HashMap<u32, u32> = HashMap::new();
    for (a, plist) in postings.iter().enumerate() {
        shared.clear();
        for &(tool, _) in plist {
            for &(b, _) in &docs[tool as usize] {
                if b as usize != a {
                    *shared.entry(b).or_insert(0) += 1;
                }
            }
        }
        let mut cands: Vec<(u32, f64)> = shared
            .iter()
            .filter(|(_, c)| **c as usize >= e.min_shared)
            .map(|(&b, &c)| {
                let sim = c as f64 / ((df[a] as f64) * (df[b as usize] as f64)).sqrt();
                (b, sim)
            })
            .filter(|(_, sim)| *sim >= e.min_similarity && *sim > 0.0)
            .collect();
        cands.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        cands.truncate(e.neighbours);
        out[a] = cands;
    }
    out
}

#[cfg(test)]
mod tests;
