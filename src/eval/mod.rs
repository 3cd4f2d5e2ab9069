//! Evaluate: score every tool of a plan for one session context.
//!
//! Per evaluation, the context is prepared once: domain rules run and the
//! domain weights are normalised (seed 000 `_infer_domain_weights`), intent
//! keywords become a bitset over the plan's keyword vocabulary, usage is
//! resolved to tool indices. Then each tool costs a handful of array reads and
//! the lowered formula. Time is an input (`now`), never read here.

pub(crate) mod clauses;
pub mod condition;
pub mod formula;
pub mod report;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::Serialize;

use crate::parse::policy::{KeywordMethod, UsageNormalization};
use crate::plan::{
    F_COMPLEXITY, F_DOMAIN, F_KEYWORD, F_PRIORITY, F_RECENCY, F_SEMANTIC, F_STAGE, F_TRANSITION,
    F_USAGE, FEATURES, Plan,
};
use crate::text::bm25::Scored;

use crate::context::{SessionContext, UsageStats};
use condition::Facts;

/// Why a tool is (or is not) in the active set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Score ≥ effective threshold.
    AboveThreshold,
    /// Below the threshold but within the hysteresis margin of a tool that was active.
    Hysteresis,
    /// Pinned by the policy.
    Pinned,
    /// Added to reach `min_active`.
    MinActive,
    /// Score < effective threshold.
    BelowThreshold,
    /// Above the threshold but cut by `max_active`.
    MaxActive,
    /// The formula produced NaN for this tool (see the activation's warnings).
    InvalidScore,
}

/// One tool's result.
#[derive(Debug, Clone, Copy)]
pub struct ToolScore {
    /// Index into the plan's tools.
    pub tool: usize,
    /// Clamped score.
    pub score: f64,
    /// Score before the clamp (the sum of the term contributions).
    pub raw_score: f64,
    /// Whether the tool is exposed.
    pub active: bool,
    /// Why.
    pub reason: Reason,
}

impl ToolScore {
    /// The order of "better first": the higher (clamped) score, then — among
    /// tools the clamp ties (every raw score from the clamp's top up becomes
    /// that top) — the higher raw score, then the earlier catalog index. The
    /// `max_active` cut, `min_active`, the proxy's search results and the
    /// replay's ranks all use it. (The seed has no top-k, so its vectors do
    /// not depend on it.)
    pub fn better_first(a: &ToolScore, b: &ToolScore) -> std::cmp::Ordering {
        b.score
            .total_cmp(&a.score)
            .then(b.raw_score.total_cmp(&a.raw_score))
            .then(a.tool.cmp(&b.tool))
    }
}

/// What one evaluation prepared from the context, shared by all tools: the
/// normalised domain weights, the intent-term bitset, per-tool usage and
/// recency, the stage bit. Kept in the [`Activation`] so that explanations can
/// recompute any tool's features without storing them for every tool.
#[derive(Debug, Clone)]
struct Prepared {
    norm: Vec<f64>,
    norm_total: f64,
    domain_neutral: bool,
    bits: Vec<u64>,
    n_intent: u32,
    /// Per tool: (usage_bonus, recency_bonus).
    usage: Vec<[f64; 2]>,
    stage_bit: u64,
    /// Raw BM25 scores per tool and the normalisation, when `keyword_match` uses BM25.
    bm25: Scored,
    /// Per-clause BM25 values (`[features.keyword_match.clauses]`; empty = none).
    clauses: clauses::ClauseMatch,
    /// `transition_match` per tool (empty = 0 for every tool).
    transition: Vec<f64>,
    /// `semantic_match` per tool (empty = 0 for every tool).
    semantic: Vec<f64>,
    /// Whether the "nothing fits" gate fired (`min_cosine`).
    nothing_fits: bool,
    /// `[features.argument_fill]`: per tool, whether the request lacks
    /// values for its required parameters (empty = the gate is off or the
    /// context has no message text).
    unfilled: Vec<bool>,
    /// What the request holds, as the argument-fill gate read it.
    fill_request: Option<Arc<crate::text::argument_fill::RequestValues>>,
}

