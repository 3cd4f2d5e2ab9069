//! `toolgate._toolgate`: the PyO3 module under the `toolgate` Python package.
//!
//! Every call goes to the crate: the input of `toolgate eval` is built from
//! keyword arguments and read by `toolgate::input::EvalInput`, plans come from
//! `toolgate::load` (or `toolgate::reload` for a watched engine), selections
//! are `Plan::evaluate`, reports `Activation::report_json`, verdicts
//! `toolgate::gate::Gate`. This file only converts between Python objects and
//! the crate's types, raises the package's exceptions (`toolgate.errors`) and
//! keeps a Rust panic from reaching Python as anything but a
//! `toolgate.errors.ToolgateError`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;

use toolgate::gate::{CallEnv, Gate, JsonlSink};
use toolgate::input::EvalInput;
use toolgate::load::{Sources, load_policy, load_policy_and_plan};
use toolgate::parse::policy::PolicySource;
use toolgate::parse::tags::import_tools_json;
use toolgate::reload::{LoadAttempt, ReloadOptions, Reloader, WatchGuard};
use toolgate::{Activation, LoadError, Plan};

// ---------------------------------------------------------------- errors

/// An exception class of `toolgate.errors` (the Python side defines them,
/// with their fields).
fn error_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("toolgate.errors")?.getattr(name)
}

/// A `toolgate.errors.NAME(args...)` exception.
fn raise<'py, A>(py: Python<'py>, name: &str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    match error_class(py, name).and_then(|c| c.call1(args)) {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// `toolgate.errors.InputError(message)`: an input that the crate refuses.
fn input_error(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, "InputError", (message.into(),))
}

/// `toolgate.errors.LoadError(message, diagnostics)`.
fn load_error(py: Python<'_>, e: &LoadError) -> PyErr {
    let diags: Vec<Diagnostic> = e.diagnostics.iter().map(Diagnostic::from).collect();
    match PyList::new(py, diags) {
        Ok(list) => raise(py, "LoadError", (e.to_string(), list)),
        Err(err) => err,
    }
}

/// Runs crate code, turning a panic into `toolgate.errors.ToolgateError`.
fn guarded<T>(py: Python<'_>, f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        raise(
            py,
            "ToolgateError",
            (format!(
                "internal error in toolgate (a bug; please report it): {what}"
            ),),
        )
    })
}

/// One problem of a failed load, located in its file.
#[pyclass(frozen, module = "toolgate._toolgate", get_all)]
#[derive(Clone)]
struct Diagnostic {
    /// Stable code of the kind of problem (`toolgate::unknown_key`).
    kind: String,
    /// What is wrong, in one sentence.
    message: String,
    /// The file's name as given (`None` for a problem with no file).
    file: Option<String>,
    /// 1-based line of the problem (`None` when unknown).
    line: Option<usize>,
    /// 1-based column, in characters (`None` when unknown).
    column: Option<usize>,
    /// A hint: did-you-mean, accepted values.
    help: Option<String>,
    /// `file:line:column: message (help)`, as the CLI prints it.
    text: String,
}

impl From<&toolgate::Diagnostic> for Diagnostic {
    fn from(d: &toolgate::Diagnostic) -> Self {
        let (line, column) = d
            .line_col()
            .map_or((None, None), |(l, c)| (Some(l), Some(c)));
        Diagnostic {
            kind: d.kind.code().to_string(),
            message: d.message.clone(),
            file: d.file.as_ref().map(|f| f.name.clone()),
            line,
            column,
            help: d.help.clone(),
            text: d.to_string(),
        }
    }
}

#[pymethods]
impl Diagnostic {
    fn __str__(&self) -> String {
        self.text.clone()
    }

    fn __repr__(&self) -> String {
        format!("Diagnostic({:?})", self.text)
    }
}

// ---------------------------------------------------------------- values

/// A Python value as JSON (dicts, lists, str, int, float, bool, None; a
/// pydantic model through its `model_dump`).
fn to_json(py: Python<'_>, what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.hasattr("model_dump")? && !obj.is_instance_of::<PyDict>() {
        let kwargs = PyDict::new(py);
        kwargs.set_item("mode", "json")?;
        kwargs.set_item("by_alias", true)?;
        kwargs.set_item("exclude_none", true)?;
        let dumped = obj.call_method("model_dump", (), Some(&kwargs))?;
        return to_json(py, what, &dumped);
    }
    if too_deep(obj)? {
        return Err(input_error(
            py,
            format!(
                "`{what}` is nested more than {MAX_DEPTH} levels deep (as JSON text would be refused)"
            ),
        ));
    }
    pythonize::depythonize::<Value>(obj)
        .map_err(|e| input_error(py, format!("`{what}` cannot be read as JSON: {e}")))
}

