//! Resources, prompts, completion and logging through the proxy: the MCP
//! surfaces besides tools, passed through to the downstream servers.
//!
//! The policy governs tools only: resources and prompts are not scored,
//! filtered or gated (a client reads what the servers offer), but they are
//! routed, and a `resources/read` is audited (outcome and latency, the URI
//! as `tool`, `via` = `resources/read`, decision `none`).
//!
//! - **Capabilities**: the proxy declares `resources` (with `subscribe`
//!   when a server has it), `prompts` and `completions` when at least one
//!   downstream server declared them at its last initialization, with
//!   `listChanged` always (the proxy announces a changed list itself when a
//!   server comes up on a new connection); `initialize` waits for the servers' first start (as
//!   `tools/list` does) so that the answer knows them. `logging` is always
//!   declared.
//! - **Listings** (`resources/list`, `resources/templates/list`,
//!   `prompts/list`): every server that declares the capability is asked,
//!   following its pagination; the answer is one page, servers in
//!   configuration order. A server that fails to answer is left out (and
//!   logged). URIs pass unchanged (the first server listing a URI owns it);
//!   prompt names are made like tool names ([`super::names`], the
//!   `name_format`): with `{tool}` they pass unchanged, collisions get a
//!   hash suffix.
//! - **Routing**: `resources/read`, `resources/subscribe` and
//!   `resources/unsubscribe` go to the server that listed the URI, else to
//!   the one whose resource template matches it (RFC 6570 expressions, level
//!   1 to 3 operators), else, when only one server serves resources, to that
//!   one; otherwise the lists are fetched again and, failing that, the answer
//!   is a `-32002` "resource not found" error naming the URI. `prompts/get`
//!   and `completion/complete` (`ref/prompt`: by exposed prompt name;
//!   `ref/resource`: by the server listing that template) likewise.
//! - **Subscriptions**: a downstream connection is shared by every session,
//!   so the proxy keeps, per (server, URI), the sessions subscribed: the
//!   first subscriber subscribes downstream, the last to leave (by
//!   `resources/unsubscribe`, or by closing its session) unsubscribes; a
//!   `notifications/resources/updated` goes to the sessions subscribed to
//!   that URI only. After a server restarts or reconnects, its subscriptions
//!   are made again.
//! - **list_changed**: a downstream `notifications/resources/list_changed`
//!   or `notifications/prompts/list_changed` is relayed to every session, and
//!   sent to every session when a server with resources (prompts) comes up
//!   on a new connection (a late start, a restart, a reconnection).
//! - **Logging**: `logging/setLevel` is accepted per session and stored in
//!   it. The proxy sends no `notifications/message` of its own; a downstream
//!   server's log messages are not relayed: they name no request, and the
//!   server's connection is shared by every session, so there is no sound
//!   way to tell whose they are (see docs/mcp-proxy.md).

// Logging and resources/subscribe are deprecated by SEP-2577 (protocol
// 2026-07-28); the proxy speaks the versions with `initialize`, where they
// are current.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResponse, Reference,
    Resource, ResourceTemplate, ResourceUpdatedNotificationParam, ResourcesCapability,
    ServerCapabilities, SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RoleClient, RoleServer, ServiceError};

use super::audit::{AuditRecord, Outcome};
use super::downstream::Downstream;
use super::handler::ProxySession;
use super::proxy::{Inner, lock, unix_now};

/// How long a forwarded resources, prompts or completion request waits for
/// its answer (seconds: 30, the seed's default call time limit).
pub(crate) const SURFACE_TIMEOUT: Duration = Duration::from_secs(30);

type Sessions = HashMap<String, Peer<RoleServer>>;

