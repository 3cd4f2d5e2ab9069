//! The shadow's decisions beyond a `tools/list` answer (see
//! [`super`]): a `tools/call`'s final verdict — the call gate's, the data
//! flow rules', and the refusals that depend on the policy before and after
//! the gate (a changed definition, `[discovery] on_definition_change`; a
//! tool that is not listed while `[gate] allow_inactive_calls = false`;
//! a name the catalog does not know) — and a `toolgate__find_tools`
//! search's result list. Refusals that no policy decides (arguments with
//! integers beyond 64 bits, a definition the server got wrong) are the
//! same under both policies: counted as compared, never as a difference.

use std::sync::Mutex;

use serde_json::{Value, json};

use crate::eval::Activation;
use crate::mcp::catalog::Catalog;
use crate::mcp::gate::Decision;
use crate::mcp::proxy::{Inner, lock};
use crate::mcp::session::SessionState;

use super::Shadow;

/// Whether session `st` lists tool `i` of catalog `cat`: active under its
/// plan (evaluated after `prev`, the session's last activation under that
/// plan, which is not updated), or found or called, and not withheld (a
/// changed definition). The proxy's own [`Inner::listed`] without its side
/// effects, for a comparison that must not move the live session.
pub(crate) fn would_list(
    inner: &Inner,
    st: &SessionState,
    cat: &Catalog,
    i: usize,
    prev: Option<&Activation>,
) -> bool {
    let now = st.now();
    let ctx = st.effective_context(now);
    let act = cat
        .plan
        .evaluate_with_previous(&ctx, &st.session.usage, now, prev);
    let name = cat.catalog_name(i);
    let on = act.tools.iter().any(|t| t.tool == i && t.active)
        || st.found.iter().any(|f| f.tool == name);
    on && !inner.is_withheld(st, cat, i)
}

/// What the proxy decided for one `tools/call`, for the shadow to compare.
pub(crate) struct LiveCall<'a> {
    /// The name the gate judged (the catalog name, or the name as called
    /// when the catalog does not know it).
    pub tool: &'a str,
    /// Whether the live catalog knows the tool (else the call is refused
    /// as unknown whatever the gate says).
    pub known: bool,
    /// The live final verdict: the gate's after the flow rules, or `deny`
    /// when the call is refused after the gate (unknown, not listed).
    pub verdict: &'static str,
}

impl Shadow {
    /// A refusal before the gate that no policy decides (`why`, a short
    /// name of the rule): the shadow would refuse alike; counted as a
    /// compared `call` decision, never a difference.
    pub(crate) fn refused_alike(&self, why: &str) {
        if self.catalog.load().is_some() {
            self.metrics.shadow_decision("call");
            tracing::trace!(why, "shadow policy: refused alike before the gate");
        }
    }

    /// A call of `tool` (catalog name) whose definition changed since it
    /// was pinned: the live policy's `[discovery] on_definition_change`
    /// gave `live` (`ask` or `deny`). Compares the shadow's; returns
    /// whether the shadow's decision of this call is made (a `deny` on
    /// either side: the call ends here under that policy), so the later
    /// gate comparison is skipped.
    pub(crate) fn definition(
        &self,
        st: &Mutex<SessionState>,
        session: &str,
        tool: &str,
        live: &'static str,
    ) -> bool {
        let Some(cat) = self.catalog.load_full() else {
            return true;
        };
        let shadow = cat.discovery.on_definition_change.label();
        if live == "ask" && shadow == "ask" {
            // both ask the user: the gate comparison follows (if confirmed)
            return false;
        }
        let detail = "the tool's definition changed since it was first seen ([discovery] on_definition_change)";
        self.compare_call(st, session, tool, live, shadow, Some(detail.into()));
        true
    }

