//! Shared by the tests that run a pytest suite (tests/mcp_proxy.rs,
//! tests/mcp_inspector.rs, tests/python_package.rs): one summary line per
//! suite on success, the whole output on a failure. scripts/totals.awk adds
//! the summary lines to the test command's totals.

/// Prints the summary line of a pytest run (`tests/mcp (pytest): 97 passed
/// in 80.1s`, which scripts/test adds to its totals) straight to stderr,
/// past cargo's capture; on a failure, the whole output, then fails.
pub fn report_pytest(what: &str, out: &std::process::Output) {
    use std::io::Write as _;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output")
        .trim_matches(|c: char| c == '=' || c.is_whitespace())
        .to_string();
    let mut err = std::io::stderr().lock();
    if out.status.success() {
        let _ = writeln!(err, "{what} (pytest): {summary}");
        return;
    }
    let _ = err.write_all(&out.stdout);
    let _ = err.write_all(&out.stderr);
    let _ = writeln!(err, "{what} (pytest): {summary}");
    panic!("{what} failed ({}): {summary}", out.status);
}
