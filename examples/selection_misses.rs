//! The calls a policy misses (called tool not active just before the call)
//! on one half of a session-id hash split, with what each miss looked like,
//! to find what the misses have in common before changing a policy.
//!
//! ```sh
//! cargo build --release --example selection_misses
//! target/release/examples/selection_misses POLICY TRACE TOOLS [HALF] [HELD_OUT_FRACTION]
//! # e.g. Seal-Tools' tuning half (A), never the held-out half while tuning:
//! target/release/examples/selection_misses policies/selection.toml \
//!     ../shared/data/seal-tools/trace-in-domain.jsonl ../shared/data/seal-tools/catalog.json A 0.5
//! ```
//!
//! `HALF` is `A` (the tuning half, default), `B` (held out) or `all`; the
//! split is [`toolgate::replay::fit::is_holdout`]'s, as in
//! `examples/selection_ranks.rs`. For every missed call it prints one block:
//! the session, the call's position among the session's calls, the number of
//! clauses the latest message was cut into (and how many were done), the
//! called tool's rank, score and features (`keyword_match`, its clause value,
//! `semantic_match`, `usage_bonus`, `recency_bonus`), the threshold and the
//! active-set size, and the best three tools with their scores. Then counts
//! of the misses by call position, by clause count, by rank bucket, by the
//! gap between the called tool's score and the threshold, and whether the
//! called tool had a clause value at all.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use toolgate::load::{Sources, load_catalog, load_policy};
use toolgate::plan::FEATURES;
use toolgate::replay::engine::{ReplayOptions, replay_with};
use toolgate::replay::ranks::Split;
use toolgate::replay::trace::parse_trace;

fn feature(name: &str) -> usize {
    FEATURES
        .iter()
        .position(|f| *f == name)
        .expect("a known feature")
}

