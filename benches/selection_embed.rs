//! Issue 24's budgets on the Seal-Tools catalog (4,076 tools,
//! `../shared/data/seal-tools/catalog.json`, or `TOOLGATE_SEAL_CATALOG`),
//! under `policies/selection.toml` (BM25 + the static table) and
//! `policies/selection-transformer.toml` (BM25 + the all-MiniLM-L6-v2
//! bi-encoder, cargo feature `embed`, model installed by
//! `scripts/install-minilm`; its cases are left out, with a note, when the
//! model is absent).
//!
//! * `selection_embed/new_message/{static,transformer}/4076`: a plan
//!   evaluated for a user message it has not seen (the messages cycle over
//!   the Seal-Tools requests, 700, so the per-request cache never answers):
//!   keyword analysis, BM25, the request's embedding (the transformer's
//!   forward pass included) and one dot product per tool, then the scores
//!   and the active set. Target: ≤ 30 ms median.
//! * `selection_embed/new_message_in_session/{static,transformer}/4076`:
//!   the same in a session: the two previous requests are remembered
//!   (`[keywords.memory] turns = 2`) and were evaluated when they were new,
//!   so only the new message needs the forward pass. Target: ≤ 30 ms.
//! * `selection_embed/re_evaluation/{static,transformer}/1000`: the same
//!   context evaluated again after a call (the first 1,000 tools; only the
//!   recent calls change, the request's embedding is reused). Target:
//!   ≤ 1 ms median.
//! * `selection_embed/policy_reload/{static,transformer}/4076`: the policy
//!   file loaded again and compiled by a `CompileCache` that compiled it
//!   before (catalog and embeddings reused, the model not read again): a
//!   policy-only reload.
//! * `selection_embed/compile_warm/4076`: `compile` of the whole catalog
//!   with the transformer policy, every tool's vector in the on-disk cache
//!   (`embed::cache`; the model already loaded, as in a running process).
//!   Target: ≤ 0.5 s median.
//! * `selection_embed/compile_cold/N`: the same with the cache file deleted
//!   first, so every tool text goes through the transformer. N is
//!   `TOOLGATE_COLD_TOOLS` (default 4,076; a smaller N gives the per-tool
//!   cost faster).
//!
//! With `TOOLGATE_BENCH_CPU=N`, each new-message case is also run `N`
//! times outside criterion, and the CPU time (all threads), the wall time
//! and the forward passes per evaluation are printed on standard error:
//! on a shared machine the wall time mostly measures the other processes.
//!
//! The cache folder is a temporary one (`TOOLGATE_CACHE_DIR`, set before any
//! thread starts), never the user's; `TOOLGATE_BENCH_CACHE=DIR` copies the
//! cache files of DIR into it first (a filled cache saves the first compile
//! minutes of encoding; the copies are what `compile_cold` deletes).
//!
//! Run: `cargo bench --features embed --bench selection_embed -- FILTER`;
//! `cargo test --features embed --bench selection_embed` runs each case
//! once (dev profile).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use toolgate::compile::{CompileCache, compile};
use toolgate::load::load_policy;
use toolgate::parse::policy::PolicySource;
use toolgate::parse::tags::{ToolSpec, import_tools_json};
use toolgate::{Plan, SessionContext, UsageStats};

const STATIC: &str = "policies/selection.toml";
const TRANSFORMER: &str = "policies/selection-transformer.toml";

fn seal_dir() -> PathBuf {
    std::env::var_os("TOOLGATE_SEAL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/seal-tools"))
}

fn catalog() -> Vec<ToolSpec> {
    let path = std::env::var_os("TOOLGATE_SEAL_CATALOG")
        .map(PathBuf::from)
        .unwrap_or_else(|| seal_dir().join("catalog.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (set TOOLGATE_SEAL_CATALOG)", path.display()));
    import_tools_json(&path.display().to_string(), &text).expect("Seal-Tools catalog")
}

