//! The proxy's shared part: the downstream servers, the compiled catalog,
//! the definition pins, the audit sink and the call limits, which every
//! client session shares. Each client connection (the one stdio client, or
//! each MCP session over Streamable HTTP) is a [`ProxySession`]
//! ([`super::handler`]) made by [`Proxy::session`]: an MCP server whose
//! tools are the proxy's own tools plus the tools *that* session lists
//! ([`super::session`]) under their client-safe names ([`super::names`]).
//!
//! The request paths live beside it: `tools/call` in [`super::call`], the
//! search and call-through tools in [`super::discovery`], resources,
//! prompts, completion and logging in [`super::surfaces`].

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::{ArcSwap, ArcSwapOption};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::service::{RequestContext, RoleServer};
use rustc_hash::FxHashSet;
use tokio::sync::{Semaphore, mpsc, watch};

use crate::eval::Activation;
use crate::parse::discovery::DefinitionChange;
use crate::plan::Plan;

use super::audit::{AuditRecord, AuditSink, Outcome};
use super::catalog::{Catalog, CatalogCompiler, Naming, ServerTools};
use super::config::ProxyConfig;
use super::downstream::{Downstream, Event, Timing, supervise};
use super::gate::CallGate;
use super::handler::ProxySession;
use super::metrics::Metrics;
use super::pins::{Observation, PinStore};
use super::session::SessionState;
use super::shadow::Shadow;
use super::source::PlanSource;
use super::stateless::Stateless;
use super::surfaces::Surfaces;

/// The `_meta` key of the proxy's `initialize` result: `{"gate", "servers", "context_key", "session"}`.
pub const PROXY_META_KEY: &str = "toolgate/proxy";

/// Default per-call time limit when neither the tool's tags nor the policy's
/// `[gate] timeout_seconds` set one (seed 002's default).
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 30.0;

/// How long `tools/list` waits for a server's new listing to be compiled in.
pub(crate) const LIST_CONSISTENCY_WAIT: Duration = Duration::from_secs(2);
/// How long `tools/call` waits for it.
pub(crate) const CALL_CONSISTENCY_WAIT: Duration = Duration::from_secs(10);

pub(crate) struct Inner {
    pub(crate) config: ProxyConfig,
    /// The modern era's signing key and redeemed confirmations.
    pub(crate) stateless: Stateless,
    /// Prometheus metrics (`GET /metrics`).
    pub(crate) metrics: Arc<Metrics>,
    /// The shadow policy, if any ([`super::shadow`]).
    pub(crate) shadow: std::sync::OnceLock<Arc<Shadow>>,
    /// The span exporter, when traces are on ([`super::trace`]).
    pub(crate) telemetry: std::sync::OnceLock<super::trace::Telemetry>,
    source: Arc<dyn PlanSource>,
    pub(crate) gate: Arc<dyn CallGate>,
    audit: Arc<dyn AuditSink>,
    pub(crate) servers: Vec<Arc<Downstream>>,
    /// Resources, prompts and subscriptions ([`super::surfaces`]).
    pub(crate) surfaces: Arc<Surfaces>,
    pub(crate) catalog: ArcSwapOption<Catalog>,
    /// Tool-definition pins.
    pub(crate) pins: PinStore,
    /// Catalog names of the tools withheld (changed definition, not confirmed).
    pub(crate) withheld: ArcSwap<FxHashSet<String>>,
    /// Bumped on every catalog rebuild and every change of the withheld
    /// set: each session's notifier re-evaluates its list.
    pub(crate) catalog_tx: watch::Sender<u64>,
    last_error: Mutex<Option<String>>,
    /// Held for the whole of a rebuild (rebuilds are serialised); keeps
    /// each server's compiled tools for the next rebuild.
    rebuild_lock: Mutex<CatalogCompiler>,
    ready: watch::Sender<bool>,
    pub(crate) shutdown: watch::Sender<bool>,
    /// Set as soon as the proxy starts to stop (a signal: [`Proxy::drain`],
    /// then [`Proxy::shutdown`]): a server that exits from then on is not
    /// reported down nor restarted (a SIGTERM sent to the whole process
    /// group reaches the servers too).
    pub(crate) stopping: watch::Sender<bool>,
    /// The proxy instance's id; sessions are `{instance_id}-{n}`.
    pub(crate) instance_id: String,
    pub(crate) session_seq: AtomicU64,
    /// Sessions open now.
    pub(crate) sessions: AtomicUsize,
    /// Global limit on concurrent `tools/call`s (`max_concurrent_calls`).
    pub(crate) call_slots: Arc<Semaphore>,
    /// `tools/call`s holding a slot now.
    pub(crate) in_flight: watch::Sender<usize>,
    /// Set by [`Proxy::drain`]: new calls are refused.
    pub(crate) draining: AtomicBool,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// The MCP proxy. Clone it freely (it is a handle); [`Proxy::start`] it inside
/// a tokio runtime, then serve its sessions ([`Proxy::session`]) on a
/// transport (see [`serve_stdio`](super::serve_stdio) and `serve_http`).
#[derive(Clone)]
pub struct Proxy {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A tool error result with one text block.
pub(crate) fn tool_error(text: impl Into<String>) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(text.into())]))
}

