//! The proxy's own tools, for clients that send no context (every real one):
//!
//! * **`toolgate__find_tools`** (`query`, optional `limit`): the query is
//!   handled as a user message of the session — its keywords, through the
//!   policy's `[keywords]` extractor, replace the intent keywords, with the
//!   rest of the session's context as it is — and the plan is evaluated. The tools that reach the policy's (effective)
//!   activation threshold, best first, at most `limit` of them (default
//!   `[discovery] limit`, else `[activation] max_active`), are returned: a
//!   text block with one line per tool (exposed name, then the first
//!   sentence of its description) and `structuredContent`
//!   `{"tools": [{"name", "description", "score", "inputSchema"}]}`. They
//!   join the session's list (see [`super::session`]) and the client gets
//!   `notifications/tools/list_changed`. A query that brings no tool to the
//!   threshold says so, returns no tool, and empties the found set.
//! * **`toolgate__call_tool`** (`name`, `arguments`): calls any catalog tool
//!   by its exposed name through the very path of a direct `tools/call`
//!   ([`super::call`]: gate, elicitation, audit, time limit, retries,
//!   `allow_inactive_calls`), and returns that tool's result.
//!
//! This is the "discover, then inject" answer of MCP gateways (a search
//! tool whose results join `tools/list`) together with the "dispatch" answer
//! (a call-through tool for clients that never refresh their list); both are
//! decided by the same plan and gate. Names, descriptions and whether each
//! is offered are proxy configuration ([`super::config::MetaToolConfig`]).

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use crate::eval::{Activation, Reason, ToolScore};
use crate::plan::Plan;

use super::audit::{AuditRecord, Outcome};
use super::catalog::Catalog;
use super::config::ProxyConfig;
use super::handler::ProxySession;
use super::proxy::{LIST_CONSISTENCY_WAIT, lock, metas, tool_error, unix_now};

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The input schema of `find_tools`.
fn find_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What the task needs, in plain words (e.g. \"which tables are in my sqlite database\")."},
            "limit": {"type": "integer", "minimum": 1, "description": "At most this many tools (default: the policy's)."}
        },
        "required": ["query"]
    })
}

/// The output schema of `find_tools` (its `structuredContent`).
fn find_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "tools": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "score": {"type": "number"},
                        "inputSchema": {"type": "object"}
                    },
                    "required": ["name", "description", "score", "inputSchema"]
                }
            }
        },
        "required": ["tools"]
    })
}

/// The proxy's own tools that `config` enables, as listed.
pub fn meta_tools(config: &ProxyConfig) -> Vec<Tool> {
    let mut out = Vec::new();
    if config.find_tools.enabled {
        let mut t = Tool::new(
            config.find_tools.name.clone(),
            config.find_tools.description.clone(),
            object(find_input_schema()),
        );
        t.output_schema = Some(object(find_output_schema()));
        out.push(t);
    }
    if config.call_tool.enabled {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name, as toolgate__find_tools or tools/list gives it."},
                "arguments": {"type": "object", "description": "The tool's arguments, following its input schema.", "additionalProperties": true}
            },
            "required": ["name"]
        });
        out.push(Tool::new(
            config.call_tool.name.clone(),
            config.call_tool.description.clone(),
            object(schema),
        ));
    }
    out
}

/// The proxy's own tools as a modern (2026-07-28) client sees them: as
/// [`meta_tools`], each with an optional `session` argument (the session
/// handle, see [`super::stateless`]) and `session` in `find_tools`'
/// structured output.
pub fn modern_meta_tools(config: &ProxyConfig) -> Vec<Tool> {
    let mut tools = meta_tools(config);
    let prop = json!({
        "type": "string",
        "description": "The `session` string of the last toolgate__find_tools answer (or of a result's _meta[\"toolgate/session\"]): what this session found and called. Leave it out to start a new session."
    });
    for t in &mut tools {
        let mut schema = (*t.input_schema).clone();
        if let Some(Value::Object(p)) = schema.get_mut("properties") {
            p.insert(super::stateless::SESSION_ARGUMENT.into(), prop.clone());
        }
        t.input_schema = Arc::new(schema);
        if let Some(out) = &t.output_schema {
            let mut out = (**out).clone();
            if let Some(Value::Object(p)) = out.get_mut("properties") {
                p.insert(
                    super::stateless::SESSION_ARGUMENT.into(),
                    json!({"type": "string"}),
                );
            }
            t.output_schema = Some(Arc::new(out));
        }
    }
    tools
}

