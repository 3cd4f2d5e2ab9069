//! Per-clause keyword scores (`[features.keyword_match.clauses]`).
//!
//! A request that lists several steps is one long BM25 query: the tool
//! matching most of its words wins, and each step's own tool competes with
//! the near-synonyms of every other step for the active set, so one global
//! threshold either cuts the weaker steps or lets in many tools. Scored
//! clause by clause (`text::clauses::split_clauses`), each clause relative
//! to its own best tool, every step's best match gets the value the best
//! match of a one-step request gets; the active set then grows with the
//! number of steps the request names, under the same threshold. The whole
//! request is still scored too: `keyword_match = max(whole_weight × whole,
//! weight × best open clause)`, where a clause gives its value only to the
//! tools within `min_share` of its best, and a clause is no longer open
//! once a tool the session called matched it (`done_share`): the set
//! shrinks as the steps are carried out. A request of one clause keeps its
//! whole value. Every number is the policy's (`ClauseParams`).

use crate::context::SessionContext;
use crate::parse::selection::ClauseParams;
use crate::plan::Plan;
use crate::text::bm25::{Bm25Index, Scored};
use crate::text::clauses::split_clauses;

/// What the clauses gave: per tool, `weight` × its best clause's normalised
/// BM25 score and which clause that was. Empty when the request was not cut
/// (no `[features.keyword_match.clauses]`, no message text, fewer than two
/// clauses with enough terms).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClauseMatch {
    /// The clauses scored, as written, in message order.
    pub texts: Vec<String>,
    /// Per tool: `weight` × the largest normalised clause score.
    pub value: Vec<f64>,
    /// The factor of the whole request's value (`whole_weight`; 1 when
    /// the request was not cut).
    pub whole_weight: f64,
    /// Per tool: the index into `texts` of the clause that gave `value`
    /// (meaningless where `value` is 0).
    pub from: Vec<u16>,
    /// Indices into `texts` of the clauses that were done (`done_share`):
    /// a tool the session called already matched them.
    pub done: Vec<u16>,
    /// Each clause's BM25 scores over the catalog, in `texts` order
    /// (shared: an activation's explanations read them, an evaluation does
    /// not copy them).
    pub scores: std::sync::Arc<[Scored]>,
    /// The factor of a clause's normalised score (`weight`).
    pub weight: f64,
    /// The share of a clause's best a tool needs for the clause's value
    /// (`min_share`).
    pub min_share: f64,
}

impl ClauseMatch {
    /// `keyword_match` of tool `i` from the whole request's normalised
    /// BM25 value `whole`: `whole` itself when the request was not cut,
    /// else `max(whole_weight × whole, clause value)`.
    #[inline(always)]
    pub fn combine(&self, i: usize, whole: f64) -> f64 {
        match self.value.get(i) {
            Some(&c) => (self.whole_weight * whole).max(c),
            None => whole,
        }
    }

    /// The clause value of tool `i` (0 when the request was not cut).
    #[inline(always)]
    pub fn value(&self, i: usize) -> f64 {
        self.value.get(i).copied().unwrap_or(0.0)
    }
}

/// Scores the clauses of the context's latest message (`user_message`),
/// each with the remembered turns beside it as the whole request has them
/// (`remembered`: each earlier message's keywords and weight).
pub(crate) fn score(
    plan: &Plan,
    idx: &Bm25Index,
    p: &ClauseParams,
    context: &SessionContext,
    remembered: &[(&[String], f64)],
) -> ClauseMatch {
    let Some(text) = context.user_message.as_deref() else {
        return ClauseMatch::default();
    };
    let pieces = split_clauses(text, &p.split_after);
    if pieces.len() < 2 {
        return ClauseMatch::default();
    }
    // Each clause's keywords, as the whole message's are made (extraction,
    // then the comparable terms of each keyword). A clause with fewer
    // distinct terms the catalog knows than `min_terms` joins the clause
    // before it (the first one, the clause after it): "Please sort by
    // popularity." completes the step it follows.
    let base = text.as_ptr() as usize;
    let mut kept: Vec<(std::ops::Range<usize>, Vec<String>, bool)> = Vec::new();
    for piece in pieces {
        let start = piece.as_ptr() as usize - base;
        let range = start..start + piece.len();
        let mut terms = Vec::new();
        for k in plan.analyzer.extract(piece) {
            plan.analyzer.expand_into(&k, &mut terms);
        }
        let long = idx.query_ids(&plan.analyzer, &terms).len() >= p.min_terms;
        match kept.last_mut() {
            // a short clause joins the one before; a long one joins a short first one
            Some(last) if !long || !last.2 => {
                last.0.end = range.end;
                last.1.append(&mut terms);
                last.2 = last.2 || long;
            }
            _ => kept.push((range, terms, long)),
        }
    }
    kept.truncate(p.max_clauses);
    let kept: Vec<(&str, Vec<String>)> = kept
        .into_iter()
        .map(|(r, terms, _)| (&text[r], terms))
        .collect();
    if kept.len() < 2 {
        return ClauseMatch::default();
    }
    // Each clause scored as a request of its own (kept when some tool
    // matches it).
    let mut turns: Vec<(&[String], f64)> = Vec::with_capacity(1 + remembered.len());
    let mut steps: Vec<(&str, Scored)> = Vec::with_capacity(kept.len());
    for (piece, terms) in &kept {
        turns.clear();
        turns.push((terms, 1.0));
        turns.extend(remembered.iter().copied());
        let q = idx.query(&plan.analyzer, &turns);
        let mut s = Scored::default();
        idx.score_query(&q.terms, q.unknown_mass, &mut s);
        if s.divisor > 0.0 {
            steps.push((piece, s));
        }
    }
    if steps.len() < 2 {
        return ClauseMatch::default();
    }
    let n = plan.tools.len();
    let mut out = ClauseMatch {
        texts: Vec::with_capacity(steps.len()),
        value: vec![0.0; n],
        from: vec![0; n],
        done: Vec::new(),
        whole_weight: p.whole_weight,
        scores: std::sync::Arc::from(Vec::new()),
        weight: p.weight,
        min_share: p.min_share,
    };
    // The tools the session called (done clauses), as indices.
    let called: Vec<usize> = match p.done_share {
        Some(_) => context
            .recent_tool_calls
            .iter()
            .filter_map(|name| plan.tool_index(name))
            .collect(),
        None => Vec::new(),
    };
    for (c, (piece, s)) in steps.iter().enumerate() {
        out.texts.push(piece.to_string());
        if let Some(share) = p.done_share
            && called
                .iter()
                .any(|&t| s.normalized(&idx.params, t) >= share)
        {
            out.done.push(c as u16);
            continue;
        }
        for i in 0..n {
            if s.raw[i] <= 0.0 {
                continue;
            }
            let x = s.normalized(&idx.params, i);
            if x < p.min_share {
                continue;
            }
            let v = p.weight * x;
            if v > out.value[i] {
                out.value[i] = v;
                out.from[i] = c as u16;
            }
        }
    }
    out.scores = steps.into_iter().map(|(_, s)| s).collect();
    out
}
