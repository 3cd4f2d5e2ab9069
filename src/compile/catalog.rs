//! The catalog part of a plan, compiled apart from the policy part so that a
//! reload pays only for what changed (issue 14).
//!
//! A plan is built in three layers, each reused while its inputs are equal:
//!
//! 1. **Units.** The tools arrive in *units* — one tool file, one tag file,
//!    one MCP server's listing — each an `Arc<Vec<ToolSpec>>`. A unit's
//!    [`UnitPart`] holds, per tool, everything that depends only on the tool
//!    and on the few policy values the catalog reads (the [`CatalogKey`]):
//!    domain indices and stage masks, auto-tags, the problems found, the
//!    compiled input schema, the keyword terms and the BM25 document. A unit
//!    is recognised by its `Arc` (the cache holds a clone, so the address
//!    cannot be reused by another unit while cached); the caller keeps the
//!    `Arc` of a source whose bytes did not change.
//! 2. **Catalog.** The units, in order, are linked into a [`LinkedCatalog`]:
//!    names checked for clashes, keyword terms interned, the hot per-tool
//!    arrays, the name index, the BM25 index, the call gate's per-tool data,
//!    the tools' keyword statistics. Reused as a whole when the units and
//!    the key are the same (a policy-only edit).
//! 3. **Policy.** The formula, rules, set controls, gate configuration,
//!    transitions, findings, properties and examples: always compiled
//!    (`compile::CompileCache::compile`), against the linked catalog.
//!
//! Input schemas are compiled once per distinct schema, keyed by their
//! canonical text ([`SchemaText`]), and kept across compiles while some tool
//! uses them. A tool's schema tree is parsed from its text once, while the
//! tool is compiled (everything that reads it — auto complexity, argument
//! roles, the BM25 document's parameters, the compiled schema — reads it
//! then), and dropped: plans hold the texts only.
//!
//! Every layer computes exactly what the monolithic compile did, in the same
//! order (diagnostics included): `tests/incremental.rs` checks that a plan
//! compiled incrementally equals one compiled from scratch over random edit
//! sequences.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::Arc;

use serde_json::Value;

use crate::diag::{Diagnostic, ErrorKind, SourceFile, echo};
use crate::parse::policy::{AutoComplexity, Bm25Params, KeywordParams, PolicySource, Sp};
#[cfg(feature = "gate")]
use crate::parse::schema_text::SchemaText;
use crate::parse::tags::ToolSpec;
use crate::plan::{CompiledTool, HotTool, NameIndex, NameMap};
use crate::text::bm25::{Bm25Analyzer, Bm25Doc, Bm25Index, ToolText};
use crate::text::keywords::{Analyzer, ToolTerms};

#[cfg(feature = "gate")]
use super::gate::ToolRoles;
#[cfg(feature = "gate")]
use crate::plan::gate::{GateTool, config::GateConfig, schema::ToolSchema};

/// What the catalog part reads of the policy. Two policies with equal keys
/// compile every tool alike, so a compiled catalog is reused across edits of
/// everything else (weights, formula, rules, thresholds, examples, ...).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CatalogKey {
    domains: Vec<String>,
    stages: Vec<String>,
    complexity: (i64, i64, u64),
    auto_domains: Vec<u16>,
    auto_stages: u64,
    auto_priority: u64,
    auto_max_keywords: usize,
    auto_complexity: AutoComplexity,
    keywords: KeywordParams,
    /// BM25 parameters with the query-time ones cleared.
    bm25: Option<Bm25Params>,
    /// `[gate]` as written (its configuration decides inferred roles and
    /// default risk levels).
    gate: Option<Value>,
}

impl CatalogKey {
    /// The key of `policy`, with its domains and (deduplicated) stages and
    /// the auto-tags' resolved domains and stage mask.
    pub(crate) fn of(
        policy: &PolicySource,
        domains: &[String],
        stages: &[String],
        auto_domains: &[u16],
        auto_stages: u64,
    ) -> CatalogKey {
        let fp = &policy.features;
        CatalogKey {
            domains: domains.to_vec(),
            stages: stages.to_vec(),
            complexity: (
                fp.complexity_min,
                fp.complexity_max,
                fp.complexity_cap.to_bits(),
            ),
            auto_domains: auto_domains.to_vec(),
            auto_stages,
            auto_priority: policy.auto_tags.base_priority.to_bits(),
            auto_max_keywords: policy.auto_tags.max_keywords,
            auto_complexity: policy.auto_tags.parameter_complexity,
            keywords: policy.keywords.clone(),
            bm25: fp.bm25.as_ref().map(|b| Bm25Params {
                score_floor: 0.0,
                relevance: None,
                query_counting: Default::default(),
                clauses: None,
                ..b.clone()
            }),
            gate: policy.gate.as_ref().map(|g| g.value.clone()),
        }
    }

