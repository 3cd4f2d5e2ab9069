//! The selection-quality keys of a policy, each in its own table, and the
//! transitions data file a policy may reference.
//!
//! * `[keywords.memory]`: conversation memory. Intent terms of earlier user
//!   messages stay in the query with a weight that decays per turn, instead of
//!   being replaced by the latest message (seed 000 keeps only the latest).
//! * `[features.keyword_match.relevance]`: absolute relevance. Floors on a
//!   tool's raw BM25 score, on the IDF-weighted share of the query's terms
//!   it covers and on its share of the query's attainable score, applied
//!   before the relative normalisation, so a request that nothing fits does
//!   not make its best (poor) match score 1.
//! * `[features.keyword_match.expansion]`: query expansion from the catalog
//!   itself. Terms that co-occur in the same tools' names and descriptions are
//!   related; each query term brings its closest relatives with a lower weight.
//! * `[features.keyword_match.clauses]`: a request that names several steps
//!   ("Get the quote. After that, create an administrator.") is also scored
//!   clause by clause, each clause relative to its own best tool, so every
//!   step's best match scores as the best of a one-step request would
//!   (`text::clauses`, `eval::clauses`).
//! * `[features.transition_match]`: the `transition_match` feature, "this tool
//!   often follows the last one called": learned counts from a transitions
//!   file (written by `toolgate fit --transitions-out`), smoothed, and the
//!   tags' hand-declared `follows = [...]`.
//! * `[features.semantic_match]`: the `semantic_match` feature, a light
//!   semantic matcher for the vocabulary gap ("remove" vs `delete_file`): the
//!   cosine between a static (Model2Vec-style) embedding of the request and
//!   one of each tool's text, from a model folder the policy names
//!   (`text::semantic`; cargo feature `semantic`).
//!
//! Every key is documented in `docs/policy-reference.md`. Absent tables mean
//! "off"; the seed presets declare none of them, so they stay exact.

use std::ops::Range;
use std::sync::Arc;

use crate::diag::{ErrorKind, LoadError, SourceFile};
use crate::parse::policy::Sp;
use crate::parse::reader::{Reader, Table};

/// `[keywords.memory]`: how long intent terms of earlier messages count.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryParams {
    /// How many earlier user messages are remembered (0 = only the latest counts).
    pub turns: usize,
    /// Weight factor per turn back, in \[0,1\]: a term of the message `k` turns
    /// back weighs `decay^k` (the latest message weighs 1).
    pub decay: f64,
}

/// `[features.keyword_match.relevance]`: absolute floors (BM25 only).
#[derive(Debug, Clone, PartialEq)]
pub struct RelevanceParams {
    /// A tool whose raw BM25 score is below this gets `keyword_match = 0`
    /// (≥ 0; 0 = off).
    pub min_score: Sp<f64>,
    /// A tool whose raw BM25 score is below this many `idf₁` gets
    /// `keyword_match = 0` (≥ 0; 0 = off). `idf₁ = ln(1 + (N − 0.5) / 1.5)`
    /// is the IDF of a term exactly one of the catalog's `N` tools contains:
    /// raw scores grow with it, so this floor means the same on a catalog of
    /// 8 tools and of 800 (a term only one tool has, matched once at the
    /// average length, scores about 1 `idf₁`).
    pub min_score_idf: Sp<f64>,
    /// A tool covering less than this IDF-weighted share of the query's terms
    /// (see [`QueryTerms`]) gets `keyword_match = 0` (in \[0,1\]; 0 = off).
    /// Scale-free: a share, whatever the catalog's size.
    pub min_coverage: Sp<f64>,
    /// A tool whose raw BM25 score is below this share of the query's
    /// attainable score `Σ w·idf·(k1 + 1)` (the score of a tool holding every
    /// query term with an unbounded term frequency; terms as in
    /// [`QueryTerms`]) gets `keyword_match = 0` (in \[0,1\]; 0 = off).
    pub min_share: Sp<f64>,
    /// Which query terms the denominators of `min_coverage` and `min_share` count.
    pub query_terms: QueryTerms,
}

