//! Reading a policy file (`policies/*.toml`) into a [`PolicySource`].
//!
//! This stage only checks what one file can check by itself: TOML syntax, key
//! names, value types, finiteness and simple ranges. Cross-references (formula
//! names, domains named by rules, examples) are checked when the policy is
//! compiled.
//! The keys are documented in `docs/policy-reference.md`.

use std::ops::Range;
use std::sync::Arc;

use crate::diag::{Diagnostic, ErrorKind, LoadError, SourceFile};
use crate::parse::reader::{Reader, Table};
use crate::parse::selection::{
    ExpansionParams, MemoryParams, RelevanceParams, SemanticParams, TransitionParams,
    read_expansion, read_memory, read_relevance, read_semantic, read_transitions,
};

/// A value with the byte span it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Sp<T> {
    /// The value.
    pub value: T,
    /// Byte range in the source file.
    pub span: Range<usize>,
}

impl<T> Sp<T> {
    /// Pairs a value with its span.
    pub fn new(value: T, span: Range<usize>) -> Self {
        Sp { value, span }
    }
}

/// How the usage term is normalised (seed 000 has two versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageNormalization {
    /// The tool's call count divided by the busiest tool's count (the seed's
    /// `ConditionalToolRegistry`).
    BusiestTool,
    /// A usage frequency in \[0,1\] given with the usage (the seed's
    /// `compute_activation_score`, `usage_stats[tool]`).
    Frequency,
}

/// How `keyword_match` compares a tool's trigger keywords with the intent keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeywordMethod {
    /// |T ∩ I| / |T ∪ I| over lowercased sets (seed 000 `_keyword_match`).
    Jaccard,
    /// |T ∩ I| / |T|: the share of the tool's keywords the user mentioned.
    Containment,
    /// BM25 of the intent keywords over each tool's name, description,
    /// parameters and keywords, divided by the best tool's score
    /// (the `text::bm25` index); parameters in [`FeatureParams::bm25`].
    Bm25,
}

/// `[features.keyword_match.fields]`: how much each part of a tool counts in
/// its BM25 document (0 = not indexed).
#[derive(Debug, Clone, PartialEq)]
pub struct Bm25Fields {
    /// The tool's name.
    pub name: f64,
    /// Its description.
    pub description: f64,
    /// The property names of its input schema (nested ones included).
    pub parameters: f64,
    /// The descriptions of those properties.
    pub parameter_descriptions: f64,
    /// Its trigger keywords.
    pub keywords: f64,
}

/// The parameters of `method = "bm25"` (all in `[features.keyword_match]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation `k1` (>= 0).
    pub k1: f64,
    /// Length normalisation `b`, in [0,1].
    pub b: f64,
    /// Field weights.
    pub fields: Bm25Fields,
    /// Cut identifiers at `_`, `.`, case and letter/digit changes.
    pub split_identifiers: bool,
    /// Snowball stemmer applied to every term, if any.
    pub stemmer: Option<rust_stemmers::Algorithm>,
    /// Raw scores are divided by `max(best raw score, score_floor)` (>= 0): a
    /// floor above 0 keeps weak best matches below 1.
    pub score_floor: f64,
    /// `[features.keyword_match.relevance]`: absolute floors, if any.
    pub relevance: Option<RelevanceParams>,
    /// `[features.keyword_match.expansion]`: catalog-derived query expansion, if any.
    pub expansion: Option<ExpansionParams>,
    /// `query_term_count`: each distinct query term once (default) or every occurrence.
    pub query_counting: crate::parse::selection::QueryCounting,
    /// `[features.keyword_match.clauses]`: per-clause scores, if any.
    pub clauses: Option<crate::parse::selection::ClauseParams>,
}

/// How CJK text is cut into terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CjkMode {
    /// Overlapping character pairs (`数据库` → `数据`, `据库`); a lone character stays.
    Bigrams,
    /// One term per character.
    Unigrams,
    /// CJK text yields no terms (the seed's behaviour; not recommended).
    Off,
}

/// Where an auto-tagged tool's parameter complexity comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AutoComplexity {
    /// A fixed value.
    Fixed(i64),
    /// The number of properties in the input schema, clamped to the complexity range.
    FromSchema,
}

/// `[activation.cold_start]`: lower the threshold early in a session.
#[derive(Debug, Clone, PartialEq)]
pub struct ColdStart {
    /// Cold start holds while the session has made fewer than this many calls.
    pub min_calls: u64,
    /// The threshold is multiplied by this factor, in \[0,1\] (seed 000: 0.6).
    pub threshold_factor: Sp<f64>,
}