/// The deepest nesting read from Python: serde_json's own limit for JSON
/// text. The conversion recurses, so deeper values are refused before it.
const MAX_DEPTH: usize = 128;

/// Whether `obj` nests dicts, lists and tuples more than [`MAX_DEPTH`]
/// levels deep (an iterative walk: a value built in a loop can be deeper
/// than any stack).
fn too_deep(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    use pyo3::types::PyTuple;
    let container = |o: &Bound<'_, PyAny>| {
        o.is_instance_of::<PyDict>()
            || o.is_instance_of::<PyList>()
            || o.is_instance_of::<PyTuple>()
    };
    if !container(obj) {
        return Ok(false);
    }
    let mut stack = vec![(obj.clone(), 1usize)];
    while let Some((o, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Ok(true);
        }
        if let Ok(d) = o.cast::<PyDict>() {
            for (_, v) in d.iter() {
                if container(&v) {
                    stack.push((v, depth + 1));
                }
            }
        } else {
            for v in o.try_iter()? {
                let v = v?;
                if container(&v) {
                    stack.push((v, depth + 1));
                }
            }
        }
    }
    Ok(false)
}

/// A JSON value as Python objects.
fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, v).map_err(PyErr::from)
}

/// A file argument: `str` or `os.PathLike`.
fn path_arg(obj: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    obj.extract::<PathBuf>()
        .map_err(|_| PyTypeError::new_err("expected a path (str or os.PathLike)"))
}

/// `tools=`: one path or a list of paths.
fn paths_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<PathBuf>> {
    let Some(obj) = obj else { return Ok(vec![]) };
    if obj.is_none() {
        return Ok(vec![]);
    }
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__")? {
        return Ok(vec![path_arg(obj)?]);
    }
    obj.try_iter()?.map(|p| path_arg(&p?)).collect()
}

// ---------------------------------------------------------------- engine

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

/// A watched engine's reloader, its watcher and how events are reported.
struct Watch {
    reloader: Arc<Reloader>,
    guard: Mutex<Option<WatchGuard>>,
    /// The event iterator's subscription (none when a callback is given).
    events: Option<Mutex<Receiver<LoadAttempt>>>,
    /// The callback's thread, and its stop flag.
    callback: Mutex<Option<JoinHandle<()>>>,
    stop: Arc<AtomicBool>,
}

