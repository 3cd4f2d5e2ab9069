//! Load test of the proxy's Streamable HTTP endpoint (issue 16), bounded and
//! on loopback only: `cargo bench --bench mcp_http_load`.
//!
//! * a fast downstream server in this process: one `echo` tool (rmcp
//!   `ServerHandler` over rmcp's Streamable HTTP server, axum) that answers
//!   `{"session", "seq"}` with the text `session:seq`;
//! * the proxy: the release binary, `toolgate mcp-proxy --listen
//!   127.0.0.1:0 --server echo=http://.../mcp --name-format {tool}
//!   --audit FILE`, in its own process (so that its memory can be read);
//! * `SESSIONS` clients (rmcp Streamable HTTP clients, one MCP session each)
//!   calling through the proxy at once, `CALLS` calls in all, each client
//!   one call at a time.
//!
//! It reports throughput, latency through the proxy and directly (the same
//! clients on the echo server itself) with p50/p99, the added latency
//! (difference of the percentiles), both under load and for one client
//! alone, and the proxy's memory per session (resident set growth over
//! `IDLE` extra open sessions). It checks that no call is lost and none is
//! answered to the wrong session: every answer must be the caller's own
//! `session:seq`, and the audit must hold exactly each session's calls under
//! that session's id. A failed check panics.
//!
//! Environment: `TOOLGATE_LOAD_SESSIONS` (default 50), `TOOLGATE_LOAD_CALLS`
//! (20,000), `TOOLGATE_LOAD_IDLE` (200).

use axum::serve::ListenerExt as _;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::json;

/// The fast downstream server.
#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let schema = json!({"type": "object", "properties": {
            "session": {"type": "string"}, "seq": {"type": "integer"}},
            "required": ["session", "seq"]});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Echo the caller's session label and sequence number.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let a = request.arguments.unwrap_or_default();
        let s = a.get("session").and_then(|v| v.as_str()).unwrap_or("?");
        let n = a.get("seq").and_then(|v| v.as_i64()).unwrap_or(-1);
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(format!("{s}:{n}")),
        ])))
    }
}

type Client = RunningService<RoleClient, ()>;

async fn connect(url: &str) -> Client {
    ().serve(StreamableHttpClientTransport::from_uri(url.to_string()))
        .await
        .expect("MCP initialize")
}

fn text(r: &CallToolResponse) -> String {
    match r {
        CallToolResponse::Complete(c) => c
            .content
            .iter()
            .filter_map(|b| b.as_text().map(|t| t.text.clone()))
            .collect(),
        _ => String::new(),
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Results of one run: latencies (ms), wall time, errors, wrong answers.
struct Run {
    lat: Vec<f64>,
    wall: Duration,
    lost: usize,
    wrong: usize,
    /// label -> calls answered
    per_label: HashMap<String, usize>,
}

/// `clients` call `echo` at once, `total` calls in all, one at a time each.
async fn run(clients: &[(String, Arc<Client>)], total: usize) -> Run {
    let per = total / clients.len();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for (label, c) in clients {
        let label = label.clone();
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per);
            let (mut lost, mut wrong) = (0, 0);
            for seq in 0..per {
                let mut args = JsonObject::new();
                args.insert("session".into(), json!(label));
                args.insert("seq".into(), json!(seq));
                let p = CallToolRequestParams::new("echo").with_arguments(args);
                let t = Instant::now();
                match c.peer().call_tool_once(p).await {
                    Ok(r) => {
                        lat.push(t.elapsed().as_secs_f64() * 1e3);
                        if text(&r) != format!("{label}:{seq}") {
                            wrong += 1;
                        }
                    }
                    Err(_) => lost += 1,
                }
            }
            (label, lat, lost, wrong)
        }));
    }
    let mut out = Run {
        lat: Vec::new(),
        wall: Duration::ZERO,
        lost: 0,
        wrong: 0,
        per_label: HashMap::new(),
    };
    for t in tasks {
        let (label, lat, lost, wrong) = t.await.unwrap();
        out.per_label.insert(label, lat.len());
        out.lat.extend(lat);
        out.lost += lost;
        out.wrong += wrong;
    }
    out.wall = t0.elapsed();
    out.lat.sort_by(f64::total_cmp);
    out
}

