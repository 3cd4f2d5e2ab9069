//! Prometheus metrics of the proxy (`GET /metrics` on the `--listen`
//! address, or on `--metrics ADDR` in stdio mode), with the
//! `prometheus-client` crate (the OpenMetrics text format).
//!
//! Names follow the Prometheus conventions: a `toolgate_` prefix, the unit
//! in the name (`_seconds`), `_total` on counters. Label sets are bounded:
//! `tool` is a catalog name (`server.tool`) or the proxy's own tool, never an
//! argument value; a name the catalog does not know is counted as
//! `tool="(unknown)"`. Most of it is derived from the audit records
//! ([`Metrics::observe`]), so that what is counted and what is audited are
//! the same calls.
//!
//! | metric | type | labels | what |
//! | --- | --- | --- | --- |
//! | `toolgate_calls_total` | counter | `server`, `tool`, `decision`, `confirmed`, `outcome` | every `tools/call` as audited (`decision`: allow / ask / deny / none; `confirmed`: yes / no / -) |
//! | `toolgate_call_duration_seconds` | histogram | `server` | end to end: arrival to answer |
//! | `toolgate_gate_duration_seconds` | histogram | | the call gate's verdict |
//! | `toolgate_downstream_errors_total` | counter | `server`, `kind` | a forwarded call that ended in `rpc_error`, `timeout` or `unavailable` |
//! | `toolgate_downstream_restarts_total` | counter | `server` | a downstream server went down (and is restarted) |
//! | `toolgate_listed_tools` | histogram | | tools in a `tools/list` answer (the active set and the proxy's tools) |
//! | `toolgate_find_tools_results` | histogram | | tools a `toolgate__find_tools` search returned |
//! | `toolgate_catalog_compiles_total` | counter | `outcome` | catalog (re)compiles: `ok`, or `error` (the previous catalog keeps serving) |
//! | `toolgate_withheld_tools` | gauge | | tools withheld because their definition changed (pins) |
//! | `toolgate_shadow_decisions_total` | counter | `kind` | decisions also made under the shadow policy: `list` (a `tools/list` answer's active set), `call` (a call's verdict), `find` (a `toolgate__find_tools` result list) |
//! | `toolgate_shadow_diffs_total` | counter | `kind` | ... that differ from the live decision |
//! | `toolgate_shadow_loads_total` | counter | `outcome` | shadow policy loads: `ok`, or `error` (the last good shadow plan stays) |

use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::audit::AuditRecord;

/// Labels of `toolgate_calls_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: String,
    tool: String,
    decision: String,
    confirmed: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabel {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    server: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: String,
}

