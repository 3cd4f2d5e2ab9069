//! Issue 29, what the sixth newcomer pass found in `mcp-proxy` (closing
//! note 36, "New problems" 9 and 10, and "Still missing"): the paths
//! inside a configuration checked at start-up at their place, numbers
//! with their real range, errors that name the option given or stand at
//! the `[[server]]` header, `--era NAME=ERA`, and a misspelt argument of a
//! tool answered with the declared name. The flows that need real MCP
//! servers (the era probe's noise, a crashed server's stderr, a misspelt
//! downstream argument through the proxy) are
//! `tests/mcp/test_newcomer_round9.py`.

mod common;
use common::{stderr, toolgate, write};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `mcp-proxy ARGS` with an empty stdin: (exit code, stderr).
fn proxy(args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["mcp-proxy"];
    all.extend_from_slice(args);
    let o = toolgate(&all, Some(""));
    (o.status.code(), stderr(&o))
}

/// Item 1: a `[[server]]`'s `cwd` and `command`, and the folders of the
/// files the proxy writes, are checked before any server starts, each at
/// its value's FILE:LINE:COLUMN (or named by its option); a missing `cwd`
/// is said to be the working directory, not "cannot start true".
#[test]
fn paths_inside_the_config_are_checked_at_start_at_their_place() {
    let d = tempfile::tempdir().unwrap();
    let script = d.path().join("server.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap(); // not executable
    let cases: [(&str, &str, &str); 4] = [
        (
            "[[server]]\nname = \"a\"\ncommand = \"true\"\ncwd = \"/nonexistent-i29l\"\n",
            "4:7",
            "server `a`: the working directory /nonexistent-i29l does not exist",
        ),
        (
            "[[server]]\nname = \"a\"\ncommand = \"no-such-program-i29l\"\n",
            "3:11",
            "server `a`: the command `no-such-program-i29l` is not found on PATH",
        ),
        (
            &format!(
                "[[server]]\nname = \"a\"\ncommand = \"{}\"\n",
                script.display()
            ),
            "3:11",
            &format!(
                "server `a`: the command {} is not executable",
                script.display()
            ),
        ),
        (
            // a relative command is taken from the server's cwd
            &format!(
                "[[server]]\nname = \"a\"\ncwd = \"{}\"\ncommand = \"./server.sh\"\n",
                d.path().display()
            ),
            "4:11",
            &format!(
                "server `a`: the command {} is not executable",
                script.display()
            ),
        ),
    ];
    for (i, (text, at, want)) in cases.iter().enumerate() {
        let p = write(d.path(), &format!("c{i}.toml"), text);
        let (code, err) = proxy(&["--config", &p]);
        assert_eq!(code, Some(2), "{text}: {err}");
        assert!(err.contains(&format!("{p}:{at}: {want}")), "{text}: {err}");
        // checked before any server started
        assert!(
            !err.contains("cannot start") && !err.contains("server down"),
            "{err}"
        );
    }
    // every problem of a file at once
    let p = write(
        d.path(),
        "two.toml",
        "[[server]]\nname = \"a\"\ncommand = \"true\"\ncwd = \"/nonexistent-i29l\"\n[[server]]\nname = \"b\"\ncommand = \"no-such-program-i29l\"\n",
    );
    let (_, err) = proxy(&["--config", &p]);
    assert!(err.contains(&format!("{p}:4:7: server `a`")), "{err}");
    assert!(err.contains(&format!("{p}:7:11: server `b`")), "{err}");
    // the same for --server, named by the option
    let (code, err) = proxy(&["--server", "a=no-such-program-i29l --flag"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--server a=no-such-program-i29l --flag: server `a`: the command `no-such-program-i29l` is not found on PATH"),
        "{err}"
    );
    // an output file's missing folder: at its key in the file, or named by
    // the option that gave it (exit 3, as every file that cannot be written)
    let p = write(
        d.path(),
        "audit.toml",
        "audit = \"no-such-folder/audit.jsonl\"\n[[server]]\nname = \"a\"\ncommand = \"true\"\n",
    );
    let (code, err) = proxy(&["--config", &p]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains(&format!("{p}:1:9: audit ")), "{err}");
    assert!(err.contains("no-such-folder does not exist"), "{err}");
    let (code, err) = proxy(&["--config", &p, "--audit", "no-such-folder-2/a.jsonl"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains(
            "--audit no-such-folder-2/a.jsonl: the folder no-such-folder-2 does not exist"
        ),
        "{err}"
    );
    assert!(!err.contains(&format!("{p}:1:9")), "{err}");
    // a file it names for reading, at its key, with the path it was taken as
    let p = write(
        d.path(),
        "policy.toml",
        "tags = \"my-tags\"\n[[server]]\nname = \"a\"\ncommand = \"true\"\n",
    );
    let (code, err) = proxy(&["--config", &p]);
    assert_eq!(code, Some(2), "{err}");
    let tags = d.path().join("my-tags");
    assert!(
        err.contains(&format!(
            "{p}:1:8: tags {}: the folder does not exist",
            tags.display()
        )),
        "{err}"
    );
}

/// Item 2: numbers out of range say the range they had to be in (a huge
/// count no longer panics the proxy); a URL without a host says so; an
/// option's error names the option; whole-`[[server]]` errors stand at
/// the table's header.
#[test]
fn numbers_and_whole_server_errors_say_the_range_the_option_and_the_line() {
    let d = tempfile::tempdir().unwrap();
    let server = "[[server]]\nname = \"a\"\ncommand = \"true\"\n";
    let cases = [
        (
            format!("startup_timeout_ms = 99999999999999999999\n{server}"),
            "1:22: startup_timeout_ms must be a whole number of milliseconds within [0, 86400000], found 99999999999999999999",
        ),
        (
            // a count beyond what the call limiter holds panicked at start
            format!("max_concurrent_calls = 9223372036854775807\n{server}"),
            "1:24: max_concurrent_calls must be a whole number within [1, 2305843009213693951], found 9223372036854775807",
        ),
        (
            format!("debounce_ms = 600000\n{server}"),
            "1:15: debounce_ms must be a whole number of milliseconds within [0, 60000], found 600000",
        ),
        (
            "[[server]]\nname = \"a\"\n".to_string(),
            "1:1: server `a` (server[0]) needs `command` (a local server",
        ),
        (
            "[[server]]\nname = \"a\"\ncommand = \"true\"\nurl = \"https://mcp.example.com/mcp\"\n"
                .to_string(),
            "1:1: server `a` (server[0]) has both `command` and `url`",
        ),
        (
            format!("{server}\n[[server]]\nname = \"a\"\ncommand = \"false\"\n"),
            "5:1: server `a` is configured twice (first at line 1)",
        ),
        (
            // what only the whole configuration can check stands at its key too
            format!("[http]\nbearer_token_env = \"TOOLGATE_I29L_UNSET\"\n{server}"),
            "2:20: [http] bearer_token_env: the environment variable `TOOLGATE_I29L_UNSET` is not set",
        ),
        (
            format!("restart_initial_ms = 500\nrestart_max_ms = 100\n{server}"),
            "2:18: restart delays: need 0 < restart_initial_ms <= restart_max_ms",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = write(d.path(), &format!("n{i}.toml"), text);
        let (code, err) = proxy(&["--config", &p]);
        assert_eq!(code, Some(2), "{text}: {err}");
        assert!(err.contains(&format!("{p}:{want}")), "{text}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let options: [(&[&str], &str); 6] = [
        (
            &["--server", "a=http://"],
            "--server a=http://: server `a`: the URL `http://` has no host",
        ),
        (
            &["--server", "a=true", "--debounce-ms", "99999999999"],
            "--debounce-ms must be a whole number of milliseconds within [0, 60000], found 99999999999",
        ),
        (
            &["--server", "a=true", "--poll-ms", "0"],
            "--poll-ms must be a whole number of milliseconds within [1, 3600000], found 0",
        ),
        (
            &[
                "--server",
                "a=true",
                "--state-key-env",
                "TOOLGATE_I29L_UNSET",
            ],
            "--state-key-env TOOLGATE_I29L_UNSET: the environment variable `TOOLGATE_I29L_UNSET` is not set",
        ),
        (
            &[
                "--server",
                "a=true",
                "--listen",
                "127.0.0.1:0",
                "--bearer-token-env",
                "TOOLGATE_I29L_UNSET",
            ],
            "--bearer-token-env TOOLGATE_I29L_UNSET: the environment variable",
        ),
        (
            &["--server", "a=true", "--server", "a=false"],
            "--server a=false: a server named `a` is already configured",
        ),
    ];
    for (args, want) in options {
        let (code, err) = proxy(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        for key in [
            "debounce_ms",
            "poll_ms",
            "state_key_env",
            "bearer_token_env",
        ] {
            assert!(!err.contains(key), "{args:?} names the key: {err}");
        }
    }
}

/// The first line `mcp-proxy ARGS` sends to a server that writes it to
/// `first` and exits (empty when none came within 20 s).
fn first_message(args: &[&str], first: &std::path::Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("mcp-proxy")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut text = String::new();
    while Instant::now() < deadline {
        text = std::fs::read_to_string(first).unwrap_or_default();
        if text.ends_with('\n') {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    text
}

/// Item 3: `--era NAME=ERA` picks a server's era on the command line, as
/// the `[[server]] era` key does: `legacy` opens with `initialize`, the
/// default (`auto`) with the `server/discover` probe. A bad name or era
/// is named, with a did-you-mean.
#[test]
fn the_era_of_a_server_can_be_chosen_on_the_command_line() {
    let d = tempfile::tempdir().unwrap();
    let first = d.path().join("first.json");
    let server = format!("s=sh -c 'head -n 1 > {}'", first.display());
    let legacy = first_message(&["--server", &server, "--era", "s=legacy"], &first);
    assert!(legacy.contains("\"initialize\""), "{legacy}");
    std::fs::remove_file(&first).unwrap();
    let auto = first_message(&["--server", &server], &first);
    assert!(auto.contains("\"server/discover\""), "{auto}");

    let (code, err) = proxy(&["--server", "sqlite=true", "--era", "sqlit=legacy"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--era sqlit=legacy: no server is named `sqlit` (did you mean `sqlite`?)"),
        "{err}"
    );
    let (code, err) = proxy(&["--server", "sqlite=true", "--era", "sqlite=legasy"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("unknown era `legasy` (did you mean `legacy`?)"),
        "{err}"
    );
    let help =
        String::from_utf8_lossy(&toolgate(&["mcp-proxy", "--help"], None).stdout).into_owned();
    assert!(help.contains("--era <NAME=ERA>"), "{help}");
}

/// Item 4: an argument the tool does not declare, close to one it does
/// (`taill` for `tail` on a tool whose arguments are analysed by role),
/// is answered with the declared name, in the message to the model.
#[test]
fn a_misspelt_argument_is_answered_with_the_declared_name() {
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "filesystem.read_text_file",
            "--args",
            r#"{"path": "notes.txt", "taill": 3}"#,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(7));
    let out = String::from_utf8_lossy(&o.stdout);
    let message = out.lines().find(|l| l.starts_with("message: ")).unwrap();
    assert!(
        message.contains("The argument `taill` is not declared by the tool's schema (did you mean `tail`? rename it)"),
        "{message}"
    );
    // the declared name already in the call is not suggested again
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "filesystem.read_text_file",
            "--args",
            r#"{"path": "notes.txt", "tail": 3, "taill": 3}"#,
        ],
        None,
    );
    assert!(!String::from_utf8_lossy(&o.stdout).contains("did you mean"));
}
