//! The test command's last line (scripts/test runs scripts/totals.awk over the
//! whole `cargo test` log): totals over libtest's `test result:` lines and
//! the pytest summary lines the SDK-flow tests print.

use std::io::Write;
use std::process::{Command, Stdio};

fn totals(log: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/totals.awk");
    let mut child = Command::new("awk")
        .args(["-f", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("awk runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(log.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn rust_results_and_sdk_flows_add_up_in_one_last_line() {
    let log = "\
running 3 tests
test a ... ok
test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s
tests/mcp (pytest): 97 passed, 2 skipped in 80.10s
test result: FAILED. 10 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s
tests/mcp/test_inspector.py (pytest): 1 failed, 16 passed, 1 error in 30.00s
";
    let out = totals(log);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "== totals: Rust 13 passed, 2 failed, 1 ignored (2 binaries); SDK flows 113 passed, 2 failed, 2 skipped",
            "totals: 126 passed, 4 failed, 3 skipped",
        ],
        "{out}"
    );
}

#[test]
fn a_log_without_results_says_zero_rather_than_nothing() {
    let out = totals("error: could not compile `toolgate`\n");
    assert_eq!(
        out.lines().last(),
        Some("totals: 0 passed, 0 failed, 0 skipped"),
        "{out}"
    );
}
