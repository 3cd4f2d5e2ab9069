//! The audit seam: one record per `tools/call`, whatever its fate (and one
//! per `resources/read`: `tool` = the URI, `via` = `resources/read`,
//! decision `none`, as reads are not gated).
//!
//! [`JsonlAudit`] appends one JSON object per line to a file:
//!
//! ```json
//! {"time":1764412345.123,"session":"6f2a-1c","tool":"sqlite.read_query","name":"sqlite__read_query",
//!  "server":"sqlite","via":null,"decision":"allow","confirmed":null,"latency_ms":3.41,"outcome":"ok",
//!  "attempts":1,"detail":null}
//! ```

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Forwarded; the server returned a result that is not an error.
    Ok,
    /// Forwarded; the server returned a result with `isError: true`.
    ToolError,
    /// Forwarded; the server answered with a JSON-RPC error.
    RpcError,
    /// Forwarded; no answer within the time limit (after all retries).
    Timeout,
    /// Not forwarded: the server is not running, or failed during the call.
    Unavailable,
    /// The gate denied the call.
    Denied,
    /// The gate asked and the user declined (or cancelled).
    Declined,
    /// The gate asked and the client cannot be asked (no elicitation).
    ConfirmationRequired,
    /// The tool is registered but not active, and the policy forbids such calls.
    Inactive,
    /// The client cancelled the request.
    Cancelled,
    /// Not forwarded: no call slot was free within the queue time
    /// (`max_concurrent_calls_per_session`, `max_concurrent_calls`), or the
    /// proxy is shutting down.
    Limited,
    /// Not a call: a downstream tool's definition (description or
    /// `inputSchema`) differs from its pin; `decision` is the policy's
    /// `[discovery] on_definition_change`.
    DefinitionChanged,
    /// Not a call: the user confirmed a changed definition (it is the new pin).
    DefinitionAccepted,
    /// Not forwarded yet: a modern client was answered with an
    /// `InputRequiredResult` (a confirmation, SEP-2322) and may retry.
    InputRequired,
    /// Not forwarded: a modern client's retry carried a `requestState` or
    /// session handle that failed verification (changed, signed by another
    /// key, expired, used already, or issued for other arguments).
    StateRefused,
}

/// One audited call.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// Unix time of the call's arrival, seconds.
    pub time: f64,
    /// The proxy session (one per client connection).
    pub session: String,
    /// The tool's catalog name (`server.tool`, as policies, tags and traces
    /// name it); the name as called when it names no tool; for a
    /// `resources/read`, the resource's URI.
    pub tool: String,
    /// The name the client sees and calls (the exposed, client-safe name).
    pub name: Option<String>,
    /// The server it routes to, when known.
    pub server: Option<String>,
    /// The proxy tool the call came through (`toolgate__call_tool`), if
    /// any; `resources/read` for a resource read.
    pub via: Option<String>,
    /// The decision: `allow`, `ask` or `deny` (the gate's, or `deny` for an
    /// inactive tool the policy forbids), `none` when the call ended before
    /// the gate was asked (malformed `_meta`, server not available).
    pub decision: &'static str,
    /// For `ask`: whether the user confirmed.
    pub confirmed: Option<bool>,
    /// Time from arrival to answer, milliseconds.
    pub latency_ms: f64,
    /// How it ended.
    pub outcome: Outcome,
    /// Attempts made downstream (0 when not forwarded).
    pub attempts: u32,
    /// The gate's reason or message, or the error.
    pub detail: Option<String>,
    /// The OpenTelemetry trace id of the request (32 hex digits): the
    /// client's `traceparent`'s, or the proxy's own span's
    /// ([`super::trace`]); left out when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The call's `[gate.flow]` labels (`labels`) and the flow rules it
    /// completed, with the earlier calls that armed each (`flow`): tool,
    /// call number, unix time, label, why. Flattened into the line and
    /// left out when empty ([`crate::gate::flow::FlowAudit`]).
    #[serde(flatten)]
    pub flow: crate::gate::flow::FlowAudit,
}

/// Where audit records go. `record` is called on the request path, after the
/// answer is ready: keep it short.
pub trait AuditSink: Send + Sync {
    /// Stores one record.
    fn record(&self, record: &AuditRecord);
}

/// Discards records.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoAudit;

impl AuditSink for NoAudit {
    fn record(&self, _record: &AuditRecord) {}
}

/// Appends records to a file as JSON lines, flushed after each record.
#[derive(Debug)]
pub struct JsonlAudit {
    file: Mutex<std::io::BufWriter<std::fs::File>>,
}

impl JsonlAudit {
    /// Opens (creating it if needed) `path` for appending.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(JsonlAudit {
            file: Mutex::new(std::io::BufWriter::new(f)),
        })
    }
}

impl AuditSink for JsonlAudit {
    fn record(&self, record: &AuditRecord) {
        let mut line = match serde_json::to_vec(record) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(error = %e, "audit record not serialisable");
                return;
            }
        };
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = f.write_all(&line).and_then(|_| f.flush()) {
            tracing::error!(error = %e, "cannot write the audit file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_knows_every_outcome() {
        // a new variant breaks this match, and must join both lists
        let all = |o: Outcome| match o {
            Outcome::Ok
            | Outcome::ToolError
            | Outcome::RpcError
            | Outcome::Timeout
            | Outcome::Unavailable
            | Outcome::Denied
            | Outcome::Declined
            | Outcome::ConfirmationRequired
            | Outcome::Inactive
            | Outcome::Cancelled
            | Outcome::Limited
            | Outcome::DefinitionChanged
            | Outcome::DefinitionAccepted
            | Outcome::InputRequired
            | Outcome::StateRefused => o,
        };
        let names: Vec<String> = [
            Outcome::Ok,
            Outcome::ToolError,
            Outcome::RpcError,
            Outcome::Timeout,
            Outcome::Unavailable,
            Outcome::Denied,
            Outcome::Declined,
            Outcome::ConfirmationRequired,
            Outcome::Inactive,
            Outcome::Cancelled,
            Outcome::Limited,
            Outcome::DefinitionChanged,
            Outcome::DefinitionAccepted,
            Outcome::InputRequired,
            Outcome::StateRefused,
        ]
        .into_iter()
        .map(|o| {
            serde_json::to_value(all(o))
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
        assert_eq!(names, crate::gate::audit::PROXY_OUTCOMES);
    }

    #[test]
    fn jsonl_audit_appends_one_line_per_record() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl");
        let a = JsonlAudit::open(&p).unwrap();
        let r = AuditRecord {
            time: 1.5,
            session: "s".into(),
            tool: "time.get_current_time".into(),
            name: Some("time__get_current_time".into()),
            server: Some("time".into()),
            via: None,
            decision: "allow",
            confirmed: None,
            latency_ms: 0.25,
            outcome: Outcome::Ok,
            attempts: 1,
            detail: None,
            trace_id: None,
            flow: Default::default(),
        };
        a.record(&r);
        a.record(&AuditRecord {
            outcome: Outcome::Denied,
            decision: "deny",
            ..r
        });
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["outcome"], "ok");
        assert_eq!(lines[1]["decision"], "deny");
        assert_eq!(lines[1]["tool"], "time.get_current_time");
    }
}
