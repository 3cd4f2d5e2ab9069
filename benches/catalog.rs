//! Large catalogs (issue 14): compiling 1,000 and 10,000 imported tools
//! (OpenAI-format tool files, `benches/common/catalog.rs`: 8-word
//! descriptions, 1–4 string parameters) under `policies/selection.toml`,
//! and a policy-only reload at 10,000 tools.
//!
//! * `catalog/import_compile/N`: the tool file's text → `import_tools_json`
//!   → `compile` (what `toolgate check --tools FILE` does after reading the
//!   file). Target at 10,000: ≤ 150 ms median.
//! * `catalog/policy_reload/10000`: a one-weight edit of the policy, parsed
//!   and compiled with the unchanged 10,000-tool catalog (what the reloader
//!   does when only the policy file changed). Target: ≤ 30 ms median.
//!
//! Run: `cargo bench --bench catalog`; docs/performance.md ("Large
//! catalogs") has the figures.

#[path = "common/catalog.rs"]
mod catalog;

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate::compile::compile;
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
    let tools = import_tools_json("tools.json", &text).unwrap();
    let policy_text = std::fs::read_to_string(POLICY).unwrap();
    assert!(policy_text.contains("w_stage = 0.1\n"));
    let mut flip = false;
    g.bench_function("policy_reload/10000", |b| {
        b.iter(|| {
            flip = !flip;
            let p = edited_policy(&policy_text, if flip { "0.11" } else { "0.1" });
            let plan = compile(&p, tools.clone()).unwrap();
            assert_eq!(plan.tools.len(), 10_000);
            black_box(plan)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
