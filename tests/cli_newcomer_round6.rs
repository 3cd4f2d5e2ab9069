//! Issue 29, the sixth newcomer pass (the leftovers of closing note 35):
//! too-deep `--args`, a `TOOLGATE_STATE_DIR` that does not exist, `import
//! bfcl --limit 0` and `--data FILE`, unreadable paths named by their
//! option and swapped `--policy`/`--tags`, `audit summary` on unknown
//! outcomes and negative latencies, the `--fuzz` cap, and UTF-16 files.
//! (Item 6, the proxy's `find_tools {"qurey": …}`, is an SDK flow:
//! tests/mcp/test_newcomer_round6.py.)
//!
//! `TOOLGATE_BIN` names another binary to run these against (to see them
//! fail on an older build); by default, this crate's.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Runs `toolgate ARGS` with `env` set, without colours.
fn run(args: &[&str], env: &[(&str, &str)], stdin: Option<&[u8]>) -> Output {
    let bin = std::env::var_os("TOOLGATE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_toolgate")));
    let mut c = Command::new(bin);
    c.args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    if let Some(s) = stdin {
        child.stdin.as_mut().unwrap().write_all(s).unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn toolgate(args: &[&str]) -> Output {
    run(args, &[], None)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

fn root(rel: &str) -> String {
    format!("{ROOT}/{rel}")
}

/// (1) 100,000 levels of `[[[…]]]` are valid JSON, too deep to check: the
/// gate's `call.too-large`, saying how deep and which limit, not "not a
/// valid JSON object". A deny verdict, exit 7 (README's table); JSON that
/// is malformed stays an input error (exit 3).
#[test]
fn a_too_deep_args_is_too_large_not_invalid_json() {
    let d = tempfile::tempdir().unwrap();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let f = write(d.path(), "deep.json", deep.as_bytes());
    let at = format!("@{f}");
    for args in [at.as_str(), "-"] {
        let o = run(
            &["guard", "--tool", "shell.run_command", "--args", args],
            &[],
            (args == "-").then_some(deep.as_bytes()),
        );
        assert_eq!(o.status.code(), Some(7), "{}{}", stdout(&o), stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("call.too-large"), "{out}");
        assert!(
            out.contains("nested more than 128 levels deep (the JSON parser's limit; [gate.limits] max_depth is 32)"),
            "{out}"
        );
        assert!(!out.contains("not a valid JSON object"), "{out}");
    }
    // 40 levels: within the parser, over the policy's max_depth (the same
    // finding); an object, since `--args` that is not one is an input
    // error (exit 3) once it parses
    let o = toolgate(&[
        "guard",
        "--tool",
        "shell.run_command",
        "--args",
        &format!("{{\"command\":{}{}}}", "[".repeat(39), "]".repeat(39)),
    ]);
    assert_eq!(o.status.code(), Some(7));
    assert!(stdout(&o).contains("call.too-large"), "{}", stdout(&o));
    // malformed: an input error
    let o = toolgate(&["guard", "--tool", "shell.run_command", "--args", "[[[1"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

/// (2) README: toolgate creates no folder you name. A `TOOLGATE_STATE_DIR`
/// that does not exist is exit 3 naming the variable and the folder, and
/// nothing is created; one that exists holds the state file.
#[test]
fn a_missing_state_dir_is_an_error_naming_the_variable() {
    let d = tempfile::tempdir().unwrap();
    let gone = d.path().join("state/sessions");
    let gone_s = gone.to_str().unwrap();
    let call = [
        "guard",
        "--tool",
        "shell.run_command",
        "--args",
        r#"{"command": "ls"}"#,
        "--session",
        "s1",
    ];
    let o = run(&call, &[("TOOLGATE_STATE_DIR", gone_s)], None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "TOOLGATE_STATE_DIR={gone_s}: the folder does not exist; create it first (mkdir -p {gone_s})"
        )),
        "{e}"
    );
    assert!(!d.path().join("state").exists(), "a folder was created");
    std::fs::create_dir_all(&gone).unwrap();
    let o = run(&call, &[("TOOLGATE_STATE_DIR", gone_s)], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(gone.join("s1.json").is_file());
}

/// (3) `import bfcl --limit 0` wrote four empty traces and said "ok"; now
/// it is an error and writes nothing. `--data FILE` says what is wrong in
/// plain words.
#[test]
fn import_bfcl_refuses_limit_zero_and_names_a_file_given_as_data() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let data = root("tests/data/bfcl-slice");
    let o = toolgate(&[
        "import",
        "bfcl",
        "--data",
        &data,
        "--out",
        out.to_str().unwrap(),
        "--limit",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert!(stderr(&o).contains("--limit must be ≥ 1"), "{}", stderr(&o));
    assert!(!out.exists(), "nothing is written");
    let readme = root("README.md");
    let o = toolgate(&[
        "import",
        "bfcl",
        "--data",
        &readme,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("--data must be a folder; {readme} is a file")),
        "{e}"
    );
    assert!(!e.contains("the folder is not a folder"), "{e}");
}

/// (4) Every unreadable path is named with its option; a tag file given as
/// `--policy`, and the policies folder given as `--tags`, are reported as
/// swapped options (by their content), in one problem instead of dozens.
#[test]
fn unreadable_paths_name_their_option_and_swapped_options_are_said() {
    let trace = root("examples/sessions.jsonl");
    let policy = root("policies/default.toml");
    let cases: [(&[&str], i32, &str); 6] = [
        (
            &[
                "compare",
                "--policy-a",
                &policy,
                "--policy-b",
                "nosuch",
                "--trace",
                &trace,
            ],
            1,
            "--policy-b nosuch: the file does not exist",
        ),
        (
            &[
                "compare",
                "--policy-a",
                "nosuch",
                "--policy-b",
                &policy,
                "--trace",
                &trace,
            ],
            1,
            "--policy-a nosuch: the file does not exist",
        ),
        (
            &["check", "--tags", "nosuch"],
            1,
            "--tags nosuch: the folder does not exist",
        ),
        (
            &["replay", "--trace", "nosuch"],
            3,
            "--trace nosuch: the file does not exist",
        ),
        (
            &["audit", "summary", "nosuch"],
            3,
            "audit summary nosuch: the file does not exist",
        ),
        (&["check", "--policy", ROOT], 1, "--policy must be a file; "),
    ];
    for (args, code, want) in cases {
        let o = toolgate(args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
    // a tag file as the policy
    let tags_file = root("tool-tags/sqlite.toml");
    let o = toolgate(&["check", "--policy", &tags_file]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "--policy {tags_file} looks like a tool-tag file, not a policy"
        )) && e.contains("Are the options swapped?")
            && e.contains("1 problem found"),
        "{e}"
    );
    // the policies folder as the tags
    let policies = root("policies");
    let o = toolgate(&["check", "--tags", &policies]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "--tags {policies} holds policies, not tool-tag files"
        )) && e.contains("Are the options swapped?")
            && e.contains("1 problem found"),
        "{e}"
    );
    // the same mistake in JSON keeps its exit code and says the same
    let o = toolgate(&["check", "--tags", &policies, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("Are the options swapped?"),
        "{}",
        stderr(&o)
    );
}

/// (5) A record with an unknown outcome counted as a success, and a
/// negative latency came out as the p50. Now each such line is skipped with
/// its number and why, and the summary only holds real durations.
#[test]
fn audit_summary_rejects_unknown_outcomes_and_negative_latencies_by_line() {
    let d = tempfile::tempdir().unwrap();
    let rec = |id: &str, latency: &str, outcome: &str| {
        format!(
            r#"{{"time":"t","event":"verdict","call_id":"{id}","tool":"x","decision":"allow","rule_ids":[],"args_digest":"d","args_preview":"{{}}","latency_ms":{latency},"outcome":"{outcome}"}}"#
        )
    };
    let proxy = r#"{"time":1.0,"session":"s","tool":"t","decision":"allow","latency_ms":-7.5,"outcome":"ok","attempts":1}"#;
    let log = [
        rec("a", "1.5", "bogus"),
        rec("b", "-3", "allowed"),
        proxy.to_string(),
        rec("c", "2", "allowed"),
    ]
    .join("\n");
    let f = write(d.path(), "audit.jsonl", log.as_bytes());
    let o = toolgate(&["audit", "summary", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("total calls: 1\n"), "{out}");
    assert!(out.contains("latency: p50 2.0 ms, p95 2.0 ms"), "{out}");
    // no latency line of the summary holds a negative number
    assert!(
        out.lines()
            .filter(|l| l.contains("latency: "))
            .all(|l| !l.contains('-')),
        "{out}"
    );
    assert!(
        out.contains("line 1: unknown outcome `bogus` of a gate verdict record (expected one of: allowed, asked, denied)"),
        "{out}"
    );
    assert!(
        out.contains("line 2: latency_ms -3 of a gate verdict record is not a duration"),
        "{out}"
    );
    assert!(
        out.contains("line 3: latency_ms -7.5 of a proxy record is not a duration"),
        "{out}"
    );
    // JSON: the same lines, by number, with why
    let o = toolgate(&["audit", "summary", &f, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["skipped_line_numbers"], serde_json::json!([1, 2, 3]));
    assert_eq!(v["successes"], 1);
    // only bad records: exit 3, naming the first
    let f = write(d.path(), "bad.jsonl", rec("a", "1", "bogus").as_bytes());
    let o = toolgate(&["audit", "summary", &f]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("unknown outcome `bogus`"),
        "{}",
        stderr(&o)
    );
}

/// (7) `--fuzz` is capped (the cap named in the error, exit 2) and a long
/// run reports its progress on stderr.
#[test]
fn fuzz_is_capped_and_a_long_run_shows_progress() {
    let o = toolgate(&["check", "--fuzz", "99999999999"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--fuzz 99999999999 is out of range: give 1 to 1000000 random sessions"),
        "{e}"
    );
    let o = toolgate(&["check", "--fuzz", "0"]);
    assert_eq!(o.status.code(), Some(2));
    // A run long enough to report: progress comes every 2 s, so a run
    // that took longer must have printed at least one line (a debug build
    // takes several seconds for this one; a run under 2 s proves nothing
    // and is only checked for its result).
    let d = tempfile::tempdir().unwrap();
    let many: Vec<String> = (0..400)
        .map(|i| {
            format!(
                r#"{{"name":"t{i}","description":"tool number {i} reads files","inputSchema":{{"type":"object"}}}}"#
            )
        })
        .collect();
    let tools = write(
        d.path(),
        "tools.json",
        format!(r#"{{"tools":[{}]}}"#, many.join(",")).as_bytes(),
    );
    let t0 = std::time::Instant::now();
    let o = toolgate(&["check", "--tools", &tools, "--fuzz", "2000"]);
    let took = t0.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("fuzz: 2000 random sessions, 0 violation(s)"),
        "{}",
        stdout(&o)
    );
    let e = stderr(&o);
    let progress: Vec<&str> = e.lines().filter(|l| l.starts_with("fuzz: ")).collect();
    if took > std::time::Duration::from_secs(3) {
        assert!(!progress.is_empty(), "{took:?} and no progress line: {e}");
    }
    for l in progress {
        assert!(
            l.contains(" of 2000 random sessions (") && l.ends_with(" left"),
            "{l}"
        );
    }
}

/// (8) A UTF-16 file (with the mark FF FE or FE FF, or without one) given
/// as a policy, a tag file, an input, a trace or an args file is named as
/// UTF-16, not "not valid UTF-8 at byte 0".
#[test]
fn utf16_files_are_named_as_utf16() {
    let d = tempfile::tempdir().unwrap();
    let le = |text: &str, bom: bool| -> Vec<u8> {
        let mut b = if bom { vec![0xFF, 0xFE] } else { Vec::new() };
        b.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        b
    };
    let be = |text: &str| -> Vec<u8> {
        let mut b = vec![0xFE, 0xFF];
        b.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        b
    };
    let policy_text = std::fs::read_to_string(root("policies/default.toml")).unwrap();
    let tags_text = std::fs::read_to_string(root("tool-tags/sqlite.toml")).unwrap();
    let trace_text = std::fs::read_to_string(root("examples/sessions.jsonl")).unwrap();
    let policy = write(d.path(), "p.toml", &le(&policy_text, true));
    let tag_dir = d.path().join("tags");
    std::fs::create_dir(&tag_dir).unwrap();
    write(&tag_dir, "sqlite.toml", &be(&tags_text));
    let input = write(
        d.path(),
        "in.json",
        &le(r#"{"message": "list tables"}"#, false),
    );
    let trace = write(d.path(), "t.jsonl", &le(&trace_text, true));
    let args = write(d.path(), "args.json", &le(r#"{"command": "ls"}"#, true));
    let at = format!("@{args}");
    let tags = tag_dir.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["check", "--policy", &policy], "byte-order mark FF FE"),
        (&["check", "--tags", tags], "byte-order mark FE FF"),
        (
            &["eval", "--input", &input],
            "no byte-order mark; every second byte is 0",
        ),
        (&["replay", "--trace", &trace], "byte-order mark FF FE"),
        (
            &["guard", "--tool", "shell.run_command", "--args", &at],
            "byte-order mark FF FE",
        ),
    ];
    for (a, mark) in cases {
        let o = toolgate(a);
        assert_ne!(o.status.code(), Some(0), "{a:?}");
        let e = stderr(&o);
        assert!(
            e.contains(&format!(
                "this file looks like UTF-16 ({mark}); save it as UTF-8"
            )),
            "{a:?}: {e}"
        );
        assert!(!e.contains("not valid UTF-8 at byte 0"), "{a:?}: {e}");
    }
}