/// The state of the surfaces shared by every session and server.
#[derive(Default)]
pub(crate) struct Surfaces {
    /// Resource URI -> the server that listed it.
    resources: Mutex<HashMap<String, usize>>,
    /// Per server: the `uriTemplate`s of its last template listing.
    templates: Mutex<BTreeMap<usize, Vec<String>>>,
    /// Exposed prompt name -> (server, the prompt's name there).
    prompts: Mutex<HashMap<String, (usize, String)>>,
    /// (server, URI) -> the sessions subscribed (session id -> client).
    /// Held across the downstream (un)subscribe, so that a subscribe and an
    /// unsubscribe of the same URI reach the server in the order decided.
    subscriptions: tokio::sync::Mutex<HashMap<(usize, String), Sessions>>,
    /// The open sessions' clients (session id -> client).
    clients: Mutex<Sessions>,
    /// (server, URI) -> the task relaying a modern server's
    /// `subscriptions/listen` stream for that URI (a modern server has no
    /// `resources/subscribe`, SEP-2575); aborted (the stream cancelled) by the
    /// last unsubscribe.
    listens: Mutex<HashMap<(usize, String), tokio::task::AbortHandle>>,
}

/// Subscribes to `uri` on a server: `resources/subscribe` to a legacy one; to
/// a modern one a `subscriptions/listen` stream opted in to that URI, whose
/// `notifications/resources/updated` a task relays until unsubscribed.
async fn subscribe_down(
    surfaces: &Arc<Surfaces>,
    server: usize,
    peer: &Peer<RoleClient>,
    uri: &str,
) -> Result<Result<(), ServiceError>, tokio::time::error::Elapsed> {
    if !super::downstream::is_modern_peer(peer) {
        return tokio::time::timeout(
            SURFACE_TIMEOUT,
            peer.subscribe(SubscribeRequestParams::new(uri.to_string())),
        )
        .await;
    }
    let mut f = rmcp::model::SubscriptionFilter::default();
    f.resource_subscriptions = Some(vec![uri.to_string()]);
    let sub = match tokio::time::timeout(SURFACE_TIMEOUT, peer.listen(f)).await? {
        Ok(sub) => sub,
        Err(e) => return Ok(Err(e)),
    };
    let s2 = surfaces.clone();
    let task = tokio::spawn(async move {
        let mut sub = sub;
        while let Ok(Some(n)) = sub.next().await {
            if let rmcp::model::ServerNotification::ResourceUpdatedNotification(n) = n {
                s2.resource_updated(server, n.params).await;
            }
        }
    });
    if let Some(old) =
        lock(&surfaces.listens).insert((server, uri.to_string()), task.abort_handle())
    {
        old.abort();
    }
    Ok(Ok(()))
}

/// Undoes [`subscribe_down`]: `resources/unsubscribe`, or the listen stream
/// cancelled.
async fn unsubscribe_down(
    surfaces: &Surfaces,
    server: usize,
    peer: &Peer<RoleClient>,
    uri: &str,
) -> Result<Result<(), ServiceError>, tokio::time::error::Elapsed> {
    if let Some(task) = lock(&surfaces.listens).remove(&(server, uri.to_string())) {
        task.abort();
        return Ok(Ok(()));
    }
    tokio::time::timeout(
        SURFACE_TIMEOUT,
        peer.unsubscribe(UnsubscribeRequestParams::new(uri.to_string())),
    )
    .await
}

impl Surfaces {
    /// A session's client is known (it initialized).
    pub(crate) fn register_client(&self, session: &str, client: Peer<RoleServer>) {
        lock(&self.clients).insert(session.to_string(), client);
    }

    /// A session closed: it leaves the client list and its subscriptions;
    /// a URI no session subscribes to any more is unsubscribed downstream.
    pub(crate) async fn session_closed(
        self: Arc<Self>,
        session: String,
        servers: Vec<Arc<Downstream>>,
    ) {
        lock(&self.clients).remove(&session);
        let mut subs = self.subscriptions.lock().await;
        let mut emptied = Vec::new();
        subs.retain(|key, sessions| {
            if sessions.remove(&session).is_some() && sessions.is_empty() {
                emptied.push(key.clone());
                return false;
            }
            true
        });
        for (server, uri) in emptied {
            if let Some(peer) = servers.get(server).and_then(|s| s.peer()) {
                tracing::debug!(%uri, "last subscriber closed its session: unsubscribing downstream");
                let r = unsubscribe_down(&self, server, &peer, &uri).await;
                if !matches!(r, Ok(Ok(()))) {
                    tracing::debug!("downstream resources/unsubscribe failed");
                }
            }
        }
    }

