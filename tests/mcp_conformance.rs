//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned by `scripts/test`) against `toolgate mcp-proxy --listen`, side by
//! side with the same fixture server alone, at both frozen requirement lists
//! of the suite: `conformance server --url URL --requirements 2026-07-28`
//! (the modern, stateless wire: per-request `_meta`, `server/discover`,
//! `InputRequiredResult`) and `--requirements 2025-11-25` (the initialize
//! handshake).
//!
//! The fixture is tests/mcp/conformance_server.py: the tools, resources,
//! prompts and completions the suite's server scenarios name, for both eras,
//! on the `mcp` 2.x SDK (`.venv`), over Streamable HTTP. Alone it passes every
//! scenario either revision requires (checked: a fixture that stops passing
//! one fails the test, so that the comparison never goes vacuous). For each
//! revision the test runs the suite
//!
//! 1. against the fixture alone;
//! 2. through the proxy in front of it (`NAME=URL`: both of the proxy's HTTP
//!    sides are in the run), names unchanged (`--name-format {tool}`), the
//!    proxy's own tools off, a policy that lists every tool
//!    (tests/data/conformance/pass-through.toml);
//! 3. through the proxy in front of a server that speaks only the handshake
//!    era (tests/mcp/conformance_tools.py, FastMCP on stdio from
//!    `.venv-mcp1`), so that both client eras meet both server eras;
//! 4. (2025-11-25 only) against `@modelcontextprotocol/server-everything`, a
//!    server we did not write, directly and through the proxy.
//!
//! prints the results side by side and both pass lists, and checks:
//!
//! - every scenario the fixture passes alone passes through the proxy in
//!   front of it, except those in [`NOT_THROUGH_PROXY`] (each with its
//!   reason; one of them that starts passing fails the test, so that the list
//!   and docs/mcp-proxy.md stay true) and the [`LEFT_OUT`] ones (Tasks);
//! - through the proxy in front of the handshake-era server, every such
//!   scenario of the 2025-11-25 list, and at 2026-07-28 those the two lists
//!   share plus [`PROXY_OWN_MODERN`] (what the proxy answers itself);
//! - every scenario server-everything passes directly passes through the
//!   proxy, and dns-rebinding-protection too (the proxy checks `Host`);
//! - the suite's calls through the proxy were gated and audited.
//!
//! `scripts/test` (the README's test command, which `.ci/run` runs) installs
//! Node 22 (the npm package `node@22`, which ships the binary), the suite and
//! server-everything, pinned, into `.mcp-conformance`, and the virtualenvs.
//! When they are missing this test FAILS, unless `TOOLGATE_SKIP_CONFORMANCE=1`
//! says to skip it on purpose (then it shows as `ignored`, see build.rs).
//!
//! A run takes seconds; each scenario is bounded by the suite's `--timeout`
//! and a whole run by [`RUN_DEADLINE`], so that a proxy that hangs fails the
//! test in minutes, not hours.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// The suite's per-scenario timeout, in milliseconds (its default is 30 s).
const SCENARIO_TIMEOUT_MS: &str = "10000";
/// The most one run of the suite may take (they take seconds).
const RUN_DEADLINE: Duration = Duration::from_secs(180);

/// Scenarios the fixture passes alone that do not pass through the proxy,
/// by revision, with why (docs/mcp-proxy.md explains them).
const NOT_THROUGH_PROXY: &[(&str, &str, &str)] = &[
    (
        LEGACY,
        "tools-call-with-logging",
        "a downstream server's notifications/message are not relayed: its connection is shared by every session and a log message names no request",
    ),
    (
        LEGACY,
        "tools-call-sampling",
        "a downstream server's sampling/createMessage is not relayed to the client (-32601)",
    ),
    (
        LEGACY,
        "tools-call-elicitation",
        "a downstream server's elicitation/create is not relayed; the proxy elicits only its own confirmations",
    ),
    (
        LEGACY,
        "elicitation-sep1034-defaults",
        "a downstream server's elicitation/create is not relayed",
    ),
    (
        LEGACY,
        "elicitation-sep1330-enums",
        "a downstream server's elicitation/create is not relayed",
    ),
];

