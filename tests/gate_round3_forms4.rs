//! Issue 30, third round of the call gate: the "written then run" forms
//! the last round left (docs/gate.md, "Runners that collect from every
//! directory below", and the sections after it).
//!
//! 1. More tree writers: `gh repo clone OWNER/REPO` (asked as a system
//!    change before, with the wrong reason), `git worktree add`, `hg
//!    clone` (`[gate.shell] writes_trees`).
//! 2. More runners of a written tree: `go test ./...` (an operand ending
//!    in `/...`: the runner's `recursive_operands`), tox and nox (they
//!    run pytest: `collects_recursively`), workspace runs (`npm test
//!    --workspaces`, `cargo test --workspace`, `pnpm -r`: the runner's
//!    `recursive_when`), `pip wheel ./x`.
//! 3. Two fail-closed false positives gone: unittest's `-s DIR` is where
//!    it collects (the runner's `collect_options`), and `pip download -d
//!    DIR` writes DIR, not the working directory (the command's
//!    `fixed_unless`).
//!
//! Each with the allow controls beside it, through the gate (`Gate::check`
//! on the shipped policy and catalog), through edited policies (each kind
//! is the policy's data), and through the `toolgate guard` binary.

mod common;
mod gate_lines;

use gate_lines::{expect_lines, shell, shipped};
use toolgate::compile::gate::load_gate_config;
use toolgate::diag::SourceFile;
use toolgate::gate::{Action, ShellInput, analyze_shell, decide};
use toolgate::load::DEFAULT_POLICY;
use toolgate::parse::policy::parse_policy;

const CLONE: &str = "git clone https://github.com/org/repo.git";

/// `lines` with `{C}` replaced by [`CLONE`].
fn with_clone(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| l.replace("{C}", CLONE)).collect()
}

fn expect(want: Action, rule: Option<&str>, lines: &[&str]) {
    let lines = with_clone(lines);
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    expect_lines(&shipped(), want, rule, &refs);
}

// ------------------------------------------------------- 1. tree writers

#[test]
fn other_clones_and_worktrees_below_a_recursive_runner_ask_as_written_then_run() {
    expect(
        Action::Ask,
        Some("shell.written-then-run"),
        &[
            "gh repo clone org/repo && pytest",
            "gh repo clone org/repo vendor/repo && pytest -q",
            "gh repo clone https://github.com/org/repo && python -m pytest",
            "gh repo clone org/repo && cd repo && make",
            "gh repo clone org/repo dir && cd dir && npm test",
            "git worktree add wt/feature main && pytest",
            "git worktree add -b topic wt/topic && jest",
            "hg clone https://hg.example.com/repo && pytest",
            "hg clone https://hg.example.com/repo && cd repo && make",
        ],
    );
}

#[test]
fn the_reason_names_gh_as_the_writer_not_a_system_change() {
    let g = shipped();
    let v = shell(&g, "gh repo clone org/repo && pytest");
    assert_eq!(v.decision, Action::Ask, "{}", v.message);
    let ids = gate_lines::rules(&v);
    assert!(!ids.contains(&"shell.system-change"), "{ids:?}");
    for part in ["`pytest`", "`gh repo clone`", "/repo`", "collects code"] {
        assert!(v.message.contains(part), "lacks {part}: {}", v.message);
    }
}

#[test]
fn git_options_after_gh_dashdash_still_ask() {
    // `gh repo clone R -- FLAGS` passes FLAGS to git clone: they are not
    // the directory operand, and `--upload-pack` runs a program.
    let g = shipped();
    for line in [
        "gh repo clone org/repo -- --upload-pack='touch /tmp/x'",
        "gh repo clone org/repo dir -- --upload-pack='rm -rf ~'",
        "gh repo clone org/repo -- --depth 1",
    ] {
        let v = shell(&g, line);
        assert_ne!(v.decision, Action::Allow, "{line}: {}", v.message);
    }
    let v = shell(&g, "gh repo clone org/repo dir -- --depth 1");
    assert!(
        v.effects
            .iter()
            .any(|e| e.kind == "write" && e.operand == "dir"),
        "{:?}",
        v.effects
    );
}

#[test]
fn gh_and_hg_outside_a_clone_keep_their_verdicts() {
    expect(
        Action::Allow,
        None,
        &[
            "gh repo clone org/repo",
            "gh repo clone org/repo && ls repo",
            "gh repo clone org/repo && pytest tests/",
            "gh --version",
            "hg clone https://hg.example.com/repo",
            "git worktree add wt2 && pytest tests/",
            "git worktree list",
        ],
    );
    expect(
        Action::Ask,
        Some("shell.system-change"),
        &[
            "gh pr list",
            "gh repo view",
            "gh auth status",
            "gh pr merge 12",
        ],
    );
    // an option hg does not list may run a command (`--config hooks.X`)
    expect(
        Action::Ask,
        None,
        &["hg --config hooks.pre-clone=id clone https://hg.example.com/r"],
    );
}

