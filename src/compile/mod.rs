//! Compile: a parsed policy and a tool catalog become an immutable [`Plan`].
//!
//! Validation happens here for everything that spans more than one value:
//! formula names, domains and stages referenced by tags and rules, duplicate
//! tools, complexity ranges, pinned tools, and finally the policy's own
//! examples, which are evaluated against the new plan. Every problem is
//! reported, each with its file:line:column; nothing is compiled half-way.
//!
//! The parts: [`formula`] lowers the score formula, [`condition`] the domain
//! rules' conditions, [`gate`] (feature `gate`) reads `[gate]` and compiles
//! the danger patterns and each tool's schema; [`bounds`] bounds the raw score
//! by interval arithmetic ([`interval`]) and [`findings`] reports what follows
//! (an unreachable threshold fails the load); `properties` resolves the
//! declared `[[properties]]`; [`witness`] builds and evaluates the tools and
//! sessions that attain a bound or break a property; `examples` runs the policy's
//! `[[examples]]` on the new plan with evaluate and the call gate, so compile
//! sits above both runtimes (they only read a plan; nothing below compile
//! knows how plans are made).

pub mod bounds;
pub mod condition;
mod examples;
pub mod findings;
pub mod formula;
#[cfg(feature = "gate")]
pub mod gate;
pub mod interval;
mod properties;
pub mod selection;
pub mod witness;

use std::collections::HashMap;
use std::sync::Arc;

use crate::diag::{Diagnostic, ErrorKind, LoadError, Sink};
use crate::parse::policy::{AutoComplexity, PolicySource, Sp};
use crate::parse::tags::ToolSpec;
use crate::plan::{CompiledRule, CompiledTool, FEATURES, Plan};
use crate::text::bm25::{Bm25Index, ToolText};
use crate::text::keywords::Analyzer;

use crate::plan::condition::CompiledCondition;
use condition::{EXPR_FUNCTIONS, EXPR_VARIABLES, ExprError};
use formula::FormulaError;

fn fnv1a(hash: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *hash ^= *b as u64;
        *hash = hash.wrapping_mul(0x100000001b3);
    }
}

fn at(
    p: &PolicySource,
    kind: ErrorKind,
    span: std::ops::Range<usize>,
    msg: impl Into<String>,
) -> Diagnostic {
    Diagnostic::at(kind, &p.file, span, msg)
}

/// The span of identifier `name` inside a string value, when the value is
/// written as a plain TOML string (no escapes) so that offsets map one to one.
fn name_span(p: &PolicySource, value: &Sp<String>, name: &str) -> Option<std::ops::Range<usize>> {
    let raw = p.file.text.get(value.span.clone())?;
    let quote = raw.chars().next()?;
    if !(quote == '"' || quote == '\'') || raw.get(1..raw.len() - 1)? != value.value {
        return None;
    }
    let bytes = value.value.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut from = 0;
    while let Some(i) = value.value[from..].find(name) {
        let start = from + i;
        let end = start + name.len();
        let before_ok = start == 0 || !is_ident(bytes[start - 1]);
        let after_ok = end == bytes.len() || !is_ident(bytes[end]);
        if before_ok && after_ok {
            let base = value.span.start + 1;
            return Some(base + start..base + end);
        }
        from = end;
    }
    None
}