    fn penalty(&self, c: i64) -> f64 {
        let (min, max, cap) = self.complexity;
        ((c - min) as f64 / (max - min) as f64).min(f64::from_bits(cap))
    }
}

/// One tool compiled against a [`CatalogKey`], before linking.
#[derive(Debug, Clone)]
pub(crate) struct ToolPart {
    /// The compiled tool; `keyword_ids` and `keyword_count` are set at link.
    tool: CompiledTool,
    /// Problems of its tags (domains, stages, priority, complexity), in order.
    diags: Vec<Diagnostic>,
    /// Compiled when the tags have no problem; `None` for an invalid schema
    /// (reported by `schema_diags`).
    #[cfg(feature = "gate")]
    schema: Option<ToolSchema>,
    /// The call gate's argument roles (declared or inferred) and whether
    /// some were inferred, when the tool compiled with a `[gate]`
    /// configuration (they read the schema's tree, which is gone at link).
    #[cfg(feature = "gate")]
    roles: Option<ToolRoles>,
    /// Schema and argument-role problems, reported when the tool's names are
    /// also fine.
    schema_diags: Vec<Diagnostic>,
    /// Argument roles that name nothing in the schema (warnings).
    role_warnings: Vec<String>,
    /// The trigger keywords' terms, in order (duplicates kept).
    kw_terms: Vec<String>,
    /// The BM25 document, when the policy uses BM25.
    bm25: Option<Bm25Doc>,
}

/// The tools of one unit compiled against a [`CatalogKey`].
#[derive(Debug)]
pub(crate) struct UnitPart {
    tools: Vec<ToolPart>,
}

/// A catalog linked from its units: everything of a plan that depends on
/// the tools and the [`CatalogKey`] only.
#[derive(Debug)]
pub(crate) struct LinkedCatalog {
    pub(crate) tools: Arc<Vec<CompiledTool>>,
    pub(crate) hot: Vec<HotTool>,
    pub(crate) hot_domains: Vec<u16>,
    pub(crate) hot_keywords: Vec<u32>,
    /// The tools' keyword terms (the rules' terms are added per policy).
    pub(crate) vocab: NameMap<u32>,
    pub(crate) by_name: Arc<NameMap<usize>>,
    pub(crate) name_index: NameIndex,
    pub(crate) bm25: Option<Bm25Index>,
    /// The call gate's per-tool data; `None` when a schema did not compile
    /// or `[gate]` does not load.
    #[cfg(feature = "gate")]
    pub(crate) gate_tools: Option<Arc<Vec<GateTool>>>,
    pub(crate) terms: ToolTerms,
    /// Tools whose tags declare `follows`, with their catalog index.
    pub(crate) with_follows: Vec<(usize, ToolSpec)>,
    /// The content hash over the tool files (the policy part continues it).
    pub(crate) hash: u64,
    /// The tool files, in first-seen order.
    pub(crate) tool_files: Vec<String>,
    pub(crate) warnings: Vec<String>,
    /// The tools' problems, in catalog order (a catalog with problems is
    /// never cached).
    pub(crate) diags: Vec<Diagnostic>,
}

pub(crate) fn fnv1a(hash: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *hash ^= *b as u64;
        *hash = hash.wrapping_mul(0x100000001b3);
    }
}

/// FNV-1a's offset basis.
pub(crate) const FNV_START: u64 = 0xcbf29ce484222325;

/// Compiled input schemas by the hash of their text ([`SchemaText::hash64`],
/// a match confirmed by comparing the texts), each with the generation of
/// the last compile that used it, kept while some compile uses them.
#[derive(Default)]
pub(crate) struct SchemaStore {
    #[cfg(feature = "gate")]
    by_hash: rustc_hash::FxHashMap<u64, Vec<(ToolSchema, u64)>>,
    generation: u64,
    /// Schemas compiled and found in the store by the current compile.
    pub(crate) compiled: usize,
    pub(crate) reused: usize,
}