// ---------------------------------------------- 2. runners of the tree

#[test]
fn go_packages_below_tox_nox_workspaces_and_pip_wheel_ask() {
    expect(
        Action::Ask,
        Some("shell.written-then-run"),
        &[
            "{C} && go test ./...",
            "{C} && go test -run TestX -count=1 ./...",
            "{C} && go run ./...",
            "{C} && go generate ./...",
            "{C} pkg/x && go test ./pkg/...",
            "{C} && go test ./repo",
            "{C} && cd repo && go test",
            "echo 'package main' > main_test.go && go test",
            "{C} && tox",
            "{C} && tox -e py312",
            "{C} && nox",
            "{C} packages/x && npm test --workspaces",
            "{C} && npm test -ws",
            "{C} && npm test -w packages/a",
            "{C} && npm test --workspace=packages/a",
            "{C} && pnpm -r test",
            "{C} && yarn workspaces foreach run test",
            "{C} crates/x && cargo test --workspace",
            "{C} && cargo build --all",
            "{C} && cargo test -p foo",
            "{C} && cargo test -pfoo",
            "{C} x && pip wheel ./x",
            "cp -r /tmp/x x && pip3 wheel x/",
        ],
    );
}

#[test]
fn those_runners_on_an_untouched_project_or_beside_the_tree_stay_allowed() {
    expect(
        Action::Allow,
        None,
        &[
            "go test ./...",
            "go test -run TestX ./...",
            "go vet ./... && go test -race ./...",
            "go test ./... && {C}",
            "{C} && go test",
            "{C} vendor/x && go test ./pkg/...",
            "tox",
            "tox -e lint && {C}",
            "nox -s tests",
            "npm test --workspaces",
            "cargo test --workspace",
            "{C} packages/x && npm test",
            "{C} crates/x && cargo test",
            "pip wheel .",
            "pip wheel -w dist .",
            "pip wheel -r requirements.txt -w wheels",
        ],
    );
}

// -------------------------------------------- 3. false positives removed

#[test]
fn unittest_collects_under_its_start_directory_only() {
    expect(
        Action::Allow,
        None,
        &[
            "{C} && python -m unittest discover -s tests",
            "{C} && python -m unittest discover -s tests -t .",
            "{C} && python3 -m unittest discover --start-directory=tests",
            "{C} other && python -m unittest discover -s tests -p 'test_*.py'",
        ],
    );
    expect(
        Action::Ask,
        Some("shell.written-then-run"),
        &[
            "{C} && python -m unittest discover",
            "{C} && python -m unittest discover -s .",
            "{C} && python3 -m unittest discover -s tests/..",
            "{C} tests/x && python -m unittest discover -s tests",
            "{C} tests && python -m unittest discover -s tests",
        ],
    );
}

#[test]
fn pip_download_with_a_destination_writes_only_it() {
    expect(
        Action::Allow,
        None,
        &[
            "pip download -d dl requests && pytest",
            "pip download --dest dl requests && pytest",
            "pip download --dest=dl requests && pytest -q",
            "pip download -ddl requests && pytest",
            "pip3 download -d wheels flask && python -m pytest",
        ],
    );
    expect(
        Action::Ask,
        Some("shell.written-then-run"),
        &[
            "pip download requests && pytest",
            "pip download -d . requests && pytest",
            "pip download -d dl requests && pip install ./dl",
            "pip download -d dl x && pip install ./dl/x-1.0.tar.gz",
        ],
    );
}

#[test]
fn a_path_above_the_start_is_not_a_tree_below_it() {
    // `../x` is the start's sibling: the write outside the roots asks for
    // itself, but pytest does not collect it, so no written-then-run
    let g = shipped();
    for line in [
        "cp -r /tmp/x ../x && pytest",
        &format!("{CLONE} ../x && pytest"),
        "git worktree add ../feature main && pytest",
    ] {
        let v = shell(&g, line);
        let ids = gate_lines::rules(&v);
        assert!(ids.contains(&"shell.write-outside"), "{line}: {ids:?}");
        assert!(!ids.contains(&"shell.written-then-run"), "{line}: {ids:?}");
    }
    // and a runner that works there still asks
    let v = shell(&g, &format!("{CLONE} ../x && cd ../x && make"));
    assert!(
        gate_lines::rules(&v).contains(&"shell.written-then-run"),
        "{}",
        v.message
    );
}