/// `[activation]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivationSection {
    /// Activation threshold (a finite number within the clamp `[low, high]`;
    /// it must be reachable: at most the highest score at compile): a tool is
    /// active when its (clamped) score ≥ this.
    pub threshold: Sp<f64>,
    /// Clamp bounds `[low, high]` of the score.
    pub clamp: Sp<(f64, f64)>,
    /// Cold-start rule, if any.
    pub cold_start: Option<ColdStart>,
    /// Tools that are always active.
    pub pinned: Vec<Sp<String>>,
    /// At most this many tools are active (top-k by score), if set.
    pub max_active: Option<usize>,
    /// At least this many tools are active (the best-scoring are added).
    pub min_active: usize,
    /// A tool that was active stays active until its score falls below the
    /// effective threshold minus this margin.
    pub hysteresis_margin: f64,
    /// How many recent calls a session keeps in `recent_tool_calls` (seed: 5).
    pub recent_calls_window: usize,
}

/// `[features.*]`: the parameters of the built-in features.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureParams {
    /// `domain_match` when no domain weight can be inferred.
    pub domain_neutral: f64,
    /// Keyword comparison.
    pub keyword_method: KeywordMethod,
    /// BM25 parameters, present when `keyword_method` is [`KeywordMethod::Bm25`].
    pub bm25: Option<Bm25Params>,
    /// `stage_match` when the context's stage is one of the tool's preferred stages.
    pub stage_hit: f64,
    /// `stage_match` otherwise.
    pub stage_miss: f64,
    /// Usage normalisation.
    pub usage_normalization: UsageNormalization,
    /// `usage_bonus = min(normalised_usage * multiplier, cap)`.
    pub usage_multiplier: f64,
    /// See `usage_multiplier`.
    pub usage_cap: f64,
    /// A tool called less than this many seconds ago gets the recency bonus.
    pub recency_window_seconds: f64,
    /// The recency bonus.
    pub recency_bonus: f64,
    /// Lowest parameter complexity a tag may declare.
    pub complexity_min: i64,
    /// Highest parameter complexity a tag may declare.
    pub complexity_max: i64,
    /// `complexity_penalty = min((c - min) / (max - min), cap)`.
    pub complexity_cap: f64,
    /// `[features.transition_match]`; `None` = the feature is 0 for every tool.
    pub transitions: Option<TransitionParams>,
    /// `[features.semantic_match]`; `None` = the feature is 0 for every tool.
    pub semantic: Option<SemanticParams>,
    /// `[features.argument_fill]`: the per-tool "can the request fill the
    /// required parameters?" gate; `None` = off.
    pub argument_fill: Option<crate::parse::argument_fill::ArgumentFillParams>,
}

/// A condition of a domain rule: every present matcher must hold.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Condition {
    /// The active language is one of these (case-insensitive).
    pub language: Vec<String>,
    /// The project type is one of these.
    pub project_type: Vec<String>,
    /// The conversation stage is one of these.
    pub stage: Vec<Sp<String>>,
    /// Some intent keyword equals one of these (case-insensitive).
    pub keywords_any: Vec<String>,
    /// Some recent tool name contains one of these substrings (case-insensitive).
    pub recent_tools_contain: Vec<String>,
    /// Some active file has one of these extensions (without the dot).
    pub file_extensions: Vec<String>,
    /// An evalexpr boolean expression (see `docs/policy-reference.md`).
    pub expr: Option<Sp<String>>,
}

/// One `[[domain_rules]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainRule {
    /// Name for explanations.
    pub name: String,
    /// When it applies.
    pub when: Condition,
    /// Domain → weight delta (may be negative).
    pub adjust: Vec<(Sp<String>, f64)>,
    /// Span of the rule.
    pub span: Range<usize>,
}

/// `[keywords]`: extraction of intent keywords from a raw user message.
#[derive(Debug, Clone, PartialEq)]
pub struct KeywordParams {
    /// Minimum term length in characters (seed: 3).
    pub min_length: usize,
    /// At most this many terms are kept, in message order (seed: 10).
    pub max_count: usize,
    /// Terms dropped (compared after lowercasing).
    pub stop_words: Vec<String>,
    /// Keep only words made solely of letters (the seed's `[a-z]{3,}` drops `abc1`).
    pub letters_only: bool,
    /// How CJK runs are cut.
    pub cjk: CjkMode,
}

/// `[auto_tags]`: tags given to tools that come without any.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoTags {
    /// Base priority (seed 000: 0.3).
    pub base_priority: f64,
    /// Keywords taken from the description with the `[keywords]` extractor, at most this many.
    pub max_keywords: usize,
    /// Domains given to every auto-tagged tool.
    pub domains: Vec<Sp<String>>,
    /// Stages given to every auto-tagged tool.
    pub preferred_stages: Vec<Sp<String>>,
    /// Complexity source.
    pub parameter_complexity: AutoComplexity,
}

/// One `[[examples.calls]]` entry: a tool call and the decision the call
/// gate must reach for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExampleCall {
    /// Tool name.
    pub tool: Sp<String>,
    /// The call's arguments (a JSON object; `{}` when absent).
    pub arguments: serde_json::Value,
    /// `allow`, `ask` or `deny`.
    pub decision: Sp<String>,
    /// Span of the call.
    pub span: Range<usize>,
}

