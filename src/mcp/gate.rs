//! The call-decision seam: every `tools/call` that reaches the proxy is put to
//! a [`CallGate`], which allows it (possibly with rewritten arguments), asks the
//! user to confirm it, or denies it with a message for the model.
//!
//! [`TagGate`] is the built-in gate: it decides from the tool's tags alone
//! (seed 002's risk gate): a tool that `requires_confirmation` or whose
//! `risk_level` is `destructive` is asked for; an unknown tool is denied with
//! the closest names; everything else is allowed. It does not look inside the
//! arguments (no SQL, shell or path analysis): a gate that does plugs in here.

use serde_json::Value;

use crate::parse::tags::RiskLevel;
use crate::plan::Plan;

/// What the gate decided about one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Forward the call with these arguments (the gate may have rewritten them).
    Allow(Value),
    /// The user must confirm first; `reason` says why (shown in the confirm form,
    /// or in the tool error when the client cannot be asked).
    Ask {
        /// Why confirmation is needed.
        reason: String,
    },
    /// Refuse the call; `message` is returned to the model as a tool error.
    Deny {
        /// What the model is told.
        message: String,
    },
}

impl Decision {
    /// `allow`, `ask` or `deny` (the audit's `decision` field).
    pub fn label(&self) -> &'static str {
        match self {
            Decision::Allow(_) => "allow",
            Decision::Ask { .. } => "ask",
            Decision::Deny { .. } => "deny",
        }
    }
}

/// Decides calls. Implementations must be cheap: `check` runs on every
/// `tools/call`, on the request path.
pub trait CallGate: Send + Sync {
    /// Decides the call of `tool` (a name of `plan`'s catalog, or an unknown
    /// name) with arguments `args` (a JSON object).
    fn check(&self, plan: &Plan, tool: &str, args: &Value) -> Decision;

    /// Decides the call in `env`: the session's project (its MCP roots, or
    /// the proxy's `--root`). The default ignores `env` and calls
    /// [`CallGate::check`].
    fn check_in(
        &self,
        plan: &Plan,
        tool: &str,
        args: &Value,
        env: &crate::gate::CallEnv,
    ) -> Decision {
        let _ = env;
        self.check(plan, tool, args)
    }

    /// [`CallGate::check_in`] with the call's `[gate.flow]` labels, which the
    /// proxy judges against the session's history (see
    /// [`crate::gate::flow`]). The default labels nothing.
    fn check_labelled(
        &self,
        plan: &Plan,
        tool: &str,
        args: &Value,
        env: &crate::gate::CallEnv,
    ) -> (Decision, Vec<crate::gate::flow::CallLabel>) {
        (self.check_in(plan, tool, args, env), Vec::new())
    }

    /// A short name for logs and the proxy's `initialize` `_meta`
    /// (`toolgate/proxy.gate`), so tests can tell which gate is plugged in.
    fn name(&self) -> &str {
        "custom"
    }
}

/// The built-in gate: decides from tool tags only (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct TagGate;

/// The call gate of the policy (`toolgate::gate`): JSON Schema validation with
/// typed coercion, shell / SQL / path / pattern analysis and the risk table of
/// `[gate]`. The proxy's default.
#[derive(Debug, Clone, Copy, Default)]
pub struct PolicyGate;

impl CallGate for PolicyGate {
    fn check(&self, plan: &Plan, tool: &str, args: &Value) -> Decision {
        self.check_in(plan, tool, args, &crate::gate::CallEnv::default())
    }

    /// File paths are kept inside `env`'s roots when the policy's roots
    /// are relative ([`crate::gate::CallEnv`]).
    fn check_in(
        &self,
        plan: &Plan,
        tool: &str,
        args: &Value,
        env: &crate::gate::CallEnv,
    ) -> Decision {
        self.check_labelled(plan, tool, args, env).0
    }

    fn check_labelled(
        &self,
        plan: &Plan,
        tool: &str,
        args: &Value,
        env: &crate::gate::CallEnv,
    ) -> (Decision, Vec<crate::gate::flow::CallLabel>) {
        let v = crate::gate::check_call_in(plan, tool, args.clone(), env);
        let d = match v.decision {
            crate::gate::Action::Allow => Decision::Allow(v.arguments),
            crate::gate::Action::Ask => Decision::Ask { reason: v.message },
            crate::gate::Action::Deny => Decision::Deny { message: v.message },
        };
        (d, v.labels)
    }

    fn name(&self) -> &str {
        "policy"
    }
}

/// Up to three catalog names closest to `name` (Jaro-Winkler ≥ 0.7), best first.
pub fn closest_names<'a>(plan: &'a Plan, name: &str) -> Vec<&'a str> {
    let lower = name.to_lowercase();
    // Compare with the bare tool name too, so `read_query` finds `sqlite.read_query`.
    let mut scored: Vec<(&str, f64)> = plan
        .tools
        .iter()
        .map(|t| {
            let full = strsim::jaro_winkler(&lower, &t.name.to_lowercase());
            let bare = t
                .name
                .split_once('.')
                .map(|(_, b)| strsim::jaro_winkler(&lower, &b.to_lowercase()))
                .unwrap_or(0.0);
            (t.name.as_str(), full.max(bare))
        })
        .filter(|(_, s)| *s >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    scored.into_iter().take(3).map(|(n, _)| n).collect()
}

impl CallGate for TagGate {
    fn check(&self, plan: &Plan, tool: &str, args: &Value) -> Decision {
        let Some(t) = plan.tool(tool) else {
            let close = closest_names(plan, tool);
            let hint = if close.is_empty() {
                String::new()
            } else {
                format!(
                    "; did you mean {}?",
                    close
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Decision::Deny {
                message: format!("unknown tool `{tool}`{hint}"),
            };
        };
        if t.gate.requires_confirmation {
            return Decision::Ask {
                reason: format!("`{}` is tagged requires_confirmation", t.name),
            };
        }
        if t.gate.risk_level == Some(RiskLevel::Destructive) {
            return Decision::Ask {
                reason: format!(
                    "`{}` is destructive (risk_level = \"destructive\"): its effect cannot be undone",
                    t.name
                ),
            };
        }
        Decision::Allow(args.clone())
    }

    fn name(&self) -> &str {
        "tags"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{Sources, load_plan};
    use serde_json::json;

    #[test]
    fn tag_gate_decides_from_tags() {
        let plan = load_plan(&Sources::default()).unwrap();
        let g = TagGate;
        let args = json!({"query": "SELECT 1"});
        assert_eq!(
            g.check(&plan, "sqlite.read_query", &args),
            Decision::Allow(args.clone())
        );
        // memory.delete_entities: destructive and requires_confirmation
        assert!(matches!(
            g.check(&plan, "memory.delete_entities", &json!({})),
            Decision::Ask { reason } if reason.contains("requires_confirmation")
        ));
        match g.check(&plan, "sqlite.read_querry", &json!({})) {
            Decision::Deny { message } => {
                assert!(
                    message.contains("unknown tool `sqlite.read_querry`"),
                    "{message}"
                );
                assert!(message.contains("`sqlite.read_query`"), "{message}");
            }
            d => panic!("{d:?}"),
        }
        assert_eq!(g.name(), "tags");
        assert_eq!(Decision::Allow(json!({})).label(), "allow");
    }
}