impl Prepared {
    /// The feature values of tool `i`, in [`FEATURES`] order.
    #[inline(always)]
    fn features(&self, plan: &Plan, i: usize) -> [f64; FEATURES.len()] {
        let fp = &plan.features;
        let t = &plan.hot[i];
        let mut f = [0.0f64; FEATURES.len()];
        f[F_DOMAIN] = if self.domain_neutral {
            fp.domain_neutral
        } else {
            let mut matched = 0.0;
            let start = t.domains_start as usize;
            for &d in &plan.hot_domains[start..start + t.domains_len as usize] {
                matched += self.norm[d as usize];
            }
            matched / self.norm_total
        };
        let n_kw = t.keywords_len as u32;
        f[F_KEYWORD] = if fp.keyword_method == KeywordMethod::Bm25 {
            match &plan.bm25 {
                Some(idx) => self
                    .clauses
                    .combine(i, self.bm25.normalized(&idx.params, i)),
                None => 0.0,
            }
        } else if n_kw == 0 || self.n_intent == 0 {
            0.0
        } else {
            let mut inter = 0u32;
            let start = t.keywords_start as usize;
            for &id in &plan.hot_keywords[start..start + n_kw as usize] {
                inter += ((self.bits[(id / 64) as usize] >> (id % 64)) & 1) as u32;
            }
            match fp.keyword_method {
                KeywordMethod::Jaccard => inter as f64 / (n_kw + self.n_intent - inter) as f64,
                KeywordMethod::Containment | KeywordMethod::Bm25 => inter as f64 / n_kw as f64,
            }
        };
        f[F_STAGE] = if t.stage_mask & self.stage_bit != 0 {
            fp.stage_hit
        } else {
            fp.stage_miss
        };
        let [usage, recency] = self.usage[i];
        f[F_USAGE] = usage;
        f[F_PRIORITY] = t.base_priority;
        f[F_COMPLEXITY] = t.complexity_penalty;
        f[F_RECENCY] = recency;
        f[F_TRANSITION] = self.transition.get(i).copied().unwrap_or(0.0);
        f[F_SEMANTIC] = self.semantic.get(i).copied().unwrap_or(0.0);
        if self.unfilled.get(i).copied().unwrap_or(false) {
            // `[features.argument_fill]`: the request holds no value for
            // enough of this tool's required parameters.
            f[F_KEYWORD] = 0.0;
            f[F_SEMANTIC] = 0.0;
        }
        f
    }
}

/// The result of one evaluation: every tool's score and the active set.
#[derive(Debug, Clone)]
pub struct Activation {
    /// The plan that produced it.
    pub plan: Arc<Plan>,
    /// The policy's threshold.
    pub threshold: f64,
    /// The threshold applied (lowered during cold start).
    pub effective_threshold: f64,
    /// Whether cold start applied (fewer than `min_calls` calls in the session).
    pub cold_start: bool,
    /// Calls made in the session.
    pub total_calls: u64,
    /// Indices (into the plan's `rules`) of the domain rules that applied; see [`Activation::rule_names`].
    pub rules_applied: Vec<usize>,
    /// Distinct intent terms used for keyword matching.
    pub intent_terms: Vec<String>,
    /// Problems met while evaluating (a rule expression that failed, a NaN score).
    pub warnings: Vec<String>,
    /// One entry per tool, in catalog order.
    pub tools: Vec<ToolScore>,
    prepared: Prepared,
    /// How many of `warnings` came from preparing the context (the rest
    /// from scoring).
    prepare_warnings: usize,
}

/// What [`Plan::prepare`] computes once per context, before any tool is
/// scored: the shared part of an evaluation.
struct Head {
    prepared: Prepared,
    warnings: Vec<String>,
    rules_applied: Vec<usize>,
    terms: Vec<String>,
    total_calls: u64,
}