/// Scenario name prefixes left out of every comparison.
const LEFT_OUT: &[(&str, &str)] = &[(
    "tasks-",
    "Tasks, an extension the 2026-07-28 list runs and does not score; the proxy does not implement it",
)];

/// Scenarios of the 2026-07-28 list the proxy answers itself, whatever era its
/// servers speak: caching hints on the list and read results, the checks of
/// its HTTP headers.
const PROXY_OWN_MODERN: &[&str] = &["caching", "http-header-validation"];

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for_port(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "{what} exited before listening"
        );
        assert!(Instant::now() < deadline, "{what} did not listen in 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kills the child when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The last `n` lines of a log file (each cut at 300 characters), for a
/// failure message.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.chars().take(300).collect())
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// What the test needs, found or the test fails.
struct Setup {
    root: PathBuf,
    /// `.mcp-conformance/node_modules/.bin`: node 22, `conformance`,
    /// `mcp-server-everything`
    bin: PathBuf,
    /// PATH with `bin` first (the suite needs Node >= 22)
    path: String,
    /// `.venv/bin/python` (mcp 2.x): the fixture server
    python: PathBuf,
    /// `.venv-mcp1/bin/python` (mcp<2): the handshake-era server
    python1: PathBuf,
    tmp: tempfile::TempDir,
}

fn setup() -> Setup {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("TOOLGATE_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".mcp-conformance"));
    let bin = dir.join("node_modules/.bin");
    let python = std::env::var_os("TOOLGATE_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv"))
        .join("bin/python");
    let python1 = std::env::var_os("TOOLGATE_MCP1_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv-mcp1"))
        .join("bin/python");
    for (what, p) in [
        ("Node 22 (npm package node@22)", bin.join("node")),
        (
            "the conformance suite (@modelcontextprotocol/conformance)",
            bin.join("conformance"),
        ),
        (
            "server-everything (@modelcontextprotocol/server-everything)",
            bin.join("mcp-server-everything"),
        ),
        (
            "the `mcp` 2.x virtualenv (the fixture server)",
            python.clone(),
        ),
        (
            "the `mcp<2` virtualenv (the handshake-era server)",
            python1.clone(),
        ),
    ] {
        assert!(
            p.exists(),
            "{what} is missing ({}): run scripts/test to install it, or set TOOLGATE_SKIP_CONFORMANCE=1 to skip the conformance run on purpose",
            p.display()
        );
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Setup {
        root,
        bin,
        path,
        python,
        python1,
        tmp: tempfile::tempdir().unwrap(),
    }
}

impl Setup {
    fn log(&self, name: &str) -> PathBuf {
        self.tmp.path().join(format!("{name}.log"))
    }

    /// tests/mcp/conformance_server.py on a free port; its URL.
    fn start_fixture(&self) -> (Guard, String) {
        let port = free_port();
        let log = self.log("fixture");
        let mut child = Guard(
            Command::new(&self.python)
                .arg(self.root.join("tests/mcp/conformance_server.py"))
                .args(["--port", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(File::create(&log).unwrap())
                .spawn()
                .expect("cannot start the fixture server"),
        );
        wait_for_port(port, &mut child.0, "the fixture server");
        (child, format!("http://127.0.0.1:{port}/mcp"))
    }

    /// server-everything over Streamable HTTP on a free port; its URL.
    fn start_everything(&self) -> (Guard, String) {
        let port = free_port();
        let mut child = Guard(
            Command::new(self.bin.join("mcp-server-everything"))
                .arg("streamableHttp")
                .env("PATH", &self.path)
                .env("PORT", port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("cannot start server-everything"),
        );
        wait_for_port(port, &mut child.0, "server-everything");
        (child, format!("http://127.0.0.1:{port}/mcp"))
    }

    /// The handshake-era server for `--server`: FastMCP (mcp<2) on stdio.
    fn legacy_server(&self, name: &str) -> String {
        format!(
            "{name}={} {}",
            self.python1.display(),
            self.root.join("tests/mcp/conformance_tools.py").display()
        )
    }

    /// `toolgate mcp-proxy --listen 127.0.0.1:0` in front of `server`
    /// (`NAME=COMMAND|URL`), names unchanged, every tool listed, auditing to
    /// `<label>.audit.jsonl`; returns it and its URL.
    fn start_proxy(&self, label: &str, server: &str) -> (Guard, String) {
        let audit = self.tmp.path().join(format!("{label}.audit.jsonl"));
        let mut proxy = Guard(
            Command::new(env!("CARGO_BIN_EXE_toolgate"))
                .args(["mcp-proxy", "--listen", "127.0.0.1:0"])
                .arg("--server")
                .arg(server)
                .args([
                    "--name-format",
                    "{tool}",
                    "--no-find-tools",
                    "--no-call-tool",
                ])
                .arg("--policy")
                .arg(self.root.join("tests/data/conformance/pass-through.toml"))
                .arg("--audit")
                .arg(&audit)
                .current_dir(self.tmp.path())
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("cannot start the proxy"),
        );
        let stderr = proxy.0.stderr.take().unwrap();
        let mut log = File::create(self.log(label)).unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let url = loop {
            let Some(line) = lines.next() else {
                panic!(
                    "the proxy ({label}) exited before listening:\n{}",
                    tail(&self.log(label), 40)
                );
            };
            let line = line.unwrap();
            let _ = writeln!(log, "{line}");
            if let Some(u) = line.split(" at ").nth(1)
                && line.contains("serving MCP (Streamable HTTP)")
            {
                break u.trim().to_string();
            }
        };
        // keep draining the proxy's stderr, into its log
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = writeln!(log, "{line}");
            }
        });
        (proxy, url)
    }

    fn audit(&self, label: &str) -> String {
        std::fs::read_to_string(self.tmp.path().join(format!("{label}.audit.jsonl")))
            .unwrap_or_default()
    }

    /// The server scenarios a revision requires (scored), from
    /// `conformance list --server --requirements REV`.
    fn required(&self, rev: &str) -> BTreeSet<String> {
        let out = Command::new(self.bin.join("conformance"))
            .args(["list", "--server", "--requirements", rev])
            .env("PATH", &self.path)
            .stdin(Stdio::null())
            .output()
            .expect("cannot run the conformance suite");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut set = BTreeSet::new();
        let mut in_server = false;
        for line in text.lines() {
            if line.starts_with("Server scenarios") {
                in_server = true;
            } else if line.trim().is_empty() {
                in_server = false;
            } else if in_server && let Some(name) = line.trim().strip_prefix("- ") {
                set.insert(name.trim().to_string());
            }
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("unknown option '--requirements'"),
            "the installed conformance suite predates the frozen requirement lists (`--requirements`, 0.2.x): run scripts/test to install the pinned version"
        );
        assert!(
            set.len() >= 20,
            "no server scenarios in `conformance list --server --requirements {rev}`:\n{text}{stderr}"
        );
        set
    }

    /// Runs the suite's `rev` requirement list against `url`.
    fn run(&self, label: &str, url: &str, rev: &str) -> Run {
        let out = self.tmp.path().join(format!("{label}-{rev}"));
        let stdout = self.log(&format!("suite-{label}-{rev}"));
        let started = Instant::now();
        let mut child = Guard(
            Command::new(self.bin.join("conformance"))
                .args(["server", "--url", url, "--requirements", rev])
                .args(["--timeout", SCENARIO_TIMEOUT_MS, "-o"])
                .arg(&out)
                .env("PATH", &self.path)
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .stdout(File::create(&stdout).unwrap())
                .stderr(Stdio::null())
                .spawn()
                .expect("cannot run the conformance suite"),
        );
        let mut timed_out = false;
        while child.0.try_wait().unwrap().is_none() {
            if started.elapsed() > RUN_DEADLINE {
                timed_out = true;
                let _ = child.0.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(child);
        let text = std::fs::read_to_string(&stdout).unwrap_or_default();
        Run {
            label: format!("{label} at {rev}"),
            results: parse_summary(&text),
            out,
            timed_out,
            secs: started.elapsed().as_secs_f64(),
            stdout,
        }
    }
}

/// One run of the suite.
struct Run {
    label: String,
    /// scenario -> passed (no check failed), from the summary
    results: BTreeMap<String, bool>,
    /// the suite's results folder (`server-<scenario>-<time>/checks.json`)
    out: PathBuf,
    timed_out: bool,
    secs: f64,
    stdout: PathBuf,
}

/// The summary lines, `✓ name: N passed, M failed` (no check failed) or
/// `✗ ...`; the not-scored list after them (`  ✗ name (reason)`) is left.
fn parse_summary(text: &str) -> BTreeMap<String, bool> {
    let mut results = BTreeMap::new();
    for line in text.lines() {
        let trimmed = line.trim();
        let (ok, rest) = if let Some(r) = trimmed.strip_prefix("✓ ") {
            (true, r)
        } else if let Some(r) = trimmed.strip_prefix("✗ ") {
            (false, r)
        } else {
            continue;
        };
        if let Some((name, counts)) = rest.split_once(": ")
            && counts.contains("passed")
        {
            results.insert(name.to_string(), ok);
        }
    }
    results
}

impl Run {
    fn passes(&self, s: &str) -> bool {
        self.results.get(s) == Some(&true)
    }

    fn pass_list(&self) -> Vec<&str> {
        self.results
            .iter()
            .filter(|(_, ok)| **ok)
            .map(|(s, _)| s.as_str())
            .collect()
    }

    /// The first failed check of `scenario`, from its checks.json.
    fn first_failure(&self, scenario: &str) -> String {
        let prefix = format!("server-{scenario}-");
        let Ok(dir) = std::fs::read_dir(&self.out) else {
            return "no results folder".into();
        };
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // server-<scenario>-<YYYY-MM-DDT...>: not a longer scenario name
            let Some(rest) = name.strip_prefix(&prefix) else {
                continue;
            };
            if !(rest.len() > 5
                && rest.as_bytes()[..4].iter().all(u8::is_ascii_digit)
                && rest.as_bytes()[4] == b'-')
            {
                continue;
            }
            let text = std::fs::read_to_string(e.path().join("checks.json")).unwrap_or_default();
            let checks: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
            for c in &checks {
                if c["status"] == "FAILURE" {
                    let msg: String = c["errorMessage"]
                        .as_str()
                        .unwrap_or("")
                        .chars()
                        .take(300)
                        .collect();
                    return format!("{}: {msg}", c["id"].as_str().unwrap_or("?"));
                }
            }
            return "no failed check recorded".into();
        }
        if self.results.contains_key(scenario) {
            "no checks.json".into()
        } else {
            "not run".into()
        }
    }

    /// A run that produced no summary, or ran out of time, is a problem of
    /// its own.
    fn check_complete(&self, required: &BTreeSet<String>, problems: &mut Vec<String>) {
        if self.timed_out {
            problems.push(format!(
                "{}: the suite did not finish in {} s (killed):\n{}",
                self.label,
                RUN_DEADLINE.as_secs(),
                tail(&self.stdout, 30)
            ));
        } else if let Some(s) = required.iter().find(|s| !self.results.contains_key(*s)) {
            problems.push(format!(
                "{}: no result for {s} in the suite's summary:\n{}",
                self.label,
                tail(&self.stdout, 30)
            ));
        }
    }
}

fn left_out(s: &str) -> Option<&'static str> {
    LEFT_OUT
        .iter()
        .find(|(prefix, _)| s.starts_with(prefix))
        .map(|(_, why)| *why)
}

fn excluded(rev: &str, s: &str) -> Option<&'static str> {
    NOT_THROUGH_PROXY
        .iter()
        .find(|(r, name, _)| *r == rev && *name == s)
        .map(|(_, _, why)| *why)
}

