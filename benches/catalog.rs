//! Large catalogs (issue 14): compiling 1,000 and 10,000 imported tools
//! (OpenAI-format tool files, `benches/common/catalog.rs`: 8-word
//! descriptions, 1–4 string parameters) under `policies/selection.toml`,
//! and a policy-only reload at 10,000 tools.
//!
//! * `catalog/import_compile/N`: the tool file's text → `import_tools_json`
//!   → `compile` (what `toolgate check --tools FILE` does after reading the
//!   file). Target at 10,000: ≤ 150 ms median.
//! * `catalog/policy_reload/10000`: a one-weight edit of the policy, parsed
//!   and compiled with the unchanged 10,000-tool catalog by a
//!   `CompileCache` that compiled it before (what the reloader does when
//!   only the policy file changed: the catalog part is reused, the policy
//!   part recompiled and linked). Target: ≤ 30 ms median.
//! * `catalog/unit_reload/10000`: ten tool files of 1,000 tools; one file
//!   changes (a different draw) between compiles, so one unit's tools are
//!   compiled and the whole catalog linked again (the MCP proxy's case when
//!   one server announces `list_changed`).
//!
//! Run: `cargo bench --bench catalog`; docs/performance.md ("Large
//! catalogs") has the figures.

#[path = "common/catalog.rs"]
mod catalog;

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use std::sync::Arc;

use toolgate::compile::{CompileCache, compile};
use toolgate::diag::SourceFile;
use toolgate::load::{load_data_files, load_policy};
use toolgate::parse::policy::{PolicySource, parse_policy};
use toolgate::parse::tags::import_tools_json;

const POLICY: &str = "policies/selection.toml";

/// The policy with `w_stage` set to `w` (a policy-only edit).
fn edited_policy(text: &str, w: &str) -> PolicySource {
    let text = text.replace("w_stage = 0.1\n", &format!("w_stage = {w}\n"));
    let mut p = parse_policy(SourceFile::new(POLICY, text)).unwrap();
    load_data_files(&mut p).unwrap();
    p
}

fn bench(c: &mut Criterion) {
    let policy = load_policy(Some(Path::new(POLICY))).unwrap();
    let mut g = c.benchmark_group("catalog");
    g.sample_size(20);
    for n in [1_000usize, 10_000] {
        let text = catalog::openai_tools(n, 7);
        g.bench_function(format!("import_compile/{n}"), |b| {
            b.iter(|| {
                let tools = import_tools_json("tools.json", &text).unwrap();
                let plan = compile(&policy, tools).unwrap();
                assert_eq!(plan.tools.len(), n);
                black_box(plan)
            })
        });
    }

    let text = catalog::openai_tools(10_000, 7);
    let units = vec![Arc::new(import_tools_json("tools.json", &text).unwrap())];
    let policy_text = std::fs::read_to_string(POLICY).unwrap();
    assert!(policy_text.contains("w_stage = 0.1\n"));
    let mut cache = CompileCache::default();
    cache.compile(&policy, &units).unwrap();
    let mut flip = false;
    g.bench_function("policy_reload/10000", |b| {
        b.iter(|| {
            flip = !flip;
            let p = edited_policy(&policy_text, if flip { "0.11" } else { "0.1" });
            let plan = cache.compile(&p, &units).unwrap();
            assert_eq!(plan.tools.len(), 10_000);
            assert!(cache.stats().catalog_reused);
            black_box(plan)
        })
    });

    // Ten units of 1,000 tools (tool names made distinct per unit); unit 0
    // alternates between two draws.
    let unit = |k: usize, seed: u64| {
        let text = catalog::openai_tools(1_000, seed).replace("\"svc", &format!("\"u{k}svc"));
        Arc::new(import_tools_json(&format!("tools-{k}.json"), &text).unwrap())
    };
    let mut units: Vec<_> = (0..10).map(|k| unit(k, 100 + k as u64)).collect();
    let alternatives = [unit(0, 100), unit(0, 999)];
    cache.compile(&policy, &units).unwrap();
    let mut flip = false;
    g.bench_function("unit_reload/10000", |b| {
        b.iter(|| {
            flip = !flip;
            units[0] = alternatives[flip as usize].clone();
            let plan = cache.compile(&policy, &units).unwrap();
            assert_eq!(plan.tools.len(), 10_000);
            assert_eq!(cache.stats().units_compiled, 1);
            black_box(plan)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