/// The features of every tool for one context, without the scores
/// ([`Plan::features_for`]): what the weight fit's first replay reads, at a
/// fraction of an evaluation's cost on a large catalog (only the tools
/// asked for are computed).
#[derive(Debug, Clone)]
pub struct FeatureView {
    plan: Arc<Plan>,
    prepared: Prepared,
    /// The threshold applied, over the policy's threshold: the cold-start
    /// factor when cold start applies, else 1 (1 too when the policy's
    /// threshold is 0).
    pub threshold_factor: f64,
}

impl FeatureView {
    /// The feature values of tool `tool` (an index into the plan's tools),
    /// in [`FEATURES`] order: the same values as [`Activation::features`]
    /// of an evaluation of the same context.
    pub fn features(&self, tool: usize) -> [f64; FEATURES.len()] {
        self.prepared.features(&self.plan, tool)
    }

    /// The clamped score of tool `tool`: the same bits as the
    /// [`ToolScore::score`] of an evaluation of the same context (the lower
    /// clamp for a NaN).
    pub fn score(&self, tool: usize) -> f64 {
        let plan = &self.plan;
        let f = self.features(tool);
        let raw = match plan.formula.linear.as_deref().filter(|l| !l.is_empty()) {
            Some(lin) => {
                let (&(f0, w0), rest) = lin.split_first().expect("non-empty");
                let mut sum = w0 * f[f0 as usize];
                for &(k, w) in rest {
                    sum += w * f[k as usize];
                }
                sum
            }
            None => plan.formula.eval(&f, None),
        };
        let (lo, hi) = plan.clamp;
        if raw.is_nan() {
            lo
        } else {
            raw.min(hi).max(lo)
        }
    }
}

/// One term of a score explanation.
#[derive(Debug, Clone, Serialize)]
pub struct TermExplanation {
    /// The term as written in the formula.
    pub term: String,
    /// The feature it reads, when it reads exactly one.
    pub feature: Option<&'static str>,
    /// That feature's value.
    pub value: Option<f64>,
    /// The constant weight of a `weight * feature` term (signed).
    pub weight: Option<f64>,
    /// The signed contribution to the raw score.
    pub contribution: f64,
}

/// Added and removed tools between two activations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ActivationDiff {
    /// Active now, not before.
    pub added: Vec<String>,
    /// Active before, not now.
    pub removed: Vec<String>,
}

impl ActivationDiff {
    /// Whether nothing changed (no `notifications/tools/list_changed` needed).
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

impl Activation {
    /// The score of the tool called `name` (or an alias of it).
    pub fn get(&self, name: &str) -> Option<&ToolScore> {
        self.plan.tool_index(name).map(|i| &self.tools[i])
    }

    /// Names of the active tools, in catalog order.
    pub fn active_names(&self) -> Vec<&str> {
        self.tools
            .iter()
            .filter(|t| t.active)
            .map(|t| self.plan.tools[t.tool].name.as_str())
            .collect()
    }

    /// The set of active names.
    pub fn active_set(&self) -> BTreeSet<String> {
        self.active_names().into_iter().map(String::from).collect()
    }

    /// Tools added and removed since `previous` (which may come from another plan).
    pub fn diff(&self, previous: &Activation) -> ActivationDiff {
        let now = self.active_set();
        let before = previous.active_set();
        ActivationDiff {
            added: now.difference(&before).cloned().collect(),
            removed: before.difference(&now).cloned().collect(),
        }
    }

    /// Names of the domain rules that applied, in rule order.
    pub fn rule_names(&self) -> Vec<&str> {
        self.rules_applied
            .iter()
            .map(|&k| self.plan.rules[k].name.as_str())
            .collect()
    }

    /// Normalised domain weights, in the plan's domain order (empty when the
    /// neutral domain match applied).
    pub fn domain_weights(&self) -> &[f64] {
        if self.prepared.domain_neutral {
            &[]
        } else {
            &self.prepared.norm
        }
    }

    /// The feature values of tool `tool` (an index into the plan's tools), in
    /// [`FEATURES`] order, as this evaluation computed them.
    pub fn features(&self, tool: usize) -> [f64; FEATURES.len()] {
        self.prepared.features(&self.plan, tool)
    }