/// One `[[examples]]` entry: a context and what must be active or not, and
/// calls with the gate decision each must get.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// Name shown when it fails.
    pub name: String,
    /// The eval input (`context`, `message`, `usage`) as JSON.
    pub input: serde_json::Value,
    /// Tools that must be active.
    pub active: Vec<Sp<String>>,
    /// Tools that must not be active.
    pub inactive: Vec<Sp<String>>,
    /// Calls and the gate decision each must get.
    pub calls: Vec<ExampleCall>,
    /// Span of the example.
    pub span: Range<usize>,
}

/// `[reload]`: how a hot-reloading host (`toolgate watch`, the `reload`
/// feature) watches this policy. Every key is optional; absent keys take the
/// reloader's defaults, and command-line options override them. Read when
/// the watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReloadParams {
    /// Quiet time after the last file event before a reload, in milliseconds,
    /// within [1, 60000] (default 100).
    pub debounce_ms: Option<u64>,
    /// When set, poll the files every this many milliseconds instead of using
    /// file-system events (network mounts, some containers), within
    /// [10, 3600000].
    pub poll_interval_ms: Option<u64>,
    /// Pause between the two reads that must agree before content is applied,
    /// in milliseconds, within [0, 10000] (default 25).
    pub settle_ms: Option<u64>,
}

/// A policy file as read, before compilation.
#[derive(Debug, Clone)]
pub struct PolicySource {
    /// The file.
    pub file: Arc<SourceFile>,
    /// `[policy] name`.
    pub name: String,
    /// `[policy] description`.
    pub description: String,
    /// `[activation]`.
    pub activation: ActivationSection,
    /// `[score] formula`.
    pub formula: Sp<String>,
    /// `[score.weights]`: name → weight.
    pub weights: Vec<(Sp<String>, f64)>,
    /// `[features.*]`.
    pub features: FeatureParams,
    /// `[domains]`: name → base weight, in file order.
    pub domains: Vec<(Sp<String>, f64)>,
    /// `[stages] names`.
    pub stages: Vec<Sp<String>>,
    /// `[[domain_rules]]`.
    pub domain_rules: Vec<DomainRule>,
    /// `[keywords]`.
    pub keywords: KeywordParams,
    /// `[auto_tags]`.
    pub auto_tags: AutoTags,
    /// `[[examples]]`.
    pub examples: Vec<Example>,
    /// `[[properties]]`: what `toolgate check` proves or refutes.
    pub properties: Vec<crate::parse::properties::PropertySource>,
    /// `[gate]` and other sections read by later stages, kept as raw JSON with its span.
    pub gate: Option<Sp<serde_json::Value>>,
    /// `[reload]`.
    pub reload: ReloadParams,
    /// `[discovery]`: tool search and exposure for MCP hosts.
    pub discovery: crate::parse::discovery::DiscoveryParams,
    /// `[keywords.memory]`; `None` = only the latest message counts (seed 000).
    pub memory: Option<MemoryParams>,
}

fn sp_list(v: Option<Vec<(String, Range<usize>)>>) -> Vec<Sp<String>> {
    v.unwrap_or_default()
        .into_iter()
        .map(|(s, r)| Sp::new(s, r))
        .collect()
}

fn plain_list(v: Option<Vec<(String, Range<usize>)>>) -> Vec<String> {
    v.unwrap_or_default().into_iter().map(|(s, _)| s).collect()
}

