//! Serving the proxy to many clients over Streamable HTTP (feature
//! `mcp-http`, `toolgate mcp-proxy --listen ADDR`).
//!
//! The transport is rmcp's own ([`StreamableHttpService`], a tower service
//! in its stateful mode: one MCP session per `initialize`, named by the
//! `Mcp-Session-Id` header), served by axum on one path (default `/mcp`).
//! Each MCP session gets its own [`ProxySession`](super::handler::ProxySession)
//! from [`Proxy::shared_session`]: its own context, active set, found tools,
//! confirmations of changed definitions and audit session id, over the
//! servers, catalog and pins that all sessions share.
//!
//! In front of rmcp's service, in this order:
//!
//! 1. **`Origin`**: a request whose `Origin` header is not in
//!    [`HttpConfig::allowed_origins`](super::config::HttpConfig::allowed_origins)
//!    (default: loopback origins only) gets `403 Forbidden`, as the MCP
//!    specification asks of servers (basic/transports, "Security Warning":
//!    validate `Origin` against DNS rebinding). Requests without `Origin`
//!    (non-browser clients) pass. rmcp then checks `Host` against
//!    [`HttpConfig::allowed_hosts`](super::config::HttpConfig::allowed_hosts)
//!    and `Origin` again (403).
//! 2. **Bearer token** (optional, [`HttpConfig::bearer_token_env`](super::config::HttpConfig::bearer_token_env)):
//!    without `Authorization: Bearer <token>` a request gets `401
//!    Unauthorized` with `WWW-Authenticate: Bearer`. The token is compared
//!    in constant time and never logged.
//! 3. **Draining**: after the shutdown signal, a request that opens a new
//!    session (no `Mcp-Session-Id`) gets `503 Service Unavailable`.
//!
//! **Graceful shutdown** ([`serve_http`]): on the signal, new sessions are
//! refused, new `tools/call`s get a tool error, and the calls in flight —
//! and every POST whose response is still being written — get
//! [`HttpConfig::shutdown_grace`](super::config::HttpConfig::shutdown_grace)
//! to finish; then the sessions are closed, the server stops, and the
//! downstream servers are stopped.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt as _;
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::proxy::Proxy;

/// At shutdown, the pause between the last answer written and the closing
/// of the sessions' streams: a client reads its last answers on their POST
/// streams before it sees its GET stream end (several clients treat that as
/// the end of the session).
const CLOSE_LINGER: Duration = Duration::from_millis(250);

/// Installs rustls's `ring` crypto provider as the process default, once
/// (rmcp's HTTP client is built on reqwest with rustls and no provider of
/// its own). Harmless when one is installed already.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Resolves when the process gets SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// What the front middleware needs.
struct Front {
    token: Option<String>,
    origins: Vec<String>,
    draining: AtomicBool,
    /// POSTs whose response is not written out yet.
    posts: watch::Sender<usize>,
}

/// Counts one POST until its response body is dropped (written out or abandoned).
struct PostGuard(Arc<Front>);

impl Drop for PostGuard {
    fn drop(&mut self) {
        self.0.posts.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// A response body that holds a [`PostGuard`].
struct Counted {
    inner: Body,
    _guard: PostGuard,
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Constant-time comparison of two tokens (length leaks; content does not).
fn same_token(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The bearer token of an `Authorization` header value, if it is one.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Whether `origin` (an `Origin` header value) matches one of `allowed`:
/// entries are `scheme://host`, `scheme://host:port`, `scheme://host:*` or
/// `null` (the browser's opaque origin); an entry without a port matches
/// any port, as rmcp's matcher does today. Hosts compare case-insensitively.
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    fn split(o: &str) -> Option<(String, String, Option<String>)> {
        let (scheme, rest) = o.split_once("://")?;
        if rest.is_empty() || rest.contains('/') {
            return None;
        }
        let (host, port) = if let Some(r) = rest.strip_prefix('[') {
            let (h, after) = r.split_once(']')?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':')?.to_string()),
            };
            (format!("[{h}]"), port)
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p.to_string())),
                None => (rest.to_string(), None),
            }
        };
        Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), port))
    }
    let origin = origin.trim();
    if origin == "null" {
        return allowed.iter().any(|a| a == "null");
    }
    let Some((scheme, host, port)) = split(origin) else {
        return false;
    };
    let default_port = match scheme.as_str() {
        "https" => "443",
        "http" => "80",
        _ => "",
    };
    let port = port.unwrap_or_else(|| default_port.to_string());
    allowed.iter().any(|a| {
        let Some((s, h, p)) = split(a) else {
            return false;
        };
        s == scheme
            && h == host
            && match p.as_deref() {
                None | Some("*") => true,
                Some(p) => p == port,
            }
    })
}

