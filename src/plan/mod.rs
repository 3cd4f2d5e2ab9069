//! The compiled, immutable evaluation plan.
//!
//! A [`Plan`] is what compile (`compile::compile`) makes of a policy and a
//! tool catalog: every name resolved to an index, every constant of the formula
//! folded in, per-tool constants (priority, complexity penalty, keyword term
//! ids, domain ids, stage mask) precomputed. The runtimes only read it
//! (evaluate: `Plan::evaluate`; the call gate), so one plan can serve many
//! threads, and a reload swaps in a new one.
//!
//! This module holds data types only, with the submodules for the lowered
//! formula ([`formula`]), the rules' conditions ([`condition`]), the declared
//! properties ([`property`]) and, with the `gate` feature, the call gate's
//! compiled configuration ([`gate`]). It
//! knows nothing of how plans are built, loaded or run.

pub mod condition;
pub mod formula;
#[cfg(feature = "gate")]
pub mod gate;
pub mod property;

use crate::parse::policy::FeatureParams;
use crate::parse::selection::MemoryParams;
use crate::parse::tags::GateTags;

use crate::text::bm25::Bm25Index;
use crate::text::keywords::Analyzer;
use condition::CompiledCondition;
use formula::Formula;

/// A map keyed by tool names or keyword terms (FxHash: these keys are not
/// attacker-chosen in a way that matters for a per-process plan, and lookups sit
/// on the evaluation path).
pub type NameMap<V> = rustc_hash::FxHashMap<String, V>;

/// The built-in features a formula can read, in slot order.
///
/// | feature | value |
/// | --- | --- |
/// | `domain_match` | share of the context's inferred domain weight that falls on the tool's domains, \[0,1\] (seed 000 `_domain_match`) |
/// | `keyword_match` | Jaccard (or containment) of trigger and intent keywords, or BM25 over the tool's text divided by the best tool's ([`crate::text::bm25`]), \[0,1\] |
/// | `stage_match` | `stage_match.hit` when the stage is preferred, else `.miss` |
/// | `usage_bonus` | `min(normalised usage * multiplier, cap)` |
/// | `priority_bonus` | the tool's `base_priority`, \[0,1\] |
/// | `complexity_penalty` | `min((complexity - min) / (max - min), cap)` |
/// | `recency_bonus` | `recency_bonus.bonus` if the tool was called less than `window_seconds` ago, else 0 |
/// | `transition_match` | how likely the tool is to follow the last call: smoothed learned `P(tool \| last call)`, at least `declared` when its tags say it `follows` the last call ([`Transitions`]); 0 without `[features.transition_match]` or before the first call |
/// | `semantic_match` | cosine of static embeddings of the request and of the tool's text, `max(cos, 0)`, divided by the best tool's with normalization `"best"` ([`crate::text::semantic`]), \[0,1\]; 0 without `[features.semantic_match]` |
pub const FEATURES: [&str; 9] = [
    "domain_match",
    "keyword_match",
    "stage_match",
    "usage_bonus",
    "priority_bonus",
    "complexity_penalty",
    "recency_bonus",
    "transition_match",
    "semantic_match",
];

/// Number of features (the length of [`FEATURES`]).
pub const N_FEATURES: usize = FEATURES.len();

/// Slot of `domain_match`.
pub const F_DOMAIN: usize = 0;
/// Slot of `keyword_match`.
pub const F_KEYWORD: usize = 1;
/// Slot of `stage_match`.
pub const F_STAGE: usize = 2;
/// Slot of `usage_bonus`.
pub const F_USAGE: usize = 3;
/// Slot of `priority_bonus`.
pub const F_PRIORITY: usize = 4;
/// Slot of `complexity_penalty`.
pub const F_COMPLEXITY: usize = 5;
/// Slot of `recency_bonus`.
pub const F_RECENCY: usize = 6;
/// Slot of `transition_match`.
pub const F_TRANSITION: usize = 7;
/// Slot of `semantic_match`.
pub const F_SEMANTIC: usize = 8;

/// The compiled `[features.transition_match]`: for the last call A and every
/// tool B, `transition_match(B) = max(declared if B follows A,
/// sparse[A](B) + backoff[A] · prior[B])`, which is the smoothed
/// `P(B | A) = (count(A→B) + s · q(B)) / (count(A→·) + s)` of the learned
/// counts (`s` = `smoothing`, `q` = each tool's share of all successors).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transitions {
    /// The value for a hand-declared `follows`.
    pub declared: f64,
    /// Per tool A: `(B, count(A→B) / (count(A→·) + s))`, sorted by B.
    pub sparse: Vec<Vec<(u32, f64)>>,
    /// Per tool A: `s / (count(A→·) + s)` (0 when both are 0).
    pub backoff: Vec<f64>,
    /// Per tool B: its share of all learned successors, q(B).
    pub prior: Vec<f64>,
    /// Per tool A: the tools whose tags declare they follow A, sorted.
    pub followers: Vec<Vec<u32>>,
    /// Learned pairs that name a tool absent from the catalog (skipped).
    pub skipped_pairs: usize,
}