    /// Relays a downstream `notifications/resources/updated` to the sessions
    /// subscribed to that URI on that server.
    pub(crate) async fn resource_updated(
        &self,
        server: usize,
        params: ResourceUpdatedNotificationParam,
    ) {
        let to: Vec<Peer<RoleServer>> = {
            let subs = self.subscriptions.lock().await;
            subs.get(&(server, params.uri.clone()))
                .map(|s| s.values().cloned().collect())
                .unwrap_or_default()
        };
        tracing::debug!(uri = %params.uri, sessions = to.len(), "resource updated");
        for client in to {
            if let Err(e) = client.notify_resource_updated(params.clone()).await {
                tracing::debug!("cannot relay notifications/resources/updated: {e}");
            }
        }
    }

    fn all_clients(&self) -> Vec<Peer<RoleServer>> {
        lock(&self.clients).values().cloned().collect()
    }

    /// Relays a downstream `notifications/resources/list_changed` to every session.
    pub(crate) async fn resource_list_changed(&self) {
        for client in self.all_clients() {
            if let Err(e) = client.notify_resource_list_changed().await {
                tracing::debug!("cannot relay notifications/resources/list_changed: {e}");
            }
        }
    }

    /// Relays a downstream `notifications/prompts/list_changed` to every session.
    pub(crate) async fn prompt_list_changed(&self) {
        for client in self.all_clients() {
            if let Err(e) = client.notify_prompt_list_changed().await {
                tracing::debug!("cannot relay notifications/prompts/list_changed: {e}");
            }
        }
    }

    /// A server is up on a new connection (started, restarted, reconnected):
    /// its subscriptions are made again, and the sessions open are told
    /// that the resources and prompts it serves may have changed.
    pub(crate) async fn server_up(
        self: Arc<Self>,
        server: usize,
        peer: Peer<RoleClient>,
        caps: Option<ServerCapabilities>,
    ) {
        self.clone().resubscribe(server, &peer).await;
        let caps = caps.unwrap_or_default();
        if caps.resources.is_some() {
            self.resource_list_changed().await;
        }
        if caps.prompts.is_some() {
            self.prompt_list_changed().await;
        }
    }

    /// Makes the subscriptions of `server` again on its new connection.
    async fn resubscribe(self: Arc<Self>, server: usize, peer: &Peer<RoleClient>) {
        let subs = self.subscriptions.lock().await;
        for (s, uri) in subs.keys() {
            if *s != server {
                continue;
            }
            let r = subscribe_down(&self, server, peer, uri).await;
            if !matches!(r, Ok(Ok(()))) {
                tracing::warn!(%uri, "cannot renew the subscription on the new connection");
            }
        }
    }

    /// The server of a URI: listed by one, or matching one's template.
    fn owner(&self, uri: &str) -> Option<usize> {
        if let Some(&i) = lock(&self.resources).get(uri) {
            return Some(i);
        }
        lock(&self.templates)
            .iter()
            .find(|(_, ts)| ts.iter().any(|t| template_matches(t, uri)))
            .map(|(&i, _)| i)
    }
}

/// Adds to `caps` what the downstream servers declared: `resources`,
/// `prompts`, `completions` (each when a server has it), and `logging`.
pub(crate) fn add_capabilities(inner: &Inner, caps: &mut ServerCapabilities) {
    for c in inner.servers.iter().filter_map(|s| s.capabilities()) {
        if let Some(r) = &c.resources {
            let mine = caps
                .resources
                .get_or_insert_with(ResourcesCapability::default);
            if r.subscribe == Some(true) {
                mine.subscribe = Some(true);
            }
            // the proxy announces a changed list itself when a server
            // comes up on a new connection ([`Surfaces::server_up`])
            mine.list_changed = Some(true);
        }
        if c.prompts.is_some() {
            let mine = caps.prompts.get_or_insert_with(Default::default);
            mine.list_changed = Some(true);
        }
        if c.completions.is_some() {
            caps.completions = Some(JsonObject::new());
        }
    }
    caps.logging = Some(JsonObject::new());
}