    /// A `tools/call` that reached the live gate ([`LiveCall`]): decides it
    /// again under the shadow plan with the same gate, environment and data
    /// flow history, then the shadow's own refusals after the gate (an
    /// unknown tool; a tool the shadow would not list while its
    /// `allow_inactive_calls` is false), and compares the final verdicts.
    pub(crate) fn call(
        &self,
        st: &Mutex<SessionState>,
        session: &str,
        inner: &Inner,
        args: &Value,
        env: &crate::gate::CallEnv,
        live: LiveCall<'_>,
    ) {
        let Some(cat) = self.catalog.load_full() else {
            return;
        };
        let (decision, labels) = inner.gate.check_labelled(&cat.plan, live.tool, args, env);
        let mut decision = {
            let g = lock(st);
            crate::mcp::flow::judge(
                &cat.plan,
                &g.flow,
                live.tool,
                decision,
                &labels,
                crate::mcp::proxy::unix_now(),
            )
            .0
        };
        if !matches!(decision, Decision::Deny { .. }) {
            let index = cat.plan.tool_index(live.tool).filter(|_| live.known);
            match index {
                None => {
                    decision = Decision::Deny {
                        message: format!("unknown tool `{}`", crate::diag::echo(live.tool)),
                    }
                }
                Some(i) if !crate::mcp::call::allow_inactive_calls(&cat.plan) => {
                    let g = lock(st);
                    if !would_list(inner, &g, &cat, i, g.shadow.last.as_ref()) {
                        decision = Decision::Deny {
                            message: "not listed in this session under the shadow policy, which forbids calling tools that are not ([gate] allow_inactive_calls = false)".into(),
                        };
                    }
                }
                Some(_) => {}
            }
        }
        let detail = match &decision {
            Decision::Allow(_) => None,
            Decision::Ask { reason } => Some(reason.clone()),
            Decision::Deny { message } => Some(message.clone()),
        };
        self.compare_call(
            st,
            session,
            live.tool,
            live.verdict,
            decision.label(),
            detail,
        );
    }

    /// Counts, logs and writes one compared call verdict.
    fn compare_call(
        &self,
        st: &Mutex<SessionState>,
        session: &str,
        tool: &str,
        live: &'static str,
        shadow: &'static str,
        detail: Option<String>,
    ) {
        self.metrics.shadow_decision("call");
        let differs = shadow != live;
        if differs {
            self.metrics.shadow_diff("call");
            tracing::info!(
                session,
                tool,
                live,
                shadow,
                "shadow policy: another verdict"
            );
        }
        if let Some(log) = &self.log {
            let mut st = lock(st);
            let now = st.now();
            let mut lines = Vec::new();
            Self::context_lines(&mut st, session, now, &mut lines);
            if differs {
                lines.push(
                    json!({"session": session, "t": now, "event": "shadow", "kind": "call",
                    "tool": tool, "live": live, "shadow": shadow, "detail": detail}),
                );
            }
            log.write(&lines);
        }
    }

    /// A `toolgate__find_tools` search of `query` in session `st` (its
    /// state before the search changed the found set), whose live result
    /// is `live` (catalog names, best first): the same search under the
    /// shadow plan — the same context and query, the shadow's `limit`
    /// unless the call gave one (`limit`), the same withheld tools — and a
    /// difference when the lists differ (other tools, or another order).
    /// The query itself is never written to the shadow log (it is an
    /// argument); the lists are.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn find(
        &self,
        st: &mut SessionState,
        session: &str,
        inner: &Inner,
        query: &str,
        limit: Option<usize>,
        live: &[String],
    ) {
        let Some(cat) = self.catalog.load_full() else {
            return;
        };
        let now = st.now();
        let ctx = st.effective_context(now);
        let limit =
            limit.or_else(|| crate::mcp::discovery::default_limit(&cat.plan, cat.discovery.limit));
        let (_, matches) = crate::mcp::discovery::search(
            &cat,
            ctx,
            &st.session.usage,
            now,
            query,
            limit,
            |i| !inner.is_withheld(st, &cat, i),
            None,
        );
        let shadow: Vec<String> = matches
            .iter()
            .map(|m| cat.catalog_name(m.tool).to_string())
            .collect();
        self.metrics.shadow_decision("find");
        let differs = shadow != live;
        if differs {
            self.metrics.shadow_diff("find");
            tracing::info!(
                session,
                ?live,
                ?shadow,
                "shadow policy: another find_tools result"
            );
        }
        if let Some(log) = &self.log {
            let mut lines = Vec::new();
            Self::context_lines(st, session, now, &mut lines);
            if differs {
                lines.push(
                    json!({"session": session, "t": now, "event": "shadow", "kind": "find",
                    "live": live, "shadow": shadow}),
                );
            }
            log.write(&lines);
        }
    }
}
