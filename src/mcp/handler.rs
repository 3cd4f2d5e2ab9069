//! One client session of the proxy: the MCP server a client talks to.
//!
//! A [`ProxySession`] is made by [`Proxy::session`](super::proxy::Proxy::session)
//! for each client connection: the one client on stdio, or each MCP session
//! of the Streamable HTTP endpoint ([`super::http`]). Sessions share the
//! downstream servers, the catalog, the pins, the gate and the audit sink;
//! each has its own context (`_meta`, roots, calls), active set, found tools,
//! announced list, list-change notifier, audit session id and limit on
//! concurrent calls. The request paths are in [`super::call`] (`tools/call`),
//! [`super::discovery`] (the proxy's own tools) and [`super::surfaces`]
//! (resources, prompts, completion, logging).
//!
//! Concurrent calls are bounded twice: per session
//! ([`ProxyConfig::max_concurrent_calls_per_session`](super::config::ProxyConfig::max_concurrent_calls_per_session))
//! and for the whole proxy ([`ProxyConfig::max_concurrent_calls`](super::config::ProxyConfig::max_concurrent_calls)).
//! A call waits for a slot at most
//! [`ProxyConfig::call_queue_timeout`](super::config::ProxyConfig::call_queue_timeout),
//! then gets a tool error (audited with the outcome `limited`); while the
//! proxy drains for shutdown, new calls get a tool error at once.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

#[allow(deprecated)] // logging/setLevel: see set_level
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    CustomRequest, CustomResult, DiscoverResult, GetPromptRequestParams, GetPromptResponse,
    Implementation, InitializeRequestParams, InitializeResult, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, MetaObject,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ResultType, ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};

use crate::plan::Plan;

use super::audit::{AuditRecord, Outcome};
use super::context::{ContextUpdate, detect_project, root_dirs};
use super::proxy::{
    Inner, LIST_CONSISTENCY_WAIT, PROXY_META_KEY, lock, metas, tool_error, unix_now,
};
use super::session::SessionState;
use super::stateless::{self, SessionHandle};
use super::trace::{Target, run_rpc};

/// What a session keeps besides the [`SessionState`]; shared with its
/// notifier task.
/// Whether the client declared the `roots` capability in `initialize`.
#[allow(deprecated)] // roots: deprecated by SEP-2577, current before it
pub(crate) fn declares_roots(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|i| i.capabilities.roots.is_some())
}

/// How long a call from a client that declares roots waits for the first
/// answer to `roots/list` before the gate judges it without them.
pub(crate) const ROOTS_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

pub(crate) struct SessionCore {
    /// The audit's `session` (`{instance}-{n}`).
    pub(crate) id: String,
    pub(crate) state: Mutex<SessionState>,
    /// Something that can move this session's list happened.
    pub(crate) dirty: Notify,
    pub(crate) client: OnceLock<Peer<RoleServer>>,
    /// This session's concurrent-call slots.
    calls: Arc<Semaphore>,
    /// Turns true when the session is dropped.
    closed: watch::Sender<bool>,
    /// Turns true once the client's roots were first asked for and the
    /// answer (or its failure) is in: a call from a client that declares
    /// roots waits for it (at most [`ROOTS_WAIT`]), so that the gate does
    /// not judge its paths against the proxy's working directory.
    pub(crate) roots_read: watch::Sender<bool>,
    /// Whether a confirmed changed definition becomes the proxy's pin (the
    /// session is the proxy's only client, on stdio) or is trusted in this
    /// session only (one of many, over HTTP).
    pub(crate) shared_pins: bool,
    /// A session made for one modern request from its session handle
    /// ([`super::stateless`]): no notifier, not counted, nothing to close.
    pub(crate) ephemeral: bool,
}

/// One client session: an rmcp [`ServerHandler`]. Dropping it (the client
/// disconnected, or its HTTP session ended) stops its notifier.
pub struct ProxySession {
    pub(crate) inner: Arc<Inner>,
    pub(crate) session: Arc<SessionCore>,
}

