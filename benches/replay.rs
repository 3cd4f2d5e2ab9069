//! Replay speed: 10,000 steps (tool calls) over a 1,000-tool catalog, under the
//! seed's default policy (Jaccard keywords) and the selection policy (BM25,
//! relevance floor, two remembered turns); and the selection policy with
//! transitions learned from the same trace (`transition_match` non-zero on
//! every step after the first call). The target is <= 1 s per replay; the
//! medians are in docs/performance.md ("Replay"). Then one evaluation of
//! the selection policy over 10,000 tools, and over 1,000 tools with and
//! without its `semantic_match` (target <= 1 ms median).
//!
//! Run: `cargo bench --bench replay`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate::compile::compile;
use toolgate::load::load_policy;
use toolgate::parse::tags::import_tools_json;
use toolgate::replay::engine::{ReplayOptions, replay};
use toolgate::replay::trace::parse_trace;

// The shared vocabulary and LCG of the synthetic catalogs (benches/common).
#[path = "common/catalog.rs"]
#[allow(dead_code)]
mod catalog;
use catalog::{Rng, WORDS};

/// `n` tools (OpenAI tools array, auto-tagged) and a trace of 100 sessions
/// x 100 calls, a new user message before every 5th call.
fn workload(n: usize) -> (String, String) {
    let mut r = Rng(7);
    let mut tools = Vec::new();
    let mut descs = Vec::new();
    for i in 0..n {
        let words: Vec<&str> = (0..8).map(|_| WORDS[r.next(WORDS.len())]).collect();
        let name = format!("svc{}.{}_{}_{i}", i % 37, words[0], words[1]);
        let props: serde_json::Map<String, serde_json::Value> = (0..1 + r.next(4))
            .map(|k| {
                (
                    format!("{}_{k}", words[2 + k]),
                    serde_json::json!({"type": "string", "description": format!("the {} to {}", words[k], words[k + 1])}),
                )
            })
            .collect();
        tools.push(serde_json::json!({"type": "function", "function": {
            "name": name,
            "description": format!("{} the {} of a {} for the {} and {}", words[0], words[1], words[2], words[3], words[4]),
            "parameters": {"type": "object", "properties": props}
        }}));
        descs.push((name, words));
    }
    let mut trace = String::new();
    for s in 0..100 {
        let mut t = 0.0;
        for c in 0..100 {
            let target = r.next(descs.len());
            if c % 5 == 0 {
                let w = &descs[target].1;
                t += 20.0;
                trace.push_str(&format!(
                    "{{\"session\":\"s{s}\",\"t\":{t},\"event\":\"user_message\",\"text\":\"please {} the {} {} for my {}\"}}\n",
                    w[0], w[1], w[2], WORDS[r.next(WORDS.len())]
                ));
            }
            t += 3.0;
            trace.push_str(&format!(
                "{{\"session\":\"s{s}\",\"t\":{t},\"event\":\"tool_call\",\"tool\":\"{}\"}}\n",
                descs[target].0
            ));
        }
    }
    (serde_json::Value::Array(tools).to_string(), trace)
}

