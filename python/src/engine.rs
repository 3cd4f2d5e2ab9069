//! The `Engine` class: a plan loaded once (`Engine.load`, `from_mcp_tools`,
//! `from_openai_tools`) or served by a reloader (`Engine.watch`), and what
//! it answers: `select`/`explain` (`Plan::evaluate` of `toolgate eval`'s
//! input, given as keyword arguments) and `check` (the call gate).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;

use toolgate::gate::{CallEnv, Gate, JsonlSink};
use toolgate::input::EvalInput;
use toolgate::load::{Sources, load_policy, load_policy_and_plan};
use toolgate::parse::policy::PolicySource;
use toolgate::parse::tags::import_tools_json;
use toolgate::reload::{LoadAttempt, ReloadOptions};
use toolgate::{Activation, LoadError, Plan};

use crate::convert::{path_arg, paths_arg, to_json, to_py, too_deep};
use crate::errors::{guarded, input_error, load_error, raise};
use crate::selection::{Selection, ToolResult};
use crate::session::Session;
use crate::verdict::Verdict;
use crate::watch::{Events, Watch, WatchEvent};

/// Where an engine's plan comes from.
enum Source {
    /// Loaded once.
    Fixed {
        plan: Arc<Plan>,
        policy: Arc<PolicySource>,
    },
    /// Served by a reloader that watches the files.
    Watched(Arc<Watch>),
}

/// The toolgate engine: a compiled plan (policy, tool catalog, call gate).
#[pyclass(frozen, module = "toolgate._toolgate")]
pub(crate) struct Engine {
    source: Source,
    audit: Option<Arc<JsonlSink>>,
}

impl Engine {
    /// The plan in force (a watched engine's latest good one).
    pub(crate) fn plan(&self) -> Arc<Plan> {
        match &self.source {
            Source::Fixed { plan, .. } => Arc::clone(plan),
            Source::Watched(w) => w.reloader.plan(),
        }
    }

    fn policy(&self) -> Arc<PolicySource> {
        match &self.source {
            Source::Fixed { policy, .. } => Arc::clone(policy),
            Source::Watched(w) => Arc::new(w.reloader.inputs().policy.clone()),
        }
    }

    fn gate(&self, plan: Arc<Plan>) -> Gate {
        let gate = Gate::new(plan);
        match &self.audit {
            Some(sink) => gate.with_audit(Arc::clone(sink) as Arc<dyn toolgate::gate::AuditSink>),
            None => gate,
        }
    }

    fn watch_state(&self, py: Python<'_>) -> PyResult<&Arc<Watch>> {
        match &self.source {
            Source::Watched(w) => Ok(w),
            Source::Fixed { .. } => Err(raise(
                py,
                "ToolgateError",
                ("this engine does not watch its files: create it with Engine.watch(...)",),
            )),
        }
    }

    /// The `toolgate eval` input of these keyword arguments, read as the
    /// crate reads an input file (`EvalInput`); errors are `InputError`s in
    /// the crate's wording (the JSON path of the bad value, a did-you-mean).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn read_input(
        &self,
        py: Python<'_>,
        context: Option<&Bound<'_, PyAny>>,
        message: Option<&Bound<'_, PyAny>>,
        usage: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<EvalInput> {
        // Fast path: without inline tools (whose checks `EvalInput::from_json`
        // runs), the keyword arguments are read straight into the crate's
        // `EvalInput`; any error takes the JSON path below, for the crate's
        // wording of it.
        if tools.is_none_or(|t| t.is_none()) {
            let d = PyDict::new(py);
            for (key, v) in [
                ("context", context),
                ("message", message),
                ("usage", usage),
                ("now", now),
            ] {
                if let Some(v) = v.filter(|v| !v.is_none()) {
                    d.set_item(key, v)?;
                }
            }
            if !too_deep(d.as_any())?
                && let Ok(input) = pythonize::depythonize::<EvalInput>(d.as_any())
            {
                return Ok(input);
            }
        }
        let mut input = serde_json::Map::new();
        for (key, v) in [
            ("context", context),
            ("message", message),
            ("usage", usage),
            ("tools", tools),
            ("now", now),
        ] {
            if let Some(v) = v.filter(|v| !v.is_none()) {
                input.insert(key.to_string(), to_json(py, key, v)?);
            }
        }
        EvalInput::from_json(&Value::Object(input)).map_err(|m| input_error(py, m))
    }

