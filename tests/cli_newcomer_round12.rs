//! Issue 29, what the last newcomer pass and the last stop left (the
//! SIGTERM flow with a real server is `tests/mcp/test_newcomer_round12.py`):
//! every problem of a `mcp-proxy --config` file and of its command-line
//! options in one run, a broken tag symlink named by `watch`, every typo
//! of a trace line, every number of an `--input` out of its range, and
//! `watch --input`'s errors located in the input file.

mod common;
use common::{stderr, toolgate, write};

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// `toolgate watch --format json ARGS`, its stdout read line by line.
struct Watch {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Watch {
    fn start(args: &[&str]) -> Watch {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["watch", "--format", "json", "--debounce", "50"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watch { child, lines }
    }

    fn next(&self) -> serde_json::Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(15))
            .expect("a line from watch within 15 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tags folder with the shipped time.toml.
fn tags_folder(root: &Path) -> String {
    let tags = root.join("tags");
    std::fs::create_dir(&tags).unwrap();
    std::fs::copy(
        Path::new(MANIFEST).join("tool-tags/time.toml"),
        tags.join("time.toml"),
    )
    .unwrap();
    tags.to_str().unwrap().to_string()
}

/// Item 3: a tag file that becomes a symbolic link to nothing is named
/// by `watch` (a rejected load, as `check` names it), not waited for as
/// a file being written; the last good plan keeps serving. At the first
/// load it is exit 1, naming the link.
#[cfg(unix)]
#[test]
fn watch_names_a_broken_tag_symlink_and_keeps_the_last_good_plan() {
    let d = tempfile::tempdir().unwrap();
    let tags = tags_folder(d.path());
    let input = write(d.path(), "in.json", "{\"message\": \"what time is it\"}");
    let w = Watch::start(&["--tags", &tags, "--input", &input]);
    let first = w.next();
    assert_eq!(first["event"], "loaded", "{first}");
    let link = Path::new(&tags).join("ghost.toml");
    std::os::unix::fs::symlink("nowhere.toml", &link).unwrap();
    let second = w.next();
    assert_eq!(second["event"], "rejected", "{second}");
    assert_eq!(second["version"], first["version"], "{second}");
    let err = second["error"].as_str().unwrap();
    assert!(
        err.contains("ghost.toml") && err.contains("a symbolic link to `nowhere.toml`"),
        "{err}"
    );
    assert_eq!(second["active"], first["active"], "{second}");
    drop(w);
    // the same link at the first load
    let o = toolgate(
        &[
            "watch", "--tags", &tags, "--input", &input, "--format", "json",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &stderr(&o);
    assert!(out.contains("a symbolic link to `nowhere.toml`"), "{out}");
}

/// Item 4: every unknown key of a trace line, each with its column and
/// did-you-mean, not the first only.
#[test]
fn every_typo_of_a_trace_line_is_reported() {
    let d = tempfile::tempdir().unwrap();
    let trace = write(
        d.path(),
        "t.jsonl",
        concat!(
            "{\"sesion\": \"s1\", \"t\": 0, \"evnt\": \"tool_call\", \"tol\": \"time.get_current_time\"}\n",
            "{\"session\": \"s1\", \"t\": 1, \"event\": \"tool_call\", \"tool\": \"time.get_current_time\", \"argumnts\": {}, \"outcom\": \"ok\"}\n",
        ),
    );
    let o = toolgate(&["replay", "--trace", &trace], None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    let line = |n: usize| {
        e.lines()
            .find(|l| l.contains(&format!("trace line {n},")))
            .unwrap_or_else(|| panic!("no line {n}: {e}"))
            .to_string()
    };
    let one = line(1);
    for (typo, meant) in [("sesion", "session"), ("evnt", "event"), ("tol", "tool")] {
        assert!(
            one.contains(&format!("`{typo}`")) && one.contains(&format!("did you mean `{meant}`?")),
            "{typo}: {one}"
        );
    }
    assert!(one.contains("`evnt` at column 26"), "{one}");
    let two = line(2);
    for (typo, meant) in [("argumnts", "arguments"), ("outcom", "outcome")] {
        assert!(
            two.contains(&format!("`{typo}`")) && two.contains(&format!("did you mean `{meant}`?")),
            "{typo}: {two}"
        );
    }
}

/// Item 5: every number of an `--input` out of its range, each at its
/// FILE:LINE:COLUMN, in the file's order, then the count.
#[test]
fn every_out_of_range_number_of_an_input_is_reported() {
    let d = tempfile::tempdir().unwrap();
    let input = write(
        d.path(),
        "in.json",
        "{\n  \"context\": {\"session_duration_seconds\": -5},\n  \"usage\": {\n    \"call_counts\": {\"time.get_current_time\": -1},\n    \"usage_frequency\": {\"time.get_current_time\": 2}\n  }\n}\n",
    );
    let o = toolgate(&["eval", "--input", &input], None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    for (at, what) in [
        (
            ":2:43: ",
            "`context.session_duration_seconds` must be a finite number >= 0, found -5",
        ),
        (
            ":4:46: ",
            "usage.call_counts[`time.get_current_time`] must be a whole number >= 0",
        ),
        (
            ":5:50: ",
            "usage.usage_frequency[`time.get_current_time`] must be within [0, 1], found 2",
        ),
    ] {
        assert!(e.contains(&format!("{input}{at}{what}")), "{at}{what}\n{e}");
    }
    assert!(e.contains("3 problems found"), "{e}");
}

/// Item 6: `watch --input`'s error for an input that does not fit the
/// plan (an undeclared stage, a tool the catalog does not hold) stands at
/// its FILE:LINE:COLUMN, as `eval --input` puts it.
#[test]
fn watch_locates_the_errors_of_its_input() {
    let d = tempfile::tempdir().unwrap();
    let tags = tags_folder(d.path());
    for (text, at, what) in [
        (
            "{\"context\": {\"conversation_stage\": \"debuging\"}}",
            ":1:36: ",
            "conversation stage `debuging` is not declared",
        ),
        (
            "{\n  \"usage\": {\"call_counts\": {\"time.get_curent_time\": 2}}\n}",
            ":2:29: ",
            "usage.call_counts names `time.get_curent_time`, which is not in the catalog (did you mean `time.get_current_time`?)",
        ),
    ] {
        let input = write(d.path(), "in.json", text);
        let w = Watch::start(&["--tags", &tags, "--input", &input]);
        let first = w.next();
        assert_eq!(first["event"], "loaded", "{first}");
        let err = first["error"].as_str().unwrap_or_default();
        assert!(
            err.contains(&format!("{input}{at}{what}")),
            "{at}{what}\n{first}"
        );
    }
}

/// Item 2: every problem of a `--config` file in one run, each at its
/// FILE:LINE:COLUMN (a value, an unknown key, a whole-config check, a
/// path: they came in four runs), and every problem of the command-line
/// options with them (they stopped at the first).
#[test]
fn every_problem_of_a_proxy_config_and_its_options_in_one_run() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "proxy.toml",
        "max_concurrent_calls = -5\nrestart_initial_ms = 1000\nrestart_max_ms = 500\n[http]\npath = \"mcp\"\n[[server]]\nname = \"a\"\ncommand = \"no-such-program-i29o\"\n[[server]]\nname = \"b\"\ncomand = \"x\"\n",
    );
    let o = toolgate(
        &[
            "mcp-proxy",
            "--config",
            &f,
            "--poll-ms",
            "0",
            "--debounce-ms",
            "99999999",
            "--listen",
            "nonsense",
            "--server",
            "bad",
        ],
        Some(""),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    for want in [
        format!("{f}:1:24: max_concurrent_calls must be a whole number within [1, "),
        format!("{f}:3:18: restart delays: need 0 < restart_initial_ms <= restart_max_ms"),
        format!("{f}:5:8: http.path must start with `/`"),
        format!("{f}:8:11: server `a`: the command `no-such-program-i29o` is not found on PATH"),
        format!("{f}:11:1: unknown key `comand` (did you mean `command`?)"),
        "5 problems found".to_string(),
        "--poll-ms must be a whole number of milliseconds within [1, 3600000], found 0".into(),
        "--debounce-ms must be a whole number of milliseconds within [0, 60000], found 99999999"
            .into(),
        "--listen: listen address `nonsense`".into(),
        "--server bad: `bad`: expected NAME=COMMAND".into(),
    ] {
        assert!(e.contains(&want), "{want}\n{e}");
    }
    // two misspelt keys of one file: both, each with its did-you-mean
    let f = write(
        d.path(),
        "two.toml",
        "poll_mss = 5\n[[server]]\nname = \"t\"\ncommand = \"true\"\nrgs = []\n",
    );
    let o = toolgate(&["mcp-proxy", "--config", &f], Some(""));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "{f}:1:1: unknown key `poll_mss` (did you mean `poll_ms`?)"
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "{f}:5:1: unknown key `rgs` (did you mean `args`?)"
        )),
        "{e}"
    );
}
