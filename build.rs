//! Turns the explicit opt-outs of the MCP end-to-end tests into `cfg`s, so
//! that a skipped test shows as `ignored` (with the variable that skipped it)
//! in `cargo test`'s report instead of as a pass. See scripts/test.

fn main() {
    for (var, cfg) in [
        ("TOOLGATE_SKIP_MCP_E2E", "toolgate_skip_mcp_e2e"),
        ("TOOLGATE_SKIP_INSPECTOR", "toolgate_skip_inspector"),
        ("TOOLGATE_SKIP_CONFORMANCE", "toolgate_skip_conformance"),
        ("TOOLGATE_SKIP_PYTHON", "toolgate_skip_python"),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo::rerun-if-env-changed={var}");
        if std::env::var_os(var).is_some_and(|v| v == "1") {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