impl std::fmt::Debug for SchemaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaStore")
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl SchemaStore {
    /// Starts a compile: counters reset, entries used from now on are marked.
    pub(crate) fn begin(&mut self) {
        self.generation += 1;
        self.compiled = 0;
        self.reused = 0;
    }

    /// Drops the schemas no tool of the last compile used.
    pub(crate) fn sweep(&mut self) {
        #[cfg(feature = "gate")]
        {
            let g = self.generation;
            self.by_hash.retain(|_, v| {
                v.retain(|e| e.1 == g);
                !v.is_empty()
            });
        }
    }

    /// The compiled `schema`: found, or compiled from its tree (`tree`,
    /// parsed only then).
    #[cfg(feature = "gate")]
    fn get<'t>(
        &mut self,
        schema: &SchemaText,
        tree: impl FnOnce() -> &'t Value,
    ) -> Result<ToolSchema, String> {
        let g = self.generation;
        let bucket = self.by_hash.entry(schema.hash64()).or_default();
        if let Some(e) = bucket.iter_mut().find(|e| e.0.source == *schema) {
            e.1 = g;
            self.reused += 1;
            return Ok(e.0.clone());
        }
        let compiled = ToolSchema::compile_text(schema, tree())?;
        self.compiled += 1;
        // Most buckets hold one schema: no room for four.
        bucket.reserve_exact(1);
        bucket.push((compiled.clone(), g));
        Ok(compiled)
    }

    /// Marks the schemas of a reused unit as used by this compile.
    #[cfg(feature = "gate")]
    fn touch(&mut self, part: &UnitPart) {
        let g = self.generation;
        for t in &part.tools {
            if let Some(s) = &t.schema
                && let Some(bucket) = self.by_hash.get_mut(&s.source.hash64())
            {
                for e in bucket.iter_mut() {
                    if SchemaText::ptr_eq(&e.0.source, &s.source) {
                        e.1 = g;
                    }
                }
            }
        }
    }
}

/// The analysis a unit's tools are compiled with.
pub(crate) struct UnitContext<'a> {
    pub(crate) key: &'a CatalogKey,
    pub(crate) analyzer: &'a Analyzer,
    /// `[gate]` when it loads: the tools' argument roles are found while
    /// their schema trees are at hand.
    #[cfg(feature = "gate")]
    pub(crate) gate: Option<&'a GateConfig>,
}

/// Compiles the tools of one unit.
pub(crate) fn compile_unit(
    cx: &UnitContext<'_>,
    specs: &[ToolSpec],
    schemas: &mut SchemaStore,
) -> UnitPart {
    let key = cx.key;
    let bm25 = key
        .bm25
        .as_ref()
        .map(|p| Bm25Analyzer::new(p, cx.analyzer).memoized());
    let tools = specs
        .iter()
        .map(|t| compile_tool(cx, t, schemas, bm25.as_ref()))
        .collect();
    #[cfg(not(feature = "gate"))]
    let _ = schemas;
    UnitPart { tools }
}