impl Drop for ProxySession {
    fn drop(&mut self) {
        self.session.closed.send_replace(true);
        if self.session.ephemeral {
            return;
        }
        self.inner.sessions.fetch_sub(1, Ordering::Relaxed);
        // leave the client list and the subscriptions (unsubscribing
        // downstream what no session subscribes to any more)
        let closing = self
            .inner
            .surfaces
            .clone()
            .session_closed(self.session.id.clone(), self.inner.servers.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(closing);
        }
        tracing::debug!(session = %self.session.id, "session closed");
    }
}

/// A `tools/call`'s place in the limits; released when dropped.
pub(crate) struct CallSlot {
    _session: OwnedSemaphorePermit,
    _global: OwnedSemaphorePermit,
    inner: Arc<Inner>,
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        self.inner
            .in_flight
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl ProxySession {
    pub(crate) fn new(inner: Arc<Inner>, id: String, shared_pins: bool) -> Self {
        let per_session = inner.config.max_concurrent_calls_per_session.max(1);
        let session = Arc::new(SessionCore {
            id,
            state: Mutex::new(SessionState::default()),
            dirty: Notify::new(),
            client: OnceLock::new(),
            calls: Arc::new(Semaphore::new(per_session)),
            closed: watch::Sender::new(false),
            roots_read: watch::Sender::new(false),
            shared_pins,
            ephemeral: false,
        });
        inner.sessions.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(session = %session.id, "session opened");
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(notifier(inner.clone(), session.clone()));
        }
        ProxySession { inner, session }
    }

    /// A session for one modern request, in the state `state` (restored
    /// from the request's session handle), audited as `id`; shares the
    /// proxy's pins only when `shared_pins` (stdio).
    pub(crate) fn ephemeral(
        inner: Arc<Inner>,
        id: String,
        state: SessionState,
        shared_pins: bool,
    ) -> Self {
        let per_session = inner.config.max_concurrent_calls_per_session.max(1);
        let session = Arc::new(SessionCore {
            id,
            state: Mutex::new(state),
            dirty: Notify::new(),
            client: OnceLock::new(),
            calls: Arc::new(Semaphore::new(per_session)),
            closed: watch::Sender::new(false),
            roots_read: watch::Sender::new(true),
            shared_pins,
            ephemeral: true,
        });
        ProxySession { inner, session }
    }

    /// The session's id, as written to the audit.
    pub fn id(&self) -> &str {
        &self.session.id
    }

    /// Writes an audit record.
    pub(crate) fn record(&self, rec: AuditRecord) {
        self.inner.record(rec);
    }

    /// Applies `_meta["toolgate/context"]` of the request, if any.
    pub(crate) fn apply_meta(&self, metas: &[&JsonObject], plan: &Plan) -> Result<(), McpError> {
        for m in metas {
            let update =
                ContextUpdate::from_meta(m).map_err(|e| McpError::invalid_params(e, None))?;
            if let Some(u) = update {
                let mut st = lock(&self.session.state);
                let changed = u
                    .apply(&mut st.client, plan)
                    .map_err(|e| McpError::invalid_params(e, None))?;
                if changed {
                    tracing::debug!(context = ?st.client, "context updated from _meta");
                    self.session.dirty.notify_one();
                }
            }
        }
        Ok(())
    }