    /// Whether the "nothing fits" gate (`[features.semantic_match]
    /// min_cosine`) fired for this request: no tool's raw cosine reached
    /// it, so `keyword_match` and `semantic_match` are 0 for every tool.
    pub fn nothing_fits(&self) -> bool {
        self.prepared.nothing_fits
    }

    /// How the request fills tool `tool`'s required parameters
    /// (`[features.argument_fill]`): `None` when the gate is off or the
    /// context carries no message text. A tool whose fill is below
    /// `min_fraction` has `keyword_match` and `semantic_match` 0.
    pub fn argument_fill(&self, tool: usize) -> Option<crate::text::argument_fill::Fill> {
        let af = self.plan.argument_fill.as_ref()?;
        let req = self.prepared.fill_request.as_ref()?;
        Some(af.fill(req, tool))
    }

    /// How many tools the argument-fill gate took the request terms from
    /// (0 when it is off).
    pub fn unfilled_count(&self) -> usize {
        self.prepared.unfilled.iter().filter(|&&u| u).count()
    }

    /// The raw BM25 score of tool `tool` (before the relevance floors and the
    /// relative normalisation); 0 when `keyword_match` does not use BM25.
    pub fn keyword_raw(&self, tool: usize) -> f64 {
        self.prepared.bm25.raw.get(tool).copied().unwrap_or(0.0)
    }

    /// The clause of the latest message that gave tool `tool` its
    /// `keyword_match` (`[features.keyword_match.clauses]`), with that
    /// clause's value (`weight` × its normalised BM25 score): `Some` only
    /// when the request was cut into clauses and a clause scored the tool
    /// above the whole request did. `None` otherwise.
    pub fn keyword_clause(&self, tool: usize) -> Option<(&str, f64)> {
        let c = &self.prepared.clauses;
        let v = c.value(tool);
        let whole = match &self.plan.bm25 {
            Some(idx) => self.prepared.bm25.normalized(&idx.params, tool),
            None => return None,
        };
        (v > 0.0 && v > c.whole_weight * whole)
            .then(|| (c.texts[c.from[tool] as usize].as_str(), v))
    }

    /// The clauses the latest message was cut into and scored
    /// (`[features.keyword_match.clauses]`), in message order, each with
    /// whether it is done (`done_share`: a tool the session called matched
    /// it, so it no longer counts); empty when the request was not cut.
    pub fn clauses(&self) -> Vec<(&str, bool)> {
        let c = &self.prepared.clauses;
        c.texts
            .iter()
            .enumerate()
            .map(|(k, t)| (t.as_str(), c.done.contains(&(k as u16))))
            .collect()
    }

    /// The IDF-weighted coverage and the share of the attainable score of
    /// tool `tool`, each in \[0,1\], as the relevance floors
    /// (`[features.keyword_match.relevance]`) see them; `(0, 0)` when
    /// `keyword_match` does not use BM25 or the policy has no relevance table.
    pub fn keyword_relevance(&self, tool: usize) -> (f64, f64) {
        match &self.plan.bm25 {
            Some(idx) if idx.params.relevance.is_some() => (
                self.prepared.bm25.coverage(&idx.params, tool),
                self.prepared.bm25.share(&idx.params, tool),
            ),
            _ => (0.0, 0.0),
        }
    }

    /// The same context evaluated under `plan`, with `previous` (an
    /// activation of `plan`, or of another plan with the same catalog) for
    /// hysteresis: the features are this activation's, only the scores and
    /// the active set are computed again. `plan` must differ from this
    /// activation's plan at most in the formula's weights and in
    /// `[activation]` (threshold, margins, set controls, cold start), as a
    /// policy the weight fit rewrites does: then the result is the same as
    /// `plan.evaluate_with_previous` of the same context, for less work.
    pub fn rescore(&self, plan: &Arc<Plan>, previous: Option<&Activation>) -> Activation {
        debug_assert_eq!(plan.tools.len(), self.plan.tools.len());
        let head = Head {
            prepared: self.prepared.clone(),
            warnings: self.warnings[..self.prepare_warnings].to_vec(),
            rules_applied: self.rules_applied.clone(),
            terms: self.intent_terms.clone(),
            total_calls: self.total_calls,
        };
        plan.activate(head, previous)
    }