fn yes(ok: Option<&bool>) -> &'static str {
    match ok {
        Some(true) => "pass",
        Some(false) => "FAIL",
        None => "-",
    }
}

/// Prints the runs side by side, then each run's pass list.
fn print_side_by_side(rev: &str, required: &BTreeSet<String>, runs: &[&Run]) {
    let names: BTreeSet<&String> = runs.iter().flat_map(|r| r.results.keys()).collect();
    eprintln!("\n== conformance --requirements {rev}: scenario, then one column per run:");
    for (i, r) in runs.iter().enumerate() {
        let scored = required.iter().filter(|s| r.passes(s)).count();
        eprintln!(
            "   [{i}] {} ({:.1} s): {scored} of the {} scored scenarios pass",
            r.label,
            r.secs,
            required.len()
        );
    }
    for s in names {
        let cols: Vec<&str> = runs.iter().map(|r| yes(r.results.get(s))).collect();
        let note = if let Some(why) = left_out(s) {
            format!("left out: {why}")
        } else if let Some(why) = excluded(rev, s) {
            format!("not through the proxy: {why}")
        } else if !required.contains(s) {
            "not scored".to_string()
        } else {
            String::new()
        };
        eprintln!("  {s:<48} {}  {note}", cols.join("  "));
    }
    for r in runs {
        let list = r.pass_list();
        eprintln!("passes {} ({}): {}", r.label, list.len(), list.join(", "));
    }
}

