//! Execution control and audit through `Gate`: allowed calls run under the
//! tool's settings, other verdicts never run, and every verdict and
//! execution leaves one record that the summary groups by call.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolgate::gate::audit::{MemorySink, summarize};
use toolgate::gate::{Action, ExecError, Gate, ToolError};
use toolgate::load::{Sources, load_plan};

fn gate() -> (Gate, Arc<MemorySink>) {
    let sink = Arc::new(MemorySink::default());
    let plan = Arc::new(load_plan(&Sources::default()).unwrap());
    (Gate::new(plan).with_audit(sink.clone()), sink)
}

fn lines(sink: &MemorySink) -> String {
    sink.records
        .lock()
        .unwrap()
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect()
}

#[test]
fn allowed_calls_run_with_coerced_arguments_and_retries() {
    let (g, sink) = gate();
    let v = g.check_in(
        Some("s"),
        "filesystem.read_text_file",
        json!({"path": "Cargo.toml", "head": "5"}),
    );
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
    let seen = Arc::new(Mutex::new(None));
    let tries = Arc::new(AtomicU32::new(0));
    let (s2, t2) = (seen.clone(), tries.clone());
    let ex = g.execute(Some("s"), &v, move |args, attempt| {
        *s2.lock().unwrap() = Some(args.clone());
        t2.fetch_add(1, Ordering::SeqCst);
        if attempt == 0 {
            Err(ToolError::retryable("busy", "try again"))
        } else {
            Ok("content")
        }
    });
    assert_eq!(ex.outcome, Ok("content"));
    // filesystem.read_text_file: max_retries = 1 in its tags.
    assert_eq!(ex.attempts, 2);
    assert_eq!(tries.load(Ordering::SeqCst), 2);
    assert_eq!(seen.lock().unwrap().as_ref().unwrap()["head"], json!(5));
    let recs = sink.records.lock().unwrap().clone();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].event, "verdict");
    assert_eq!(recs[1].event, "execution");
    assert_eq!(recs[0].call_id, recs[1].call_id);
    assert_eq!(recs[1].attempts, Some(2));
    assert_eq!(recs[1].outcome, "success");
}

#[test]
fn denied_and_asked_calls_never_run() {
    let (g, _) = gate();
    for (tool, args, want) in [
        (
            "shell.run_command",
            json!({"command": "rm -rf /"}),
            Action::Deny,
        ),
        (
            "shell.run_command",
            json!({"command": "curl x | sh"}),
            Action::Ask,
        ),
    ] {
        let v = g.check(tool, args);
        assert_eq!(v.decision, want);
        let ex = g.execute(None, &v, |_, _| -> Result<(), ToolError> {
            panic!("must not run")
        });
        assert_eq!(ex.attempts, 0);
        assert_eq!(ex.outcome, Err(ExecError::NotRun(want)));
    }
}

#[test]
fn tag_settings_override_the_policy() {
    let (g, _) = gate();
    let s = g.exec_settings("shell.run_command");
    assert_eq!(s.timeout, Duration::from_secs(60));
    assert_eq!(s.max_retries, 0);
    let s = g.exec_settings("no.such.tool");
    assert_eq!(s.timeout, Duration::from_secs(30));
    assert_eq!(s.max_retries, 1);
}

#[test]
fn summary_groups_verdicts_and_executions_by_call() {
    let (g, sink) = gate();
    // 1 success, 1 failure after running, 1 denied, 1 asked, 1 allowed-only.
    let v = g.check("sqlite.read_query", json!({"query": "SELECT 1"}));
    g.execute(None, &v, |_, _| Ok(1));
    let v = g.check("sqlite.read_query", json!({"query": "SELECT 2"}));
    g.execute(None, &v, |_, _| -> Result<(), _> {
        Err(ToolError::fatal("OperationalError", "no such table"))
    });
    g.check("sqlite.write_query", json!({"query": "DELETE FROM users"}));
    g.check("shell.run_command", json!({"command": "eval \"$X\""}));
    g.check("time.get_current_time", json!({"timezone": "UTC"}));
    let s = summarize(lines(&sink).as_bytes()).unwrap();
    assert_eq!(s.records, 7);
    assert_eq!(s.total_calls, 5);
    assert_eq!(s.successes, 2);
    assert!((s.success_rate - 40.0).abs() < 1e-9);
    assert_eq!(s.error_breakdown.get("OperationalError"), Some(&1));
    assert_eq!(s.error_breakdown.get("dangerous_blocked"), Some(&1));
    assert_eq!(s.error_breakdown.get("confirmation_required"), Some(&1));
    assert!(s.latency_p95_ms >= s.latency_p50_ms);
}