    /// Term-by-term explanation of a tool's raw score; the contributions add up
    /// (in order) to [`ToolScore::raw_score`].
    pub fn explain(&self, tool: usize) -> Vec<TermExplanation> {
        let features = self.features(tool);
        let mut contribs = Vec::with_capacity(self.plan.formula.terms.len());
        self.plan.formula.eval(&features, Some(&mut contribs));
        self.plan
            .formula
            .terms
            .iter()
            .zip(contribs)
            .map(|(t, c)| {
                let single = (t.features.len() == 1).then(|| t.features[0] as usize);
                TermExplanation {
                    term: if t.sign < 0.0 {
                        format!("-({})", t.text)
                    } else {
                        t.text.clone()
                    },
                    feature: single.map(|f| FEATURES[f]),
                    value: single.map(|f| features[f]),
                    weight: t.linear.map(|(_, w)| w * t.sign),
                    contribution: c,
                }
            })
            .collect()
    }
}

impl Plan {
    /// Scores every tool for `context` and `usage` at time `now` (seconds, on
    /// the clock of `usage.last_call_at`) and decides the active set.
    pub fn evaluate(
        self: &Arc<Self>,
        context: &SessionContext,
        usage: &UsageStats,
        now: f64,
    ) -> Activation {
        self.evaluate_with_previous(context, usage, now, None)
    }

    /// As [`Plan::evaluate`], with the previous activation of the same session
    /// for hysteresis (`activation.hysteresis_margin`).
    pub fn evaluate_with_previous(
        self: &Arc<Self>,
        context: &SessionContext,
        usage: &UsageStats,
        now: f64,
        previous: Option<&Activation>,
    ) -> Activation {
        let _span = tracing::debug_span!("evaluate", tools = self.tools.len()).entered();
        let head = self.prepare(context, usage, now);
        self.activate(head, previous)
    }

    /// The features of every tool for `context` and `usage` at time `now`,
    /// as [`Plan::evaluate`] computes them, without scoring any tool: the
    /// caller asks for the tools it needs ([`FeatureView`]).
    pub fn features_for(
        self: &Arc<Self>,
        context: &SessionContext,
        usage: &UsageStats,
        now: f64,
    ) -> FeatureView {
        let head = self.prepare(context, usage, now);
        let threshold_factor = match self.cold_start {
            Some((min_calls, factor)) if head.total_calls < min_calls && self.threshold > 0.0 => {
                (self.threshold * factor) / self.threshold
            }
            _ => 1.0,
        };
        FeatureView {
            plan: self.clone(),
            prepared: head.prepared,
            threshold_factor,
        }
    }