#[cfg_attr(not(feature = "gate"), allow(unused_variables, unused_assignments))]
fn compile_tool(
    cx: &UnitContext<'_>,
    t: &ToolSpec,
    #[allow(unused_variables)] schemas: &mut SchemaStore,
    bm25: Option<&Bm25Analyzer<'_>>,
) -> ToolPart {
    let key = cx.key;
    let analyzer = cx.analyzer;
    // The schema's tree, parsed from its text on first need and dropped
    // with the tool's compile.
    let tree_cell: OnceCell<Cow<'_, Value>> = OnceCell::new();
    let tree = || -> &Value { tree_cell.get_or_init(|| t.input_schema.value()) };
    let mut diags = Vec::new();
    let mut ok = true;
    let domain_of = |d: &Sp<String>, diags: &mut Vec<Diagnostic>| -> Option<u16> {
        match key.domains.iter().position(|x| *x == d.value) {
            Some(i) => Some(i as u16),
            None => {
                diags.push(
                    t.diag(
                        ErrorKind::UndeclaredDomain,
                        d.span.clone(),
                        format!(
                            "tool `{}`: domain `{}` is not declared in [domains]",
                            echo(&t.name.value),
                            echo(&d.value)
                        ),
                    )
                    .with_suggestion(&d.value, key.domains.iter().map(|s| s.as_str())),
                );
                None
            }
        }
    };
    let stage_of = |s: &Sp<String>, diags: &mut Vec<Diagnostic>| -> Option<usize> {
        match key.stages.iter().position(|x| *x == s.value) {
            Some(i) => Some(i),
            None => {
                diags.push(
                    t.diag(
                        ErrorKind::UndeclaredStage,
                        s.span.clone(),
                        format!(
                            "tool `{}`: stage `{}` is not declared in [stages] names",
                            echo(&t.name.value),
                            echo(&s.value)
                        ),
                    )
                    .with_suggestion(&s.value, key.stages.iter().map(|s| s.as_str())),
                );
                None
            }
        }
    };
    let (min, max, _) = key.complexity;
    let (dom, mask, keywords, priority, complexity, auto) = match &t.tags {
        Some(tags) => {
            let dom: Vec<u16> = tags
                .domains
                .iter()
                .filter_map(|d| domain_of(d, &mut diags))
                .collect();
            let mask = tags
                .preferred_stages
                .iter()
                .filter_map(|s| stage_of(s, &mut diags))
                .fold(0u64, |m, i| m | (1u64 << (i % 64)));
            if dom.len() != tags.domains.len()
                || tags
                    .preferred_stages
                    .iter()
                    .any(|s| !key.stages.contains(&s.value))
            {
                ok = false;
            }
            let bp = tags.base_priority.value;
            if !(0.0..=1.0).contains(&bp) || !bp.is_finite() {
                diags.push(t.diag(
                    ErrorKind::OutOfRange,
                    tags.base_priority.span.clone(),
                    format!(
                        "tool `{}`: base_priority must be within [0, 1], found {}",
                        echo(&t.name.value),
                        // as written (`1e300`, not 301 digits)
                        t.file
                            .as_ref()
                            .and_then(|f| f.text.get(tags.base_priority.span.clone()))
                            .filter(|w| !w.is_empty())
                            .map_or_else(
                                || crate::diag::short_number(bp),
                                |w| crate::diag::number_as_written(w).into_owned()
                            )
                    ),
                ));
                ok = false;
            }
            let c = tags.parameter_complexity.value;
            if c < min || c > max {
                diags.push(t.diag(
                    ErrorKind::OutOfRange,
                    tags.parameter_complexity.span.clone(),
                    format!(
                        "tool `{}`: parameter_complexity {c} is outside the policy's range [{min}, {max}]",
                        echo(&t.name.value)
                    ),
                ));
                ok = false;
            }
            (dom, mask, tags.trigger_keywords.clone(), bp, c, false)
        }
        None => {
            let kws = analyzer.extract_max(&t.description, key.auto_max_keywords);
            let c = match key.auto_complexity {
                AutoComplexity::Fixed(c) => c,
                AutoComplexity::FromSchema => {
                    let n = tree()
                        .get("properties")
                        .and_then(|p| p.as_object())
                        .map(|o| o.len() as i64)
                        .unwrap_or(0);
                    n.clamp(min, max)
                }
            };
            (
                key.auto_domains.clone(),
                key.auto_stages,
                kws,
                f64::from_bits(key.auto_priority),
                c,
                true,
            )
        }
    };
    #[allow(unused_mut)]
    let mut schema_diags = Vec::new();
    #[allow(unused_mut)]
    let mut role_warnings = Vec::new();
    #[cfg(feature = "gate")]
    let schema = if ok {
        let mut sink = crate::diag::Sink::default();
        let s = match schemas.get(&t.input_schema, tree) {
            Ok(s) => Some(s),
            Err(e) => {
                // a JSON tool file's schema problem stands at its value
                let at = t.input_schema_span.clone().or_else(|| {
                    let f = t.file.as_ref()?;
                    let pointer = e.strip_prefix('`')?.split_once("`: ")?.0;
                    crate::parse::tool_file::schema_value_span(&f.text, t.name.span.start, pointer)
                });
                sink.push(t.diag(
                    ErrorKind::InvalidValue,
                    at.unwrap_or(t.name.span.clone()),
                    format!(
                        "tool `{}`: input_schema is not a valid JSON Schema: {e}",
                        echo(&t.name.value)
                    ),
                ));
                None
            }
        };
        if !t.gate.arguments.is_empty() {
            role_warnings = super::gate::check_role_paths_in(t, tree(), &mut sink);
        }
        schema_diags = sink.diagnostics;
        s
    } else {
        None
    };
    let mut kw_terms = Vec::new();
    for k in &keywords {
        analyzer.expand_into(k, &mut kw_terms);
    }
    let tool = CompiledTool {
        name: t.name.value.clone(),
        aliases: t.aliases.iter().map(|a| a.value.clone()).collect(),
        description: t.description.clone(),
        input_schema: t.input_schema.clone(),
        domains: dom,
        stage_mask: mask,
        keyword_count: 0,
        keyword_ids: Vec::new(),
        trigger_keywords: keywords,
        base_priority: priority,
        parameter_complexity: complexity,
        complexity_penalty: key.penalty(complexity),
        gate: t.gate.clone(),
        auto_tagged: auto,
    };
    let bm25 = bm25.map(|a| {
        Bm25Doc::of(
            a,
            &ToolText {
                name: &tool.name,
                description: &tool.description,
                input_schema: a.reads_parameters().then(tree),
                keywords: &tool.trigger_keywords,
            },
        )
    });
    #[cfg(feature = "gate")]
    let roles = match (cx.gate, &schema) {
        (Some(cfg), Some(_)) => Some(super::gate::tool_roles(cfg, &tool, tree(), &key.domains)),
        _ => None,
    };
    ToolPart {
        tool,
        diags,
        #[cfg(feature = "gate")]
        schema,
        #[cfg(feature = "gate")]
        roles,
        schema_diags,
        role_warnings,
        kw_terms,
        bm25,
    }
}