/// `[features.keyword_match.relevance] query_terms`: the query terms the
/// coverage and share floors divide by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryTerms {
    /// `"known"` (default): only the terms some tool of the catalog contains.
    #[default]
    Known,
    /// `"all"`: every query term; a term no tool contains counts with the IDF
    /// of a term exactly one tool contains (`ln(1 + (N − 0.5) / 1.5)`, `N`
    /// tools), so a request made mostly of words the catalog never uses
    /// covers little of any tool.
    All,
}

/// `[features.keyword_match] query_term_count`: how often a query term that
/// occurs several times in one message counts (BM25 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryCounting {
    /// `"distinct"` (default): each distinct term once, whatever its number
    /// of occurrences: a long request that repeats a word ("... the file ...
    /// the file ...") does not make the tools holding it outrank those
    /// holding its rarer words.
    #[default]
    Distinct,
    /// `"occurrences"`: every occurrence counts, textbook BM25 (the query
    /// term's weight is its count in the message, times the message's
    /// weight; across remembered messages the largest weight is kept).
    Occurrences,
}

/// Reads `query_term_count` of `[features.keyword_match]` (default `"distinct"`).
pub fn read_query_counting(km: &Table<'_, '_>) -> QueryCounting {
    crate::parse::policy::choice(
        km,
        "query_term_count",
        &[
            ("distinct", QueryCounting::Distinct),
            ("occurrences", QueryCounting::Occurrences),
        ],
    )
    .unwrap_or_default()
}

/// `[features.keyword_match.expansion]`: catalog-derived query expansion (BM25 only).
#[derive(Debug, Clone, PartialEq)]
pub struct ExpansionParams {
    /// Related terms added per query term, at most (≥ 1).
    pub neighbours: usize,
    /// Query weight of a related term, times its similarity (in \[0,1\]).
    pub weight: f64,
    /// Least similarity (cosine of the two terms' tool sets, in \[0,1\]) for a
    /// term to be related.
    pub min_similarity: f64,
    /// Least number of tools that must contain both terms (≥ 1).
    pub min_shared: usize,
}

/// `[features.keyword_match.clauses]`: per-clause keyword scores (BM25 only).
///
/// The latest user message as written (`SessionContext.user_message`) is cut
/// into clauses after each `split_after` string that is followed by
/// whitespace or ends the text; each clause with at least `min_terms`
/// distinct known terms is scored by BM25 as a request of its own (with the
/// remembered turns of `[keywords.memory]`, as the whole request is) and
/// normalised by its own best tool. `keyword_match` is then the larger of
/// `whole_weight` × the whole request's value and `weight` × the best
/// value among the clauses still open (see `done_share`) that reach
/// `min_share`. A message of one clause, or a context without the
/// message's text, gets the whole request's value alone.
#[derive(Debug, Clone, PartialEq)]
pub struct ClauseParams {
    /// `split_after`: the strings a clause ends after (non-empty strings;
    /// e.g. `[".", "!", "?", ";"]`), when followed by whitespace or the end
    /// of the text, so `3.5` or `v1.2` do not end a clause.
    pub split_after: Vec<String>,
    /// `min_terms`: the least number of distinct query terms the catalog
    /// knows that a clause needs to stand on its own (≥ 1): a shorter clause
    /// ("Please sort by popularity.") joins the clause before it (a short
    /// first clause, the one after it).
    pub min_terms: usize,
    /// `max_clauses`: at most this many clauses are scored, the first ones
    /// (≥ 1; each costs one BM25 pass over the catalog's postings).
    pub max_clauses: usize,
    /// `weight`: a clause's normalised score counts with this factor, in
    /// \[0,1\] (default 1: a clause's best tool gets `keyword_match` = 1,
    /// like the best tool of a one-step request).
    pub weight: f64,
    /// `done_share`: a clause is done, and no longer counts, once a tool
    /// the session called (`SessionContext.recent_tool_calls`) reaches this
    /// share of the clause's best score, in (0,1\]; absent = a clause is
    /// never done. A step the agent has already carried out stops holding
    /// its near-synonyms in the active set.
    pub done_share: Option<f64>,
    /// `min_share`: a clause gives its value only to the tools whose score
    /// reaches this share of the clause's best, in \[0,1\] (default 0:
    /// every tool it matches): a per-step relative cut.
    pub min_share: f64,
    /// `whole_weight`: in a request cut into clauses, the whole request's
    /// value counts with this factor, in \[0,1\] (default 1); a request of
    /// one clause keeps its whole value.
    pub whole_weight: f64,
}