/// Whether `uri` matches the RFC 6570 URI template `template` (levels 1 to
/// 3: `{x}`, `{+x}`, `{#x}`, `{.x}`, `{/x}`, `{;x}`, `{?x}`, `{&x}`).
pub(crate) fn template_matches(template: &str, uri: &str) -> bool {
    let mut re = String::from("^");
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        re.push_str(&regex::escape(&rest[..open]));
        let Some(close) = rest[open..].find('}') else {
            return false;
        };
        let expr = &rest[open + 1..open + close];
        re.push_str(match expr.chars().next() {
            Some('+') | Some('#') => "(?:#?.*)",
            Some('.') => r"(?:\.[^/?#]*)*",
            Some('/') => "(?:/[^/?#]*)*",
            Some(';') => "(?:;[^/?#]*)*",
            Some('?') | Some('&') => r"(?:[?&][^#]*)?",
            _ => "[^/?#]*",
        });
        rest = &rest[open + close + 1..];
    }
    re.push_str(&regex::escape(rest));
    re.push('$');
    regex::Regex::new(&re).is_ok_and(|r| r.is_match(uri))
}

/// The answer of a forwarded request, or the JSON-RPC error to give: the
/// server's own error unchanged; a transport failure or a timeout as an
/// internal error naming the server.
fn forwarded<T>(
    server: &Downstream,
    method: &str,
    r: Result<Result<T, ServiceError>, tokio::time::error::Elapsed>,
) -> Result<T, McpError> {
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(ServiceError::McpError(e))) => Err(e),
        Ok(Err(e)) => {
            server.connection_failed();
            Err(McpError::internal_error(
                format!("{method} on server `{}` failed: {e}", server.spec.name),
                None,
            ))
        }
        Err(_) => Err(McpError::internal_error(
            format!(
                "server `{}` gave no answer to {method} within {} s",
                server.spec.name,
                SURFACE_TIMEOUT.as_secs()
            ),
            None,
        )),
    }
}

fn no_cursor(request: &Option<PaginatedRequestParams>) -> Result<(), McpError> {
    match request.as_ref().and_then(|r| r.cursor.as_ref()) {
        Some(c) => Err(McpError::invalid_params(
            format!("toolgate lists everything in one page; `{c}` is not a cursor it gave"),
            None,
        )),
        None => Ok(()),
    }
}

fn not_served(method: &str, what: &str) -> McpError {
    McpError::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{method}: no server behind toolgate declares the `{what}` capability"),
        None,
    )
}

impl ProxySession {
    fn surfaces(&self) -> &Surfaces {
        &self.inner.surfaces
    }

    /// The servers up now whose capabilities satisfy `has`.
    fn serving(&self, has: fn(&ServerCapabilities) -> bool) -> Vec<(usize, Peer<RoleClient>)> {
        self.inner
            .servers
            .iter()
            .filter(|s| s.capabilities().is_some_and(|c| has(&c)))
            .filter_map(|s| s.peer().map(|p| (s.index, p)))
            .collect()
    }

    fn declared(&self, has: fn(&ServerCapabilities) -> bool) -> bool {
        self.inner
            .servers
            .iter()
            .any(|s| s.capabilities().is_some_and(|c| has(&c)))
    }

    /// Lists every server's resources; stores the URI routes.
    async fn collect_resources(&self) -> Vec<Resource> {
        let mut out = Vec::new();
        for (i, peer) in self.serving(|c| c.resources.is_some()) {
            let ds = &self.inner.servers[i];
            let r = tokio::time::timeout(SURFACE_TIMEOUT, peer.list_all_resources()).await;
            match forwarded(ds, "resources/list", r) {
                Ok(list) => {
                    let mut routes = lock(&self.surfaces().resources);
                    routes.retain(|_, s| *s != i);
                    for res in list {
                        match routes.get(&res.uri) {
                            Some(&other) if other != i => tracing::warn!(
                                uri = %res.uri,
                                "servers `{}` and `{}` both list this resource; `{}` serves it",
                                self.inner.servers[other].spec.name,
                                ds.spec.name,
                                self.inner.servers[other].spec.name
                            ),
                            _ => {
                                routes.insert(res.uri.clone(), i);
                                out.push(res);
                            }
                        }
                    }
                }
                Err(e) => tracing::warn!(server = %ds.spec.name, "resources/list: {}", e.message),
            }
        }
        out
    }