/// A unit's compiled tools as [`link`] takes them: kept by the cache (copied
/// into the catalog) or owned (moved into it: a compile that keeps nothing).
pub(crate) enum UnitTools<'a> {
    Kept(&'a UnitPart),
    Owned(UnitPart),
}

/// Where [`link`] first saw a tool name.
struct Seen<'a> {
    file: Option<&'a Arc<SourceFile>>,
    offset: usize,
    /// Seen as an alias (not as the tool's full name).
    alias: bool,
    /// The full name of the tool it names.
    owner: &'a str,
}

/// Links compiled units into a catalog (`gate`: the `[gate]` configuration
/// when it loads, for the gate's per-tool data).
pub(crate) fn link<'a>(
    key: &CatalogKey,
    analyzer: &Analyzer,
    units: Vec<(&'a [ToolSpec], UnitTools<'a>)>,
    #[cfg(feature = "gate")] gate: Option<&GateConfig>,
) -> LinkedCatalog {
    let n: usize = units.iter().map(|(s, _)| s.len()).sum();
    let mut hash = FNV_START;
    let mut diags = Vec::new();
    let mut warnings = Vec::new();
    let mut by_name: NameMap<usize> = NameMap::default();
    by_name.reserve(n);
    // name -> where it was first declared (file, byte offset; rendered only
    // on a clash), whether as an alias, and the tool it names
    let mut first_seen: rustc_hash::FxHashMap<&str, Seen<'_>> = Default::default();
    first_seen.reserve(n);
    let mut tools = Vec::with_capacity(n);
    let mut tool_files: Vec<String> = Vec::new();
    let mut last_file: Option<&Arc<SourceFile>> = None;
    let mut with_follows = Vec::new();
    let mut vocab: NameMap<u32> = NameMap::default();
    let mut docs: Vec<Cow<'a, Bm25Doc>> = Vec::new();
    #[cfg(feature = "gate")]
    let mut schemas: Vec<Option<(ToolSchema, Option<ToolRoles>)>> = Vec::with_capacity(n);
    for (specs, part) in units {
        let parts: Box<dyn Iterator<Item = Cow<'a, ToolPart>>> = match part {
            UnitTools::Kept(p) => Box::new(p.tools.iter().map(Cow::Borrowed)),
            UnitTools::Owned(p) => Box::new(p.tools.into_iter().map(Cow::Owned)),
        };
        for (t, p) in specs.iter().zip(parts) {
            if let Some(f) = &t.file {
                let seen =
                    last_file.is_some_and(|l| Arc::ptr_eq(l, f)) || tool_files.contains(&f.name);
                if !seen {
                    // Content only: `tool-tags`, `./tool-tags/` and an
                    // absolute path hash alike (issue 29). The length
                    // keeps the files' boundaries apart.
                    fnv1a(&mut hash, &(f.text.len() as u64).to_le_bytes());
                    fnv1a(&mut hash, f.text.as_bytes());
                    tool_files.push(f.name.clone());
                }
                last_file = Some(f);
            }
            let idx = tools.len();
            let mut ok = true;
            for (k, n) in std::iter::once(&t.name).chain(t.aliases.iter()).enumerate() {
                let alias = k > 0;
                if n.value.is_empty()
                    || n.value.chars().any(|c| c.is_control() || c.is_whitespace())
                {
                    diags.push(t.diag(
                        ErrorKind::InvalidValue,
                        n.span.clone(),
                        format!(
                            "tool name {:?} must be non-empty, without spaces or control characters",
                            echo(&n.value)
                        ),
                    ));
                    ok = false;
                    continue;
                }
                let Some(seen) = first_seen.get_mut(n.value.as_str()) else {
                    first_seen.insert(
                        n.value.as_str(),
                        Seen {
                            file: t.file.as_ref(),
                            offset: n.span.start,
                            alias,
                            owner: t.name.value.as_str(),
                        },
                    );
                    by_name.insert(n.value.clone(), idx);
                    continue;
                };
                // Two tools' full names clash: an error. An alias (a bare
                // MCP name such as `write_file`) that clashes is dropped
                // instead: a full name keeps it, two aliases lose it.
                match (seen.alias, alias) {
                    (false, false) => {
                        let prev = match seen.file {
                            Some(f) => {
                                let (l, c) = f.line_col(seen.offset);
                                format!("{}:{l}:{c}", f.name)
                            }
                            None => "declared inline".to_string(),
                        };
                        diags.push(t.diag(
                            ErrorKind::DuplicateTool,
                            n.span.clone(),
                            format!("tool name `{}` is already used ({prev})", echo(&n.value)),
                        ));
                        ok = false;
                    }
                    (false, true) => warnings.push(format!(
                        "`{}` is the name of `{}`, so it is not an alias of `{}` (call that tool by its full name)",
                        echo(&n.value),
                        echo(seen.owner),
                        echo(&t.name.value)
                    )),
                    (true, false) => {
                        warnings.push(format!(
                            "`{}` names the tool `{}`, so it is no longer an alias of `{}` (call that tool by its full name)",
                            echo(&n.value),
                            echo(&t.name.value),
                            echo(seen.owner)
                        ));
                        *seen = Seen {
                            file: t.file.as_ref(),
                            offset: n.span.start,
                            alias: false,
                            owner: t.name.value.as_str(),
                        };
                        by_name.insert(n.value.clone(), idx);
                    }
                    (true, true) => {
                        if by_name.remove(n.value.as_str()).is_some() {
                            warnings.push(format!(
                                "`{}` is an alias of both `{}` and `{}`, so it names neither (call them by their full names)",
                                echo(&n.value),
                                echo(seen.owner),
                                echo(&t.name.value)
                            ));
                        }
                    }
                }
            }
            diags.extend(p.diags.iter().cloned());
            if !p.diags.is_empty() {
                ok = false;
            }
            if !ok {
                continue;
            }
            diags.extend(p.schema_diags.iter().cloned());
            warnings.extend(p.role_warnings.iter().cloned());
            #[cfg(feature = "gate")]
            schemas.push(p.schema.clone().map(|s| (s, p.roles.clone())));
            let mut ids: Vec<u32> = Vec::with_capacity(p.kw_terms.len());
            for term in &p.kw_terms {
                let next = vocab.len() as u32;
                let id = match vocab.get(term.as_str()) {
                    Some(id) => *id,
                    None => {
                        vocab.insert(term.clone(), next);
                        next
                    }
                };
                ids.push(id);
            }
            ids.sort_unstable();
            ids.dedup();
            if !t.follows.is_empty() {
                with_follows.push((idx, t.clone()));
            }
            let (mut tool, doc) = match p {
                Cow::Borrowed(p) => (p.tool.clone(), p.bm25.as_ref().map(Cow::Borrowed)),
                Cow::Owned(p) => (p.tool, p.bm25.map(Cow::Owned)),
            };
            docs.extend(doc);
            tool.keyword_count = ids.len() as u32;
            tool.keyword_ids = ids;
            tools.push(tool);
        }
    }
    let mut hot = Vec::with_capacity(tools.len());
    let mut hot_domains = Vec::new();
    let mut hot_keywords = Vec::new();
    for t in &tools {
        hot.push(HotTool {
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
    let mut name_index = NameIndex::default();
    let mut names: Vec<(&String, &usize)> = by_name.iter().collect();
    names.sort_by_key(|(_, i)| **i);
    for (n, i) in names {
        name_index.insert(n, *i);
    }
    let terms = analyzer.tool_terms(
        tools
            .iter()
            .map(|t| t.trigger_keywords.iter().map(String::as_str)),
    );
    let bm25 = key
        .bm25
        .as_ref()
        .filter(|_| docs.len() == tools.len())
        .map(|p| Bm25Index::from_doc_iter(p, docs.into_iter()));
    #[cfg(feature = "gate")]
    let gate_tools = match gate {
        Some(cfg) if diags.is_empty() => {
            super::gate::gate_tools(cfg, &tools, schemas, &key.domains).map(Arc::new)
        }
        _ => None,
    };
    LinkedCatalog {
        tools: Arc::new(tools),
        hot,
        hot_domains,
        hot_keywords,
        vocab,
        by_name: Arc::new(by_name),
        name_index,
        bm25,
        #[cfg(feature = "gate")]
        gate_tools,
        terms,
        with_follows,
        hash,
        tool_files,
        warnings,
        diags,
    }
}

/// What the last [`super::CompileCache::compile`] recompiled and what it
/// reused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompileStats {
    /// Units (tool files, tag files, servers) whose tools were compiled.
    pub units_compiled: usize,
    /// Units whose compiled tools were reused.
    pub units_reused: usize,
    /// Tools compiled (in the compiled units).
    pub tools_compiled: usize,
    /// Whether the whole linked catalog was reused (a policy-only edit).
    pub catalog_reused: bool,
    /// Distinct input schemas compiled.
    pub schemas_compiled: usize,
    /// Tools whose input schema was found already compiled.
    pub schemas_reused: usize,
    /// Tools embedded for `semantic_match` (0 without it).
    pub embeddings_computed: usize,
    /// Tools whose `semantic_match` embedding was reused from the last
    /// compile (same model, name, description and input schema).
    pub embeddings_reused: usize,
}

/// A unit of tools (a tool file, a tag file, a server's listing).
pub type Unit = Arc<Vec<ToolSpec>>;

/// The reusable parts of the last compile.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    pub(crate) schemas: SchemaStore,
    /// Units compiled against `key`.
    pub(crate) units: Vec<(Arc<Vec<ToolSpec>>, Arc<UnitPart>)>,
    pub(crate) key: Option<CatalogKey>,
    /// The last linked catalog, with its units and key.
    pub(crate) linked: Option<(Vec<Unit>, Arc<LinkedCatalog>)>,
    pub(crate) stats: CompileStats,
    /// Keep nothing for a next compile (`compile::compile`): the compiled
    /// tools move into the catalog instead of being copied.
    pub(crate) once: bool,
    /// The last catalog's tool embeddings for `semantic_match`: a
    /// policy-only edit reuses them all, a changed unit embeds its own tools
    /// only.
    pub(crate) semantic: Option<SemanticMemo>,
}