/// The user messages of the Seal-Tools trace, in order.
fn messages() -> Vec<String> {
    let path = seal_dir().join("trace-in-domain.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "user_message")
        .filter_map(|v| v["text"].as_str().map(String::from))
        .collect()
}

fn policy(path: &str) -> PolicySource {
    let mut p = load_policy(Some(Path::new(path))).expect("policy");
    p.examples.clear(); // written for the shipped catalog
    p
}

/// Whether the transformer policy got its model (not the absent stand-in).
fn has_transformer(p: &PolicySource) -> bool {
    p.features
        .semantic
        .as_ref()
        .and_then(|s| s.data.as_ref())
        .is_some_and(|d| d.model.is_transformer())
}

/// CPU time of this process so far, in nanoseconds: the sum over its
/// threads (candle's workers included) of the time on a CPU, from
/// `/proc/self/task/*/schedstat` (Linux; `None` elsewhere).
fn process_cpu_ns() -> Option<u64> {
    let mut sum = 0u64;
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let text = std::fs::read_to_string(e.path().join("schedstat")).ok()?;
        sum += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(sum)
}

/// With `TOOLGATE_BENCH_CPU=N`: evaluates `N` contexts made by `make` (one
/// per call, untimed) and prints, on standard error, the CPU time and the
/// wall time per evaluation and the forward passes per evaluation. On a
/// shared machine the wall time follows the other processes' load; the
/// CPU time much less (it still counts candle's workers spinning).
fn cpu_report(
    name: &str,
    plan: &Arc<Plan>,
    model: Option<&toolgate::parse::semantic_model::SemanticModel>,
    mut make: impl FnMut(usize) -> SessionContext,
) {
    let Some(n) = std::env::var("TOOLGATE_BENCH_CPU")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
    else {
        return;
    };
    let (mut cpu, mut wall) = (0u64, 0u128);
    let passes = model.map_or(0, |m| m.forward_passes());
    let mut made = 0u64;
    for k in 0..n {
        let before = model.map_or(0, |m| m.forward_passes());
        let ctx = make(k);
        made += model.map_or(0, |m| m.forward_passes()) - before;
        let (c0, t0) = (process_cpu_ns(), std::time::Instant::now());
        black_box(plan.evaluate(&ctx, &UsageStats::default(), 0.0));
        wall += t0.elapsed().as_nanos();
        if let (Some(a), Some(b)) = (c0, process_cpu_ns()) {
            cpu += b - a;
        }
    }
    let timed = model.map_or(0, |m| m.forward_passes()) - passes - made;
    eprintln!(
        "{name}: CPU {:.2} ms, wall {:.2} ms, forward passes {:.2} per evaluation (mean of {n}; load {})",
        cpu as f64 / n as f64 / 1e6,
        wall as f64 / n as f64 / 1e6,
        timed as f64 / n as f64,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}

/// A context as replay and the proxy build it: the message's keywords and
/// the message as written (`user_message`, which the per-clause keyword
/// scores and the argument-fill gate read; without it they do not run).
fn context(plan: &Plan, text: &str) -> SessionContext {
    SessionContext {
        user_intent_keywords: plan.analyzer.extract(text),
        user_message: Some(text.to_string()),
        ..Default::default()
    }
}

fn bench(c: &mut Criterion) {
    let cache = tempfile::tempdir().expect("tempdir");
    // SAFETY: set before criterion or candle start any thread.
    unsafe { std::env::set_var("TOOLGATE_CACHE_DIR", cache.path()) };
    // candle's thread counts as the `toolgate` binary sets them (a value
    // in the environment is kept): `embed::set_thread_env`.
    // SAFETY: the same.
    unsafe { toolgate::embed::set_thread_env() };
    if let Some(seed) = std::env::var_os("TOOLGATE_BENCH_CACHE") {
        for e in std::fs::read_dir(&seed)
            .expect("TOOLGATE_BENCH_CACHE")
            .flatten()
        {
            std::fs::copy(e.path(), cache.path().join(e.file_name())).expect("copy");
        }
    }
    let tools = catalog();
    let msgs = messages();
    let n = tools.len();
    let stat = policy(STATIC);
    let trans = policy(TRANSFORMER);
    let with_model = has_transformer(&trans);
    if !with_model {
        eprintln!(
            "selection_embed: no transformer model (scripts/install-minilm, --features embed): its cases are skipped"
        );
    }
    let mut g = c.benchmark_group("selection_embed");
    g.sample_size(10);
    let mut kinds = vec![("static", &stat)];
    if with_model {
        kinds.push(("transformer", &trans));
    }
    for (kind, p) in &kinds {
        let plan = Arc::new(compile(p, tools.clone()).expect("plan"));
        let mut i = 0usize;
        g.bench_function(format!("new_message/{kind}/{n}"), |b| {
            b.iter_batched(
                || {
                    i += 1;
                    context(&plan, &msgs[i % msgs.len()])
                },
                |ctx| black_box(plan.evaluate(&ctx, &UsageStats::default(), 0.0)),
                BatchSize::SmallInput,
            )
        });
        // The same, in a session: the two previous Seal-Tools requests are
        // remembered (`[keywords.memory] turns = 2`) and were evaluated when
        // they were new (in the untimed setup).
        let mut j = 0usize;
        g.bench_function(format!("new_message_in_session/{kind}/{n}"), |b| {
            b.iter_batched(
                || {
                    j += 1;
                    let kw = |k: usize| plan.analyzer.extract(&msgs[(j + k) % msgs.len()]);
                    let mut ctx = context(&plan, &msgs[(j + 2) % msgs.len()]);
                    ctx.previous_intent_keywords = vec![kw(1), kw(0)];
                    let mut prev = context(&plan, &msgs[(j + 1) % msgs.len()]);
                    prev.previous_intent_keywords = vec![kw(0)];
                    plan.evaluate(&prev, &UsageStats::default(), 0.0);
                    ctx
                },
                |ctx| black_box(plan.evaluate(&ctx, &UsageStats::default(), 0.0)),
                BatchSize::SmallInput,
            )
        });
        let model = p.features.semantic.as_ref().and_then(|s| s.data.as_ref());
        let model = model.map(|d| d.model.as_ref());
        cpu_report(&format!("new_message/{kind}/{n}"), &plan, model, |k| {
            context(&plan, &msgs[(k * 7 + 3) % msgs.len()])
        });
        cpu_report(
            &format!("new_message_in_session/{kind}/{n}"),
            &plan,
            model,
            |k| {
                let at = |d: usize| (k * 7 + 5 + d) % msgs.len();
                let kw = |d: usize| plan.analyzer.extract(&msgs[at(d)]);
                let mut prev = context(&plan, &msgs[at(1)]);
                prev.previous_intent_keywords = vec![kw(0)];
                plan.evaluate(&prev, &UsageStats::default(), 0.0);
                let mut ctx = context(&plan, &msgs[at(2)]);
                ctx.previous_intent_keywords = vec![kw(1), kw(0)];
                ctx
            },
        );
        // A policy-only reload, as the reloader does it: the policy file
        // read again (the model's files are only looked at, see
        // `load::read_transformer_folder`) and compiled by a `CompileCache`
        // that keeps the catalog and its embeddings.
        let path = if *kind == "static" {
            STATIC
        } else {
            TRANSFORMER
        };
        let units = vec![Arc::new(tools.clone())];
        let mut cache = CompileCache::default();
        cache.compile(p, &units).expect("plan");
        g.bench_function(format!("policy_reload/{kind}/{n}"), |b| {
            b.iter(|| {
                let plan = cache.compile(&policy(path), &units).expect("plan");
                assert!(cache.stats().catalog_reused);
                assert_eq!(cache.stats().embeddings_computed, 0);
                black_box(plan)
            })
        });
        let small = Arc::new(compile(p, tools[..1000.min(n)].to_vec()).expect("plan"));
        let mut ctx = context(&small, &msgs[0]);
        small.evaluate(&ctx, &UsageStats::default(), 0.0);
        ctx.recent_tool_calls = vec![small.tools[0].name.clone()];
        g.bench_function(format!("re_evaluation/{kind}/{}", small.tools.len()), |b| {
            b.iter(|| black_box(small.evaluate(&ctx, &UsageStats::default(), 0.0)))
        });
    }
    if with_model {
        compile(&trans, tools.clone()).expect("fills the cache");
        g.bench_function(format!("compile_warm/{n}"), |b| {
            b.iter(|| black_box(compile(&trans, tools.clone()).expect("plan")))
        });
        let cold: usize = std::env::var("TOOLGATE_COLD_TOOLS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(n)
            .min(n);
        let part = tools[..cold].to_vec();
        g.bench_function(format!("compile_cold/{cold}"), |b| {
            b.iter_batched(
                || {
                    for e in std::fs::read_dir(cache.path())
                        .expect("cache dir")
                        .flatten()
                    {
                        std::fs::remove_file(e.path()).expect("cache file");
                    }
                    part.clone()
                },
                |t| black_box(compile(&trans, t).expect("plan")),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