/// Unix time now, seconds.
pub(crate) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The request's `_meta` maps: the one rmcp lifted into the context and the
/// one left in the params (both are looked at).
pub(crate) fn metas<'a>(
    ctx: &'a RequestContext<RoleServer>,
    params: Option<&'a JsonObject>,
) -> Vec<&'a JsonObject> {
    let mut v = vec![&ctx.meta.0.0];
    if let Some(p) = params {
        v.push(p);
    }
    v
}

impl Proxy {
    /// Builds a proxy with pins kept in memory. Nothing runs until [`Proxy::start`].
    pub fn new(
        config: ProxyConfig,
        source: Arc<dyn PlanSource>,
        gate: Arc<dyn CallGate>,
        audit: Arc<dyn AuditSink>,
    ) -> Self {
        Self::with_pins(config, source, gate, audit, PinStore::in_memory())
    }

    /// Builds a proxy with the given tool-definition pins.
    pub fn with_pins(
        config: ProxyConfig,
        source: Arc<dyn PlanSource>,
        gate: Arc<dyn CallGate>,
        audit: Arc<dyn AuditSink>,
        pins: PinStore,
    ) -> Self {
        let surfaces = Arc::new(Surfaces::default());
        let servers = config
            .servers
            .iter()
            .enumerate()
            .map(|(i, s)| Arc::new(Downstream::new(s.clone(), i, surfaces.clone())))
            .collect();
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let max_calls = config.max_concurrent_calls.max(1);
        let stateless = Stateless::from_config(config.state_key_env.as_deref(), config.confirm_ttl)
            .or_else(|e| {
                tracing::error!("{e}; modern-era handles are signed with a random key");
                Stateless::from_config(None, config.confirm_ttl)
            })
            .expect("a random state key");
        let inner = Arc::new(Inner {
            stateless,
            metrics: Arc::new(Metrics::new()),
            shadow: std::sync::OnceLock::new(),
            telemetry: std::sync::OnceLock::new(),
            config,
            source,
            gate,
            audit,
            servers,
            surfaces,
            catalog: ArcSwapOption::empty(),
            pins,
            withheld: ArcSwap::from_pointee(FxHashSet::default()),
            catalog_tx: watch::Sender::new(0),
            last_error: Mutex::new(None),
            rebuild_lock: Mutex::new(CatalogCompiler::default()),
            ready: watch::Sender::new(false),
            shutdown: watch::Sender::new(false),
            stopping: watch::Sender::new(false),
            instance_id: format!("{:x}-{:x}", std::process::id(), nanos & 0xffff_ffff),
            session_seq: AtomicU64::new(0),
            sessions: AtomicUsize::new(0),
            call_slots: Arc::new(Semaphore::new(max_calls)),
            in_flight: watch::Sender::new(0),
            draining: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
        });
        inner.rebuild();
        Proxy { inner }
    }

    /// Makes every decision also under `shadow`, never enforced
    /// ([`super::shadow`]). Call before [`Proxy::start`]; a second shadow is
    /// refused.
    pub fn set_shadow(&self, shadow: Arc<Shadow>) -> Result<(), String> {
        let inner = &self.inner;
        let servers: Vec<ServerTools> = inner.servers.iter().map(|s| s.tools()).collect();
        shadow.rebuild(&servers, &inner.naming());
        inner
            .shadow
            .set(shadow)
            .map_err(|_| "the proxy has a shadow policy already".to_string())
    }

    /// Exports a span tree of every request through `telemetry`
    /// ([`super::trace`]). Call before [`Proxy::start`]; a second one is
    /// refused.
    pub fn set_telemetry(&self, telemetry: super::trace::Telemetry) -> Result<(), String> {
        self.inner
            .telemetry
            .set(telemetry)
            .map_err(|_| "the proxy exports traces already".to_string())
    }