    /// Takes a call slot (per session, then global), waiting at most the
    /// configured queue time; a tool error (audited) when none is free or
    /// the proxy is draining.
    async fn acquire_slot(&self, tool: &str) -> Result<CallSlot, CallToolResponse> {
        let inner = &self.inner;
        let refuse = |text: String| {
            self.record(AuditRecord {
                time: unix_now(),
                session: self.session.id.clone(),
                tool: tool.to_string(),
                name: None,
                server: None,
                via: None,
                decision: "none",
                confirmed: None,
                latency_ms: 0.0,
                outcome: Outcome::Limited,
                attempts: 0,
                detail: Some(text.clone()),
                trace_id: None,
                flow: Default::default(),
            });
            tool_error(text)
        };
        if inner.draining.load(Ordering::SeqCst) {
            return Err(refuse(format!(
                "toolgate is shutting down; `{tool}` was not called"
            )));
        }
        let cfg = &inner.config;
        let deadline = Instant::now() + cfg.call_queue_timeout;
        let take = |sem: Arc<Semaphore>| async move {
            let left = deadline.saturating_duration_since(Instant::now());
            match sem.clone().try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) if left.is_zero() => None,
                Err(_) => tokio::time::timeout(left, sem.acquire_owned())
                    .await
                    .ok()
                    .and_then(Result::ok),
            }
        };
        let Some(s) = take(self.session.calls.clone()).await else {
            return Err(refuse(format!(
                "too many calls in progress in this session (limit {}, max_concurrent_calls_per_session); `{tool}` was not called: wait for a result, then try again",
                cfg.max_concurrent_calls_per_session
            )));
        };
        let Some(g) = take(inner.call_slots.clone()).await else {
            return Err(refuse(format!(
                "toolgate is at its limit of {} calls in progress (max_concurrent_calls); `{tool}` was not called: try again shortly",
                cfg.max_concurrent_calls
            )));
        };
        inner.in_flight.send_modify(|n| *n += 1);
        Ok(CallSlot {
            _session: s,
            _global: g,
            inner: inner.clone(),
        })
    }

    // Roots are deprecated by SEP-2577 (protocol 2026-07-28); the proxy
    // speaks the versions with `initialize`, where they are current.
    #[allow(deprecated)]
    async fn refresh_roots(session: Arc<SessionCore>, peer: Peer<RoleServer>) {
        let r = peer.list_roots().await;
        let roots = match r {
            Ok(r) => r.roots,
            Err(e) => {
                tracing::warn!("roots/list failed: {e}");
                session.roots_read.send_replace(true);
                return;
            }
        };
        let dirs = root_dirs(roots.iter().map(|r| r.uri.as_str()));
        let d2 = dirs.clone();
        let info = tokio::task::spawn_blocking(move || detect_project(&d2))
            .await
            .unwrap_or_default();
        tracing::info!(
            session = %session.id,
            roots = dirs.len(),
            language = ?info.language,
            project_type = ?info.project_type,
            evidence = ?info.evidence,
            "roots read"
        );
        let mut st = lock(&session.state);
        st.roots = dirs;
        if st.project != info {
            st.project = info;
            session.dirty.notify_one();
        }
        drop(st);
        session.roots_read.send_replace(true);
    }
}

/// Seconds until the session's next found tool expires by time.
fn next_expiry(inner: &Inner, session: &SessionCore) -> Option<Duration> {
    if !inner.config.list_changed {
        return None; // nothing to announce; expiry applies at the next listing
    }
    let cat = inner.catalog.load_full()?;
    let st = lock(&session.state);
    st.next_expiry(&cat.discovery, st.now())
        .map(|s| Duration::from_secs_f64(s + 0.001))
}

/// Re-evaluates; returns the client's peer when a list_changed is due: the
/// listing differs from the one last announced (a client that re-listed in
/// between gets a redundant notification, never a missed one).
fn changed_since_listed(inner: &Inner, session: &SessionCore) -> Option<Peer<RoleServer>> {
    if !inner.config.list_changed {
        return None;
    }
    let cat = inner.catalog.load_full()?;
    let mut st = lock(&session.state);
    let tools = inner.listed(&mut st, &cat);
    let set = inner.listed_names(&cat, &tools);
    let differs = st.announced.as_ref().is_some_and(|a| *a != set);
    if differs {
        st.announced = Some(set);
        return session.client.get().cloned();
    }
    None
}

