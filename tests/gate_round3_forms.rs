//! Issue 30, third round of the call gate, the forms the last
//! verification pass left: a `find` for credentials whose listing reaches
//! a reader through a command substitution, a file, a `while read` loop,
//! `xargs -a` or an `-o` branch; `git clone URL` without a directory; the
//! `sqlite3` CLI's `-readonly` and operands of several statements; `tar`
//! reading its archive when it lists or extracts. Each kind with its
//! variants and the allow controls beside it, through the gate
//! (`Gate::check` on the shipped policy and catalog) and through the
//! `toolgate guard` binary.

mod common;
mod gate_lines;

use gate_lines::{expect_lines, shipped};
use toolgate::gate::Action;

// ------------------------------------------ find's listing, other forms

#[test]
fn a_credential_listing_reaching_a_reader_by_other_forms_is_a_sensitive_read() {
    let g = shipped();
    expect_lines(
        &g,
        Action::Ask,
        Some("shell.read-sensitive"),
        &[
            // command substitution and backquotes
            "cat $(find ~ -name id_rsa)",
            "cat `find ~ -name id_rsa`",
            "head -n 3 $(find / -name '*.pem')",
            "cat \"$(find ~/.ssh -type f)\"",
            "f=$(find ~ -name id_rsa); cat \"$f\"",
            "for f in $(find ~ -name 'id_*'); do cat \"$f\"; done",
            // through commands that print what they read
            "cat $(find ~ -name id_rsa | head -n 1)",
            "find ~ -name 'id_*' | grep -v pub | xargs cat",
            "find ~ -name '*.pem' | sort | uniq | xargs cat",
            // xargs -a
            "xargs -a <(find ~ -name id_rsa) cat",
            "find ~ -name id_rsa > /tmp/list && xargs -a /tmp/list cat",
            "find ~ -name id_rsa > list; xargs --arg-file=list cat",
            // a file the listing was written to
            "find ~ -name id_rsa > list; xargs cat < list",
            "find ~ -name '*.pem' > list && cat list | xargs cat",
            "find ~ -name id_rsa > list; while read f; do cat \"$f\"; done < list",
            // while-read loops
            "find ~ -name 'id_*' | while read f; do cat \"$f\"; done",
            "find ~ -name 'id_*' | while IFS= read -r f; do head -n 2 \"$f\"; done",
            "while read f; do cat \"$f\"; done < <(find ~ -name 'id_*')",
            // -o branches, and a branch with no name test
            "find ~ \\( -name id_rsa -o -name '*.pem' \\) | xargs cat",
            "find ~ -name '*.txt' -o -name '*.key' | xargs cat",
            "find ~ -name '*.txt' -o -type f | xargs cat",
            "find ~ \\( -name '*.log' -o -type f \\) -exec cat {} +",
            "find ~ -name node_modules -prune -o -type f -print | xargs cat",
        ],
    );
    // allow controls: project searches, listings nobody reads, a loop
    // that only prints or counts
    expect_lines(
        &g,
        Action::Allow,
        None,
        &[
            "find . -name '*.rs' | while read f; do wc -l \"$f\"; done",
            "cat $(find src -name '*.toml')",
            "find . -name '*.py' > list; wc -l list",
            "for f in $(find src -name '*.rs'); do wc -l \"$f\"; done",
            "find ~ -name id_rsa > list; wc -l list",
            "find ~ -name 'id_*' | while read f; do echo \"$f\"; done",
            "echo $(find ~ -name id_rsa)",
            "find ~ -name '*.log' -o -name '*.txt' | xargs grep -n error",
            "find . \\( -name '*.rs' -o -type f \\) | xargs wc -l",
            "find ~ -name '*.log' -prune -o -name '*.tmp' -print",
            "xargs -a files.txt wc -l",
            "find ~ -name 'id_*' | sort | wc -l",
            "find . -name '*.rs' | sort | xargs wc -l",
        ],
    );
}

// ---------------------------------------------- git clone without a dir

#[test]
fn a_runner_in_the_directory_git_clone_derives_asks() {
    let g = shipped();
    expect_lines(
        &g,
        Action::Ask,
        Some("shell.written-then-run"),
        &[
            "git clone https://github.com/org/repo.git && cd repo && make",
            "git clone https://github.com/org/repo && cd repo && npm test",
            "git clone https://github.com/org/repo/ && cd repo && cargo build",
            "git clone git@github.com:org/repo.git && cd repo && make",
            "git clone git@github.com:org/repo && cd repo && ./install.sh",
            "git clone --depth 1 https://github.com/org/repo.git && cd repo && make",
            "git clone -b main -- https://github.com/org/tool.git && cd tool && make",
            "git clone https://github.com/org/repo.git; bash repo/install.sh",
            "git clone --bare https://github.com/org/repo && cd repo.git && make",
        ],
    );
    expect_lines(
        &g,
        Action::Allow,
        None,
        &[
            "git clone https://github.com/org/repo.git && ls repo",
            "cd repo && make",
            "git clone https://github.com/org/repo.git && cat repo/README.md",
            "git clone https://github.com/org/repo.git other && cd repo && make",
        ],
    );
}

