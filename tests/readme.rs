//! The README is true to the binary: its minimum Rust version is Cargo's, its
//! command table lists every subcommand, and its examples marked runnable run
//! as written and print what it shows.
//!
//! Fenced blocks are marked in their info string (GitHub shows only the
//! language):
//!
//! * ```` ```sh runnable ````: each command (a line, or lines joined by a
//!   trailing `\`) must exit 0;
//! * ```` ```console runnable ````: `$ ` lines are commands, the lines after
//!   each are its output (stdout and stderr), compared line by line: a line
//!   `...` stands for any number of lines, a line ending in `...` for any
//!   line that starts with what comes before; trailing spaces do not count;
//!   the exit code does not matter (`guard` exits 7 on deny);
//! * ```` ```text expected-output ````: the output of the last command run,
//!   compared the same way;
//! * ```` ```console watch ````: one `$ toolgate watch ...` of `my-policy.toml`
//!   and the lines it prints: started, then the edits the prose names made
//!   while it runs ([`WATCH_EDITS`]), each line compared as above (the plan
//!   hashes included).
//!
//! The blocks run in README order, in one scratch folder holding copies of
//! `examples/`, `policies/`, `tool-tags/` and `tests/data/` (what a clone
//! has; `my-policy.toml` made by one block is there for the next);
//! `toolgate` and `cargo run --release --` both run the binary under test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fenced block: its info string, the line of its opening fence, its lines.
struct Block {
    info: String,
    line: usize,
    body: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, l) in text.lines().enumerate() {
        if let Some(rest) = l.strip_prefix("```") {
            match open.take() {
                Some(b) => out.push(b),
                None => {
                    open = Some(Block {
                        info: rest.trim().to_string(),
                        line: i + 1,
                        body: Vec::new(),
                    })
                }
            }
        } else if let Some(b) = open.as_mut() {
            b.body.push(l.to_string());
        }
    }
    out
}

fn has(info: &str, word: &str) -> bool {
    info.split_whitespace().any(|w| w == word)
}

/// Whether `actual` is what `expected` shows (module docs for `...`).
fn matches(expected: &[&str], actual: &[&str]) -> bool {
    let Some((e, rest)) = expected.split_first() else {
        return actual.iter().all(|a| a.trim().is_empty());
    };
    let e = e.trim_end();
    if e.trim() == "..." {
        return (0..=actual.len()).any(|k| matches(rest, &actual[k..]));
    }
    let Some((a, arest)) = actual.split_first() else {
        return e.is_empty() && matches(rest, actual);
    };
    let a = a.trim_end();
    let ok = match e.strip_suffix("...") {
        Some(prefix) => a.starts_with(prefix),
        None => a == e,
    };
    ok && matches(rest, arest)
}

/// Joins lines ending in `\` with the next, drops blank and comment lines.
fn commands(lines: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in lines {
        let t = l.trim();
        if cur.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head);
                cur.push(' ');
            }
            None => {
                cur.push_str(t);
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    out
}

struct Runner {
    dir: PathBuf,
    path: String,
    last: Option<(String, String)>,
}

impl Runner {
    fn new(scratch: &Path) -> Runner {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let work = scratch.join("work");
        std::fs::create_dir_all(&work).unwrap();
        for d in ["examples", "policies", "tool-tags", "tests/data"] {
            copy_dir(&root.join(d), &work.join(d));
        }
        let bin = scratch.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_toolgate"), bin.join("toolgate")).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Runner {
            dir: work,
            path,
            last: None,
        }
    }

    /// Runs one command as the README writes it; returns (exit ok, output).
    fn run(&mut self, cmd: &str) -> (bool, String) {
        let script = cmd.replace("cargo run --release -- ", "toolgate ");
        let o = Command::new("bash")
            .args(["-c", &format!("set -o pipefail; {{ {script}\n}} 2>&1")])
            .current_dir(&self.dir)
            .env("PATH", &self.path)
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .output()
            .expect("bash runs");
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        self.last = Some((cmd.to_string(), out.clone()));
        (o.status.success(), out)
    }
}

/// The edits README's `watch` example makes while it runs (its prose says
/// them): `w_stage = 0.10`, then the bad `threshold = 0.4x`.
const WATCH_EDITS: [(&str, &str); 2] = [
    ("w_stage = 0.05", "w_stage = 0.10"),
    ("threshold = 0.4", "threshold = 0.4x"),
];