/// See [`Parts::semantic`]: the last catalog's tool embeddings, with the
/// catalog's tools and the model they were made from (by address, held
/// weakly), and, for a catalog in which only some units changed, every
/// tool's row under a key of what its text is made from.
#[derive(Debug)]
pub(crate) struct SemanticMemo {
    pub(crate) tools: std::sync::Weak<Vec<CompiledTool>>,
    pub(crate) model: std::sync::Weak<crate::text::semantic::SemanticModel>,
    pub(crate) vectors: Arc<crate::text::semantic::ToolVectors>,
    /// [`SemanticMemo::key`] of each tool → its row in `vectors`.
    pub(crate) rows: std::collections::HashMap<u64, u32>,
    /// The keys' hasher: SipHash with this process's random keys, so that
    /// no tool text can be made to collide with another on purpose.
    pub(crate) state: std::collections::hash_map::RandomState,
}

impl SemanticMemo {
    /// The key of `tool`'s embedding: a hash of what [`tool_text`] reads
    /// (name, description, and the input schema by its text's hash).
    ///
    /// [`tool_text`]: crate::text::semantic::tool_text
    pub(crate) fn key(state: &std::collections::hash_map::RandomState, tool: &CompiledTool) -> u64 {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut h = state.build_hasher();
        tool.name.hash(&mut h);
        tool.description.hash(&mut h);
        tool.input_schema.hash64().hash(&mut h);
        h.finish()
    }
}

