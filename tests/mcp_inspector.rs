//! Runs the MCP proxy's discovery flows with MCP Inspector as the client
//! (tests/mcp/test_inspector.py: `mcp-inspector --cli` and `mcpdo`, from the
//! npm package `@modelcontextprotocol/inspector`, pinned and installed by
//! `scripts/test` into `.mcp-inspector`), against the binary cargo just built.
//!
//! A client we did not write must be in the suite: when the Inspector (or the
//! Python side that sets up the servers, `.venv`) is missing this test FAILS,
//! unless `TOOLGATE_SKIP_INSPECTOR=1` says to skip it on purpose (then it
//! shows as `ignored`, see build.rs).

mod pytest_summary;
use pytest_summary::report_pytest;

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
#[cfg_attr(
    toolgate_skip_inspector,
    ignore = "opted out with TOOLGATE_SKIP_INSPECTOR=1: the MCP Inspector flows did not run"
)]
fn mcp_proxy_with_mcp_inspector_as_the_client() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = std::env::var_os("TOOLGATE_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv"));
    let python = venv.join("bin/python");
    let inspector = std::env::var_os("TOOLGATE_INSPECTOR_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".mcp-inspector"))
        .join("node_modules/.bin/mcp-inspector");
    for (what, p) in [
        ("the MCP test virtualenv", &python),
        ("MCP Inspector", &inspector),
    ] {
        assert!(
            p.exists(),
            "{what} is missing ({}): run scripts/test to install it, or set TOOLGATE_SKIP_INSPECTOR=1 to skip the Inspector flows on purpose",
            p.display()
        );
    }
    let out = Command::new(&python)
        .args([
            "-m",
            "pytest",
            "tests/mcp/test_inspector.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rs",
        ])
        .current_dir(root)
        .env("TOOLGATE_BIN", env!("CARGO_BIN_EXE_toolgate"))
        .output()
        .expect("cannot run pytest");
    report_pytest("tests/mcp/test_inspector.py", &out);
}