impl Watch {
    fn close(&self, py: Python<'_>) {
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

/// The toolgate engine: a compiled plan (policy, tool catalog, call gate).
#[pyclass(frozen, module = "toolgate._toolgate")]
struct Engine {
    source: Source,
    audit: Option<Arc<JsonlSink>>,
}

impl Engine {
    fn plan(&self) -> Arc<Plan> {
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

    /// The `toolgate eval` input of these keyword arguments, resolved against
    /// the plan (a new plan when `tools` replaces the catalog).
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
                let plan = self.plan();
                let (ctx, usage, now) = input.resolve(&plan).map_err(|m| input_error(py, m))?;
                return guarded(py, || py.detach(|| plan.evaluate(&ctx, &usage, now)));
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
        let input = EvalInput::from_json(&Value::Object(input)).map_err(|m| input_error(py, m))?;
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
        Ok(Engine {
            source: Source::Watched(Arc::new(Watch {
                reloader,
                guard: Mutex::new(Some(guard)),
                events,
                callback: Mutex::new(callback),
                stop,
            })),
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
            Source::Watched(w) => w.guard.lock().map(|g| g.is_some()).unwrap_or(false),
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
    fn next_event(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<WatchEvent>> {
        let w = Arc::clone(self.watch_state(py)?);
        let Some(events) = &w.events else {
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

/// The iterator of `Engine.events`.
#[pyclass(module = "toolgate._toolgate")]
struct Events {
    engine: Py<Engine>,
    timeout: Option<f64>,
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

// ---------------------------------------------------------------- selection

/// The result of `Engine.select`: every tool's score and the active set.
#[pyclass(frozen, module = "toolgate._toolgate")]
struct Selection {
    act: Arc<Activation>,
}

#[pymethods]
impl Selection {
    /// Names of the active tools, best first (the order of `toolgate eval`).
    #[getter]
    fn active(&self) -> Vec<String> {
        self.act
            .ranked_active_names()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// Every tool, active ones first, best first.
    #[getter]
    fn tools(&self, py: Python<'_>) -> PyResult<Vec<ToolResult>> {
        self.act
            .ranked()
            .into_iter()
            .map(|i| ToolResult::new(py, &self.act, i))
            .collect()
    }

    /// One tool's result (a catalog name or an alias).
    fn tool(&self, py: Python<'_>, name: &str) -> PyResult<ToolResult> {
        match self.act.plan.tool_index(name) {
            Some(i) => ToolResult::new(py, &self.act, i),
            None => {
                let hint = toolgate::diag::did_you_mean(
                    name,
                    self.act.plan.tools.iter().map(|t| t.name.as_str()),
                );
                let msg = match &hint {
                    Some(h) => format!("unknown tool `{name}` (did you mean `{h}`?)"),
                    None => format!("unknown tool `{name}`"),
                };
                Err(raise(py, "UnknownToolError", (msg, name, hint)))
            }
        }
    }

    /// The threshold after the cold-start rule.
    #[getter]
    fn effective_threshold(&self) -> f64 {
        self.act.effective_threshold
    }

    /// The policy's threshold.
    #[getter]
    fn threshold(&self) -> f64 {
        self.act.threshold
    }

    /// Whether the cold-start rule applied.
    #[getter]
    fn cold_start(&self) -> bool {
        self.act.cold_start
    }

    /// The intent terms extracted from the context and message.
    #[getter]
    fn intent_terms(&self) -> Vec<String> {
        self.act.intent_terms.clone()
    }

    /// Names of the domain rules that applied.
    #[getter]
    fn rules_applied(&self) -> Vec<String> {
        self.act
            .rule_names()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// Warnings of the evaluation (a formula that gave NaN).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.act.warnings.clone()
    }

    /// The inferred domain weights (empty when none were inferred).
    #[getter]
    fn domain_weights(&self) -> Vec<(String, f64)> {
        self.act
            .plan
            .domains
            .iter()
            .cloned()
            .zip(self.act.domain_weights().iter().copied())
            .collect()
    }

    /// The whole report, exactly as `toolgate eval --format json` prints it.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = guarded(py, || self.act.report_json())?;
        to_py(py, &v)
    }

    fn __repr__(&self) -> String {
        format!(
            "Selection(active={:?}, effective_threshold={})",
            self.act.ranked_active_names(),
            self.act.effective_threshold
        )
    }
}

/// One term of a tool's score.
#[pyclass(frozen, module = "toolgate._toolgate", get_all)]
#[derive(Clone)]
struct Term {
    /// The term's text in the formula.
    term: String,
    /// The feature's value (`None` for a term of several features).
    value: Option<f64>,
    /// The weight (`None` for a term that is not `weight * feature`).
    weight: Option<f64>,
    /// What the term adds to the raw score.
    contribution: f64,
}

#[pymethods]
impl Term {
    fn __repr__(&self) -> String {
        format!(
            "Term({:?}, value={}, weight={}, contribution={})",
            self.term,
            py_opt(self.value),
            py_opt(self.weight),
            self.contribution
        )
    }
}

/// One tool's score in a selection.
#[pyclass(frozen, module = "toolgate._toolgate", get_all)]
struct ToolResult {
    /// The tool's catalog name.
    name: String,
    /// The clamped score.
    score: f64,
    /// The score before the clamp (the sum of the contributions).
    raw_score: f64,
    /// Whether the tool is exposed.
    active: bool,
    /// Why: `above_threshold`, `below_threshold`, `hysteresis`, `pinned`,
    /// `min_active`, `max_active`, `invalid_score`.
    reason: String,
    /// Per term (keyed by feature name, or `term_N`), in formula order.
    terms: Py<PyDict>,
}

impl ToolResult {
    fn new(py: Python<'_>, act: &Activation, i: usize) -> PyResult<ToolResult> {
        let s = &act.tools[i];
        let terms = PyDict::new(py);
        let explained = guarded(py, || act.explain(i))?;
        for (k, e) in explained.into_iter().enumerate() {
            let key = toolgate::eval::report::term_key(&e, k);
            terms.set_item(
                key,
                Term {
                    term: e.term,
                    value: e.value,
                    weight: e.weight,
                    contribution: e.contribution,
                },
            )?;
        }
        Ok(ToolResult {
            name: act.plan.tools[i].name.clone(),
            score: s.score,
            raw_score: s.raw_score,
            active: s.active,
            reason: json_str(&s.reason),
            terms: terms.unbind(),
        })
    }
}

#[pymethods]
impl ToolResult {
    fn __repr__(&self) -> String {
        format!(
            "ToolResult({:?}, score={}, active={}, reason={:?})",
            self.name,
            self.score,
            if self.active { "True" } else { "False" },
            self.reason
        )
    }
}

/// An optional number as Python writes it.
fn py_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "None".to_string(), |x| x.to_string())
}

/// A serde enum's JSON name (`allow`, `above_threshold`).
fn json_str<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

// ---------------------------------------------------------------- verdicts

/// One thing the gate found in a call.
#[pyclass(frozen, module = "toolgate._toolgate", get_all)]
#[derive(Clone)]
struct Finding {
    /// Id of the rule or check that fired.
    rule_id: String,
    /// The layer: `tool`, `input`, `schema`, `pattern`, `shell`, `sql`,
    /// `path`, `parse`, `risk`.
    kind: String,
    /// JSON pointer of the argument (`/command`; empty for the whole call).
    path: String,
    /// `low`, `medium`, `high`, `critical`.
    severity: String,
    /// What the rule asks for: `allow`, `ask`, `deny`.
    action: String,
    /// For the model: what was found and what to do instead.
    message: String,
}

#[pymethods]
impl Finding {
    fn __repr__(&self) -> String {
        format!(
            "Finding({:?}, action={:?}, path={:?})",
            self.rule_id, self.action, self.path
        )
    }
}

/// The gate's answer for one call.
#[pyclass(frozen, module = "toolgate._toolgate")]
struct Verdict {
    /// `allow`, `ask` or `deny`.
    #[pyo3(get)]
    decision: String,
    /// The arguments after coercion (as received when they could not be read).
    #[pyo3(get)]
    arguments: Py<PyAny>,
    /// Everything found, most decisive first.
    #[pyo3(get)]
    findings: Vec<Finding>,
    /// For the model: what was found, which parameter, what to do instead.
    #[pyo3(get)]
    message: String,
    /// The tool's canonical name (as called when it is unknown).
    #[pyo3(get)]
    tool: String,
    /// The risk rule that decided, if one did.
    #[pyo3(get)]
    risk_rule: Option<String>,
    /// Time spent in the gate, seconds.
    #[pyo3(get)]
    latency: f64,
    json: Value,
}

impl Verdict {
    fn new(py: Python<'_>, v: &toolgate::gate::Verdict) -> PyResult<Verdict> {
        Ok(Verdict {
            decision: v.decision.to_string(),
            arguments: to_py(py, &v.arguments)?.unbind(),
            findings: v
                .findings
                .iter()
                .map(|f| Finding {
                    rule_id: f.rule_id.clone(),
                    kind: json_str(&f.kind),
                    path: f.path.clone(),
                    severity: f.severity.as_str().to_string(),
                    action: f.action.to_string(),
                    message: f.message.clone(),
                })
                .collect(),
            message: v.message.clone(),
            tool: v.tool.clone(),
            risk_rule: v.risk_rule.clone(),
            latency: v.latency.as_secs_f64(),
            json: serde_json::to_value(v).unwrap_or(Value::Null),
        })
    }
}

#[pymethods]
impl Verdict {
    /// Whether the call may run as is.
    #[getter]
    fn allowed(&self) -> bool {
        self.decision == "allow"
    }

    /// The verdict as `toolgate guard --format json` prints it (`decision`,
    /// `arguments`, `findings`, `coercions`, `message`, `effects`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.json)
    }

    fn __repr__(&self) -> String {
        format!(
            "Verdict({:?}, tool={:?}, rules={:?})",
            self.decision,
            self.tool,
            self.findings
                .iter()
                .map(|f| f.rule_id.as_str())
                .collect::<Vec<_>>()
        )
    }
}

// ---------------------------------------------------------------- watch events

/// One load attempt of a watched engine.
#[pyclass(frozen, module = "toolgate._toolgate", get_all)]
struct WatchEvent {
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

/// The compiled module.
#[pymodule]
fn _toolgate(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add_class::<Selection>()?;
    m.add_class::<ToolResult>()?;
    m.add_class::<Term>()?;
    m.add_class::<Verdict>()?;
    m.add_class::<Finding>()?;
    m.add_class::<WatchEvent>()?;
    m.add_class::<Events>()?;
    m.add_class::<Diagnostic>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
