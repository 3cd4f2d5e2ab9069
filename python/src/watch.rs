//! Hot reload of a watched engine (`Engine.watch`): the crate's `Reloader`
//! and its file watcher, and how load attempts reach Python — queued for
//! `next_event`/`events`, or passed to an `on_event` callback on a thread of
//! its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use toolgate::reload::{LoadAttempt, ReloadOptions, Reloader, WatchGuard};

use crate::engine::Engine;
use crate::errors::{Diagnostic, guarded, input_error, load_error, raise};

/// A watched engine's reloader, its watcher and how events are reported.
pub(crate) struct Watch {
    pub(crate) reloader: Arc<Reloader>,
    pub(crate) guard: Mutex<Option<WatchGuard>>,
    /// The event iterator's subscription (none when a callback is given).
    events: Option<Mutex<Receiver<LoadAttempt>>>,
    /// The callback's thread, and its stop flag.
    callback: Mutex<Option<JoinHandle<()>>>,
    stop: Arc<AtomicBool>,
}

impl Watch {
    /// Loads the files of `options` (the first load must succeed:
    /// `LoadError`), starts watching them and delivers every later load
    /// attempt to `on_event` (called on a thread of its own; an exception
    /// in it goes to `sys.unraisablehook`) or, without one, to the queue of
    /// [`Watch::next_event`].
    pub(crate) fn start(
        py: Python<'_>,
        options: ReloadOptions,
        on_event: Option<Py<PyAny>>,
    ) -> PyResult<Watch> {
        let reloader = guarded(py, || py.detach(|| Reloader::new(options)))?;
        let reloader = Arc::new(reloader.map_err(|e| load_error(py, &e))?);
        let rx = reloader.subscribe_attempts();
        let guard = guarded(py, || py.detach(|| reloader.watch()))?.map_err(|e| {
            raise(
                py,
                "ToolgateError",
                (format!("cannot watch the files: {e}"),),
            )
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let (events, callback) = match on_event {
            None => (Some(Mutex::new(rx)), None),
            Some(cb) => {
                let stop = Arc::clone(&stop);
                let handle = std::thread::spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        match rx.recv_timeout(Duration::from_millis(50)) {
                            Ok(attempt) => Python::attach(|py| {
                                let r = Py::new(py, WatchEvent::from(&attempt))
                                    .and_then(|ev| cb.call1(py, (ev,)));
                                if let Err(e) = r {
                                    e.write_unraisable(py, Some(cb.bind(py)));
                                }
                            }),
                            Err(RecvTimeoutError::Timeout) => {}
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    }
                });
                (None, Some(handle))
            }
        };
        Ok(Watch {
            reloader,
            guard: Mutex::new(Some(guard)),
            events,
            callback: Mutex::new(callback),
            stop,
        })
    }

    /// Whether the files are still watched (not closed).
    pub(crate) fn watching(&self) -> bool {
        self.guard.lock().map(|g| g.is_some()).unwrap_or(false)
    }

    /// The next queued load attempt, waiting at most `timeout` seconds
    /// (`None`: until one comes, or the watch is closed); `None` on
    /// time-out. Errors: an engine with a callback (`ToolgateError`), a
    /// negative or non-finite timeout (`InputError`), a signal (Ctrl-C).
    pub(crate) fn next_event(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
    ) -> PyResult<Option<WatchEvent>> {
        let Some(events) = &self.events else {
            return Err(raise(
                py,
                "ToolgateError",
                ("this engine reports its events to its on_event callback",),
            ));
        };
        let deadline = match timeout {
            Some(t) if !(t.is_finite() && t >= 0.0) => {
                return Err(input_error(
                    py,
                    "timeout must be a finite number of seconds >= 0",
                ));
            }
            Some(t) => Some(Instant::now() + Duration::from_secs_f64(t)),
            None => None,
        };
        loop {
            let slice = match deadline {
                Some(d) => d
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(100)),
                None => Duration::from_millis(100),
            };
            let got = py.detach(|| match events.lock() {
                Ok(rx) => rx.recv_timeout(slice),
                Err(_) => Err(RecvTimeoutError::Disconnected),
            });
            match got {
                Ok(attempt) => return Ok(Some(WatchEvent::from(&attempt))),
                Err(RecvTimeoutError::Disconnected) => return Ok(None),
                Err(RecvTimeoutError::Timeout) => {
                    py.check_signals()?;
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(None);
                    }
                    if !self.watching() {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Stops watching and joins the callback's thread (the reloader keeps
    /// serving its last plan).
    pub(crate) fn close(&self, py: Python<'_>) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(mut g) = self.guard.lock()
            && let Some(g) = g.take()
        {
            py.detach(|| g.stop());
        }
        let handle = self.callback.lock().ok().and_then(|mut h| h.take());
        if let Some(h) = handle {
            py.detach(|| {
                let _ = h.join();
            });
        }
    }
}

/// The iterator of `Engine.events`.
#[pyclass(module = "toolgate._toolgate")]
pub(crate) struct Events {
    pub(crate) engine: Py<Engine>,
    pub(crate) timeout: Option<f64>,
}

#[pymethods]
impl Events {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<WatchEvent>> {
        self.engine.get().next_event(py, self.timeout)
    }
}

/// One load attempt of a watched engine.
#[pyclass(frozen, module = "toolgate._toolgate", get_all)]
pub(crate) struct WatchEvent {
    /// `loaded` (the new plan is served) or `rejected` (the last good plan
    /// stays).
    kind: String,
    /// The version served after this attempt.
    version: u64,
    /// The version served before (for a rejection: the one still served).
    previous_version: u64,
    /// The served plan's policy name.
    policy_name: String,
    /// The served plan's content hash (hex).
    content_hash: String,
    /// The served plan's tool names, in catalog order.
    tool_names: Vec<String>,
    /// For a rejection: every problem, `file:line:column: message` a line.
    error: Option<String>,
    /// For a rejection: the problems as fields.
    diagnostics: Vec<Diagnostic>,
}

impl From<&LoadAttempt> for WatchEvent {
    fn from(a: &LoadAttempt) -> Self {
        match a {
            LoadAttempt::Loaded(ev) => WatchEvent {
                kind: "loaded".into(),
                version: ev.version,
                previous_version: ev.previous_version,
                policy_name: ev.plan.policy_name.clone(),
                content_hash: format!("{:016x}", ev.plan.content_hash),
                tool_names: ev.plan.tools.iter().map(|t| t.name.clone()).collect(),
                error: None,
                diagnostics: vec![],
            },
            LoadAttempt::Rejected(rej) => WatchEvent {
                kind: "rejected".into(),
                version: rej.version,
                previous_version: rej.version,
                policy_name: String::new(),
                content_hash: String::new(),
                tool_names: vec![],
                error: Some(rej.error.to_string()),
                diagnostics: rej.error.diagnostics.iter().map(Diagnostic::from).collect(),
            },
        }
    }
}

#[pymethods]
impl WatchEvent {
    fn __repr__(&self) -> String {
        match &self.error {
            Some(e) => format!(
                "WatchEvent(rejected, still serving v{}: {e:?})",
                self.version
            ),
            None => format!(
                "WatchEvent(loaded v{}, {} tools)",
                self.version,
                self.tool_names.len()
            ),
        }
    }
}
