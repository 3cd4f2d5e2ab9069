//! `Session`: one agent session kept on the Rust side across selections.
//!
//! `Engine.select(usage=...)` reads the session from Python objects on every
//! call (a dict of 666 usage entries costs ~0.2 ms to read and check, ten
//! times the evaluation). A `Session` reads them once (`engine.session(...)`,
//! checked as `Engine.select` checks them) and then holds the crate's
//! `toolgate::Session` — the context and `UsageStats` — updated in place by
//! `record_call` (the crate's `Session::record_call`, as the MCP proxy and
//! `toolgate replay` record a call) and `user_message` (`Session::user_message`,
//! as `toolgate replay` records a user message), so a per-message `select` only
//! evaluates.
//!
//! Time is an input, as everywhere in the crate: the session has a clock,
//! `now` (seconds on the caller's clock, the clock of `Engine.select`'s
//! `now=`), which `select(now=...)` and `record_call(at=...)` move and which
//! both default to.

use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use toolgate::parse::policy::UsageNormalization;
use toolgate::{Activation, Plan};

use crate::convert::to_py;
use crate::engine::Engine;
use crate::errors::{guarded, input_error, raise};
use crate::selection::{Selection, ToolResult};

/// A session of one agent: its context and usage, kept by the engine
/// between calls (`Engine.session(context=..., usage=..., now=...)`).
#[pyclass(frozen, module = "toolgate._toolgate")]
pub(crate) struct Session {
    engine: Py<Engine>,
    state: Mutex<State>,
}

/// What a session knows: the crate's session and its clock.
struct State {
    session: toolgate::Session,
    /// The session's clock, seconds (the `now` of the next selection).
    now: f64,
}

