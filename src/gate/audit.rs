//! Audit (seed 002 layer 3): one JSON Lines record per verdict and per
//! execution, and the summary of a log (`toolgate audit summary FILE`).
//!
//! A record keeps the time, session id, tool, decision, rule ids, a digest
//! and a redacted preview of the arguments (keys and secrets matched by
//! `[gate.audit]` are replaced), the latency and the outcome. The `tracing`
//! events are emitted by [`super::Gate`] itself, so a subscriber sees every
//! verdict even without a sink.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Verdict;
use super::config::AuditConfig;
use super::exec::Execution;
use super::types::Action;

/// One audit record (one line of the log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// RFC 3339 UTC time, millisecond precision.
    pub time: String,
    /// `verdict` or `execution`.
    pub event: String,
    /// Identifies the call: a verdict and the execution that follows share it.
    pub call_id: String,
    /// Session id given by the embedder, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Tool name (canonical when known).
    pub tool: String,
    /// The gate's decision.
    pub decision: Action,
    /// Ids of the rules that fired.
    #[serde(default)]
    pub rule_ids: Vec<String>,
    /// FNV-1a 64 of the redacted arguments JSON (hex).
    pub args_digest: String,
    /// The redacted arguments JSON, cut to `max_preview_bytes`.
    pub args_preview: String,
    /// Time in the gate (verdict) or running the tool (execution), in milliseconds.
    pub latency_ms: f64,
    /// `allowed`, `asked`, `denied` (verdicts); `success`, `error`, `not_run` (executions).
    pub outcome: String,
    /// For a failure: its kind (`validation_error`, `dangerous_blocked`, `timeout`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// Attempts made (executions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// The call's `[gate.flow]` labels and the flow rules it completed,
    /// with the calls that armed them (`labels`, `flow`; verdicts only,
    /// left out when empty; see [`super::flow::FlowAudit`]).
    #[serde(flatten)]
    pub flow: super::flow::FlowAudit,
}

/// Where audit records go.
pub trait AuditSink: Send + Sync {
    /// Writes one record. Failures are reported through `tracing`, never panics.
    fn record(&self, record: &AuditRecord);
}

/// Appends records as JSON Lines to a writer (a file opened for append).
pub struct JsonlSink {
    out: Mutex<Box<dyn Write + Send>>,
    /// The first write failure (see [`JsonlSink::write_error`]).
    failed: Mutex<Option<String>>,
}

impl JsonlSink {
    /// Opens (creating it if needed) `path` for appending.
    pub fn open(path: &std::path::Path) -> std::io::Result<JsonlSink> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(JsonlSink::new(Box::new(f)))
    }

    /// A sink over any writer.
    pub fn new(out: Box<dyn Write + Send>) -> JsonlSink {
        JsonlSink {
            out: Mutex::new(out),
            failed: Mutex::new(None),
        }
    }

    /// The first record that could not be serialized or written, as its
    /// error's text (`None`: every record so far was written). A caller
    /// for whom a lost audit record is a failure (`toolgate guard --audit`:
    /// exit 3) checks it after the call.
    pub fn write_error(&self) -> Option<String> {
        match self.failed.lock() {
            Ok(f) => f.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn fail(&self, e: String) {
        let mut f = match self.failed.lock() {
            Ok(f) => f,
            Err(p) => p.into_inner(),
        };
        f.get_or_insert(e);
    }
}

impl AuditSink for JsonlSink {
    fn record(&self, record: &AuditRecord) {
        let mut line = match serde_json::to_string(record) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(target: "toolgate::audit", "cannot serialize an audit record: {e}");
                self.fail(format!("cannot serialize an audit record: {e}"));
                return;
            }
        };
        line.push('\n');
        let mut out = match self.out.lock() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        };
        if let Err(e) = out.write_all(line.as_bytes()).and_then(|_| out.flush()) {
            tracing::error!(target: "toolgate::audit", "cannot write an audit record: {e}");
            drop(out);
            self.fail(format!("cannot write an audit record: {e}"));
        }
    }
}