    /// The `toolgate eval` input of these keyword arguments, resolved against
    /// the plan (a new plan when `tools` replaces the catalog) and evaluated.
    #[allow(clippy::too_many_arguments)]
    fn evaluate(
        &self,
        py: Python<'_>,
        context: Option<&Bound<'_, PyAny>>,
        message: Option<&Bound<'_, PyAny>>,
        usage: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Activation> {
        let input = self.read_input(py, context, message, usage, tools, now)?;
        let plan = match &input.tools {
            Some(inline) => {
                let specs = inline.iter().cloned().map(|t| t.into_spec()).collect();
                let policy = self.policy();
                let compiled = guarded(py, || {
                    py.detach(|| toolgate::compile::compile(&policy, specs))
                })?;
                Arc::new(compiled.map_err(|e| load_error(py, &e))?)
            }
            None => self.plan(),
        };
        let (ctx, usage, now) = input.resolve(&plan).map_err(|m| input_error(py, m))?;
        guarded(py, || py.detach(|| plan.evaluate(&ctx, &usage, now)))
    }
}

/// Loads a policy (or the embedded default) and compiles it with `specs`.
fn compile_with(
    py: Python<'_>,
    policy: Option<PathBuf>,
    specs: Vec<toolgate::parse::tags::ToolSpec>,
) -> PyResult<(PolicySource, Plan)> {
    let loaded = guarded(py, || {
        py.detach(|| {
            let p = load_policy(policy.as_deref())?;
            let plan = toolgate::compile::compile(&p, specs)?;
            Ok::<_, LoadError>((p, plan))
        })
    })?;
    loaded.map_err(|e| load_error(py, &e))
}

/// Tools of an MCP `tools/list` result or an OpenAI `tools` array, read by
/// the crate's importer (`name` is the source's name in messages).
fn imported(
    py: Python<'_>,
    name: &str,
    tools: &Bound<'_, PyAny>,
) -> PyResult<Vec<toolgate::parse::tags::ToolSpec>> {
    let v = to_json(py, name, tools)?;
    let text = v.to_string();
    let specs = guarded(py, || import_tools_json(name, &text))?;
    specs.map_err(|e| load_error(py, &e))
}

fn audit_sink(
    py: Python<'_>,
    audit: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Arc<JsonlSink>>> {
    let Some(a) = audit.filter(|a| !a.is_none()) else {
        return Ok(None);
    };
    let path = path_arg(a)?;
    JsonlSink::open(&path)
        .map(|s| Some(Arc::new(s)))
        .map_err(|e| {
            input_error(
                py,
                format!("cannot open the audit log {}: {e}", path.display()),
            )
        })
}

#[pymethods]
impl Engine {
    /// Loads a policy and a catalog, as the CLI's `--policy`, `--tags`,
    /// `--tools` do (defaults: the embedded policy and tags).
    #[staticmethod]
    #[pyo3(signature = (policy=None, tags=None, tools=None, *, audit=None))]
    fn load(
        py: Python<'_>,
        policy: Option<&Bound<'_, PyAny>>,
        tags: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        audit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Engine> {
        let sources = Sources {
            policy: policy.filter(|p| !p.is_none()).map(path_arg).transpose()?,
            tags: tags.filter(|p| !p.is_none()).map(path_arg).transpose()?,
            tools: paths_arg(tools)?,
        };
        let loaded = guarded(py, || py.detach(|| load_policy_and_plan(&sources)))?;
        let (policy, plan) = loaded.map_err(|e| load_error(py, &e))?;
        Ok(Engine {
            source: Source::Fixed {
                plan: Arc::new(plan),
                policy: Arc::new(policy),
            },
            audit: audit_sink(py, audit)?,
        })
    }

    /// An engine over the tools of an MCP `tools/list` result (a dict with
    /// `tools`, a list of tool dicts, or the `mcp` SDK's objects).
    #[staticmethod]
    #[pyo3(signature = (list_result, *, policy=None, audit=None))]
    fn from_mcp_tools(
        py: Python<'_>,
        list_result: &Bound<'_, PyAny>,
        policy: Option<&Bound<'_, PyAny>>,
        audit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Engine> {
        let v = if list_result.is_instance_of::<PyList>()
            || list_result.is_instance_of::<pyo3::types::PyTuple>()
        {
            let list = PyList::empty(py);
            for t in list_result.try_iter()? {
                list.append(to_py(py, &to_json(py, "tools", &t?)?)?)?;
            }
            let d = PyDict::new(py);
            d.set_item("tools", list)?;
            d.into_any()
        } else {
            list_result.clone()
        };
        let specs = imported(py, "<mcp tools/list>", &v)?;
        Self::from_specs(py, policy, specs, audit)
    }

    /// An engine over an OpenAI `tools` array (`{"type": "function",
    /// "function": {...}}` entries).
    #[staticmethod]
    #[pyo3(signature = (tools, *, policy=None, audit=None))]
    fn from_openai_tools(
        py: Python<'_>,
        tools: &Bound<'_, PyAny>,
        policy: Option<&Bound<'_, PyAny>>,
        audit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Engine> {
        let specs = imported(py, "<openai tools>", tools)?;
        Self::from_specs(py, policy, specs, audit)
    }

    /// An engine that serves the plan of these files and reloads it when they
    /// change, as `toolgate watch`: a bad edit keeps the last good plan.
    #[staticmethod]
    #[pyo3(signature = (policy=None, tags=None, tools=None, *, on_event=None, poll_ms=None, debounce_ms=None, audit=None))]
    #[allow(clippy::too_many_arguments)]
    fn watch(
        py: Python<'_>,
        policy: Option<&Bound<'_, PyAny>>,
        tags: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        on_event: Option<Py<PyAny>>,
        poll_ms: Option<u64>,
        debounce_ms: Option<u64>,
        audit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Engine> {
        let on_event = on_event.filter(|c| !c.is_none(py));
        if let Some(cb) = &on_event
            && !cb.bind(py).is_callable()
        {
            return Err(PyTypeError::new_err("on_event must be callable"));
        }
        let mut options = ReloadOptions::new(Sources {
            policy: policy.filter(|p| !p.is_none()).map(path_arg).transpose()?,
            tags: tags.filter(|p| !p.is_none()).map(path_arg).transpose()?,
            tools: paths_arg(tools)?,
        });
        options.poll_interval = poll_ms.map(Duration::from_millis);
        options.debounce = debounce_ms.map(Duration::from_millis);
        Ok(Engine {
            source: Source::Watched(Arc::new(Watch::start(py, options, on_event)?)),
            audit: audit_sink(py, audit)?,
        })
    }

    /// Scores every tool for one session: the keys of `toolgate eval`'s
    /// input as keyword arguments.
    #[pyo3(signature = (*, context=None, message=None, usage=None, tools=None, now=None))]
    fn select(
        &self,
        py: Python<'_>,
        context: Option<&Bound<'_, PyAny>>,
        message: Option<&Bound<'_, PyAny>>,
        usage: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Selection> {
        let act = self.evaluate(py, context, message, usage, tools, now)?;
        Ok(Selection { act: Arc::new(act) })
    }

    /// A session kept on the Rust side: `context`, `usage` and `now` are read
    /// and checked once, as `select` reads them (`InputError`), then updated
    /// in place (`Session.record_call`, `Session.user_message`), so that each
    /// `Session.select` only evaluates.
    #[pyo3(signature = (*, context=None, usage=None, now=None))]
    fn session(
        slf: Py<Self>,
        py: Python<'_>,
        context: Option<&Bound<'_, PyAny>>,
        usage: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Session> {
        Session::new(py, slf, context, usage, now)
    }

    /// Why one tool is in or out of the selection of this session, term by
    /// term (a catalog name or an alias).
    #[pyo3(signature = (tool, *, context=None, message=None, usage=None, tools=None, now=None))]
    #[allow(clippy::too_many_arguments)]
    fn explain(
        &self,
        py: Python<'_>,
        tool: &str,
        context: Option<&Bound<'_, PyAny>>,
        message: Option<&Bound<'_, PyAny>>,
        usage: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ToolResult> {
        let act = self.evaluate(py, context, message, usage, tools, now)?;
        Selection { act: Arc::new(act) }.tool(py, tool)
    }

    /// Checks one tool call with the call gate: allow (with the arguments
    /// after coercion), ask or deny.
    #[pyo3(signature = (tool, arguments, *, session=None, root=None))]
    fn check(
        &self,
        py: Python<'_>,
        tool: &str,
        arguments: &Bound<'_, PyAny>,
        session: Option<&str>,
        root: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Verdict> {
        let roots = paths_arg(root)?
            .into_iter()
            .map(|p| std::path::absolute(&p).unwrap_or(p))
            .collect();
        let env = CallEnv { roots };
        let gate = self.gate(self.plan());
        let v = if let Ok(text) = arguments.cast::<PyString>() {
            let text = text.to_str()?.to_owned();
            guarded(py, || {
                py.detach(|| gate.check_json_in_env(session, tool, &text, &env))
            })?
        } else {
            let args = to_json(py, "arguments", arguments)?;
            guarded(py, || {
                py.detach(|| gate.check_in_env(session, tool, args, &env))
            })?
        };
        Verdict::new(py, &v)
    }

    /// The names of the catalog's tools, in catalog order.
    #[getter]
    fn tool_names(&self) -> Vec<String> {
        self.plan().tools.iter().map(|t| t.name.clone()).collect()
    }

    /// The policy's name.
    #[getter]
    fn policy_name(&self) -> String {
        self.plan().policy_name.clone()
    }

    /// The content hash of the plan's inputs (hex), as `toolgate watch` prints it.
    #[getter]
    fn content_hash(&self) -> String {
        format!("{:016x}", self.plan().content_hash)
    }

    /// The version of the plan served: 1 for a loaded engine; counts the
    /// successful loads of a watched one.
    #[getter]
    fn version(&self) -> u64 {
        match &self.source {
            Source::Fixed { .. } => 1,
            Source::Watched(w) => w.reloader.version(),
        }
    }

    /// Whether the engine watches its files ([`Engine.watch`]).
    #[getter]
    fn watching(&self) -> bool {
        match &self.source {
            Source::Fixed { .. } => false,
            Source::Watched(w) => w.watching(),
        }
    }

    /// A watched engine's reload status: `version`, `loads`, `rejections`,
    /// `last_error` (text or None), `policy_name`, `content_hash`.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let w = self.watch_state(py)?;
        let s = w.reloader.status();
        let d = PyDict::new(py);
        d.set_item("version", s.version)?;
        d.set_item("loads", s.loads)?;
        d.set_item("rejections", s.rejections)?;
        d.set_item("last_error", s.last_error)?;
        d.set_item("policy_name", s.policy_name)?;
        d.set_item("content_hash", format!("{:016x}", s.content_hash))?;
        Ok(d)
    }

    /// Reloads a watched engine's files now: the load's event (a rejected
    /// load keeps the plan served and is returned, not raised).
    fn reload(&self, py: Python<'_>) -> PyResult<WatchEvent> {
        let w = self.watch_state(py)?;
        let r = guarded(py, || py.detach(|| w.reloader.reload_now()))?;
        Ok(match r {
            Ok(ev) => WatchEvent::from(&LoadAttempt::Loaded(ev)),
            Err(rej) => WatchEvent::from(&LoadAttempt::Rejected(rej)),
        })
    }

    /// The next load or rejection of a watched engine, waiting at most
    /// `timeout` seconds (`None`: until one comes); `None` on time-out.
    #[pyo3(signature = (timeout=None))]
    pub(crate) fn next_event(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
    ) -> PyResult<Option<WatchEvent>> {
        let w = Arc::clone(self.watch_state(py)?);
        w.next_event(py, timeout)
    }

    /// The load attempts of a watched engine as they come, until `timeout`
    /// seconds pass without one (`None`: until the engine is closed).
    #[pyo3(signature = (timeout=None))]
    fn events(slf: Py<Self>, py: Python<'_>, timeout: Option<f64>) -> PyResult<Events> {
        slf.get().watch_state(py)?;
        Ok(Events {
            engine: slf,
            timeout,
        })
    }

    /// Stops watching (a watched engine keeps serving its last plan); no-op
    /// for a loaded engine.
    fn close(&self, py: Python<'_>) {
        if let Source::Watched(w) = &self.source {
            w.close(py);
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        let plan = self.plan();
        format!(
            "Engine(policy={:?}, tools={}, version={})",
            plan.policy_name,
            plan.tools.len(),
            self.version()
        )
    }
}

impl Engine {
    fn from_specs(
        py: Python<'_>,
        policy: Option<&Bound<'_, PyAny>>,
        specs: Vec<toolgate::parse::tags::ToolSpec>,
        audit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Engine> {
        let policy = policy.filter(|p| !p.is_none()).map(path_arg).transpose()?;
        let (policy, plan) = compile_with(py, policy, specs)?;
        Ok(Engine {
            source: Source::Fixed {
                plan: Arc::new(plan),
                policy: Arc::new(policy),
            },
            audit: audit_sink(py, audit)?,
        })
    }
}