/// Compiles `policy` with the catalog `tools` into a plan, then checks the
/// policy's examples against it. Returns every problem found.
pub fn compile(policy: &PolicySource, tools: Vec<ToolSpec>) -> Result<Plan, LoadError> {
    let started = std::time::Instant::now();
    let mut sink = Sink::default();
    let mut warnings = Vec::new();

    // Weights and formula.
    let mut weights: HashMap<&str, f64> = HashMap::new();
    for (name, w) in &policy.weights {
        if FEATURES.contains(&name.value.as_str()) {
            sink.push(at(
                policy,
                ErrorKind::InvalidValue,
                name.span.clone(),
                format!(
                    "weight `{}` has the name of a feature; rename it (e.g. `w_{}`)",
                    name.value, name.value
                ),
            ));
        }
        weights.insert(name.value.as_str(), *w);
    }
    let feature_slot = |n: &str| FEATURES.iter().position(|f| *f == n).map(|i| i as u8);
    let weight_of = |n: &str| weights.get(n).copied();
    let formula = match formula::lower(&policy.formula.value, &feature_slot, &weight_of) {
        Ok(f) => Some(f),
        Err(e) => {
            let kind = match &e {
                FormulaError::UnknownVariable(_) | FormulaError::UnknownFunction(_) => {
                    ErrorKind::UnknownName
                }
                _ => ErrorKind::InvalidExpression,
            };
            let name = match &e {
                FormulaError::UnknownVariable(v) | FormulaError::UnknownFunction(v) => {
                    Some(v.as_str())
                }
                _ => None,
            };
            let span = name
                .and_then(|n| name_span(policy, &policy.formula, n))
                .unwrap_or(policy.formula.span.clone());
            let mut d = at(policy, kind, span, e.to_string());
            if let FormulaError::UnknownVariable(v) = &e {
                let names: Vec<&str> = FEATURES
                    .iter()
                    .copied()
                    .chain(weights.keys().copied())
                    .collect();
                d = d.with_suggestion(v, names);
            }
            if let FormulaError::UnknownFunction(v) = &e {
                d = d.with_suggestion(v, formula::FUNCTIONS.iter().copied());
            }
            sink.push(d);
            None
        }
    };
    if let Some(f) = &formula {
        // A formula that is not finite where every feature is 0 or 1 is a mistake
        // (a division by zero, ln(0)): reject it rather than clamp or drop tools.
        for (what, x) in [("0", 0.0), ("1", 1.0)] {
            let v = f.eval(&[x; FEATURES.len()], None);
            if !v.is_finite() {
                sink.push(at(
                    policy,
                    ErrorKind::InvalidExpression,
                    policy.formula.span.clone(),
                    format!("the formula gives {v} when every feature is {what} (a division by zero, or ln/sqrt out of domain?)"),
                ));
                break;
            }
        }
    }
    if formula.is_some()
        && let Ok(tree) = evalexpr::build_operator_tree(&policy.formula.value)
    {
        let used: Vec<&str> = tree.iter_variable_identifiers().collect();
        for (name, _) in &policy.weights {
            if !used.contains(&name.value.as_str()) {
                warnings.push(format!(
                    "weight `{}` is not used by the formula",
                    name.value
                ));
            }
        }
    }

    // Domains and stages.
    let domains: Vec<String> = policy
        .domains
        .iter()
        .map(|(n, _)| n.value.clone())
        .collect();
    let domain_base: Vec<f64> = policy.domains.iter().map(|(_, w)| *w).collect();
    let domain_index: HashMap<&str, usize> = domains
        .iter()
        .enumerate()
        .map(|(i, d)| (d.as_str(), i))
        .collect();
    let mut stages: Vec<String> = Vec::new();
    for s in &policy.stages {
        if stages.contains(&s.value) {
            sink.push(at(
                policy,
                ErrorKind::InvalidValue,
                s.span.clone(),
                format!("stage `{}` is declared twice", s.value),
            ));
        } else {
            stages.push(s.value.clone());
        }
    }
    if stages.len() > 64 {
        sink.push(at(
            policy,
            ErrorKind::OutOfRange,
            policy.stages[64].span.clone(),
            "at most 64 stages can be declared",
        ));
    }
    let check_domain = |sink: &mut Sink,
                        d: &Sp<String>,
                        mk: &dyn Fn(std::ops::Range<usize>, String) -> Diagnostic|
     -> Option<usize> {
        match domain_index.get(d.value.as_str()) {
            Some(i) => Some(*i),
            None => {
                sink.push(
                    mk(
                        d.span.clone(),
                        format!("domain `{}` is not declared in [domains]", d.value),
                    )
                    .with_suggestion(&d.value, domains.iter().map(|s| s.as_str())),
                );
                None
            }
        }
    };
    let check_stage = |sink: &mut Sink,
                       s: &Sp<String>,
                       mk: &dyn Fn(std::ops::Range<usize>, String) -> Diagnostic|
     -> Option<usize> {
        match stages.iter().position(|x| *x == s.value) {
            Some(i) => Some(i),
            None => {
                sink.push(
                    mk(
                        s.span.clone(),
                        format!("stage `{}` is not declared in [stages] names", s.value),
                    )
                    .with_suggestion(&s.value, stages.iter().map(|s| s.as_str())),
                );
                None
            }
        }
    };
    let pol_domain =
        |span: std::ops::Range<usize>, m: String| at(policy, ErrorKind::UndeclaredDomain, span, m);
    let pol_stage =
        |span: std::ops::Range<usize>, m: String| at(policy, ErrorKind::UndeclaredStage, span, m);

    // Rules. Their keyword terms share the plan's term vocabulary with the tools.
    let analyzer = Analyzer::new(&policy.keywords);
    let mut vocab: crate::plan::NameMap<u32> = Default::default();
    let mut rules = Vec::new();
    for r in &policy.domain_rules {
        let mut adjust = Vec::new();
        for (d, delta) in &r.adjust {
            if let Some(i) = check_domain(&mut sink, d, &pol_domain) {
                adjust.push((i, *delta));
            }
        }
        for s in &r.when.stage {
            check_stage(&mut sink, s, &pol_stage);
        }
        match CompiledCondition::compile(&r.when, &analyzer, &mut vocab) {
            Ok(condition) => rules.push(CompiledRule {
                name: r.name.clone(),
                condition,
                adjust,
            }),
            Err(e) => {
                let span = r
                    .when
                    .expr
                    .as_ref()
                    .map(|e| e.span.clone())
                    .unwrap_or(r.span.clone());
                let d = match e {
                    ExprError::Parse(m) => at(
                        policy,
                        ErrorKind::InvalidExpression,
                        span,
                        format!("rule `{}`: the condition does not parse: {m}", r.name),
                    ),
                    ExprError::NotBoolean(m) => at(
                        policy,
                        ErrorKind::InvalidExpression,
                        span,
                        format!(
                            "rule `{}`: the condition must yield true or false: {m}",
                            r.name
                        ),
                    ),
                    ExprError::UnknownVariable(v) => at(
                        policy,
                        ErrorKind::UnknownName,
                        span,
                        format!(
                            "rule `{}`: the condition names `{v}`, which is not a context variable",
                            r.name
                        ),
                    )
                    .with_suggestion(&v, EXPR_VARIABLES.iter().copied()),
                    ExprError::UnknownFunction(v) => at(
                        policy,
                        ErrorKind::UnknownName,
                        span,
                        format!(
                            "rule `{}`: the condition calls `{v}`, which is not one of {}",
                            r.name,
                            EXPR_FUNCTIONS.join(", ")
                        ),
                    )
                    .with_suggestion(&v, EXPR_FUNCTIONS.iter().copied()),
                };
                sink.push(d);
            }
        }
    }

    // Auto-tags.
    let fp = &policy.features;
    let auto_domains: Vec<u16> = policy
        .auto_tags
        .domains
        .iter()
        .filter_map(|d| check_domain(&mut sink, d, &pol_domain))
        .map(|i| i as u16)
        .collect();
    let auto_stages: u64 = policy
        .auto_tags
        .preferred_stages
        .iter()
        .filter_map(|s| check_stage(&mut sink, s, &pol_stage))
        .fold(0, |m, i| m | (1u64 << (i % 64)));
    if let AutoComplexity::Fixed(c) = policy.auto_tags.parameter_complexity
        && (c < fp.complexity_min || c > fp.complexity_max)
    {
        sink.push(at(
            policy,
            ErrorKind::OutOfRange,
            0..0,
            format!(
                "auto_tags.parameter_complexity {c} is outside the complexity range [{}, {}]",
                fp.complexity_min, fp.complexity_max
            ),
        ));
    }
    let penalty = |c: i64| {
        ((c - fp.complexity_min) as f64 / (fp.complexity_max - fp.complexity_min) as f64)
            .min(fp.complexity_cap)
    };

    // Tools.
    let mut hash = 0xcbf29ce484222325u64;
    let mut by_name: crate::plan::NameMap<usize> = Default::default();
    // name -> (file, byte offset) of its first declaration; rendered only on a clash
    let mut first_seen: HashMap<String, (Option<Arc<crate::diag::SourceFile>>, usize)> =
        HashMap::new();
    let mut compiled = Vec::with_capacity(tools.len());
    let mut tool_files: Vec<String> = Vec::new();
    let mut with_follows: Vec<(usize, ToolSpec)> = Vec::new();
    #[cfg(feature = "gate")]
    let mut schemas = Vec::with_capacity(tools.len());
    #[cfg(feature = "gate")]
    let mut schema_cache = gate::SchemaCache::default();
    for t in tools {
        if let Some(f) = &t.file {
            fnv1a(&mut hash, f.name.as_bytes());
            if !tool_files.contains(&f.name) {
                fnv1a(&mut hash, f.text.as_bytes());
                tool_files.push(f.name.clone());
            }
        }
        let idx = compiled.len();
        let mut ok = true;
        for n in std::iter::once(&t.name).chain(t.aliases.iter()) {
            if n.value.is_empty() || n.value.chars().any(|c| c.is_control() || c.is_whitespace()) {
                sink.push(t.diag(
                    ErrorKind::InvalidValue,
                    n.span.clone(),
                    format!(
                        "tool name {:?} must be non-empty, without spaces or control characters",
                        n.value
                    ),
                ));
                ok = false;
                continue;
            }
            if let Some((file, offset)) = first_seen.get(&n.value) {
                let prev = match file {
                    Some(f) => {
                        let (l, c) = f.line_col(*offset);
                        format!("{}:{l}:{c}", f.name)
                    }
                    None => "declared inline".to_string(),
                };
                sink.push(t.diag(
                    ErrorKind::DuplicateTool,
                    n.span.clone(),
                    format!("tool name `{}` is already used ({prev})", n.value),
                ));
                ok = false;
            } else {
                first_seen.insert(n.value.clone(), (t.file.clone(), n.span.start));
                by_name.insert(n.value.clone(), idx);
            }
        }
        let tool_domain = |span: std::ops::Range<usize>, m: String| {
            t.diag(
                ErrorKind::UndeclaredDomain,
                span,
                format!("tool `{}`: {m}", t.name.value),
            )
        };
        let tool_stage = |span: std::ops::Range<usize>, m: String| {
            t.diag(
                ErrorKind::UndeclaredStage,
                span,
                format!("tool `{}`: {m}", t.name.value),
            )
        };
        let (dom, mask, keywords, priority, complexity, auto) = match &t.tags {
            Some(tags) => {
                let dom: Vec<u16> = tags
                    .domains
                    .iter()
                    .filter_map(|d| check_domain(&mut sink, d, &tool_domain))
                    .map(|i| i as u16)
                    .collect();
                let mask = tags
                    .preferred_stages
                    .iter()
                    .filter_map(|s| check_stage(&mut sink, s, &tool_stage))
                    .fold(0u64, |m, i| m | (1u64 << (i % 64)));
                if dom.len() != tags.domains.len()
                    || tags
                        .preferred_stages
                        .iter()
                        .any(|s| !stages.contains(&s.value))
                {
                    ok = false;
                }
                let bp = tags.base_priority.value;
                if !(0.0..=1.0).contains(&bp) || !bp.is_finite() {
                    sink.push(t.diag(
                        ErrorKind::OutOfRange,
                        tags.base_priority.span.clone(),
                        format!(
                            "tool `{}`: base_priority must be within [0, 1], found {bp}",
                            t.name.value
                        ),
                    ));
                    ok = false;
                }
                let c = tags.parameter_complexity.value;
                if c < fp.complexity_min || c > fp.complexity_max {
                    sink.push(
                        t.diag(ErrorKind::OutOfRange, tags.parameter_complexity.span.clone(), format!("tool `{}`: parameter_complexity {c} is outside the policy's range [{}, {}]", t.name.value, fp.complexity_min, fp.complexity_max)),
                    );
                    ok = false;
                }
                (dom, mask, tags.trigger_keywords.clone(), bp, c, false)
            }
            None => {
                let kws = analyzer.extract_max(&t.description, policy.auto_tags.max_keywords);
                let c = match policy.auto_tags.parameter_complexity {
                    AutoComplexity::Fixed(c) => c,
                    AutoComplexity::FromSchema => {
                        let n = t
                            .input_schema
                            .get("properties")
                            .and_then(|p| p.as_object())
                            .map(|o| o.len() as i64)
                            .unwrap_or(0);
                        n.clamp(fp.complexity_min, fp.complexity_max)
                    }
                };
                (
                    auto_domains.clone(),
                    auto_stages,
                    kws,
                    policy.auto_tags.base_priority,
                    c,
                    true,
                )
            }
        };
        if !ok {
            continue;
        }
        #[cfg(feature = "gate")]
        {
            schemas.push(gate::compile_tool_schema(&t, &mut schema_cache, &mut sink));
            warnings.extend(gate::check_role_paths(&t, &mut sink));
        }
        let mut ids: Vec<u32> = Vec::new();
        for k in &keywords {
            for term in analyzer.expand_keyword(k) {
                let next = vocab.len() as u32;
                ids.push(*vocab.entry(term).or_insert(next));
            }
        }
        ids.sort_unstable();
        ids.dedup();
        if !t.follows.is_empty() {
            with_follows.push((compiled.len(), t.clone()));
        }
        compiled.push(CompiledTool {
            name: t.name.value.clone(),
            aliases: t.aliases.iter().map(|a| a.value.clone()).collect(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
            domains: dom,
            stage_mask: mask,
            keyword_count: ids.len() as u32,
            keyword_ids: ids,
            trigger_keywords: keywords,
            base_priority: priority,
            parameter_complexity: complexity,
            complexity_penalty: penalty(complexity),
            gate: t.gate.clone(),
            auto_tagged: auto,
        });
    }

    // Pinned tools and set controls.
    let act = &policy.activation;
    let mut pinned = Vec::new();
    for p in &act.pinned {
        match by_name.get(&p.value) {
            Some(i) => pinned.push(*i),
            None => sink.push(
                at(
                    policy,
                    ErrorKind::UnknownName,
                    p.span.clone(),
                    format!("pinned tool `{}` is not in the catalog", p.value),
                )
                .with_suggestion(&p.value, by_name.keys().map(|s| s.as_str())),
            ),
        }
    }
    if let Some(k) = act.max_active
        && (k < pinned.len() || k < act.min_active)
    {
        sink.push(at(policy, ErrorKind::OutOfRange, act.threshold.span.clone(), format!("activation.max_active ({k}) is below min_active ({}) or the number of pinned tools ({})", act.min_active, pinned.len())));
    }

    #[cfg(feature = "gate")]
    let gate = gate::build_gate(policy, &compiled, schemas, &domains, &mut sink);
    let transitions = selection::build_transitions(
        policy,
        compiled.len(),
        &with_follows,
        &by_name,
        &mut sink,
        &mut warnings,
    );

    if !sink.is_empty() {
        return Err(LoadError {
            diagnostics: sink.diagnostics,
        });
    }
    let formula = formula.expect("no diagnostics means the formula lowered");

    fnv1a(&mut hash, policy.file.text.as_bytes());
    for t in &compiled {
        fnv1a(&mut hash, t.name.as_bytes());
    }
    let mut sources = vec![policy.file.name.clone()];
    for f in tool_files {
        if !sources.contains(&f) {
            sources.push(f);
        }
    }

    let mut hot = Vec::with_capacity(compiled.len());
    let mut hot_domains = Vec::new();
    let mut hot_keywords = Vec::new();
    for t in &compiled {
        hot.push(crate::plan::HotTool {
            stage_mask: t.stage_mask,
            base_priority: t.base_priority,
            complexity_penalty: t.complexity_penalty,
            domains_start: hot_domains.len() as u32,
            keywords_start: hot_keywords.len() as u32,
            domains_len: t.domains.len().min(u16::MAX as usize) as u16,
            keywords_len: t.keyword_ids.len().min(u16::MAX as usize) as u16,
        });
        hot_domains.extend(t.domains.iter().take(u16::MAX as usize));
        hot_keywords.extend(t.keyword_ids.iter().take(u16::MAX as usize));
    }
    let mut name_index = crate::plan::NameIndex::default();
    let mut names: Vec<(&String, &usize)> = by_name.iter().collect();
    names.sort_by_key(|(_, i)| **i);
    for (n, i) in names {
        name_index.insert(n, *i);
    }
    // The catalog's vocabulary ranks CJK candidates of messages (text::keywords).
    let mut analyzer = analyzer;
    analyzer.learn_catalog(
        compiled
            .iter()
            .map(|t| t.trigger_keywords.iter().map(String::as_str)),
        policy
            .domain_rules
            .iter()
            .flat_map(|r| r.when.keywords_any.iter().map(String::as_str)),
    );
    let bm25 = policy.features.bm25.as_ref().map(|params| {
        let texts: Vec<ToolText<'_>> = compiled
            .iter()
            .map(|t| ToolText {
                name: &t.name,
                description: &t.description,
                input_schema: Some(&t.input_schema),
                keywords: &t.trigger_keywords,
            })
            .collect();
        Bm25Index::build(params, &analyzer, &texts)
    });
    let plan = Plan {
        name_index,
        hot,
        hot_domains,
        hot_keywords,
        policy_name: policy.name.clone(),
        sources,
        content_hash: hash,
        threshold: act.threshold.value,
        clamp: act.clamp.value,
        cold_start: act
            .cold_start
            .as_ref()
            .map(|c| (c.min_calls, c.threshold_factor.value)),
        pinned,
        max_active: act.max_active,
        min_active: act.min_active,
        hysteresis_margin: act.hysteresis_margin,
        recent_calls_window: act.recent_calls_window,
        formula,
        features: policy.features.clone(),
        domains,
        domain_base,
        stages,
        rules,
        analyzer,
        vocab,
        bm25,
        memory: policy.memory.clone(),
        transitions,
        tools: compiled,
        by_name,
        warnings,
        examples_checked: 0,
        properties: Vec::new(),
        #[cfg(feature = "gate")]
        gate,
    };
    // The score bounds' findings, and the declared properties (checked by
    // `toolgate check`, resolved here).
    let mut plan = plan;
    let found = findings::findings(policy, &plan);
    let mut sink = Sink::default();
    for e in found.errors {
        sink.push(e);
    }
    plan.warnings
        .extend(found.warnings.iter().map(|d| d.to_string()));
    let mut property_warnings = Vec::new();
    plan.properties =
        properties::compile_properties(policy, &plan, &mut sink, &mut property_warnings);
    plan.warnings.extend(property_warnings);
    let plan = sink.finish(plan)?;
    let plan = examples::check_examples(policy, plan)?;
    tracing::info!(
        policy = %plan.policy_name,
        tools = plan.tools.len(),
        domains = plan.domains.len(),
        rules = plan.rules.len(),
        examples = plan.examples_checked,
        micros = started.elapsed().as_micros() as u64,
        "compiled plan"
    );
    Ok(plan)
}
