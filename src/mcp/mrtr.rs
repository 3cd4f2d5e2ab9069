//! Confirmations for modern clients by Multi Round-Trip Requests (MCP
//! 2026-07-28, basic/patterns/mrtr, SEP-2322).
//!
//! A legacy client is asked with a server-to-client `elicitation/create`
//! request in the middle of its `tools/call`. The modern era has no
//! server-to-client requests: the proxy answers the `tools/call` with an
//! `InputRequiredResult` whose `inputRequests` holds the same form
//! ([`CONFIRM_INPUT_KEY`]: one boolean `confirm`), and whose `requestState`
//! is a sealed [`PendingCall`] (tool, digest of the exact arguments, nonce,
//! expiry; see [`super::stateless`]). The client asks its user and retries
//! the same `tools/call` with `inputResponses` and the echoed state; the
//! retry is judged afresh by the gate, and the answer applies only if the
//! state opens for this tool and these arguments, has not expired and was
//! not used before on this replica.
//!
//! A downstream server's own `InputRequiredResult` takes the same road: its
//! `inputRequests` go to the client unchanged, its `requestState` is sealed
//! inside the proxy's (kind `"downstream"`), and the retry's
//! `inputResponses` and the inner state go back to that server.

use rmcp::model::{CallToolRequestParams, InputRequest, InputRequests, InputRequiredResult};
use serde_json::{Value, json};

use super::stateless::{CONFIRM_INPUT_KEY, PendingCall, StateError, Stateless, args_digest};

/// What the retry of a modern `tools/call` carried, once verified.
#[derive(Debug, Clone, PartialEq)]
pub enum Retry {
    /// No `requestState`: a first round.
    First,
    /// A valid, unused state and the client's answers.
    Valid(PendingCall),
    /// A state that failed verification: the call is refused.
    Refused(StateError),
}

/// Verifies the `requestState` of a modern retry of `tool` (catalog name)
/// with `args`, and redeems its nonce (a state is good for one retry).
pub fn verify(
    stateless: &Stateless,
    request: &CallToolRequestParams,
    tool: &str,
    args: &Value,
) -> Retry {
    let Some(state) = request.request_state.as_deref() else {
        return Retry::First;
    };
    match stateless.open_pending(state, tool, args) {
        Err(e) => Retry::Refused(e),
        Ok(p) => match stateless.redeem(&p.nonce) {
            Err(e) => Retry::Refused(e),
            Ok(()) => Retry::Valid(p),
        },
    }
}

/// The user's answer to the proxy's confirmation in a retry's
/// `inputResponses`: `Some(true)` only for `action: "accept"` with
/// `content.confirm == true`; `Some(false)` for any other answer
/// (decline, cancel, unticked); `None` when the answer is missing.
pub fn answer(request: &CallToolRequestParams) -> Option<bool> {
    let r = request.input_responses.as_ref()?.get(CONFIRM_INPUT_KEY)?;
    let accepted = r.get("action").and_then(Value::as_str) == Some("accept")
        && r.get("content")
            .and_then(|c| c.get("confirm"))
            .and_then(Value::as_bool)
            == Some(true);
    Some(accepted)
}

/// An `InputRequiredResult` asking the user to confirm: a form with one
/// boolean `confirm` (titled `title`, described by `reason`) under
/// [`CONFIRM_INPUT_KEY`], and a sealed [`PendingCall`] of `kind` for `tool`
/// with `args` (and the definition `hash`, for kind `"definition"`).
#[allow(clippy::too_many_arguments)] // the sealed call's fields, each named at the call site
pub fn ask(
    stateless: &Stateless,
    kind: &str,
    tool: &str,
    args: &Value,
    message: String,
    title: String,
    reason: &str,
    hash: Option<String>,
) -> Result<InputRequiredResult, String> {
    let request: InputRequest = serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
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
            }
        }
    }))
    .map_err(|e| format!("internal: confirmation request: {e}"))?;
    let pending = PendingCall {
        kind: kind.to_string(),
        tool: tool.to_string(),
        digest: args_digest(args),
        nonce: Stateless::nonce(),
        confirmed: false,
        inner: None,
        hash,
    };
    let mut requests = InputRequests::new();
    requests.insert(CONFIRM_INPUT_KEY.to_string(), request);
    Ok(InputRequiredResult::new(
        Some(requests),
        Some(stateless.seal_pending(&pending)),
    ))
}

