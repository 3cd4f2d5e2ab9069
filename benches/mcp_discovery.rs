//! The MCP proxy's discovery work, in process, over a 1,000-tool catalog
//! (37 synthetic servers, tools with 1-4 parameters, built into a catalog
//! exactly as the proxy builds it, under the proxy's default policy
//! `policies/selection.toml`):
//!
//! * `find_tools_round_trip`: the bytes of a JSON-RPC `tools/call` of
//!   `toolgate__find_tools` in, the bytes of its response out — parse, the
//!   search (`mcp::discovery::search`, the function `Proxy::find_tools`
//!   runs: keyword extraction, evaluation of every tool, ranking, the result
//!   with each match's schema) and serialisation. Target: ≤ 2 ms median.
//!   What it leaves out is rmcp's dispatch and one mutex, measured end to
//!   end by benches/mcp_call_tool.rs.
//! * `tools_list_after_find`: the `tools/list` answer once a search added
//!   five tools (evaluate, list, serialise).
//! * `catalog_compile`: what a downstream `list_changed` or a policy edit
//!   costs at this size (names, definition hashes, plan).
//!
//! Run: `cargo bench --bench mcp_discovery`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::model::{CallToolRequestParams, ListToolsResult, Tool};
use toolgate::mcp::catalog::{Naming, ServerTools, build_catalog};
use toolgate::mcp::discovery::{default_limit, search};
use toolgate::mcp::source::PlanInputs;
use toolgate::mcp::stateless::{SessionHandle, Stateless};
use toolgate::{SessionContext, UsageStats};

// The shared vocabulary and LCG of the synthetic catalogs (benches/common).
#[path = "common/catalog.rs"]
#[allow(dead_code)]
mod catalog;
use catalog::{Rng, WORDS};

/// `n` tools spread over 37 servers.
fn servers(n: usize) -> Vec<ServerTools> {
    let mut r = Rng(11);
    let mut per: Vec<Vec<Tool>> = vec![Vec::new(); 37];
    for i in 0..n {
        let w: Vec<&str> = (0..8).map(|_| WORDS[r.next(WORDS.len())]).collect();
        let props: serde_json::Map<String, serde_json::Value> = (0..1 + r.next(4))
            .map(|k| {
                (
                    format!("{}_{k}", w[2 + k]),
                    serde_json::json!({"type": "string", "description": format!("the {} to {}", w[k], w[k + 1])}),
                )
            })
            .collect();
        let tool: Tool = serde_json::from_value(serde_json::json!({
            "name": format!("{}_{}_{i}", w[0], w[1]),
            "description": format!("{} the {} of a {} for the {} and {}", w[0], w[1], w[2], w[3], w[4]),
            "inputSchema": {"type": "object", "properties": props}
        }))
        .unwrap();
        per[i % 37].push(tool);
    }
    per.into_iter()
        .enumerate()
        .map(|(i, tools)| ServerTools {
            server: format!("svc{i}"),
            tools: Arc::new(tools),
            version: 1,
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let policy =
        toolgate::load::load_policy(Some(std::path::Path::new("policies/selection.toml"))).unwrap();
    let inputs = PlanInputs {
        policy,
        tags: Vec::new(),
        version: 1,
    };
    let servers = servers(1000);
    let naming = Naming {
        reserved: vec!["toolgate__find_tools".into(), "toolgate__call_tool".into()],
        ..Naming::default()
    };
    let cat = build_catalog(&inputs, &servers, &naming).unwrap();
    assert_eq!(cat.plan.tools.len(), 1000);
    let limit = default_limit(&cat.plan, cat.discovery.limit);
    let request = serde_json::json!({
        "jsonrpc": "2.0", "id": 42, "method": "tools/call",
        "params": {"name": "toolgate__find_tools",
                   "arguments": {"query": "convert the currency of an invoice for the customer"}}
    })
    .to_string();
    let usage = UsageStats::default();

    let round_trip = || {
        let v: serde_json::Value = serde_json::from_str(&request).unwrap();
        let params: CallToolRequestParams = serde_json::from_value(v["params"].clone()).unwrap();
        let args = params.arguments.unwrap_or_default();
        let query = args["query"].as_str().unwrap();
        let (result, matches) = search(
            &cat,
            SessionContext::default(),
            &usage,
            10.0,
            query,
            limit,
            |_| true,
            Some("toolgate__call_tool"),
        );
        let out = serde_json::to_vec(
            &serde_json::json!({"jsonrpc": "2.0", "id": v["id"], "result": result}),
        )
        .unwrap();
        (out, matches)
    };
    let (bytes, matches) = round_trip();
    eprintln!(
        "find_tools: {} matches ({:?}), response {} bytes",
        matches.len(),
        matches
            .iter()
            .map(|m| cat.tools[m.tool].name.to_string())
            .collect::<Vec<_>>(),
        bytes.len()
    );
    assert!(!matches.is_empty());

    // The modern era (2026-07-28): the same search, plus opening the
    // request's session handle and sealing the new one (HMAC-SHA256).
    let stateless = Stateless::from_config(None, std::time::Duration::from_secs(300)).unwrap();
    let mut first = SessionHandle::new("bench-m1".into(), 1.0e9);
    first.recent = vec!["s0.t0".into(), "s1.t1".into()];
    let sealed = stateless.seal_handle(&first);
    let modern_round_trip = || {
        let h = stateless.open_handle(&sealed).unwrap();
        let (out, matches) = round_trip();
        let mut next = h.clone();
        next.found = matches
            .iter()
            .map(|m| (cat.catalog_name(m.tool).to_string(), 10.0, 0))
            .collect();
        (out, stateless.seal_handle(&next))
    };
    let mut g = c.benchmark_group("mcp_discovery_1000_tools");
    g.bench_function("find_tools_round_trip", |b| {
        b.iter(|| black_box(round_trip()))
    });
    g.bench_function("modern_find_tools_round_trip", |b| {
        b.iter(|| black_box(modern_round_trip()))
    });
    let found: Vec<usize> = matches.iter().map(|m| m.tool).collect();
    g.bench_function("tools_list_after_find", |b| {
        b.iter(|| {
            let act = cat.plan.evaluate(&SessionContext::default(), &usage, 10.0);
            let mut tools: Vec<Tool> = Vec::new();
            for t in &act.tools {
                if t.active || found.contains(&t.tool) {
                    tools.push(cat.tools[t.tool].clone());
                }
            }
            black_box(serde_json::to_vec(&ListToolsResult::with_all_items(tools)).unwrap())
        })
    });
    g.sample_size(20);
    g.bench_function("catalog_compile", |b| {
        b.iter(|| black_box(build_catalog(&inputs, &servers, &naming).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
