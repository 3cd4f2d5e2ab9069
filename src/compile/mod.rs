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

mod argument_fill;
pub mod bounds;
pub mod catalog;
pub mod condition;
mod cut;
mod examples;
pub mod findings;
pub mod formula;
#[cfg(feature = "gate")]
pub mod gate;
#[cfg(feature = "gate")]
mod gate_placeholders;
#[cfg(feature = "gate")]
mod gate_serde;
#[cfg(feature = "gate")]
mod gate_words;
pub mod interval;
mod properties;
pub mod selection;
pub mod weights;
pub mod witness;

use std::collections::HashMap;
use std::sync::Arc;

use crate::diag::{Diagnostic, ErrorKind, LoadError, Sink, echo};
use crate::parse::policy::{AutoComplexity, PolicySource, Sp};
use crate::parse::tags::ToolSpec;
use crate::plan::{CompiledRule, FEATURES, Plan};
use crate::text::keywords::Analyzer;
pub use catalog::CompileStats;
use catalog::fnv1a;

use crate::plan::condition::CompiledCondition;
use condition::{EXPR_FUNCTIONS, EXPR_VARIABLES, ExprError};
use formula::FormulaError;

fn at(
    p: &PolicySource,
    kind: ErrorKind,
    span: std::ops::Range<usize>,
    msg: impl Into<String>,
) -> Diagnostic {
    Diagnostic::at(kind, &p.file, span, msg)
}

/// The formula names variables that are neither features nor weights, and
/// some of them are close to a weight the formula does not use: a misspelt
/// key in `[score.weights]` (`w_stag` for the formula's `w_stage`), or a
/// misspelt name in the formula (`w_domian` for the key `w_domain`: see
/// [`formula_misspelt`]). One problem per unknown variable, each at the
/// misspelling (the key, or the name inside the formula; else at the
/// formula); `None` when no unknown variable has such a key.
fn misspelt_weights(
    policy: &PolicySource,
    weights: &HashMap<&str, f64>,
) -> Option<Vec<Diagnostic>> {
    let tree = evalexpr::build_operator_tree(&policy.formula.value).ok()?;
    let used: Vec<&str> = tree.iter_variable_identifiers().collect();
    let unused: Vec<&Sp<String>> = policy
        .weights
        .iter()
        .map(|(n, _)| n)
        .filter(|n| !used.contains(&n.value.as_str()))
        .collect();
    let mut unknown: Vec<&str> = used
        .iter()
        .copied()
        .filter(|v| !FEATURES.contains(v) && !weights.contains_key(v))
        .collect();
    unknown.dedup();
    let mut out = Vec::new();
    let mut any = false;
    for v in unknown {
        let close = crate::diag::did_you_mean(v, unused.iter().map(|n| n.value.as_str()))
            .and_then(|k| unused.iter().find(|n| n.value == k));
        let d = match close {
            Some(key) if formula_misspelt(&policy.formula.value, v, &key.value) => {
                any = true;
                let span =
                    name_span(policy, &policy.formula, v).unwrap_or(policy.formula.span.clone());
                at(
                    policy,
                    ErrorKind::UnknownName,
                    span,
                    format!(
                        "the formula's `{}` has no weight in [score.weights], and the declared weight `{}` is not used by the formula",
                        echo(v),
                        echo(&key.value)
                    ),
                )
                .with_help(format!(
                    "did you mean `{}`? Write `{}` in the formula, as [score.weights] names it",
                    echo(&key.value),
                    echo(&key.value)
                ))
            }
            Some(key) => {
                any = true;
                at(
                    policy,
                    ErrorKind::UnknownName,
                    key.span.clone(),
                    format!(
                        "weight `{}` is not used by the formula, and the formula's `{}` has no weight in [score.weights]",
                        echo(&key.value),
                        echo(v)
                    ),
                )
                .with_help(format!(
                    "rename the key `{}` to `{}`",
                    echo(&key.value),
                    echo(v)
                ))
            }
            None => {
                let span =
                    name_span(policy, &policy.formula, v).unwrap_or(policy.formula.span.clone());
                let names: Vec<&str> = FEATURES
                    .iter()
                    .copied()
                    .chain(weights.keys().copied())
                    .collect();
                at(
                    policy,
                    ErrorKind::UnknownName,
                    span,
                    format!(
                        "the formula names `{}`, which is neither a feature nor a weight of [score.weights]",
                        echo(v)
                    ),
                )
                .with_suggestion(v, names)
            }
        };
        out.push(d);
    }
    any.then_some(out)
}

