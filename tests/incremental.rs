//! Incremental compile (issue 14): a plan compiled by a `CompileCache` that
//! reuses the compiled parts of earlier compiles must equal the plan
//! compiled from scratch, on random sequences of edits — policy-only edits
//! (weights, threshold, query-time BM25 floors, rules), edits of what the
//! catalog reads of the policy (stop words, BM25 k1, auto-tags, domains,
//! `[gate]`), and edits of the units (a tool file replaced, added, removed,
//! a tag file with errors). Equal means: the same tools, tags, keyword
//! terms, BM25 index, gate data, warnings, hash, the same scores bit for bit
//! on a set of sessions, or the same diagnostics when the load fails.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::json;
use toolgate::compile::{CompileCache, compile};
use toolgate::diag::SourceFile;
use toolgate::parse::policy::parse_policy;
use toolgate::parse::tags::{ToolSpec, import_tools_json, parse_tag_file};
use toolgate::{Plan, SessionContext, UsageStats};

const WORDS: &[&str] = &[
    "read", "write", "file", "query", "table", "user", "weather", "city", "stock", "price",
    "order", "email", "message", "calendar", "search", "web", "image", "convert", "currency",
    "commit", "branch", "deploy", "server", "log", "path", "command", "sql",
];

struct Rng(u64);
impl Rng {
    fn next(&mut self, m: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % m
    }
}

/// An OpenAI tool file of `n` tools named `{prefix}.…`; some schemas are
/// shared between tools and files, some parameters get gate roles by name
/// (`path`, `command`, `sql`).
fn tool_file(prefix: &str, n: usize, seed: u64) -> Arc<Vec<ToolSpec>> {
    let mut r = Rng(seed);
    let tools: Vec<_> = (0..n)
        .map(|i| {
            let w: Vec<&str> = (0..6).map(|_| WORDS[r.next(WORDS.len())]).collect();
            let params = if r.next(3) == 0 {
                json!({"type": "object", "properties": {"query": {"type": "string"}}})
            } else {
                let props: serde_json::Map<String, serde_json::Value> = (0..1 + r.next(3))
                    .map(|k| {
                        (
                            w[k].to_string(),
                            json!({"type": "string", "description": w[k + 1]}),
                        )
                    })
                    .collect();
                json!({"type": "object", "properties": props})
            };
            json!({"type": "function", "function": {
                "name": format!("{prefix}.{}_{}_{i}", w[0], w[1]),
                "description": w.join(" "),
                "parameters": params,
            }})
        })
        .collect();
    let text = serde_json::Value::Array(tools).to_string();
    Arc::new(import_tools_json(&format!("{prefix}.json"), &text).unwrap())
}

/// A tag file; `bad` names an undeclared domain (a load error).
fn tag_file(bad: bool) -> Arc<Vec<ToolSpec>> {
    let domain = if bad { "nowhere" } else { "database" };
    let text = format!(
        "[[tool]]\nname = \"db.run_sql\"\ndescription = \"Run a SQL query\"\ndomains = [\"{domain}\"]\npreferred_stages = [\"exploration\"]\ntrigger_keywords = [\"sql\", \"query\", \"table\"]\nbase_priority = 0.6\nparameter_complexity = 2\narguments = {{ sql = \"sql\" }}\ninput_schema = '{{\"type\": \"object\", \"properties\": {{\"sql\": {{\"type\": \"string\"}}}}}}'\nfollows = [\"db.connect\"]\n\n[[tool]]\nname = \"db.connect\"\ndescription = \"Connect to the database\"\ndomains = [\"database\"]\npreferred_stages = [\"exploration\"]\ntrigger_keywords = [\"connect\", \"database\"]\nbase_priority = 0.5\nparameter_complexity = 1\n"
    );
    Arc::new(parse_tag_file(SourceFile::new("tags/db.toml", text)).unwrap())
}