/// A refusal made before the request's body is read. It carries
/// `Connection: close`: the unread body leaves the connection unusable, and
/// without the header a client could send its next request on it while the
/// server closes it ("server disconnected without sending a response").
fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut r = (status, text).into_response();
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

async fn front(State(front): State<Arc<Front>>, req: Request, next: Next) -> Response {
    if let Some(o) = req.headers().get(header::ORIGIN) {
        let ok = o.to_str().is_ok_and(|o| origin_allowed(o, &front.origins));
        if !ok {
            tracing::warn!(
                origin = ?o,
                "rejected a request with an Origin that is not allowed (403)"
            );
            return plain(
                StatusCode::FORBIDDEN,
                "Forbidden: Origin header is not allowed",
            );
        }
    }
    if let Some(token) = &front.token {
        let ok = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer)
            .is_some_and(|got| same_token(got.as_bytes(), token.as_bytes()));
        if !ok {
            tracing::warn!("rejected a request without the bearer token (401)");
            let mut r = plain(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send Authorization: Bearer <token>",
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"toolgate\""),
            );
            return r;
        }
    }
    if front.draining.load(Ordering::SeqCst) && !req.headers().contains_key("mcp-session-id") {
        let mut r = plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: toolgate is shutting down",
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return r;
    }
    if req.method() != axum::http::Method::POST {
        return next.run(req).await;
    }
    front.posts.send_modify(|n| *n += 1);
    let guard = PostGuard(front.clone());
    let resp = next.run(req).await;
    resp.map(|inner| {
        Body::new(Counted {
            inner,
            _guard: guard,
        })
    })
}

/// The path of the Prometheus metrics ([`super::metrics`]) on the
/// `--listen` address (behind the same `Origin` and bearer-token checks as
/// the MCP endpoint) and on a `--metrics` address.
pub const METRICS_PATH: &str = "/metrics";

fn metrics_response(m: &super::metrics::Metrics) -> Response {
    let mut r = (StatusCode::OK, m.encode()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(super::metrics::CONTENT_TYPE),
    );
    r
}

/// Serves only `GET /metrics` of `metrics` on `listener` (`mcp-proxy
/// --metrics ADDR`, for a proxy serving its client on stdio), until the
/// process ends. Errors: the server fails.
pub async fn serve_metrics(
    metrics: std::sync::Arc<super::metrics::Metrics>,
    listener: tokio::net::TcpListener,
) -> Result<(), std::io::Error> {
    let app = axum::Router::new().route(
        METRICS_PATH,
        axum::routing::get(move || {
            let m = metrics.clone();
            async move { metrics_response(&m) }
        }),
    );
    axum::serve(listener, app).await
}