/// A domain rule after compilation.
#[derive(Debug, Clone)]
pub struct CompiledRule {
    /// Name for explanations.
    pub name: String,
    /// When it applies.
    pub condition: CompiledCondition,
    /// Domain index → delta.
    pub adjust: Vec<(usize, f64)>,
}

/// A tool after compilation.
#[derive(Debug, Clone)]
pub struct CompiledTool {
    /// Canonical name.
    pub name: String,
    /// Aliases.
    pub aliases: Vec<String>,
    /// Description.
    pub description: String,
    /// JSON Schema of the arguments (MCP `inputSchema`) as canonical JSON
    /// text, shared with the [`ToolSpec`](crate::parse::tags::ToolSpec) it
    /// came from ([`SchemaText::value`](crate::parse::schema_text::SchemaText::value)
    /// parses the tree).
    pub input_schema: crate::parse::schema_text::SchemaText,
    /// Indices into [`Plan::domains`] (duplicates kept: each counts, as in the seed).
    pub domains: Vec<u16>,
    /// Bit `i` set when stage `i` of [`Plan::stages`] is preferred.
    pub stage_mask: u64,
    /// Sorted, distinct keyword term ids.
    pub keyword_ids: Vec<u32>,
    /// Number of distinct trigger terms (|T| of the Jaccard).
    pub keyword_count: u32,
    /// The trigger keywords as declared (or auto-extracted).
    pub trigger_keywords: Vec<String>,
    /// Base priority in \[0,1\].
    pub base_priority: f64,
    /// Parameter complexity.
    pub parameter_complexity: i64,
    /// Precomputed `complexity_penalty`.
    pub complexity_penalty: f64,
    /// Call-gate fields.
    pub gate: GateTags,
    /// Whether the tags came from `[auto_tags]`.
    pub auto_tagged: bool,
}

/// What the scoring loop reads of one tool, packed so that evaluating many
/// tools walks contiguous memory: ranges into [`Plan::hot_domains`] and
/// [`Plan::hot_keywords`] instead of per-tool heap vectors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HotTool {
    /// Bit `i` set when stage `i` is preferred.
    pub stage_mask: u64,
    /// Base priority in \[0,1\].
    pub base_priority: f64,
    /// Precomputed complexity penalty.
    pub complexity_penalty: f64,
    /// Start of the tool's domain indices in `hot_domains`.
    pub domains_start: u32,
    /// Start of the tool's keyword ids in `hot_keywords`.
    pub keywords_start: u32,
    /// Number of domain indices.
    pub domains_len: u16,
    /// Number of distinct keyword ids (|T| of the Jaccard).
    pub keywords_len: u16,
}

/// Name → tool index, laid out for the evaluation path: keys are 64-bit FxHash
/// values (no pointer chasing), and the names they stand for sit in one
/// contiguous arena, where a lookup confirms its match. A 64-bit clash between
/// two names (never seen in practice) goes to a small overflow list.
#[derive(Debug, Clone, Default)]
pub struct NameIndex {
    by_hash: rustc_hash::FxHashMap<u64, u32>,
    arena: String,
    /// (start, end, tool) per entry.
    entries: Vec<(u32, u32, u32)>,
    overflow: Vec<(String, usize)>,
}

fn name_hash(name: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(name)
}

impl NameIndex {
    /// Adds `name` for tool `tool`; the caller guarantees names are unique.
    pub fn insert(&mut self, name: &str, tool: usize) {
        let h = name_hash(name);
        if self.by_hash.contains_key(&h) {
            self.overflow.push((name.to_string(), tool));
            return;
        }
        let start = self.arena.len() as u32;
        self.arena.push_str(name);
        self.by_hash.insert(h, self.entries.len() as u32);
        self.entries
            .push((start, self.arena.len() as u32, tool as u32));
    }

    /// The tool called `name`.
    #[inline]
    pub fn get(&self, name: &str) -> Option<usize> {
        if let Some(&e) = self.by_hash.get(&name_hash(name)) {
            let (s, end, tool) = self.entries[e as usize];
            if &self.arena[s as usize..end as usize] == name {
                return Some(tool as usize);
            }
        }
        self.overflow
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| *t)
    }
}

