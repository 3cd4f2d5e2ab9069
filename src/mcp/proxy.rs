//! The proxy itself: an MCP server toward the client whose tools are the
//! active tools of the downstream servers.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwapOption;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ElicitRequestParams, ElicitationAction, ElicitationSchema, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, MetaObject,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{
    ElicitationMode, NotificationContext, Peer, RequestContext, RoleServer, ServiceError,
};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc, watch};

use crate::context::{Session, SessionContext};
use crate::eval::Activation;
use crate::plan::Plan;

use super::audit::{AuditRecord, AuditSink, Outcome};
use super::catalog::{Catalog, ServerTools, build_catalog};
use super::config::ProxyConfig;
use super::context::{ContextUpdate, ProjectInfo, detect_project, root_dirs};
use super::downstream::{Downstream, Event, Status, Timing, supervise};
use super::gate::{CallGate, Decision};
use super::source::PlanSource;

/// The `_meta` key of the proxy's `initialize` result: `{"gate", "servers", "context_key"}`.
pub const PROXY_META_KEY: &str = "toolgate/proxy";

/// Default per-call time limit when neither the tool's tags nor the policy's
/// `[gate] timeout_seconds` set one (seed 002's default).
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 30.0;

/// How long `tools/list` waits for a server's new listing to be compiled in.
const LIST_CONSISTENCY_WAIT: Duration = Duration::from_secs(2);
/// How long `tools/call` waits for it.
const CALL_CONSISTENCY_WAIT: Duration = Duration::from_secs(10);

/// The session as the proxy keeps it.
#[derive(Default)]
struct SessionState {
    /// Context given by the client in `_meta`.
    client: SessionContext,
    /// What the roots tell.
    project: ProjectInfo,
    /// The roots' directories.
    roots: Vec<PathBuf>,
    /// Usage and recent calls.
    session: Session,
    /// The last evaluation (for hysteresis).
    last: Option<Activation>,
    /// The active set as of the last `notifications/tools/list_changed` (or
    /// of the first `tools/list` answer): a change from it is announced.
    announced: Option<BTreeSet<String>>,
}

impl SessionState {
    fn effective_context(&self, now: f64) -> SessionContext {
        let mut c = self.client.clone();
        if c.active_language.is_none() {
            c.active_language = self.project.language.clone();
        }
        if c.project_type.is_none() {
            c.project_type = self.project.project_type.clone();
        }
        c.recent_tool_calls = self.session.context.recent_tool_calls.clone();
        c.session_duration_seconds = now;
        c
    }
}

struct Inner {
    config: ProxyConfig,
    source: Arc<dyn PlanSource>,
    gate: Arc<dyn CallGate>,
    audit: Arc<dyn AuditSink>,
    servers: Vec<Arc<Downstream>>,
    catalog: ArcSwapOption<Catalog>,
    catalog_tx: watch::Sender<u64>,
    last_error: Mutex<Option<String>>,
    rebuild_lock: Mutex<()>,
    state: Mutex<SessionState>,
    dirty: Notify,
    client: OnceLock<Peer<RoleServer>>,
    started: Instant,
    ready: watch::Sender<bool>,
    shutdown: watch::Sender<bool>,
    session_id: String,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// The MCP proxy. Clone it freely (it is a handle); [`Proxy::start`] it inside
/// a tokio runtime, then serve it on a transport (see [`serve_stdio`](super::serve_stdio)).
#[derive(Clone)]
pub struct Proxy {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A tool error result with one text block.
fn tool_error(text: impl Into<String>) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(text.into())]))
}