    /// Starts the downstream servers, the catalog builder, the change
    /// notifier and the startup timer. Call once, inside a tokio runtime.
    pub fn start(&self) {
        let inner = &self.inner;
        let (tx, rx) = mpsc::unbounded_channel();
        let timing = Timing {
            start_timeout: inner.config.startup_timeout,
            restart_initial: inner.config.restart_initial,
            restart_max: inner.config.restart_max,
        };
        let mut tasks = lock(&inner.tasks);
        for s in &inner.servers {
            tasks.push(tokio::spawn(supervise(
                s.clone(),
                tx.clone(),
                timing,
                inner.shutdown.subscribe(),
                inner.stopping.subscribe(),
            )));
        }
        drop(tx);
        tasks.push(tokio::spawn(control(inner.clone(), rx)));
        let i2 = inner.clone();
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(i2.config.startup_timeout).await;
            if !*i2.ready.borrow() {
                tracing::warn!(
                    "not every server answered tools/list in time; serving what is known"
                );
            }
            i2.ready.send_replace(true);
        }));
    }

    /// Stops the servers (their processes are killed) and the proxy's tasks.
    pub async fn shutdown(&self) {
        self.inner.stopping.send_replace(true);
        self.inner.shutdown.send_replace(true);
        if let Some(t) = self.inner.telemetry.get() {
            t.shutdown().await;
        }
        let tasks: Vec<_> = std::mem::take(&mut *lock(&self.inner.tasks));
        for t in tasks {
            t.abort();
            let _ = tokio::time::timeout(Duration::from_secs(2), t).await;
        }
    }

    /// The current catalog (`None` until one compiled).
    pub fn catalog(&self) -> Option<Arc<Catalog>> {
        self.inner.catalog.load_full()
    }

    /// The proxy instance's id: the audit's `session` for records that
    /// belong to no session (a changed definition seen at a listing);
    /// sessions are `{id}-{n}`.
    pub fn session_id(&self) -> &str {
        &self.inner.instance_id
    }

    /// A new client session (its own context, active set, found tools,
    /// announced list and audit session id) over the shared servers and
    /// catalog, for a proxy that has this one client (stdio): a changed
    /// definition its user confirms becomes the proxy's pin. Serve it on a
    /// transport (`rmcp::ServiceExt::serve`); call inside a tokio runtime,
    /// after [`Proxy::start`]. Its list-change notifier stops when the
    /// session is dropped.
    pub fn session(&self) -> ProxySession {
        self.new_session(true)
    }

    /// A new session for a proxy with many clients (HTTP): as
    /// [`Proxy::session`], except that a changed definition its user
    /// confirms is trusted in this session only; the pin, and every other
    /// session, keep the definition first seen.
    pub fn shared_session(&self) -> ProxySession {
        self.new_session(false)
    }

    fn new_session(&self, shared_pins: bool) -> ProxySession {
        let n = self.inner.session_seq.fetch_add(1, Ordering::Relaxed) + 1;
        ProxySession::new(
            self.inner.clone(),
            format!("{}-{n}", self.inner.instance_id),
            shared_pins,
        )
    }

    /// The proxy's Prometheus metrics ([`super::metrics`]).
    pub fn metrics(&self) -> Arc<Metrics> {
        self.inner.metrics.clone()
    }

    /// Sessions open now.
    pub fn open_sessions(&self) -> usize {
        self.inner.sessions.load(Ordering::Relaxed)
    }

    /// `tools/call`s in progress now (those holding a call slot).
    pub fn calls_in_flight(&self) -> usize {
        *self.inner.in_flight.borrow()
    }

    /// Stops taking new `tools/call`s (they get a tool error saying the
    /// proxy is shutting down) and waits until the calls in progress have
    /// answered, at most `grace`. Returns the number still running when it
    /// gave up (0: all finished).
    /// From then on, a downstream server that exits is neither reported
    /// down nor restarted: the proxy is stopping.
    pub async fn drain(&self, grace: Duration) -> usize {
        self.inner.draining.store(true, Ordering::SeqCst);
        self.inner.stopping.send_replace(true);
        let mut rx = self.inner.in_flight.subscribe();
        let _ = tokio::time::timeout(grace, rx.wait_for(|n| *n == 0)).await;
        self.calls_in_flight()
    }
}

