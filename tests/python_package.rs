//! Runs the Python package's tests (python/tests, pytest) against the
//! package that `scripts/test` built into `.venv-py` (`pip install ./python`,
//! dev profile, feature `test-hooks`: the crate as a PyO3 extension) and the
//! CLI that cargo just built: the seed vectors from Python, the gate cases
//! against `toolgate guard`, hot reload with real edits, the OpenAI Agents SDK
//! and LangChain/LangGraph adapters with the real frameworks, a Rust panic
//! surfacing as `ToolgateError`.
//!
//! Without the virtualenv or the built package the test FAILS, saying what to
//! run; `TOOLGATE_SKIP_PYTHON=1` turns it into `ignored` (see build.rs).

mod pytest_summary;
use pytest_summary::report_pytest;

use std::path::{Path, PathBuf};
use std::process::Command;

fn venv(root: &Path) -> PathBuf {
    std::env::var_os("TOOLGATE_PY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv-py"))
}

/// Why the suite cannot run here, naming the fix and the opt-out.
fn missing(root: &Path) -> Option<String> {
    let python = venv(root).join("bin/python");
    let why = if !python.exists() {
        format!("{} is missing", python.display())
    } else {
        let out = Command::new(&python)
            .args([
                "-c",
                "import toolgate._toolgate, pytest, agents, langchain_core, langgraph",
            ])
            .output();
        match out {
            Ok(o) if o.status.success() => return None,
            Ok(o) => format!(
                "the package or a test dependency does not import: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("cannot run {}: {e}", python.display()),
        }
    };
    Some(format!(
        "the Python package's tests (python/tests) cannot run: {why}. Run scripts/test (the \
         README's test command), which builds the package into .venv-py with maturin; or opt \
         out on purpose with TOOLGATE_SKIP_PYTHON=1"
    ))
}

#[test]
#[cfg_attr(
    toolgate_skip_python,
    ignore = "opted out with TOOLGATE_SKIP_PYTHON=1: the Python package's tests did not run"
)]
fn python_package_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Some(msg) = missing(root) {
        panic!("{msg}");
    }
    let out = Command::new(venv(root).join("bin/python"))
        .args([
            "-m",
            "pytest",
            "python/tests",
            "-q",
            "-p",
            "no:cacheprovider",
            "--benchmark-disable",
            "-rs",
        ])
        .current_dir(root)
        .env("TOOLGATE_BIN", env!("CARGO_BIN_EXE_toolgate"))
        .output()
        .expect("cannot run pytest");
    report_pytest("python/tests", &out);
}

/// Without the virtualenv the message says what to run and how to opt out.
#[test]
fn a_missing_package_is_a_failure_that_names_the_opt_out() {
    if std::env::var_os("TOOLGATE_PY_VENV").is_some() {
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let msg = missing(empty.path()).expect("an empty folder has no virtualenv");
    for needle in [
        ".venv-py/bin/python",
        "scripts/test",
        "TOOLGATE_SKIP_PYTHON=1",
    ] {
        assert!(msg.contains(needle), "{needle}: {msg}");
    }
}