impl Runner {
    /// Starts `cmd` (a `toolgate watch` of `my-policy.toml`), waits for its
    /// first line, then applies each edit to `my-policy.toml` and waits for
    /// the next line; returns the `lines` lines it printed.
    fn watch(&mut self, cmd: &str, edits: &[(&str, &str)], lines: usize) -> String {
        use std::io::BufRead;
        let mut child = Command::new("bash")
            .args(["-c", &format!("exec {cmd}")])
            .current_dir(&self.dir)
            .env("PATH", &self.path)
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("bash runs");
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(stdout).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let policy = self.dir.join("my-policy.toml");
        let mut out = Vec::new();
        let wait = std::time::Duration::from_secs(120);
        for i in 0..lines {
            if i > 0 {
                let (from, to) = edits[(i - 1).min(edits.len() - 1)];
                let text = std::fs::read_to_string(&policy).unwrap();
                assert!(text.contains(from), "my-policy.toml has no `{from}`");
                std::fs::write(&policy, text.replacen(from, to, 1)).unwrap();
            }
            match rx.recv_timeout(wait) {
                Ok(l) => out.push(l),
                Err(_) => break,
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let out = out.join("\n");
        self.last = Some((cmd.to_string(), out.clone()));
        out
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn check_output(where_: &str, cmd: &str, expected: &[&str], out: &str, bad: &mut Vec<String>) {
    let actual: Vec<&str> = out.lines().collect();
    if !matches(expected, &actual) {
        bad.push(format!(
            "{where_}: `{cmd}` printed\n{out}\n--- but the README shows\n{}\n",
            expected.join("\n")
        ));
    }
}

#[test]
fn runnable_examples_run_as_written() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut r = Runner::new(scratch.path());
    let mut bad = Vec::new();
    let mut ran = 0;
    for b in blocks(&readme) {
        let at = format!("README.md:{}", b.line);
        if has(&b.info, "runnable") && b.info.starts_with("sh") {
            for cmd in commands(&b.body) {
                let (ok, out) = r.run(&cmd);
                ran += 1;
                if !ok {
                    bad.push(format!("{at}: `{cmd}` failed:\n{out}"));
                }
            }
        } else if has(&b.info, "watch") && b.info.starts_with("console") {
            // `toolgate watch`, which runs until stopped: the edits the
            // README's prose names are made while it runs, and each printed
            // line is compared with the block's.
            let cmd = b.body[0]
                .strip_prefix("$ ")
                .unwrap_or(&b.body[0])
                .to_string();
            let expected: Vec<&str> = b.body[1..].iter().map(String::as_str).collect();
            let out = r.watch(&cmd, &WATCH_EDITS, expected.len());
            ran += 1;
            check_output(&at, &cmd, &expected, &out, &mut bad);
        } else if has(&b.info, "runnable") && b.info.starts_with("console") {
            // `$ ` commands (continued by a trailing `\`), each followed by its output.
            let mut i = 0;
            while i < b.body.len() {
                let Some(first) = b.body[i].strip_prefix("$ ") else {
                    bad.push(format!("{at}: output before any `$ ` command"));
                    break;
                };
                let mut cmd_lines = vec![first.to_string()];
                i += 1;
                while cmd_lines
                    .last()
                    .is_some_and(|l| l.trim_end().ends_with('\\'))
                    && i < b.body.len()
                {
                    cmd_lines.push(b.body[i].clone());
                    i += 1;
                }
                let cmd = commands(&cmd_lines).join(" ");
                let start = i;
                while i < b.body.len() && !b.body[i].starts_with("$ ") {
                    i += 1;
                }
                let expected: Vec<&str> = b.body[start..i].iter().map(String::as_str).collect();
                let (_, out) = r.run(&cmd);
                ran += 1;
                check_output(&at, &cmd, &expected, &out, &mut bad);
            }
        } else if has(&b.info, "expected-output") {
            match r.last.clone() {
                Some((cmd, out)) => {
                    let expected: Vec<&str> = b.body.iter().map(String::as_str).collect();
                    check_output(&at, &cmd, &expected, &out, &mut bad);
                }
                None => bad.push(format!("{at}: expected-output before any runnable command")),
            }
        }
    }
    assert!(ran >= 20, "only {ran} README commands ran");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_minimum_rust_version_is_cargos() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let v = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("Cargo.toml sets rust-version")
        .trim_matches('"');
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("Rust {v} or newer")),
        "README.md must state the minimum Rust version of Cargo.toml ({v})"
    );
}

/// `toolgate [CMD] --help`'s subcommands (without `help`).
fn subcommands(args: &[&str]) -> Vec<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

#[test]
fn the_command_table_lists_every_subcommand() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let top = subcommands(&[]);
    assert!(top.len() >= 11, "{top:?}");
    let mut missing = Vec::new();
    for c in &top {
        let subs = subcommands(&[c]);
        let rows: Vec<String> = if subs.is_empty() {
            vec![format!("| `toolgate {c}")]
        } else {
            subs.iter()
                .map(|s| format!("| `toolgate {c} {s}"))
                .collect()
        };
        missing.extend(rows.into_iter().filter(|r| !readme.contains(r.as_str())));
    }
    assert!(
        missing.is_empty(),
        "README.md's command table lacks: {missing:?}"
    );
}

/// The long options of `toolgate [CMD] --help` (without `--help`).
fn options(args: &[&str]) -> Vec<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("-h, ").unwrap_or(l);
            l.starts_with("--").then(|| {
                l.split(|c: char| c.is_whitespace() || c == '=')
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
        })
        .filter(|o| o != "--help" && o != "--version")
        .collect()
}