/// Every scenario `alone` passes (less [`LEFT_OUT`] and those `keep` drops)
/// passes `through` the proxy, except the [`NOT_THROUGH_PROXY`] ones, which
/// must still fail there when `stale_check` (the same server behind it).
fn compare(
    rev: &str,
    alone: &Run,
    through: &Run,
    keep: &dyn Fn(&str) -> bool,
    stale_check: bool,
    problems: &mut Vec<String>,
) {
    for s in alone.pass_list() {
        if left_out(s).is_some() || !keep(s) {
            continue;
        }
        match excluded(rev, s) {
            Some(_) if stale_check && through.passes(s) => problems.push(format!(
                "{s}: passes {} now; remove it from NOT_THROUGH_PROXY (and update docs/mcp-proxy.md)",
                through.label
            )),
            Some(_) => {}
            None if !through.passes(s) => problems.push(format!(
                "{s}: passes {}, fails {} ({})",
                alone.label,
                through.label,
                through.first_failure(s)
            )),
            None => {}
        }
    }
}

/// The suite's calls through a proxy were gated and audited: the call of
/// test_simple_text is in the audit, under one of `tools` (a catalog name,
/// or the bare name of a tool no server has).
fn check_audited(setup: &Setup, label: &str, tools: &[&str], problems: &mut Vec<String>) {
    let audited = setup.audit(label);
    if !tools
        .iter()
        .any(|t| audited.contains(&format!("\"tool\":\"{t}\"")))
    {
        problems.push(format!(
            "{label}: the suite's call of test_simple_text is not in the audit:\n{}",
            audited.lines().take(10).collect::<Vec<_>>().join("\n")
        ));
    }
}

