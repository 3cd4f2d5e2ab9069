//! The JSON report of an [`Activation`], as `toolgate eval --format json` and
//! `toolgate explain --format json` print it and the Python package returns
//! it: one definition of the order of the tools, of each term's key and of
//! the header, for every front end.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{Activation, TermExplanation};

/// How one tool's `keyword_match` came out of a request cut into clauses
/// (`[features.keyword_match.clauses]`, `eval::clauses`):
/// `max(whole_weight × whole, the largest counted clause value)`, where a
/// clause counts for the tool when it is not done and the tool's score
/// reaches `min_share` of the clause's best. The feature's value in the
/// formula is [`KeywordClauses::value`], unless the argument-fill gate set
/// it to 0 ([`KeywordClauses::gated`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeywordClauses {
    /// The whole request's BM25 score of the tool, normalised by the best
    /// tool's, in \[0,1\].
    pub whole: f64,
    /// The factor of the whole request's score (`whole_weight`).
    pub whole_weight: f64,
    /// One entry per clause scored, in message order.
    pub clauses: Vec<ClauseTerm>,
    /// The index into `clauses` of the clause whose value counted, or
    /// `None` when the whole request's (`whole_weight × whole`) did.
    pub from: Option<usize>,
    /// `max(whole_weight × whole, every counted clause's value)`, in
    /// \[0,1\].
    pub value: f64,
    /// Whether the argument-fill gate (`[features.argument_fill]`) set the
    /// tool's `keyword_match` to 0 instead of `value`.
    pub gated: bool,
}

/// One clause's part in a tool's `keyword_match` ([`KeywordClauses`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClauseTerm {
    /// The clause as written in the message.
    pub text: String,
    /// The tool's BM25 score for the clause alone, normalised by the
    /// clause's best tool's, in \[0,1\].
    pub score: f64,
    /// The clause table's `weight`.
    pub weight: f64,
    /// `weight × score` when the clause counts for the tool, else 0.
    pub value: f64,
    /// Whether the clause is done (`done_share`: a tool the session called
    /// matched it), so it counts for no tool.
    pub done: bool,
    /// Whether `score` is below the table's `min_share`, so the clause
    /// does not count for this tool.
    pub below_min_share: bool,
}