impl Session {
    /// A session of `engine` from `Engine.select`'s keyword arguments
    /// (`context`, `usage`, `now`), read and checked against the engine's
    /// plan exactly as `Engine.select` reads and checks them (`InputError`).
    pub(crate) fn new(
        py: Python<'_>,
        engine: Py<Engine>,
        context: Option<&Bound<'_, PyAny>>,
        usage: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Session> {
        let e = engine.get();
        let input = e.read_input(py, context, None, usage, None, now)?;
        let plan = e.plan();
        let (ctx, usage, now) = input.resolve(&plan).map_err(|m| input_error(py, m))?;
        let mut session = toolgate::Session::new();
        let recent = ctx.recent_tool_calls.clone();
        session.context = ctx;
        session.usage = usage;
        session.restore_recent(recent);
        Ok(Session {
            engine,
            state: Mutex::new(State { session, now }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held (caught by `guarded`) leaves the
        // state as it was before that call's update began or after it
        // ended: every update is one crate call.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `message=` as `Engine.select` reads it: a `str`, or `None`; anything
    /// else is the crate's `InputError`.
    fn message(
        &self,
        py: Python<'_>,
        message: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<String>> {
        match message.filter(|m| !m.is_none()) {
            None => Ok(None),
            Some(m) => match m.cast::<PyString>() {
                Ok(s) => Ok(Some(s.to_str()?.to_owned())),
                Err(_) => Ok(self
                    .engine
                    .get()
                    .read_input(py, None, Some(m), None, None, None)?
                    .message),
            },
        }
    }

    /// A time argument (`now=`, `at=`): a finite number of seconds, as
    /// `Engine.select` reads `now`; `None` is the session's clock.
    fn time(
        &self,
        py: Python<'_>,
        what: &str,
        t: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<f64>> {
        let Some(t) = t.filter(|t| !t.is_none()) else {
            return Ok(None);
        };
        let v = match t.extract::<f64>() {
            Ok(v) if !t.is_instance_of::<pyo3::types::PyBool>() => v,
            _ => {
                let found = t.get_type().name()?;
                return Err(input_error(
                    py,
                    format!("`{what}` must be a number of seconds, found {found}"),
                ));
            }
        };
        if !v.is_finite() {
            return Err(input_error(
                py,
                format!("`{what}` must be a finite number of seconds"),
            ));
        }
        Ok(Some(v))
    }

    /// Evaluates the session with `message`'s keywords joining the context's
    /// (as `Engine.select(message=...)` does), at `now` (which becomes the
    /// session's clock).
    fn evaluate(
        &self,
        py: Python<'_>,
        message: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Activation> {
        let message = self.message(py, message)?;
        let now = self.time(py, "now", now)?;
        let plan = self.engine.get().plan();
        guarded(py, || {
            py.detach(|| {
                let mut st = self.state();
                if let Some(t) = now {
                    st.now = t;
                }
                let s = &st.session;
                match &message {
                    None => plan.evaluate(&s.context, &s.usage, st.now),
                    Some(m) => {
                        let mut ctx = s.context.clone();
                        ctx.user_intent_keywords.extend(plan.analyzer.extract(m));
                        plan.evaluate(&ctx, &s.usage, st.now)
                    }
                }
            })
        })
    }
}

/// The catalog name of `tool` (a name or an alias) in `plan`, or
/// `UnknownToolError` with a did-you-mean.
fn catalog_name(py: Python<'_>, plan: &Plan, tool: &str) -> PyResult<String> {
    if let Some(i) = plan.tool_index(tool) {
        return Ok(plan.tools[i].name.clone());
    }
    let hint = toolgate::diag::did_you_mean(tool, plan.tools.iter().map(|t| t.name.as_str()));
    let shown = toolgate::diag::echo(tool);
    let msg = match &hint {
        Some(h) => format!("unknown tool `{shown}` (did you mean `{h}`?)"),
        None => format!("unknown tool `{shown}`"),
    };
    Err(raise(py, "UnknownToolError", (msg, tool, hint)))
}

#[pymethods]
impl Session {
    /// Scores every tool for this session: the same `Selection` as
    /// `Engine.select(context=..., message=message, usage=..., now=now)` with
    /// the session's context and usage. `now` (default: the session's clock)
    /// becomes the session's clock; `message` (the latest user text) joins the
    /// context's intent keywords for this selection only.
    #[pyo3(signature = (*, message=None, now=None))]
    fn select(
        &self,
        py: Python<'_>,
        message: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Selection> {
        let act = self.evaluate(py, message, now)?;
        Ok(Selection::new(act))
    }

    /// Why one tool is in or out of this session's selection, term by term.
    #[pyo3(signature = (tool, *, message=None, now=None))]
    fn explain(
        &self,
        py: Python<'_>,
        tool: &str,
        message: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ToolResult> {
        let act = self.evaluate(py, message, now)?;
        Selection::new(act).tool(py, tool)
    }

    /// Records a call of `tool` (a catalog name or an alias, counted under the
    /// catalog name) at `at` seconds (default: the session's clock, which `at`
    /// moves to): one more in `call_counts`, the time of its last call, the
    /// recent calls window of the policy (`recent_calls_window`); with a
    /// policy whose usage normalisation is `frequency`, every used tool's
    /// `usage_frequency` becomes its share of the calls, as `toolgate replay`
    /// computes it. `UnknownToolError` for a tool that is not in the catalog.
    #[pyo3(signature = (tool, *, at=None))]
    fn record_call(
        &self,
        py: Python<'_>,
        tool: &str,
        at: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let at = self.time(py, "at", at)?;
        let plan = self.engine.get().plan();
        let name = catalog_name(py, &plan, tool)?;
        let frequency = plan.features.usage_normalization == UsageNormalization::Frequency;
        guarded(py, || {
            let mut st = self.state();
            if let Some(t) = at {
                st.now = t;
            }
            let now = st.now;
            let s = &mut st.session;
            s.record_call(&name, now, plan.recent_calls_window);
            if frequency {
                let u = &mut s.usage;
                let total = u.total_calls().max(1) as f64;
                for (k, &c) in &u.call_counts {
                    u.usage_frequency.insert(k.clone(), c as f64 / total);
                }
            }
        })
    }

    /// Records a new user message (the session's next turn): its keywords
    /// (the policy's analyzer) become the context's `user_intent_keywords`,
    /// and the previous ones move to `previous_intent_keywords`, which keeps
    /// as many turns as the policy's `[keywords.memory] turns` (none without
    /// it), as `toolgate replay` records a `user_message` event.
    fn user_message(&self, py: Python<'_>, text: &str) -> PyResult<()> {
        let plan = self.engine.get().plan();
        guarded(py, || {
            let remember = plan.memory.as_ref().map(|m| m.turns).unwrap_or(0);
            let keywords = plan.analyzer.extract(text);
            self.state()
                .session
                .user_message_text(text, keywords, remember);
        })
    }

    /// The session's clock, seconds: the `now` of the next selection and the
    /// time of the next recorded call (`InputError` for a value that is not a
    /// finite number).
    #[getter]
    fn now(&self) -> f64 {
        self.state().now
    }

    #[setter(now)]
    fn set_now(&self, py: Python<'_>, now: &Bound<'_, PyAny>) -> PyResult<()> {
        match self.time(py, "now", Some(now))? {
            Some(t) => {
                self.state().now = t;
                Ok(())
            }
            None => Err(input_error(
                py,
                "`now` must be a finite number of seconds, found None",
            )),
        }
    }

    /// The session's context as `Engine.select`'s `context=` takes it
    /// (`recent_tool_calls` oldest first, as the recorded calls left it).
    #[getter]
    fn context<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = serde_json::to_value(&self.state().session.context)
            .map_err(|e| input_error(py, format!("the context cannot be written as JSON: {e}")))?;
        to_py(py, &v)
    }

    /// The session's usage as `Engine.select`'s `usage=` takes it:
    /// `call_counts`, `seconds_since_last_call` (relative to the session's
    /// clock) and `usage_frequency`, so that `engine.select(context=s.context,
    /// usage=s.usage, now=s.now)` is `s.select()`.
    #[getter]
    fn usage<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let st = self.state();
        let u = &st.session.usage;
        let counts = PyDict::new(py);
        for (k, v) in &u.call_counts {
            counts.set_item(k, v)?;
        }
        let ages = PyDict::new(py);
        for (k, at) in &u.last_call_at {
            ages.set_item(k, st.now - at)?;
        }
        let freq = PyDict::new(py);
        for (k, f) in &u.usage_frequency {
            freq.set_item(k, f)?;
        }
        let d = PyDict::new(py);
        d.set_item("call_counts", counts)?;
        d.set_item("seconds_since_last_call", ages)?;
        d.set_item("usage_frequency", freq)?;
        Ok(d)
    }

    /// The engine this session selects with.
    #[getter]
    fn engine(&self, py: Python<'_>) -> Py<Engine> {
        self.engine.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        let st = self.state();
        format!(
            "Session(calls={}, recent={:?}, now={})",
            st.session.usage.total_calls(),
            st.session.context.recent_tool_calls,
            st.now
        )
    }
}
