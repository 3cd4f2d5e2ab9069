//! The MCP proxy (feature `mcp`): toolgate in front of real MCP servers.
//!
//! Toward its clients the proxy is an MCP server: on stdio (one client), or
//! over Streamable HTTP (feature `mcp-http`, [`serve_http`]: many clients,
//! one [`ProxySession`] each). Toward each downstream server it is an MCP
//! client over the stdio of a child process, or over Streamable HTTP to a
//! remote server (`[[server]] url = ...`).
//! It lists every server's tools, names them `server.tool`, merges them with
//! the tool tags into a [`Plan`](crate::plan::Plan) ([`catalog`]), and answers
//! `tools/list` with the active tools only. Context comes from `_meta`
//! (`toolgate/context`, see [`context`]), from the client's roots, and from
//! the calls it forwards. When the active set changes it sends
//! `notifications/tools/list_changed` (debounced). Every `tools/call` goes
//! through a [`CallGate`] (allow / ask through elicitation / deny) and is
//! written to an [`AuditSink`]. Resources, prompts, completion and logging
//! pass through ungated, routed to the server that serves them
//! (`surfaces`, see docs/mcp-proxy.md).
//!
//! Three seams let other parts plug in:
//!
//! | seam | trait | built-in |
//! | --- | --- | --- |
//! | call decisions | [`CallGate`] | [`TagGate`]: from the tool tags only |
//! | policy and tags | [`PlanSource`] | [`ReloadingPlanSource`]: the crate's [`Reloader`](crate::reload::Reloader) |
//! | audit | [`AuditSink`] | [`JsonlAudit`]: one JSON line per call |
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use toolgate::mcp::{ProxyConfig, ServerSpec, build_proxy, serve_stdio};
//! let mut config = ProxyConfig::default();
//! config.servers.push(ServerSpec::parse_cli("time=mcp-server-time --local-timezone UTC")?);
//! let proxy = build_proxy(config).map_err(|e| e.to_string())?;
//! serve_stdio(proxy).await?;
//! # Ok(()) }
//! ```

pub mod audit;
mod call;
pub mod catalog;
mod child;
mod child_stderr;
pub mod config;
pub mod context;
pub mod discovery;
mod downstream;
mod flow;
pub mod gate;
pub mod handler;
#[cfg(feature = "mcp-http")]
pub mod http;
pub mod metrics;
mod mrtr;
pub mod names;
pub mod pins;
mod probe;
mod progress;
pub mod proxy;
mod session;
pub mod shadow;
pub mod source;
pub mod stateless;
pub mod stdio;
mod surfaces;
pub mod trace;

use std::sync::Arc;

pub use audit::{AuditRecord, AuditSink, JsonlAudit, NoAudit, Outcome};
pub use call::allow_inactive_calls;
pub use catalog::{Catalog, CatalogCompiler, Naming, build_catalog};
pub use config::{HttpConfig, MetaToolConfig, ProxyConfig, ServerEra, ServerSpec};
pub use context::{CONTEXT_META_KEY, ContextUpdate};
pub use gate::{CallGate, Decision, PolicyGate, TagGate};
pub use handler::ProxySession;
#[cfg(feature = "mcp-http")]
pub use http::{serve_http, shutdown_signal};
pub use names::NameFormat;
pub use pins::PinStore;
pub use proxy::Proxy;
pub use source::{PlanInputs, PlanSource, ReloadingPlanSource, StaticPlanSource};

use rmcp::ServiceExt;

use crate::diag::LoadError;
use crate::load::{SELECTION_POLICY, Sources};
use crate::reload::ReloadOptions;