/// The proxy's metrics (see the module docs). Cheap to update from any
/// task; [`Metrics::encode`] renders the OpenMetrics text.
pub struct Metrics {
    registry: Mutex<Registry>,
    calls: Family<CallLabels, Counter>,
    call_seconds: Family<ServerLabel, Histogram>,
    gate_seconds: Histogram,
    downstream_errors: Family<ErrorLabels, Counter>,
    restarts: Family<ServerLabel, Counter>,
    listed: Histogram,
    found: Histogram,
    compiles: Family<OutcomeLabel, Counter>,
    withheld: Gauge,
    shadow_decisions: Family<KindLabel, Counter>,
    shadow_diffs: Family<KindLabel, Counter>,
    shadow_loads: Family<OutcomeLabel, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// The label a tool gets: its catalog name when the call resolved one (or
/// the proxy's own tool), else `(unknown)`.
fn tool_label(rec: &AuditRecord) -> String {
    if rec.name.is_some() {
        rec.tool.clone()
    } else {
        "(unknown)".into()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric (none observed yet).
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("toolgate");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "calls",
            "tools/call requests as audited, by server, tool, decision, confirmation and outcome",
            calls.clone(),
        );
        let call_seconds = Family::<ServerLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.5, 14))
        });
        registry.register(
            "call_duration_seconds",
            "tools/call end to end, from arrival to answer",
            call_seconds.clone(),
        );
        let gate_seconds = Histogram::new(exponential_buckets(0.000_005, 3.0, 12));
        registry.register(
            "gate_duration_seconds",
            "the call gate's verdict on one call",
            gate_seconds.clone(),
        );
        let downstream_errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "downstream_errors",
            "forwarded calls that ended in a JSON-RPC error, a timeout or an unavailable server",
            downstream_errors.clone(),
        );
        let restarts = Family::<ServerLabel, Counter>::default();
        registry.register(
            "downstream_restarts",
            "downstream servers that went down (and are restarted)",
            restarts.clone(),
        );
        let listed = Histogram::new(exponential_buckets(1.0, 2.0, 12));
        registry.register(
            "listed_tools",
            "tools in a tools/list answer",
            listed.clone(),
        );
        let found = Histogram::new([0.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 34.0]);
        registry.register(
            "find_tools_results",
            "tools a find_tools search returned",
            found.clone(),
        );
        let compiles = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "catalog_compiles",
            "catalog compiles (policy, tags or a server's tools changed), by outcome",
            compiles.clone(),
        );
        let withheld = Gauge::default();
        registry.register(
            "withheld_tools",
            "tools withheld because their definition changed since it was pinned",
            withheld.clone(),
        );
        let shadow_decisions = Family::<KindLabel, Counter>::default();
        registry.register(
            "shadow_decisions",
            "decisions also made under the shadow policy (list: an active set, call: a verdict, find: a find_tools result list)",
            shadow_decisions.clone(),
        );
        let shadow_diffs = Family::<KindLabel, Counter>::default();
        registry.register(
            "shadow_diffs",
            "shadow decisions that differ from the live ones (list: another active set, call: another verdict, find: another find_tools result list)",
            shadow_diffs.clone(),
        );
        let shadow_loads = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "shadow_loads",
            "shadow policy loads, by outcome (error: the last good shadow plan stays)",
            shadow_loads.clone(),
        );
        Metrics {
            shadow_decisions,
            shadow_diffs,
            shadow_loads,
            registry: Mutex::new(registry),
            calls,
            call_seconds,
            gate_seconds,
            downstream_errors,
            restarts,
            listed,
            found,
            compiles,
            withheld,
        }
    }

    /// Counts one audited call (calls, end-to-end latency, downstream errors).
    pub fn observe(&self, rec: &AuditRecord) {
        let server = rec.server.clone().unwrap_or_else(|| "toolgate".into());
        let outcome = serde_json::to_value(rec.outcome)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        self.calls
            .get_or_create(&CallLabels {
                server: server.clone(),
                tool: tool_label(rec),
                decision: rec.decision.to_string(),
                confirmed: match rec.confirmed {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "-",
                }
                .into(),
                outcome: outcome.clone(),
            })
            .inc();
        self.call_seconds
            .get_or_create(&ServerLabel {
                server: server.clone(),
            })
            .observe(rec.latency_ms / 1000.0);
        if matches!(outcome.as_str(), "rpc_error" | "timeout" | "unavailable") {
            self.downstream_errors
                .get_or_create(&ErrorLabels {
                    server,
                    kind: outcome,
                })
                .inc();
        }
    }

    /// The gate took `seconds` to decide a call.
    pub fn gate_time(&self, seconds: f64) {
        self.gate_seconds.observe(seconds);
    }

    /// Downstream server `server` went down.
    pub fn restart(&self, server: &str) {
        self.restarts
            .get_or_create(&ServerLabel {
                server: server.to_string(),
            })
            .inc();
    }

    /// A `tools/list` answer listed `n` tools.
    pub fn listed(&self, n: usize) {
        self.listed.observe(n as f64);
    }

    /// A search returned `n` tools.
    pub fn found(&self, n: usize) {
        self.found.observe(n as f64);
    }

    /// A catalog compile ended (`ok`).
    pub fn compiled(&self, ok: bool) {
        self.compiles
            .get_or_create(&OutcomeLabel {
                outcome: if ok { "ok" } else { "error" }.into(),
            })
            .inc();
    }

    /// `n` tools are withheld now.
    pub fn withheld(&self, n: usize) {
        self.withheld.set(n as i64);
    }

    /// A decision of `kind` (`list`, `call` or `find`) was also made under the shadow policy.
    pub fn shadow_decision(&self, kind: &str) {
        self.shadow_decisions
            .get_or_create(&KindLabel { kind: kind.into() })
            .inc();
    }

    /// A shadow decision of `kind` differed from the live one.
    pub fn shadow_diff(&self, kind: &str) {
        self.shadow_diffs
            .get_or_create(&KindLabel { kind: kind.into() })
            .inc();
    }

    /// The shadow policy loaded (`ok`) or was rejected.
    pub fn shadow_loaded(&self, ok: bool) {
        self.shadow_loads
            .get_or_create(&OutcomeLabel {
                outcome: if ok { "ok" } else { "error" }.into(),
            })
            .inc();
    }

    /// The OpenMetrics text of every metric (`GET /metrics`).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let reg = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        if prometheus_client::encoding::text::encode(&mut out, &reg).is_err() {
            out.clear();
        }
        out
    }
}

