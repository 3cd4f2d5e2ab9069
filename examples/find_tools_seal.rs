//! find_tools quality on Seal-Tools: each request is one
//! `toolgate__find_tools` query over the whole 4,076-tool catalog, ranked
//! exactly as the MCP proxy ranks it (`toolgate::mcp::discovery::best_matches`
//! over the plan's evaluation of the request's keywords, the same scoring as
//! activation); a called tool counts as found when it is in the returned
//! list, and a request is complete when every tool it calls is.
//!
//! ```sh
//! cargo run --release --features embed --example find_tools_seal -- \
//!     ../shared/data/seal-tools/trace-in-domain.jsonl ../shared/data/seal-tools/catalog.json \
//!     [policies/selection.toml]
//! ```
//!
//! Prints, for the policy's default limit and for fixed limits, per-call
//! recall, completeness and the returned list's size, on all requests and
//! on the halves of `toolgate fit`'s session-id hash split (fraction 0.5:
//! "A" tunes, "B" is held out), as `examples/selection_ranks.rs` splits.

use std::collections::BTreeMap;
use std::path::PathBuf;

use toolgate::diag::SourceFile;
use toolgate::mcp::discovery::{best_matches, default_limit};
use toolgate::parse::tags::import_tools_json;
use toolgate::replay::fit::is_holdout;
use toolgate::{SessionContext, UsageStats};

/// One request: its session id, its text (the user messages joined) and
/// the distinct tools it calls.
struct Request {
    session: String,
    text: String,
    tools: Vec<String>,
}

fn requests(path: &PathBuf) -> Vec<Request> {
    let text = std::fs::read_to_string(path).expect("trace");
    let mut by: BTreeMap<String, (usize, Vec<String>, Vec<String>)> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        let s = v["session"].as_str().expect("session").to_string();
        let e = by.entry(s).or_insert((n, Vec::new(), Vec::new()));
        match v["event"].as_str() {
            Some("user_message") => e.1.push(v["text"].as_str().unwrap_or("").to_string()),
            Some("tool_call") => {
                if let Some(t) = v["tool"].as_str()
                    && !e.2.iter().any(|x| x == t)
                {
                    e.2.push(t.to_string());
                }
            }
            _ => {}
        }
    }
    let mut out: Vec<(usize, Request)> = by
        .into_iter()
        .filter(|(_, (_, _, tools))| !tools.is_empty())
        .map(|(session, (first, msgs, tools))| {
            (
                first,
                Request {
                    session,
                    text: msgs.join(" "),
                    tools,
                },
            )
        })
        .collect();
    out.sort_by_key(|(n, _)| *n);
    out.into_iter().map(|(_, r)| r).collect()
}

fn pct(a: usize, b: usize) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: find_tools_seal TRACE CATALOG [POLICY]";
    let trace = PathBuf::from(args.next().expect(usage));
    let catalog = PathBuf::from(args.next().expect(usage));
    let policy_path = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "policies/selection.toml".into()),
    );
    let mut policy = toolgate::load::load_policy(Some(&policy_path)).expect("policy");
    policy.examples.clear(); // written for the shipped catalog, as in the proxy
    let cat = SourceFile::new(
        catalog.display().to_string(),
        std::fs::read_to_string(&catalog).expect("catalog"),
    );
    let tools = import_tools_json(&cat.name, &cat.text).expect("tools");
    let plan = std::sync::Arc::new(toolgate::compile::compile(&policy, tools).expect("plan"));
    let reqs = requests(&trace);
    let default = default_limit(&plan, policy.discovery.limit);
    println!(
        "policy {} | {} tools | {} requests, {} calls | default limit {:?}",
        policy_path.display(),
        plan.tools.len(),
        reqs.len(),
        reqs.iter().map(|r| r.tools.len()).sum::<usize>(),
        default
    );
    // One evaluation per request; every limit is a prefix of the unlimited list.
    let ranked: Vec<Vec<usize>> = reqs
        .iter()
        .map(|r| {
            let ctx = SessionContext {
                user_intent_keywords: plan.analyzer.extract(&r.text),
                user_message: Some(r.text.clone()),
                ..Default::default()
            };
            let act = plan.evaluate(&ctx, &UsageStats::default(), 0.0);
            best_matches(&act, None, |_| true)
                .iter()
                .map(|m| m.tool)
                .collect()
        })
        .collect();
    println!(
        "{:<10} {:<6} {:>5} {:>6} {:>8} {:>8} {:>6} {:>6}",
        "limit", "split", "calls", "reqs", "recall", "complete", "mean", "median"
    );
    let mut limits: Vec<Option<usize>> = vec![default];
    for l in [Some(1), Some(3), Some(5), Some(8), Some(10), Some(20), None] {
        if !limits.contains(&l) {
            limits.push(l);
        }
    }
    for limit in limits {
        for (split, pick) in [("all", None), ("A", Some(false)), ("B(ho)", Some(true))] {
            let (mut calls, mut hit, mut n, mut complete) = (0, 0, 0, 0);
            let mut sizes = Vec::new();
            for (r, list) in reqs.iter().zip(&ranked) {
                if pick.is_some_and(|h| is_holdout(&r.session, 0.5) != h) {
                    continue;
                }
                let k = limit.unwrap_or(usize::MAX).min(list.len());
                let shown = &list[..k];
                let found = r
                    .tools
                    .iter()
                    .filter(|t| plan.tool_index(t).is_some_and(|w| shown.contains(&w)))
                    .count();
                calls += r.tools.len();
                hit += found;
                n += 1;
                complete += usize::from(found == r.tools.len());
                sizes.push(k);
            }
            sizes.sort_unstable();
            let mean = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
            let med = sizes.get(sizes.len() / 2).copied().unwrap_or(0);
            let label = match limit {
                Some(l) if Some(l) == default => format!("{l} (pol.)"),
                Some(l) => l.to_string(),
                None => "none".into(),
            };
            println!(
                "{label:<10} {split:<6} {calls:>5} {n:>6} {:>7.1}% {:>7.1}% {mean:>6.2} {med:>6}",
                pct(hit, calls),
                pct(complete, n)
            );
        }
    }
}
