//! Recall at ranks 1/3/5/8/10/20, at the policy's cut and at the policy's
//! median active-set size, with multi-step completeness, on all sessions and
//! on the two halves of a session-id hash split (`toolgate fit`'s hash; the
//! tuning half "A" and the held-out half "B").
//!
//! ```sh
//! cargo build --release --example selection_ranks
//! target/release/examples/selection_ranks POLICY TRACE TOOLS [HELD_OUT_FRACTION]
//! # e.g. Seal-Tools (4,076 tools, 700 requests), half held out:
//! target/release/examples/selection_ranks policies/selection.toml \
//!     ../shared/data/seal-tools/trace-in-domain.jsonl ../shared/data/seal-tools/catalog.json 0.5
//! ```
//!
//! One line per split: calls, recall at the cut, recall@k, recall at the
//! median active-set size (`@med`), active set mean / median / p95, and
//! completeness (all of a request's tools active at its first call: over all
//! requests, and over those calling two or more distinct tools).

use std::path::PathBuf;
use std::sync::Arc;

use toolgate::load::{Sources, load_catalog, load_policy};
use toolgate::replay::engine::{ReplayOptions, replay};
use toolgate::replay::ranks::{RankReport, Split};
use toolgate::replay::trace::parse_trace;

const KS: [usize; 6] = [1, 3, 5, 8, 10, 20];

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: selection_ranks POLICY TRACE TOOLS [HELD_OUT_FRACTION]";
    let policy_path = PathBuf::from(args.next().expect(usage));
    let trace_path = PathBuf::from(args.next().expect(usage));
    let tools_path = PathBuf::from(args.next().expect(usage));
    let fraction: f64 = args.next().map_or(0.5, |f| f.parse().expect("a fraction"));
    let mut policy = load_policy(Some(&policy_path)).unwrap_or_else(|e| panic!("{e:?}"));
    policy.examples.clear(); // written for the shipped catalog
    let catalog = load_catalog(&Sources {
        policy: None,
        tags: None,
        tools: vec![tools_path],
    })
    .unwrap_or_else(|e| panic!("{e:?}"));
    let t0 = std::time::Instant::now();
    let plan =
        Arc::new(toolgate::compile::compile(&policy, catalog).unwrap_or_else(|e| panic!("{e:?}")));
    let compiled = t0.elapsed();
    let text = std::fs::read_to_string(&trace_path).expect("trace");
    let trace = parse_trace(&text, false).expect("trace");
    let t1 = std::time::Instant::now();
    let r = replay(
        &plan,
        &trace,
        &ReplayOptions {
            skip_invalid: false,
            keep_active: true,
        },
    )
    .expect("replay");
    let replayed = t1.elapsed();
    println!(
        "policy {} | {} tools | compile {:.2} s, replay {:.2} s",
        policy_path.display(),
        plan.tools.len(),
        compiled.as_secs_f64(),
        replayed.as_secs_f64()
    );
    println!(
        "{:<6} {:>5} {:>6} | {} | {:>6} | {:>5} {:>4} {:>4} | {:>6} {:>8}",
        "split",
        "calls",
        "recall",
        KS.map(|k| format!("@{k:<5}")).join(" "),
        "@med",
        "mean",
        "med",
        "p95",
        "compl",
        "multi"
    );
    for (name, split) in [
        ("all", Split::All),
        ("A", Split::Train(fraction)),
        ("B(ho)", Split::HeldOut(fraction)),
    ] {
        let rep = RankReport::of(&r, split, &KS);
        let med = rep.median_size();
        let at_med = RankReport::of(&r, split, &[med])
            .recall_at(med)
            .unwrap_or(0.0);
        let p95 = rep
            .sizes
            .get(((rep.sizes.len() as f64 * 0.95).ceil() as usize).max(1) - 1)
            .copied()
            .unwrap_or(0);
        println!(
            "{name:<6} {:>5} {:>5.1}% | {} | {:>5.1}% | {:>5.1} {:>4} {:>4} | {:>5.1}% {:>5.1}% ({})",
            rep.calls,
            100.0 * rep.recall(),
            KS.map(|k| format!("{:>5.1}%", 100.0 * rep.recall_at(k).unwrap_or(0.0)))
                .join(" "),
            100.0 * at_med,
            rep.mean_size(),
            med,
            p95,
            100.0 * rep.completeness(),
            100.0 * rep.multi_completeness(),
            rep.multi
        );
    }
}