/// The compiled plan. Built by `compile::compile` (or `load::load_plan`,
/// which reads the files first).
#[derive(Debug, Clone)]
pub struct Plan {
    /// `[policy] name`.
    pub policy_name: String,
    /// Names of the files the plan was built from.
    pub sources: Vec<String>,
    /// Hash of the policy and tag texts (FNV-1a, 64 bits), to tell plans apart:
    /// of their contents only, not of the paths they were read from.
    pub content_hash: u64,
    /// Activation threshold in \[0,1\].
    pub threshold: f64,
    /// Clamp bounds of the score.
    pub clamp: (f64, f64),
    /// Cold start: (minimum calls, threshold factor).
    pub cold_start: Option<(u64, f64)>,
    /// Tool indices that are always active.
    pub pinned: Vec<usize>,
    /// Top-k cap.
    pub max_active: Option<usize>,
    /// Minimum active count.
    pub min_active: usize,
    /// Hysteresis margin (score units).
    pub hysteresis_margin: f64,
    /// Length of the recent-calls window.
    pub recent_calls_window: usize,
    /// The lowered score formula.
    pub formula: Formula,
    /// Feature parameters.
    pub features: FeatureParams,
    /// Declared domains, in file order.
    pub domains: Vec<String>,
    /// Their base weights.
    pub domain_base: Vec<f64>,
    /// Declared stages.
    pub stages: Vec<String>,
    /// Domain rules in file order.
    pub rules: Vec<CompiledRule>,
    /// The keyword extractor.
    pub analyzer: Analyzer,
    /// Keyword term → id.
    pub vocab: NameMap<u32>,
    /// The BM25 index of the catalog, when `keyword_match` uses BM25.
    pub bm25: Option<Bm25Index>,
    /// `[keywords.memory]`: remembered turns and their decay, if on.
    pub memory: Option<MemoryParams>,
    /// The compiled `transition_match` feature, if the policy declares it.
    pub transitions: Option<Transitions>,
    /// The compiled `semantic_match` feature (every tool's embedding), if the
    /// policy declares it.
    pub semantic: Option<crate::text::semantic::SemanticIndex>,
    /// The compiled `[features.argument_fill]` gate (every tool's required
    /// parameters), if the policy declares it.
    pub argument_fill: Option<std::sync::Arc<crate::text::argument_fill::ArgumentFill>>,
    /// The catalog (shared by the plans of one compiled catalog:
    /// `compile::CompileCache`).
    pub tools: std::sync::Arc<Vec<CompiledTool>>,
    /// Hot per-tool data, in catalog order (see [`HotTool`]).
    pub hot: Vec<HotTool>,
    /// Domain indices of all tools, concatenated.
    pub hot_domains: Vec<u16>,
    /// Keyword ids of all tools, concatenated.
    pub hot_keywords: Vec<u32>,
    /// Name or alias → tool index (shared like [`Plan::tools`]).
    pub by_name: std::sync::Arc<NameMap<usize>>,
    /// The same mapping, laid out for fast lookups on the evaluation path.
    pub name_index: NameIndex,
    /// Non-fatal findings of the compile (unused weights, skipped examples).
    pub warnings: Vec<String>,
    /// Findings of the compile that are no problem, each as
    /// `file:line:column: message`: raw scores beyond the declared clamp,
    /// over any tool the policy admits (`compile::findings`).
    pub notes: Vec<String>,
    /// Number of policy examples that were checked and held.
    pub examples_checked: usize,
    /// Number of policy examples skipped: every tool they name, or every
    /// call they make, is outside the catalog (each with a warning).
    pub examples_skipped: usize,
    /// The policy's declared `[[properties]]` (checked by `toolgate check`,
    /// not at load).
    pub properties: Vec<property::Property>,
    /// The call gate: `[gate]` read and compiled, with each tool's schema
    /// (see [`gate`]). `None` only for plans built by hand.
    #[cfg(feature = "gate")]
    pub gate: Option<std::sync::Arc<gate::CompiledGate>>,
}

impl Plan {
    /// Index of the tool called `name` (or with that alias).
    #[inline]
    pub fn tool_index(&self, name: &str) -> Option<usize> {
        self.name_index.get(name)
    }

    /// The tool called `name` (or with that alias).
    pub fn tool(&self, name: &str) -> Option<&CompiledTool> {
        self.tool_index(name).map(|i| &self.tools[i])
    }

    /// Up to `max` tool names close to `name`, closest first, for "unknown
    /// tool" messages: [`crate::diag::close_matches`] over every name and
    /// alias the plan resolves (`by_name`), each reported as its tool's
    /// catalog name, once. `explain`, `guard` and the gate's message to the
    /// model all use this one list (issue 29: they suggested different
    /// tools for the same unknown name). Empty when no name is close.
    pub fn close_tool_names(&self, name: &str, max: usize) -> Vec<&str> {
        let all =
            crate::diag::close_matches(name, self.by_name.keys().map(|k| k.as_str()), usize::MAX);
        let mut out: Vec<&str> = Vec::new();
        for k in all {
            let Some(&i) = self.by_name.get(k) else {
                continue;
            };
            let canonical = self.tools[i].name.as_str();
            if !out.contains(&canonical) {
                out.push(canonical);
                if out.len() == max {
                    break;
                }
            }
        }
        out
    }

    /// Index of a declared stage.
    pub fn stage_index(&self, stage: &str) -> Option<usize> {
        self.stages.iter().position(|s| s == stage)
    }
}