/// A sentence for the server's `instructions` about the enabled meta-tools.
pub fn instructions(config: &ProxyConfig) -> String {
    let mut s = String::new();
    if config.find_tools.enabled {
        s.push_str(&format!(
            " When you need a tool you do not see, call {} with the task in plain words: the matches join your tool list.",
            config.find_tools.name
        ));
    }
    if config.call_tool.enabled {
        s.push_str(&format!(
            " {} calls any tool by name, listed or not.",
            config.call_tool.name
        ));
    }
    s
}

/// One search result: a plan tool and its activation score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Match {
    /// Plan tool index.
    pub tool: usize,
    /// Activation score, \[0,1\].
    pub score: f64,
}

/// The tools `limit` of a search returns by default: `[discovery] limit`,
/// else `[activation] max_active`, else every tool above the threshold.
pub fn default_limit(plan: &Plan, discovery_limit: Option<usize>) -> Option<usize> {
    discovery_limit.or(plan.max_active)
}

/// The best tools of `activation` (an evaluation under the query's
/// context): those whose score reached the effective threshold on its own
/// (not pinned, not added to reach `min_active`, not cut by `max_active`),
/// for which `keep` holds, best score first (catalog order on ties), at most
/// `limit`.
pub fn best_matches(
    activation: &Activation,
    limit: Option<usize>,
    keep: impl Fn(usize) -> bool,
) -> Vec<Match> {
    let mut found: Vec<&ToolScore> = activation
        .tools
        .iter()
        .filter(|t| t.reason == Reason::AboveThreshold && keep(t.tool))
        .collect();
    found.sort_by(|a, b| ToolScore::better_first(a, b));
    let mut m: Vec<Match> = found
        .into_iter()
        .map(|t| Match {
            tool: t.tool,
            score: t.score,
        })
        .collect();
    if let Some(k) = limit {
        m.truncate(k);
    }
    m
}

/// The first sentence of a description (up to the first `. `, `.` at the
/// end, or line break), trimmed.
pub fn first_sentence(text: &str) -> &str {
    let t = text.trim();
    let mut end = t.len();
    if let Some(i) = t.find('\n') {
        end = i;
    }
    let bytes = t.as_bytes();
    for (i, &b) in bytes[..end].iter().enumerate() {
        if matches!(b, b'.' | b'!' | b'?')
            && bytes.get(i + 1).is_none_or(|c| c.is_ascii_whitespace())
        {
            end = i + 1;
            break;
        }
    }
    t[..end].trim()
}

/// At most this many characters of a `find_tools` query are quoted back in
/// the no-match answer: 300; the rest is counted ("… N more characters"),
/// so a 1 MB query does not come back as a 1 MB answer the model pays for
/// again (attack report 2, item 9b).
pub const MAX_QUOTED_QUERY_CHARS: usize = 300;