/// Reads `[features.keyword_match.clauses]`, if present.
pub fn read_clauses(km: &Table<'_, '_>) -> Option<ClauseParams> {
    let t = km.table("clauses")?;
    if t.get("split_after").is_none() {
        t.require("split_after");
    }
    let split_after = t.str_list("split_after").and_then(|list| {
        let mut ok = !list.is_empty();
        if list.is_empty() {
            t.reader().error(
                ErrorKind::InvalidValue,
                t.key_span("split_after").unwrap_or(t.span.clone()),
                format!("`{}.split_after` must name at least one string", t.path()),
            );
        }
        for (s, span) in &list {
            if s.is_empty() {
                ok = false;
                t.reader().error(
                    ErrorKind::InvalidValue,
                    span.clone(),
                    format!("`{}.split_after` holds an empty string", t.path()),
                );
            }
        }
        ok.then(|| list.into_iter().map(|(s, _)| s).collect::<Vec<_>>())
    });
    let weight = match t.get("weight") {
        None => Some(1.0),
        Some(_) => range(&t, "weight", t.f64("weight"), 0.0, 1.0).map(|x| x.0),
    };
    let min_terms = if t.get("min_terms").is_some() {
        positive_int(&t, "min_terms", 1)
    } else {
        Some(1)
    };
    let max_clauses = if t.get("max_clauses").is_some() {
        positive_int(&t, "max_clauses", 1)
    } else {
        Some(16)
    };
    let done_share = match t.get("done_share") {
        None => Some(None),
        Some(_) => positive_fraction(&t, "done_share").map(Some),
    };
    let min_share = match t.get("min_share") {
        None => Some(0.0),
        Some(_) => range(&t, "min_share", t.f64("min_share"), 0.0, 1.0).map(|x| x.0),
    };
    let whole_weight = match t.get("whole_weight") {
        None => Some(1.0),
        Some(_) => range(&t, "whole_weight", t.f64("whole_weight"), 0.0, 1.0).map(|x| x.0),
    };
    Some(ClauseParams {
        min_share: min_share?,
        whole_weight: whole_weight?,
        split_after: split_after?,
        min_terms: min_terms?,
        max_clauses: max_clauses?,
        weight: weight?,
        done_share: done_share?,
    })
}

/// A float in (0, 1] at `key`.
fn positive_fraction(t: &Table<'_, '_>, key: &str) -> Option<f64> {
    let (x, span) = range(t, key, t.f64(key), 0.0, 1.0)?;
    if x <= 0.0 {
        let found = t.reader().written(&span);
        t.reader().error(
            ErrorKind::OutOfRange,
            span,
            format!("`{}.{key}` must be within (0, 1], found {found}", t.path()),
        );
        return None;
    }
    Some(x)
}