fn bench(c: &mut Criterion) {
    let (tools, trace) = workload(1000);
    let trace = parse_trace(&trace, false).unwrap();
    assert_eq!(trace.calls(), 10_000);
    let mut g = c.benchmark_group("replay_10k_steps_1k_tools");
    g.sample_size(10);
    for policy in ["policies/default.toml", "policies/selection.toml"] {
        let p = load_policy(Some(std::path::Path::new(policy))).unwrap();
        let catalog = import_tools_json("bench-tools.json", &tools).unwrap();
        let plan = Arc::new(compile(&p, catalog).unwrap());
        let name = plan.policy_name.clone();
        g.bench_function(name, |b| {
            b.iter(|| {
                let r = replay(&plan, &trace, &ReplayOptions::default()).unwrap();
                assert_eq!(r.steps.len(), 10_000);
                black_box(r)
            })
        });
    }
    // The selection policy without its semantic term (the policy before
    // `semantic_match`, threshold aside), for the matcher's cost per replay.
    let p = without_semantic();
    let catalog = import_tools_json("bench-tools.json", &tools).unwrap();
    let plan = Arc::new(compile(&p, catalog).unwrap());
    assert!(plan.semantic.is_none());
    g.bench_function("selection_without_semantic", |b| {
        b.iter(|| {
            let r = replay(&plan, &trace, &ReplayOptions::default()).unwrap();
            assert_eq!(r.steps.len(), 10_000);
            black_box(r)
        })
    });
    // The selection policy with transitions learned from the trace itself, so
    // that every step computes `transition_match` over the whole catalog.
    let dir = tempfile::tempdir().unwrap();
    let learned = toolgate::replay::transitions::learn_transitions(&trace, 0.0);
    std::fs::write(dir.path().join("t.toml"), learned.to_toml("bench")).unwrap();
    let text = std::fs::read_to_string("policies/selection.toml")
        .unwrap()
        .replace(
            "file = \"transitions/bfcl-multi-turn.toml\"",
            "file = \"t.toml\"",
        )
        .replace(
            "model = \"models/",
            &format!("model = \"{}/policies/models/", env!("CARGO_MANIFEST_DIR")),
        );
    std::fs::write(dir.path().join("p.toml"), text).unwrap();
    let p = load_policy(Some(&dir.path().join("p.toml"))).unwrap();
    let catalog = import_tools_json("bench-tools.json", &tools).unwrap();
    let plan = Arc::new(compile(&p, catalog).unwrap());
    assert!(
        plan.transitions
            .as_ref()
            .is_some_and(|t| t.skipped_pairs == 0)
    );
    g.bench_function("selection+learned_transitions", |b| {
        b.iter(|| {
            let r = replay(&plan, &trace, &ReplayOptions::default()).unwrap();
            assert_eq!(r.steps.len(), 10_000);
            black_box(r)
        })
    });
    g.finish();

    // One evaluation of the BM25 keyword match over 10,000 tools (the
    // per-evaluation target is <= 0.5 ms).
    let (tools, _) = workload(10_000);
    let p = load_policy(Some(std::path::Path::new("policies/selection.toml"))).unwrap();
    let plan =
        Arc::new(compile(&p, import_tools_json("bench-tools.json", &tools).unwrap()).unwrap());
    let ctx = toolgate::SessionContext {
        user_intent_keywords: plan
            .analyzer
            .extract("please convert the currency of the invoice for my customer"),
        ..Default::default()
    };
    let usage = toolgate::UsageStats::default();
    c.bench_function("evaluate_10k_tools_selection", |b| {
        b.iter(|| black_box(plan.evaluate(&ctx, &usage, 0.0)))
    });

    // One evaluation over 1,000 tools, with and without `semantic_match`
    // (issue 10: the matcher must keep this <= 1 ms median).
    let (tools, _) = workload(1_000);
    let mut g = c.benchmark_group("evaluate_1k_tools");
    for (name, p) in [
        (
            "selection",
            load_policy(Some(std::path::Path::new("policies/selection.toml"))).unwrap(),
        ),
        ("selection_without_semantic", without_semantic()),
    ] {
        let plan =
            Arc::new(compile(&p, import_tools_json("bench-tools.json", &tools).unwrap()).unwrap());
        assert_eq!(plan.semantic.is_some(), name == "selection");
        g.bench_function(name, |b| {
            b.iter(|| black_box(plan.evaluate(&ctx, &usage, 0.0)))
        });
        // A new request at every evaluation: the semantic match's last-request
        // cache never hits (the first message of a turn pays this).
        let other = toolgate::SessionContext {
            user_intent_keywords: plan
                .analyzer
                .extract("show me the weather report for the city tomorrow"),
            ..Default::default()
        };
        let mut flip = false;
        g.bench_function(format!("{name}/new_request_each_time"), |b| {
            b.iter(|| {
                flip = !flip;
                black_box(plan.evaluate(if flip { &ctx } else { &other }, &usage, 0.0))
            })
        });
    }
    g.finish();
}

/// The selection policy without its `semantic_match` term and table (its
/// transitions file named by absolute path).
fn without_semantic() -> toolgate::parse::policy::PolicySource {
    let text = std::fs::read_to_string("policies/selection.toml").unwrap();
    let mut out = String::new();
    let mut skip = false;
    for line in text.lines() {
        if line.starts_with('[') {
            skip = line.starts_with("[features.semantic_match]");
        }
        if skip || line.starts_with("w_semantic") {
            continue;
        }
        out.push_str(&line.replace(" + w_semantic*semantic_match", "").replace(
            "file = \"transitions/",
            &format!(
                "file = \"{}/policies/transitions/",
                env!("CARGO_MANIFEST_DIR")
            ),
        ));
        out.push('\n');
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), out).unwrap();
    load_policy(Some(&dir.path().join("p.toml"))).unwrap()
}

criterion_group!(benches, bench);
criterion_main!(benches);