/// Why a proxy could not be built.
#[derive(Debug)]
pub enum BuildError {
    /// The policy or the tags do not load.
    Load(LoadError),
    /// Anything else (the audit file cannot be opened, ...).
    Other(String),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Load(e) => {
                for d in &e.diagnostics {
                    writeln!(f, "{d}")?;
                }
                Ok(())
            }
            BuildError::Other(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for BuildError {}

/// Builds a proxy from a configuration with the built-in seams: a
/// [`ReloadingPlanSource`] over the configured policy (default: the embedded
/// `policies/selection.toml`) and tags, watching the files (events, or
/// polling with `poll_interval`); the [`PolicyGate`]; a [`JsonlAudit`] when
/// an audit file is configured; and the tool-definition pins
/// ([`ProxyConfig::pins_path`]).
pub fn build_proxy(config: ProxyConfig) -> Result<Proxy, BuildError> {
    config.check().map_err(BuildError::Other)?;
    let mut options = ReloadOptions::new(Sources {
        policy: config.policy.clone(),
        tags: config.tags.clone(),
        tools: Vec::new(),
    });
    options.default_policy = SELECTION_POLICY;
    options.poll_interval = config.poll_interval;
    let source = Arc::new(ReloadingPlanSource::new(options).map_err(BuildError::Load)?);
    source.watch().map_err(BuildError::Other)?;
    let pins = match config.pins_path() {
        Some(p) => PinStore::open(&p).map_err(BuildError::Other)?,
        None => PinStore::in_memory(),
    };
    let audit: Arc<dyn AuditSink> = match &config.audit {
        Some(p) => Arc::new(JsonlAudit::open(p).map_err(|e| {
            BuildError::Other(format!("cannot open the audit file {}: {e}", p.display()))
        })?),
        None => Arc::new(NoAudit),
    };
    let shadow_files = config.shadow_policy.clone().map(|p| {
        (
            p,
            config.tags.clone(),
            config.poll_interval,
            config.shadow_log.clone(),
        )
    });
    let telemetry = trace::Telemetry::from_env().map_err(BuildError::Other)?;
    let proxy = Proxy::with_pins(config, source, Arc::new(PolicyGate), audit, pins);
    if let Some(t) = telemetry {
        proxy.set_telemetry(t).map_err(BuildError::Other)?;
    }
    if let Some((policy, tags, poll, log)) = shadow_files {
        let to_build = |e| match e {
            shadow::ShadowError::Load(l) => BuildError::Load(l),
            other => BuildError::Other(other.to_string()),
        };
        let s = shadow::Shadow::open(
            &policy,
            tags.as_deref(),
            poll,
            log.as_deref(),
            proxy.metrics(),
        )
        .map_err(to_build)?;
        s.watch().map_err(to_build)?;
        proxy.set_shadow(s).map_err(BuildError::Other)?;
    }
    Ok(proxy)
}

/// Starts `proxy` and serves it on the process's stdin/stdout until the
/// client disconnects (also before or during the `initialize` handshake: a
/// stdin closed first is a client gone, `Ok`); then stops the downstream
/// servers.
pub async fn serve_stdio(proxy: Proxy) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    serve_stdio_until(proxy, std::future::pending()).await
}

/// [`serve_stdio`], until the client disconnects or `stop` resolves (e.g.
/// [`shutdown_signal`]: SIGTERM or SIGINT), whichever comes first; either
/// way the downstream servers are stopped (none is reported down or
/// restarted) and the result is `Ok`.
pub async fn serve_stdio_until(
    proxy: Proxy,
    stop: impl Future<Output = ()> + Send,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    proxy.start();
    let serve = async {
        let running = proxy.session().serve(stdio::LineTransport::stdio()).await;
        stdio_result(running).await
    };
    let result = tokio::select! {
        r = serve => r,
        () = stop => {
            tracing::info!(target: "toolgate::mcp", "stopping on a signal: the downstream servers are stopped");
            Ok(())
        }
    };
    proxy.shutdown().await;
    result
}

/// The end of a stdio session: `Ok` when the client disconnected.
async fn stdio_result(
    running: Result<
        rmcp::service::RunningService<rmcp::RoleServer, ProxySession>,
        rmcp::service::ServerInitializeError,
    >,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    match running {
        Ok(r) => r.waiting().await.map(|_| ()).map_err(|e| e.into()),
        // A client that closes stdin before or during the handshake went
        // away (as one that disconnects later does): no error, exit 0.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(step)) => {
            tracing::info!(target: "toolgate::mcp", "the client closed stdin before the MCP handshake ended (waiting for the {step}); stopping");
            Ok(())
        }
        Err(e) => Err(format!("MCP initialization with the client failed: {e}").into()),
    }
}