/// `[features.transition_match]`: "this tool often follows the last one called".
#[derive(Debug, Clone, PartialEq)]
pub struct TransitionParams {
    /// The feature's value for a tool whose tags declare `follows = [last call]`.
    pub declared: f64,
    /// Path of the transitions file (relative to the policy file), if any.
    pub file: Option<Sp<String>>,
    /// Additive smoothing toward the overall successor distribution, in
    /// pseudo-counts (≥ 0): `P(B | A) = (count(A→B) + smoothing · q(B)) /
    /// (count(A→·) + smoothing)`, `q(B)` = B's share of all successors.
    pub smoothing: f64,
    /// The counts, read by the loader from `file` (`None` until then, or without a file).
    pub data: Option<TransitionData>,
}

/// `[features.semantic_match]`: a static-embedding matcher.
#[derive(Debug, Clone, PartialEq)]
pub struct SemanticParams {
    /// Path of the model folder (relative to the policy file): a Model2Vec
    /// model with a WordPiece tokenizer (`tokenizer.json`,
    /// `model.safetensors`, `config.json`), e.g. `models/minilm-static-128`.
    pub model: Sp<String>,
    /// How cosines become `semantic_match` in \[0,1\].
    pub normalization: SemanticNormalization,
    /// `encoder`: what kind of model `model` names (`"static"`, the
    /// default, or `"transformer"`).
    pub encoder: SemanticEncoder,
    /// `input`: what of a request is embedded (`"keywords"`, the default,
    /// or `"message"`).
    pub input: SemanticInput,
    /// `min_cosine`: the "nothing fits" gate, in \[0,1\]; `None` = no gate.
    /// When the request has a vector and no tool's raw cosine with it (not
    /// divided by the best tool's) reaches this value, the request is taken
    /// to fit no tool: `semantic_match` and `keyword_match` are 0 for every
    /// tool (`text::semantic::SemanticIndex::fits`). Inert without
    /// the model's files (the loader's warning says so).
    pub min_cosine: Option<f64>,
    /// The model, loaded by the loader from `model` (`None` until then).
    pub data: Option<SemanticData>,
}

/// `[features.semantic_match] encoder`: the kind of model in the `model`
/// folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SemanticEncoder {
    /// `"static"`: a Model2Vec table, one vector per token, averaged
    /// (`parse::semantic_model`); the folder must exist and load.
    #[default]
    Static,
    /// `"transformer"`: a Sentence-Transformers BERT model (e.g.
    /// all-MiniLM-L6-v2) run as a bi-encoder (`crate::embed`, cargo feature
    /// `embed`). When its files are missing or cannot run, the policy still
    /// loads with a one-time warning that says how to install them, and
    /// `semantic_match` is 0 for every tool.
    Transformer,
}

/// `[features.semantic_match] input`: what of a request the model embeds.
/// Tools are embedded from the same text either way
/// (`text::semantic::tool_text`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SemanticInput {
    /// `"keywords"`: the intent keywords of each user message
    /// (`SessionContext.user_intent_keywords`, the `[keywords]` extraction:
    /// lowercased, stop words dropped, stemmed when the policy stems),
    /// joined by spaces.
    #[default]
    Keywords,
    /// `"message"`: each user message as written
    /// (`SessionContext.user_message`, `previous_user_messages`), so that a
    /// transformer sees the words, their order and the stop words it was
    /// trained on. A turn whose text the context does not carry (a host that
    /// sends keywords only) is embedded from its keywords.
    Message,
}

/// `[features.semantic_match] normalization`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemanticNormalization {
    /// `"best"`: `max(cos, 0) / best tool's cos` (like BM25's relative
    /// `keyword_match`: the closest tool gets 1; 0 for every tool when no
    /// cosine is above 0).
    Best,
    /// `"none"`: `max(cos, 0)`, the plain cosine.
    None,
    /// `"confidence"`: `"best"` scaled by the query's confidence, how far
    /// the `confidence_rank`-th closest tool falls below the closest:
    /// `max(cos, 0) / best × (best − cos_k) / best`, with `cos_k` =
    /// `max(k-th largest cos, 0)`. A request whose closest tools are all
    /// about as close (near-synonyms, where a sentence vector cannot tell
    /// them apart) gets a small `semantic_match` for every tool, so the
    /// other terms decide; a request with one clearly closest tool keeps
    /// most of it (issue 24: a fusion whose weight follows the matcher's
    /// per-query confidence). `k` ≥ 2; a catalog of fewer than `k` tools
    /// uses its farthest tool.
    Confidence {
        /// `confidence_rank`: which closest tool (2 = the second) the best
        /// is compared with.
        rank: usize,
    },
}