fn main() {
    let sessions = env_usize("TOOLGATE_LOAD_SESSIONS", 50);
    let calls = env_usize("TOOLGATE_LOAD_CALLS", 20_000);
    let idle = env_usize("TOOLGATE_LOAD_IDLE", 200);
    // rmcp's HTTP client is reqwest with rustls and no provider of its own.
    toolgate::mcp::http::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        // the fast downstream server
        let service = StreamableHttpService::new(
            || Ok(Echo),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let app = axum::Router::new().route_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let echo_url = format!("http://{}/mcp", listener.local_addr().unwrap());
        // TCP_NODELAY, as servers in production set it: without it a response
        // written in several pieces (an SSE stream's events) waits for the
        // peer's delayed ACK, ~40 ms per call.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, app).await });

        // the proxy, in its own process
        let tmp = tempfile::tempdir().unwrap();
        let audit = tmp.path().join("audit.jsonl");
        let config = tmp.path().join("proxy.toml");
        std::fs::write(
            &config,
            format!(
                "max_concurrent_calls = {}\nmax_concurrent_calls_per_session = 4\n",
                sessions * 4
            ),
        )
        .unwrap();
        let mut proxy = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["mcp-proxy", "--listen", "127.0.0.1:0", "--name-format", "{tool}"])
            .arg("--server")
            .arg(format!("echo={echo_url}"))
            .arg("--config")
            .arg(&config)
            .arg("--audit")
            .arg(&audit)
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the proxy");
        let pid = proxy.id().unwrap();
        let stderr = proxy.stderr.take().unwrap();
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stderr));
        let proxy_url = loop {
            let l = lines.next_line().await.unwrap().expect("proxy exited");
            if let Some(u) = l.split(" at ").nth(1).filter(|_| l.contains("serving MCP")) {
                break u.trim().to_string();
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

        // one client alone: the added latency without queueing
        let solo_direct = vec![("solo".to_string(), Arc::new(connect(&echo_url).await))];
        let solo_proxy = vec![("solo".to_string(), Arc::new(connect(&proxy_url).await))];
        let _ = run(&solo_proxy, 200).await; // warm-up
        let _ = run(&solo_direct, 200).await;
        let sd = run(&solo_direct, 2_000).await;
        let sp = run(&solo_proxy, 2_000).await;

        // SESSIONS clients at once
        let rss_before = rss_kib(pid);
        let mut through = Vec::new();
        let mut direct = Vec::new();
        for i in 0..sessions {
            through.push((format!("s{i:03}"), Arc::new(connect(&proxy_url).await)));
            direct.push((format!("d{i:03}"), Arc::new(connect(&echo_url).await)));
        }
        let rss_sessions = rss_kib(pid);
        let d = run(&direct, calls / 4).await;
        let p = run(&through, calls).await;
        let rss_after = rss_kib(pid);
        // idle sessions, for the memory per session
        let mut idle_clients = Vec::new();
        for _ in 0..idle {
            idle_clients.push(connect(&proxy_url).await);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss_idle = rss_kib(pid);

        // the audit: each session's calls under its own id, none missing
        let sid = |c: &Client| {
            let info = c.peer().peer_info().expect("server info");
            let meta = info.meta.as_ref().expect("_meta");
            meta.0["toolgate/proxy"]["session"].as_str().unwrap().to_string()
        };
        let solo_sid = sid(&solo_proxy[0].1);
        let sid_of: HashMap<String, String> =
            through.iter().map(|(l, c)| (sid(c), l.clone())).collect();
        let mut audited: HashMap<String, usize> = HashMap::new();
        let mut audit_wrong = 0;
        // The proxy's own time per call (gate + downstream call), from the
        // audit: tells the proxy's work apart from the transport around it.
        let mut inside: Vec<f64> = Vec::new();
        for line in std::fs::read_to_string(&audit).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v["tool"] != "echo.echo" {
                continue;
            }
            if let Some(ms) = v["latency_ms"].as_f64() {
                inside.push(ms);
            }
            let s = v["session"].as_str().unwrap_or_default();
            match sid_of.get(s) {
                Some(label) => *audited.entry(label.clone()).or_default() += 1,
                None if s == solo_sid => {}
                None => audit_wrong += 1,
            }
        }
        let mean_load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();

        let per_s = |r: &Run| r.lat.len() as f64 / r.wall.as_secs_f64();
        println!("MCP proxy over Streamable HTTP: {sessions} sessions, {calls} calls through the proxy");
        println!("load average at the end: {}", mean_load.trim());
        println!(
            "one client alone        : direct p50 {:.3} ms p99 {:.3} ms | proxy p50 {:.3} ms p99 {:.3} ms | added p50 {:.3} ms p99 {:.3} ms",
            pct(&sd.lat, 0.5), pct(&sd.lat, 0.99), pct(&sp.lat, 0.5), pct(&sp.lat, 0.99),
            pct(&sp.lat, 0.5) - pct(&sd.lat, 0.5), pct(&sp.lat, 0.99) - pct(&sd.lat, 0.99)
        );
        println!(
            "{sessions} sessions at once  : direct {:.0} calls/s p50 {:.3} ms p99 {:.3} ms | proxy {:.0} calls/s p50 {:.3} ms p99 {:.3} ms | added p50 {:.3} ms p99 {:.3} ms",
            per_s(&d), pct(&d.lat, 0.5), pct(&d.lat, 0.99),
            per_s(&p), pct(&p.lat, 0.5), pct(&p.lat, 0.99),
            pct(&p.lat, 0.5) - pct(&d.lat, 0.5), pct(&p.lat, 0.99) - pct(&d.lat, 0.99)
        );
        println!(
            "through the proxy       : {} answered of {}, {} lost, {} answered to the wrong session, wall {:.2} s",
            p.lat.len(), calls, p.lost, p.wrong, p.wall.as_secs_f64()
        );
        println!(
            "proxy memory (RSS)      : {} KiB with 1 session, {} KiB with {} (+{:.1} KiB/session), {} KiB after the load, {} KiB with {} more idle sessions (+{:.1} KiB/session)",
            rss_before, rss_sessions, sessions + 1,
            (rss_sessions as f64 - rss_before as f64) / sessions as f64,
            rss_after, rss_idle, idle,
            (rss_idle as f64 - rss_after as f64) / idle.max(1) as f64
        );
        let audit_ok = through
            .iter()
            .all(|(l, _)| audited.get(l).copied() == p.per_label.get(l).copied());
        inside.sort_by(f64::total_cmp);
        let pct = |q: f64| {
            inside
                .get(((inside.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        println!(
            "inside the proxy (audit): p50 {:.3} ms p99 {:.3} ms over {} calls (gate + downstream call)",
            pct(0.5),
            pct(0.99),
            inside.len()
        );
        println!("audit                   : each session's calls under its own session id: {audit_ok}; records of unknown sessions: {audit_wrong}");
        assert_eq!(p.lost, 0, "calls lost");
        assert_eq!(p.wrong, 0, "answers to the wrong session");
        assert_eq!(p.lat.len(), calls / sessions * sessions, "every call answered");
        assert!(audit_ok, "audit records per session");
        assert_eq!(audit_wrong, 0, "audit records under a session that made no call");
        drop(idle_clients);
        let _ = proxy.start_kill();
    });
}
