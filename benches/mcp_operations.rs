//! What operating the proxy costs per call (docs/operations.md): a
//! `tools/call` through the real proxy binary over stdio to the real
//! `mcp-server-time` (from `.venv`, which `scripts/test` installs), with an
//! rmcp client, in these set-ups:
//!
//! * `direct`: no proxy, the client talks to `mcp-server-time` itself;
//!   `plain − direct` is the proxy's own added latency, the baseline that
//!   each operating cost below is a share of;
//! * `plain`: no metrics endpoint, no exporter, no shadow (all off; the
//!   counters are always updated in memory, their cost is
//!   `metrics_per_call` below);
//! * `metrics`: the metrics served (`--metrics ADDR`) and scraped by this
//!   bench once a second (Prometheus scrapes every 15 to 60 s);
//! * `traced`: OpenTelemetry traces on (`OTEL_EXPORTER_OTLP_ENDPOINT` set to
//!   an OTLP/HTTP sink on loopback, served by this bench, that answers 200):
//!   three spans per call, the downstream `traceparent`, the batch exporter;
//! * `shadow`: a shadow policy (`--shadow-policy policies/default.toml`, a
//!   policy that differs from the live `policies/selection.toml`) with a
//!   shadow log: the verdict made twice, the session and the differences
//!   written to the log.
//!
//! `metrics − plain`, `traced − plain` and `shadow − plain` are the
//! per-call costs, each to be read against `plain − direct`; as they
//! drown in a loaded machine's drift, the `in_process` group measures the
//! added work itself: `metrics_per_call` the counters and histograms one
//! call updates (its audit record observed, the gate's time);
//! `spans_per_call` the three spans of one call (the
//! request under a client `traceparent`, the gate, the downstream call),
//! the downstream `traceparent` injected into a `_meta` map, handed to the
//! same batch OTLP/HTTP exporter as the proxy's; `shadow_per_call` what the
//! shadow adds to one call and one `tools/list`: a call-gate verdict and an
//! evaluation of the session under the shadow plan.
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

/// A client of `mcp-server-time` itself, without the proxy.
async fn start_direct(server: &Path) -> Client {
    let mut p = tokio::process::Command::new(server);
    p.args(["--local-timezone", "UTC"]);
    let c = ().serve(TokioChildProcess::new(p).unwrap()).await.unwrap();
    c.list_all_tools().await.unwrap();
    c
}