fn finish(setup: &Setup, problems: Vec<String>) {
    if problems.is_empty() {
        return;
    }
    let logs: Vec<String> = std::fs::read_dir(setup.tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "log") && !p.to_string_lossy().contains("suite-")
        })
        .map(|p| format!("--- {} ---\n{}", p.display(), tail(&p, 8)))
        .collect();
    panic!(
        "conformance results moved (update the lists here and docs/mcp-proxy.md):\n{}\n\nlogs (last lines):\n{}",
        problems.join("\n"),
        logs.join("\n")
    );
}

#[test]
#[cfg_attr(
    toolgate_skip_conformance,
    ignore = "opted out with TOOLGATE_SKIP_CONFORMANCE=1: the MCP conformance suite did not run"
)]
fn conformance_2026_07_28_fixture_alone_and_through_the_http_proxy() {
    let setup = setup();
    let required = setup.required(MODERN);
    // the scenarios both wires share (run at each one's wire)
    let shared = setup.required(LEGACY);
    let (_fixture, fixture_url) = setup.start_fixture();
    let alone = setup.run("the fixture alone", &fixture_url, MODERN);
    let (_proxy, url) = setup.start_proxy("proxy-fixture", &format!("conf={fixture_url}"));
    let through = setup.run("through the proxy", &url, MODERN);
    let (_proxy2, url2) = setup.start_proxy("proxy-legacy", &setup.legacy_server("legacy"));
    let cross = setup.run("through the proxy, handshake-era server", &url2, MODERN);
    print_side_by_side(MODERN, &required, &[&alone, &through, &cross]);

    let mut problems = Vec::new();
    for r in [&alone, &through, &cross] {
        r.check_complete(&required, &mut problems);
    }
    for s in &required {
        if left_out(s).is_none() && !alone.passes(s) {
            problems.push(format!(
                "{s}: the fixture alone fails it ({}): fix tests/mcp/conformance_server.py",
                alone.first_failure(s)
            ));
        }
    }
    compare(
        MODERN,
        &alone,
        &through,
        &|_: &str| true,
        true,
        &mut problems,
    );
    // a modern client in front of a handshake-era server: what both wires
    // share, and what the proxy answers itself
    compare(
        MODERN,
        &alone,
        &cross,
        &|s: &str| shared.contains(s) || PROXY_OWN_MODERN.contains(&s),
        false,
        &mut problems,
    );
    check_audited(
        &setup,
        "proxy-fixture",
        &["conf.test_simple_text"],
        &mut problems,
    );
    check_audited(
        &setup,
        "proxy-legacy",
        &["legacy.test_simple_text"],
        &mut problems,
    );
    finish(&setup, problems);
}

