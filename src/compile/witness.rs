//! Witnesses: a tool and a session that attain a bound (or break a property),
//! written as a ready `toolgate eval --input` object and checked by running it.
//!
//! A bound of [`super::bounds`] is *exact* when some tool and session reach
//! it. For the extreme combination of feature values ([`Corner`]), a witness
//! is built from the points' [`Recipe`]s: a context that fires the domain rules
//! the domain value needs (their languages, stages, keywords, recent tools,
//! file extensions), the tool's trigger keywords as the intent (or none), its
//! preferred stage, one call (the busiest tool) and a call 0 s ago. For the
//! policy scope the tool itself is made up (`toolgate.witness`, with the
//! domains, stage, keywords, priority and complexity the corner needs) and
//! given inline in the input's `tools`, with copies of the pinned tools so the
//! input loads; for the catalog scope it is the catalog's own tool. The
//! input is then evaluated exactly as `toolgate eval --input` would
//! ([`evaluate_input`]) and the witness kept only when the tool's raw score
//! equals the bound. Coupled features (a rule keyword that also counts as an
//! intent term, an `expr` condition, ...) can make a bound unreachable: then it
//! is reported as a bound only (`exact: false`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::context::SessionContext;
use crate::eval::Activation;
use crate::input::EvalInput;
use crate::parse::policy::{KeywordMethod, PolicySource, UsageNormalization};
use crate::plan::{
    F_COMPLEXITY, F_DOMAIN, F_KEYWORD, F_PRIORITY, F_RECENCY, F_STAGE, F_USAGE, N_FEATURES, Plan,
};

use super::bounds::{
    Corner, DomainWeights, FeatureRange, Interval, Recipe, clamp, extreme_corners, policy_ranges,
    raw_bounds, tool_ranges,
};

/// Name of the made-up tool of a policy-scope witness.
pub const WITNESS_TOOL: &str = "toolgate.witness";
/// Name of the second made-up tool of a monotonicity counterexample (the
/// feature at its lower value).
pub const BASELINE_TOOL: &str = "toolgate.baseline";
/// Name of the helper tool that carries the busiest usage when a witness
/// needs a usage share of 1/2.
pub const HELPER_TOOL: &str = "toolgate.busiest";
/// An intent term used when a witness needs one and the rules give none.
pub const FILLER_TERM: &str = "toolgatewitness";

/// A tool and a session that reach a value.
#[derive(Debug, Clone, Serialize)]
pub struct Witness {
    /// The tool it concerns.
    pub tool: String,
    /// A ready `toolgate eval --input` object (with `tools` when the tool is
    /// made up).
    pub input: Value,
    /// The tool's raw score on that input.
    pub raw_score: f64,
    /// Its clamped score.
    pub score: f64,
    /// Whether it is active.
    pub active: bool,
}

/// Bounds of the raw score, as `toolgate check` reports them.
#[derive(Debug, Clone, Serialize)]
pub struct ScoreBounds {
    /// `[lowest, highest]` raw score (sound: no tool and session goes beyond).
    pub raw: [f64; 2],
    /// The same, clamped.
    pub clamped: [f64; 2],
    /// Both ends are attained (the witnesses below reach them).
    pub exact: bool,
    /// Some inputs make the formula NaN.
    pub nan_possible: bool,
    /// A tool and session with the lowest raw score, when attained.
    pub lowest: Option<Witness>,
    /// A tool and session with the highest raw score, when attained.
    pub highest: Option<Witness>,
}

/// The settled shape of one witness tool: what its tags and usage must be.
#[derive(Debug, Clone)]
pub struct ToolWant {
    /// Its name.
    pub name: String,
    /// Declared domains (made-up tools only).
    pub domains: Vec<usize>,
    /// Share of its trigger terms in the intent: 0, 1/2 or 1 (1/2 only for
    /// made-up tools).
    pub keyword_share: f64,
    /// Its stage preferred (else not).
    pub stage_hit: bool,
    /// Normalised usage: 0, 1/2 or 1.
    pub usage_share: f64,
    /// Called 0 s ago.
    pub recent: bool,
    /// `base_priority` (made-up tools).
    pub priority: f64,
    /// `parameter_complexity` (made-up tools).
    pub complexity: i64,
}