/// A model folder as loaded: the files are read, checked and loaded by the
/// loader (`load`), then dropped.
#[derive(Debug, Clone)]
pub struct SemanticData {
    /// The folder, as given or as embedded (for messages).
    pub dir: String,
    /// The model (shared by every load of the same files).
    pub model: Arc<crate::parse::semantic_model::SemanticModel>,
}

impl PartialEq for SemanticData {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.model, &other.model)
    }
}

/// `[features.semantic_match] confidence_rank`: an integer in [2, 10000].
fn read_confidence_rank(t: &Table<'_, '_>) -> Option<usize> {
    t.require("confidence_rank")?;
    let (n, span) = t.int("confidence_rank")?;
    if !(2..=10_000).contains(&n) {
        t.reader().error(
            ErrorKind::InvalidValue,
            span,
            format!("`confidence_rank` = {n} must be within [2, 10000] (the k-th closest tool the closest is compared with)"),
        );
        return None;
    }
    Some(n as usize)
}

/// Reads `[features.semantic_match]`, if present.
pub fn read_semantic(t: &Table<'_, '_>) -> Option<SemanticParams> {
    let model = t
        .require("model")
        .and_then(|v| v.string().map(|s| Sp::new(s, v.span.clone())));
    let normalization = t.require("normalization").and_then(|_| {
        crate::parse::policy::choice(
            t,
            "normalization",
            &[
                ("best", SemanticNormalization::Best),
                ("none", SemanticNormalization::None),
                ("confidence", SemanticNormalization::Confidence { rank: 0 }),
            ],
        )
    });
    // `confidence_rank`: required with "confidence", refused without it.
    let normalization = match normalization {
        Some(SemanticNormalization::Confidence { .. }) => {
            read_confidence_rank(t).map(|rank| SemanticNormalization::Confidence { rank })
        }
        other => {
            if let Some(v) = t.get("confidence_rank") {
                t.reader().error(
                    ErrorKind::InvalidValue,
                    v.span.clone(),
                    "`confidence_rank` is read only with `normalization = \"confidence\"`"
                        .to_string(),
                );
                None
            } else {
                other
            }
        }
    };
    let encoder = match t.get("encoder") {
        None => Some(SemanticEncoder::Static),
        Some(_) => crate::parse::policy::choice(
            t,
            "encoder",
            &[
                ("static", SemanticEncoder::Static),
                ("transformer", SemanticEncoder::Transformer),
            ],
        ),
    };
    let input = match t.get("input") {
        None => Some(SemanticInput::Keywords),
        Some(_) => crate::parse::policy::choice(
            t,
            "input",
            &[
                ("keywords", SemanticInput::Keywords),
                ("message", SemanticInput::Message),
            ],
        ),
    };
    let min_cosine = match t.get("min_cosine") {
        None => Some(None),
        Some(_) => range(t, "min_cosine", t.f64("min_cosine"), 0.0, 1.0).map(|(x, _)| Some(x)),
    };
    if !cfg!(feature = "semantic") {
        t.reader().error(
            ErrorKind::InvalidValue,
            t.span.clone(),
            "`[features.semantic_match]` needs toolgate built with the cargo feature `semantic`"
                .to_string(),
        );
        return None;
    }
    Some(SemanticParams {
        model: model?,
        normalization: normalization?,
        encoder: encoder?,
        input: input?,
        min_cosine: min_cosine?,
        data: None,
    })
}