#[test]
#[cfg_attr(
    toolgate_skip_conformance,
    ignore = "opted out with TOOLGATE_SKIP_CONFORMANCE=1: the MCP conformance suite did not run"
)]
fn conformance_2025_11_25_fixture_alone_and_through_the_http_proxy() {
    let setup = setup();
    let required = setup.required(LEGACY);
    let (_fixture, fixture_url) = setup.start_fixture();
    let alone = setup.run("the fixture alone", &fixture_url, LEGACY);
    let (_proxy, url) = setup.start_proxy("proxy-fixture", &format!("conf={fixture_url}"));
    let through = setup.run("through the proxy", &url, LEGACY);
    let (_proxy2, url2) = setup.start_proxy("proxy-legacy", &setup.legacy_server("legacy"));
    let cross = setup.run("through the proxy, handshake-era server", &url2, LEGACY);
    // server-everything, a server we did not write: its own tools, so most
    // scenarios fail against it directly, proxy or not
    let (_everything, everything_url) = setup.start_everything();
    let direct = setup.run("server-everything directly", &everything_url, LEGACY);
    let (_proxy3, url3) =
        setup.start_proxy("proxy-everything", &format!("everything={everything_url}"));
    let fronted = setup.run("server-everything through the proxy", &url3, LEGACY);
    print_side_by_side(
        LEGACY,
        &required,
        &[&alone, &through, &cross, &direct, &fronted],
    );

    let mut problems = Vec::new();
    for r in [&alone, &through, &cross, &direct, &fronted] {
        r.check_complete(&required, &mut problems);
    }
    for s in &required {
        if left_out(s).is_none() && !alone.passes(s) {
            problems.push(format!(
                "{s}: the fixture alone fails it ({}): fix tests/mcp/conformance_server.py",
                alone.first_failure(s)
            ));
        }
    }
    compare(
        LEGACY,
        &alone,
        &through,
        &|_: &str| true,
        true,
        &mut problems,
    );
    compare(
        LEGACY,
        &alone,
        &cross,
        &|_: &str| true,
        false,
        &mut problems,
    );
    for s in direct.pass_list() {
        if !fronted.passes(s) {
            problems.push(format!(
                "{s}: passes against server-everything directly, fails through the proxy ({})",
                fronted.first_failure(s)
            ));
        }
    }
    // the proxy checks Host and Origin, server-everything does not
    if !fronted.passes("dns-rebinding-protection") {
        problems.push(format!(
            "dns-rebinding-protection: fails through the proxy in front of server-everything ({})",
            fronted.first_failure("dns-rebinding-protection")
        ));
    }
    check_audited(
        &setup,
        "proxy-fixture",
        &["conf.test_simple_text"],
        &mut problems,
    );
    check_audited(
        &setup,
        "proxy-legacy",
        &["legacy.test_simple_text"],
        &mut problems,
    );
    // server-everything has no test_simple_text: denied as an unknown tool
    check_audited(
        &setup,
        "proxy-everything",
        &["everything.test_simple_text", "test_simple_text"],
        &mut problems,
    );
    finish(&setup, problems);
}