impl Parts {
    /// The linked catalog of `units` under `key`: reused, or linked from
    /// reused and newly compiled units.
    pub(crate) fn catalog(
        &mut self,
        key: &CatalogKey,
        analyzer: &Analyzer,
        units: &[Arc<Vec<ToolSpec>>],
        #[cfg(feature = "gate")] gate: Option<&GateConfig>,
    ) -> Arc<LinkedCatalog> {
        self.stats = CompileStats::default();
        self.schemas.begin();
        if self.key.as_ref() != Some(key) {
            self.units.clear();
            self.linked = None;
            self.key = Some(key.clone());
        }
        #[cfg(feature = "gate")]
        let gate_ok = gate.is_some();
        #[cfg(not(feature = "gate"))]
        let gate_ok = true;
        if let Some((us, linked)) = &self.linked
            && us.len() == units.len()
            && us.iter().zip(units).all(|(a, b)| Arc::ptr_eq(a, b))
            && gate_ok
        {
            let linked = linked.clone();
            self.stats.catalog_reused = true;
            self.stats.units_reused = units.len();
            #[cfg(feature = "gate")]
            for (_, part) in &self.units {
                self.schemas.touch(part);
            }
            self.schemas.sweep();
            return linked;
        }
        let cx = UnitContext {
            key,
            analyzer,
            #[cfg(feature = "gate")]
            gate,
        };
        if self.once {
            let mut owned = Vec::with_capacity(units.len());
            for u in units {
                self.stats.units_compiled += 1;
                self.stats.tools_compiled += u.len();
                let part = compile_unit(&cx, u, &mut self.schemas);
                owned.push((u.as_slice(), UnitTools::Owned(part)));
            }
            self.stats.schemas_compiled = self.schemas.compiled;
            self.stats.schemas_reused = self.schemas.reused;
            // Nothing is kept for a next compile: the compiled schemas live
            // on in the tools' parts.
            self.schemas = SchemaStore::default();
            return Arc::new(link(
                key,
                analyzer,
                owned,
                #[cfg(feature = "gate")]
                gate,
            ));
        }
        let mut parts: Vec<(Arc<Vec<ToolSpec>>, Arc<UnitPart>)> = Vec::with_capacity(units.len());
        for u in units {
            let found = self
                .units
                .iter()
                .find(|(a, _)| Arc::ptr_eq(a, u))
                .map(|(_, p)| p.clone());
            let part = match found {
                Some(p) => {
                    self.stats.units_reused += 1;
                    #[cfg(feature = "gate")]
                    self.schemas.touch(&p);
                    p
                }
                None => {
                    self.stats.units_compiled += 1;
                    self.stats.tools_compiled += u.len();
                    Arc::new(compile_unit(&cx, u, &mut self.schemas))
                }
            };
            parts.push((u.clone(), part));
        }
        let refs: Vec<(&[ToolSpec], UnitTools<'_>)> = parts
            .iter()
            .map(|(u, p)| (u.as_slice(), UnitTools::Kept(p.as_ref())))
            .collect();
        let linked = Arc::new(link(
            key,
            analyzer,
            refs,
            #[cfg(feature = "gate")]
            gate,
        ));
        self.stats.schemas_compiled = self.schemas.compiled;
        self.stats.schemas_reused = self.schemas.reused;
        self.schemas.sweep();
        self.linked =
            (linked.diags.is_empty() && gate_ok).then(|| (units.to_vec(), linked.clone()));
        self.units = parts;
        linked
    }
}