/// A transitions file as read: `[after."A"]` tables of `"B" = count`.
#[derive(Debug, Clone)]
pub struct TransitionData {
    /// The file (spans point into it).
    pub file: Arc<SourceFile>,
    /// (from, to, count), in file order, with the span of `to`'s key.
    pub counts: Vec<(String, Sp<String>, f64)>,
}

impl PartialEq for TransitionData {
    fn eq(&self, other: &Self) -> bool {
        self.file.name == other.file.name && self.counts == other.counts
    }
}

fn range(
    t: &Table<'_, '_>,
    key: &str,
    v: Option<(f64, Range<usize>)>,
    lo: f64,
    hi: f64,
) -> Option<(f64, Range<usize>)> {
    let (x, span) = v?;
    if x < lo || x > hi {
        let hi_s = if hi == f64::MAX {
            "∞".to_string()
        } else {
            hi.to_string()
        };
        let found = t.reader().written(&span);
        t.reader().error(
            ErrorKind::OutOfRange,
            span,
            format!(
                "`{}.{key}` must be within [{lo}, {hi_s}], found {found}",
                t.path()
            ),
        );
        return None;
    }
    Some((x, span))
}

fn positive_int(t: &Table<'_, '_>, key: &str, min: i64) -> Option<usize> {
    let (x, span) = t.int(key)?;
    if x < min {
        t.reader().error(
            ErrorKind::OutOfRange,
            span,
            format!("`{}.{key}` must be {min} or more, found {x}", t.path()),
        );
        return None;
    }
    Some(x as usize)
}

/// Reads `[keywords.memory]` (inside `[keywords]`), if present.
pub fn read_memory(keywords: &Table<'_, '_>) -> Option<MemoryParams> {
    let t = keywords.table("memory")?;
    if t.get("turns").is_none() {
        t.require("turns");
    }
    let turns = positive_int(&t, "turns", 0);
    let decay = range(&t, "decay", t.req_f64("decay"), 0.0, 1.0);
    Some(MemoryParams {
        turns: turns?,
        decay: decay?.0,
    })
}

/// Reads `[features.keyword_match.relevance]`, if present.
pub fn read_relevance(km: &Table<'_, '_>) -> Option<RelevanceParams> {
    let t = km.table("relevance")?;
    let min_score = range(&t, "min_score", t.f64("min_score"), 0.0, f64::MAX);
    let min_score_idf = range(&t, "min_score_idf", t.f64("min_score_idf"), 0.0, f64::MAX);
    let min_coverage = range(&t, "min_coverage", t.f64("min_coverage"), 0.0, 1.0);
    let min_share = range(&t, "min_share", t.f64("min_share"), 0.0, 1.0);
    let query_terms = crate::parse::policy::choice(
        &t,
        "query_terms",
        &[("known", QueryTerms::Known), ("all", QueryTerms::All)],
    )
    .unwrap_or_default();
    if ["min_score", "min_score_idf", "min_coverage", "min_share"]
        .iter()
        .all(|k| t.key_span(k).is_none())
    {
        t.reader().error(
            ErrorKind::MissingKey,
            t.span.clone(),
            format!(
                "[{}] needs `min_score`, `min_score_idf`, `min_coverage` or `min_share` (one or more)",
                t.path()
            ),
        );
    }
    let sp = |v: Option<(f64, Range<usize>)>| {
        v.map(|(x, s)| Sp::new(x, s))
            .unwrap_or(Sp::new(0.0, t.span.clone()))
    };
    Some(RelevanceParams {
        min_score: sp(min_score),
        min_score_idf: sp(min_score_idf),
        min_coverage: sp(min_coverage),
        min_share: sp(min_share),
        query_terms,
    })
}