    /// The context's evaluation prepared once for all tools.
    fn prepare(self: &Arc<Self>, context: &SessionContext, usage: &UsageStats, now: f64) -> Head {
        let fp = &self.features;
        let mut warnings = Vec::new();

        // Intent terms and their bitset over the vocabulary (once per context).
        let mut terms: Vec<String> = Vec::with_capacity(context.user_intent_keywords.len());
        let mut seen: Option<rustc_hash::FxHashSet<String>> = None; // only for long lists
        for k in &context.user_intent_keywords {
            let mut j = terms.len();
            self.analyzer.expand_into(k, &mut terms);
            while j < terms.len() {
                let t = &terms[j];
                let dup = match &mut seen {
                    Some(set) => !set.insert(t.clone()),
                    None if j < 32 => terms[..j].contains(t),
                    None => {
                        let set = seen.insert(terms[..j].iter().cloned().collect());
                        !set.insert(t.clone())
                    }
                };
                if dup {
                    terms.remove(j);
                } else {
                    j += 1;
                }
            }
        }
        // Conversation memory: for set methods, the remembered messages' terms
        // join the intent set (BM25 weighs them instead, below).
        let remembered: Vec<(&[String], f64)> = match &self.memory {
            Some(m) => context
                .previous_intent_keywords
                .iter()
                .take(m.turns)
                .enumerate()
                .map(|(k, kw)| (kw.as_slice(), m.decay.powi(k as i32 + 1)))
                .collect(),
            None => Vec::new(),
        };
        if fp.keyword_method != KeywordMethod::Bm25 {
            for (kw, w) in &remembered {
                if *w <= 0.0 {
                    continue;
                }
                for k in *kw {
                    for t in self.analyzer.expand_keyword(k) {
                        if !terms.contains(&t) {
                            terms.push(t);
                        }
                    }
                }
            }
        }
        let mut bits = vec![0u64; self.vocab.len().div_ceil(64)];
        for t in &terms {
            if let Some(&id) = self.vocab.get(t) {
                bits[(id / 64) as usize] |= 1 << (id % 64);
            }
        }

        // Domain weights (once per context).
        let facts = Facts::new(context, usage, &terms, &bits);
        let mut w = self.domain_base.clone();
        let mut rules_applied = Vec::new();
        for (k, r) in self.rules.iter().enumerate() {
            let (holds, err) = r.condition.holds(&facts);
            if let Some(e) = err {
                warnings.push(format!("rule `{}`: {e}", r.name));
            }
            if holds {
                for (d, delta) in &r.adjust {
                    w[*d] += delta;
                }
                rules_applied.push(k);
            }
        }
        let total_calls = facts.total_calls;
        drop(facts);
        let total: f64 = w.iter().sum();
        let (norm, norm_total) = if w.is_empty() || total == 0.0 {
            (Vec::new(), 0.0)
        } else {
            for x in w.iter_mut() {
                *x /= total;
            }
            let t: f64 = w.iter().sum();
            (w, t)
        };
        let domain_neutral = norm.is_empty() || norm_total == 0.0;

        // BM25 keyword scores (once per context), when the policy uses them.
        let mut bm25_scores = Scored::default();
        let mut clause_match = clauses::ClauseMatch::default();
        if let (Some(idx), KeywordMethod::Bm25) = (&self.bm25, fp.keyword_method) {
            let mut turns: Vec<(&[String], f64)> = Vec::with_capacity(1 + remembered.len());
            turns.push((&terms, 1.0));
            turns.extend(remembered.iter().copied());
            let q = idx.query(&self.analyzer, &turns);
            idx.score_query(&q.terms, q.unknown_mass, &mut bm25_scores);
            if let Some(cp) = &idx.params.clauses {
                clause_match = clauses::score(self, idx, cp, context, &remembered);
            }
        }

        // Transitions from the last call (once per context).
        let n = self.tools.len();
        let mut transition = Vec::new();
        if let (Some(tr), Some(last)) = (&self.transitions, context.recent_tool_calls.last())
            && let Some(a) = self.tool_index(last)
        {
            transition = vec![0.0f64; n];
            let lambda = tr.backoff[a];
            if lambda > 0.0 {
                for (x, q) in transition.iter_mut().zip(&tr.prior) {
                    *x = lambda * q;
                }
            }
            for &(b, p) in &tr.sparse[a] {
                transition[b as usize] += p;
            }
            for &b in &tr.followers[a] {
                let x = &mut transition[b as usize];
                *x = x.max(tr.declared);
            }
        }

        // Semantic match (once per context): the latest message and the
        // remembered ones, weighted as BM25 weighs them; each turn's
        // keywords, or its text as written (`input = "message"`) where the
        // context carries it.
        let mut semantic = Vec::new();
        let mut fits = true;
        if let Some(sem) = &self.semantic {
            let mut turns: Vec<(&[String], f64)> = Vec::with_capacity(1 + remembered.len());
            turns.push((&context.user_intent_keywords, 1.0));
            turns.extend(remembered.iter().copied());
            if sem.input == crate::parse::selection::SemanticInput::Message {
                let texts = std::iter::once(context.user_message.as_ref())
                    .chain(context.previous_user_messages.iter().map(Some));
                for ((words, _), text) in turns.iter_mut().zip(texts) {
                    if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
                        *words = std::slice::from_ref(text);
                    }
                }
            }
            fits = sem.fits(&turns, &mut semantic);
            if !fits {
                // "Nothing fits" (`min_cosine`): no tool gets a term from
                // the request, neither semantic nor keyword (any method).
                semantic.clear();
                bm25_scores.divisor = 0.0;
                clause_match = clauses::ClauseMatch::default();
            }
        }

