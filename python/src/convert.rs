//! Python values <-> JSON values (pythonize), with a depth limit, and the
//! path arguments.

use std::path::PathBuf;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;

use crate::errors::input_error;

/// A Python value as JSON (dicts, lists, str, int, float, bool, None; a
/// pydantic model through its `model_dump`).
pub(crate) fn to_json(py: Python<'_>, what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
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
pub(crate) const MAX_DEPTH: usize = 128;

/// Whether `obj` nests dicts, lists and tuples more than [`MAX_DEPTH`]
/// levels deep (an iterative walk: a value built in a loop can be deeper
/// than any stack).
pub(crate) fn too_deep(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
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
pub(crate) fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, v).map_err(PyErr::from)
}

/// A file argument: `str` or `os.PathLike`.
pub(crate) fn path_arg(obj: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    obj.extract::<PathBuf>()
        .map_err(|_| PyTypeError::new_err("expected a path (str or os.PathLike)"))
}

/// `tools=`: one path or a list of paths.
pub(crate) fn paths_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<PathBuf>> {
    let Some(obj) = obj else { return Ok(vec![]) };
    if obj.is_none() {
        return Ok(vec![]);
    }
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__")? {
        return Ok(vec![path_arg(obj)?]);
    }
    obj.try_iter()?.map(|p| path_arg(&p?)).collect()
}

/// An optional number as Python writes it.
pub(crate) fn py_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "None".to_string(), |x| x.to_string())
}

/// A serde enum's JSON name (`allow`, `above_threshold`).
pub(crate) fn json_str<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}