/// The `find_tools` result for `matches` of catalog `cat`: one line per
/// tool and the structured list, or a plain "nothing matches" quoting at
/// most [`MAX_QUOTED_QUERY_CHARS`] characters of `query` (`best` is the
/// best score seen, `threshold` the effective threshold). `more` tools
/// also matched but were cut by the search's limit: the text then ends
/// with a line `… N more` saying so.
#[allow(clippy::too_many_arguments)]
pub fn find_result(
    cat: &Catalog,
    matches: &[Match],
    more: usize,
    query: &str,
    best: f64,
    threshold: f64,
    call_tool: Option<&str>,
) -> CallToolResult {
    let tools: Vec<Value> = matches
        .iter()
        .map(|m| {
            let t = &cat.tools[m.tool];
            json!({
                "name": t.name,
                "description": t.description.as_deref().unwrap_or_default(),
                "score": (m.score * 1e4).round() / 1e4,
                "inputSchema": &*t.input_schema,
            })
        })
        .collect();
    let text = if matches.is_empty() {
        no_match_text(query, best, threshold, call_tool)
    } else {
        matches
            .iter()
            .map(|m| {
                let t = &cat.tools[m.tool];
                format!(
                    "{}: {}",
                    t.name,
                    first_sentence(t.description.as_deref().unwrap_or_default())
                )
            })
            .chain((more > 0).then(|| {
                format!(
                    "{} tools match as well, below these (the search returns at most {}); a query with more of the task's words narrows it",
                    crate::diag::more(more),
                    matches.len()
                )
            }))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(json!({ "tools": tools }));
    r
}

/// The text of a `find_tools` answer with no match: the query quoted (at
/// most [`MAX_QUOTED_QUERY_CHARS`] characters), the best score and the
/// threshold, and what to do next.
pub fn no_match_text(query: &str, best: f64, threshold: f64, call_tool: Option<&str>) -> String {
    let hint = call_tool
        .map(|c| format!(", or call {c} with a tool name you know"))
        .unwrap_or_default();
    let query = crate::diag::clip_chars(query, MAX_QUOTED_QUERY_CHARS);
    format!(
        "No tool matches \"{query}\" well enough (best score {best:.2}, below the policy's threshold {threshold:.2}); no tool was added. Rephrase the query with the words of the task{hint}."
    )
}

/// One search over catalog `cat` (the work of `find_tools` between reading
/// its arguments and answering): `context` is the session's context with the
/// query's keywords (the policy's `[keywords]` extraction) as the intent
/// and the query as the message (`user_message`);
/// the plan is evaluated at session time `now` with `usage`, and the best
/// `limit` tools for which `keep` holds are returned with the result to send.
#[allow(clippy::too_many_arguments)]
pub fn search(
    cat: &Catalog,
    mut context: crate::context::SessionContext,
    usage: &crate::context::UsageStats,
    now: f64,
    query: &str,
    limit: Option<usize>,
    keep: impl Fn(usize) -> bool,
    call_tool: Option<&str>,
) -> (CallToolResult, Vec<Match>) {
    context.user_intent_keywords = cat.plan.analyzer.extract(query);
    context.user_message = Some(query.to_string());
    let act = cat.plan.evaluate(&context, usage, now);
    let matches = best_matches(&act, limit, &keep);
    // The best score among the tools the search may return: a withheld
    // tool's score would say "matches" of a tool that is not offered.
    let best = act
        .tools
        .iter()
        .filter(|t| keep(t.tool))
        .map(|t| t.score)
        .fold(0.0, f64::max);
    let matching = act
        .tools
        .iter()
        .filter(|t| t.reason == Reason::AboveThreshold && keep(t.tool))
        .count();
    let mut result = find_result(
        cat,
        &matches,
        matching.saturating_sub(matches.len()),
        query,
        best,
        act.effective_threshold,
        call_tool,
    );
    // Tools that match but are withheld (their definition changed since it
    // was pinned): named, so that the model knows why they are missing.
    let withheld = best_matches(&act, limit, |i| !keep(i));
    if !withheld.is_empty() {
        let names = crate::gate::schema::capped_list(
            withheld
                .iter()
                .map(|m| format!("`{}`", cat.tools[m.tool].name)),
            withheld.len(),
        );
        let what = match cat.discovery.on_definition_change {
            crate::parse::discovery::DefinitionChange::Deny => {
                "they are not offered while their definition differs from the one first seen (a call is refused)"
            }
            _ => {
                "their definition changed since it was first seen; calling one asks the user to confirm the new definition"
            }
        };
        if matches.is_empty() {
            // Nothing offered matches, but withheld tools do: that, not a
            // poor query, is why nothing was added.
            let q = crate::diag::clip_chars(query, MAX_QUOTED_QUERY_CHARS);
            let text = format!(
                "No tool that is offered now matches \"{q}\"; the tools that match are withheld: {names}: {what}. No tool was added."
            );
            result.content = vec![ContentBlock::text(text)];
        } else {
            append_text(
                &mut result,
                &format!("Also matching, but withheld: {names}: {what}."),
            );
        }
    }
    (result, matches)
}

/// Appends `note` as a paragraph of `result`'s text.
pub(crate) fn append_text(result: &mut CallToolResult, note: &str) {
    let text = result.content.iter_mut().find_map(|c| match c {
        ContentBlock::Text(t) => Some(t),
        _ => None,
    });
    if let Some(t) = text {
        t.text.push_str("\n\n");
        t.text.push_str(note);
    } else {
        result.content.push(ContentBlock::text(note.to_string()));
    }
}

/// The arguments of `toolgate__find_tools`: name, JSON type, and whether
/// it is required (its input schema, [`find_input_schema`]; `session` is the
/// modern era's, [`super::stateless::SESSION_ARGUMENT`]).
const FIND_ARGUMENTS: [(&str, &str, bool); 3] = [
    ("query", "string", true),
    ("limit", "integer", false),
    (super::stateless::SESSION_ARGUMENT, "string", false),
];

/// The arguments of `toolgate__call_tool` (as [`FIND_ARGUMENTS`]).
const CALL_ARGUMENTS: [(&str, &str, bool); 3] = [
    ("name", "string", true),
    ("arguments", "object", false),
    (super::stateless::SESSION_ARGUMENT, "string", false),
];

/// The answer to a call of the proxy's tool `tool` with an argument its
/// schema does not have (`{"qurey": …}`), for a model to act on: each
/// unknown name (clipped), the closest known one ("did you mean"), and the
/// tool's arguments with their types; `None` when every argument is known.
/// Nothing is searched or called: a misspelt `query` would otherwise be
/// answered as if none was given, a misspelt `limit` silently ignored.
fn unknown_arguments(
    tool: &str,
    args: &JsonObject,
    known: &[(&str, &str, bool)],
) -> Option<String> {
    let names = || known.iter().map(|(n, _, _)| *n);
    let unknown: Vec<String> = args
        .keys()
        .filter(|k| !names().any(|n| n == k.as_str()))
        .take(5)
        .map(|k| {
            let shown = crate::diag::clip_chars(k, 64);
            match crate::diag::did_you_mean(k, names()) {
                Some(n) => format!("`{shown}` (did you mean `{n}`?)"),
                None => format!("`{shown}`"),
            }
        })
        .collect();
    if unknown.is_empty() {
        return None;
    }
    let listed: Vec<String> = known
        .iter()
        .map(|(n, t, required)| {
            let need = if *required { "required" } else { "optional" };
            format!("`{n}` ({t}, {need})")
        })
        .collect();
    let total = args
        .keys()
        .filter(|k| !names().any(|n| n == k.as_str()))
        .count();
    let more = total - unknown.len();
    Some(format!(
        "{tool} has no argument {}{}; nothing was done. Its arguments are {}. Call it again with the names as written.",
        unknown.join(", "),
        if more > 0 {
            format!(" ({})", crate::diag::more(more))
        } else {
            String::new()
        },
        listed.join(", ")
    ))
}

/// Reads `limit`: a positive integer (an integral number or a numeric string
/// is accepted too).
fn read_limit(v: Option<&Value>) -> Result<Option<usize>, String> {
    let err = |v: &Value| format!("`limit` must be a positive integer, found {v}");
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let n = match v {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            }
            .ok_or_else(|| err(v))?;
            if n >= 1.0 && n.fract() == 0.0 && n <= u32::MAX as f64 {
                Ok(Some(n as usize))
            } else {
                Err(err(v))
            }
        }
    }
}