        // Argument fill (once per context): which tools' required
        // parameters the latest messages hold no values for.
        let mut unfilled = Vec::new();
        let mut fill_request = None;
        if let Some(af) = &self.argument_fill
            && let Some(text) = context
                .user_message
                .as_deref()
                .filter(|t| !t.trim().is_empty())
        {
            let mut all = text.to_string();
            for prev in context.previous_user_messages.iter().take(af.turns) {
                all.push('\n');
                all.push_str(prev);
            }
            let req = af.request(&all);
            unfilled = (0..n).map(|i| !af.passes(&req, i)).collect();
            fill_request = Some(Arc::new(req));
        }

        // Usage (once per context, only the tools that were used).
        let mut per_tool = vec![[0.0f64; 2]; n];
        match fp.usage_normalization {
            UsageNormalization::BusiestTool => {
                let max_usage = usage
                    .call_counts
                    .values()
                    .copied()
                    .max()
                    .unwrap_or(1)
                    .max(1) as f64;
                for (name, &c) in &usage.call_counts {
                    if let Some(i) = self.tool_index(name) {
                        let norm = c as f64 / max_usage;
                        per_tool[i][0] = (norm * fp.usage_multiplier).min(fp.usage_cap);
                    }
                }
            }
            UsageNormalization::Frequency => {
                for (name, &f) in &usage.usage_frequency {
                    if let Some(i) = self.tool_index(name) {
                        if f.is_finite() {
                            per_tool[i][0] = (f * fp.usage_multiplier).min(fp.usage_cap);
                        } else {
                            warnings.push(format!(
                                "usage frequency of `{name}` is not finite; ignored"
                            ));
                        }
                    }
                }
            }
        }
        for (name, &at) in &usage.last_call_at {
            // the time test first: most calls of a long session are outside the window
            if now - at < fp.recency_window_seconds
                && let Some(i) = self.tool_index(name)
            {
                per_tool[i][1] = fp.recency_bonus;
            }
        }
        let stage_bit = context
            .conversation_stage
            .as_deref()
            .and_then(|s| self.stage_index(s))
            .map(|i| 1u64 << i)
            .unwrap_or(0);
        let prepared = Prepared {
            norm,
            norm_total,
            domain_neutral,
            bits,
            n_intent: if fits { terms.len() as u32 } else { 0 },
            usage: per_tool,
            stage_bit,
            bm25: bm25_scores,
            clauses: clause_match,
            transition,
            semantic,
            nothing_fits: !fits,
            unfilled,
            fill_request,
        };

        Head {
            prepared,
            warnings,
            rules_applied,
            terms,
            total_calls,
        }
    }