    /// Lists every server's resource templates; stores them for routing.
    async fn collect_templates(&self) -> Vec<ResourceTemplate> {
        let mut out = Vec::new();
        for (i, peer) in self.serving(|c| c.resources.is_some()) {
            let ds = &self.inner.servers[i];
            let r = tokio::time::timeout(SURFACE_TIMEOUT, peer.list_all_resource_templates()).await;
            match forwarded(ds, "resources/templates/list", r) {
                Ok(list) => {
                    let uris = list.iter().map(|t| t.uri_template.clone()).collect();
                    lock(&self.surfaces().templates).insert(i, uris);
                    out.extend(list);
                }
                Err(e) => tracing::warn!(
                    server = %ds.spec.name,
                    "resources/templates/list: {}",
                    e.message
                ),
            }
        }
        out
    }

    /// `resources/list`: every server's resources, one page.
    pub(crate) async fn list_all_resources(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListResourcesResult, McpError> {
        self.inner.wait_ready().await;
        no_cursor(&request)?;
        if !self.declared(|c| c.resources.is_some()) {
            return Err(not_served("resources/list", "resources"));
        }
        Ok(ListResourcesResult::with_all_items(
            self.collect_resources().await,
        ))
    }

    /// `resources/templates/list`: every server's templates, one page.
    pub(crate) async fn list_all_templates(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.inner.wait_ready().await;
        no_cursor(&request)?;
        if !self.declared(|c| c.resources.is_some()) {
            return Err(not_served("resources/templates/list", "resources"));
        }
        Ok(ListResourceTemplatesResult::with_all_items(
            self.collect_templates().await,
        ))
    }

    /// The server a URI goes to (see the module docs), and its connection.
    async fn route_resource(&self, uri: &str) -> Result<(usize, Peer<RoleClient>), McpError> {
        self.inner.wait_ready().await;
        let serving = self.serving(|c| c.resources.is_some());
        let mut owner = self.surfaces().owner(uri);
        if owner.is_none() && serving.len() != 1 {
            self.collect_resources().await;
            self.collect_templates().await;
            owner = self.surfaces().owner(uri);
        }
        let owner = match owner {
            Some(i) => i,
            None if serving.len() == 1 => serving[0].0,
            None => {
                let names: Vec<&str> = self
                    .inner
                    .servers
                    .iter()
                    .filter(|s| s.capabilities().is_some_and(|c| c.resources.is_some()))
                    .map(|s| s.spec.name.as_str())
                    .collect();
                return Err(McpError::resource_not_found(
                    format!(
                        "no server behind toolgate lists the resource `{uri}` or a template matching it (servers with resources: {})",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    ),
                    Some(serde_json::json!({ "uri": uri })),
                ));
            }
        };
        let ds = &self.inner.servers[owner];
        match ds.peer() {
            Some(p) => Ok((owner, p)),
            None => Err(McpError::internal_error(ds.unavailable_message(), None)),
        }
    }

    /// `resources/read`, routed; audited.
    pub(crate) async fn read_routed(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, McpError> {
        let time = unix_now();
        let t0 = Instant::now();
        let uri = params.uri.clone();
        let routed = self.route_resource(&uri).await;
        let (server, result) = match routed {
            Ok((i, peer)) => {
                let ds = &self.inner.servers[i];
                let r =
                    tokio::time::timeout(SURFACE_TIMEOUT, peer.read_resource_once(params)).await;
                (
                    Some(ds.spec.name.clone()),
                    forwarded(ds, "resources/read", r),
                )
            }
            Err(e) => (None, Err(e)),
        };
        self.record(AuditRecord {
            time,
            session: self.session.id.clone(),
            tool: uri,
            name: None,
            server: server.clone(),
            via: Some("resources/read".into()),
            decision: "none",
            confirmed: None,
            latency_ms: t0.elapsed().as_secs_f64() * 1000.0,
            outcome: match &result {
                Ok(_) => Outcome::Ok,
                Err(_) if server.is_none() => Outcome::Unavailable,
                Err(_) => Outcome::RpcError,
            },
            attempts: u32::from(server.is_some()),
            detail: result.as_ref().err().map(|e| e.message.to_string()),
            trace_id: None,
            flow: Default::default(),
        });
        result
    }

    /// `resources/subscribe`: kept per session; the first subscriber of a
    /// URI subscribes downstream.
    pub(crate) async fn subscribe_routed(&self, uri: String) -> Result<(), McpError> {
        let Some(client) = self.session.client.get().cloned() else {
            return Err(McpError::internal_error(
                "the session has not initialized",
                None,
            ));
        };
        let (i, peer) = self.route_resource(&uri).await?;
        let mut subs = self.surfaces().subscriptions.lock().await;
        let key = (i, uri.clone());
        if !subs.contains_key(&key) {
            let r = subscribe_down(&self.inner.surfaces, i, &peer, &uri).await;
            forwarded(&self.inner.servers[i], "resources/subscribe", r)?;
        }
        subs.entry(key)
            .or_default()
            .insert(self.session.id.clone(), client);
        Ok(())
    }

    /// `resources/unsubscribe`: the last subscriber of a URI unsubscribes
    /// downstream; a URI the session did not subscribe to is no error.
    pub(crate) async fn unsubscribe_routed(&self, uri: String) -> Result<(), McpError> {
        let mut subs = self.surfaces().subscriptions.lock().await;
        let key = subs
            .keys()
            .find(|(_, u)| *u == uri)
            .filter(|k| subs[*k].contains_key(&self.session.id))
            .cloned();
        let Some(key) = key else {
            return Ok(());
        };
        let sessions = subs.get_mut(&key).expect("found above");
        sessions.remove(&self.session.id);
        if sessions.is_empty() {
            subs.remove(&key);
            let ds = &self.inner.servers[key.0];
            if let Some(peer) = ds.peer() {
                let r = unsubscribe_down(self.surfaces(), key.0, &peer, &uri).await;
                forwarded(ds, "resources/unsubscribe", r)?;
            }
        }
        Ok(())
    }

    /// Lists every server's prompts under exposed names; stores the routes.
    async fn collect_prompts(&self) -> Vec<Prompt> {
        let mut raw: Vec<(usize, Prompt)> = Vec::new();
        let mut answered = Vec::new();
        for (i, peer) in self.serving(|c| c.prompts.is_some()) {
            let ds = &self.inner.servers[i];
            let r = tokio::time::timeout(SURFACE_TIMEOUT, peer.list_all_prompts()).await;
            match forwarded(ds, "prompts/list", r) {
                Ok(list) => {
                    answered.push(i);
                    raw.extend(list.into_iter().map(|p| (i, p)));
                }
                Err(e) => tracing::warn!(server = %ds.spec.name, "prompts/list: {}", e.message),
            }
        }
        let pairs: Vec<(&str, &str)> = raw
            .iter()
            .map(|(i, p)| (self.inner.servers[*i].spec.name.as_str(), p.name.as_str()))
            .collect();
        let (names, warnings) = super::names::assign(&self.inner.config.name_format, &pairs, &[]);
        for w in warnings {
            tracing::warn!("prompts: {w}");
        }
        let mut routes = lock(&self.surfaces().prompts);
        routes.retain(|_, (s, _)| !answered.contains(s));
        raw.into_iter()
            .zip(names)
            .map(|((i, mut p), name)| {
                routes.insert(name.clone(), (i, std::mem::replace(&mut p.name, name)));
                p
            })
            .collect()
    }

    /// `prompts/list`: every server's prompts, one page.
    pub(crate) async fn list_all_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListPromptsResult, McpError> {
        self.inner.wait_ready().await;
        no_cursor(&request)?;
        if !self.declared(|c| c.prompts.is_some()) {
            return Err(not_served("prompts/list", "prompts"));
        }
        Ok(ListPromptsResult::with_all_items(
            self.collect_prompts().await,
        ))
    }

    /// The server and downstream name of an exposed prompt name.
    async fn route_prompt(&self, name: &str) -> Result<(usize, String), McpError> {
        self.inner.wait_ready().await;
        let found = lock(&self.surfaces().prompts).get(name).cloned();
        let found = match found {
            Some(f) => Some(f),
            None => {
                self.collect_prompts().await;
                lock(&self.surfaces().prompts).get(name).cloned()
            }
        };
        found.ok_or_else(|| {
            McpError::invalid_params(
                format!("unknown prompt `{name}`: prompts/list lists the prompts toolgate serves"),
                None,
            )
        })
    }

    fn peer_of(&self, i: usize) -> Result<Peer<RoleClient>, McpError> {
        let ds = &self.inner.servers[i];
        ds.peer()
            .ok_or_else(|| McpError::internal_error(ds.unavailable_message(), None))
    }

    /// `prompts/get`, routed by exposed name.
    pub(crate) async fn get_routed(
        &self,
        mut params: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, McpError> {
        let (i, name) = self.route_prompt(&params.name).await?;
        let peer = self.peer_of(i)?;
        params.name = name;
        let r = tokio::time::timeout(SURFACE_TIMEOUT, peer.get_prompt_once(params)).await;
        forwarded(&self.inner.servers[i], "prompts/get", r)
    }

    /// `completion/complete`, routed to the server of the prompt or the
    /// resource template; empty when that server offers no completions.
    pub(crate) async fn complete_routed(
        &self,
        mut params: CompleteRequestParams,
    ) -> Result<CompleteResult, McpError> {
        let i = match &mut params.r#ref {
            Reference::Prompt(p) => {
                let (i, name) = self.route_prompt(&p.name).await?;
                p.name = name;
                i
            }
            Reference::Resource(r) => {
                self.inner.wait_ready().await;
                let find = |s: &Surfaces| {
                    let listed = lock(&s.templates)
                        .iter()
                        .find(|(_, ts)| ts.contains(&r.uri))
                        .map(|(&i, _)| i);
                    listed.or_else(|| s.owner(&r.uri))
                };
                let mut found = find(self.surfaces());
                if found.is_none() {
                    self.collect_templates().await;
                    found = find(self.surfaces());
                }
                found.ok_or_else(|| {
                    McpError::invalid_params(
                        format!(
                            "unknown resource template `{}`: resources/templates/list lists the templates toolgate serves",
                            r.uri
                        ),
                        None,
                    )
                })?
            }
            _ => {
                return Err(McpError::invalid_params(
                    "completion/complete: unknown kind of reference",
                    None,
                ));
            }
        };
        let ds = &self.inner.servers[i];
        if ds.capabilities().is_none_or(|c| c.completions.is_none()) {
            return Ok(CompleteResult::default());
        }
        let peer = self.peer_of(i)?;
        let r = tokio::time::timeout(SURFACE_TIMEOUT, peer.complete(params)).await;
        forwarded(ds, "completion/complete", r)
    }

    /// `logging/setLevel`: stored in the session.
    pub(crate) fn set_log_level(&self, params: SetLevelRequestParams) {
        tracing::debug!(session = %self.session.id, level = ?params.level, "logging/setLevel");
        lock(&self.session.state).log_level = Some(params.level);
    }
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn uri_templates_match_as_rfc_6570_expands_them() {
        assert!(template_matches(
            "test://template/{id}/data",
            "test://template/123/data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://template/1/2/data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://other/1/data"
        ));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches(
            "db://{table}{?limit,offset}",
            "db://users?limit=3"
        ));
        assert!(template_matches(
            "db://{table}{?limit,offset}",
            "db://users"
        ));
        assert!(
            template_matches("x://a.b/{id}", "x://a.b/7"),
            "literals are escaped"
        );
        assert!(!template_matches("x://a.b/{id}", "x://aXb/7"));
        assert!(!template_matches("x://{id", "x://1"), "malformed: no match");
    }
}