// ------------------------------------------------- the policy's data

/// The shipped policy with `edit` applied, and the decision of `line`
/// under it.
fn under_policy(edit: impl Fn(&str) -> String) -> impl Fn(&str) -> Action {
    let text = edit(DEFAULT_POLICY.1);
    let p = parse_policy(SourceFile::new("p.toml", text)).unwrap();
    let cfg = load_gate_config(&p).unwrap();
    move |line: &str| {
        let line = line.replace("{C}", CLONE);
        decide(&analyze_shell(
            &cfg.shell,
            &cfg.paths,
            "/c",
            ShellInput::Line(&line),
        ))
    }
}

/// `text` with `old` (which it must hold) replaced by `new` once.
fn edit(text: &str, old: &str, new: &str) -> String {
    assert!(text.contains(old), "the shipped policy lacks {old:?}");
    text.replacen(old, new, 1)
}

#[test]
fn each_kind_is_the_policys_data() {
    let shipped = under_policy(|t| t.to_string());
    // writes_trees: `gh repo clone` removed, its directory operand is not
    // a tree (without one, the directory it derives is, as for `git clone`)
    let writers = "\"git clone\", \"gh repo clone\", \"git worktree add\", \"hg clone\", ";
    let no_gh = under_policy(|t| {
        edit(
            t,
            writers,
            "\"git clone\", \"git worktree add\", \"hg clone\", ",
        )
    });
    let gh = "gh repo clone org/repo vendor/repo && pytest";
    assert_eq!(shipped(gh), Action::Ask);
    assert_eq!(no_gh(gh), Action::Allow);
    // recursive_operands: without it, `./...` is one directory
    let go = "{C} && go test ./...";
    let no_suffix = under_policy(|t| edit(t, "recursive_operands = \"/...\"\n", ""));
    assert_eq!(shipped(go), Action::Ask);
    assert_eq!(no_suffix(go), Action::Allow);
    // recursive_when: cargo's workspace flags removed
    let ws = "{C} crates/x && cargo test --workspace";
    let cargo_flags = "recursive_when = [\"--workspace\", \"--all\", \"-p\", \"--package\"]\n";
    let no_ws = under_policy(|t| edit(t, cargo_flags, ""));
    assert_eq!(shipped(ws), Action::Ask);
    assert_eq!(no_ws(ws), Action::Allow);
    // collect_options: without it, unittest collects from where it starts
    let ut = "{C} && python -m unittest discover -s tests";
    let collect = "collect_options = [\"-s\", \"--start-directory\"]\n";
    let no_collect = under_policy(|t| edit(t, collect, ""));
    assert_eq!(shipped(ut), Action::Allow);
    assert_eq!(no_collect(ut), Action::Ask);
    // fixed_unless: without it, `pip download -d` also writes `.`
    let pd = "pip download -d dl requests && pytest";
    let no_unless = under_policy(|t| edit(t, "fixed_unless = [\"-d\", \"--dest\"]\n", ""));
    assert_eq!(shipped(pd), Action::Allow);
    assert_eq!(no_unless(pd), Action::Ask);
}

#[test]
fn misspelt_new_keys_are_load_errors() {
    for (right, wrong) in [
        ("recursive_when = [", "recursive_with = ["),
        ("recursive_operands = ", "recursive_operand = "),
        ("collect_options = [", "collects_options = ["),
        ("fixed_unless = [", "fixed_unles = ["),
    ] {
        let text = edit(DEFAULT_POLICY.1, right, wrong);
        let err = match parse_policy(SourceFile::new("p.toml", text)) {
            Err(e) => format!("{e:?}"),
            Ok(p) => format!("{:?}", load_gate_config(&p).err()),
        };
        let key = wrong.split(' ').next().unwrap();
        assert!(err.contains(key), "{key}: {err}");
    }
}

// ------------------------------------------------------------------- CLI

#[test]
fn guard_exit_codes_for_the_forms_and_their_controls() {
    for (line, code) in [
        ("gh repo clone org/repo && pytest", 6),
        (&format!("{CLONE} && go test ./..."), 6),
        (&format!("{CLONE} && tox"), 6),
        (&format!("{CLONE} crates/x && cargo test --workspace"), 6),
        (&format!("{CLONE} x && pip wheel ./x"), 6),
        (
            &format!("{CLONE} && python -m unittest discover -s tests"),
            0,
        ),
        ("pip download -d dl requests && pytest", 0),
        ("go test ./...", 0),
        ("cargo test --workspace", 0),
        ("gh repo clone org/repo", 0),
    ] {
        assert_eq!(common::guard_shell(line), code, "{line}");
    }
}