impl Activation {
    /// Tool indices in report order: active tools first, then the higher
    /// score, the higher raw score, the name.
    pub fn ranked(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.tools.len()).collect();
        idx.sort_by(|&a, &b| {
            let (x, y) = (&self.tools[a], &self.tools[b]);
            y.active
                .cmp(&x.active)
                .then(y.score.total_cmp(&x.score))
                .then(y.raw_score.total_cmp(&x.raw_score))
                .then(self.plan.tools[a].name.cmp(&self.plan.tools[b].name))
        });
        idx
    }

    /// Names of the active tools in report order ([`Activation::ranked`]).
    pub fn ranked_active_names(&self) -> Vec<&str> {
        self.ranked()
            .into_iter()
            .filter(|&i| self.tools[i].active)
            .map(|i| self.plan.tools[i].name.as_str())
            .collect()
    }

    /// One tool of the report: `{"name", "score", "raw_score", "active",
    /// "reason", "terms": {KEY: {"term", "value", "weight", "contribution"}}}`,
    /// keyed by [`term_key`].
    ///
    /// When the request was cut into clauses, the `keyword_match` term
    /// also holds `"clauses"`: [`KeywordClauses`] (`whole`, `whole_weight`,
    /// `clauses`: `[{text, score, weight, value, done, below_min_share}]`,
    /// `from`, `value`, `gated`), every part of the feature's value.
    pub fn tool_json(&self, tool: usize) -> Value {
        let s = &self.tools[tool];
        let mut terms = Map::new();
        let clauses = self.keyword_clauses(tool);
        for (k, e) in self.explain(tool).into_iter().enumerate() {
            let mut term = json!({"term": e.term, "value": e.value, "weight": e.weight, "contribution": e.contribution});
            if let (Some(c), Some("keyword_match"), Value::Object(m)) =
                (&clauses, e.feature, &mut term)
            {
                m.insert("clauses".into(), json!(c));
            }
            terms.insert(term_key(&e, k), term);
        }
        let mut v = json!({
            "name": self.plan.tools[tool].name,
            "score": s.score,
            "raw_score": s.raw_score,
            "active": s.active,
            "reason": s.reason,
            "terms": terms,
        });
        // `[features.argument_fill]`: the tool's fill, when the gate read the request
        if let (Some(f), Some(af), Value::Object(m)) =
            (self.argument_fill(tool), &self.plan.argument_fill, &mut v)
        {
            m.insert(
                "argument_fill".into(),
                json!({"filled": f.filled, "required": f.required, "missing": f.missing,
                       "passes": af.passes_fill(&f)}),
            );
        }
        v
    }

    /// How tool `tool`'s `keyword_match` came out of the clauses of the
    /// latest message ([`KeywordClauses`]); `None` when the request was not
    /// cut into clauses (no `[features.keyword_match.clauses]`, no message
    /// text, fewer than two clauses) or `keyword_match` does not use BM25.
    pub fn keyword_clauses(&self, tool: usize) -> Option<KeywordClauses> {
        let c = &self.prepared.clauses;
        let idx = self.plan.bm25.as_ref()?;
        if c.texts.is_empty() || tool >= self.tools.len() {
            return None;
        }
        let whole = self.prepared.bm25.normalized(&idx.params, tool);
        let mut best = c.whole_weight * whole;
        let mut from = None;
        let clauses = c
            .texts
            .iter()
            .zip(c.scores.iter())
            .enumerate()
            .map(|(k, (text, s))| {
                let score = s.normalized(&idx.params, tool);
                let done = c.done.contains(&(k as u16));
                let below_min_share = score < c.min_share;
                let counts = !done && !below_min_share && s.raw[tool] > 0.0;
                let value = if counts { c.weight * score } else { 0.0 };
                if value > 0.0 && value > best {
                    best = value;
                    from = Some(k);
                }
                ClauseTerm {
                    text: text.clone(),
                    score,
                    weight: c.weight,
                    value,
                    done,
                    below_min_share,
                }
            })
            .collect();
        Some(KeywordClauses {
            whole,
            whole_weight: c.whole_weight,
            clauses,
            from,
            value: best,
            gated: self.prepared.unfilled.get(tool).copied().unwrap_or(false),
        })
    }

    /// The report's header: policy, threshold and effective threshold, cold
    /// start, total calls, domain weights, rules applied, intent terms,
    /// the clauses the latest message was cut into (`"clauses"`: `[{text,
    /// done}]`, empty when it was not cut), warnings.
    pub fn header_json(&self) -> Map<String, Value> {
        let plan = &self.plan;
        let dw: Map<String, Value> = plan
            .domains
            .iter()
            .zip(self.domain_weights())
            .map(|(d, w)| (d.clone(), json!(w)))
            .collect();
        let v = json!({
            "policy": plan.policy_name,
            "threshold": self.threshold,
            "effective_threshold": self.effective_threshold,
            "cold_start": self.cold_start,
            "total_calls": self.total_calls,
            "domain_weights": dw,
            "rules_applied": self.rule_names(),
            "intent_terms": self.intent_terms,
            "clauses": self
                .clauses()
                .into_iter()
                .map(|(text, done)| json!({"text": text, "done": done}))
                .collect::<Vec<_>>(),
            "warnings": self.warnings,
        });
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    /// The whole report of `toolgate eval --format json`: the header, then
    /// `"active"` (names in report order) and `"tools"` (every tool, in
    /// report order, as [`Activation::tool_json`]).
    pub fn report_json(&self) -> Value {
        let mut m = self.header_json();
        m.insert("active".into(), json!(self.ranked_active_names()));
        m.insert(
            "tools".into(),
            Value::Array(
                self.ranked()
                    .into_iter()
                    .map(|i| self.tool_json(i))
                    .collect(),
            ),
        );
        Value::Object(m)
    }
}

/// The key of the `k`-th (0-based) term of an explanation in a report: the
/// feature's name for a single-feature term, else `term_{k+1}`.
pub fn term_key(e: &TermExplanation, k: usize) -> String {
    e.feature
        .map(String::from)
        .unwrap_or_else(|| format!("term_{}", k + 1))
}
