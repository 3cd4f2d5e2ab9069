//! Shared by the CLI tests: run the real `toolgate` binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `toolgate ARGS`, feeding `stdin` when given, without colours.
pub fn toolgate(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(s) = stdin {
        child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(s.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

/// The standard error of `o`, as text (lossy).
#[allow(dead_code)] // not every test binary that shares this module reads it
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The standard output of `o`, as text (lossy).
#[allow(dead_code)]
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Writes `text` to `dir/name`; returns the path as a string.
#[allow(dead_code)]
pub fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// Exit code of `toolgate guard` for `line` as the `command` of the shipped
/// `shell.run_command` tool (-1 when killed by a signal).
#[allow(dead_code)]
pub fn guard_shell(line: &str) -> i32 {
    let args = serde_json::json!({ "command": line }).to_string();
    toolgate(
        &["guard", "--tool", "shell.run_command", "--args", &args],
        None,
    )
    .status
    .code()
    .unwrap_or(-1)
}
