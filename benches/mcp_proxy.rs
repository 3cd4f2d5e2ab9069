//! The MCP proxy's `tools/list` work, in process: evaluate the session over
//! the catalog of every shipped MCP server (the captured `tools/list` results
//! in tests/data/mcp-catalogs, 64 tools, with the shipped tags), pick the
//! active tools, and serialise the answer as it goes on the wire
//! (issue target: ≤ 1 ms). Also the catalog compile a downstream
//! `tools/list_changed` or a policy edit costs.
//!
//! The call latency added by the proxy is measured end to end, with real
//! servers, by benches/mcp_call_latency.py.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate::mcp::catalog::{Naming, ServerTools, build_catalog, tools_from_json};
use toolgate::mcp::source::PlanInputs;
use toolgate::{SessionContext, UsageStats};

const CATALOGS: [&str; 8] = [
    "everything-fullcaps",
    "fetch",
    "filesystem",
    "git",
    "memory",
    "shell",
    "sqlite",
    "time",
];

fn servers() -> Vec<ServerTools> {
    CATALOGS
        .iter()
        .map(|name| {
            let text =
                std::fs::read_to_string(format!("tests/data/mcp-catalogs/{name}.json")).unwrap();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            ServerTools {
                server: name.trim_end_matches("-fullcaps").to_string(),
                tools: Arc::new(tools_from_json(&v).unwrap()),
                version: 1,
            }
        })
        .collect()
}

fn inputs() -> PlanInputs {
    PlanInputs {
        policy: toolgate::load::load_policy(None).unwrap(),
        tags: toolgate::load::load_catalog(&toolgate::load::Sources::default()).unwrap(),
        version: 1,
    }
}

fn bench(c: &mut Criterion) {
    let inputs = inputs();
    let servers = servers();
    let catalog = build_catalog(&inputs, &servers, &Naming::default()).unwrap();
    let plan = catalog.plan.clone();
    assert_eq!(plan.tools.len(), 64);

    let empty = SessionContext::default();
    let mut sql = SessionContext {
        conversation_stage: Some("exploration".into()),
        active_language: Some("sql".into()),
        recent_tool_calls: vec!["sqlite.list_tables".into(), "sqlite.describe_table".into()],
        session_duration_seconds: 120.0,
        ..Default::default()
    };
    sql.user_intent_keywords = plan
        .analyzer
        .extract("which users signed up last week? query the sqlite table");
    let mut usage = UsageStats::default();
    for (t, n) in [("sqlite.list_tables", 2u64), ("sqlite.describe_table", 1)] {
        usage.call_counts.insert(t.into(), n);
        usage.last_call_at.insert(t.into(), 100.0);
    }
    let none = UsageStats::default();

    let mut g = c.benchmark_group("mcp_tools_list");
    for (label, ctx, usage) in [("cold", &empty, &none), ("sql_session", &sql, &usage)] {
        let act = plan.evaluate(ctx, usage, 120.0);
        eprintln!(
            "{label}: {} of {} tools active",
            act.active_names().len(),
            plan.tools.len()
        );
        g.bench_function(format!("{label}/evaluate_and_list"), |b| {
            let mut prev = Some(plan.evaluate(ctx, usage, 120.0));
            b.iter(|| {
                let act = plan.evaluate_with_previous(ctx, usage, 120.0, prev.as_ref());
                let result = catalog.list_result(&act);
                prev = Some(act);
                black_box(result)
            })
        });
        g.bench_function(format!("{label}/evaluate_list_and_serialise"), |b| {
            let mut prev = Some(plan.evaluate(ctx, usage, 120.0));
            b.iter(|| {
                let act = plan.evaluate_with_previous(ctx, usage, 120.0, prev.as_ref());
                let result = catalog.list_result(&act);
                prev = Some(act);
                black_box(serde_json::to_vec(&result).unwrap())
            })
        });
    }
    g.bench_function("all_64_tools/list_and_serialise", |b| {
        // the worst case of the answer: every tool active
        b.iter(|| {
            let result = rmcp::model::ListToolsResult::with_all_items(catalog.tools.clone());
            black_box(serde_json::to_vec(&result).unwrap())
        })
    });
    g.finish();

    c.bench_function("mcp_catalog_compile_64_tools", |b| {
        b.iter(|| black_box(build_catalog(&inputs, &servers, &Naming::default()).unwrap()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