fn bump(m: &mut BTreeMap<String, usize>, k: impl Into<String>) {
    *m.entry(k.into()).or_default() += 1;
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: selection_misses POLICY TRACE TOOLS [A|B|all] [HELD_OUT_FRACTION]";
    let policy_path = PathBuf::from(args.next().expect(usage));
    let trace_path = PathBuf::from(args.next().expect(usage));
    let tools_path = PathBuf::from(args.next().expect(usage));
    let half = args.next().unwrap_or_else(|| "A".into());
    let fraction: f64 = args.next().map_or(0.5, |f| f.parse().expect("a fraction"));
    let split = match half.as_str() {
        "A" => Split::Train(fraction),
        "B" => Split::HeldOut(fraction),
        "all" => Split::All,
        other => panic!("HALF is A, B or all, not {other:?}"),
    };
    let mut policy = load_policy(Some(&policy_path)).unwrap_or_else(|e| panic!("{e:?}"));
    policy.examples.clear();
    let catalog = load_catalog(&Sources {
        policy: None,
        tags: None,
        tools: vec![tools_path],
    })
    .unwrap_or_else(|e| panic!("{e:?}"));
    let plan =
        Arc::new(toolgate::compile::compile(&policy, catalog).unwrap_or_else(|e| panic!("{e:?}")));
    let text = std::fs::read_to_string(&trace_path).expect("trace");
    let trace = parse_trace(&text, false).expect("trace");
    let ids: Vec<String> = trace
        .sessions()
        .into_iter()
        .map(|(id, _)| id.to_string())
        .collect();
    let messages: BTreeMap<String, String> = trace
        .lines
        .iter()
        .filter_map(|l| match &l.event {
            toolgate::replay::trace::Event::UserMessage { text } => {
                Some((l.session.clone(), text.clone()))
            }
            _ => None,
        })
        .collect();
    let (kw, sem, us, rec) = (
        feature("keyword_match"),
        feature("semantic_match"),
        feature("usage_bonus"),
        feature("recency_bonus"),
    );
    let mut position: BTreeMap<usize, usize> = BTreeMap::new(); // calls seen per session
    let mut by_pos = BTreeMap::new();
    let mut by_clauses = BTreeMap::new();
    let mut by_rank = BTreeMap::new();
    let mut by_gap = BTreeMap::new();
    let mut by_clause_value = BTreeMap::new();
    let mut by_pos_all = BTreeMap::new();
    let (mut calls, mut misses) = (0usize, 0usize);
    replay_with(
        &plan,
        &trace,
        &ReplayOptions {
            skip_invalid: false,
            keep_active: false,
        },
        |step, act| {
            let Some(called) = step.called else { return };
            let id = &ids[step.session];
            if !split.contains(id) {
                return;
            }
            let pos = {
                let p = position.entry(step.session).or_default();
                *p += 1;
                *p
            };
            calls += 1;
            bump(&mut by_pos_all, format!("call {}", pos.min(4)));
            if step.hit {
                return;
            }
            misses += 1;
            let clauses = act.clauses();
            let done = clauses.iter().filter(|(_, d)| *d).count();
            let f = act.features(called);
            let clause = act.keyword_clause(called);
            let s = &act.tools[called];
            let gap = act.effective_threshold - s.score;
            let rank = step.rank.unwrap_or(usize::MAX);
            bump(&mut by_pos, format!("call {}", pos.min(4)));
            bump(
                &mut by_clauses,
                format!("{} clauses ({} done)", clauses.len().min(6), done.min(5)),
            );
            bump(
                &mut by_rank,
                match rank {
                    1 => "rank 1",
                    2..=3 => "rank 2-3",
                    4..=8 => "rank 4-8",
                    9..=20 => "rank 9-20",
                    _ => "rank > 20",
                },
            );
            bump(
                &mut by_gap,
                match gap {
                    g if g < 0.0 => "score >= threshold (max_active cut)",
                    g if g < 0.02 => "gap < 0.02",
                    g if g < 0.05 => "gap 0.02-0.05",
                    g if g < 0.10 => "gap 0.05-0.10",
                    g if g < 0.20 => "gap 0.10-0.20",
                    _ => "gap >= 0.20",
                },
            );
            bump(
                &mut by_clause_value,
                match (clauses.len() >= 2, clause) {
                    (false, _) => "request not cut",
                    (true, None) => "cut; called tool has no clause value",
                    (true, Some(_)) => "cut; called tool has a clause value",
                },
            );
            let mut order: Vec<usize> = (0..act.tools.len()).collect();
            order.sort_by(|&a, &b| {
                toolgate::eval::ToolScore::better_first(&act.tools[a], &act.tools[b])
            });
            println!(
                "== {id} call {pos}: {} rank {rank} score {:.3} (threshold {:.2}, active {})",
                plan.tools[called].name, s.score, act.effective_threshold, step.active_count
            );
            println!(
                "   keyword {:.3} clause {} semantic {:.3} usage {:.2} recency {:.2} | clauses {} done {}",
                f[kw],
                clause.map_or("-".into(), |(_, v)| format!("{v:.3}")),
                f[sem],
                f[us],
                f[rec],
                clauses.len(),
                done
            );
            if let Some((c, _)) = clause {
                println!("   from clause: {}", c.chars().take(160).collect::<String>());
            }
            for &t in order.iter().take(3) {
                let ft = act.features(t);
                println!(
                    "   top: {:<40} {:.3} kw {:.3} sem {:.3}{}",
                    plan.tools[t].name,
                    act.tools[t].score,
                    ft[kw],
                    ft[sem],
                    if act.tools[t].active { " active" } else { "" }
                );
            }
            for (c, d) in &clauses {
                println!(
                    "   clause{}: {}",
                    if *d { " (done)" } else { "" },
                    c.chars().take(200).collect::<String>()
                );
            }
            if clauses.is_empty()
                && let Some(m) = messages.get(id)
            {
                println!("   message: {}", m.chars().take(400).collect::<String>());
            }
        },
    )
    .expect("replay");
    println!("\n{half}: {misses} misses of {calls} calls");
    for (title, m) in [
        ("calls by position", &by_pos_all),
        ("misses by position", &by_pos),
        ("by clauses", &by_clauses),
        ("by rank", &by_rank),
        ("by gap to threshold", &by_gap),
        ("by clause value", &by_clause_value),
    ] {
        println!("{title}:");
        for (k, v) in m {
            println!("  {k:<45} {v}");
        }
    }
}