/// A free loopback port (bound, then released for the proxy to take).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// GET /metrics on `port` every second, as a (busy) Prometheus would;
/// panics when a scrape does not answer 200.
fn scrape_every_second(port: u16) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
                continue;
            };
            let req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
            s.write_all(req.as_bytes()).await.unwrap();
            let mut body = Vec::new();
            s.read_to_end(&mut body).await.unwrap();
            assert!(body.starts_with(b"HTTP/1.1 200"), "a scrape failed");
        }
    });
}

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
    let port = free_port();
    let metrics_addr = format!("127.0.0.1:{port}");
    let (direct, plain, metrics, traced, shadow) = rt.block_on(async {
        let sink = otlp_sink().await;
        let direct = start_direct(&server).await;
        let plain = start(&server, &[], &[]).await;
        let metrics = start(&server, &["--metrics", &metrics_addr], &[]).await;
        scrape_every_second(port);
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
        (direct, plain, metrics, traced, shadow)
    });
    let call = CallToolRequestParams::new("time__get_current_time").with_arguments(
        json!({"timezone": "UTC"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let direct_call = CallToolRequestParams::new("get_current_time")
        .with_arguments(call.arguments.clone().unwrap_or_default());
    let cases = [
        ("direct", &direct, &direct_call),
        ("plain", &plain, &call),
        ("metrics", &metrics, &call),
        ("traced", &traced, &call),
        ("shadow", &shadow, &call),
    ];
    for (_, svc, call) in cases {
        let r = rt.block_on(svc.call_tool_once(call.clone())).unwrap();
        assert!(format!("{r:?}").contains("UTC"), "{r:?}");
    }
    let mut g = c.benchmark_group("mcp_operations");
    g.sample_size(200);
    for (name, svc, call) in cases {
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
        let _ = direct.cancel().await;
        let _ = plain.cancel().await;
        let _ = metrics.cancel().await;
        let _ = traced.cancel().await;
        let _ = shadow.cancel().await;
    });
}

fn in_process(c: &mut Criterion) {
    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer, TracerProvider};
    use opentelemetry::{Context, KeyValue};
    use opentelemetry_otlp::WithExportConfig;
    use toolgate::mcp::gate::{CallGate, PolicyGate};

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let sink = rt.block_on(otlp_sink());
    toolgate::mcp::http::install_crypto_provider();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(format!("{sink}/v1/traces"))
        .build()
        .unwrap();
    let batch =
        opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
            exporter,
            opentelemetry_sdk::runtime::Tokio,
        )
        .build();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_span_processor(batch)
        .build();
    let tracer = provider.tracer("toolgate");
    let prop = opentelemetry_sdk::propagation::TraceContextPropagator::new();
    let mut incoming = std::collections::HashMap::new();
    incoming.insert(
        "traceparent".to_string(),
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_string(),
    );
    let mut g = c.benchmark_group("mcp_operations_in_process");
    let metrics = toolgate::mcp::metrics::Metrics::new();
    let record = toolgate::mcp::AuditRecord {
        time: 0.0,
        session: "s".into(),
        tool: "time.get_current_time".into(),
        name: Some("time__get_current_time".into()),
        server: Some("time".into()),
        via: None,
        decision: "allow",
        confirmed: None,
        latency_ms: 1.5,
        outcome: toolgate::mcp::Outcome::Ok,
        attempts: 1,
        detail: None,
        trace_id: None,
        flow: Default::default(),
    };
    g.bench_function("metrics_per_call", |b| {
        b.iter(|| {
            metrics.gate_time(0.000_02);
            metrics.observe(std::hint::black_box(&record));
        })
    });
    g.bench_function("spans_per_call", |b| {
        b.iter(|| {
            let parent = prop.extract(&incoming);
            let req = tracer
                .span_builder("tools/call time__get_current_time")
                .with_kind(SpanKind::Server)
                .with_attributes([KeyValue::new("mcp.method.name", "tools/call")])
                .start_with_context(&tracer, &parent);
            let cx = parent.with_span(req);
            let gate = tracer.start_with_context("toolgate.gate", &cx);
            drop(Context::current_with_span(gate));
            let down = tracer
                .span_builder("tools/call get_current_time")
                .with_kind(SpanKind::Client)
                .start_with_context(&tracer, &cx);
            let dcx = cx.with_span(down);
            let mut meta = serde_json::Map::new();
            let mut carrier = std::collections::HashMap::new();
            prop.inject_context(&dcx, &mut carrier);
            for (k, v) in carrier {
                meta.insert(k, serde_json::Value::String(v));
            }
            dcx.span().end();
            cx.span().end();
            std::hint::black_box(meta)
        })
    });
    let plan = std::sync::Arc::new(
        toolgate::load::load_plan(&toolgate::load::Sources::default()).unwrap(),
    );
    let args = json!({"timezone": "UTC"});
    let ctx = toolgate::SessionContext {
        conversation_stage: Some("exploration".into()),
        user_intent_keywords: plan.analyzer.extract("what time is it in Tokyo"),
        ..Default::default()
    };
    let usage = toolgate::UsageStats::default();
    g.bench_function("shadow_per_call", |b| {
        b.iter(|| {
            let d = PolicyGate.check(&plan, "time.get_current_time", &args);
            let a = plan.evaluate_with_previous(&ctx, &usage, 10.0, None);
            std::hint::black_box((d, a.tools.len()))
        })
    });
    g.finish();
    let _ = provider.shutdown();
}

criterion_group!(benches, bench, in_process);
criterion_main!(benches);