/// The `mcp-proxy` row of the command table names every option of
/// `mcp-proxy --help` (`--root`, `--pins`, `--bearer-token-env`, ...) and
/// says where the limits are set.
#[test]
fn the_mcp_proxy_row_lists_every_option() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let row = readme
        .lines()
        .find(|l| l.starts_with("| `toolgate mcp-proxy"))
        .expect("the mcp-proxy row");
    let opts = options(&["mcp-proxy"]);
    assert!(opts.len() >= 15, "{opts:?}");
    let missing: Vec<&String> = opts
        .iter()
        .filter(|o| !row.contains(&format!("[{o}")) && !row.contains(&format!("{o} ")))
        .collect();
    assert!(
        missing.is_empty(),
        "the mcp-proxy row lacks {missing:?}:\n{row}"
    );
    assert!(row.contains("max_concurrent_calls"), "{row}");
}

/// Every row of the command table names every option of its subcommand's
/// `--help` (issue 29: `fit`'s row lacked nine, `compare`'s `--plot`,
/// `replay`'s `--max-names`). `explain`'s row, "[same options]", stands
/// for `eval`'s options, which `eval`'s row lists.
#[test]
fn every_command_row_lists_every_option() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let row_of = |words: &[&str]| -> String {
        let head = format!("| `toolgate {}", words.join(" "));
        readme
            .lines()
            .find(|l| {
                l.strip_prefix(head.as_str())
                    .is_some_and(|r| r.starts_with([' ', '`']))
            })
            .unwrap_or_else(|| panic!("no row {head}"))
            .to_string()
    };
    let names = |row: &str, o: &str| {
        [
            format!("[{o}"),
            format!("{o} "),
            format!("{o}]"),
            format!("{o}`"),
        ]
        .iter()
        .any(|s| row.contains(s.as_str()))
    };
    let mut missing = Vec::new();
    let mut checked = 0;
    for c in subcommands(&[]) {
        let subs = subcommands(&[&c]);
        let commands: Vec<Vec<String>> = if subs.is_empty() {
            vec![vec![c.clone()]]
        } else {
            subs.into_iter().map(|s| vec![c.clone(), s]).collect()
        };
        for words in commands {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let mut row = row_of(&words);
            if row.contains("[same options]") {
                row.push_str(&row_of(&["eval"]));
            }
            for o in options(&words) {
                checked += 1;
                if !names(&row, &o) {
                    missing.push(format!("{}: {o}", words.join(" ")));
                }
            }
        }
    }
    assert!(checked >= 60, "only {checked} options checked");
    assert!(
        missing.is_empty(),
        "README.md's command table lacks these options: {missing:?}"
    );
}

/// The Quick start says what the first build costs, and the client
/// configuration that runs servers with `uvx` says to install it.
#[test]
fn the_readme_warns_about_the_first_build_and_uvx() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(
        readme.contains("about 40 minutes and 6 GB"),
        "first-build note"
    );
    let first_uvx = readme.find("uvx ").expect("a uvx example");
    let install = readme.find("install [uv]").expect("the uv install note");
    assert!(
        install < first_uvx,
        "the install note comes before the first uvx"
    );
}

#[test]
fn the_matcher_honours_ellipses() {
    let a = ["one", "two  ", "three", "four"];
    assert!(matches(&["one", "two", "three", "four"], &a));
    assert!(matches(&["one", "...", "four"], &a));
    assert!(matches(&["...", "four", ""], &a));
    assert!(matches(&["one", "tw...", "..."], &a));
    assert!(!matches(&["one", "three", "..."], &a));
    assert!(!matches(&["one", "two", "three"], &a));
    assert!(!matches(&["one", "x...", "..."], &a));
    assert_eq!(
        commands(&[
            "# c".into(),
            "a \\".into(),
            "   b".into(),
            "".into(),
            "c # d".into()
        ]),
        vec!["a  b", "c # d"]
    );
}

/// Issue 29 item 9: a runnable block that calls `toolgate` works when pasted
/// into a fresh clone: the install step comes first (blocks before it say
/// `cargo run --release --`).
#[test]
fn blocks_that_say_toolgate_come_after_the_install_step() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let install = blocks(&readme)
        .into_iter()
        .find(|b| {
            b.body
                .iter()
                .any(|l| l.trim() == "cargo install --path . --locked")
        })
        .expect("README has an install step")
        .line;
    let early: Vec<usize> = blocks(&readme)
        .into_iter()
        .filter(|b| b.line < install && has(&b.info, "runnable"))
        .filter(|b| {
            b.body.iter().any(|l| {
                let l = l.trim_start().trim_start_matches("$ ");
                l.starts_with("toolgate ") || l.contains("| toolgate ")
            })
        })
        .map(|b| b.line)
        .collect();
    assert!(
        early.is_empty(),
        "README.md blocks at lines {early:?} call `toolgate` before the install step (line {install})"
    );
}