/// Whether the formula's unknown `name` is the misspelling, rather than the
/// declared, unused weight `key` close to it: `key` is named after a feature
/// (`w_domain` for `domain_match`: `w_` and the feature's first word, or the
/// whole feature) and `name` is not, preferring the feature `name`
/// multiplies in the formula (`w_domian*domain_match`) when there is one.
/// Otherwise the key is taken for the typo (`w_stag` for the formula's
/// `w_stage`).
fn formula_misspelt(formula: &str, name: &str, key: &str) -> bool {
    let fits = |w: &str, f: &str| {
        let stem = f.split('_').next().unwrap_or(f);
        w.strip_prefix("w_").is_some_and(|s| s == stem || s == f)
    };
    match multiplied_feature(formula, name) {
        Some(f) => fits(key, f) && !fits(name, f),
        None => FEATURES.iter().any(|f| fits(key, f)) && !FEATURES.iter().any(|f| fits(name, f)),
    }
}

/// The feature that the identifier `name` multiplies directly in `formula`
/// (`name * feature` or `feature * name`), if any.
fn multiplied_feature(formula: &str, name: &str) -> Option<&'static str> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut from = 0;
    while let Some(i) = formula[from..].find(name) {
        let (start, end) = (from + i, from + i + name.len());
        from = end;
        let before = &formula[..start];
        let after = &formula[end..];
        if before.chars().next_back().is_some_and(is_ident)
            || after.chars().next().is_some_and(is_ident)
        {
            continue;
        }
        let next = after
            .trim_start()
            .strip_prefix('*')
            .map(|r| r.trim_start())
            .map(|r| &r[..r.find(|c: char| !is_ident(c)).unwrap_or(r.len())]);
        let prev = before
            .trim_end()
            .strip_suffix('*')
            .map(|l| l.trim_end())
            .map(|l| &l[l.rfind(|c: char| !is_ident(c)).map_or(0, |j| j + 1)..]);
        for w in [next, prev].into_iter().flatten() {
            if let Some(f) = FEATURES.iter().find(|f| **f == w) {
                return Some(f);
            }
        }
    }
    None
}

/// The problems compiling `policy` would find that depend on no other part
/// of it, so that they stand beside the parse problems of a policy that did
/// not parse (issue 29: every problem at once): each bad key of `[gate]`
/// ([`gate::load_gate_config`]), and weights misspelt against the formula
/// (`w_stag` for `w_stage`).
pub fn standalone_problems(policy: &PolicySource) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let weights: HashMap<&str, f64> = policy
        .weights
        .iter()
        .map(|(n, w)| (n.value.as_str(), *w))
        .collect();
    if let Some(ds) = misspelt_weights(policy, &weights) {
        out.extend(ds);
    }
    #[cfg(feature = "gate")]
    if let Err(e) = gate::load_gate_config(policy) {
        out.extend(e.diagnostics);
    }
    out
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
    let mut parts = catalog::Parts {
        once: true,
        ..Default::default()
    };
    compile_with(&mut parts, policy, &[Arc::new(tools)])
}

