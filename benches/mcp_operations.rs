//! What operating the proxy costs per call (docs/operations.md): a
//! `tools/call` through the real proxy binary over stdio to the real
//! `mcp-server-time` (from `.venv`, which `scripts/test` installs), with an
//! rmcp client, in three set-ups:
//!
//! * `plain`: no exporter, no shadow (the baseline);
//! * `traced`: OpenTelemetry traces on (`OTEL_EXPORTER_OTLP_ENDPOINT` set to
//!   an OTLP/HTTP sink on loopback, served by this bench, that answers 200):
//!   three spans per call, the downstream `traceparent`, the batch exporter;
//! * `shadow`: a shadow policy (`--shadow-policy policies/default.toml`, a
//!   policy that differs from the live `policies/selection.toml`) with a
//!   shadow log: the verdict made twice, the session and the differences
//!   written to the log.
//!
//! `traced − plain` and `shadow − plain` are the per-call costs.
//!
//! Run: `cargo bench --bench mcp_operations` (skipped, with a message, when
//! `.venv/bin/mcp-server-time` is missing).

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

type Client = RunningService<rmcp::RoleClient, ()>;

async fn start(server: &Path, extra: &[&str], env: &[(&str, String)]) -> Client {
    let mut p = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    p.args([
        "mcp-proxy",
        "--server",
        &format!("time={} --local-timezone UTC", server.display()),
    ])
    .args(extra)
    .env("RUST_LOG", "error");
    for (k, v) in env {
        p.env(k, v);
    }
    let c = ().serve(TokioChildProcess::new(p).unwrap()).await.unwrap();
    c.list_all_tools().await.unwrap();
    c
}

/// An OTLP/HTTP sink on loopback: every POST gets 200 (an empty
/// `ExportTraceServiceResponse`); returns its base URL.
async fn otlp_sink() -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(|| async { ([("content-type", "application/x-protobuf")], "") }),
    );
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    url
}

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let server = root.join(".venv/bin/mcp-server-time");
    if !server.exists() {
        eprintln!(
            "SKIPPED: {} is missing (run scripts/test); no figures",
            server.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("shadow.jsonl");
    let shadow_policy = root.join("policies/default.toml");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (plain, traced, shadow) = rt.block_on(async {
        let sink = otlp_sink().await;
        let plain = start(&server, &[], &[]).await;
        let traced = start(&server, &[], &[("OTEL_EXPORTER_OTLP_ENDPOINT", sink)]).await;
        let shadow = start(
            &server,
            &[
                "--shadow-policy",
                shadow_policy.to_str().unwrap(),
                "--shadow-log",
                log.to_str().unwrap(),
            ],
            &[],
        )
        .await;
        (plain, traced, shadow)
    });
    let call = CallToolRequestParams::new("time__get_current_time").with_arguments(
        json!({"timezone": "UTC"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    for svc in [&plain, &traced, &shadow] {
        let r = rt.block_on(svc.call_tool_once(call.clone())).unwrap();
        assert!(format!("{r:?}").contains("UTC"), "{r:?}");
    }
    let mut g = c.benchmark_group("mcp_operations");
    g.sample_size(200);
    for (name, svc) in [("plain", &plain), ("traced", &traced), ("shadow", &shadow)] {
        g.bench_function(name, |b| {
            b.iter(|| rt.block_on(svc.call_tool_once(call.clone())).unwrap())
        });
    }
    g.finish();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logged.contains("\"tool_call\""),
        "the shadow proxy wrote its log"
    );
    rt.block_on(async {
        let _ = plain.cancel().await;
        let _ = traced.cancel().await;
        let _ = shadow.cancel().await;
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
