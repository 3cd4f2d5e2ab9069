//! The JSON report of an [`Activation`], as `toolgate eval --format json` and
//! `toolgate explain --format json` print it and the Python package returns
//! it: one definition of the order of the tools, of each term's key and of
//! the header, for every front end.

use serde_json::{Map, Value, json};

use super::{Activation, TermExplanation};

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
    pub fn tool_json(&self, tool: usize) -> Value {
        let s = &self.tools[tool];
        let mut terms = Map::new();
        for (k, e) in self.explain(tool).into_iter().enumerate() {
            terms.insert(
                term_key(&e, k),
                json!({"term": e.term, "value": e.value, "weight": e.weight, "contribution": e.contribution}),
            );
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

    /// The report's header: policy, threshold and effective threshold, cold
    /// start, total calls, domain weights, rules applied, intent terms,
    /// warnings.
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
