//! Downstream servers: each one a child process the proxy talks to as an MCP
//! client over its stdio, or (feature `mcp-http`) a remote server spoken to
//! with rmcp's Streamable HTTP client (headers from the configuration, their
//! `${VAR}`s from the environment, marked sensitive so that no log shows
//! them). A supervisor task per server lists its tools (following
//! pagination), re-lists them on `notifications/tools/list_changed`, and
//! restarts the process, or reconnects, with exponential backoff when it
//! exits or its connection fails (an expired HTTP session is re-initialized
//! by rmcp's client on its own).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ClientHandler;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, ListToolsRequest, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, RequestId, ResourceUpdatedNotificationParam,
    ServerCapabilities, ServerResult, Tool,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RoleClient, RoleServer, ServiceError,
};
use tokio::sync::{mpsc, watch};

use super::catalog::ServerTools;
use super::child::ChildTransport;
use super::config::ServerSpec;
use super::probe::StaleProbeFilter;
use super::progress::{CountingTransport, ProgressSeq, Relay, SETTLE_LIMIT};
use super::surfaces::Surfaces;

/// What a supervisor reports to the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// The server's tools were (re-)listed: the catalog must be rebuilt.
    Listed(usize),
    /// The server's first start attempt is over (listed or failed).
    FirstAttemptDone(usize),
    /// The server stopped (its tools stay in the catalog and report errors).
    Down(usize),
}

/// A server's state as calls see it.
#[derive(Clone)]
pub(crate) enum Status {
    /// Being started: the attempt number, and why the previous attempt (or
    /// run) ended, for a server that is restarting.
    Starting(u32, Option<String>),
    /// Running.
    Up { peer: Peer<RoleClient> },
    /// Not running: why, and when the next start is due.
    Down { reason: String, retry_at: Instant },
}

/// One downstream server.
pub(crate) struct Downstream {
    pub spec: ServerSpec,
    pub index: usize,
    status: Mutex<Status>,
    listing: Mutex<(Arc<Vec<Tool>>, u64)>,
    /// The tools of the last listing withheld because they do not decode.
    invalid: Mutex<Vec<InvalidTool>>,
    listing_version: AtomicU64,
    /// Set on a downstream `tools/list_changed`, cleared once re-listed.
    relisting: AtomicBool,
    /// A call met a transport failure on a remote server: reconnect.
    reconnect: tokio::sync::Notify,
    /// Progress relays of the calls in flight: the token the server got
    /// (rmcp's, unique per connection) -> the client session's peer and the
    /// client's own token.
    progress: Mutex<std::collections::HashMap<ProgressToken, Arc<Relay>>>,
    /// Held for writing while a relayed call is sent and registered, for
    /// reading while a progress notification is looked up: none is missed.
    progress_gate: tokio::sync::RwLock<()>,
    /// Set when the server answered an abandoned `server/discover` probe
    /// with a result (see `probe`): with `era = "auto"` its next start
    /// probes without rmcp's 10 s timeout.
    answered_discover_late: Arc<AtomicBool>,
    /// The capabilities the server declared when it last initialized
    /// (`None`: never up).
    caps: Mutex<Option<ServerCapabilities>>,
    /// The stderr of the server's current process (`None`: a remote
    /// server, or not started yet): its last lines name a crash.
    stderr: Mutex<Option<Arc<super::child_stderr::StderrTap>>>,
    /// Resources, prompts and subscriptions, shared by every server and
    /// session: where `notifications/resources/*` and
    /// `notifications/prompts/list_changed` go.
    pub surfaces: Arc<Surfaces>,
}