fn in_range(
    t: &Table<'_, '_>,
    key: &str,
    v: Option<(f64, Range<usize>)>,
    lo: f64,
    hi: f64,
) -> Option<f64> {
    let (x, span) = v?;
    if x < lo || x > hi {
        let found = t.reader().written(&span);
        t.reader().error(
            ErrorKind::OutOfRange,
            span,
            format!(
                "`{}` must be within [{}, {}], found {found}",
                join(t.path(), key),
                crate::diag::short_number(lo),
                if hi == f64::MAX {
                    "∞".to_string()
                } else {
                    crate::diag::short_number(hi)
                }
            ),
        );
        return None;
    }
    Some(x)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn non_negative(t: &Table<'_, '_>, key: &str, v: Option<(f64, Range<usize>)>) -> Option<f64> {
    in_range(t, key, v, 0.0, f64::MAX)
}

fn count(t: &Table<'_, '_>, key: &str) -> Option<usize> {
    let (x, span) = t.int(key)?;
    if x < 0 {
        let found = t.reader().written(&span);
        t.reader().error(
            ErrorKind::OutOfRange,
            span,
            format!("`{}` must be 0 or more, found {found}", join(t.path(), key)),
        );
        return None;
    }
    Some(x as usize)
}

/// `max_active = 0` is refused at its value (always `false`, for
/// `filter`): a cap of 0 tools leaves every session with no active tool
/// (and the proxy's searches, whose `limit` defaults to it, with no
/// result), which no policy means (issue 29).
fn no_cap_of_zero(t: &Table<'_, '_>) -> bool {
    if let Some((_, span)) = t.int("max_active") {
        t.reader().push(
            Diagnostic::at(
                ErrorKind::OutOfRange,
                &t.reader().file,
                span,
                format!(
                    "`{}` = 0 leaves every session with no active tool",
                    join(t.path(), "max_active")
                ),
            )
            .with_help("give 1 or more, or leave the key out for no cap"),
        );
    }
    false
}

pub(crate) fn choice<T: Copy>(t: &Table<'_, '_>, key: &str, options: &[(&str, T)]) -> Option<T> {
    let (s, span) = t.str(key)?;
    if let Some((_, v)) = options.iter().find(|(n, _)| *n == s) {
        return Some(*v);
    }
    let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
    t.reader().push(
        Diagnostic::at(
            ErrorKind::InvalidValue,
            &t.reader().file,
            span,
            format!(
                "`{}` = \"{s}\" is not one of: {}",
                join(t.path(), key),
                names.join(", ")
            ),
        )
        .with_suggestion(&s, names.iter().copied()),
    );
    None
}

const STEMMERS: &[(&str, rust_stemmers::Algorithm)] = {
    use rust_stemmers::Algorithm::*;
    &[
        ("arabic", Arabic),
        ("danish", Danish),
        ("dutch", Dutch),
        ("english", English),
        ("finnish", Finnish),
        ("french", French),
        ("german", German),
        ("greek", Greek),
        ("hungarian", Hungarian),
        ("italian", Italian),
        ("norwegian", Norwegian),
        ("portuguese", Portuguese),
        ("romanian", Romanian),
        ("russian", Russian),
        ("spanish", Spanish),
        ("swedish", Swedish),
        ("tamil", Tamil),
        ("turkish", Turkish),
    ]
};

/// Reads the BM25 keys of `[features.keyword_match]` (every one required but
/// `score_floor`, which defaults to 0 = plain best-score normalisation).
fn read_bm25(t: &Table<'_, '_>) -> Bm25Params {
    let k1 = non_negative(t, "k1", t.req_f64("k1")).unwrap_or(INVALID);
    let b = in_range(t, "b", t.req_f64("b"), 0.0, 1.0).unwrap_or(INVALID);
    let split_identifiers = match t.require("split_identifiers") {
        Some(v) => v.bool().unwrap_or(false),
        None => false,
    };
    let stemmer = if t.get("stemmer").is_none() {
        t.require("stemmer");
        None
    } else {
        let mut opts: Vec<(&str, Option<rust_stemmers::Algorithm>)> = vec![("none", None)];
        opts.extend(STEMMERS.iter().map(|(n, a)| (*n, Some(*a))));
        choice(t, "stemmer", &opts).flatten()
    };
    let score_floor = non_negative(t, "score_floor", t.f64("score_floor")).unwrap_or(0.0);
    let mut fields = Bm25Fields {
        name: 0.0,
        description: 0.0,
        parameters: 0.0,
        parameter_descriptions: 0.0,
        keywords: 0.0,
    };
    match t.table("fields") {
        Some(f) => {
            let w = |key: &str| non_negative(&f, key, f.f64(key)).unwrap_or(0.0);
            fields.name = w("name");
            fields.description = w("description");
            fields.parameters = w("parameters");
            fields.parameter_descriptions = w("parameter_descriptions");
            fields.keywords = w("keywords");
            if fields.name
                + fields.description
                + fields.parameters
                + fields.parameter_descriptions
                + fields.keywords
                <= 0.0
            {
                t.reader().error(
                    ErrorKind::OutOfRange,
                    f.span.clone(),
                    "`features.keyword_match.fields` must give at least one field a weight above 0",
                );
            }
        }
        None => {
            t.require("fields");
        }
    }
    Bm25Params {
        k1,
        b,
        fields,
        split_identifiers,
        stemmer,
        score_floor,
        relevance: read_relevance(t),
        expansion: read_expansion(t),
        query_counting: crate::parse::selection::read_query_counting(t),
        clauses: crate::parse::selection::read_clauses(t),
    }
}

fn read_example_call(c: &Table<'_, '_>) -> Option<ExampleCall> {
    let tool = c
        .require("tool")
        .and_then(|v| v.string().map(|s| Sp::new(s, v.span.clone())));
    let arguments = match c.get("arguments") {
        Some(v) => match v.to_json() {
            Some(j @ serde_json::Value::Object(_)) => Some(j),
            Some(_) => {
                c.reader().error(
                    ErrorKind::WrongType,
                    v.span.clone(),
                    "`examples.calls.arguments` must be a table (the call's JSON arguments)",
                );
                None
            }
            None => None,
        },
        None => Some(serde_json::json!({})),
    };
    let decision = c.require("decision").and_then(|v| {
        let s = v.string()?;
        if ["allow", "ask", "deny"].contains(&s.as_str()) {
            Some(Sp::new(s, v.span.clone()))
        } else {
            c.reader().push(
                Diagnostic::at(
                    ErrorKind::InvalidValue,
                    &c.reader().file,
                    v.span.clone(),
                    format!("`examples.calls.decision` = \"{s}\" is not one of: allow, ask, deny"),
                )
                .with_suggestion(&s, ["allow", "ask", "deny"]),
            );
            None
        }
    });
    Some(ExampleCall {
        tool: tool?,
        arguments: arguments?,
        decision: decision?,
        span: c.span.clone(),
    })
}

/// Placeholder used when a required value is missing or invalid (the load
/// fails anyway; this only lets the reader go on and find more problems).
const INVALID: f64 = f64::NAN;

/// Reads a policy file. All problems of the file are reported together.
pub fn parse_policy(file: Arc<SourceFile>) -> Result<PolicySource, LoadError> {
    let f2 = file.clone();
    Reader::parse_document(file, |root| read_policy(f2, root))
}

/// [`parse_policy`], also giving back the policy as read when it has
/// problems past its syntax (placeholders where a value was wrong), with
/// those problems: the loader then also checks the data files that valid
/// keys name, in the same run ([`Reader::parse_document_partial`]).
pub fn parse_policy_partial(
    file: Arc<SourceFile>,
) -> Result<(PolicySource, Vec<Diagnostic>), LoadError> {
    let f2 = file.clone();
    Reader::parse_document_partial(file, |root| read_policy(f2, root))
}

fn read_policy(file: Arc<SourceFile>, root: &Table<'_, '_>) -> PolicySource {
    let r = root.reader();
    let (name, description) = match root.table("policy") {
        Some(p) => (
            p.str("name").map(|x| x.0).unwrap_or_default(),
            p.str("description").map(|x| x.0).unwrap_or_default(),
        ),
        None => (String::new(), String::new()),
    };

    // [activation]
    let activation = {
        let t = root.table("activation");
        match &t {
            Some(t) => {
                let threshold = t.req_f64("threshold");
                // Any finite number: compile checks that scores can reach it.
                let threshold_ok = threshold.clone().map(|x| x.0);
                // The clamp's two finite numbers in order, with whether they
                // were written reversed: a reversed clamp is an error, and the
                // threshold is still checked against its numbers (issue 29).
                let mut bounds: Option<(f64, f64, bool)> = None;
                let clamp = match t.get("clamp") {
                    Some(v) => {
                        let pair = match v.raw() {
                            toml::de::DeValue::Array(a) if a.len() == 2 => {
                                let lo = crate::parse::reader::de_to_json(a[0].get_ref())
                                    .and_then(|x| x.as_f64());
                                let hi = crate::parse::reader::de_to_json(a[1].get_ref())
                                    .and_then(|x| x.as_f64());
                                lo.zip(hi)
                            }
                            _ => None,
                        };
                        bounds = pair
                            .filter(|(lo, hi)| lo.is_finite() && hi.is_finite())
                            .map(|(lo, hi)| (lo.min(hi), lo.max(hi), lo > hi));
                        match pair {
                            Some((lo, hi)) if lo.is_finite() && hi.is_finite() && lo <= hi => {
                                Sp::new((lo, hi), v.span.clone())
                            }
                            _ => {
                                r.error(ErrorKind::InvalidValue, v.span.clone(), "`activation.clamp` must be two finite numbers [low, high] with low <= high");
                                Sp::new((INVALID, INVALID), v.span.clone())
                            }
                        }
                    }
                    None => {
                        t.require("clamp");
                        Sp::new((INVALID, INVALID), t.span.clone())
                    }
                };
                let cold_start = t.table("cold_start").and_then(|c| {
                    let enabled = c.bool("enabled").unwrap_or(true);
                    let min_calls = match c.get("min_calls") {
                        Some(_) => count(&c, "min_calls").map(|x| x as u64),
                        None => {
                            c.require("min_calls");
                            None
                        }
                    };
                    let factor = c.req_f64("threshold_factor");
                    let factor_ok = in_range(&c, "threshold_factor", factor.clone(), 0.0, 1.0);
                    match (enabled, min_calls, factor_ok, factor) {
                        (true, Some(m), Some(x), Some((_, span))) => Some(ColdStart {
                            min_calls: m,
                            threshold_factor: Sp::new(x, span),
                        }),
                        _ => None,
                    }
                });
                let pinned = sp_list(t.str_list("pinned"));
                let max_active = count(t, "max_active").filter(|&k| k > 0 || no_cap_of_zero(t));
                let min_active = count(t, "min_active").unwrap_or(0);
                let hysteresis_margin =
                    non_negative(t, "hysteresis_margin", t.f64("hysteresis_margin")).unwrap_or(0.0);
                let recent_calls_window = match t.get("recent_calls_window") {
                    Some(_) => count(t, "recent_calls_window").unwrap_or(0),
                    None => {
                        t.require("recent_calls_window");
                        0
                    }
                };
                // A threshold above the clamp's upper bound is unreachable
                // whatever the formula (compile checks the formula's own bound).
                let clamped = |(lo, hi, reversed): (f64, f64, bool)| match reversed {
                    false => format!("scores are clamped to [{lo}, {hi}]"),
                    true => format!("the clamp, written reversed, spans {lo} to {hi}"),
                };
                if let (Some(x), Some((_, span)), Some(b)) = (threshold_ok, &threshold, bounds)
                    && x > b.1
                {
                    r.error(
                        ErrorKind::OutOfRange,
                        span.clone(),
                        format!(
                            "threshold {} can never be reached: the highest score is {} ({})",
                            r.written(span),
                            b.1,
                            clamped(b)
                        ),
                    );
                }
                // Below the clamp's lower bound every score passes it, in
                // every session, whatever the catalog: the threshold decides
                // nothing (at the bound itself it is a plain top-k with
                // `max_active`, which compile's findings report).
                if let (Some(x), Some((_, span)), Some(b)) = (threshold_ok, &threshold, bounds)
                    && x < b.0
                {
                    r.push(
                        Diagnostic::at(
                            ErrorKind::OutOfRange,
                            &r.file,
                            span.clone(),
                            format!(
                                "threshold {} is below the lowest score {}: every tool passes it ({})",
                                r.written(span),
                                b.0,
                                clamped(b)
                            ),
                        )
                        .with_help(format!("a threshold lies within the clamp [{}, {}]", b.0, b.1)),
                    );
                }
                ActivationSection {
                    threshold: Sp::new(
                        threshold_ok.unwrap_or(INVALID),
                        threshold.map(|x| x.1).unwrap_or(t.span.clone()),
                    ),
                    clamp,
                    cold_start,
                    pinned,
                    max_active,
                    min_active,
                    hysteresis_margin,
                    recent_calls_window,
                }
            }
            None => {
                root.require("activation");
                ActivationSection {
                    threshold: Sp::new(INVALID, 0..0),
                    clamp: Sp::new((INVALID, INVALID), 0..0),
                    cold_start: None,
                    pinned: vec![],
                    max_active: None,
                    min_active: 0,
                    hysteresis_margin: 0.0,
                    recent_calls_window: 0,
                }
            }
        }
    };

    // [score]
    let mut weights = Vec::new();
    let formula = match root.table("score") {
        Some(s) => {
            let formula = s
                .require("formula")
                .and_then(|v| v.string().map(|x| Sp::new(x, v.span.clone())))
                .unwrap_or_else(|| Sp::new(String::new(), s.span.clone()));
            if let Some(mut w) = s.table("weights") {
                for (k, kspan, v) in w.entries() {
                    if let Some(x) = v.f64() {
                        weights.push((Sp::new(k, kspan), x));
                    }
                }
            }
            formula
        }
        None => {
            root.require("score");
            Sp::new(String::new(), 0..0)
        }
    };

    // [features]
    let features = {
        let ft = root.table("features");
        let sub = |name: &str| ft.as_ref().and_then(|f| f.table(name));
        let missing = |name: &str| {
            if let Some(f) = &ft {
                f.require(name);
            } else {
                root.require("features");
            }
        };
        let mut fp = FeatureParams {
            domain_neutral: INVALID,
            keyword_method: KeywordMethod::Jaccard,
            bm25: None,
            stage_hit: INVALID,
            stage_miss: INVALID,
            usage_normalization: UsageNormalization::BusiestTool,
            usage_multiplier: INVALID,
            usage_cap: INVALID,
            recency_window_seconds: INVALID,
            recency_bonus: INVALID,
            complexity_min: 1,
            complexity_max: 1,
            complexity_cap: INVALID,
            transitions: None,
            semantic: None,
            argument_fill: None,
        };
        match sub("domain_match") {
            Some(t) => fp.domain_neutral = t.req_f64("neutral").map(|x| x.0).unwrap_or(INVALID),
            None => missing("domain_match"),
        }
        match sub("keyword_match") {
            Some(t) => {
                if t.get("method").is_none() {
                    t.require("method");
                }
                fp.keyword_method = choice(
                    &t,
                    "method",
                    &[
                        ("jaccard", KeywordMethod::Jaccard),
                        ("containment", KeywordMethod::Containment),
                        ("bm25", KeywordMethod::Bm25),
                    ],
                )
                .unwrap_or(KeywordMethod::Jaccard);
                if fp.keyword_method == KeywordMethod::Bm25 {
                    fp.bm25 = Some(read_bm25(&t));
                } else {
                    for key in ["relevance", "expansion", "clauses"] {
                        if let Some(span) = t.key_span(key) {
                            t.get(key);
                            r.error(
                                ErrorKind::InvalidValue,
                                span,
                                format!("`features.keyword_match.{key}` needs `method = \"bm25\"`"),
                            );
                        }
                    }
                }
            }
            None => missing("keyword_match"),
        }
        match sub("stage_match") {
            Some(t) => {
                fp.stage_hit = t.req_f64("hit").map(|x| x.0).unwrap_or(INVALID);
                fp.stage_miss = t.req_f64("miss").map(|x| x.0).unwrap_or(INVALID);
            }
            None => missing("stage_match"),
        }
        match sub("usage_bonus") {
            Some(t) => {
                if t.get("normalization").is_none() {
                    t.require("normalization");
                }
                fp.usage_normalization = choice(
                    &t,
                    "normalization",
                    &[
                        ("busiest_tool", UsageNormalization::BusiestTool),
                        ("frequency", UsageNormalization::Frequency),
                    ],
                )
                .unwrap_or(UsageNormalization::BusiestTool);
                fp.usage_multiplier = t.req_f64("multiplier").map(|x| x.0).unwrap_or(INVALID);
                fp.usage_cap = t.req_f64("cap").map(|x| x.0).unwrap_or(INVALID);
            }
            None => missing("usage_bonus"),
        }
        match sub("recency_bonus") {
            Some(t) => {
                fp.recency_window_seconds =
                    non_negative(&t, "window_seconds", t.req_f64("window_seconds"))
                        .unwrap_or(INVALID);
                fp.recency_bonus = t.req_f64("bonus").map(|x| x.0).unwrap_or(INVALID);
            }
            None => missing("recency_bonus"),
        }
        match sub("complexity_penalty") {
            Some(t) => {
                let lo = t.require("min").and_then(|v| v.int());
                let hi = t
                    .require("max")
                    .and_then(|v| v.int().map(|x| (x, v.span.clone())));
                fp.complexity_cap = t.req_f64("cap").map(|x| x.0).unwrap_or(INVALID);
                if let (Some(lo), Some((hi, span))) = (lo, hi) {
                    if hi <= lo {
                        r.error(ErrorKind::OutOfRange, span, format!("`features.complexity_penalty.max` ({hi}) must be greater than `min` ({lo})"));
                    } else {
                        fp.complexity_min = lo;
                        fp.complexity_max = hi;
                    }
                }
            }
            None => missing("complexity_penalty"),
        }
        if let Some(t) = sub("transition_match") {
            fp.transitions = read_transitions(&t);
        }
        if let Some(t) = sub("semantic_match") {
            fp.semantic = read_semantic(&t);
        }
        if let Some(t) = sub("argument_fill") {
            fp.argument_fill = crate::parse::argument_fill::read_argument_fill(&t);
        }
        if let Some(t) = sub("priority_bonus") {
            // No parameters: the tag's base_priority is used as is. The table may
            // exist for documentation; any key in it is unknown.
            drop(t);
        }
        fp
    };

    // [domains]
    let mut domains = Vec::new();
    match root.table("domains") {
        Some(mut d) => {
            for (k, kspan, v) in d.entries() {
                if let Some(x) = v.f64() {
                    domains.push((Sp::new(k, kspan), x));
                }
            }
        }
        None => {
            root.require("domains");
        }
    }

    // [stages]
    let stages = match root.table("stages") {
        Some(s) => {
            let l = s.require("names").and_then(|v| v.str_list());
            sp_list(l)
        }
        None => {
            root.require("stages");
            vec![]
        }
    };

    // [[domain_rules]]
    let mut domain_rules = Vec::new();
    for (i, t) in root.tables("domain_rules").into_iter().enumerate() {
        let name = t
            .str("name")
            .map(|x| x.0)
            .unwrap_or_else(|| format!("rule {}", i + 1));
        let when = match t.table("when") {
            Some(w) => Condition {
                language: plain_list(w.str_list("language")),
                project_type: plain_list(w.str_list("project_type")),
                stage: sp_list(w.str_list("stage")),
                keywords_any: plain_list(w.str_list("keywords_any")),
                recent_tools_contain: plain_list(w.str_list("recent_tools_contain")),
                file_extensions: plain_list(w.str_list("file_extensions")),
                expr: w.str("expr").map(|(s, r)| Sp::new(s, r)),
            },
            None => {
                t.require("when");
                Condition::default()
            }
        };
        let mut adjust = Vec::new();
        match t.table("adjust") {
            Some(mut a) => {
                for (k, kspan, v) in a.entries() {
                    if let Some(x) = v.f64() {
                        adjust.push((Sp::new(k, kspan), x));
                    }
                }
            }
            None => {
                t.require("adjust");
            }
        }
        domain_rules.push(DomainRule {
            name,
            when,
            adjust,
            span: t.span.clone(),
        });
    }

    // [keywords]
    let mut memory = None;
    let keywords = match root.table("keywords") {
        Some(k) => {
            memory = read_memory(&k);
            let min_length = match count(&k, "min_length") {
                Some(x) => x,
                None => {
                    if k.get("min_length").is_none() {
                        k.require("min_length");
                    }
                    0
                }
            };
            let max_count = match count(&k, "max_count") {
                Some(x) => x,
                None => {
                    if k.get("max_count").is_none() {
                        k.require("max_count");
                    }
                    0
                }
            };
            KeywordParams {
                min_length,
                max_count,
                stop_words: plain_list(k.str_list("stop_words"))
                    .into_iter()
                    .map(|s| s.to_lowercase())
                    .collect(),
                letters_only: k.bool("letters_only").unwrap_or(true),
                cjk: choice(
                    &k,
                    "cjk",
                    &[
                        ("bigrams", CjkMode::Bigrams),
                        ("unigrams", CjkMode::Unigrams),
                        ("off", CjkMode::Off),
                    ],
                )
                .unwrap_or(CjkMode::Bigrams),
            }
        }
        None => {
            root.require("keywords");
            KeywordParams {
                min_length: 0,
                max_count: 0,
                stop_words: vec![],
                letters_only: true,
                cjk: CjkMode::Bigrams,
            }
        }
    };

    // [auto_tags]
    let auto_tags = match root.table("auto_tags") {
        Some(a) => {
            let base_priority = in_range(&a, "base_priority", a.req_f64("base_priority"), 0.0, 1.0)
                .unwrap_or(INVALID);
            let max_keywords = count(&a, "max_keywords").unwrap_or(0);
            let parameter_complexity = match a.get("parameter_complexity") {
                Some(v) => match v.raw() {
                    toml::de::DeValue::String(s) if s == "from_schema" => {
                        AutoComplexity::FromSchema
                    }
                    toml::de::DeValue::Integer(_) => AutoComplexity::Fixed(v.int().unwrap_or(1)),
                    _ => {
                        r.error(ErrorKind::WrongType, v.span.clone(), "`auto_tags.parameter_complexity` must be an integer or \"from_schema\"");
                        AutoComplexity::Fixed(1)
                    }
                },
                None => {
                    a.require("parameter_complexity");
                    AutoComplexity::Fixed(1)
                }
            };
            AutoTags {
                base_priority,
                max_keywords,
                domains: sp_list(a.str_list("domains")),
                preferred_stages: sp_list(a.str_list("preferred_stages")),
                parameter_complexity,
            }
        }
        None => {
            root.require("auto_tags");
            AutoTags {
                base_priority: INVALID,
                max_keywords: 0,
                domains: vec![],
                preferred_stages: vec![],
                parameter_complexity: AutoComplexity::Fixed(1),
            }
        }
    };

    // [[examples]]
    let mut examples = Vec::new();
    for (i, t) in root.tables("examples").into_iter().enumerate() {
        let name = t
            .str("name")
            .map(|x| x.0)
            .unwrap_or_else(|| format!("example {}", i + 1));
        let mut input = serde_json::Map::new();
        for key in ["context", "message", "usage", "tools"] {
            if let Some(v) = t.get(key)
                && let Some(j) = v.to_json()
            {
                input.insert(key.to_string(), j);
            }
        }
        let calls = t
            .tables("calls")
            .iter()
            .filter_map(read_example_call)
            .collect();
        examples.push(Example {
            name,
            input: serde_json::Value::Object(input),
            active: sp_list(t.str_list("active")),
            inactive: sp_list(t.str_list("inactive")),
            calls,
            span: t.span.clone(),
        });
    }

    let properties = crate::parse::properties::read_properties(root);

    let gate = root
        .get("gate")
        .and_then(|v| v.to_json().map(|j| Sp::new(j, v.span.clone())));

    // [reload]
    let reload = match root.table("reload") {
        Some(t) => {
            let ms = |key: &str, lo: f64, hi: f64| {
                let (x, span) = t.int(key)?;
                in_range(&t, key, Some((x as f64, span)), lo, hi).map(|_| x as u64)
            };
            ReloadParams {
                debounce_ms: ms("debounce_ms", 1.0, 60_000.0),
                poll_interval_ms: ms("poll_interval_ms", 10.0, 3_600_000.0),
                settle_ms: ms("settle_ms", 0.0, 10_000.0),
            }
        }
        None => ReloadParams::default(),
    };

    let discovery = crate::parse::discovery::read_discovery(root.table("discovery"));

    PolicySource {
        file,
        name,
        description,
        activation,
        formula,
        weights,
        features,
        domains,
        stages,
        domain_rules,
        keywords,
        auto_tags,
        examples,
        properties,
        gate,
        reload,
        discovery,
        memory,
    }
}