/// A sink that keeps records in memory (tests, embedders that ship them elsewhere).
#[derive(Default)]
pub struct MemorySink {
    /// The records so far.
    pub records: Mutex<Vec<AuditRecord>>,
}

impl AuditSink for MemorySink {
    fn record(&self, record: &AuditRecord) {
        match self.records.lock() {
            Ok(mut r) => r.push(record.clone()),
            Err(p) => p.into_inner().push(record.clone()),
        }
    }
}

/// `value` with secrets replaced: values under keys matching `redact_keys`,
/// and substrings matching `redact_values`.
pub fn redact(cfg: &AuditConfig, value: &Value) -> Value {
    fn walk(cfg: &AuditConfig, v: &Value, depth: usize) -> Value {
        if depth > 64 {
            return Value::String(cfg.replacement.clone());
        }
        match v {
            Value::String(s) => {
                let mut s = s.clone();
                for r in &cfg.redact_values {
                    if r.0.is_match(&s) {
                        s = r.0.replace_all(&s, cfg.replacement.as_str()).into_owned();
                    }
                }
                Value::String(s)
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(cfg, x, depth + 1)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| {
                        if cfg.redact_keys.0.is_match(k) && !x.is_null() {
                            (k.clone(), Value::String(cfg.replacement.clone()))
                        } else {
                            (k.clone(), walk(cfg, x, depth + 1))
                        }
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    walk(cfg, value, 0)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf29ce484222325u64;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn digest_and_preview(cfg: &AuditConfig, args: &Value) -> (String, String) {
    let red = redact(cfg, args);
    let text = red.to_string();
    let digest = format!("{:016x}", fnv1a(text.as_bytes()));
    let preview = if text.len() <= cfg.max_preview_bytes {
        text
    } else {
        let mut end = cfg.max_preview_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &text[..end])
    };
    (digest, preview)
}

/// RFC 3339 UTC with milliseconds for a time since the epoch.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let ms = d.subsec_millis();
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

fn call_id(tool: &str, args_digest: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    let h = fnv1a(format!("{tool}{args_digest}{now}{n}{}", std::process::id()).as_bytes());
    format!("{h:016x}")
}

impl AuditRecord {
    /// The record of a verdict.
    pub fn verdict(cfg: &AuditConfig, session: Option<&str>, v: &Verdict) -> AuditRecord {
        let (args_digest, args_preview) = digest_and_preview(cfg, &v.arguments);
        let outcome = match v.decision {
            Action::Allow => "allowed",
            Action::Ask => "asked",
            Action::Deny => "denied",
        };
        AuditRecord {
            time: rfc3339(SystemTime::now()),
            event: "verdict".into(),
            call_id: v
                .call_id
                .get_or_init(|| call_id(&v.tool, &args_digest))
                .clone(),
            session: session.map(str::to_string),
            tool: v.tool.clone(),
            decision: v.decision,
            rule_ids: v.findings.iter().map(|f| f.rule_id.clone()).collect(),
            args_digest,
            args_preview,
            latency_ms: millis(v.latency),
            outcome: outcome.into(),
            error_kind: v.error_kind().map(str::to_string),
            attempts: None,
            flow: super::flow::FlowAudit::of(v),
        }
    }

    /// The record of an execution that followed verdict `v`.
    pub fn execution<T>(
        cfg: &AuditConfig,
        session: Option<&str>,
        v: &Verdict,
        ex: &Execution<T>,
    ) -> AuditRecord {
        let (args_digest, args_preview) = digest_and_preview(cfg, &v.arguments);
        let (outcome, error_kind) = match &ex.outcome {
            Ok(_) => ("success", None),
            Err(super::ExecError::NotRun(_)) => ("not_run", Some(ex_kind(ex))),
            Err(_) => ("error", Some(ex_kind(ex))),
        };
        AuditRecord {
            time: rfc3339(SystemTime::now()),
            event: "execution".into(),
            call_id: v
                .call_id
                .get_or_init(|| call_id(&v.tool, &args_digest))
                .clone(),
            session: session.map(str::to_string),
            tool: v.tool.clone(),
            decision: v.decision,
            rule_ids: v.findings.iter().map(|f| f.rule_id.clone()).collect(),
            args_digest,
            args_preview,
            latency_ms: millis(ex.latency),
            outcome: outcome.into(),
            error_kind,
            attempts: Some(ex.attempts),
            // on the verdict's record (the same call_id)
            flow: Default::default(),
        }
    }
}

/// A duration in milliseconds, to the nanosecond and without binary noise:
/// 45,485 ns is `0.045485`, not `0.045485000000000005` (which
/// `as_secs_f64() * 1000.0` gives).
pub fn millis(d: std::time::Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

/// Milliseconds rounded to the nanosecond (logs written before [`millis`]
/// carry binary noise such as `0.045485000000000005`).
fn round_ns(ms: f64) -> f64 {
    let ns = ms * 1e6;
    // (a latency near f64::MAX has no nanoseconds to round, and must not
    // become infinite: `audit summary` printed `p95 inf s`)
    if ns.is_finite() { ns.round() / 1e6 } else { ms }
}

fn ex_kind<T>(ex: &Execution<T>) -> String {
    match &ex.outcome {
        Ok(_) => String::new(),
        Err(e) => e.kind(),
    }
}

/// Seed 002's `ToolTracer.get_summary`, over an audit log: the gate's
/// records (`toolgate guard --audit`, [`AuditRecord`]) and the MCP proxy's
/// (`toolgate mcp-proxy --audit`: one line per call, with `decision`,
/// `confirmed`, `outcome` and `attempts`), alone or mixed in one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditSummary {
    /// Calls: records grouped by call id (an execution supersedes its verdict);
    /// a proxy record is one call. Proxy records that are not calls
    /// (`definition_changed`, `definition_accepted`) are counted in `events`.
    pub total_calls: usize,
    /// Calls that succeeded (executed successfully, allowed and not executed,
    /// or forwarded by the proxy with outcome `ok`).
    pub successes: usize,
    /// `successes / total_calls`, in percent (0 when there is no call).
    pub success_rate: f64,
    /// Median latency of the calls, in milliseconds.
    pub latency_p50_ms: f64,
    /// 95th percentile latency (nearest rank), in milliseconds.
    pub latency_p95_ms: f64,
    /// Failed calls by error kind (the gate's `error_kind`, or the proxy's
    /// outcome: `denied`, `tool_error`, `input_required`, `state_refused`, ...).
    pub error_breakdown: BTreeMap<String, usize>,
    /// Calls by the gate's decision: `allow`, `ask`, `deny` (and `none` for a
    /// proxy call that ended before the gate was asked).
    pub decisions: BTreeMap<String, usize>,
    /// Confirmations of the calls the gate asked about.
    pub confirmations: Confirmations,
    /// Latency of the calls forwarded to a downstream server (proxy records
    /// with at least one attempt), milliseconds; `None` without such a call.
    pub downstream: Option<DownstreamLatency>,
    /// Proxy records that are not calls, by outcome.
    pub events: BTreeMap<String, usize>,
    /// Records read.
    pub records: usize,
    /// Of which written by the gate (`guard --audit`).
    pub gate_records: usize,
    /// Of which written by the MCP proxy (`mcp-proxy --audit`).
    pub proxy_records: usize,
    /// Lines that are not audit records (skipped).
    pub skipped_lines: usize,
    /// The first line that is not an audit record: its 1-based number and
    /// what is wrong with it (for the error when no line is a record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_skipped: Option<(usize, String)>,
    /// The 1-based numbers of the first [`SKIPPED_LINES_KEPT`] skipped
    /// lines, in file order (`skipped_lines` counts them all).
    pub skipped_line_numbers: Vec<usize>,
    /// Why each of `skipped_line_numbers` was skipped (same order): a line
    /// that is not JSON, not a record, or a record with an unknown outcome
    /// or a latency that is not a duration (negative).
    pub skipped_why: Vec<String>,
    /// Gate records that repeat an earlier record's `call_id` and `event`
    /// (a log concatenated with itself, a line pasted twice): counted once,
    /// as the first; a call's verdict and its execution are not a repeat.
    #[serde(skip_serializing_if = "is_zero")]
    pub repeated_records: usize,
    /// The 1-based numbers of the first [`SKIPPED_LINES_KEPT`] repeated
    /// records, in file order (`repeated_records` counts them all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repeated_line_numbers: Vec<usize>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How many skipped line numbers an [`AuditSummary`] keeps.
pub const SKIPPED_LINES_KEPT: usize = 10;

/// What happened to the calls the gate asked about.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Confirmations {
    /// Calls whose decision was `ask`.
    pub asked: usize,
    /// The user confirmed (the call went ahead).
    pub confirmed: usize,
    /// The user declined or cancelled.
    pub declined: usize,
    /// Not answered: the client could not be asked (`confirmation_required`),
    /// or a modern client was sent an `InputRequiredResult` (`input_required`).
    pub unanswered: usize,
}

/// Percentiles of the downstream latency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DownstreamLatency {
    /// Calls forwarded downstream.
    pub calls: usize,
    /// Median, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile (nearest rank), milliseconds.
    pub p95_ms: f64,
}

/// One line of the MCP proxy's audit log, as far as the summary reads it.
#[derive(Debug, Deserialize)]
struct ProxyLine {
    #[allow(dead_code)]
    time: f64,
    #[allow(dead_code)]
    session: String,
    #[allow(dead_code)]
    tool: String,
    decision: String,
    #[serde(default)]
    confirmed: Option<bool>,
    latency_ms: f64,
    outcome: String,
    #[serde(default)]
    attempts: u32,
}

/// One line of the log, in either format.
enum Line {
    Gate(AuditRecord),
    Proxy(ProxyLine),
}

/// The outcomes of the gate's records, by event ([`AuditRecord::verdict`],
/// [`AuditRecord::execution`]).
pub const GATE_OUTCOMES: [(&str, &[&str]); 2] = [
    ("verdict", &["allowed", "asked", "denied"]),
    ("execution", &["success", "not_run", "error"]),
];

/// The outcomes of the MCP proxy's records (`toolgate::mcp::audit::Outcome`,
/// snake case; a test there checks that the two lists agree).
pub const PROXY_OUTCOMES: [&str; 15] = [
    "ok",
    "tool_error",
    "rpc_error",
    "timeout",
    "unavailable",
    "denied",
    "declined",
    "confirmation_required",
    "inactive",
    "cancelled",
    "limited",
    "definition_changed",
    "definition_accepted",
    "input_required",
    "state_refused",
];

/// `Err` when `outcome` is not one of `known` (the line is skipped with
/// why), or `latency_ms` is negative (a latency is a duration; JSON has no
/// NaN, and a number too large for a float does not parse).
fn check_values(what: &str, outcome: &str, known: &[&str], latency_ms: f64) -> Result<(), String> {
    if !known.contains(&outcome) {
        return Err(format!(
            "unknown outcome `{}` of a {what} (expected one of: {})",
            crate::diag::echo(outcome),
            known.join(", ")
        ));
    }
    if !(latency_ms >= 0.0 && latency_ms.is_finite()) {
        return Err(format!(
            "latency_ms {} of a {what} is not a duration (a number of milliseconds, 0 or more)",
            crate::diag::short_number(latency_ms)
        ));
    }
    Ok(())
}

fn parse_line(line: &str) -> Result<Line, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    // The gate's records carry a `call_id` and an `event`; the proxy's do not.
    if v.get("call_id").is_some() || v.get("event").is_some() {
        let r = serde_json::from_value::<AuditRecord>(v)
            .map_err(|e| format!("not a gate audit record: {e}"))?;
        let Some((_, known)) = GATE_OUTCOMES.iter().find(|(e, _)| *e == r.event) else {
            return Err(format!(
                "unknown event `{}` of a gate record (expected verdict or execution)",
                crate::diag::echo(&r.event)
            ));
        };
        check_values(
            &format!("gate {} record", r.event),
            &r.outcome,
            known,
            r.latency_ms,
        )?;
        Ok(Line::Gate(r))
    } else {
        let p = serde_json::from_value::<ProxyLine>(v)
            .map_err(|e| format!("not an audit record (gate or proxy): {e}"))?;
        check_values("proxy record", &p.outcome, &PROXY_OUTCOMES, p.latency_ms)?;
        Ok(Line::Proxy(p))
    }
}

/// `Ok` when `line` is one audit record (of the gate or of the proxy), as
/// [`summarize`] reads it; else why not. Used to refuse appending records
/// to a file that is not an audit log (`guard --audit my-policy.toml`).
pub fn check_record(line: &str) -> Result<(), String> {
    parse_line(line).map(|_| ())
}

/// Nearest-rank percentile of sorted values (0 when empty).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Summarizes an audit log (gate records, proxy records, or both).
pub fn summarize(input: impl BufRead) -> std::io::Result<AuditSummary> {
    // call id -> (record that decides the call's outcome)
    let mut calls: BTreeMap<String, AuditRecord> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut proxy: Vec<ProxyLine> = Vec::new();
    let mut events = BTreeMap::new();
    let (mut records, mut gate_records, mut skipped) = (0, 0, 0);
    let mut first_skipped = None;
    let mut skipped_why = Vec::new();
    let mut skipped_numbers = Vec::new();
    // (call id, event) of the gate records read, to tell a repeat
    let mut seen: std::collections::HashSet<(String, String)> = Default::default();
    let (mut repeated, mut repeated_numbers) = (0, Vec::new());
    // Read as bytes, line by line: a line that is not UTF-8 is skipped (with
    // the byte offset of its first bad byte), not the end of the summary; a
    // UTF-8 byte-order mark at the start of the file is accepted.
    let mut input = input;
    let mut buf = Vec::new();
    let mut offset = 0usize;
    for i in 0.. {
        buf.clear();
        let n = input.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        let start = offset;
        offset += n;
        let mut bytes = &buf[..];
        let mut at = start;
        if i == 0 && bytes.starts_with(b"\xEF\xBB\xBF") {
            bytes = &bytes[3..];
            at += 3;
        }
        // a UTF-16 log is named on its first line
        let utf16 = (i == 0)
            .then(|| crate::datafile::utf16_mark(bytes))
            .flatten();
        let parsed = match std::str::from_utf8(bytes) {
            _ if let Some(mark) = utf16 => Err(crate::datafile::utf16_message(mark)),
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => parse_line(line),
            Err(e) => Err(format!(
                "not valid UTF-8 (byte offset {} of the file)",
                at + e.valid_up_to()
            )),
        };
        let r = match parsed {
            Ok(Line::Gate(r)) => r,
            Ok(Line::Proxy(p)) => {
                records += 1;
                if p.outcome.starts_with("definition_") {
                    *events.entry(p.outcome).or_insert(0) += 1;
                } else {
                    proxy.push(p);
                }
                continue;
            }
            Err(why) => {
                skipped += 1;
                if skipped_numbers.len() < SKIPPED_LINES_KEPT {
                    skipped_numbers.push(i + 1);
                    skipped_why.push(why.clone());
                }
                first_skipped.get_or_insert((i + 1, why));
                continue;
            }
        };
        records += 1;
        gate_records += 1;
        if !seen.insert((r.call_id.clone(), r.event.clone())) {
            repeated += 1;
            if repeated_numbers.len() < SKIPPED_LINES_KEPT {
                repeated_numbers.push(i + 1);
            }
            continue;
        }
        match calls.get(&r.call_id) {
            Some(prev) if prev.event == "execution" && r.event != "execution" => {}
            Some(_) => {
                calls.insert(r.call_id.clone(), r);
            }
            None => {
                order.push(r.call_id.clone());
                calls.insert(r.call_id.clone(), r);
            }
        }
    }
    let mut successes = 0;
    let mut latencies = Vec::new();
    let mut breakdown = BTreeMap::new();
    let mut decisions = BTreeMap::new();
    let mut conf = Confirmations::default();
    for id in &order {
        let Some(r) = calls.get(id) else { continue };
        latencies.push(r.latency_ms);
        *decisions.entry(r.decision.to_string()).or_insert(0) += 1;
        if r.decision == Action::Ask {
            conf.asked += 1;
            conf.unanswered += 1;
        }
        let ok = match r.event.as_str() {
            "execution" => r.outcome == "success",
            _ => r.decision == Action::Allow,
        };
        if ok {
            successes += 1;
        } else {
            let kind = r.error_kind.clone().unwrap_or_else(|| r.outcome.clone());
            *breakdown.entry(kind).or_insert(0) += 1;
        }
    }
    let mut downstream = Vec::new();
    for p in &proxy {
        latencies.push(p.latency_ms);
        *decisions.entry(p.decision.clone()).or_insert(0) += 1;
        if p.decision == "ask" {
            conf.asked += 1;
            match (p.confirmed, p.outcome.as_str()) {
                (Some(true), _) => conf.confirmed += 1,
                (Some(false), _) | (None, "declined" | "cancelled") => conf.declined += 1,
                _ => conf.unanswered += 1,
            }
        }
        if p.attempts > 0 {
            downstream.push(p.latency_ms);
        }
        if p.outcome == "ok" {
            successes += 1;
        } else {
            *breakdown.entry(p.outcome.clone()).or_insert(0) += 1;
        }
    }
    latencies.sort_by(f64::total_cmp);
    downstream.sort_by(f64::total_cmp);
    let total = order.len() + proxy.len();
    Ok(AuditSummary {
        total_calls: total,
        successes,
        success_rate: if total == 0 {
            0.0
        } else {
            successes as f64 * 100.0 / total as f64
        },
        latency_p50_ms: round_ns(percentile(&latencies, 50.0)),
        latency_p95_ms: round_ns(percentile(&latencies, 95.0)),
        error_breakdown: breakdown,
        decisions,
        confirmations: conf,
        downstream: (!downstream.is_empty()).then(|| DownstreamLatency {
            calls: downstream.len(),
            p50_ms: round_ns(percentile(&downstream, 50.0)),
            p95_ms: round_ns(percentile(&downstream, 95.0)),
        }),
        events,
        records,
        gate_records,
        proxy_records: records - gate_records,
        skipped_lines: skipped,
        first_skipped,
        skipped_line_numbers: skipped_numbers,
        skipped_why,
        repeated_records: repeated,
        repeated_line_numbers: repeated_numbers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_latency_near_the_largest_float_stays_finite() {
        assert_eq!(round_ns(1.797e308), 1.797e308);
        assert_eq!(round_ns(0.045485000000000005), 0.045485);
    }

    #[test]
    fn latencies_carry_no_binary_noise() {
        let d = std::time::Duration::from_nanos(45_485);
        assert_eq!(
            (d.as_secs_f64() * 1000.0).to_string(),
            "0.045485000000000005"
        );
        assert_eq!(millis(d).to_string(), "0.045485");
        assert_eq!(
            millis(std::time::Duration::from_millis(1500)).to_string(),
            "1500"
        );
        let log = "{\"time\":\"t\",\"event\":\"verdict\",\"call_id\":\"a\",\"tool\":\"x\",\"decision\":\"allow\",\"rule_ids\":[],\"args_digest\":\"d\",\"args_preview\":\"{}\",\"latency_ms\":0.045485000000000005,\"outcome\":\"allowed\"}\n";
        let s = summarize(log.as_bytes()).unwrap();
        assert_eq!(s.total_calls, 1);
        assert_eq!(serde_json::json!(s.latency_p50_ms).to_string(), "0.045485");
    }

    #[test]
    fn rfc3339_formats_known_instants() {
        let t = UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn secrets_are_redacted() {
        let cfg = &crate::gate::config::shipped().audit;
        let v = json!({
            "api_key": "abc", "password": "p", "nested": {"Authorization": "Bearer x"},
            "cmd": "curl -H 'Authorization: Bearer abcdefghijkl' https://u:pw@host/x",
            "note": "token=s3cr3t&x=1", "key": "sk-abcdefghijklmnopqrstuv"
        });
        let r = redact(cfg, &v).to_string();
        for secret in [
            "abc\"",
            "\"p\"",
            "Bearer x",
            "abcdefghijkl",
            "s3cr3t",
            "pw@",
            "sk-abc",
        ] {
            assert!(!r.contains(secret), "{secret} left in {r}");
        }
        assert!(r.contains("x=1"), "{r}");
    }
}