/// Sends `notifications/cancelled` for a request abandoned before its
/// answer (the call timed out, or the client cancelled).
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        if let (Ok(rt), Ok(param)) = (
            tokio::runtime::Handle::try_current(),
            serde_json::from_value(serde_json::json!({
                "requestId": id, "reason": "request abandoned by the caller"})),
        ) {
            rt.spawn(async move {
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}

/// Awaits the answer to a `tools/call` sent as `handle` (cancelled on
/// `peer` when dropped before it), as a [`CallToolResponse`].
async fn call_response(
    peer: &Peer<RoleClient>,
    handle: rmcp::service::RequestHandle<RoleClient>,
) -> Result<CallToolResponse, ServiceError> {
    let mut cancel = CancelOnDrop {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let result = handle.await_response().await;
    cancel.id = None;
    match result? {
        ServerResult::CallToolResult(r) => Ok(CallToolResponse::Complete(r)),
        ServerResult::InputRequiredResult(r) => Ok(CallToolResponse::InputRequired(r)),
        ServerResult::CreateTaskResult(r) => Ok(CallToolResponse::Task(r)),
        ServerResult::EmptyResult(_) => Ok(CallToolResponse::Complete(CallToolResult::default())),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A call's progress relay; unregistered when dropped.
pub(crate) struct ProgressRelay<'a> {
    server: &'a Downstream,
    /// The token sent to the server.
    pub token: ProgressToken,
}

impl Drop for ProgressRelay<'_> {
    fn drop(&mut self) {
        lock(&self.server.progress).remove(&self.token);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Downstream {
    pub fn new(spec: ServerSpec, index: usize, surfaces: Arc<Surfaces>) -> Self {
        Downstream {
            spec,
            index,
            status: Mutex::new(Status::Starting(0, None)),
            listing: Mutex::new((Arc::new(Vec::new()), 0)),
            invalid: Mutex::new(Vec::new()),
            listing_version: AtomicU64::new(0),
            relisting: AtomicBool::new(false),
            reconnect: tokio::sync::Notify::new(),
            progress: Mutex::new(Default::default()),
            progress_gate: tokio::sync::RwLock::new(()),
            answered_discover_late: Arc::new(AtomicBool::new(false)),
            caps: Mutex::new(None),
            stderr: Mutex::new(None),
            surfaces,
        }
    }

    /// The progress relay of the call in flight that the server knows by
    /// `token` (rmcp's token for the request), if any.
    pub(crate) fn relay(&self, token: &ProgressToken) -> Option<Arc<Relay>> {
        lock(&self.progress).get(token).cloned()
    }

    /// The capabilities the server declared when it last initialized.
    pub fn capabilities(&self) -> Option<ServerCapabilities> {
        lock(&self.caps).clone()
    }

    /// The connection, when the server is up.
    pub fn peer(&self) -> Option<Peer<RoleClient>> {
        match self.status() {
            Status::Up { peer } => Some(peer),
            _ => None,
        }
    }

    /// Calls a tool on `peer` (this server's connection) and relays its
    /// `notifications/progress` to the client session `client` under the
    /// client's `client_token`. The server sees rmcp's own token for the
    /// request (unique on the connection, so across the sessions sharing
    /// it). Abandoning the call (dropping the future) cancels it downstream.
    pub async fn call_relaying_progress(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        client: Peer<RoleServer>,
        client_token: ProgressToken,
    ) -> Result<CallToolResponse, ServiceError> {
        let gate = self.progress_gate.write().await;
        let handle = peer
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await?;
        let relay = Arc::new(Relay::new(client, client_token));
        lock(&self.progress).insert(handle.progress_token.clone(), relay.clone());
        drop(gate);
        let _relay = ProgressRelay {
            server: self,
            token: handle.progress_token.clone(),
        };
        let answer = call_response(peer, handle).await;
        // the progress the server sent before its answer goes first
        // (see `progress`)
        if !relay.order.settle().await {
            tracing::debug!("progress of a call still unrelayed after {SETTLE_LIMIT:?}");
        }
        answer
    }

    /// A `tools/call` (one round, no MRTR driving) whose request `_meta`
    /// carries `caps` as `io.modelcontextprotocol/clientCapabilities`
    /// instead of the proxy's own: a modern server then asks (in an
    /// `InputRequiredResult`) only for what the proxy's client can answer
    /// (MRTR: "Servers MUST NOT send an inputRequests that the client has not
    /// declared support for"). Cancelled downstream when dropped.
    pub async fn call_as_client(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        caps: rmcp::model::ClientCapabilities,
    ) -> Result<CallToolResponse, ServiceError> {
        let mut meta = rmcp::model::RequestMetaObject::default();
        meta.set_client_capabilities(caps);
        let handle = peer
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options().with_meta(meta),
            )
            .await?;
        call_response(peer, handle).await
    }

    /// A call failed in the transport (not with an MCP error). A remote
    /// server is then reconnected (a new session, after the backoff); a
    /// child process needs nothing: its exit is seen on its own.
    pub fn connection_failed(&self) {
        if self.spec.url.is_some() && matches!(self.status(), Status::Up { .. }) {
            self.reconnect.notify_one();
        }
    }

    pub fn status(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_status(&self, s: Status) {
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = s;
    }

    /// The last listing.
    pub fn tools(&self) -> ServerTools {
        let l = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        ServerTools {
            server: self.spec.name.clone(),
            tools: l.0.clone(),
            version: l.1,
        }
    }

    /// Version of the last listing (0: never listed).
    pub fn listing_version(&self) -> u64 {
        self.listing_version.load(Ordering::Acquire)
    }

    /// Whether a `tools/list_changed` arrived and the new listing is not stored yet.
    pub fn relisting(&self) -> bool {
        self.relisting.load(Ordering::Acquire)
    }

    /// The tools of the last listing that the proxy withholds (not valid
    /// MCP tools); empty when every listed tool decoded.
    pub fn invalid_tools(&self) -> Vec<InvalidTool> {
        lock(&self.invalid).clone()
    }

    fn store_listing(&self, listing: Listing) {
        {
            // Warned once per withheld tool, not at every re-listing.
            let mut invalid = lock(&self.invalid);
            for bad in listing.invalid.iter().filter(|b| !invalid.contains(b)) {
                tracing::warn!(
                    server = %self.spec.name,
                    tool = bad.name.as_deref().unwrap_or("(no name)"),
                    "tool withheld: {}; the server's other tools are served",
                    bad.reason
                );
            }
            *invalid = listing.invalid;
        }
        let mut l = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        let v = l.1 + 1;
        *l = (Arc::new(listing.tools), v);
        self.listing_version.store(v, Ordering::Release);
        self.relisting.store(false, Ordering::Release);
    }

    /// A message for calls while the server is not up.
    pub fn unavailable_message(&self) -> String {
        match self.status() {
            Status::Up { .. } => format!("server `{}` is running", self.spec.name),
            Status::Starting(n, None) => format!(
                "server `{}` is starting (attempt {n}); try again shortly",
                self.spec.name
            ),
            Status::Starting(n, Some(last)) => format!(
                "server `{}` is restarting (attempt {n}) after it failed: {}; try again shortly",
                self.spec.name,
                crate::diag::clip_chars(&last, 500)
            ),
            Status::Down { reason, retry_at } => {
                let wait = retry_at.saturating_duration_since(Instant::now());
                format!(
                    "server `{}` is not running ({reason}); the proxy restarts it in {:.1} s",
                    self.spec.name,
                    wait.as_secs_f64()
                )
            }
        }
    }
}

/// The proxy's client side toward one server: it reacts to
/// `notifications/tools/list_changed` (re-lists), relays progress, resource
/// updates (to the sessions subscribed) and the resource and prompt
/// `list_changed` notifications (to every session). It declares no capabilities (no roots:
/// a server such as the filesystem one would otherwise replace its configured
/// directories with the client's).
struct DownstreamClient {
    server: Arc<Downstream>,
    relist: mpsc::UnboundedSender<()>,
}

impl ClientHandler for DownstreamClient {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let to = {
            let _g = self.server.progress_gate.read().await;
            lock(&self.server.progress)
                .get(&params.progress_token)
                .cloned()
        };
        let Some(relay) = to else { return };
        // in the server's order (see `progress`); a notification that came
        // before the relay was registered has no number and goes at once
        let seq = context.extensions.get::<ProgressSeq>().map(|s| s.0);
        if let Some(seq) = seq
            && !relay.order.wait_turn(seq).await
        {
            tracing::debug!("progress {seq} relayed out of turn after {SETTLE_LIMIT:?}");
        }
        {
            let mut last = relay.last.lock().await;
            // a value not above the last one is out of order: a later one
            // was relayed already
            if !last.is_some_and(|l| params.progress <= l) {
                *last = Some(params.progress);
                let mut p = ProgressNotificationParam::new(relay.token.clone(), params.progress);
                p.total = params.total;
                p.message = params.message;
                if let Err(e) = relay.client.notify_progress(p).await {
                    tracing::debug!("cannot relay notifications/progress: {e}");
                }
            }
        }
        if let Some(seq) = seq {
            relay.order.done(seq);
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.server
            .surfaces
            .resource_updated(self.server.index, params)
            .await;
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server.spec.name, "downstream resources/list_changed");
        self.server.surfaces.resource_list_changed().await;
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server.spec.name, "downstream prompts/list_changed");
        self.server.surfaces.prompt_list_changed().await;
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server.spec.name, "downstream tools/list_changed");
        self.server.relisting.store(true, Ordering::Release);
        let _ = self.relist.send(());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate-proxy", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Whether `peer` (a downstream server) speaks the modern era (2026-07-28
/// or later: opened with `server/discover`), where change notifications come
/// only on a `subscriptions/listen` stream.
pub(crate) fn is_modern_peer(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_some_and(|i| !i.protocol_version.has_initialize())
}

/// Relays the notifications of a modern server's `subscriptions/listen`
/// stream to what the legacy-era callbacks of [`DownstreamClient`] do:
/// `tools/list_changed` re-lists, resource and prompt list changes and
/// resource updates go to the sessions. Ends with the stream.
pub(crate) async fn relay_listen(
    mut sub: rmcp::service::Subscription,
    ds: Arc<Downstream>,
    relist: Option<mpsc::UnboundedSender<()>>,
) {
    use rmcp::model::ServerNotification as N;
    loop {
        match sub.next().await {
            Ok(Some(N::ToolListChangedNotification(_))) => {
                tracing::debug!(server = %ds.spec.name, "downstream tools/list_changed (listen)");
                if let Some(r) = &relist {
                    ds.relisting.store(true, Ordering::Release);
                    let _ = r.send(());
                }
            }
            Ok(Some(N::ResourceListChangedNotification(_))) => {
                ds.surfaces.resource_list_changed().await;
            }
            Ok(Some(N::PromptListChangedNotification(_))) => {
                ds.surfaces.prompt_list_changed().await;
            }
            Ok(Some(N::ResourceUpdatedNotification(n))) => {
                ds.surfaces.resource_updated(ds.index, n.params).await;
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return,
        }
    }
}

/// Timing of a supervisor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    pub start_timeout: Duration,
    pub restart_initial: Duration,
    pub restart_max: Duration,
}

/// The shortest time between two re-listings of one server on its
/// `notifications/tools/list_changed`: notifications that arrive sooner are
/// coalesced into the next re-listing (a flood costs at most four tools/list
/// requests and catalog compiles a second).
pub(crate) const RELIST_MIN_INTERVAL: Duration = Duration::from_millis(250);

/// How long a server must have run for its restart delay to reset.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// A tool a server listed that the proxy withholds because its definition
/// does not decode as an MCP `Tool` (e.g. an `inputSchema` that is not a
/// JSON object, which the MCP spec requires): it is neither exposed nor
/// callable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidTool {
    /// The tool's `name`, when it has a string one.
    pub name: Option<String>,
    /// Why it is withheld, for logs and for a call that names it.
    pub reason: String,
}

/// A server's listing: the tools that decode, and those withheld.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// The tools served, in the server's order.
    pub tools: Vec<Tool>,
    /// The tools withheld, in the server's order.
    pub invalid: Vec<InvalidTool>,
}

/// One decoded page of a `tools/list` answer.
#[derive(Debug, Default)]
struct Page {
    listing: Listing,
    next_cursor: Option<String>,
}

/// Why one entry of a `tools/list` answer's `tools` array is not an MCP
/// `Tool`, in words a user acts on (the serde error is kept at the end).
fn invalid_reason(entry: &serde_json::Value, error: &serde_json::Error) -> String {
    let kind = crate::gate::kind_name;
    let Some(obj) = entry.as_object() else {
        return format!("the entry is {}, not a tool object", kind(entry));
    };
    match obj.get("inputSchema") {
        Some(s) if !s.is_object() => format!(
            "its inputSchema is {}, not a JSON object (the MCP spec requires an object schema)",
            kind(s)
        ),
        _ => format!("its definition is not a valid MCP tool: {error}"),
    }
}

/// Decodes one page of a `tools/list` result tool by tool: an entry that is
/// not a valid MCP `Tool` is withheld (with its reason), the others are kept.
/// Errors: the result is not an object, or has no `tools` array.
fn decode_page(result: &serde_json::Value) -> Result<Page, String> {
    let Some(obj) = result.as_object() else {
        return Err("the tools/list result is not a JSON object".into());
    };
    let Some(entries) = obj.get("tools").and_then(|t| t.as_array()) else {
        return Err("the tools/list result has no `tools` array".into());
    };
    let mut page = Page::default();
    for entry in entries {
        match serde_json::from_value::<Tool>(entry.clone()) {
            Ok(tool) => page.listing.tools.push(tool),
            Err(e) => page.listing.invalid.push(InvalidTool {
                name: entry
                    .get("name")
                    .and_then(|n| n.as_str())
                    .map(str::to_string),
                reason: invalid_reason(entry, &e),
            }),
        }
    }
    page.next_cursor = obj
        .get("nextCursor")
        .and_then(|c| c.as_str())
        .map(str::to_string);
    Ok(page)
}

/// Sends one `tools/list` request and decodes its page. A result that rmcp's
/// typed decoding takes as a `ListToolsResult` is used as is; any other
/// result (rmcp keeps a result it cannot type, e.g. one with a tool whose
/// `inputSchema` is `true`, as a raw value) is decoded tool by tool.
async fn list_page(peer: &Peer<RoleClient>, cursor: Option<String>) -> Result<Page, String> {
    let request = match cursor {
        None => ListToolsRequest::default(),
        Some(c) => {
            ListToolsRequest::with_param(PaginatedRequestParams::default().with_cursor(Some(c)))
        }
    };
    let result = peer
        .send_request(ClientRequest::ListToolsRequest(request))
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    match result {
        ServerResult::ListToolsResult(r) => Ok(Page {
            listing: Listing {
                tools: r.tools,
                invalid: Vec::new(),
            },
            next_cursor: r.next_cursor,
        }),
        other => {
            let value = serde_json::to_value(&other)
                .map_err(|e| format!("tools/list failed: cannot read its result: {e}"))?;
            decode_page(&value).map_err(|e| format!("tools/list failed: {e}"))
        }
    }
}

/// Lists every page of the server's tools (following `nextCursor`), within
/// `timeout` for the whole listing. Tools that do not decode are withheld
/// (`Listing::invalid`; storing the listing warns of each, naming the
/// server, the tool and the cause); the others are served. Errors: the
/// request failed, a page is not a tools/list result, or no complete answer
/// came within `timeout`.
async fn list_tools(peer: &Peer<RoleClient>, timeout: Duration) -> Result<Listing, String> {
    let all = async {
        let mut listing = Listing::default();
        let mut cursor = None;
        loop {
            let page = list_page(peer, cursor).await?;
            listing.tools.extend(page.listing.tools);
            listing.invalid.extend(page.listing.invalid);
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        Ok::<_, String>(listing)
    };
    let listing = match tokio::time::timeout(timeout, all).await {
        Ok(r) => r?,
        Err(_) => return Err(format!("tools/list gave no answer within {timeout:?}")),
    };
    Ok(listing)
}

/// How long a supervisor waits, after its server exited, for the proxy to
/// say it is stopping before it reports the exit as a crash: a SIGTERM or
/// SIGINT sent to the process group reaches the server and the proxy at
/// once, and the server may be the quicker.
const STOP_NOTICE: Duration = Duration::from_millis(300);

/// Whether the proxy is stopping (`stopping` or `shutdown` true), waiting
/// at most [`STOP_NOTICE`] for it to say so.
async fn proxy_stopping(
    stopping: &mut watch::Receiver<bool>,
    shutdown: &mut watch::Receiver<bool>,
) -> bool {
    let either = async {
        tokio::select! {
            r = stopping.wait_for(|s| *s) => r.is_ok(),
            r = shutdown.wait_for(|s| *s) => r.is_ok(),
        }
    };
    tokio::time::timeout(STOP_NOTICE, either)
        .await
        .unwrap_or(false)
}

/// Runs the server's lifecycle until `shutdown` turns true. Once `stopping`
/// turns true (the proxy got SIGTERM or SIGINT and finishes its calls), an
/// exit of the server ends the supervisor: no "server down" warning, no
/// restart.
pub(crate) async fn supervise(
    ds: Arc<Downstream>,
    events: mpsc::UnboundedSender<Event>,
    timing: Timing,
    mut shutdown: watch::Receiver<bool>,
    mut stopping: watch::Receiver<bool>,
) {
    let name = ds.spec.name.clone();
    let mut delay = timing.restart_initial;
    let mut attempt = 0u32;
    let mut first = true;
    let mut last_error: Option<String> = None;
    loop {
        if *shutdown.borrow() || *stopping.borrow() {
            return;
        }
        attempt += 1;
        ds.set_status(Status::Starting(attempt, last_error.clone()));
        let (relist_tx, mut relist_rx) = mpsc::unbounded_channel();
        let relist_tx_keep = relist_tx.clone();
        let started = start(&ds, relist_tx, timing.start_timeout).await;
        let reason = match started {
            Ok((running, pid)) => {
                let peer = running.peer().clone();
                *lock(&ds.caps) = peer.peer_info().map(|i| i.capabilities.clone());
                match list_tools(&peer, timing.start_timeout).await {
                    Ok(listing) => {
                        tracing::info!(server = %name, tools = listing.tools.len(), withheld = listing.invalid.len(), ?pid, "server up");
                        // a call that failed on the connection before this
                        // one left `reconnect` a stored permit (tokio's Notify
                        // keeps one when no one waits): taken now, before
                        // the new peer is shown, it would end this connection
                        // at once, and every reconnect after it the same way
                        tokio::select! {
                            biased;
                            _ = ds.reconnect.notified() => {}
                            _ = std::future::ready(()) => {}
                        }
                        ds.store_listing(listing);
                        ds.set_status(Status::Up { peer: peer.clone() });
                        // a modern server announces list changes only on a
                        // subscriptions/listen stream (SEP-2575)
                        if is_modern_peer(&peer) {
                            let caps = ds.capabilities();
                            let mut f = rmcp::model::SubscriptionFilter::default();
                            let on = |b: Option<bool>| b.and_then(|b| b.then_some(true));
                            f.tools_list_changed = caps
                                .as_ref()
                                .and_then(|c| c.tools.as_ref())
                                .and_then(|t| on(t.list_changed));
                            f.prompts_list_changed = caps
                                .as_ref()
                                .and_then(|c| c.prompts.as_ref())
                                .and_then(|t| on(t.list_changed));
                            f.resources_list_changed = caps
                                .as_ref()
                                .and_then(|c| c.resources.as_ref())
                                .and_then(|t| on(t.list_changed));
                            if f != rmcp::model::SubscriptionFilter::default() {
                                let (p2, ds2, tx) =
                                    (peer.clone(), ds.clone(), relist_tx_keep.clone());
                                tokio::spawn(async move {
                                    match p2.listen(f).await {
                                        Ok(sub) => relay_listen(sub, ds2, Some(tx)).await,
                                        Err(e) => {
                                            tracing::warn!(server = %ds2.spec.name, "subscriptions/listen failed: {e}; its list changes are not seen")
                                        }
                                    }
                                });
                            }
                        }
                        // a new connection: its subscriptions are made again
                        tokio::spawn(ds.surfaces.clone().server_up(
                            ds.index,
                            peer.clone(),
                            ds.capabilities(),
                        ));
                        let _ = events.send(Event::Listed(ds.index));
                        if std::mem::take(&mut first) {
                            let _ = events.send(Event::FirstAttemptDone(ds.index));
                        }
                        let up_since = Instant::now();
                        let mut last_relist: Option<Instant> = None;
                        let mut flood_warned = false;
                        let wait = running.waiting();
                        tokio::pin!(wait);
                        let reason = loop {
                            tokio::select! {
                                r = &mut wait => break match r {
                                    Ok(q) => format!("exited ({q:?})"),
                                    Err(e) => format!("its connection task failed: {e}"),
                                },
                                Some(()) = relist_rx.recv() => {
                                    // At most one re-listing per RELIST_MIN_INTERVAL:
                                    // a server that floods the notification is
                                    // re-listed (and the catalog recompiled) at
                                    // that rate, not at its own.
                                    if let Some(last) = last_relist {
                                        let wait = RELIST_MIN_INTERVAL.saturating_sub(last.elapsed());
                                        if !wait.is_zero() {
                                            if !flood_warned {
                                                flood_warned = true;
                                                tracing::warn!(server = %name, "the server sends notifications/tools/list_changed faster than every {} ms: re-listed at most that often", RELIST_MIN_INTERVAL.as_millis());
                                            }
                                            tokio::time::sleep(wait).await;
                                        }
                                    }
                                    // coalesce a burst of notifications
                                    while relist_rx.try_recv().is_ok() {}
                                    last_relist = Some(Instant::now());
                                    match list_tools(&peer, timing.start_timeout).await {
                                        Ok(listing) => {
                                            tracing::info!(server = %name, tools = listing.tools.len(), withheld = listing.invalid.len(), "re-listed");
                                            ds.store_listing(listing);
                                            let _ = events.send(Event::Listed(ds.index));
                                        }
                                        Err(e) => {
                                            tracing::warn!(server = %name, "re-listing failed: {e}; keeping the previous list");
                                            ds.relisting.store(false, Ordering::Release);
                                            let _ = events.send(Event::Listed(ds.index));
                                        }
                                    }
                                }
                                _ = ds.reconnect.notified() => {
                                    break "its connection failed during a call".to_string();
                                }
                                _ = shutdown.changed() => {
                                    ds.set_status(Status::Down { reason: "the proxy is shutting down".into(), retry_at: Instant::now() });
                                    // dropping `wait` drops the service: the child is killed
                                    return;
                                }
                            }
                        };
                        if up_since.elapsed() >= HEALTHY_AFTER {
                            delay = timing.restart_initial;
                            attempt = 0;
                        }
                        reason
                    }
                    Err(e) => {
                        if std::mem::take(&mut first) {
                            let _ = events.send(Event::FirstAttemptDone(ds.index));
                        }
                        e
                    }
                }
            }
            Err(e) => {
                if std::mem::take(&mut first) {
                    let _ = events.send(Event::FirstAttemptDone(ds.index));
                }
                e
            }
        };
        if proxy_stopping(&mut stopping, &mut shutdown).await {
            // not a crash: the proxy is stopping (its signal reached the
            // server too); nothing is restarted
            tracing::debug!(server = %name, "the server ended while the proxy stops: {reason}");
            ds.set_status(Status::Down {
                reason: "the proxy is shutting down".into(),
                retry_at: Instant::now(),
            });
            return;
        }
        let tap = lock(&ds.stderr).clone();
        let reason = super::child_stderr::with_last_words(reason, tap.as_deref()).await;
        tracing::warn!(server = %name, "server down: {reason}; restarting in {delay:?}");
        last_error = Some(reason.clone());
        ds.set_status(Status::Down {
            reason,
            retry_at: Instant::now() + delay,
        });
        let _ = events.send(Event::Down(ds.index));
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.changed() => return,
            _ = stopping.wait_for(|s| *s) => return,
        }
        delay = (delay * 2).min(timing.restart_max);
    }
}

type Running = rmcp::service::RunningService<RoleClient, DownstreamClient>;

/// How the proxy opens a server of `era` (MCP 2026-07-28, "Versioning and
/// Compatibility"): `auto` probes with `server/discover` and falls back to
/// `initialize` on a legacy server (rmcp waits at most 10 s for an answer);
/// `modern` speaks 2026-07-28 only; `legacy` sends `initialize` only.
/// How rmcp opens the server: by its `era`; `auto` for a server known to
/// answer `server/discover` (it once answered a probe after rmcp's timeout)
/// probes with `server/discover` alone, with no timeout of rmcp's.
fn lifecycle(era: super::config::ServerEra, answers_discover: bool) -> ClientLifecycleMode {
    use super::config::ServerEra;
    let era = match era {
        ServerEra::Auto if answers_discover => ServerEra::Modern,
        e => e,
    };
    match era {
        ServerEra::Legacy => ClientLifecycleMode::Initialize,
        ServerEra::Modern => ClientLifecycleMode::Discover {
            preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        },
        ServerEra::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            legacy_version: None,
        },
    }
}

async fn start(
    ds: &Arc<Downstream>,
    relist: mpsc::UnboundedSender<()>,
    timeout: Duration,
) -> Result<(Running, Option<u32>), String> {
    let spec = &ds.spec;
    if let Some(url) = &spec.url {
        let client = DownstreamClient {
            server: ds.clone(),
            relist,
        };
        return start_http(client, url, &spec.headers, timeout).await;
    }
    let mut cmd = tokio::process::Command::new(&spec.command);
    cmd.args(&spec.args);
    // the thread settings toolgate gave its own candle are not the server's
    for name in crate::embed::thread_env_set_here() {
        cmd.env_remove(name);
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    if let Some(d) = &spec.cwd {
        cmd.current_dir(d);
    }
    // its stdout screened for answers rmcp could not decode (see `child`)
    // an `auto` server's stderr is held while it is probed (`child_stderr`)
    let answers_discover = ds.answered_discover_late.load(Ordering::SeqCst);
    let probing = spec.era == super::config::ServerEra::Auto && !answers_discover;
    *lock(&ds.stderr) = None;
    let transport = ChildTransport::spawn(cmd, &spec.name, probing)
        .map_err(|e| format!("cannot start `{}`: {e}", spec.display_command()))?;
    let tap = transport.stderr();
    *lock(&ds.stderr) = Some(tap.clone());
    let pid = transport.id();
    let transport = CountingTransport::new(
        StaleProbeFilter::new(transport, ds.answered_discover_late.clone()),
        ds.clone(),
    );
    let client = DownstreamClient {
        server: ds.clone(),
        relist,
    };
    let mode = lifecycle(spec.era, answers_discover);
    let r = tokio::time::timeout(timeout, client.serve_with_lifecycle(transport, mode)).await;
    match &r {
        Ok(Ok(running)) if probing && !is_modern_peer(running.peer()) => tap.probe_fell_back(),
        _ => tap.release(),
    }
    match r {
        Ok(Ok(running)) => Ok((running, pid)),
        Ok(Err(e)) => Err(format!("MCP initialization failed: {e}")),
        Err(_) => Err(format!("no MCP initialization within {timeout:?}")),
    }
}

#[cfg(not(feature = "mcp-http"))]
async fn start_http(
    _client: DownstreamClient,
    url: &str,
    _headers: &[(String, String)],
    _timeout: Duration,
) -> Result<(Running, Option<u32>), String> {
    Err(format!(
        "cannot connect to {}: this build has no Streamable HTTP client (cargo feature `mcp-http`)",
        super::config::display_url(url)
    ))
}

/// Connects to a remote server with rmcp's Streamable HTTP client.
#[cfg(feature = "mcp-http")]
async fn start_http(
    client: DownstreamClient,
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<(Running, Option<u32>), String> {
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut map = std::collections::HashMap::new();
    for (k, template) in headers {
        let v = super::config::resolve_env_template(template, |n| std::env::var(n).ok())
            .map_err(|e| format!("header `{k}`: {e}"))?;
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("`{k}` is not an HTTP header name"))?;
        let mut value = HeaderValue::from_str(&v)
            .map_err(|_| format!("header `{k}`: the value is not a valid HTTP header value"))?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    super::http::install_crypto_provider();
    let http = reqwest::Client::builder()
        .connect_timeout(timeout)
        .tcp_nodelay(true)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", e.without_url()))?;
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .custom_headers(map)
        .reinit_on_expired_session(true);
    let transport = CountingTransport::new(
        StaleProbeFilter::new(
            StreamableHttpClientTransport::with_client(http, config),
            client.server.answered_discover_late.clone(),
        ),
        client.server.clone(),
    );
    let shown = super::config::display_url(url);
    let mode = lifecycle(
        client.server.spec.era,
        client.server.answered_discover_late.load(Ordering::SeqCst),
    );
    match tokio::time::timeout(timeout, client.serve_with_lifecycle(transport, mode)).await {
        Ok(Ok(running)) => Ok((running, None)),
        Ok(Err(e)) => Err(format!("MCP initialization with {shown} failed: {e}")),
        Err(_) => Err(format!(
            "no MCP initialization with {shown} within {timeout:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What rmcp hands the proxy for a `tools/list` result: its untagged
    /// `ServerResult`, decoded from the wire.
    fn as_rmcp_gives_it(result: serde_json::Value) -> serde_json::Value {
        let typed: ServerResult = serde_json::from_value(result).unwrap();
        assert!(
            !matches!(typed, ServerResult::ListToolsResult(_)),
            "rmcp now types this result: {typed:?}"
        );
        serde_json::to_value(&typed).unwrap()
    }

    fn ok_tool() -> serde_json::Value {
        json!({"name": "t_ok", "description": "fine",
               "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}})
    }

    #[test]
    fn a_tool_whose_input_schema_is_not_an_object_is_withheld_and_the_others_kept() {
        for bad in [json!(true), json!("x"), json!(7), json!(null), json!([1])] {
            let result = json!({"tools": [ok_tool(), {"name": "t_bad", "inputSchema": bad}],
                                "nextCursor": "2"});
            let page = decode_page(&as_rmcp_gives_it(result)).unwrap();
            let names: Vec<_> = page
                .listing
                .tools
                .iter()
                .map(|t| t.name.to_string())
                .collect();
            assert_eq!(names, ["t_ok"], "{bad}");
            assert_eq!(page.listing.invalid.len(), 1);
            let invalid = &page.listing.invalid[0];
            assert_eq!(invalid.name.as_deref(), Some("t_bad"));
            assert!(
                invalid.reason.contains("inputSchema")
                    && invalid.reason.contains("not a JSON object"),
                "{}",
                invalid.reason
            );
            assert_eq!(page.next_cursor.as_deref(), Some("2"));
        }
    }

    #[test]
    fn entries_that_are_not_tools_are_withheld_with_their_cause() {
        let result = json!({"tools": [ok_tool(), 5, {"inputSchema": {"type": "object"}}]});
        let page = decode_page(&as_rmcp_gives_it(result)).unwrap();
        assert_eq!(page.listing.tools.len(), 1);
        assert_eq!(page.listing.invalid.len(), 2);
        assert_eq!(page.listing.invalid[0].name, None);
        assert!(
            page.listing.invalid[0]
                .reason
                .contains("a number, not a tool object")
        );
        assert!(
            page.listing.invalid[1].reason.contains("name"),
            "{:?}",
            page.listing.invalid[1]
        );
    }

    #[test]
    fn a_result_without_a_tools_array_is_an_error() {
        for v in [json!({}), json!({"tools": 3}), json!([]), json!("x")] {
            assert!(decode_page(&v).is_err(), "{v}");
        }
    }
}