impl ProxySession {
    /// `toolgate__find_tools` (see the module docs).
    pub(crate) async fn find_tools(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let t0 = std::time::Instant::now();
        let arrived = unix_now();
        let inner = &self.inner;
        let name = request.name.to_string();
        let args = request.arguments.clone().unwrap_or_default();
        let cat = inner.catalog_for(None, LIST_CONSISTENCY_WAIT).await?;
        self.apply_meta(
            &metas(context, request.meta.as_ref().map(|m| &m.0.0)),
            &cat.plan,
        )?;
        if let Some(m) = unknown_arguments(&name, &args, &FIND_ARGUMENTS) {
            return Ok(tool_error(m));
        }
        let query = match args.get("query") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => {
                return Ok(tool_error(format!(
                    "{name} needs `query`: a non-empty string saying what the task needs, e.g. {{\"query\": \"which tables are in my sqlite database\"}}"
                )));
            }
        };
        let given = match read_limit(args.get("limit")) {
            Ok(l) => l,
            Err(e) => return Ok(tool_error(e)),
        };
        let limit = given.or_else(|| default_limit(&cat.plan, cat.discovery.limit));
        let call_tool = inner
            .config
            .call_tool
            .enabled
            .then_some(inner.config.call_tool.name.as_str());
        let (mut result, matches, announce) = {
            let mut st = lock(&self.session.state);
            // The query is the session's user message: its keywords replace
            // the intent keywords; the rest of the context (stage, language,
            // project, usage, recency) is the session's. What it finds joins
            // the list as the found set (not as a standing intent, so that
            // `limit` and the expiry decide what stays listed).
            let now = st.now();
            let ctx = st.effective_context(now);
            let (result, matches) = search(
                &cat,
                ctx,
                &st.session.usage,
                now,
                &query,
                limit,
                |i| !inner.is_withheld(&st, &cat, i),
                call_tool,
            );
            // the same search under the shadow policy, compared
            if let Some(shadow) = inner.shadow.get() {
                let live: Vec<String> = matches
                    .iter()
                    .map(|m| cat.catalog_name(m.tool).to_string())
                    .collect();
                shadow.find(&mut st, &self.session.id, inner, &query, given, &live);
            }
            // A search that finds nothing leaves the found set as it was:
            // the tools in use do not vanish from the list.
            if !matches.is_empty() {
                st.set_found(
                    matches
                        .iter()
                        .map(|m| cat.catalog_name(m.tool).to_string())
                        .collect(),
                    now,
                );
            }
            // Announce now, before the result: a client that lists as soon as
            // it has the result (some SDKs do, for the output schema) must
            // still get the notification.
            let listed = inner.listed(&mut st, &cat);
            let names = inner.listed_names(&cat, &listed);
            let announce = st.announced.as_ref() != Some(&names);
            st.announced = Some(names);
            (result, matches, announce)
        };
        // Servers whose tools are not in the catalog now (starting, down):
        // said, so that a no-match is not read as "no such tool".
        let down: Vec<String> = inner
            .servers
            .iter()
            .filter(|s| !matches!(s.status(), super::downstream::Status::Up { .. }))
            .map(|s| s.unavailable_message())
            .collect();
        if !down.is_empty() {
            append_text(
                &mut result,
                &format!(
                    "Not every server is up, so their tools may be missing from this search: {}.",
                    down.join("; ")
                ),
            );
        }
        if announce
            && inner.config.list_changed
            && !self.session.ephemeral
            && let Err(e) = context.peer.notify_tool_list_changed().await
        {
            tracing::warn!("cannot send tools/list_changed: {e}");
        }
        let found: Vec<&str> = matches.iter().map(|m| cat.catalog_name(m.tool)).collect();
        inner.metrics.found(found.len());
        self.record(AuditRecord {
            time: arrived,
            session: self.session.id.clone(),
            tool: name.clone(),
            name: Some(name),
            server: None,
            via: None,
            decision: "allow",
            confirmed: None,
            latency_ms: crate::gate::audit::millis(t0.elapsed()),
            outcome: Outcome::Ok,
            attempts: 0,
            detail: Some(format!("found {}: {}", found.len(), found.join(", "))),
            trace_id: None,
            flow: Default::default(),
        });
        Ok(CallToolResponse::Complete(result))
    }

    /// `toolgate__call_tool` (see the module docs): the inner call goes down
    /// the one `tools/call` path.
    pub(crate) async fn call_through(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let via = request.name.to_string();
        let args = request.arguments.clone().unwrap_or_default();
        if let Some(m) = unknown_arguments(&via, &args, &CALL_ARGUMENTS) {
            return Ok(tool_error(m));
        }
        let Some(Value::String(name)) = args.get("name") else {
            return Ok(tool_error(format!(
                "{via} needs `name` (the tool's name, a string) and `arguments` (an object), e.g. {{\"name\": \"sqlite__read_query\", \"arguments\": {{\"query\": \"SELECT 1\"}}}}"
            )));
        };
        let arguments = match args.get("arguments") {
            None | Some(Value::Null) => JsonObject::new(),
            Some(Value::Object(o)) => o.clone(),
            // a JSON object sent as a string (some clients do)
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(o)) => {
                    // Integers beyond 64 bits in the string were parsed
                    // rounded: refused, as in a direct call's text.
                    let found = crate::gate::numbers::inexact_integers(s);
                    if !found.is_empty() {
                        if let Some(shadow) = self.inner.shadow.get() {
                            shadow.refused_alike("integers beyond 64 bits");
                        }
                        return Ok(tool_error(super::call::inexact_refusal(name, &found)));
                    }
                    o
                }
                _ => {
                    return Ok(tool_error(format!(
                        "{via}: `arguments` must be an object of the tool's arguments, found a string that is not one"
                    )));
                }
            },
            Some(other) => {
                return Ok(tool_error(format!(
                    "{via}: `arguments` must be an object of the tool's arguments, found {other}"
                )));
            }
        };
        let mut inner = CallToolRequestParams::new(name.clone()).with_arguments(arguments);
        inner.meta = request.meta.clone();
        // a modern retry (SEP-2322) answers the inner call
        inner.input_responses = request.input_responses.clone();
        inner.request_state = request.request_state.clone();
        self.call_and_audit(inner, context, Some(&via)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentences() {
        assert_eq!(
            first_sentence("List all tables in the SQLite database. Returns names."),
            "List all tables in the SQLite database."
        );
        assert_eq!(first_sentence("  Read v1.2 files\nmore"), "Read v1.2 files");
        assert_eq!(first_sentence("No period"), "No period");
        assert_eq!(first_sentence(""), "");
        assert_eq!(first_sentence("Really? Yes."), "Really?");
    }

    #[test]
    fn the_no_match_answer_quotes_a_short_query_whole_and_cuts_a_long_one() {
        let t = no_match_text("bake a cake", 0.1, 0.7, Some("toolgate__call_tool"));
        assert!(
            t.starts_with("No tool matches \"bake a cake\" well enough"),
            "{t}"
        );
        assert!(t.ends_with("or call toolgate__call_tool with a tool name you know."));
        let q = "bake a cake ".repeat(90_000);
        let t = no_match_text(&q, 0.1, 0.7, None);
        assert!(t.len() < MAX_QUOTED_QUERY_CHARS + 400, "{} bytes", t.len());
        assert!(
            t.contains(&format!(
                "… {} more characters\" well enough",
                q.len() - MAX_QUOTED_QUERY_CHARS
            )),
            "{t}"
        );
    }

    #[test]
    fn a_misspelt_argument_is_named_with_the_known_ones() {
        let args = |v: Value| v.as_object().unwrap().clone();
        let m = unknown_arguments(
            "toolgate__find_tools",
            &args(json!({"qurey": "which tables"})),
            &FIND_ARGUMENTS,
        )
        .unwrap();
        assert!(
            m.starts_with(
                "toolgate__find_tools has no argument `qurey` (did you mean `query`?); nothing was done."
            ),
            "{m}"
        );
        assert!(
            m.contains("`query` (string, required), `limit` (integer, optional)"),
            "{m}"
        );
        let ok = args(json!({"query": "x", "limit": 2, "session": "s"}));
        assert_eq!(unknown_arguments("t", &ok, &FIND_ARGUMENTS), None);
        let m = unknown_arguments("t", &args(json!({"nmae": "a"})), &CALL_ARGUMENTS).unwrap();
        assert!(m.contains("`nmae` (did you mean `name`?)"), "{m}");
    }

    #[test]
    fn limits() {
        assert_eq!(read_limit(None), Ok(None));
        assert_eq!(read_limit(Some(&json!(3))), Ok(Some(3)));
        assert_eq!(read_limit(Some(&json!("4"))), Ok(Some(4)));
        assert_eq!(read_limit(Some(&json!(2.0))), Ok(Some(2)));
        assert!(read_limit(Some(&json!(0))).is_err());
        assert!(read_limit(Some(&json!(1.5))).is_err());
        assert!(read_limit(Some(&json!("x"))).is_err());
    }

    #[test]
    fn meta_tools_follow_the_configuration() {
        let mut c = ProxyConfig::default();
        let names: Vec<String> = meta_tools(&c).iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, ["toolgate__find_tools", "toolgate__call_tool"]);
        c.call_tool.enabled = false;
        c.find_tools.name = "search".into();
        let t = meta_tools(&c);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].name, "search");
        assert!(t[0].output_schema.is_some());
    }
}