/// A compiler that keeps what it compiled, to reuse it in the next compile
/// (the reloader and the MCP proxy keep one): the compiled tools of each
/// *unit* of the catalog (a tool file, a tag file, a server's listing: an
/// `Arc<Vec<ToolSpec>>`, recognised by its address), the linked catalog
/// (names, keyword terms, BM25 index, the call gate's per-tool data), and
/// each distinct input schema (by its canonical text). A
/// policy-only edit recompiles the policy part and links it to the same
/// catalog; a changed unit recompiles that unit's tools only. The plan is
/// the one [`compile`] makes from the same inputs (see [`catalog`]).
#[derive(Debug, Default)]
pub struct CompileCache {
    parts: catalog::Parts,
}

impl CompileCache {
    /// Compiles `policy` with the tools of `units` (in order); keep the same
    /// `Arc` for a unit whose tools did not change.
    pub fn compile(
        &mut self,
        policy: &PolicySource,
        units: &[Arc<Vec<ToolSpec>>],
    ) -> Result<Plan, LoadError> {
        compile_with(&mut self.parts, policy, units)
    }

    /// What the last compile recompiled and reused.
    pub fn stats(&self) -> &CompileStats {
        &self.parts.stats
    }
}

fn compile_with(
    parts: &mut catalog::Parts,
    policy: &PolicySource,
    units: &[Arc<Vec<ToolSpec>>],
) -> Result<Plan, LoadError> {
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
            let misspelt = match &e {
                FormulaError::UnknownVariable(_) => misspelt_weights(policy, &weights),
                _ => None,
            };
            if let Some(ds) = misspelt {
                for d in ds {
                    sink.push(d);
                }
                None
            } else {
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
        // The formula's own weights: the names it uses that are not features.
        let mut formula_weights: Vec<&str> = Vec::new();
        for v in &used {
            if !FEATURES.contains(v) && !formula_weights.contains(v) {
                formula_weights.push(v);
            }
        }
        for (name, _) in &policy.weights {
            if !used.contains(&name.value.as_str()) {
                let d = at(
                    policy,
                    ErrorKind::UnknownName,
                    name.span.clone(),
                    format!(
                        "weight `{}` is not used by the formula, so it has no effect",
                        crate::diag::echo(&name.value)
                    ),
                );
                let d = match crate::diag::did_you_mean(&name.value, formula_weights.iter().copied()) {
                    Some(w) => d.with_help(format!(
                        "did you mean the formula's `{w}`? This key is ignored: remove it, or name it in the formula"
                    )),
                    None if formula_weights.is_empty() => {
                        d.with_help("the formula names no weight")
                    }
                    None => d.with_help(format!(
                        "the formula's weights: {}",
                        formula_weights.join(", ")
                    )),
                };
                warnings.push(d.to_string());
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
                format!("stage `{}` is declared twice", echo(&s.value)),
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
                        format!("domain `{}` is not declared in [domains]", echo(&d.value)),
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
                        format!(
                            "stage `{}` is not declared in [stages] names",
                            echo(&s.value)
                        ),
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

    // Rules, checked here (their problems come before the tools'); their
    // conditions are compiled again once the tools' keyword terms are known,
    // to share the plan's term vocabulary.
    let analyzer = Analyzer::new(&policy.keywords);
    let mut scratch: crate::plan::NameMap<u32> = Default::default();
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
        match CompiledCondition::compile(&r.when, &analyzer, &mut scratch) {
            Ok(_) => rules.push((r, adjust)),
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
                        format!(
                            "rule `{}`: the condition does not parse: {m}",
                            echo(&r.name)
                        ),
                    ),
                    ExprError::NotBoolean(m) => at(
                        policy,
                        ErrorKind::InvalidExpression,
                        span,
                        format!(
                            "rule `{}`: the condition must yield true or false: {m}",
                            echo(&r.name)
                        ),
                    ),
                    ExprError::UnknownVariable(v) => at(
                        policy,
                        ErrorKind::UnknownName,
                        span,
                        format!(
                            "rule `{}`: the condition names `{}`, which is not a context variable",
                            echo(&r.name),
                            echo(&v)
                        ),
                    )
                    .with_suggestion(&v, EXPR_VARIABLES.iter().copied()),
                    ExprError::UnknownFunction(v) => at(
                        policy,
                        ErrorKind::UnknownName,
                        span,
                        format!(
                            "rule `{}`: the condition calls `{}`, which is not one of {}",
                            echo(&r.name),
                            echo(&v),
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

    // The catalog part: reused when the units and what it reads of the
    // policy are unchanged, else compiled (unit by unit) and linked.
    let key = catalog::CatalogKey::of(policy, &domains, &stages, &auto_domains, auto_stages);
    #[cfg(feature = "gate")]
    let gate_config = gate::cached_config(policy);
    let linked = parts.catalog(
        &key,
        &analyzer,
        units,
        #[cfg(feature = "gate")]
        gate_config.as_ref().ok().map(|c| &c.0),
    );
    for d in &linked.diags {
        sink.push(d.clone());
    }
    warnings.extend(linked.warnings.iter().cloned());
    warnings.extend(cut::no_final_newline(policy));
    let by_name = &linked.by_name;

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
    let gate = gate::build_gate(gate_config, linked.gate_tools.clone(), &mut sink);
    let transitions = selection::build_transitions(
        policy,
        linked.tools.len(),
        &linked.with_follows,
        by_name,
        &mut sink,
        &mut warnings,
    );

    // A compile that keeps nothing (`parts.once`) keeps no embeddings either.
    let memo = (!parts.once).then_some(&mut parts.semantic);
    let semantic =
        selection::build_semantic(policy, &linked.tools, memo, &mut parts.stats, &mut sink);
    if let Some(w) = semantic
        .as_ref()
        .and_then(|s| s.vectors.degenerate_warning())
    {
        warnings.push(w);
    }

    if !sink.is_empty() {
        return Err(LoadError {
            diagnostics: sink.diagnostics,
        });
    }
    let formula = formula.expect("no diagnostics means the formula lowered");

    // The rules' keyword terms join the catalog's vocabulary (after the
    // tools' terms, so that the catalog's ids do not depend on the rules).
    let mut vocab = linked.vocab.clone();
    let rules: Vec<CompiledRule> = rules
        .into_iter()
        .map(
            |(r, adjust): (&crate::parse::policy::DomainRule, _)| CompiledRule {
                name: r.name.clone(),
                condition: CompiledCondition::compile(&r.when, &analyzer, &mut vocab)
                    .expect("the condition compiled above"),
                adjust,
            },
        )
        .collect();

    let mut hash = linked.hash;
    fnv1a(&mut hash, policy.file.text.as_bytes());
    for t in linked.tools.iter() {
        fnv1a(&mut hash, t.name.as_bytes());
    }
    let mut sources = vec![policy.file.name.clone()];
    for f in &linked.tool_files {
        if !sources.contains(f) {
            sources.push(f.clone());
        }
    }

    // The catalog's vocabulary ranks CJK candidates of messages (text::keywords).
    let mut analyzer = analyzer;
    analyzer.learn_with(
        &linked.terms,
        policy
            .domain_rules
            .iter()
            .flat_map(|r| r.when.keywords_any.iter().map(String::as_str)),
    );
    let bm25 = match (&policy.features.bm25, &linked.bm25) {
        (Some(params), Some(index)) => Some(index.with_params(params)),
        _ => None,
    };
    let plan = Plan {
        name_index: linked.name_index.clone(),
        hot: linked.hot.clone(),
        hot_domains: linked.hot_domains.clone(),
        hot_keywords: linked.hot_keywords.clone(),
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
        semantic,
        argument_fill: argument_fill::build(policy, &linked.tools),
        tools: linked.tools.clone(),
        by_name: linked.by_name.clone(),
        warnings,
        notes: Vec::new(),
        examples_checked: 0,
        examples_skipped: 0,
        properties: Vec::new(),
        #[cfg(feature = "gate")]
        gate,
    };
    drop(linked);
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
    plan.notes = found.notes.iter().map(|d| d.to_string()).collect();
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