fn close(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

fn id_terms(plan: &Plan) -> Vec<&str> {
    let mut v = vec![""; plan.vocab.len()];
    for (t, &id) in &plan.vocab {
        v[id as usize] = t.as_str();
    }
    v
}

/// A context in which exactly the domain rules `rules` are meant to apply
/// (those with an `expr` are left to chance), whose stage lies in `allowed`
/// (a stage bitmask; `need_stage` forbids no stage) and whose intent holds
/// `intent` plus one keyword of each rule that needs one, preferring terms of
/// `prefer` and avoiding those of `avoid`. `None` when the rules contradict
/// each other or the stage wish.
pub fn context_for(
    plan: &Plan,
    rules: &[usize],
    need_stage: bool,
    allowed: u64,
    intent: &[String],
    prefer: &[String],
    avoid: &[String],
) -> Option<SessionContext> {
    let terms = id_terms(plan);
    let conds: Vec<_> = rules.iter().map(|&k| &plan.rules[k].condition).collect();
    let pick = |lists: Vec<&Vec<String>>| -> Result<Option<String>, ()> {
        let mut lists = lists.into_iter().filter(|l| !l.is_empty());
        let Some(first) = lists.next() else {
            return Ok(None);
        };
        let rest: Vec<&Vec<String>> = lists.collect();
        first
            .iter()
            .find(|x| {
                rest.iter()
                    .all(|l| l.iter().any(|y| y.eq_ignore_ascii_case(x)))
            })
            .cloned()
            .map(Some)
            .ok_or(())
    };
    let language = pick(conds.iter().map(|c| &c.language).collect()).ok()?;
    let project_type = pick(conds.iter().map(|c| &c.project_type).collect()).ok()?;
    let stage_ok = |s: &str| {
        conds
            .iter()
            .all(|c| c.stage.is_empty() || c.stage.iter().any(|x| x.eq_ignore_ascii_case(s)))
    };
    let rules_need_stage = conds.iter().any(|c| !c.stage.is_empty());
    let stage = if need_stage || rules_need_stage {
        let i = (0..plan.stages.len())
            .find(|&i| allowed & (1u64 << i) != 0 && stage_ok(&plan.stages[i]))?;
        Some(plan.stages[i].clone())
    } else {
        None
    };
    let mut keywords: Vec<String> = Vec::new();
    let mut recent = Vec::new();
    let mut files = Vec::new();
    for c in &conds {
        if !c.keywords_any.is_empty() {
            let entry_terms = |ids: &Vec<u32>| {
                ids.iter()
                    .map(|&i| terms[i as usize].to_string())
                    .collect::<Vec<_>>()
            };
            let entries: Vec<Vec<String>> = c
                .keywords_any
                .iter()
                .filter(|e| !e.is_empty())
                .map(entry_terms)
                .collect();
            let best = entries
                .iter()
                .find(|e| e.iter().all(|t| prefer.contains(t)))
                .or_else(|| {
                    entries
                        .iter()
                        .find(|e| e.iter().all(|t| !avoid.contains(t)))
                })
                .or(entries.first())?;
            keywords.extend(best.iter().cloned());
        }
        if let Some(s) = c.recent_tools_contain.first() {
            recent.push(s.clone());
        }
        if let Some(e) = c.file_extensions.first() {
            files.push(format!("witness.{e}"));
        }
    }
    for t in intent {
        keywords.push(t.clone());
    }
    let mut seen = Vec::new();
    keywords.retain(|k| {
        if seen.contains(k) {
            false
        } else {
            seen.push(k.clone());
            true
        }
    });
    Some(SessionContext {
        user_intent_keywords: keywords,
        conversation_stage: stage,
        recent_tool_calls: recent,
        active_files: files,
        active_language: language,
        project_type,
        ..Default::default()
    })
}

/// A context as the `context` of an eval input, with only the keys that
/// differ from their defaults (an eval input may leave any key out).
pub fn context_json(ctx: &SessionContext) -> Value {
    let full = serde_json::to_value(ctx).unwrap_or_default();
    let Value::Object(map) = full else {
        return full;
    };
    let kept: serde_json::Map<String, Value> = map
        .into_iter()
        .filter(|(_, v)| match v {
            Value::Null => false,
            Value::Array(a) => !a.is_empty(),
            Value::Number(n) => n.as_f64() != Some(0.0),
            _ => true,
        })
        .collect();
    Value::Object(kept)
}

/// The usage part of an eval input giving each tool its share and recency.
fn usage_json(plan: &Plan, wants: &[ToolWant], helper: Option<&str>) -> (Value, bool) {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut freq: BTreeMap<String, f64> = BTreeMap::new();
    let mut ago: BTreeMap<String, f64> = BTreeMap::new();
    let mut needs_helper = false;
    let frequency = plan.features.usage_normalization == UsageNormalization::Frequency;
    for w in wants {
        if w.usage_share > 0.0 {
            if frequency {
                freq.insert(w.name.clone(), w.usage_share);
            } else if w.usage_share >= 1.0 {
                counts.insert(w.name.clone(), 2);
            } else {
                counts.insert(w.name.clone(), 1);
                needs_helper = true;
            }
        }
        if w.recent {
            ago.insert(w.name.clone(), 0.0);
        }
    }
    if needs_helper && let Some(h) = helper {
        // the busiest tool counts 2 calls (as a share of 1 does)
        counts.insert(h.to_string(), 2);
    }
    let mut u = serde_json::Map::new();
    if !counts.is_empty() {
        u.insert("call_counts".into(), json!(counts));
    }
    if !ago.is_empty() {
        u.insert("seconds_since_last_call".into(), json!(ago));
    }
    if !freq.is_empty() {
        u.insert("usage_frequency".into(), json!(freq));
    }
    (Value::Object(u), needs_helper)
}

/// An inline-tool JSON copy of catalog tool `i` (its effective tags).
pub fn tool_json(plan: &Plan, i: usize) -> Value {
    let t = &plan.tools[i];
    let stages: Vec<&str> = (0..plan.stages.len())
        .filter(|&s| t.stage_mask & (1u64 << s) != 0)
        .map(|s| plan.stages[s].as_str())
        .collect();
    let domains: Vec<&str> = t
        .domains
        .iter()
        .map(|&d| plan.domains[d as usize].as_str())
        .collect();
    json!({
        "name": t.name,
        "description": t.description,
        "domains": domains,
        "preferred_stages": stages,
        "trigger_keywords": t.trigger_keywords,
        "base_priority": t.base_priority,
        "parameter_complexity": t.parameter_complexity,
    })
}

/// The eval input of made-up tools `wants` in the context that fires `rules`
/// (policy scope). The tools' keywords and stages are fitted to the context.
pub fn made_up_input(plan: &Plan, rules: &[usize], wants: &[ToolWant]) -> Option<Value> {
    let need_stage = wants.iter().any(|w| w.stage_hit);
    let full = wants.iter().any(|w| w.keyword_share > 0.0);
    let all = if plan.stages.is_empty() {
        0
    } else {
        u64::MAX >> (64 - plan.stages.len())
    };
    let intent: Vec<String> = if full {
        vec![FILLER_TERM.to_string()]
    } else {
        vec![]
    };
    let ctx = context_for(plan, rules, need_stage, all, &intent, &[], &[])?;
    let mut tools = Vec::new();
    for w in wants {
        let mut triggers: Vec<String> = if w.keyword_share > 0.0 {
            ctx.user_intent_keywords.clone()
        } else {
            vec![]
        };
        if w.keyword_share > 0.0 && w.keyword_share < 1.0 {
            // as many terms again that the intent lacks: |T ∩ I| / |T ∪ I| = 1/2
            let n = triggers.len();
            triggers.extend((0..n).map(|k| format!("{FILLER_TERM}{}", k + 2)));
        }
        let stages: Vec<String> = match (&ctx.conversation_stage, w.stage_hit) {
            (Some(s), true) => vec![s.clone()],
            (None, true) => return None,
            _ => vec![],
        };
        let description = if plan.features.keyword_method == KeywordMethod::Bm25 {
            triggers.join(" ")
        } else {
            String::new()
        };
        tools.push(json!({
            "name": w.name,
            "description": description,
            "domains": w.domains.iter().map(|&d| plan.domains[d].as_str()).collect::<Vec<_>>(),
            "preferred_stages": stages,
            "trigger_keywords": triggers,
            "base_priority": w.priority,
            "parameter_complexity": w.complexity,
        }));
    }
    let (usage, helper) = usage_json(plan, wants, Some(HELPER_TOOL));
    if helper {
        tools.push(json!({
            "name": HELPER_TOOL,
            "base_priority": 0.0,
            "parameter_complexity": plan.features.complexity_min,
        }));
    }
    for &p in &plan.pinned {
        tools.push(tool_json(plan, p));
    }
    Some(json!({
        "context": context_json(&ctx),
        "usage": usage,
        "now": 0.0,
        "tools": tools,
    }))
}

/// The eval input for catalog tool `i` reaching the feature values of
/// `corner` (catalog scope, ranges from [`tool_ranges`]).
pub fn catalog_input(
    plan: &Plan,
    i: usize,
    ranges: &[FeatureRange; N_FEATURES],
    corner: &Corner,
) -> Option<Value> {
    let recipe = |f: usize| &ranges[f].points[corner.picks[f]].recipe;
    let rules: Vec<usize> = match recipe(F_DOMAIN) {
        Recipe::Domain { rules, .. } => rules.clone(),
        _ => vec![],
    };
    let full = matches!(recipe(F_KEYWORD), Recipe::Keyword { share } if *share > 0.0);
    let hit = matches!(recipe(F_STAGE), Recipe::Stage { hit: true });
    let share = match recipe(F_USAGE) {
        Recipe::Usage { share } => *share,
        _ => 0.0,
    };
    let recent = matches!(recipe(F_RECENCY), Recipe::Recency { recent: true });
    let t = &plan.tools[i];
    let terms = id_terms(plan);
    let mut own: Vec<String> = t
        .keyword_ids
        .iter()
        .map(|&id| terms[id as usize].to_string())
        .collect();
    if plan.features.keyword_method == KeywordMethod::Bm25 {
        own = plan.analyzer.extract(&t.name.replace(['.', '_', '-'], " "));
        own.extend(
            t.keyword_ids
                .iter()
                .map(|&id| terms[id as usize].to_string()),
        );
    }
    let all = if plan.stages.is_empty() {
        0
    } else {
        u64::MAX >> (64 - plan.stages.len())
    };
    let allowed = if hit {
        t.stage_mask
    } else {
        all & !t.stage_mask
    };
    let (intent, prefer, avoid) = if full {
        (own.clone(), own.clone(), vec![])
    } else {
        (vec![], vec![], own.clone())
    };
    let ctx = context_for(plan, &rules, hit, allowed, &intent, &prefer, &avoid)?;
    let want = ToolWant {
        name: t.name.clone(),
        domains: vec![],
        keyword_share: if full { 1.0 } else { 0.0 },
        stage_hit: hit,
        usage_share: if share > 0.0 { 1.0 } else { 0.0 },
        recent,
        priority: t.base_priority,
        complexity: t.parameter_complexity,
    };
    let (usage, _) = usage_json(plan, &[want], None);
    Some(json!({ "context": context_json(&ctx), "usage": usage, "now": 0.0 }))
}

/// Evaluates an eval input as `toolgate eval --input` does: with its inline
/// `tools` (compiled with `policy`, whose examples and properties are left
/// out), or else on `plan`. Errors: the input does not parse, load or resolve.
pub fn evaluate_input(
    policy: Option<&PolicySource>,
    plan: &Arc<Plan>,
    input: &Value,
) -> Result<Activation, String> {
    let parsed = EvalInput::from_json(input)?;
    let plan = match (&parsed.tools, policy) {
        (Some(tools), Some(policy)) => {
            let mut p = policy.clone();
            p.examples.clear();
            p.properties.clear();
            let specs = tools.iter().cloned().map(|t| t.into_spec()).collect();
            Arc::new(super::compile(&p, specs).map_err(|e| e.to_string())?)
        }
        (Some(_), None) => return Err("an input with tools needs the policy source".into()),
        (None, _) => plan.clone(),
    };
    let (ctx, usage, now) = parsed.resolve(&plan)?;
    Ok(plan.evaluate(&ctx, &usage, now))
}

/// Evaluates `input` and returns the witness for `tool` when its raw score is
/// `target` (within 1e-12, relative).
pub fn confirm(
    policy: Option<&PolicySource>,
    plan: &Arc<Plan>,
    input: Value,
    tool: &str,
    target: f64,
) -> Option<Witness> {
    let act = evaluate_input(policy, plan, &input).ok()?;
    let s = act.get(tool)?;
    close(s.raw_score, target).then(|| Witness {
        tool: tool.to_string(),
        input,
        raw_score: s.raw_score,
        score: s.score,
        active: s.active,
    })
}

/// The made-up tool for one corner of the policy scope.
pub fn want_of(
    ranges: &[FeatureRange; N_FEATURES],
    corner: &Corner,
    name: &str,
) -> (Vec<usize>, ToolWant) {
    let recipe = |f: usize| &ranges[f].points[corner.picks[f]].recipe;
    let (rules, domains) = match recipe(F_DOMAIN) {
        Recipe::Domain { rules, domains } => (rules.clone(), domains.clone()),
        _ => (vec![], vec![]),
    };
    let want = ToolWant {
        name: name.to_string(),
        domains,
        keyword_share: match recipe(F_KEYWORD) {
            Recipe::Keyword { share } => *share,
            _ => 0.0,
        },
        stage_hit: matches!(recipe(F_STAGE), Recipe::Stage { hit: true }),
        usage_share: match recipe(F_USAGE) {
            Recipe::Usage { share } => *share,
            _ => 0.0,
        },
        recent: matches!(recipe(F_RECENCY), Recipe::Recency { recent: true }),
        priority: match recipe(F_PRIORITY) {
            Recipe::Priority(p) => *p,
            _ => 0.0,
        },
        complexity: match recipe(F_COMPLEXITY) {
            Recipe::Complexity(c) => *c,
            _ => 1,
        },
    };
    (rules, want)
}

/// The policy-scope witness of `corner`, if it reaches `target`.
fn policy_witness(
    policy: &PolicySource,
    plan: &Arc<Plan>,
    ranges: &[FeatureRange; N_FEATURES],
    corner: &Corner,
    target: f64,
) -> Option<Witness> {
    let (rules, want) = want_of(ranges, corner, WITNESS_TOOL);
    let input = made_up_input(plan, &rules, &[want])?;
    confirm(Some(policy), plan, input, WITNESS_TOOL, target)
}

/// The raw-score bounds of any tool the policy admits, with witnesses for
/// the ends that are attained.
pub fn score_bounds(policy: &PolicySource, plan: &Arc<Plan>) -> ScoreBounds {
    let dw = DomainWeights::of(plan);
    let ranges = policy_ranges(plan, &dw, false);
    let b = raw_bounds(plan, &ranges);
    let (lo_c, hi_c) = extreme_corners(plan, &ranges);
    let end = |c: Option<Corner>, target: f64| {
        c.filter(|c| close(c.value, target))
            .and_then(|c| policy_witness(policy, plan, &ranges, &c, target))
    };
    let lowest = end(lo_c, b.raw.lo);
    let highest = end(hi_c, b.raw.hi);
    finish(plan, b.raw, lowest, highest)
}

fn finish(
    plan: &Plan,
    raw: Interval,
    lowest: Option<Witness>,
    highest: Option<Witness>,
) -> ScoreBounds {
    ScoreBounds {
        raw: [raw.lo, raw.hi],
        clamped: [clamp(plan, raw.lo), clamp(plan, raw.hi)],
        exact: lowest.is_some() && highest.is_some() && !raw.nan,
        nan_possible: raw.nan,
        lowest,
        highest,
    }
}

/// One catalog tool's bounds.
#[derive(Debug, Clone)]
pub struct ToolBounds {
    /// Its feature ranges.
    pub ranges: [FeatureRange; N_FEATURES],
    /// Its raw score's interval.
    pub raw: Interval,
    /// Its extreme combinations of feature values.
    pub corners: (Option<Corner>, Option<Corner>),
}

/// Bounds over the loaded catalog: each tool's, and the overall ones.
#[derive(Debug, Clone)]
pub struct CatalogBounds {
    /// Per tool, in catalog order; tools with the same bounds share them
    /// (see [`CatalogBounds::of`]).
    pub tools: Vec<Arc<ToolBounds>>,
    /// Over every tool, with witnesses.
    pub overall: ScoreBounds,
}

impl CatalogBounds {
    /// The bounds of every tool of `plan` (its tags fixed), and the overall
    /// bounds with witnesses.
    pub fn of(plan: &Arc<Plan>) -> Self {
        let dw = DomainWeights::of(plan);
        // A tool's bounds depend on the plan and on what `tool_ranges` reads
        // of the tool: its domains, whether it can match a keyword, whether
        // it prefers a stage, its base priority and complexity penalty.
        // Catalogs repeat these (auto-tagged tools share them), so each
        // distinct combination is computed once.
        type Key = (Vec<u16>, bool, bool, u64, u64);
        let bm25 = plan.features.keyword_method == crate::parse::policy::KeywordMethod::Bm25;
        let mut seen: rustc_hash::FxHashMap<Key, usize> = Default::default();
        let mut tools: Vec<Arc<ToolBounds>> = Vec::with_capacity(plan.tools.len());
        for (i, t) in plan.tools.iter().enumerate() {
            let key = (
                t.domains.clone(),
                bm25 || !t.keyword_ids.is_empty(),
                t.stage_mask != 0,
                t.base_priority.to_bits(),
                t.complexity_penalty.to_bits(),
            );
            if let Some(&j) = seen.get(&key) {
                let same = tools[j].clone();
                tools.push(same);
                continue;
            }
            let ranges = tool_ranges(plan, &dw, i);
            let raw = raw_bounds(plan, &ranges).raw;
            let corners = extreme_corners(plan, &ranges);
            seen.insert(key, i);
            tools.push(Arc::new(ToolBounds {
                ranges,
                raw,
                corners,
            }));
        }
        let raw = tools
            .iter()
            .map(|t| t.raw)
            .reduce(Interval::hull)
            .unwrap_or(Interval::nan_only());
        let mut cb = CatalogBounds {
            tools,
            overall: finish(plan, raw, None, None),
        };
        let lowest = cb.extreme_witness(plan, false, raw.lo);
        let highest = cb.extreme_witness(plan, true, raw.hi);
        cb.overall = finish(plan, raw, lowest, highest);
        cb
    }

    /// A witness of tool `i` at its highest (or lowest) raw score, when attained.
    pub fn tool_witness(&self, plan: &Arc<Plan>, i: usize, highest: bool) -> Option<Witness> {
        let tb = &self.tools[i];
        let (lo, hi) = &tb.corners;
        let (corner, target) = if highest {
            (hi.as_ref()?, tb.raw.hi)
        } else {
            (lo.as_ref()?, tb.raw.lo)
        };
        if !close(corner.value, target) {
            return None;
        }
        let input = catalog_input(plan, i, &tb.ranges, corner)?;
        confirm(None, plan, input, &plan.tools[i].name, target)
    }

    /// A session for tool `i` with its raw score at the corner's value, even
    /// when that is not the interval's end.
    pub fn corner_input(&self, plan: &Plan, i: usize, highest: bool) -> Option<(Value, f64)> {
        let tb = &self.tools[i];
        let corner = if highest {
            tb.corners.1.as_ref()?
        } else {
            tb.corners.0.as_ref()?
        };
        Some((catalog_input(plan, i, &tb.ranges, corner)?, corner.value))
    }

    fn extreme_witness(&self, plan: &Arc<Plan>, highest: bool, target: f64) -> Option<Witness> {
        // the tools whose own bound is the overall one, a few at most
        self.tools
            .iter()
            .enumerate()
            .filter(|(_, t)| close(if highest { t.raw.hi } else { t.raw.lo }, target))
            .take(8)
            .find_map(|(i, _)| self.tool_witness(plan, i, highest))
    }
}