async fn control(inner: Arc<Inner>, mut events: mpsc::UnboundedReceiver<Event>) {
    let mut pending: BTreeSet<usize> = (0..inner.servers.len()).collect();
    if pending.is_empty() {
        inner.ready.send_replace(true);
    }
    let mut inputs = inner.source.subscribe();
    let mut shadow = inner.shadow.get().map(|s| s.subscribe());
    loop {
        tokio::select! {
            Some(()) = async {
                match shadow.as_mut() {
                    Some(rx) => rx.changed().await.ok(),
                    None => std::future::pending().await,
                }
            } => inner.rebuild_shadow(),
            ev = events.recv() => match ev {
                Some(Event::Listed(_)) => inner.rebuild(),
                Some(Event::FirstAttemptDone(i)) => {
                    pending.remove(&i);
                    if pending.is_empty() {
                        inner.ready.send_replace(true);
                    }
                }
                Some(Event::Down(i)) => {
                    if let Some(s) = inner.servers.get(i) {
                        inner.metrics.restart(&s.spec.name);
                    }
                }
                None => {
                    // every supervisor ended: only policy changes remain
                    if inputs.changed().await.is_err() { return }
                    inner.rebuild();
                }
            },
            r = inputs.changed() => {
                if r.is_err() { return }
                tracing::info!("policy or tags changed: recompiling the catalog");
                inner.rebuild();
            }
        }
    }
}

impl Inner {
    fn rebuild(&self) {
        let mut compiler = lock(&self.rebuild_lock);
        let inputs = self.source.current();
        let servers: Vec<ServerTools> = self.servers.iter().map(|s| s.tools()).collect();
        let t0 = Instant::now();
        match compiler.build(&inputs, &servers, &self.naming()) {
            Ok(c) => {
                let stats = compiler.stats();
                tracing::info!(
                    tools = c.plan.tools.len(),
                    servers_compiled = stats.units_compiled,
                    servers_reused = stats.units_reused,
                    micros = t0.elapsed().as_micros() as u64,
                    "catalog compiled"
                );
                // only listed servers' tools are observed (a catalog always is)
                self.observe_definitions(&c);
                self.catalog.store(Some(Arc::new(c)));
                *lock(&self.last_error) = None;
                self.metrics.compiled(true);
            }
            Err(e) => {
                let msg = e
                    .diagnostics
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("; ");
                tracing::error!("the catalog does not compile; keeping the previous one: {msg}");
                *lock(&self.last_error) = Some(msg);
                self.metrics.compiled(false);
            }
        }
        self.catalog_tx.send_modify(|v| *v += 1);
        self.rebuild_shadow();
    }

    /// Recompiles the shadow catalog (if there is a shadow policy) with the
    /// servers' tools now.
    fn rebuild_shadow(&self) {
        if let Some(s) = self.shadow.get() {
            let servers: Vec<ServerTools> = self.servers.iter().map(|s| s.tools()).collect();
            s.rebuild(&servers, &self.naming());
        }
    }

    /// The names of the proxy's own tools that are enabled.
    pub(crate) fn meta_names(&self) -> Vec<String> {
        [&self.config.find_tools, &self.config.call_tool]
            .into_iter()
            .filter(|m| m.enabled)
            .map(|m| m.name.clone())
            .collect()
    }

    fn naming(&self) -> Naming {
        Naming {
            format: self.config.name_format.clone(),
            // reserved whether enabled or not, so that names never move
            reserved: vec![
                self.config.find_tools.name.clone(),
                self.config.call_tool.name.clone(),
            ],
        }
    }

    /// Checks every tool's definition against its pin; audits and applies
    /// the policy's action to changes; recomputes the withheld set.
    fn observe_definitions(&self, c: &Catalog) {
        let action = c.discovery.on_definition_change;
        for i in 0..c.tools.len() {
            let name = c.catalog_name(i);
            let desc = c.tools[i].description.as_deref().unwrap_or_default();
            let obs = self.pins.observe(name, &c.hashes[i], desc, || {
                super::pins::exact_definition_hash(
                    desc,
                    &serde_json::Value::Object((*c.tools[i].input_schema).clone()),
                )
            });
            let Observation::Changed { pinned } = obs else {
                continue;
            };
            let what = match action {
                DefinitionChange::Ask => "withheld until the user confirms it",
                DefinitionChange::Deny => "never exposed while it differs",
                DefinitionChange::Allow => "accepted (on_definition_change = \"allow\")",
            };
            let detail = format!(
                "the definition (description or inputSchema) of `{name}` changed since it was pinned (sha256 {} -> {}); {what}",
                &pinned[..12],
                &c.hashes[i][..12]
            );
            tracing::warn!("{detail}");
            if action == DefinitionChange::Allow {
                self.pins.accept(name, &c.hashes[i], desc);
            }
            self.record(AuditRecord {
                time: unix_now(),
                session: self.instance_id.clone(),
                tool: name.to_string(),
                name: Some(c.exposed(i).to_string()),
                server: Some(self.servers[c.routes[i].server].spec.name.clone()),
                via: None,
                decision: action.label(),
                confirmed: None,
                latency_ms: 0.0,
                outcome: Outcome::DefinitionChanged,
                attempts: 0,
                detail: Some(detail),
                trace_id: None,
                flow: Default::default(),
            });
        }
        self.refresh_withheld(c);
    }

