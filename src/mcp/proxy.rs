//! The proxy itself: an MCP server toward the client whose tools are the
//! proxy's own tools plus the tools the session lists ([`super::session`])
//! under their client-safe names ([`super::names`]).
//!
//! The request paths live beside it: `tools/call` in [`super::call`], the
//! search and call-through tools in [`super::discovery`].

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::{ArcSwap, ArcSwapOption};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, Implementation, InitializeRequestParams, InitializeResult, JsonObject,
    ListToolsResult, MetaObject, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use rustc_hash::FxHashSet;
use serde_json::{Map, json};
use tokio::sync::{Notify, mpsc, watch};

use crate::eval::Activation;
use crate::parse::discovery::DefinitionChange;
use crate::plan::Plan;

use super::audit::{AuditRecord, AuditSink, Outcome};
use super::catalog::{Catalog, Naming, ServerTools, build_catalog};
use super::config::ProxyConfig;
use super::context::{ContextUpdate, detect_project, root_dirs};
use super::downstream::{Downstream, Event, Timing, supervise};
use super::gate::CallGate;
use super::pins::{Observation, PinStore};
use super::session::SessionState;
use super::source::PlanSource;

/// The `_meta` key of the proxy's `initialize` result: `{"gate", "servers", "context_key"}`.
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
    source: Arc<dyn PlanSource>,
    pub(crate) gate: Arc<dyn CallGate>,
    audit: Arc<dyn AuditSink>,
    pub(crate) servers: Vec<Arc<Downstream>>,
    catalog: ArcSwapOption<Catalog>,
    /// Tool-definition pins.
    pub(crate) pins: PinStore,
    /// Catalog names of the tools withheld (changed definition, not confirmed).
    pub(crate) withheld: ArcSwap<FxHashSet<String>>,
    catalog_tx: watch::Sender<u64>,
    last_error: Mutex<Option<String>>,
    rebuild_lock: Mutex<()>,
    pub(crate) state: Mutex<SessionState>,
    pub(crate) dirty: Notify,
    client: OnceLock<Peer<RoleServer>>,
    started: Instant,
    ready: watch::Sender<bool>,
    shutdown: watch::Sender<bool>,
    pub(crate) session_id: String,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// The MCP proxy. Clone it freely (it is a handle); [`Proxy::start`] it inside
/// a tokio runtime, then serve it on a transport (see [`serve_stdio`](super::serve_stdio)).
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
        let servers = config
            .servers
            .iter()
            .enumerate()
            .map(|(i, s)| Arc::new(Downstream::new(s.clone(), i)))
            .collect();
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let inner = Arc::new(Inner {
            config,
            source,
            gate,
            audit,
            servers,
            catalog: ArcSwapOption::empty(),
            pins,
            withheld: ArcSwap::from_pointee(FxHashSet::default()),
            catalog_tx: watch::Sender::new(0),
            last_error: Mutex::new(None),
            rebuild_lock: Mutex::new(()),
            state: Mutex::new(SessionState::default()),
            dirty: Notify::new(),
            client: OnceLock::new(),
            started: Instant::now(),
            ready: watch::Sender::new(false),
            shutdown: watch::Sender::new(false),
            session_id: format!("{:x}-{:x}", std::process::id(), nanos & 0xffff_ffff),
            tasks: Mutex::new(Vec::new()),
        });
        inner.rebuild();
        Proxy { inner }
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
            )));
        }
        drop(tx);
        tasks.push(tokio::spawn(control(inner.clone(), rx)));
        tasks.push(tokio::spawn(notifier(inner.clone())));
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
        self.inner.shutdown.send_replace(true);
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

    /// The proxy session's id (as written to the audit).
    pub fn session_id(&self) -> &str {
        &self.inner.session_id
    }
}

