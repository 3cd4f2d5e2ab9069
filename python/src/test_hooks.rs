//! Functions that only tests call, compiled in with the cargo feature
//! `test-hooks` (which `scripts/test`'s build of the package enables; a wheel
//! built by `pip install ./python` without it has none of them).

use pyo3::prelude::*;
use pyo3::types::{PyInt, PyString};

use crate::errors::guarded;

/// Panics inside the guard every call into the crate goes through
/// (`errors::guarded`, around a `py.detach` as the engine's calls are), so a
/// test can see what a bug in the crate looks like from Python: a
/// `toolgate.errors.ToolgateError`, the interpreter still running. `payload`:
/// `None` panics with a `&'static str`, a `str` with that `String`
/// (`panic!("{payload}")`), an `int` with that number (`panic_any`, a payload
/// that is not text).
#[pyfunction]
#[pyo3(name = "_panic_for_tests", signature = (payload=None))]
pub(crate) fn panic_for_tests(py: Python<'_>, payload: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    enum Payload {
        Static,
        Text(String),
        Number(i64),
    }
    let p = match payload.filter(|p| !p.is_none()) {
        None => Payload::Static,
        Some(p) if p.is_instance_of::<PyString>() => Payload::Text(p.extract()?),
        Some(p) if p.is_instance_of::<PyInt>() => Payload::Number(p.extract()?),
        Some(_) => {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "payload must be None, a str or an int",
            ));
        }
    };
    guarded(py, || {
        py.detach(|| match p {
            Payload::Static => panic!("a test panic (static text)"),
            Payload::Text(s) => panic!("{s}"),
            Payload::Number(n) => std::panic::panic_any(n),
        })
    })
}
