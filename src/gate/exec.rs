//! Execution control for embedders: run a tool handler under the policy's
//! timeout and retry settings (seed 002 layer 2), and report attempts and
//! latency.
//!
//! Synchronous, with threads: each attempt runs on its own thread and the
//! caller waits at most the timeout for it. A timed-out attempt cannot be
//! killed (Rust has no safe thread cancellation): it is abandoned and its
//! result discarded; handlers with side effects should honour their own
//! deadline too. Only errors marked retryable are retried (and timeouts when
//! `retry_timeouts` is set), after an exponential backoff.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::config::ExecutionConfig;
use super::types::Action;
use crate::parse::tags::GateTags;

/// A failure reported by a tool handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// Short kind for audit breakdowns (`ConnectionError`, `io`, ...).
    pub kind: String,
    /// What happened.
    pub message: String,
    /// Whether trying again may succeed.
    pub retryable: bool,
}

impl ToolError {
    /// A failure worth retrying (a transient network error, a busy resource).
    pub fn retryable(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError {
            kind: kind.into(),
            message: message.into(),
            retryable: true,
        }
    }

    /// A failure that trying again will not fix.
    pub fn fatal(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError {
            kind: kind.into(),
            message: message.into(),
            retryable: false,
        }
    }
}

/// Why an execution produced no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecError {
    /// The verdict was not `allow`: nothing ran.
    NotRun(Action),
    /// The last attempt failed.
    Failed(ToolError),
    /// The last attempt ran out of time.
    TimedOut(Duration),
    /// The handler panicked.
    Panicked(String),
}

impl ExecError {
    /// Short kind for audit breakdowns.
    pub fn kind(&self) -> String {
        match self {
            ExecError::NotRun(Action::Ask) => "confirmation_required".into(),
            ExecError::NotRun(_) => "not_run".into(),
            ExecError::Failed(e) => e.kind.clone(),
            ExecError::TimedOut(_) => "timeout".into(),
            ExecError::Panicked(_) => "panic".into(),
        }
    }
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecError::NotRun(a) => write!(f, "not run: the gate's decision is {a}"),
            ExecError::Failed(e) => write!(f, "{}: {}", e.kind, e.message),
            ExecError::TimedOut(d) => write!(f, "timed out after {:.3} s", d.as_secs_f64()),
            ExecError::Panicked(m) => write!(f, "the handler panicked: {m}"),
        }
    }
}

/// What running a handler gave.
#[derive(Debug)]
pub struct Execution<T> {
    /// The result of the last attempt.
    pub outcome: Result<T, ExecError>,
    /// Attempts made (0 when nothing ran).
    pub attempts: u32,
    /// Wall time, backoff included.
    pub latency: Duration,
    /// Time of each attempt.
    pub attempt_latencies: Vec<Duration>,
}

impl<T> Execution<T> {
    /// An execution that did not run.
    pub fn not_run(decision: Action) -> Self {
        Execution {
            outcome: Err(ExecError::NotRun(decision)),
            attempts: 0,
            latency: Duration::ZERO,
            attempt_latencies: Vec::new(),
        }
    }
}

/// Timeout and retry settings of one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecSettings {
    /// Time limit of one attempt.
    pub timeout: Duration,
    /// Retries after a retryable failure.
    pub max_retries: u32,
    /// Wait before the first retry.
    pub backoff_initial: Duration,
    /// Multiplier of each further wait.
    pub backoff_factor: f64,
    /// Longest wait.
    pub backoff_max: Duration,
    /// Whether a timed-out attempt is retried.
    pub retry_timeouts: bool,
}

impl ExecSettings {
    /// The policy's settings with `tags`' `timeout_seconds` and
    /// `max_retries` overrides.
    pub fn for_tool(cfg: &ExecutionConfig, tags: Option<&GateTags>) -> Self {
        let timeout = tags
            .and_then(|t| t.timeout_seconds)
            .unwrap_or(cfg.timeout_seconds);
        ExecSettings {
            timeout: Duration::try_from_secs_f64(timeout).unwrap_or(Duration::from_secs(30)),
            max_retries: tags.and_then(|t| t.max_retries).unwrap_or(cfg.max_retries),
            backoff_initial: Duration::from_millis(cfg.backoff_initial_ms),
            backoff_factor: cfg.backoff_factor,
            backoff_max: Duration::from_millis(cfg.backoff_max_ms),
            retry_timeouts: cfg.retry_timeouts,
        }
    }