/// The policy edits: each rewrites one line of `policies/selection.toml`
/// (the tests run from the crate root).
fn edit(text: &str, which: usize, r: &mut Rng) -> String {
    let pick = |xs: &[&str], r: &mut Rng| xs[r.next(xs.len())].to_string();
    let replace = |text: &str, prefix: &str, line: String| -> String {
        text.lines()
            .map(|l| {
                if l.starts_with(prefix) {
                    line.clone()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    };
    match which {
        // policy part only
        0 => replace(
            text,
            "w_stage =",
            format!("w_stage = {}", pick(&["0.1", "0.12", "0.2"], r)),
        ),
        1 => replace(
            text,
            "threshold =",
            format!("threshold = {}", pick(&["0.32", "0.3", "0.4"], r)),
        ),
        2 => replace(
            text,
            "min_score =",
            format!("min_score = {}", pick(&["0.5", "0.8", "1.0"], r)),
        ),
        3 => {
            if text.contains("[[domain_rules]]") {
                text.replace(
                    "\n[[domain_rules]]\nname = \"sqlish\"\nwhen = { keywords_any = [\"sql\", \"cities\"] }\nadjust = { database = 0.3 }\n",
                    "\n",
                )
            } else {
                text.replace(
                    "\n[stages]",
                    "\n[[domain_rules]]\nname = \"sqlish\"\nwhen = { keywords_any = [\"sql\", \"cities\"] }\nadjust = { database = 0.3 }\n\n[stages]",
                )
            }
        }
        // what the catalog reads
        4 => replace(
            text,
            "k1 =",
            format!("k1 = {}", pick(&["1.2", "0.9", "1.5"], r)),
        ),
        5 => {
            if text.contains("stop_words = [\"weather\", ") {
                text.replace("stop_words = [\"weather\", ", "stop_words = [")
            } else {
                text.replace("stop_words = [", "stop_words = [\"weather\", ")
            }
        }
        6 => replace(
            text,
            "max_keywords =",
            format!("max_keywords = {}", pick(&["0", "3", "8"], r)),
        ),
        _ => {
            if text.contains("\n[gate.risk]\ndefault_risk_level = \"dangerous\"\n") {
                text.replace("\n[gate.risk]\ndefault_risk_level = \"dangerous\"\n", "\n")
            } else {
                format!("{text}\n[gate.risk]\ndefault_risk_level = \"dangerous\"\n")
            }
        }
    }
}

fn f(x: f64) -> String {
    format!("{:016x}", x.to_bits())
}

/// Everything of a plan that a compile decides, in a canonical order (ids
/// resolved to terms, maps sorted).
fn fingerprint(p: &Plan) -> String {
    let mut o = String::new();
    let term_of: std::collections::HashMap<u32, &str> =
        p.vocab.iter().map(|(t, i)| (*i, t.as_str())).collect();
    let _ = writeln!(
        o,
        "policy {} hash {:x} sources {:?}",
        p.policy_name, p.content_hash, p.sources
    );
    let _ = writeln!(
        o,
        "threshold {} clamp {:?} cold {:?} pinned {:?} max {:?} min {}",
        f(p.threshold),
        p.clamp,
        p.cold_start,
        p.pinned,
        p.max_active,
        p.min_active
    );
    let _ = writeln!(o, "features {:?}", p.features);
    let _ = writeln!(
        o,
        "domains {:?} {:?} stages {:?}",
        p.domains, p.domain_base, p.stages
    );
    let _ = writeln!(
        o,
        "rules {:?}",
        p.rules
            .iter()
            .map(|r| (&r.name, &r.adjust))
            .collect::<Vec<_>>()
    );
    let _ = writeln!(o, "warnings {:?}", p.warnings);
    let _ = writeln!(
        o,
        "examples {} properties {}",
        p.examples_checked,
        p.properties.len()
    );
    let _ = writeln!(o, "transitions {:?}", p.transitions);
    for (i, t) in p.tools.iter().enumerate() {
        let mut kws: Vec<&str> = t.keyword_ids.iter().map(|id| term_of[id]).collect();
        kws.sort();
        let h = &p.hot[i];
        let mut hot_kws: Vec<&str> = p.hot_keywords
            [h.keywords_start as usize..h.keywords_start as usize + h.keywords_len as usize]
            .iter()
            .map(|id| term_of[id])
            .collect();
        hot_kws.sort();
        assert_eq!(kws, hot_kws, "hot keywords of {}", t.name);
        let _ = writeln!(
            o,
            "tool {} {:?} {:?} {} dom {:?} {:?} stages {:b} kw {:?} {:?} prio {} cx {} {} gate {:?} auto {} hot {:?}",
            t.name,
            t.aliases,
            t.description,
            t.input_schema,
            t.domains,
            &p.hot_domains
                [h.domains_start as usize..h.domains_start as usize + h.domains_len as usize],
            t.stage_mask,
            kws,
            t.trigger_keywords,
            f(t.base_priority),
            t.parameter_complexity,
            f(t.complexity_penalty),
            t.gate,
            t.auto_tagged,
            (h.stage_mask, f(h.base_priority), f(h.complexity_penalty)),
        );
        assert_eq!(p.tool_index(&t.name), Some(i));
    }
    let mut names: Vec<_> = p.by_name.iter().collect();
    names.sort();
    let _ = writeln!(o, "by_name {names:?}");
    if let Some(b) = &p.bm25 {
        let mut terms: Vec<(&String, &u32)> = b.terms.iter().collect();
        terms.sort();
        let name_of: std::collections::HashMap<u32, &str> =
            b.terms.iter().map(|(t, i)| (*i, t.as_str())).collect();
        for (t, id) in terms {
            let i = *id as usize;
            let mut rel: Vec<(&str, String)> = b
                .related
                .get(i)
                .into_iter()
                .flatten()
                .map(|(r, s)| (name_of[r], f(*s)))
                .collect();
            rel.sort();
            let post: Vec<(u32, String)> = b.postings[i].iter().map(|(d, w)| (*d, f(*w))).collect();
            let _ = writeln!(o, "bm25 {t} idf {} post {post:?} rel {rel:?}", f(b.idf[i]));
        }
        let _ = writeln!(
            o,
            "bm25 len {:?} avg {} params {:?}",
            b.doc_len.iter().map(|x| f(*x)).collect::<Vec<_>>(),
            f(b.avg_len),
            b.params
        );
    }
    if let Some(g) = &p.gate {
        for (i, t) in g.tools.iter().enumerate() {
            let _ = writeln!(
                o,
                "gate {i} {} roles {:?} inferred {} risk {:?} confirm {} ro {} sql {:?}",
                t.schema.schema(),
                t.roles,
                t.roles_inferred,
                t.risk_level,
                t.requires_confirmation,
                t.read_only,
                t.sql_dialect
            );
        }
        let _ = writeln!(
            o,
            "gate default risk {:?}",
            g.config.risk.default_risk_level
        );
    }
    o
}

/// Per tool of each session: (tool, score bits, active).
type Scores = Vec<(usize, String, bool)>;

/// Scores of a few sessions, bit for bit.
fn scores(p: &Plan) -> Scores {
    let plan = Arc::new(p.clone());
    let mut out = Vec::new();
    let messages = [
        "read the weather for my city",
        "run a sql query on the table",
        "deploy the server and read the log",
        "convert currency price",
    ];
    for (k, m) in messages.iter().enumerate() {
        let ctx = SessionContext {
            user_intent_keywords: plan.analyzer.extract(m),
            conversation_stage: Some("exploration".into()),
            recent_tool_calls: plan.tools.iter().take(k).map(|t| t.name.clone()).collect(),
            ..Default::default()
        };
        let act = plan.evaluate(&ctx, &UsageStats::default(), 100.0);
        for s in &act.tools {
            out.push((s.tool, f(s.score), s.active));
        }
    }
    out
}

fn outcome(r: Result<Plan, toolgate::LoadError>) -> Result<(String, Scores), Vec<String>> {
    match r {
        Ok(p) => Ok((fingerprint(&p), scores(&p))),
        Err(e) => Err(e.diagnostics.iter().map(|d| d.to_string()).collect()),
    }
}

#[test]
fn incremental_equals_full_on_random_edit_sequences() {
    let base = std::fs::read_to_string("policies/selection.toml").unwrap();
    let (mut reused, mut partial, mut failed) = (0, 0, 0);
    for seq in 0..6u64 {
        let mut r = Rng(0x5eed + seq);
        let mut text = base.clone();
        let mut units: Vec<Arc<Vec<ToolSpec>>> = vec![
            tag_file(false),
            tool_file("alpha", 40, seq * 10 + 1),
            tool_file("beta", 30, seq * 10 + 2),
            tool_file("gamma", 20, seq * 10 + 3),
        ];
        let mut cache = CompileCache::default();
        for step in 0..14 {
            match r.next(12) {
                e @ 0..=7 => text = edit(&text, e, &mut r),
                8 => {
                    let i = 1 + r.next(units.len() - 1);
                    let prefix = ["alpha", "beta", "gamma", "delta"][(i - 1).min(3)];
                    units[i] = tool_file(prefix, 10 + r.next(30), r.next(1000) as u64);
                }
                9 => {
                    if units.len() < 5 {
                        units.push(tool_file("delta", 15, r.next(1000) as u64));
                    } else {
                        units.pop();
                    }
                }
                10 => units[0] = tag_file(r.next(4) == 0),
                _ => units.swap(1, 2),
            }
            let mut policy = parse_policy(SourceFile::new("policies/selection.toml", text.clone()))
                .unwrap_or_else(|e| panic!("seq {seq} step {step}: {e}"));
            toolgate::load::load_data_files(&mut policy).unwrap();
            let flat: Vec<ToolSpec> = units.iter().flat_map(|u| u.iter().cloned()).collect();
            let full = outcome(compile(&policy, flat));
            let inc = outcome(cache.compile(&policy, &units));
            let stats = cache.stats().clone();
            match (&full, &inc) {
                (Ok((fa, sa)), Ok((fb, sb))) => {
                    if fa != fb {
                        let diff: Vec<_> = fa
                            .lines()
                            .zip(fb.lines())
                            .filter(|(a, b)| a != b)
                            .take(3)
                            .collect();
                        panic!("seq {seq} step {step} ({stats:?}): plans differ: {diff:#?}");
                    }
                    assert!(sa == sb, "seq {seq} step {step} ({stats:?}): scores differ");
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a, b, "seq {seq} step {step}: diagnostics differ");
                    failed += 1;
                }
                _ => panic!(
                    "seq {seq} step {step} ({stats:?}): full {full:?} vs incremental {inc:?}"
                ),
            }
            if stats.catalog_reused {
                reused += 1;
            } else if stats.units_reused > 0 {
                partial += 1;
            }
        }
    }
    // The sequences exercise all three paths.
    assert!(reused >= 5, "catalog reused {reused} times");
    assert!(partial >= 5, "units partly reused {partial} times");
    assert!(failed >= 1, "failed loads {failed}");
}

#[test]
fn a_changed_unit_recompiles_only_its_tools() {
    let policy =
        toolgate::load::load_policy(Some(std::path::Path::new("policies/selection.toml"))).unwrap();
    let mut units = vec![
        tool_file("alpha", 30, 1),
        tool_file("beta", 20, 2),
        tool_file("gamma", 10, 3),
    ];
    let mut cache = CompileCache::default();
    cache.compile(&policy, &units).unwrap();
    let first = cache.stats().clone();
    assert_eq!((first.units_compiled, first.tools_compiled), (3, 60));
    assert!(first.schemas_compiled > 0);
    // The same units: nothing compiled.
    cache.compile(&policy, &units).unwrap();
    assert!(cache.stats().catalog_reused);
    assert_eq!(cache.stats().units_compiled, 0);
    assert_eq!(cache.stats().schemas_compiled, 0);
    // One unit replaced: its tools only.
    units[1] = tool_file("beta", 25, 77);
    let plan = cache.compile(&policy, &units).unwrap();
    let s = cache.stats();
    assert_eq!(
        (s.units_compiled, s.units_reused, s.tools_compiled),
        (1, 2, 25)
    );
    assert!(!s.catalog_reused);
    assert_eq!(plan.tools.len(), 65);
    // A policy-only edit: the catalog is reused.
    let text = std::fs::read_to_string("policies/selection.toml")
        .unwrap()
        .replace("w_stage = 0.1\n", "w_stage = 0.15\n");
    let mut edited = parse_policy(SourceFile::new("policies/selection.toml", text)).unwrap();
    toolgate::load::load_data_files(&mut edited).unwrap();
    let again = cache.compile(&edited, &units).unwrap();
    assert!(cache.stats().catalog_reused);
    assert!(
        Arc::ptr_eq(&again.tools, &plan.tools),
        "the compiled tools are shared"
    );
}

/// The `semantic_match` embeddings: a policy-only edit reuses them all, a
/// changed unit embeds only the tools whose text changed, and the vectors
/// are the ones a fresh compile makes, in catalog order.
#[test]
fn a_changed_unit_embeds_only_its_changed_tools() {
    let policy =
        toolgate::load::load_policy(Some(std::path::Path::new("policies/selection.toml"))).unwrap();
    let vectors = |p: &Plan| {
        p.semantic
            .as_ref()
            .expect("selection.toml has semantic_match")
            .vectors
            .clone()
    };
    let mut units = vec![
        tool_file("alpha", 30, 1),
        tool_file("beta", 20, 2),
        tool_file("gamma", 10, 3),
    ];
    let mut cache = CompileCache::default();
    cache.compile(&policy, &units).unwrap();
    let s = cache.stats();
    assert_eq!((s.embeddings_computed, s.embeddings_reused), (60, 0));
    cache.compile(&policy, &units).unwrap();
    let s = cache.stats();
    assert_eq!((s.embeddings_computed, s.embeddings_reused), (0, 60));

    // beta: 25 new tools (another draw) in place of 20; the first 5 of them
    // copy old tools exactly, so they keep their embedding.
    let mut beta = (*tool_file("beta", 25, 77)).clone();
    for (new, old) in beta.iter_mut().zip(tool_file("beta", 20, 2).iter()).take(5) {
        *new = old.clone();
    }
    units[1] = Arc::new(beta);
    let plan = cache.compile(&policy, &units).unwrap();
    let s = cache.stats();
    assert_eq!((s.embeddings_computed, s.embeddings_reused), (20, 45));
    let fresh = CompileCache::default().compile(&policy, &units).unwrap();
    assert_eq!(fresh.tools.len(), 65);
    assert_eq!(
        *vectors(&plan),
        *vectors(&fresh),
        "reused rows sit where a fresh compile puts them"
    );

    // Units in another order: every row is reused and moves with its tool.
    units.swap(0, 2);
    let plan = cache.compile(&policy, &units).unwrap();
    let s = cache.stats();
    assert_eq!((s.embeddings_computed, s.embeddings_reused), (0, 65));
    let fresh = compile(
        &policy,
        units.iter().flat_map(|u| u.iter().cloned()).collect(),
    )
    .unwrap();
    assert_eq!(*vectors(&plan), *vectors(&fresh));
}