/// The `Content-Type` of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::audit::Outcome;

    fn rec(
        tool: &str,
        name: Option<&str>,
        decision: &'static str,
        outcome: Outcome,
    ) -> AuditRecord {
        AuditRecord {
            time: 0.0,
            session: "s".into(),
            tool: tool.into(),
            name: name.map(String::from),
            server: Some("sqlite".into()),
            via: None,
            decision,
            confirmed: None,
            latency_ms: 12.0,
            outcome,
            attempts: 1,
            detail: None,
            trace_id: None,
            flow: Default::default(),
        }
    }

    #[test]
    fn calls_are_counted_by_decision_and_unknown_names_are_not_labels() {
        let m = Metrics::new();
        m.observe(&rec(
            "sqlite.read_query",
            Some("sqlite__read_query"),
            "allow",
            Outcome::Ok,
        ));
        m.observe(&rec(
            "sqlite.read_query",
            Some("sqlite__read_query"),
            "allow",
            Outcome::Ok,
        ));
        m.observe(&rec(
            "sqlite.write_query",
            Some("sqlite__write_query"),
            "deny",
            Outcome::Denied,
        ));
        m.observe(&rec("DROP TABLE users; --", None, "deny", Outcome::Denied));
        m.observe(&rec(
            "sqlite.read_query",
            Some("sqlite__read_query"),
            "allow",
            Outcome::Timeout,
        ));
        m.listed(7);
        m.found(3);
        m.compiled(true);
        m.withheld(2);
        m.gate_time(0.00002);
        m.restart("sqlite");
        let t = m.encode();
        assert!(t.contains(r#"toolgate_calls_total{server="sqlite",tool="sqlite.read_query",decision="allow",confirmed="-",outcome="ok"} 2"#), "{t}");
        assert!(
            t.contains(r#"tool="sqlite.write_query",decision="deny""#),
            "{t}"
        );
        assert!(t.contains(r#"tool="(unknown)""#), "{t}");
        assert!(
            !t.contains("DROP TABLE"),
            "an unknown name is never a label: {t}"
        );
        assert!(
            t.contains(r#"toolgate_downstream_errors_total{server="sqlite",kind="timeout"} 1"#),
            "{t}"
        );
        assert!(
            t.contains(r#"toolgate_downstream_restarts_total{server="sqlite"} 1"#),
            "{t}"
        );
        assert!(t.contains("toolgate_withheld_tools 2"), "{t}");
        assert!(
            t.contains("toolgate_call_duration_seconds_count{server=\"sqlite\"} 5"),
            "{t}"
        );
        assert!(t.contains("toolgate_listed_tools_count 1"), "{t}");
        assert!(
            t.contains("toolgate_catalog_compiles_total{outcome=\"ok\"} 1"),
            "{t}"
        );
        assert!(t.ends_with("# EOF\n"), "{t}");
    }
}
