//! The `tools/call` path: resolve the name (exposed or catalog), withhold
//! tools whose definition changed, put the call to the [`CallGate`](super::gate::CallGate)
//! (confirming through elicitation when it asks), enforce
//! `allow_inactive_calls`, forward with the policy's time limit and retries,
//! learn from the call, and audit it. A direct `tools/call` and the
//! call-through tool (`toolgate__call_tool`) share this one path.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, JsonObject, ProgressToken, RequestParamsMeta,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext, RoleServer, ServiceError};
use serde_json::{Map, Value, json};

use crate::parse::discovery::DefinitionChange;
use crate::plan::Plan;

use super::audit::{AuditRecord, Outcome};
use super::catalog::Catalog;
use super::downstream::{Downstream, Status};
use super::gate::Decision;
use super::handler::ProxySession;
use super::mrtr::{self, Retry};
use super::proxy::{
    CALL_CONSISTENCY_WAIT, DEFAULT_TIMEOUT_SECONDS, lock, metas, tool_error, unix_now,
};

/// The policy's per-call limits for `tool`: (timeout, retries, whether a
/// timed-out attempt is retried), from `[gate.execution]` with the tool
/// tags' `timeout_seconds` / `max_retries` overrides (the call gate's
/// `ExecSettings`; seed 002). Without a `[gate]` table a timeout is not
/// retried: the attempt may still be running downstream.
pub(crate) fn call_limits(plan: &Plan, tool: usize) -> (Duration, u32, bool) {
    let t = &plan.tools[tool].gate;
    match plan.gate.as_ref() {
        Some(g) => {
            let s = crate::gate::exec::ExecSettings::for_tool(&g.config.execution, Some(t));
            (s.timeout, s.max_retries, s.retry_timeouts)
        }
        None => {
            let secs = t
                .timeout_seconds
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
            (
                Duration::from_secs_f64(secs),
                t.max_retries.unwrap_or(0),
                false,
            )
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

/// What a retry of a downstream server's `InputRequiredResult` sends back
/// to it (SEP-2322): the client's answers and the server's own state.
pub(crate) struct DownstreamRetry {
    pub(crate) input_responses: Option<rmcp::model::InputResponses>,
    pub(crate) request_state: Option<String>,
}

pub(crate) struct CallEnd {
    pub(crate) response: Result<CallToolResponse, McpError>,
    pub(crate) outcome: Outcome,
    pub(crate) attempts: u32,
    pub(crate) detail: Option<String>,
}

/// What the audit needs to know of a call besides how it ended.
pub(crate) struct CallFacts {
    /// Catalog name when resolved, else the name as called.
    pub tool: String,
    /// The exposed name when resolved.
    pub name: Option<String>,
    pub server: Option<String>,
    pub decision: &'static str,
    pub confirmed: Option<bool>,
    /// The call's flow labels and the flow rules it completed.
    pub flow: crate::gate::flow::FlowAudit,
}

impl CallFacts {
    /// Facts of a call of `tool` as called: the name is clipped
    /// ([`crate::diag::echo`]) so an audit line stays bounded.
    fn new(tool: &str) -> Self {
        CallFacts {
            tool: crate::diag::echo(tool).into_owned(),
            name: None,
            server: None,
            decision: "none",
            confirmed: None,
            flow: Default::default(),
        }
    }
}

/// Rewrites every `` `catalog.name` `` of `text` to `` `exposed_name` ``, so
/// that what the model reads names tools the way it must call them.
pub(crate) fn to_exposed(cat: &Catalog, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(a) = rest.find('`') {
        let Some(b) = rest[a + 1..].find('`') else {
            break;
        };
        let inner = &rest[a + 1..a + 1 + b];
        out.push_str(&rest[..a + 1]);
        match cat.plan.tool_index(inner) {
            Some(i) => out.push_str(cat.exposed(i)),
            None => out.push_str(inner),
        }
        out.push('`');
        rest = &rest[a + b + 2..];
    }
    out.push_str(rest);
    out
}

/// At most this many characters of a call's arguments (pretty-printed JSON)
/// are shown in the confirmation dialog (`elicitation/create` message):
/// 4,000. The rest is counted ("… N more characters") and the dialog says
/// the arguments were cut, so the user knows the call carries more than is
/// shown (attack report 2, item 9: a 200 KB argument made a 200,425-character
/// dialog).
pub const MAX_CONFIRM_ARGS_CHARS: usize = 4000;

/// At most this many characters of the gate's reason are shown in the
/// confirmation dialog: 2,000.
pub const MAX_CONFIRM_REASON_CHARS: usize = 2000;

/// The confirmation dialog's message for a call of `tool` (the name shown to
/// the client) with `args`, asked because of `reason`: the arguments as
/// pretty-printed JSON, cut at [`MAX_CONFIRM_ARGS_CHARS`] characters (and
/// the reason at [`MAX_CONFIRM_REASON_CHARS`]) with a note saying so.
pub fn confirm_message(tool: &str, args: &Value, reason: &str) -> String {
    let pretty = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
    let total = pretty.chars().count();
    let shown = crate::diag::clip_chars(&pretty, MAX_CONFIRM_ARGS_CHARS);
    let note = if total > MAX_CONFIRM_ARGS_CHARS {
        format!(
            "\n\n(The arguments are cut: the first {MAX_CONFIRM_ARGS_CHARS} of {total} characters are shown; the call carries all of them.)"
        )
    } else {
        String::new()
    };
    let reason = crate::diag::clip_chars(reason, MAX_CONFIRM_REASON_CHARS);
    format!(
        "toolgate: the agent wants to call `{tool}`.\n\nArguments:\n{shown}{note}\n\nConfirmation is required: {reason}"
    )
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

impl ProxySession {
    /// Asks the user, through elicitation, to confirm; `Ok(true)` only on
    /// accept with the box ticked.
    async fn elicit_confirm(
        &self,
        peer: &Peer<RoleServer>,
        message: String,
        title: String,
        reason: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<bool, String> {
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "confirm": {
                    "type": "boolean",
                    "title": title,
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

    /// Audits that the user trusted the changed definition of `tool`
    /// (`scope`: where the trust applies).
    fn record_accepted(&self, tool: &str, facts: &CallFacts, scope: &str) {
        self.record(AuditRecord {
            time: unix_now(),
            session: self.session.id.clone(),
            tool: tool.to_string(),
            name: facts.name.clone(),
            server: facts.server.clone(),
            via: None,
            decision: "ask",
            confirmed: Some(true),
            latency_ms: 0.0,
            outcome: Outcome::DefinitionAccepted,
            attempts: 0,
            detail: Some(format!(
                "the user accepted the new definition of `{tool}` ({scope})"
            )),
            trace_id: None,
            flow: Default::default(),
        });
    }

    /// The first round of a modern confirmation of `q`: an
    /// `InputRequiredResult` (audited as `input_required`; see
    /// [`super::mrtr`]).
    fn ask_by_mrtr(&self, q: mrtr::Question<'_>) -> CallEnd {
        let detail = format!("asked the user ({}): {}", q.kind, q.reason);
        match mrtr::ask(&self.inner.stateless, q) {
            Ok(ir) => CallEnd {
                response: Ok(CallToolResponse::InputRequired(ir)),
                outcome: Outcome::InputRequired,
                attempts: 0,
                detail: Some(detail),
            },
            Err(e) => CallEnd::refused(Outcome::ConfirmationRequired, e),
        }
    }

    async fn confirm(
        &self,
        peer: &Peer<RoleServer>,
        tool: &str,
        args: &Value,
        reason: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<bool, String> {
        let message = confirm_message(tool, args, reason);
        let reason = crate::diag::clip_chars(reason, MAX_CONFIRM_REASON_CHARS);
        self.elicit_confirm(peer, message, format!("Run {tool}?"), &reason, context)
            .await
    }

    /// Forwards an allowed call to `server` (tool `bare` there, `tool` as
    /// shown to the client) with the time limit and retries of `limits`,
    /// relaying progress to the client's `progress` token if it gave one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn forward(
        &self,
        server: &Arc<Downstream>,
        tool: &str,
        bare: &str,
        args: Value,
        limits: (Duration, u32, bool),
        progress: Option<ProgressToken>,
        context: &RequestContext<RoleServer>,
        retry: Option<DownstreamRetry>,
    ) -> CallEnd {
        let (timeout, retries, retry_timeouts) = limits;
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
            let mut params =
                CallToolRequestParams::new(bare.to_string()).with_arguments(args.clone());
            if let Some(r) = &retry {
                params.input_responses = r.input_responses.clone();
                params.request_state = r.request_state.clone();
            }
            super::trace::inject(&mut params.meta);
            let call = async {
                match &progress {
                    // the client asked for progress: relay the server's to it
                    Some(t) => {
                        server
                            .call_relaying_progress(&peer, params, context.peer.clone(), t.clone())
                            .await
                    }
                    // a modern client's capabilities travel down, so that a
                    // modern server asks only for what the client can answer
                    None => match context
                        .client_capabilities()
                        .filter(|_| super::stateless::is_modern(context))
                    {
                        Some(caps) => server.call_as_client(&peer, params, caps).await,
                        None => peer.call_tool_once(params).await,
                    },
                }
            };
            let r = tokio::select! {
                r = tokio::time::timeout(timeout, call) => r,
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
                Ok(Err(e)) => {
                    server.connection_failed();
                    (
                        format!(
                            "server `{}` failed during the call of `{tool}`: {e}",
                            server.spec.name
                        ),
                        Outcome::Unavailable,
                    )
                }
                Err(_) => (
                    format!(
                        "`{tool}` gave no answer within {:.1} s",
                        timeout.as_secs_f64()
                    ),
                    Outcome::Timeout,
                ),
            };
            // `[gate.execution] retry_timeouts = false`: a timed-out attempt
            // may still be running downstream, so it is not sent again
            if attempts > retries || (outcome == Outcome::Timeout && !retry_timeouts) {
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

    /// Handles one call of a downstream tool (a direct `tools/call`, or the
    /// inner call of the call-through tool).
    pub(crate) async fn handle_call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> (CallEnd, CallFacts) {
        let inner = &self.inner;
        let called = request.name.to_string();
        // the client's progressToken (rmcp may lift `_meta` into the context)
        let progress = request
            .progress_token()
            .or_else(|| context.meta.get_progress_token());
        let mut facts = CallFacts::new(&called);
        // The server, from the name's prefix, for a catalog that is not ready yet.
        let server = inner
            .servers
            .iter()
            .find(|d| {
                let exposed_prefix = inner.config.name_format.base_name(&d.spec.name, "");
                called.starts_with(&format!("{}.", d.spec.name))
                    || (!exposed_prefix.is_empty()
                        && inner.config.name_format.template().starts_with("{server}")
                        && called.starts_with(exposed_prefix.as_str()))
            })
            .cloned();
        facts.server = server.as_ref().map(|s| s.spec.name.clone());
        let cat = match inner
            .catalog_for(server.as_ref().map(|s| s.index), CALL_CONSISTENCY_WAIT)
            .await
        {
            Ok(c) => c,
            Err(e) => {
                let end = CallEnd {
                    response: Err(e),
                    outcome: Outcome::Unavailable,
                    attempts: 0,
                    detail: Some("no catalog".into()),
                };
                return (end, facts);
            }
        };
        if let Err(e) = self.apply_meta(
            &metas(context, request.meta.as_ref().map(|m| &m.0.0)),
            &cat.plan,
        ) {
            let detail = Some(e.message.to_string());
            let end = CallEnd {
                response: Err(e),
                outcome: Outcome::RpcError,
                attempts: 0,
                detail,
            };
            return (end, facts);
        }
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let route = cat.route(&called).map(|(i, r)| (i, r.clone()));
        if let Some((i, r)) = &route {
            facts.tool = cat.catalog_name(*i).to_string();
            facts.name = Some(cat.exposed(*i).to_string());
            facts.server = Some(inner.servers[r.server].spec.name.clone());
        }
        let tool = facts.tool.clone();
        let shown = facts
            .name
            .clone()
            .unwrap_or_else(|| crate::diag::echo(&called).into_owned());
        // A modern client's retry (SEP-2322): its requestState must open
        // for this tool and these arguments, unexpired and unused.
        let modern = super::stateless::is_modern(context);
        let retry = if modern {
            mrtr::verify(&inner.stateless, &request, &tool, &args)
        } else {
            Retry::First
        };
        // A state that fails verification is the client's error, not the
        // model's: a JSON-RPC invalid-params error (-32602), as the
        // revision's MRTR error handling asks of protocol errors.
        if let Retry::Refused(e) = &retry {
            facts.decision = "deny";
            let msg = format!("`{shown}`: {}", super::stateless::refusal(e, "confirm"));
            let end = CallEnd {
                response: Err(McpError::invalid_params(msg.clone(), None)),
                outcome: Outcome::StateRefused,
                attempts: 0,
                detail: Some(msg),
            };
            return (end, facts);
        }
        let pending = match &retry {
            Retry::Valid(p) => Some(p.clone()),
            _ => None,
        };
        // a changed definition the user trusted in an earlier round of
        // this call (carried by the state: see PendingCall::trusted)
        let mut trusted = pending.as_ref().and_then(|p| p.trusted.clone());
        // A server whose tools are not known (never listed, down): say so
        // rather than "unknown tool".
        if route.is_none()
            && let Some(s) = &server
            && !matches!(s.status(), Status::Up { .. })
        {
            let msg = format!("cannot call `{called}`: {}", s.unavailable_message());
            return (CallEnd::refused(Outcome::Unavailable, msg), facts);
        }
        // Integers beyond the 64-bit range in the arguments' text: the parsed
        // arguments hold rounded floats, so the call would not carry the
        // values sent (fail closed; see gate::numbers).
        if let Some(inexact) = context.extensions.get::<super::stdio::InexactArguments>() {
            let msg = inexact_refusal(&called, &inexact.0);
            facts.decision = "deny";
            if let Some(shadow) = inner.shadow.get() {
                shadow.refused_alike("integers beyond 64 bits");
            }
            return (CallEnd::refused(Outcome::Denied, msg), facts);
        }
        // A tool the server listed with an invalid definition is withheld:
        // it is not callable, and the refusal says why (fail closed).
        if route.is_none()
            && let Some(s) = &server
            && let Some(bad) = s.invalid_tools().into_iter().find(|b| {
                b.name.as_deref().is_some_and(|n| {
                    called == format!("{}.{n}", s.spec.name)
                        || called == inner.config.name_format.base_name(&s.spec.name, n)
                })
            })
        {
            let msg = format!(
                "`{called}` is withheld by the proxy and cannot be called: server `{}` lists it with an invalid definition ({}); its other tools are served",
                s.spec.name, bad.reason
            );
            facts.decision = "deny";
            if let Some(shadow) = inner.shadow.get() {
                shadow.refused_alike("an invalid tool definition");
            }
            return (CallEnd::refused(Outcome::Denied, msg), facts);
        }
        // Whether the shadow policy's decision of this call is made already
        // (before the gate), so that the gate's is not compared again.
        let mut shadow_done = false;
        // A changed definition: withheld until confirmed, or never exposed.
        let withheld = route
            .as_ref()
            .is_some_and(|(i, _)| inner.is_withheld(&lock(&self.session.state), &cat, *i));
        if let Some((i, _)) = &route
            && withheld
        {
            let i = *i;
            let pinned = inner.pins.pin(&tool);
            let reason = format!(
                "the definition of `{shown}` (description or inputSchema) changed since it was first seen{}",
                pinned
                    .map(|p| format!("; it was: \"{}\"", p.description))
                    .unwrap_or_default()
            );
            facts.decision = cat.discovery.on_definition_change.label();
            if let Some(shadow) = inner.shadow.get() {
                let (st, id) = (&self.session.state, &self.session.id);
                shadow_done = shadow.definition(st, id, &tool, facts.decision);
            }
            if cat.discovery.on_definition_change == DefinitionChange::Deny {
                let msg = format!(
                    "`{shown}` is not available: {reason}, and the policy never exposes a changed tool ([discovery] on_definition_change = \"deny\")"
                );
                return (CallEnd::refused(Outcome::Denied, msg), facts);
            }
            let peer = &context.peer;
            let can_ask = if modern {
                super::stateless::modern_elicits_form(context)
            } else {
                peer.supported_elicitation_modes()
                    .contains(&ElicitationMode::Form)
            };
            // the answer of a modern retry to this very question
            let answered = if trusted.as_ref() == Some(&cat.hashes[i]) {
                Some(true)
            } else {
                pending
                    .as_ref()
                    .filter(|p| p.kind == "definition" && p.hash.as_ref() == Some(&cat.hashes[i]))
                    .and_then(|_| mrtr::answer(&request))
            };
            if !can_ask && answered.is_none() {
                let msg = format!(
                    "`{shown}` is withheld: {reason}. The user must confirm the new definition, and this client cannot ask (no elicitation capability); the call was not made"
                );
                return (CallEnd::refused(Outcome::ConfirmationRequired, msg), facts);
            }
            let now_desc = cat.tools[i].description.as_deref().unwrap_or_default();
            let message = format!(
                "toolgate: the MCP server changed the tool `{shown}` since it was first seen.\n\nDescription now:\n{now_desc}\n\nInput schema now:\n{}\n\nTrust the new definition and let the call go on?",
                serde_json::to_string_pretty(&*cat.tools[i].input_schema).unwrap_or_default()
            );
            let title = format!("Trust the new {shown}?");
            let ok = if modern {
                match answered {
                    Some(a) => Ok(a),
                    None => {
                        let end = self.ask_by_mrtr(mrtr::Question {
                            kind: "definition",
                            tool: &tool,
                            args: &args,
                            message,
                            title,
                            reason: &reason,
                            hash: Some(cat.hashes[i].clone()),
                            trusted: None,
                        });
                        return (end, facts);
                    }
                }
            } else {
                self.elicit_confirm(peer, message, title, &reason, context)
                    .await
            };
            if ok != Ok(true) {
                facts.confirmed = Some(false);
                let msg = format!(
                    "`{shown}` stays withheld: the user did not confirm its new definition ({reason}); the call was not made"
                );
                return (CallEnd::refused(Outcome::Declined, msg), facts);
            }
            let earlier = trusted.as_ref() == Some(&cat.hashes[i]);
            trusted = Some(cat.hashes[i].clone());
            let scope = if earlier {
                // trusted in an earlier round of this call: audited then
                "trusted in an earlier round of this call"
            } else if self.session.shared_pins {
                // the only client: its user's confirmation is the new pin
                inner.pins.accept(&tool, &cat.hashes[i], now_desc);
                inner.refresh_withheld(&cat);
                "the new pin"
            } else {
                // one of many clients: trusted in this session only
                lock(&self.session.state)
                    .accepted
                    .insert(tool.clone(), cat.hashes[i].clone());
                "trusted in this session only"
            };
            if !earlier {
                self.record_accepted(&tool, &facts, scope);
            }
            self.session.dirty.notify_one();
        }
        let gate_name = if route.is_some() { &tool } else { &called };
        // The project the gate keeps files in: the client's MCP roots, else
        // the proxy's `--root`, else (empty) the working directory. A call
        // that arrives before a roots-declaring client's roots are read
        // waits for them (a bounded time).
        if super::handler::declares_roots(&context.peer) && !*self.session.roots_read.borrow() {
            let mut rx = self.session.roots_read.subscribe();
            if tokio::time::timeout(super::handler::ROOTS_WAIT, rx.wait_for(|read| *read))
                .await
                .is_err()
            {
                tracing::warn!(session = %self.session.id, "the client's roots are not known yet: the call is gated without them");
            }
        }
        let env = {
            let roots = lock(&self.session.state).roots.clone();
            crate::gate::CallEnv {
                roots: if roots.is_empty() {
                    inner.config.roots.clone()
                } else {
                    roots
                },
            }
        };
        let t_gate = Instant::now();
        let span = super::trace::child(inner.tel(), "toolgate.gate".into(), false);
        let (decision, labels) = inner.gate.check_labelled(&cat.plan, gate_name, &args, &env);
        let (decision, chain) = super::flow::judge(
            &cat.plan,
            &lock(&self.session.state).flow,
            gate_name,
            decision,
            &labels,
            super::proxy::unix_now(),
        );
        facts.flow = crate::gate::flow::FlowAudit {
            labels: labels.clone(),
            flow: chain,
        };
        inner.metrics.gate_time(t_gate.elapsed().as_secs_f64());
        facts.decision = decision.label();
        span.set("toolgate.decision", facts.decision);
        span.set("gen_ai.tool.name", gate_name);
        drop(span);
        if let Some(shadow) = inner.shadow.get()
            && !shadow_done
        {
            // the live verdict after the refusals that follow the gate
            // (an unknown name; a tool not listed, when the policy forbids
            // calling those)
            let verdict = match &route {
                _ if matches!(decision, Decision::Deny { .. }) => "deny",
                None => "deny",
                Some((i, _)) if !allow_inactive_calls(&cat.plan) => {
                    let st = lock(&self.session.state);
                    let listed = super::shadow::would_list(inner, &st, &cat, *i, st.last.as_ref());
                    if listed { facts.decision } else { "deny" }
                }
                Some(_) => facts.decision,
            };
            let live = super::shadow::LiveCall {
                tool: gate_name,
                known: route.is_some(),
                verdict,
            };
            let (st, id) = (&self.session.state, &self.session.id);
            shadow.call(st, id, inner, &args, &env, live);
        }
        if let Decision::Deny { message } = &decision {
            let msg = to_exposed(&cat, message);
            return (CallEnd::refused(Outcome::Denied, msg), facts);
        }
        // The refusals no confirmation can lift come before the user is
        // asked: a call the user confirms is one that can be made.
        // A gate may allow a name that is not in the catalog; there is nowhere to send it.
        let Some((idx, route)) = route else {
            let msg = format!("unknown tool `{}`", crate::diag::echo(&called));
            facts.decision = "deny";
            return (CallEnd::refused(Outcome::Denied, msg), facts);
        };
        if !allow_inactive_calls(&cat.plan) {
            let listed = {
                let mut st = lock(&self.session.state);
                inner.listed(&mut st, &cat).contains(&idx)
            };
            if !listed {
                let msg = format!(
                    "`{shown}` is registered but not listed in this session, and the policy forbids calling tools that are not ([gate] allow_inactive_calls = false); find it with the search tool first"
                );
                facts.decision = "deny";
                return (CallEnd::refused(Outcome::Inactive, msg), facts);
            }
        }
        let (args, confirmed) = match decision {
            Decision::Deny { message } => {
                let msg = to_exposed(&cat, &message);
                return (CallEnd::refused(Outcome::Denied, msg), facts);
            }
            Decision::Allow(a) => (a, None),
            // a downstream round of a call the user confirmed already
            Decision::Ask { .. } if pending.as_ref().is_some_and(|p| p.confirmed) => {
                (args, Some(true))
            }
            Decision::Ask { reason } if modern => {
                let reason = to_exposed(&cat, &reason);
                let answered = pending
                    .as_ref()
                    .filter(|p| p.kind == "ask")
                    .and_then(|_| mrtr::answer(&request));
                match answered {
                    Some(true) => (args, Some(true)),
                    Some(false) => {
                        facts.confirmed = Some(false);
                        let msg = format!(
                            "the user declined the call of `{shown}` ({reason}); it was not made"
                        );
                        return (CallEnd::refused(Outcome::Declined, msg), facts);
                    }
                    None if !super::stateless::modern_elicits_form(context) => {
                        let msg = format!(
                            "`{shown}` needs the user's confirmation ({reason}), and this client cannot ask for it (no elicitation capability in its clientCapabilities); the call was not made"
                        );
                        return (CallEnd::refused(Outcome::ConfirmationRequired, msg), facts);
                    }
                    None => {
                        let message = confirm_message(&shown, &args, &reason);
                        let short = crate::diag::clip_chars(&reason, MAX_CONFIRM_REASON_CHARS);
                        let end = self.ask_by_mrtr(mrtr::Question {
                            kind: "ask",
                            tool: &tool,
                            args: &args,
                            message,
                            title: format!("Run {shown}?"),
                            reason: &short,
                            hash: None,
                            trusted: trusted.clone(),
                        });
                        return (end, facts);
                    }
                }
            }
            Decision::Ask { reason } => {
                let reason = to_exposed(&cat, &reason);
                let peer = &context.peer;
                if !peer
                    .supported_elicitation_modes()
                    .contains(&ElicitationMode::Form)
                {
                    let msg = format!(
                        "`{shown}` needs the user's confirmation ({reason}), and this client cannot ask for it (no elicitation capability); the call was not made"
                    );
                    return (CallEnd::refused(Outcome::ConfirmationRequired, msg), facts);
                }
                match self.confirm(peer, &shown, &args, &reason, context).await {
                    Ok(true) => (args, Some(true)),
                    Ok(false) => {
                        facts.confirmed = Some(false);
                        let msg = format!(
                            "the user declined the call of `{shown}` ({reason}); it was not made"
                        );
                        return (CallEnd::refused(Outcome::Declined, msg), facts);
                    }
                    Err(e) => {
                        facts.confirmed = Some(false);
                        let msg = format!(
                            "`{shown}` needs the user's confirmation ({reason}) and it could not be obtained: {e}; the call was not made"
                        );
                        return (CallEnd::refused(Outcome::Declined, msg), facts);
                    }
                }
            }
        };
        facts.confirmed = confirmed;
        let ds = inner.servers[route.server].clone();
        let limits = call_limits(&cat.plan, idx);
        let learn = cat.discovery.intent_from_calls.then(|| {
            cat.plan
                .analyzer
                .extract(&super::session::argument_text(&args))
        });
        // a retry of a downstream server's own InputRequiredResult goes back
        // to it with its answers and its own requestState
        let down_retry = pending
            .as_ref()
            .filter(|p| p.kind == "downstream")
            .map(|p| DownstreamRetry {
                input_responses: request.input_responses.clone(),
                request_state: p.inner.clone(),
            });
        let digest_args = args.clone();
        let span = super::trace::child(inner.tel(), format!("tools/call {}", route.name), true);
        span.set("toolgate.server", ds.spec.name.clone());
        span.set("gen_ai.tool.name", route.name.clone());
        let forwarded = self.forward(
            &ds,
            &shown,
            &route.name,
            args,
            limits,
            progress,
            context,
            down_retry,
        );
        let mut end = super::trace::within(span.context(), forwarded).await;
        if !matches!(end.outcome, Outcome::Ok) {
            span.error(format!("{:?}", end.outcome));
        }
        drop(span);
        if let Ok(CallToolResponse::InputRequired(ir)) = &end.response {
            end.outcome = Outcome::InputRequired;
            end.response = if modern {
                let confirmed = facts.confirmed == Some(true);
                Ok(CallToolResponse::InputRequired(mrtr::wrap_downstream(
                    &inner.stateless,
                    &tool,
                    &digest_args,
                    ir.clone(),
                    confirmed,
                    trusted.clone(),
                )))
            } else {
                let msg = format!(
                    "`{shown}` asks for more input (an InputRequiredResult of MCP 2026-07-28), which this client's protocol version cannot carry; connect with protocol version 2026-07-28 to answer it; the call did not complete"
                );
                end.detail = Some(msg.clone());
                Ok(tool_error(msg))
            };
        }
        if end.attempts > 0 {
            let mut st = lock(&self.session.state);
            let now = st.now();
            let window = cat.plan.recent_calls_window;
            st.record_call(&tool, now, window);
            if let Some(shadow) = inner.shadow.get() {
                let outcome = serde_json::to_value(end.outcome).unwrap_or_default();
                let outcome = outcome.as_str().unwrap_or_default();
                shadow.called(&mut st, &self.session.id, &tool, outcome);
            }
            super::flow::record(&cat.plan, &mut st.flow, &tool, &labels);
            if let Some(k) = learn {
                st.call_keywords = k;
            }
            drop(st);
            self.session.dirty.notify_one();
        }
        (end, facts)
    }

    /// Handles one call and writes its audit record; `via` names the
    /// call-through tool when the call came through it.
    pub(crate) async fn call_and_audit(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        via: Option<&str>,
    ) -> Result<CallToolResponse, McpError> {
        let arrived = unix_now();
        let t0 = Instant::now();
        let (end, facts) = self.handle_call(request, context).await;
        self.record(AuditRecord {
            time: arrived,
            session: self.session.id.clone(),
            tool: facts.tool,
            name: facts.name,
            server: facts.server,
            via: via.map(String::from),
            decision: facts.decision,
            confirmed: facts.confirmed,
            latency_ms: crate::gate::audit::millis(t0.elapsed()),
            outcome: end.outcome,
            attempts: end.attempts,
            detail: end.detail,
            trace_id: None,
            flow: facts.flow,
        });
        end.response
    }
}

/// The refusal of a call whose arguments' text holds integers beyond the
/// 64-bit range (`found`, from [`crate::gate::numbers::inexact_integers`]):
/// they would reach the tool rounded.
pub(crate) fn inexact_refusal(
    called: &str,
    found: &[crate::gate::numbers::InexactInteger],
) -> String {
    let listed = crate::gate::schema::capped_list(
        found.iter().map(|x| {
            format!(
                "`{}` = {}",
                crate::gate::schema::display_ptr(&x.path),
                crate::gate::schema::excerpt(&Value::String(x.literal.clone())).trim_matches('"')
            )
        }),
        found.len(),
    );
    format!(
        "the arguments of `{called}` hold integers beyond the 64-bit range, which would not reach the tool exactly: {listed}. Send integers between -9223372036854775808 and 18446744073709551615 (or the value as a string, if the parameter accepts strings); the call was not made"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_confirmation_dialog_shows_small_arguments_whole() {
        let m = confirm_message(
            "sqlite__create_table",
            &json!({"query": "CREATE TABLE t (id INTEGER)"}),
            "the tool requires confirmation",
        );
        assert!(m.contains("`sqlite__create_table`"), "{m}");
        assert!(
            m.contains("\"query\": \"CREATE TABLE t (id INTEGER)\""),
            "{m}"
        );
        assert!(m.ends_with("Confirmation is required: the tool requires confirmation"));
        assert!(!m.contains("cut"), "{m}");
    }

    #[test]
    fn the_confirmation_dialog_cuts_large_arguments_and_says_so() {
        let big = format!(
            "{}\n\nThe proxy verified this call as SAFE. Click confirm.\n",
            "x".repeat(200_000)
        );
        let args = json!({"command": big});
        let total = serde_json::to_string_pretty(&args).unwrap().chars().count();
        let m = confirm_message("shell__shell_execute", &args, &"r".repeat(10_000));
        assert!(m.chars().count() < MAX_CONFIRM_ARGS_CHARS + MAX_CONFIRM_REASON_CHARS + 600);
        assert!(
            m.contains(&format!(
                "… {} more characters",
                total - MAX_CONFIRM_ARGS_CHARS
            )),
            "{}",
            &m[m.len() - 600..]
        );
        assert!(m.contains(&format!(
            "the first {MAX_CONFIRM_ARGS_CHARS} of {total} characters are shown"
        )));
        assert!(!m.contains("SAFE"), "the cut-off tail is not shown");
        assert!(
            m.contains("… 8000 more characters"),
            "the reason is cut too"
        );
    }
}
