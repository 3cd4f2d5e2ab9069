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
//!
//! Modules: `engine` (the `Engine` class: load, select, check), `session`
//! (a session kept on the Rust side across selections), `watch` (hot
//! reload and its events), `selection` and `verdict` (the results),
//! `errors` (exceptions, diagnostics, the panic guard), `convert` (Python
//! values <-> JSON, path arguments).

use pyo3::prelude::*;

mod convert;
mod engine;
mod errors;
mod selection;
mod session;
#[cfg(feature = "test-hooks")]
mod test_hooks;
mod verdict;
mod watch;

use engine::Engine;
use errors::Diagnostic;
use selection::{Selection, Term, ToolResult};
use session::Session;
use verdict::{Finding, Verdict};
use watch::{Events, WatchEvent};

/// The compiled module.
#[pymodule]
fn _toolgate(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add_class::<Selection>()?;
    m.add_class::<Session>()?;
    m.add_class::<ToolResult>()?;
    m.add_class::<Term>()?;
    m.add_class::<Verdict>()?;
    m.add_class::<Finding>()?;
    m.add_class::<WatchEvent>()?;
    m.add_class::<Events>()?;
    m.add_class::<Diagnostic>()?;
    #[cfg(feature = "test-hooks")]
    m.add_function(wrap_pyfunction!(test_hooks::panic_for_tests, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