    /// Recomputes the withheld set of catalog `c`.
    pub(crate) fn refresh_withheld(&self, c: &Catalog) {
        let set: FxHashSet<String> = (0..c.tools.len())
            .filter(|&i| !self.pins.trusted(c.catalog_name(i), &c.hashes[i]))
            .map(|i| c.catalog_name(i).to_string())
            .collect();
        if !set.is_empty() {
            tracing::info!(tools = ?set, "withheld: changed definitions");
        }
        let changed = **self.withheld.load() != set;
        self.metrics.withheld(set.len());
        self.withheld.store(Arc::new(set));
        if changed {
            // every session's list may move
            self.catalog_tx.send_modify(|v| *v += 1);
        }
    }

    /// Whether plan tool `i` of `c` is withheld from session `st`: its
    /// definition differs from its pin, and the session has not confirmed
    /// this very definition.
    pub(crate) fn is_withheld(&self, st: &SessionState, c: &Catalog, i: usize) -> bool {
        let w = self.withheld.load();
        !w.is_empty()
            && w.contains(c.catalog_name(i))
            && st.accepted.get(c.catalog_name(i)) != Some(&c.hashes[i])
    }

    fn consistent(&self, c: &Catalog, server: Option<usize>) -> bool {
        let ok = |i: usize| {
            let s = &self.servers[i];
            !s.relisting() && c.server_versions.get(i) == Some(&s.listing_version())
        };
        match server {
            Some(i) => ok(i),
            None => (0..self.servers.len()).all(ok),
        }
    }

    /// The catalog, once it includes the latest listing of `server` (or of all
    /// servers), waiting at most `wait`; after that, whatever there is.
    pub(crate) async fn catalog_for(
        &self,
        server: Option<usize>,
        wait: Duration,
    ) -> Result<Arc<Catalog>, McpError> {
        let deadline = Instant::now() + wait;
        let mut rx = self.catalog_tx.subscribe();
        loop {
            if let Some(c) = self.catalog.load_full()
                && self.consistent(&c, server)
            {
                return Ok(c);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero()
                || !matches!(tokio::time::timeout(left, rx.changed()).await, Ok(Ok(())))
            {
                break;
            }
        }
        self.catalog.load_full().ok_or_else(|| {
            let why = lock(&self.last_error).clone().unwrap_or_default();
            McpError::internal_error(format!("toolgate has no compiled catalog: {why}"), None)
        })
    }

    pub(crate) async fn wait_ready(&self) {
        let mut rx = self.ready.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }

    pub(crate) fn evaluate(&self, st: &mut SessionState, plan: &Arc<Plan>) -> Activation {
        let now = st.now();
        let ctx = st.effective_context(now);
        plan.evaluate_with_previous(&ctx, &st.session.usage, now, st.last.as_ref())
    }

    /// The plan tools the session lists (see [`super::session`]), in catalog
    /// order: re-evaluates, expires found tools, leaves withheld tools out.
    pub(crate) fn listed(&self, st: &mut SessionState, cat: &Catalog) -> Vec<usize> {
        st.expire(&cat.discovery, st.now());
        let act = self.evaluate(st, &cat.plan);
        let mut on: Vec<bool> = act.tools.iter().map(|t| t.active).collect();
        st.last = Some(act);
        for f in &st.found {
            if let Some(i) = cat.plan.tool_index(&f.tool) {
                on[i] = true;
            }
        }
        (0..on.len())
            .filter(|&i| on[i] && !self.is_withheld(st, cat, i))
            .collect()
    }

    /// The proxy's own tools, as listed.
    pub(crate) fn meta_tools(&self) -> Vec<Tool> {
        super::discovery::meta_tools(&self.config)
    }

    /// The exposed names a listing of `tools` shows, meta-tools included.
    pub(crate) fn listed_names(&self, cat: &Catalog, tools: &[usize]) -> BTreeSet<String> {
        self.meta_names()
            .into_iter()
            .chain(tools.iter().map(|&i| cat.exposed(i).to_string()))
            .collect()
    }

    /// The span exporter, when traces are on.
    pub(crate) fn tel(&self) -> Option<&super::trace::Telemetry> {
        self.telemetry.get()
    }

    pub(crate) fn record(&self, mut rec: AuditRecord) {
        if rec.trace_id.is_none() {
            rec.trace_id = super::trace::current_trace_id();
        }
        self.metrics.observe(&rec);
        self.audit.record(&rec);
    }
}