    /// The wait before retry number `n` (1-based): initial × factor^(n-1),
    /// capped.
    pub fn backoff(&self, n: u32) -> Duration {
        let ms = self.backoff_initial.as_secs_f64()
            * self.backoff_factor.powi(n.saturating_sub(1).min(64) as i32);
        Duration::try_from_secs_f64(ms)
            .unwrap_or(self.backoff_max)
            .min(self.backoff_max)
    }
}

/// Runs `handler` (given the attempt number, 0-based) under `settings`.
pub fn run<T, F>(settings: &ExecSettings, handler: F) -> Execution<T>
where
    T: Send + 'static,
    F: Fn(u32) -> Result<T, ToolError> + Send + Sync + 'static,
{
    let handler = Arc::new(handler);
    let started = Instant::now();
    let mut attempt_latencies = Vec::new();
    let mut attempt = 0u32;
    loop {
        let t0 = Instant::now();
        let (tx, rx) = mpsc::sync_channel(1);
        let h = handler.clone();
        let spawned = std::thread::Builder::new()
            .name("toolgate-exec".into())
            .spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h(attempt)));
                let _ = tx.send(r);
            });
        let result: Result<T, ExecError> = match spawned {
            Err(e) => Err(ExecError::Failed(ToolError::fatal(
                "spawn",
                format!("cannot start a thread: {e}"),
            ))),
            Ok(_) => match rx.recv_timeout(settings.timeout) {
                Ok(Ok(r)) => r.map_err(ExecError::Failed),
                Ok(Err(p)) => Err(ExecError::Panicked(
                    p.downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into()),
                )),
                Err(mpsc::RecvTimeoutError::Timeout) => Err(ExecError::TimedOut(settings.timeout)),
                Err(mpsc::RecvTimeoutError::Disconnected) => Err(ExecError::Panicked(
                    "the handler thread ended without a result".into(),
                )),
            },
        };
        attempt_latencies.push(t0.elapsed());
        attempt += 1;
        let retry = match &result {
            Err(ExecError::Failed(e)) => e.retryable,
            Err(ExecError::TimedOut(_)) => settings.retry_timeouts,
            _ => false,
        };
        if !retry || attempt > settings.max_retries {
            return Execution {
                outcome: result,
                attempts: attempt,
                latency: started.elapsed(),
                attempt_latencies,
            };
        }
        std::thread::sleep(settings.backoff(attempt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn settings(retries: u32) -> ExecSettings {
        ExecSettings {
            timeout: Duration::from_millis(200),
            max_retries: retries,
            backoff_initial: Duration::from_millis(1),
            backoff_factor: 2.0,
            backoff_max: Duration::from_millis(4),
            retry_timeouts: false,
        }
    }

    #[test]
    fn retries_only_retryable_errors() {
        let n = Arc::new(AtomicU32::new(0));
        let c = n.clone();
        let ex = run(&settings(3), move |_| {
            if c.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(ToolError::retryable("net", "flaky"))
            } else {
                Ok(7)
            }
        });
        assert_eq!(ex.outcome, Ok(7));
        assert_eq!(ex.attempts, 3);
        let ex = run(&settings(3), |_| -> Result<(), _> {
            Err(ToolError::fatal("bad", "no"))
        });
        assert_eq!(ex.attempts, 1);
        assert!(matches!(ex.outcome, Err(ExecError::Failed(_))));
    }

    #[test]
    fn gives_up_after_max_retries() {
        let ex = run(&settings(2), |_| -> Result<(), _> {
            Err(ToolError::retryable("net", "down"))
        });
        assert_eq!(ex.attempts, 3);
        assert_eq!(ex.attempt_latencies.len(), 3);
    }

    #[test]
    fn times_out_and_reports_panics() {
        let ex = run(&settings(0), |_| {
            std::thread::sleep(Duration::from_secs(2));
            Ok(())
        });
        assert!(matches!(ex.outcome, Err(ExecError::TimedOut(_))));
        assert!(ex.latency < Duration::from_secs(1));
        // a generous timeout: on a loaded machine the panic must be what is seen
        let patient = ExecSettings {
            timeout: Duration::from_secs(30),
            ..settings(0)
        };
        let ex = run(&patient, |_| -> Result<(), ToolError> { panic!("boom") });
        assert_eq!(ex.outcome, Err(ExecError::Panicked("boom".into())));
    }

    #[test]
    fn backoff_is_exponential_and_capped() {
        let s = ExecSettings {
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_millis(1500),
            ..settings(5)
        };
        assert_eq!(s.backoff(1), Duration::from_millis(500));
        assert_eq!(s.backoff(2), Duration::from_millis(1000));
        assert_eq!(s.backoff(3), Duration::from_millis(1500));
    }
}