/// A session's list-change notifier: wakes on a change of the session
/// (context, call, search), of the catalog or the withheld set (every
/// session), or when a found tool expires; debounces; announces.
async fn notifier(inner: Arc<Inner>, session: Arc<SessionCore>) {
    let mut closed = session.closed.subscribe();
    let mut shutdown = inner.shutdown.subscribe();
    let mut catalog = inner.catalog_tx.subscribe();
    loop {
        let expiry = next_expiry(&inner, &session);
        let wake = async {
            match expiry {
                Some(d) => {
                    let _ = tokio::time::timeout(d, session.dirty.notified()).await;
                }
                None => session.dirty.notified().await,
            }
        };
        tokio::select! {
            _ = wake => {}
            r = catalog.changed() => if r.is_err() { return },
            _ = closed.wait_for(|c| *c) => return,
            _ = shutdown.wait_for(|c| *c) => return,
        }
        tokio::time::sleep(inner.config.debounce).await;
        if *closed.borrow() {
            return;
        }
        if let Some(peer) = changed_since_listed(&inner, &session) {
            tracing::debug!(session = %session.id, "active set changed: notifications/tools/list_changed");
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::warn!("cannot send tools/list_changed: {e}");
            }
        }
    }
}

impl ServerHandler for ProxySession {
    fn get_info(&self) -> ServerConfig {
        let inner = &self.inner;
        let mut caps = if inner.config.list_changed {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        super::surfaces::add_capabilities(inner, &mut caps);
        let mut info = InitializeResult::new(caps);
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info.server_info = Implementation::new("toolgate", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(format!(
            "toolgate proxies the MCP servers {} and lists only the tools that its policy activates for this session.{} \
             Hosts may send context in a request's _meta under \"{}\" (e.g. {{\"message\": \"...\", \"conversation_stage\": \"debugging\"}}); \
             the tool list changes with it and with your calls.",
            inner
                .servers
                .iter()
                .map(|s| s.spec.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            super::discovery::instructions(&inner.config),
            super::context::CONTEXT_META_KEY
        ));
        let mut meta = Map::new();
        meta.insert(
            PROXY_META_KEY.into(),
            json!({
                "gate": inner.gate.name(),
                "servers": inner.servers.iter().map(|s| s.spec.name.clone()).collect::<Vec<_>>(),
                "context_key": super::context::CONTEXT_META_KEY,
                "session": self.session.id,
            }),
        );
        info.meta = Some(MetaObject(meta));
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        // Both eras: the handshake versions, where the proxy sends requests
        // (roots/list, elicitation) to the client, and 2026-07-28, where it
        // asks by MRTR and keeps no session (super::stateless).
        Cow::Borrowed(super::stateless::supported_versions())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let cx = self.request_span(&context, request.meta.as_ref(), "initialize", Target::None);
        run_rpc(cx, async move {
            context.peer.set_peer_info(request.clone());
            let _ = self.session.client.set(context.peer.clone());
            // the capabilities declared depend on the servers' (resources, prompts)
            self.inner.wait_ready().await;
            self.negotiate_initialize(&request)
        })
        .await
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        // rmcp's own answer, in a span
        let cx = self.request_span(&context, None, "server/discover", Target::None);
        run_rpc(cx, async move {
            Ok(DiscoverResult::from_server_info(
                self.supported_protocol_versions().into_owned(),
                self.get_info(),
            ))
        })
        .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer.clone();
        let _ = self.session.client.set(peer.clone());
        // relayed list_changed notifications go to initialized sessions only
        self.inner
            .surfaces
            .register_client(&self.session.id, peer.clone());
        if declares_roots(&peer) {
            tokio::spawn(Self::refresh_roots(self.session.clone(), peer));
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        tokio::spawn(Self::refresh_roots(
            self.session.clone(),
            context.peer.clone(),
        ));
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        let cx = self.request_span(&context, None, "ping", Target::None);
        run_rpc(cx, async move {
            if ContextUpdate::from_meta(&context.meta.0.0)
                .map_err(|e| McpError::invalid_params(e, None))?
                .is_some()
            {
                self.inner.wait_ready().await;
                let cat = self.inner.catalog_for(None, LIST_CONSISTENCY_WAIT).await?;
                self.apply_meta(&metas(&context, None), &cat.plan)?;
            }
            Ok(())
        })
        .await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let pmeta = request.as_ref().and_then(|r| r.meta.as_ref());
        let cx = self.request_span(&context, pmeta, "tools/list", Target::None);
        super::trace::run_rpc(cx, async move {
            if stateless::is_modern(&context) {
                let pmeta = request
                    .as_ref()
                    .and_then(|r| r.meta.as_ref())
                    .map(|m| &m.0.0);
                let all = metas(&context, pmeta);
                let handle = stateless::handle_in(None, &all)
                    .map_err(|e| McpError::invalid_params(e, None))?;
                let personal = handle.is_some()
                    || all
                        .iter()
                        .any(|m| m.contains_key(super::context::CONTEXT_META_KEY));
                let (eph, _) = self.modern_session(handle.as_deref()).map_err(|e| {
                    McpError::invalid_params(stateless::refusal(&e, "session"), None)
                })?;
                let mut r = eph.list_tools_here(request, &context, true).await?;
                // SEP-2549: a list that depends on the request's own context or
                // handle is the caller's alone; a bare one is the same for all.
                // ttlMs 0 either way: a client that caches by method alone (MCP
                // Inspector does) must not answer a list with a handle from the
                // bare list before it.
                r.ttl_ms = Some(0);
                r.cache_scope = Some(if personal {
                    CacheScope::Private
                } else {
                    CacheScope::Public
                });
                return Ok(r);
            }
            self.list_tools_here(request, &context, false).await
        })
        .await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // Methods the 2026-07-28 revision removed (SEP-2575): unknown to a
        // modern request, whatever its params.
        const LEGACY_ONLY: &[&str] = &[
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
            "resources/unsubscribe",
        ];
        if stateless::is_modern(&context) && LEGACY_ONLY.contains(&request.method.as_str()) {
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "method not found: {} (removed in protocol version 2026-07-28)",
                    request.method
                ),
                None,
            ));
        }
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

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let pmeta = request.as_ref().and_then(|r| r.meta.as_ref());
        let cx = self.request_span(&context, pmeta, "resources/list", Target::None);
        run_rpc(cx, self.list_all_resources(request)).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let pmeta = request.as_ref().and_then(|r| r.meta.as_ref());
        let cx = self.request_span(&context, pmeta, "resources/templates/list", Target::None);
        run_rpc(cx, self.list_all_templates(request)).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = Target::Resource(&request.uri);
        let cx = self.request_span(&context, request.meta.as_ref(), "resources/read", uri);
        run_rpc(cx, async move {
            let mut r = self.read_routed(request).await?;
            // a legacy server's result has no resultType; a modern one must
            if stateless::is_modern(&context)
                && let ReadResourceResponse::Complete(c) = &mut r
            {
                c.result_type.get_or_insert(ResultType::COMPLETE);
            }
            Ok(r)
        })
        .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let uri = Target::Resource(&request.uri);
        let cx = self.request_span(&context, request.meta.as_ref(), "resources/subscribe", uri);
        run_rpc(cx, self.subscribe_routed(request.uri)).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let uri = Target::Resource(&request.uri);
        let cx = self.request_span(
            &context,
            request.meta.as_ref(),
            "resources/unsubscribe",
            uri,
        );
        run_rpc(cx, self.unsubscribe_routed(request.uri)).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let pmeta = request.as_ref().and_then(|r| r.meta.as_ref());
        let cx = self.request_span(&context, pmeta, "prompts/list", Target::None);
        run_rpc(cx, self.list_all_prompts(request)).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let prompt = Target::Prompt(&request.name);
        let cx = self.request_span(&context, request.meta.as_ref(), "prompts/get", prompt);
        run_rpc(cx, async move {
            let mut r = self.get_routed(request).await?;
            if stateless::is_modern(&context)
                && let GetPromptResponse::Complete(c) = &mut r
            {
                c.result_type.get_or_insert(ResultType::COMPLETE);
            }
            Ok(r)
        })
        .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let cx = self.request_span(
            &context,
            request.meta.as_ref(),
            "completion/complete",
            Target::None,
        );
        run_rpc(cx, async move {
            let mut r = self.complete_routed(request).await?;
            if stateless::is_modern(&context) {
                r.result_type.get_or_insert(ResultType::COMPLETE);
            }
            Ok(r)
        })
        .await
    }

    // Logging is deprecated by SEP-2577 (protocol 2026-07-28); current in
    // the versions the proxy speaks.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if stateless::is_modern(&context) {
            // removed by SEP-2575: the level travels in each request's _meta
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "method not found: logging/setLevel (removed in protocol version 2026-07-28; set io.modelcontextprotocol/logLevel in a request's _meta)",
                None,
            ));
        }
        let cx = self.request_span(
            &context,
            request.meta.as_ref(),
            "logging/setLevel",
            Target::None,
        );
        run_rpc(cx, async move {
            self.set_log_level(request);
            Ok(())
        })
        .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let cx = self.request_span(
            &context,
            request.meta.as_ref(),
            "tools/call",
            Target::Tool(&request.name),
        );
        super::trace::run_rpc(cx, async move {
            if stateless::is_modern(&context) {
                return self.modern_call_tool(request, context).await;
            }
            self.call_tool_here(request, context).await
        })
        .await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // tools/list_changed only (when enabled); resources and prompts are
        // relayed to legacy sessions (surfaces), not yet to listen streams.
        let mut f = SubscriptionFilter::default();
        if self.inner.config.list_changed && requested.tools_list_changed == Some(true) {
            f.tools_list_changed = Some(true);
        }
        Some(f)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        // The modern era's change notifications (subscriptions/listen): a
        // new catalog or withheld set may change every caller's list.
        let wants = context.accepted().tools_list_changed == Some(true);
        let mut catalog = self.inner.catalog_tx.subscribe();
        let mut shutdown = self.inner.shutdown.subscribe();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                _ = async { let _ = shutdown.wait_for(|c| *c).await; } => return Ok(()),
                r = catalog.changed() => {
                    if r.is_err() {
                        return Ok(());
                    }
                    tokio::time::sleep(self.inner.config.debounce).await;
                    let note = rmcp::model::ServerNotification::ToolListChangedNotification(
                        rmcp::model::ToolListChangedNotification::default(),
                    );
                    if wants && let Err(e) = context.sink().send(note).await {
                        tracing::debug!("listen stream closed: {e}");
                        return Ok(());
                    }
                }
            }
        }
    }
}