async fn control(inner: Arc<Inner>, mut events: mpsc::UnboundedReceiver<Event>) {
    let mut pending: BTreeSet<usize> = (0..inner.servers.len()).collect();
    if pending.is_empty() {
        inner.ready.send_replace(true);
    }
    let mut inputs = inner.source.subscribe();
    loop {
        tokio::select! {
            ev = events.recv() => match ev {
                Some(Event::Listed(_)) => inner.rebuild(),
                Some(Event::FirstAttemptDone(i)) => {
                    pending.remove(&i);
                    if pending.is_empty() {
                        inner.ready.send_replace(true);
                    }
                }
                Some(Event::Down(_)) => {}
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

async fn notifier(inner: Arc<Inner>) {
    loop {
        // wake for a change, or when a found tool expires by time
        match inner.next_expiry() {
            Some(d) => {
                let _ = tokio::time::timeout(d, inner.dirty.notified()).await;
            }
            None => inner.dirty.notified().await,
        }
        tokio::time::sleep(inner.config.debounce).await;
        if let Some(peer) = inner.changed_since_listed() {
            tracing::debug!("active set changed: notifications/tools/list_changed");
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::warn!("cannot send tools/list_changed: {e}");
            }
        }
    }
}

impl Inner {
    pub(crate) fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn rebuild(&self) {
        let _g = lock(&self.rebuild_lock);
        let inputs = self.source.current();
        let servers: Vec<ServerTools> = self.servers.iter().map(|s| s.tools()).collect();
        let t0 = Instant::now();
        match build_catalog(&inputs, &servers, &self.naming()) {
            Ok(c) => {
                tracing::info!(
                    tools = c.plan.tools.len(),
                    micros = t0.elapsed().as_micros() as u64,
                    "catalog compiled"
                );
                // only listed servers' tools are observed (a catalog always is)
                self.observe_definitions(&c);
                self.catalog.store(Some(Arc::new(c)));
                *lock(&self.last_error) = None;
                self.dirty.notify_one();
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
            }
        }
        self.catalog_tx.send_modify(|v| *v += 1);
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
            let obs = self.pins.observe(name, &c.hashes[i], desc);
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
                session: self.session_id.clone(),
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
        self.withheld.store(Arc::new(set));
    }

    /// Whether plan tool `i` of `c` is withheld.
    pub(crate) fn is_withheld(&self, c: &Catalog, i: usize) -> bool {
        let w = self.withheld.load();
        !w.is_empty() && w.contains(c.catalog_name(i))
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
        let now = self.now();
        let ctx = st.effective_context(now);
        plan.evaluate_with_previous(&ctx, &st.session.usage, now, st.last.as_ref())
    }

    /// The plan tools the session lists (see [`super::session`]), in catalog
    /// order: re-evaluates, expires found tools, leaves withheld tools out.
    pub(crate) fn listed(&self, st: &mut SessionState, cat: &Catalog) -> Vec<usize> {
        st.expire(&cat.discovery, self.now());
        let act = self.evaluate(st, &cat.plan);
        let mut on: Vec<bool> = act.tools.iter().map(|t| t.active).collect();
        st.last = Some(act);
        for f in &st.found {
            if let Some(i) = cat.plan.tool_index(&f.tool) {
                on[i] = true;
            }
        }
        (0..on.len())
            .filter(|&i| on[i] && !self.is_withheld(cat, i))
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

    /// Seconds until the next found tool expires by time.
    fn next_expiry(&self) -> Option<Duration> {
        if !self.config.list_changed {
            return None; // nothing to announce; expiry applies at the next listing
        }
        let cat = self.catalog.load_full()?;
        let st = lock(&self.state);
        st.next_expiry(&cat.discovery, self.now())
            .map(|s| Duration::from_secs_f64(s + 0.001))
    }

    /// Re-evaluates; returns the client's peer when a list_changed is due:
    /// the listing differs from the one last announced (a client that
    /// re-listed in between gets a redundant notification, never a missed one).
    fn changed_since_listed(&self) -> Option<Peer<RoleServer>> {
        if !self.config.list_changed {
            return None;
        }
        let cat = self.catalog.load_full()?;
        let mut st = lock(&self.state);
        let tools = self.listed(&mut st, &cat);
        let set = self.listed_names(&cat, &tools);
        let differs = st.announced.as_ref().is_some_and(|a| *a != set);
        if differs {
            st.announced = Some(set);
            return self.client.get().cloned();
        }
        None
    }

    /// Applies `_meta["toolgate/context"]` of the request, if any.
    pub(crate) fn apply_meta(&self, metas: &[&JsonObject], plan: &Plan) -> Result<(), McpError> {
        for m in metas {
            let update =
                ContextUpdate::from_meta(m).map_err(|e| McpError::invalid_params(e, None))?;
            if let Some(u) = update {
                let mut st = lock(&self.state);
                let changed = u
                    .apply(&mut st.client, plan)
                    .map_err(|e| McpError::invalid_params(e, None))?;
                if changed {
                    tracing::debug!(context = ?st.client, "context updated from _meta");
                    self.dirty.notify_one();
                }
            }
        }
        Ok(())
    }

    // Roots are deprecated by SEP-2577 (protocol 2026-07-28); the proxy
    // speaks the versions with `initialize`, where they are current.
    #[allow(deprecated)]
    async fn refresh_roots(self: Arc<Self>, peer: Peer<RoleServer>) {
        let r = peer.list_roots().await;
        let roots = match r {
            Ok(r) => r.roots,
            Err(e) => {
                tracing::warn!("roots/list failed: {e}");
                return;
            }
        };
        let dirs = root_dirs(roots.iter().map(|r| r.uri.as_str()));
        let d2 = dirs.clone();
        let info = tokio::task::spawn_blocking(move || detect_project(&d2))
            .await
            .unwrap_or_default();
        tracing::info!(
            roots = dirs.len(),
            language = ?info.language,
            project_type = ?info.project_type,
            evidence = ?info.evidence,
            "roots read"
        );
        let mut st = lock(&self.state);
        st.roots = dirs;
        if st.project != info {
            st.project = info;
            self.dirty.notify_one();
        }
    }

    pub(crate) fn record(&self, rec: AuditRecord) {
        self.audit.record(&rec);
    }
}

impl ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        let caps = if self.inner.config.list_changed {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        let mut info = InitializeResult::new(caps);
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info.server_info = Implementation::new("toolgate", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(format!(
            "toolgate proxies the MCP servers {} and lists only the tools that its policy activates for this session.{} \
             Hosts may send context in a request's _meta under \"{}\" (e.g. {{\"message\": \"...\", \"conversation_stage\": \"debugging\"}}); \
             the tool list changes with it and with your calls.",
            self.inner
                .servers
                .iter()
                .map(|s| s.spec.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            super::discovery::instructions(&self.inner.config),
            super::context::CONTEXT_META_KEY
        ));
        let mut meta = Map::new();
        meta.insert(
            PROXY_META_KEY.into(),
            json!({
                "gate": self.inner.gate.name(),
                "servers": self.inner.servers.iter().map(|s| s.spec.name.clone()).collect::<Vec<_>>(),
                "context_key": super::context::CONTEXT_META_KEY,
                "session": self.inner.session_id,
            }),
        );
        info.meta = Some(MetaObject(meta));
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        // Versions with an `initialize` handshake, where the proxy may send
        // requests (roots/list, elicitation) to the client.
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let _ = self.inner.client.set(context.peer.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer.clone();
        let _ = self.inner.client.set(peer.clone());
        let roots = peer
            .peer_info()
            .is_some_and(|i| i.capabilities.roots.is_some());
        if roots {
            tokio::spawn(self.inner.clone().refresh_roots(peer));
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        tokio::spawn(self.inner.clone().refresh_roots(context.peer.clone()));
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        if ContextUpdate::from_meta(&context.meta.0.0)
            .map_err(|e| McpError::invalid_params(e, None))?
            .is_some()
        {
            self.inner.wait_ready().await;
            let cat = self.inner.catalog_for(None, LIST_CONSISTENCY_WAIT).await?;
            self.inner.apply_meta(&metas(&context, None), &cat.plan)?;
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let inner = &self.inner;
        inner.wait_ready().await;
        let cat = inner.catalog_for(None, LIST_CONSISTENCY_WAIT).await?;
        let pmeta = request
            .as_ref()
            .and_then(|r| r.meta.as_ref())
            .map(|m| &m.0.0);
        inner.apply_meta(&metas(&context, pmeta), &cat.plan)?;
        let mut st = lock(&inner.state);
        let listed = inner.listed(&mut st, &cat);
        if st.announced.is_none() {
            st.announced = Some(inner.listed_names(&cat, &listed));
        }
        drop(st);
        let mut tools = inner.meta_tools();
        tools.extend(listed.iter().map(|&i| cat.tools[i].clone()));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // rmcp falls back to a custom request when a standard method's params
        // do not parse: that is an invalid-params error, not an unknown method.
        const STANDARD: &[&str] = &[
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/read",
            "resources/templates/list",
            "resources/subscribe",
            "resources/unsubscribe",
            "prompts/list",
            "prompts/get",
            "completion/complete",
            "logging/setLevel",
        ];
        if STANDARD.contains(&request.method.as_str()) {
            Err(McpError::invalid_params(
                format!("invalid params for `{}`", request.method),
                None,
            ))
        } else {
            Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {}", request.method),
                None,
            ))
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.inner.wait_ready().await;
        let cfg = &self.inner.config;
        let name = request.name.as_ref();
        if cfg.find_tools.enabled && name == cfg.find_tools.name {
            return self.find_tools(request, &context).await;
        }
        if cfg.call_tool.enabled && name == cfg.call_tool.name {
            return self.call_through(request, &context).await;
        }
        self.call_and_audit(request, &context, None).await
    }
}
