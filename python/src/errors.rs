//! The package's exceptions (`toolgate.errors`, defined on the Python side
//! with their fields), the located diagnostics of a failed load, and the
//! guard that turns a Rust panic into `toolgate.errors.ToolgateError`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::prelude::*;
use pyo3::types::PyList;

use toolgate::LoadError;

/// An exception class of `toolgate.errors` (the Python side defines them,
/// with their fields).
fn error_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("toolgate.errors")?.getattr(name)
}

/// A `toolgate.errors.NAME(args...)` exception.
pub(crate) fn raise<'py, A>(py: Python<'py>, name: &str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    match error_class(py, name).and_then(|c| c.call1(args)) {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// `toolgate.errors.InputError(message)`: an input that the crate refuses.
pub(crate) fn input_error(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, "InputError", (message.into(),))
}

/// `toolgate.errors.LoadError(message, diagnostics)`.
pub(crate) fn load_error(py: Python<'_>, e: &LoadError) -> PyErr {
    let diags: Vec<Diagnostic> = e.diagnostics.iter().map(Diagnostic::from).collect();
    match PyList::new(py, diags) {
        Ok(list) => raise(py, "LoadError", (e.to_string(), list)),
        Err(err) => err,
    }
}

/// Runs crate code, turning a panic into `toolgate.errors.ToolgateError`.
pub(crate) fn guarded<T>(py: Python<'_>, f: impl FnOnce() -> T) -> PyResult<T> {
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
pub(crate) struct Diagnostic {
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