/// A downstream server's `InputRequiredResult` for `tool` with `args`,
/// as passed to the client: its `inputRequests` unchanged, its
/// `requestState` sealed inside the proxy's (with `confirmed`: whether the
/// user already confirmed this call, so the retry is not asked again).
pub fn wrap_downstream(
    stateless: &Stateless,
    tool: &str,
    args: &Value,
    downstream: InputRequiredResult,
    confirmed: bool,
) -> InputRequiredResult {
    let pending = PendingCall {
        kind: "downstream".into(),
        tool: tool.to_string(),
        digest: args_digest(args),
        nonce: Stateless::nonce(),
        confirmed,
        inner: downstream.request_state,
        hash: None,
    };
    let mut out = InputRequiredResult::new(
        downstream.input_requests,
        Some(stateless.seal_pending(&pending)),
    );
    out.meta = downstream.meta;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn st() -> Stateless {
        Stateless::from_config(None, Duration::from_secs(60)).unwrap()
    }

    fn retry(args: Value, state: Option<String>, answer: Option<Value>) -> CallToolRequestParams {
        let mut r = CallToolRequestParams::new("sqlite__write_query")
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        r.request_state = state;
        if let Some(a) = answer {
            let mut m = rmcp::model::InputResponses::new();
            m.insert(CONFIRM_INPUT_KEY.into(), a);
            r.input_responses = Some(m);
        }
        r
    }

    #[test]
    fn a_confirmation_round_trip_accepts_once_and_only_for_the_same_arguments() {
        let s = st();
        let args = json!({"query": "DELETE FROM users"});
        let ir = ask(
            &s,
            "ask",
            "sqlite.write_query",
            &args,
            "m".into(),
            "t".into(),
            "r",
            None,
        )
        .unwrap();
        let v = serde_json::to_value(&ir).unwrap();
        assert_eq!(v["resultType"], "input_required");
        assert_eq!(
            v["inputRequests"][CONFIRM_INPUT_KEY]["method"],
            "elicitation/create"
        );
        let state = ir.request_state.clone().unwrap();
        let yes = json!({"action": "accept", "content": {"confirm": true}});
        let other = retry(
            json!({"query": "DROP TABLE users"}),
            Some(state.clone()),
            Some(yes.clone()),
        );
        assert_eq!(
            verify(
                &s,
                &other,
                "sqlite.write_query",
                &json!({"query": "DROP TABLE users"})
            ),
            Retry::Refused(StateError::OtherCall)
        );
        let good = retry(args.clone(), Some(state.clone()), Some(yes));
        assert!(
            matches!(verify(&s, &good, "sqlite.write_query", &args), Retry::Valid(p) if p.kind == "ask")
        );
        assert_eq!(answer(&good), Some(true));
        assert_eq!(
            verify(&s, &good, "sqlite.write_query", &args),
            Retry::Refused(StateError::Replayed)
        );
        let mut tampered = state.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let t = retry(
            args.clone(),
            Some(String::from_utf8(tampered).unwrap()),
            None,
        );
        assert_eq!(
            verify(&s, &t, "sqlite.write_query", &args),
            Retry::Refused(StateError::Invalid)
        );
        assert_eq!(
            verify(&st(), &good, "sqlite.write_query", &args),
            Retry::Refused(StateError::Invalid)
        );
    }

    #[test]
    fn only_an_accept_with_the_box_ticked_confirms() {
        let a = json!({});
        for (resp, want) in [
            (
                json!({"action": "accept", "content": {"confirm": true}}),
                Some(true),
            ),
            (
                json!({"action": "accept", "content": {"confirm": false}}),
                Some(false),
            ),
            (json!({"action": "accept"}), Some(false)),
            (json!({"action": "decline"}), Some(false)),
            (
                json!({"action": "cancel", "content": {"confirm": true}}),
                Some(false),
            ),
        ] {
            assert_eq!(
                answer(&retry(a.clone(), None, Some(resp.clone()))),
                want,
                "{resp}"
            );
        }
        assert_eq!(answer(&retry(a, None, None)), None);
    }
}
