//! Runs the MCP proxy's end-to-end tests (tests/mcp, pytest with the `mcp`
//! SDK as the client and real MCP servers downstream) against the binary that
//! cargo just built.
//!
//! The Python side needs the virtualenvs that `scripts/test` (the README's
//! test command) installs: `.venv`, `.venv-mcp1`, and `.mcp-node` for the
//! Node filesystem server. When they are missing the test FAILS, naming what
//! is missing: a skip must never look like a pass. Opting out is explicit:
//! `TOOLGATE_SKIP_MCP_E2E=1` turns the test into `ignored` (see build.rs), and
//! `TOOLGATE_SKIP_MCP_NODE=1` skips only the tests that need Node.

mod pytest_summary;
use pytest_summary::report_pytest;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the test cannot run here, naming the fix and the opt-out; `None` when
/// everything it needs is installed.
fn missing(root: &Path) -> Option<String> {
    let dir = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(default))
    };
    let mut need = vec![
        dir("TOOLGATE_MCP_VENV", ".venv").join("bin/python"),
        dir("TOOLGATE_MCP_VENV", ".venv").join("bin/mcp-server-time"),
        dir("TOOLGATE_MCP_VENV", ".venv").join("bin/mcp-server-fetch"),
        dir("TOOLGATE_MCP1_VENV", ".venv-mcp1").join("bin/mcp-server-sqlite"),
    ];
    if std::env::var_os("TOOLGATE_SKIP_MCP_NODE").is_none_or(|v| v != "1") {
        need.push(
            dir("TOOLGATE_NODE_DIR", ".mcp-node").join("node_modules/.bin/mcp-server-filesystem"),
        );
    }
    let absent: Vec<String> = need
        .iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    (!absent.is_empty()).then(|| {
        format!(
            "the MCP proxy's end-to-end tests (tests/mcp) cannot run: missing {}. Run scripts/test \
             (the README's test command), which installs the MCP servers and the `mcp` SDK; or opt \
             out on purpose with TOOLGATE_SKIP_MCP_E2E=1 (all of them) or TOOLGATE_SKIP_MCP_NODE=1 \
             (those that need the Node filesystem server)",
            absent.join(", ")
        )
    })
}

#[test]
#[cfg_attr(
    toolgate_skip_mcp_e2e,
    ignore = "opted out with TOOLGATE_SKIP_MCP_E2E=1: the MCP proxy's end-to-end tests did not run"
)]
fn mcp_proxy_end_to_end_with_real_servers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Some(msg) = missing(root) {
        panic!("{msg}");
    }
    let python = std::env::var_os("TOOLGATE_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv"))
        .join("bin/python");
    let out = Command::new(&python)
        .args([
            "-m",
            "pytest",
            "tests/mcp",
            // run by tests/mcp_inspector.rs, which fails without the Inspector
            "--ignore=tests/mcp/test_inspector.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rs",
        ])
        .current_dir(root)
        .env("TOOLGATE_BIN", env!("CARGO_BIN_EXE_toolgate"))
        .output()
        .expect("cannot run pytest");
    report_pytest("tests/mcp", &out);
}

/// Without the servers the test's message says what is missing, how to
/// install it and how to opt out: it fails, it does not pass.
#[test]
fn a_missing_server_is_a_failure_that_names_the_opt_out() {
    let empty = tempfile::tempdir().unwrap();
    let msg = missing(empty.path());
    let msg = msg.expect("an empty folder has no virtualenv");
    for needle in [
        ".venv/bin/python",
        "scripts/test",
        "TOOLGATE_SKIP_MCP_E2E=1",
        "TOOLGATE_SKIP_MCP_NODE=1",
    ] {
        assert!(msg.contains(needle), "{needle}: {msg}");
    }
}