impl ProxySession {
    /// The session of one modern request: restored from its handle, or new
    /// (audit id `{instance}-m{n}`). Errors: the handle does not open.
    pub(crate) fn modern_session(
        &self,
        handle: Option<&str>,
    ) -> Result<(ProxySession, SessionHandle), stateless::StateError> {
        let now = unix_now();
        let base = match handle {
            Some(h) => self.inner.stateless.open_handle(h)?,
            None => {
                let n = self.inner.session_seq.fetch_add(1, Ordering::Relaxed) + 1;
                SessionHandle::new(format!("{}-m{n}", self.inner.instance_id), now)
            }
        };
        let st = base.to_state(now);
        let eph = ProxySession::ephemeral(
            self.inner.clone(),
            base.sid.clone(),
            st,
            self.session.shared_pins,
        );
        Ok((eph, base))
    }

    /// The handle of an ephemeral session after its request, sealed.
    pub(crate) fn sealed_handle(&self, base: &SessionHandle) -> String {
        let st = lock(&self.session.state);
        self.inner.stateless.seal_handle(&base.updated(&st))
    }

    /// A modern `tools/call`: the session comes from the request's handle
    /// (the `session` argument of the proxy's tools, or
    /// `_meta["toolgate/session"]`), the call goes down the one path, and
    /// the result carries the updated handle.
    async fn modern_call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let cfg = &self.inner.config;
        let own = (cfg.find_tools.enabled && request.name == cfg.find_tools.name)
            || (cfg.call_tool.enabled && request.name == cfg.call_tool.name);
        let pmeta = request.meta.as_ref().map(|m| &m.0.0);
        let all = metas(&context, pmeta);
        let handle = match stateless::handle_in(
            if own {
                request.arguments.as_ref()
            } else {
                None
            },
            &all,
        ) {
            Ok(h) => h,
            Err(e) => return Ok(tool_error(e)),
        };
        let (eph, base) = match self.modern_session(handle.as_deref()) {
            Ok(x) => x,
            Err(e) => {
                self.record(AuditRecord {
                    time: unix_now(),
                    session: "-".into(),
                    tool: request.name.to_string(),
                    name: None,
                    server: None,
                    via: None,
                    decision: "deny",
                    confirmed: None,
                    latency_ms: 0.0,
                    outcome: Outcome::StateRefused,
                    attempts: 0,
                    detail: Some(stateless::refusal(&e, "session")),
                    trace_id: None,
                    flow: Default::default(),
                });
                return Ok(tool_error(stateless::refusal(&e, "session")));
            }
        };
        let is_find = cfg.find_tools.enabled && request.name == cfg.find_tools.name;
        let mut request = request;
        if own && let Some(a) = request.arguments.as_mut() {
            a.remove(stateless::SESSION_ARGUMENT);
        }
        let resp = eph.call_tool_here(request, context).await?;
        let sealed = eph.sealed_handle(&base);
        Ok(match resp {
            CallToolResponse::Complete(mut r) => {
                if is_find && r.is_error != Some(true) {
                    if let Some(Value::Object(o)) = r.structured_content.as_mut() {
                        o.insert(
                            stateless::SESSION_ARGUMENT.into(),
                            Value::String(sealed.clone()),
                        );
                    }
                    super::discovery::append_text(
                        &mut r,
                        &format!(
                            "To call these tools by name, or to search again with what this search learnt, pass `\"{}\": \"{sealed}\"` to {} / {} (or in the request's _meta[\"{}\"]).",
                            stateless::SESSION_ARGUMENT,
                            cfg.find_tools.name,
                            cfg.call_tool.name,
                            stateless::SESSION_META_KEY
                        ),
                    );
                }
                let meta = r.meta.get_or_insert_with(MetaObject::default);
                meta.0
                    .insert(stateless::SESSION_META_KEY.into(), Value::String(sealed));
                // a legacy server's result has no resultType; every modern
                // result must (SEP-2322)
                r.result_type
                    .get_or_insert(rmcp::model::ResultType::COMPLETE);
                CallToolResponse::Complete(r)
            }
            other => other,
        })
    }

    /// `tools/list` from this session's state (`modern`: the proxy's tools
    /// take the `session` argument).
    async fn list_tools_here(
        &self,
        request: Option<PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
        modern: bool,
    ) -> Result<ListToolsResult, McpError> {
        let inner = &self.inner;
        inner.wait_ready().await;
        let cat = inner.catalog_for(None, LIST_CONSISTENCY_WAIT).await?;
        let pmeta = request
            .as_ref()
            .and_then(|r| r.meta.as_ref())
            .map(|m| &m.0.0);
        self.apply_meta(&metas(context, pmeta), &cat.plan)?;
        let mut st = lock(&self.session.state);
        let listed = inner.listed(&mut st, &cat);
        if let Some(shadow) = inner.shadow.get() {
            shadow.list(&mut st, &self.session.id, &cat);
        }
        if st.announced.is_none() {
            st.announced = Some(inner.listed_names(&cat, &listed));
        }
        drop(st);
        let mut tools = if modern {
            super::discovery::modern_meta_tools(&inner.config)
        } else {
            inner.meta_tools()
        };
        tools.extend(listed.iter().map(|&i| cat.tools[i].clone()));
        inner.metrics.listed(tools.len());
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// `tools/call` in this session: the proxy's tools, or a downstream call.
    async fn call_tool_here(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.inner.wait_ready().await;
        let _slot = match self.acquire_slot(&request.name).await {
            Ok(s) => s,
            Err(refused) => return Ok(refused),
        };
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
