//! find_tools quality on BFCL: each question is a `toolgate__find_tools`
//! query against the pooled catalog, ranked exactly as the MCP proxy ranks
//! it (`toolgate::mcp::discovery::best_matches` over the plan's evaluation of
//! the question's keywords); the answer counts when the correct tool is in
//! the returned list.
//!
//! ```sh
//! cargo run --release -- import bfcl --data ../shared/data/bfcl --out /tmp/bfcl
//! cargo run --release --example find_tools_bfcl -- /tmp/bfcl [policies/selection.toml]
//! ```
//!
//! Prints, for the policy's default limit and for fixed limits, recall and
//! the returned list's size, on all questions and on the 80% / 20% split by
//! a hash of the session id that `toolgate fit` uses (held-out = 20%).

use std::collections::BTreeMap;
use std::path::PathBuf;

use toolgate::diag::SourceFile;
use toolgate::mcp::discovery::{best_matches, default_limit};
use toolgate::parse::tags::import_tools_json;
use toolgate::replay::fit::is_holdout;
use toolgate::{SessionContext, UsageStats};

struct Question {
    session: String,
    text: String,
    tool: String,
}

fn questions(path: &PathBuf) -> Vec<Question> {
    let text = std::fs::read_to_string(path).expect("pooled.jsonl");
    let mut by: BTreeMap<String, (Vec<String>, Option<String>, usize)> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        let s = v["session"].as_str().unwrap().to_string();
        let e = by.entry(s).or_insert((Vec::new(), None, n));
        match v["event"].as_str() {
            Some("user_message") => e.0.push(v["text"].as_str().unwrap_or("").to_string()),
            Some("tool_call") if e.1.is_none() => e.1 = v["tool"].as_str().map(String::from),
            _ => {}
        }
    }
    let mut out: Vec<(usize, Question)> = by
        .into_iter()
        .filter_map(|(session, (msgs, tool, first))| {
            Some((
                first,
                Question {
                    session,
                    text: msgs.join(" "),
                    tool: tool?,
                },
            ))
        })
        .collect();
    out.sort_by_key(|(n, _)| *n);
    out.into_iter().map(|(_, q)| q).collect()
}

fn pct(a: usize, b: usize) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().expect("usage: find_tools_bfcl DIR [POLICY]"));
    let policy_path = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "policies/selection.toml".into()),
    );
    let policy = toolgate::load::load_policy(Some(&policy_path)).expect("policy");
    let cat = SourceFile::new(
        "catalog.json",
        std::fs::read_to_string(dir.join("catalog.json")).expect("catalog.json"),
    );
    let tools = import_tools_json(&cat.name, &cat.text).expect("tools");
    let mut policy = policy;
    policy.examples.clear(); // written for the shipped catalog, as in the proxy
    let plan = std::sync::Arc::new(toolgate::compile::compile(&policy, tools).expect("plan"));
    let qs = questions(&dir.join("pooled.jsonl"));
    let default = default_limit(&plan, policy.discovery.limit);
    println!(
        "policy {} | {} tools | {} questions | default limit {:?}",
        policy_path.display(),
        plan.tools.len(),
        qs.len(),
        default
    );
    // One evaluation per question; every limit is a prefix of the unlimited list.
    let ranked: Vec<(Vec<usize>, bool)> = qs
        .iter()
        .map(|q| {
            let ctx = SessionContext {
                user_intent_keywords: plan.analyzer.extract(&q.text),
                ..Default::default()
            };
            let act = plan.evaluate(&ctx, &UsageStats::default(), 0.0);
            let m = best_matches(&act, None, |_| true);
            let want = plan.tool_index(&q.tool);
            (
                m.iter().map(|x| x.tool).collect(),
                want.is_some_and(|w| plan.tools[w].name == q.tool),
            )
        })
        .collect();
    println!(
        "{:<10} {:<9} {:>6} {:>8} {:>6} {:>6} {:>6} {:>7}",
        "limit", "split", "n", "recall", "mean", "median", "p95", "empty"
    );
    let mut limits: Vec<Option<usize>> = vec![default];
    for l in [Some(1), Some(3), Some(5), Some(10), None] {
        if !limits.contains(&l) {
            limits.push(l);
        }
    }
    for limit in limits {
        for (split, pick) in [
            ("all", None),
            ("train", Some(false)),
            ("held-out", Some(true)),
        ] {
            let mut n = 0;
            let mut hit = 0;
            let mut sizes = Vec::new();
            for (q, (list, _)) in qs.iter().zip(&ranked) {
                if pick.is_some_and(|h| is_holdout(&q.session, 0.2) != h) {
                    continue;
                }
                let k = limit.unwrap_or(usize::MAX).min(list.len());
                let shown = &list[..k];
                n += 1;
                if let Some(w) = plan.tool_index(&q.tool)
                    && shown.contains(&w)
                {
                    hit += 1;
                }
                sizes.push(k);
            }
            sizes.sort_unstable();
            let mean = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
            let med = sizes.get(sizes.len() / 2).copied().unwrap_or(0);
            let p95 = sizes
                .get(((sizes.len() as f64) * 0.95).ceil() as usize - 1)
                .copied()
                .unwrap_or(0);
            let empty = sizes.iter().filter(|&&s| s == 0).count();
            let label = match limit {
                Some(l) if Some(l) == default => format!("{l} (pol.)"),
                Some(l) => l.to_string(),
                None => "none".into(),
            };
            println!(
                "{label:<10} {split:<9} {n:>6} {:>7.1}% {mean:>6.2} {med:>6} {p95:>6} {:>6.1}%",
                pct(hit, n),
                pct(empty, n)
            );
        }
    }
    let unknown = ranked.iter().filter(|(_, known)| !known).count();
    if unknown > 0 {
        println!("{unknown} questions call a tool that is not in the catalog (counted as misses)");
    }
}
