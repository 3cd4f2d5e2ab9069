//! Runs the MCP proxy's end-to-end tests (tests/mcp, pytest with the `mcp`
//! SDK as the client and real MCP servers downstream) against the binary that
//! cargo just built.
//!
//! The Python side needs the virtualenvs that `.ci/run` creates (`.venv`,
//! `.venv-mcp1`, and `.mcp-node` when Node is present). When `.venv` is
//! missing the test fails under CI (`CI` set) and is skipped, loudly,
//! elsewhere: run `.ci/run` once (or see docs/mcp-proxy.md) to set them up.

use std::path::Path;
use std::process::Command;

#[test]
fn mcp_proxy_end_to_end_with_real_servers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = std::env::var_os("TOOLGATE_MCP_VENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join(".venv"));
    let python = venv.join("bin/python");
    if !python.exists() {
        let msg = format!(
            "{} is missing: the MCP proxy's end-to-end tests (tests/mcp) did not run; run .ci/run to install the MCP servers and the `mcp` SDK",
            python.display()
        );
        if std::env::var_os("CI").is_some() {
            panic!("{msg}");
        }
        eprintln!("SKIPPED LOUDLY: {msg}");
        return;
    }
    let status = Command::new(&python)
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
        .status()
        .expect("cannot run pytest");
    assert!(status.success(), "tests/mcp failed ({status})");
}