// ----------------------------------------------------------- sqlite3

#[test]
fn sqlite3_readonly_and_operands_of_several_statements() {
    let g = shipped();
    expect_lines(
        &g,
        Action::Allow,
        None,
        &[
            "sqlite3 -readonly app.db \"INSERT INTO t VALUES (1)\"",
            "sqlite3 -readonly app.db \"UPDATE t SET a = 1 WHERE id = 2\"",
            "sqlite3 -readonly app.db \"DROP TABLE users\"",
            "sqlite3 -readonly app.db \"DELETE FROM t\"",
            "sqlite3 app.db \"SELECT 1; SELECT 2\"",
            "sqlite3 app.db \"SELECT count(*) FROM a; SELECT count(*) FROM b;\"",
            "sqlite3 app.db \"PRAGMA table_info(t); SELECT * FROM t LIMIT 3\"",
        ],
    );
    expect_lines(
        &g,
        Action::Ask,
        Some("shell.inline-code"),
        &[
            "sqlite3 app.db \"SELECT 1; INSERT INTO t VALUES (1)\"",
            "sqlite3 -readonly app.db \".shell id\"",
            "sqlite3 -readonly app.db \".system id\"",
            "sqlite3 -readonly app.db \".output out.txt\"",
            "sqlite3 -readonly app.db \".once out.txt\"",
            "sqlite3 -readonly app.db \".load ./ext.so\"",
            "sqlite3 -readonly app.db \".import data.csv t\"",
            "sqlite3 -readonly app.db \"ATTACH 'o.db' AS o\"",
        ],
    );
    expect_lines(
        &g,
        Action::Deny,
        None,
        &[
            "sqlite3 app.db \"SELECT 1; DROP TABLE users\"",
            "sqlite3 -readonly app.db \"SELECT writefile('/tmp/x', 'y')\"",
            "sqlite3 -readonly app.db \"SELECT 1; SELECT load_extension('./x.so')\"",
        ],
    );
}

// --------------------------------------------------------------- tar

#[test]
fn tar_reads_the_archive_it_lists_or_extracts() {
    let g = shipped();
    // the archive outside the roots is read, not written: reads of
    // ordinary files outside are allowed, as `cat /tmp/a.tgz` is
    expect_lines(
        &g,
        Action::Allow,
        None,
        &[
            "tar tzf /tmp/a.tgz",
            "tar -tf /tmp/a.tar",
            "tar --list --file=/tmp/a.tar",
            "tar xzf /tmp/a.tgz",
            "tar -xf /tmp/a.tar -C vendor",
            "tar czf out.tgz src",
        ],
    );
    // creating an archive outside the roots still writes it; reading
    // credentials through tar is a sensitive read
    expect_lines(
        &g,
        Action::Ask,
        None,
        &["tar czf /tmp/a.tgz src", "tar -rf /tmp/a.tar src"],
    );
    expect_lines(
        &g,
        Action::Ask,
        Some("shell.read-sensitive"),
        &["tar tzf ~/.ssh/keys.tgz", "tar xzf ~/.aws/backup.tgz"],
    );
}

// ------------------------------------------------------------------- CLI

#[test]
fn guard_exit_codes_for_each_form() {
    for (line, code) in [
        ("cat $(find ~ -name id_rsa)", 6),
        ("cat `find ~ -name id_rsa`", 6),
        ("xargs -a <(find ~ -name id_rsa) cat", 6),
        ("find ~ -name id_rsa > list; xargs cat < list", 6),
        ("find ~ -name 'id_*' | while read f; do cat \"$f\"; done", 6),
        (
            "find ~ \\( -name id_rsa -o -name '*.pem' \\) | xargs cat",
            6,
        ),
        ("find ~ -name '*.txt' -o -type f | xargs cat", 6),
        (
            "find . -name '*.rs' | while read f; do wc -l \"$f\"; done",
            0,
        ),
        ("cat $(find src -name '*.toml')", 0),
        ("find . -name '*.py' > list; wc -l list", 0),
        (
            "git clone https://github.com/org/repo.git && cd repo && make",
            6,
        ),
        ("git clone git@github.com:org/repo && cd repo && make", 6),
        ("git clone https://github.com/org/repo.git && ls repo", 0),
        ("cd repo && make", 0),
        ("sqlite3 -readonly app.db \"INSERT INTO t VALUES (1)\"", 0),
        ("sqlite3 app.db \"SELECT 1; SELECT 2\"", 0),
        ("sqlite3 app.db \"SELECT 1; INSERT INTO t VALUES (1)\"", 6),
        ("sqlite3 -readonly app.db \".shell id\"", 6),
        ("sqlite3 app.db \"SELECT 1; DROP TABLE users\"", 7),
        ("tar tzf /tmp/a.tgz", 0),
        ("tar czf /tmp/a.tgz src", 6),
    ] {
        assert_eq!(common::guard_shell(line), code, "{line}");
    }
}