    /// Scores every tool of a prepared context and decides the active set.
    fn activate(self: &Arc<Self>, head: Head, previous: Option<&Activation>) -> Activation {
        let Head {
            prepared,
            mut warnings,
            rules_applied,
            terms,
            total_calls,
        } = head;
        let prepare_warnings = warnings.len();
        let n = self.tools.len();
        // Threshold.
        let (cold_start, effective_threshold) = match self.cold_start {
            Some((min_calls, factor)) if total_calls < min_calls => (true, self.threshold * factor),
            _ => (false, self.threshold),
        };
        let was_active: Option<Vec<bool>> = previous.map(|p| {
            if Arc::ptr_eq(&p.plan, self) {
                p.tools.iter().map(|t| t.active).collect()
            } else {
                let set = p.active_set();
                self.tools.iter().map(|t| set.contains(&t.name)).collect()
            }
        });

        // Per tool.
        let (lo, hi) = self.clamp;
        let mut out = Vec::with_capacity(n);
        let linear = self.formula.linear.as_deref().filter(|l| !l.is_empty());
        // Raw scores first. For the seed's shape (a sum of weight * feature,
        // summed in order) two tools are summed side by side: each sum keeps
        // its exact left-to-right order, the two chains just overlap in time.
        let mut raws = vec![0.0f64; n];
        match linear {
            Some(lin) => {
                let (&(f0, w0), rest) = lin.split_first().expect("non-empty");
                let mut i = 0;
                while i + 1 < n {
                    let fa = prepared.features(self, i);
                    let fb = prepared.features(self, i + 1);
                    let mut sa = w0 * fa[f0 as usize];
                    let mut sb = w0 * fb[f0 as usize];
                    for &(k, w) in rest {
                        sa += w * fa[k as usize];
                        sb += w * fb[k as usize];
                    }
                    raws[i] = sa;
                    raws[i + 1] = sb;
                    i += 2;
                }
                if i < n {
                    let f = prepared.features(self, i);
                    let mut sum = w0 * f[f0 as usize];
                    for &(k, w) in rest {
                        sum += w * f[k as usize];
                    }
                    raws[i] = sum;
                }
            }
            None => {
                for (i, r) in raws.iter_mut().enumerate() {
                    *r = self.formula.eval(&prepared.features(self, i), None);
                }
            }
        }
        for (i, &raw) in raws.iter().enumerate() {
            let (score, valid) = if raw.is_nan() {
                (lo, false)
            } else {
                (raw.min(hi).max(lo), true)
            };
            let (active, reason) = if !valid {
                warnings.push(format!(
                    "the formula gave NaN for `{}`; it is inactive",
                    self.tools[i].name
                ));
                (false, Reason::InvalidScore)
            } else if score >= effective_threshold {
                (true, Reason::AboveThreshold)
            } else if was_active.as_ref().is_some_and(|w| w[i])
                && score >= effective_threshold - self.hysteresis_margin
            {
                (true, Reason::Hysteresis)
            } else {
                (false, Reason::BelowThreshold)
            };
            out.push(ToolScore {
                tool: i,
                score,
                raw_score: raw,
                active,
                reason,
            });
        }

        // Set controls.
        for &p in &self.pinned {
            out[p].active = true;
            out[p].reason = Reason::Pinned;
        }
        if let Some(k) = self.max_active {
            let active_count = out.iter().filter(|t| t.active).count();
            if active_count > k {
                let mut order: Vec<usize> = out
                    .iter()
                    .filter(|t| t.active && t.reason != Reason::Pinned)
                    .map(|t| t.tool)
                    .collect();
                let keep = k.saturating_sub(self.pinned.len());
                // Only which tools fall after the first `keep` matters, and
                // `better_first` is a total order: a selection, not a sort.
                if keep < order.len() {
                    order.select_nth_unstable_by(keep, |a, b| {
                        ToolScore::better_first(&out[*a], &out[*b])
                    });
                }
                for &i in order.iter().skip(keep) {
                    out[i].active = false;
                    out[i].reason = Reason::MaxActive;
                }
            }
        }
        let active_count = out.iter().filter(|t| t.active).count();
        if active_count < self.min_active {
            let mut order: Vec<usize> = out
                .iter()
                .filter(|t| !t.active && t.reason != Reason::InvalidScore)
                .map(|t| t.tool)
                .collect();
            let add = self.min_active - active_count;
            // Which tools are the best `add` (a total order): a selection.
            if add < order.len() {
                order.select_nth_unstable_by(add, |a, b| {
                    ToolScore::better_first(&out[*a], &out[*b])
                });
            }
            for &i in order.iter().take(add) {
                out[i].active = true;
                out[i].reason = Reason::MinActive;
            }
        }

        let active = out.iter().filter(|t| t.active).count();
        tracing::debug!(active, effective_threshold, cold_start, "evaluated");
        Activation {
            plan: self.clone(),
            threshold: self.threshold,
            effective_threshold,
            cold_start,
            total_calls,
            rules_applied,
            intent_terms: terms,
            warnings,
            tools: out,
            prepared,
            prepare_warnings,
        }
    }
}