/// Serves `proxy` over Streamable HTTP on `listener` until `shutdown`
/// resolves (e.g. [`shutdown_signal`]), then shuts down gracefully (see
/// the module docs). Starts the proxy ([`Proxy::start`]). Errors: the
/// bearer token's environment variable is not set, or the server fails.
pub async fn serve_http(
    proxy: Proxy,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let cfg = proxy.inner.config.http.clone();
    let token = match &cfg.bearer_token_env {
        Some(var) => match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => Some(t.trim().to_string()),
            _ => {
                return Err(format!(
                    "[http] bearer_token_env: the environment variable `{var}` is not set (or empty)"
                )
                .into());
            }
        },
        None => None,
    };
    if cfg.allowed_hosts.is_empty() {
        // rmcp reads an empty list as "any host" (the Host check off).
        return Err(
            "[http] allowed_hosts is empty, which would accept any Host header: \
                    list the hosts clients use (the default is localhost, 127.0.0.1, ::1)"
                .into(),
        );
    }
    proxy.start();
    let ct = CancellationToken::new();
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(cfg.session_idle_timeout);
    let server_cfg = StreamableHttpServerConfig::default()
        .with_allowed_hosts(cfg.allowed_hosts.clone())
        .with_allowed_origins(cfg.allowed_origins.clone())
        .enforce_origin_validation()
        .with_cancellation_token(ct.child_token());
    let p2 = proxy.clone();
    let service = StreamableHttpService::new(
        move || Ok(p2.shared_session()),
        Arc::new(manager),
        server_cfg,
    );
    let front_state = Arc::new(Front {
        token,
        origins: cfg.allowed_origins.clone(),
        draining: AtomicBool::new(false),
        posts: watch::Sender::new(0),
    });
    let metrics = proxy.metrics();
    let app = axum::Router::new()
        .route_service(&cfg.path, service)
        .route(
            METRICS_PATH,
            axum::routing::get(move || {
                let m = metrics.clone();
                async move { metrics_response(&m) }
            }),
        )
        .layer(axum::middleware::from_fn_with_state(
            front_state.clone(),
            front,
        ));
    let stop = ct.clone();
    // TCP_NODELAY on every accepted stream: a response goes out as several
    // small writes (headers, then SSE events), and with Nagle's algorithm each
    // one after the first waits for the peer's delayed ACK (~40 ms on Linux).
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on an accepted connection: {e}");
        }
    });
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        stop.cancelled().await;
    });
    let mut server = tokio::spawn(async move { server.await });
    tokio::select! {
        _ = shutdown => {}
        r = &mut server => {
            proxy.shutdown().await;
            return match r {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.into()),
                Err(e) => Err(e.into()),
            };
        }
    }
    // Graceful shutdown: refuse new sessions and calls, let the running
    // ones finish within the grace period, then close everything.
    front_state.draining.store(true, Ordering::SeqCst);
    tracing::info!(
        calls = proxy.calls_in_flight(),
        sessions = proxy.open_sessions(),
        grace_s = cfg.shutdown_grace.as_secs_f64(),
        "shutting down: finishing the calls in flight"
    );
    let t0 = tokio::time::Instant::now();
    let left = proxy.drain(cfg.shutdown_grace).await;
    let rest = cfg.shutdown_grace.saturating_sub(t0.elapsed());
    let mut posts = front_state.posts.subscribe();
    let _ = tokio::time::timeout(rest, posts.wait_for(|n| *n == 0)).await;
    if left > 0 {
        tracing::warn!("{left} calls still running after the grace period; they are cancelled");
    } else {
        // The last answers are written; clients read them on their POST
        // streams before they see their GET streams close.
        tokio::time::sleep(CLOSE_LINGER.min(cfg.shutdown_grace)).await;
    }
    ct.cancel();
    if tokio::time::timeout(Duration::from_secs(5), &mut server)
        .await
        .is_err()
    {
        tracing::warn!("connections still open 5 s after shutdown; closing them");
        server.abort();
    }
    proxy.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn origins_match_scheme_host_and_port() {
        let allowed = list(&[
            "http://localhost:*",
            "https://app.example:8443",
            "http://[::1]:*",
            "null",
        ]);
        assert!(origin_allowed("http://localhost:6274", &allowed));
        assert!(origin_allowed("http://LOCALHOST", &allowed));
        assert!(origin_allowed("http://[::1]:3000", &allowed));
        assert!(origin_allowed("https://app.example:8443", &allowed));
        assert!(origin_allowed("null", &allowed));
        assert!(
            !origin_allowed("https://app.example", &allowed),
            "443 is not 8443"
        );
        assert!(
            !origin_allowed("https://localhost:6274", &allowed),
            "scheme differs"
        );
        assert!(!origin_allowed("http://evil.example", &allowed));
        assert!(!origin_allowed(
            "http://localhost.evil.example:80",
            &allowed
        ));
        assert!(!origin_allowed("garbage", &allowed));
        assert!(!origin_allowed("http://localhost:1/path", &allowed));
        assert!(!origin_allowed("null", &list(&["http://localhost:*"])));
    }

    #[test]
    fn bearer_tokens_compare_whole() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert!(same_token(b"abc", b"abc"));
        assert!(!same_token(b"abc", b"abd"));
        assert!(!same_token(b"abc", b"abcd"));
        assert!(!same_token(b"", b"a"));
    }
}