/// The request's `_meta` maps: the one rmcp lifted into the context and the
/// one left in the params (both are looked at).
fn metas<'a>(
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
    /// Builds a proxy. Nothing runs until [`Proxy::start`].
    pub fn new(
        config: ProxyConfig,
        source: Arc<dyn PlanSource>,
        gate: Arc<dyn CallGate>,
        audit: Arc<dyn AuditSink>,
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
        inner.dirty.notified().await;
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
    fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn rebuild(&self) {
        let _g = lock(&self.rebuild_lock);
        let inputs = self.source.current();
        let servers: Vec<ServerTools> = self.servers.iter().map(|s| s.tools()).collect();
        let t0 = Instant::now();
        match build_catalog(&inputs, &servers) {
            Ok(c) => {
                tracing::info!(
                    tools = c.plan.tools.len(),
                    micros = t0.elapsed().as_micros() as u64,
                    "catalog compiled"
                );
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
    async fn catalog_for(
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

    async fn wait_ready(&self) {
        let mut rx = self.ready.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }

    fn evaluate(&self, st: &mut SessionState, plan: &Arc<Plan>) -> Activation {
        let now = self.now();
        let ctx = st.effective_context(now);
        plan.evaluate_with_previous(&ctx, &st.session.usage, now, st.last.as_ref())
    }

    /// Re-evaluates; returns the client's peer when a list_changed is due:
    /// the active set differs from the one last announced (a client that
    /// re-listed in between gets a redundant notification, never a missed one).
    fn changed_since_listed(&self) -> Option<Peer<RoleServer>> {
        if !self.config.list_changed {
            return None;
        }
        let cat = self.catalog.load_full()?;
        let mut st = lock(&self.state);
        let act = self.evaluate(&mut st, &cat.plan);
        let set = act.active_set();
        st.last = Some(act);
        let differs = st.announced.as_ref().is_some_and(|a| *a != set);
        if differs {
            st.announced = Some(set);
            return self.client.get().cloned();
        }
        None
    }

    /// Applies `_meta["toolgate/context"]` of the request, if any.
    fn apply_meta(&self, metas: &[&JsonObject], plan: &Plan) -> Result<(), McpError> {
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

    fn record(&self, rec: AuditRecord) {
        self.audit.record(&rec);
    }
}

/// The policy's per-call limits for `tool`: (timeout, retries), from
/// `[gate.execution]` with the tool tags' `timeout_seconds` / `max_retries`
/// overrides (the call gate's `ExecSettings`).
fn call_limits(plan: &Plan, tool: usize) -> (Duration, u32) {
    let t = &plan.tools[tool].gate;
    match plan.gate.as_ref() {
        Some(g) => {
            let s = crate::gate::exec::ExecSettings::for_tool(&g.config.execution, Some(t));
            (s.timeout, s.max_retries)
        }
        None => {
            let secs = t
                .timeout_seconds
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
            (Duration::from_secs_f64(secs), t.max_retries.unwrap_or(0))
        }
    }
}

/// Whether the policy lets a registered but inactive tool be called
/// (`[gate] allow_inactive_calls`, default true as in seed 000).
pub fn allow_inactive_calls(plan: &Plan) -> bool {
    plan.gate
        .as_ref()
        .map(|g| g.config.allow_inactive_calls)
        .unwrap_or(true)
}

struct CallEnd {
    response: Result<CallToolResponse, McpError>,
    outcome: Outcome,
    attempts: u32,
    detail: Option<String>,
}

impl CallEnd {
    fn refused(outcome: Outcome, text: String) -> Self {
        CallEnd {
            response: Ok(tool_error(text.clone())),
            outcome,
            attempts: 0,
            detail: Some(text),
        }
    }
}

impl Proxy {
    async fn confirm(
        &self,
        peer: &Peer<RoleServer>,
        tool: &str,
        args: &Value,
        reason: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<bool, String> {
        let pretty = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
        let message = format!(
            "toolgate: the agent wants to call `{tool}`.\n\nArguments:\n{pretty}\n\nConfirmation is required: {reason}"
        );
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "confirm": {
                    "type": "boolean",
                    "title": format!("Run {tool}?"),
                    "description": reason,
                    "default": false
                }
            },
            "required": ["confirm"]
        }))
        .map_err(|e| format!("internal: confirm form: {e}"))?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        };
        let r = tokio::select! {
            r = peer.create_elicitation(params) => r,
            _ = context.ct.cancelled() => return Err("the request was cancelled".into()),
        };
        match r {
            Ok(res) => Ok(res.action == ElicitationAction::Accept
                && res
                    .content
                    .as_ref()
                    .and_then(|c| c.get("confirm"))
                    .and_then(Value::as_bool)
                    == Some(true)),
            Err(e) => Err(format!("the confirmation request failed: {e}")),
        }
    }

    async fn forward(
        &self,
        server: &Arc<Downstream>,
        tool: &str,
        bare: &str,
        args: Value,
        limits: (Duration, u32),
        context: &RequestContext<RoleServer>,
    ) -> CallEnd {
        let (timeout, retries) = limits;
        let args: JsonObject = match args {
            Value::Object(o) => o,
            Value::Null => Map::new(),
            other => {
                return CallEnd {
                    response: Err(McpError::invalid_params(
                        format!("tool arguments must be an object, found {other}"),
                        None,
                    )),
                    outcome: Outcome::RpcError,
                    attempts: 0,
                    detail: Some("arguments not an object".into()),
                };
            }
        };
        let mut attempts = 0u32;
        loop {
            let peer = match server.status() {
                Status::Up { peer, .. } => peer,
                _ => {
                    let msg = format!("cannot call `{tool}`: {}", server.unavailable_message());
                    return CallEnd {
                        response: Ok(tool_error(msg.clone())),
                        outcome: Outcome::Unavailable,
                        attempts,
                        detail: Some(msg),
                    };
                }
            };
            attempts += 1;
            let params = CallToolRequestParams::new(bare.to_string()).with_arguments(args.clone());
            let r = tokio::select! {
                r = tokio::time::timeout(timeout, peer.call_tool_once(params)) => r,
                _ = context.ct.cancelled() => {
                    return CallEnd {
                        response: Err(McpError::internal_error("the request was cancelled", None)),
                        outcome: Outcome::Cancelled,
                        attempts,
                        detail: None,
                    };
                }
            };
            let (retryable_msg, outcome) = match r {
                Ok(Ok(resp)) => {
                    let outcome = match &resp {
                        CallToolResponse::Complete(c) if c.is_error == Some(true) => {
                            Outcome::ToolError
                        }
                        _ => Outcome::Ok,
                    };
                    return CallEnd {
                        response: Ok(resp),
                        outcome,
                        attempts,
                        detail: None,
                    };
                }
                Ok(Err(ServiceError::McpError(e))) => {
                    let detail = Some(e.message.to_string());
                    return CallEnd {
                        response: Err(e),
                        outcome: Outcome::RpcError,
                        attempts,
                        detail,
                    };
                }
                Ok(Err(e)) => (
                    format!(
                        "server `{}` failed during the call of `{tool}`: {e}",
                        server.spec.name
                    ),
                    Outcome::Unavailable,
                ),
                Err(_) => (
                    format!(
                        "`{tool}` gave no answer within {:.1} s",
                        timeout.as_secs_f64()
                    ),
                    Outcome::Timeout,
                ),
            };
            if attempts > retries {
                let msg = if attempts > 1 {
                    format!("{retryable_msg} (after {attempts} attempts)")
                } else {
                    retryable_msg
                };
                return CallEnd {
                    response: Ok(tool_error(msg.clone())),
                    outcome,
                    attempts,
                    detail: Some(msg),
                };
            }
            tracing::info!(tool, attempt = attempts, "retrying: {retryable_msg}");
            tokio::time::sleep(Duration::from_millis(200) * attempts).await;
        }
    }

    async fn handle_call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> (CallEnd, Option<String>, &'static str, Option<bool>) {
        let inner = &self.inner;
        let tool = request.name.to_string();
        let server = tool
            .split_once('.')
            .and_then(|(s, _)| inner.servers.iter().find(|d| d.spec.name == s))
            .cloned();
        let server_name = server.as_ref().map(|s| s.spec.name.clone());
        let cat = match inner
            .catalog_for(server.as_ref().map(|s| s.index), CALL_CONSISTENCY_WAIT)
            .await
        {
            Ok(c) => c,
            Err(e) => {
                return (
                    CallEnd {
                        response: Err(e),
                        outcome: Outcome::Unavailable,
                        attempts: 0,
                        detail: Some("no catalog".into()),
                    },
                    server_name,
                    "none",
                    None,
                );
            }
        };
        if let Err(e) = inner.apply_meta(
            &metas(context, request.meta.as_ref().map(|m| &m.0.0)),
            &cat.plan,
        ) {
            let detail = Some(e.message.to_string());
            return (
                CallEnd {
                    response: Err(e),
                    outcome: Outcome::RpcError,
                    attempts: 0,
                    detail,
                },
                server_name,
                "none",
                None,
            );
        }
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let route = cat.route(&tool).map(|(i, r)| (i, r.clone()));
        // A server whose tools are not known (never listed, down): say so
        // rather than "unknown tool".
        if route.is_none()
            && let Some(s) = &server
            && !matches!(s.status(), Status::Up { .. })
        {
            let msg = format!("cannot call `{tool}`: {}", s.unavailable_message());
            return (
                CallEnd::refused(Outcome::Unavailable, msg),
                server_name,
                "none",
                None,
            );
        }
        let decision = inner.gate.check(&cat.plan, &tool, &args);
        let label = decision.label();
        let (args, confirmed) = match decision {
            Decision::Deny { message } => {
                return (
                    CallEnd::refused(Outcome::Denied, message),
                    server_name,
                    label,
                    None,
                );
            }
            Decision::Allow(a) => (a, None),
            Decision::Ask { reason } => {
                let peer = &context.peer;
                if !peer
                    .supported_elicitation_modes()
                    .contains(&ElicitationMode::Form)
                {
                    let msg = format!(
                        "`{tool}` needs the user's confirmation ({reason}), and this client cannot ask for it (no elicitation capability); the call was not made"
                    );
                    return (
                        CallEnd::refused(Outcome::ConfirmationRequired, msg),
                        server_name,
                        label,
                        None,
                    );
                }
                match self.confirm(peer, &tool, &args, &reason, context).await {
                    Ok(true) => (args, Some(true)),
                    Ok(false) => {
                        let msg = format!(
                            "the user declined the call of `{tool}` ({reason}); it was not made"
                        );
                        return (
                            CallEnd::refused(Outcome::Declined, msg),
                            server_name,
                            label,
                            Some(false),
                        );
                    }
                    Err(e) => {
                        let msg = format!(
                            "`{tool}` needs the user's confirmation ({reason}) and it could not be obtained: {e}; the call was not made"
                        );
                        return (
                            CallEnd::refused(Outcome::Declined, msg),
                            server_name,
                            label,
                            Some(false),
                        );
                    }
                }
            }
        };
        // A gate may allow a name that is not in the catalog; there is nowhere to send it.
        let Some((idx, route)) = route else {
            let msg = format!("unknown tool `{tool}`");
            return (
                CallEnd::refused(Outcome::Denied, msg),
                server_name,
                "deny",
                confirmed,
            );
        };
        if !allow_inactive_calls(&cat.plan) {
            let active = {
                let mut st = lock(&inner.state);
                let act = inner.evaluate(&mut st, &cat.plan);
                let a = act.tools[idx].active;
                st.last = Some(act);
                a
            };
            if !active {
                let msg = format!(
                    "`{tool}` is registered but not active in this session, and the policy forbids calling inactive tools ([gate] allow_inactive_calls = false)"
                );
                return (
                    CallEnd::refused(Outcome::Inactive, msg),
                    server_name,
                    "deny",
                    confirmed,
                );
            }
        }
        let ds = inner.servers[route.server].clone();
        let limits = call_limits(&cat.plan, idx);
        let end = self
            .forward(&ds, &tool, &route.name, args, limits, context)
            .await;
        if end.attempts > 0 {
            let mut st = lock(&inner.state);
            let now = inner.now();
            let window = cat.plan.recent_calls_window;
            st.session.record_call(&tool, now, window);
            drop(st);
            inner.dirty.notify_one();
        }
        (end, server_name, label, confirmed)
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
            "toolgate proxies the MCP servers {} and lists only the tools that its policy activates for this session. \
             Send context in a request's _meta under \"{}\" (e.g. {{\"message\": \"...\", \"conversation_stage\": \"debugging\"}}); \
             the tool list changes with it and with your calls.",
            self.inner
                .servers
                .iter()
                .map(|s| s.spec.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
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
        let act = inner.evaluate(&mut st, &cat.plan);
        let result = cat.list_result(&act);
        if st.announced.is_none() {
            st.announced = Some(act.active_set());
        }
        st.last = Some(act);
        Ok(result)
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
        let arrived = SystemTime::now();
        let t0 = Instant::now();
        self.inner.wait_ready().await;
        let tool = request.name.to_string();
        let (end, server, decision, confirmed) = self.handle_call(request, &context).await;
        self.inner.record(AuditRecord {
            time: arrived
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
            session: self.inner.session_id.clone(),
            tool,
            server,
            decision,
            confirmed,
            latency_ms: t0.elapsed().as_secs_f64() * 1e3,
            outcome: end.outcome,
            attempts: end.attempts,
            detail: end.detail,
        });
        end.response
    }
}