/// Reads `[features.keyword_match.expansion]`, if present.
pub fn read_expansion(km: &Table<'_, '_>) -> Option<ExpansionParams> {
    let t = km.table("expansion")?;
    for key in ["neighbours", "weight"] {
        if t.get(key).is_none() {
            t.require(key);
        }
    }
    let neighbours = positive_int(&t, "neighbours", 1);
    let weight = match t.get("weight") {
        None => Some(1.0),
        Some(_) => range(&t, "weight", t.f64("weight"), 0.0, 1.0).map(|x| x.0),
    };
    let min_similarity = range(&t, "min_similarity", t.f64("min_similarity"), 0.0, 1.0)
        .map(|x| x.0)
        .unwrap_or(0.0);
    let min_shared = if t.get("min_shared").is_some() {
        positive_int(&t, "min_shared", 1)?
    } else {
        1
    };
    Some(ExpansionParams {
        neighbours: neighbours?,
        weight: weight?,
        min_similarity,
        min_shared,
    })
}

/// Reads `[features.transition_match]`, if present.
pub fn read_transitions(t: &Table<'_, '_>) -> Option<TransitionParams> {
    let declared = range(t, "declared", t.req_f64("declared"), 0.0, f64::MAX);
    let file = t.str("file").map(|(s, span)| Sp::new(s, span));
    let smoothing = match (&file, t.f64("smoothing")) {
        (_, Some(v)) => range(t, "smoothing", Some(v), 0.0, f64::MAX).map(|x| x.0),
        (Some(_), None) => {
            t.require("smoothing");
            None
        }
        (None, None) => Some(0.0),
    };
    Some(TransitionParams {
        declared: declared?.0,
        file,
        smoothing: smoothing?,
        data: None,
    })
}

/// Reads a transitions file: `[after."A"]` tables whose entries `"B" = n` say
/// that tool B was called right after tool A `n` times (n ≥ 0, an integer or
/// a float). Unknown top-level keys, wrong types and negative counts are errors
/// with file:line:column.
pub fn parse_transitions(file: Arc<SourceFile>) -> Result<TransitionData, LoadError> {
    let f2 = file.clone();
    Reader::parse_document(file, |root| {
        let mut counts = Vec::new();
        match root.table("after") {
            Some(mut after) => {
                for (from, _, v) in after.entries() {
                    let Some(mut to) = v.table() else {
                        continue;
                    };
                    for (name, span, c) in to.entries() {
                        let Some(n) = c.f64() else { continue };
                        if n < 0.0 {
                            root.reader().error(
                                ErrorKind::OutOfRange,
                                c.span.clone(),
                                format!(
                                    "the count of `{from}` -> `{name}` must be 0 or more, found {n}"
                                ),
                            );
                            continue;
                        }
                        counts.push((from.clone(), Sp::new(name, span), n));
                    }
                }
            }
            None => {
                root.require("after");
            }
        }
        TransitionData {
            file: f2.clone(),
            counts,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_file() {
        let f = SourceFile::new(
            "t.toml",
            "# counts\n[after.\"cd\"]\n\"ls\" = 3\nmkdir = 1.5\n[after.\"a.b\"]\n\"c\" = 0\n",
        );
        let d = parse_transitions(f).unwrap();
        let got: Vec<(&str, &str, f64)> = d
            .counts
            .iter()
            .map(|(a, b, n)| (a.as_str(), b.value.as_str(), *n))
            .collect();
        assert_eq!(
            got,
            vec![("cd", "ls", 3.0), ("cd", "mkdir", 1.5), ("a.b", "c", 0.0)]
        );
    }

    #[test]
    fn transitions_file_errors() {
        let f = SourceFile::new("t.toml", "[after.cd]\nls = -1\nx = \"two\"\n[before]\n");
        let e = parse_transitions(f).unwrap_err().to_string();
        assert!(e.contains("t.toml:2:6"), "{e}");
        assert!(e.contains("must be 0 or more"), "{e}");
        assert!(e.contains("t.toml:3:5"), "{e}");
        assert!(e.contains("unknown key `before`"), "{e}");
    }
}
