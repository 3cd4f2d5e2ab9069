//! Latency of a `tools/call` through the real proxy binary, end to end over
//! stdio, with a real downstream server (`mcp-server-time` from `.venv`,
//! which `scripts/test` installs): an rmcp client calls `get_current_time`
//!
//! * `direct`: on the server itself, no proxy;
//! * `proxy_tools_call`: through `toolgate mcp-proxy`, as `time__get_current_time`;
//! * `proxy_call_tool`: through the proxy's call-through tool
//!   (`toolgate__call_tool` with `name` and `arguments`).
//!
//! `proxy_call_tool − proxy_tools_call` is what the call-through tool adds
//! (it takes the same path as a direct call); `proxy_tools_call − direct` is
//! the proxy's own overhead (gate, audit, one more stdio hop).
//! Also `find_tools`, the search round trip as a client sees it, and the
//! same two requests from a modern (2026-07-28) client
//! (`modern_proxy_tools_call`, `modern_proxy_find_tools`): no session, a
//! session handle opened and sealed per request.
//!
//! Run: `cargo bench --bench mcp_call_tool` (skipped, with a message, when
//! `.venv/bin/mcp-server-time` is missing).

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _};
use rmcp::transport::TokioChildProcess;
use serde_json::json;

fn args(v: serde_json::Value) -> rmcp::model::JsonObject {
    match v {
        serde_json::Value::Object(o) => o,
        _ => unreachable!(),
    }
}

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let server = root.join(".venv/bin/mcp-server-time");
    if !server.exists() {
        eprintln!(
            "SKIPPED: {} is missing (run scripts/test); no call-latency figures",
            server.display()
        );
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (direct, proxied) = rt.block_on(async {
        let mut d = tokio::process::Command::new(&server);
        d.args(["--local-timezone", "UTC"]);
        let direct = ().serve(TokioChildProcess::new(d).unwrap()).await.unwrap();
        let mut p = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
        p.args([
            "mcp-proxy",
            "--server",
            &format!("time={} --local-timezone UTC", server.display()),
        ])
        .env("RUST_LOG", "error");
        let proxied = ().serve(TokioChildProcess::new(p).unwrap()).await.unwrap();
        // wait for the catalog
        proxied.list_all_tools().await.unwrap();
        (direct, proxied)
    });
    // the same proxy, spoken to in the modern era (2026-07-28: no
    // initialize, per-request _meta, a session handle in each result)
    let modern = rt.block_on(async {
        let mut p = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
        p.args([
            "mcp-proxy",
            "--server",
            &format!("time={} --local-timezone UTC", server.display()),
        ])
        .env("RUST_LOG", "error");
        let m = ()
            .serve_with_lifecycle(
                TokioChildProcess::new(p).unwrap(),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .unwrap();
        m.list_all_tools().await.unwrap();
        m
    });
    let tz = json!({"timezone": "UTC"});
    let plain =
        |name: &str| CallToolRequestParams::new(name.to_string()).with_arguments(args(tz.clone()));
    let through = CallToolRequestParams::new("toolgate__call_tool").with_arguments(args(
        json!({"name": "time__get_current_time", "arguments": tz}),
    ));
    let find = CallToolRequestParams::new("toolgate__find_tools")
        .with_arguments(args(json!({"query": "what time is it in Tokyo"})));
    for (svc, p) in [
        (&direct, plain("get_current_time")),
        (&proxied, plain("time__get_current_time")),
        (&proxied, through.clone()),
        (&modern, plain("time__get_current_time")),
    ] {
        let r = rt.block_on(svc.call_tool_once(p)).unwrap();
        assert!(format!("{r:?}").contains("UTC"), "{r:?}");
    }
    let mut g = c.benchmark_group("mcp_call_latency");
    g.sample_size(200);
    g.bench_function("direct", |b| {
        b.iter(|| {
            rt.block_on(direct.call_tool_once(plain("get_current_time")))
                .unwrap()
        })
    });
    g.bench_function("proxy_tools_call", |b| {
        b.iter(|| {
            rt.block_on(proxied.call_tool_once(plain("time__get_current_time")))
                .unwrap()
        })
    });
    g.bench_function("proxy_call_tool", |b| {
        b.iter(|| {
            rt.block_on(proxied.call_tool_once(through.clone()))
                .unwrap()
        })
    });
    g.bench_function("proxy_find_tools", |b| {
        b.iter(|| rt.block_on(proxied.call_tool_once(find.clone())).unwrap())
    });
    g.bench_function("modern_proxy_tools_call", |b| {
        b.iter(|| {
            rt.block_on(modern.call_tool_once(plain("time__get_current_time")))
                .unwrap()
        })
    });
    g.bench_function("modern_proxy_find_tools", |b| {
        b.iter(|| rt.block_on(modern.call_tool_once(find.clone())).unwrap())
    });
    g.finish();
    rt.block_on(async {
        let _ = direct.cancel().await;
        let _ = proxied.cancel().await;
        let _ = modern.cancel().await;
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
