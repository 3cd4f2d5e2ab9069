//! Issue 30, third round of the call gate, its leftovers: a `find` over a
//! home directory for credential names whose output feeds a reader, the
//! `sqlite3` command-line program, directories written then run, and
//! here-documents written with `tee`. Each kind with its variants and the
//! allow controls beside it, through the gate (`Gate::check` on the
//! shipped policy and catalog) and through the `toolgate guard` binary.

mod common;

use std::sync::Arc;

use serde_json::json;
use toolgate::gate::{Action, Gate, Verdict};
use toolgate::load::{Sources, load_plan};

fn shipped() -> Gate {
    Gate::new(Arc::new(load_plan(&Sources::default()).unwrap()))
}

fn shell(g: &Gate, line: &str) -> Verdict {
    g.check("shell.run_command", json!({ "command": line }))
}

fn rules(v: &Verdict) -> Vec<&str> {
    v.findings.iter().map(|f| f.rule_id.as_str()).collect()
}

/// Each line gets `want`; with `rule`, one of its findings has that id.
fn expect_lines(g: &Gate, want: Action, rule: Option<&str>, lines: &[&str]) {
    for line in lines {
        let v = shell(g, line);
        assert_eq!(v.decision, want, "{line}: {:?} {}", rules(&v), v.message);
        if let Some(r) = rule {
            assert!(rules(&v).contains(&r), "{line}: {:?} lacks {r}", rules(&v));
        }
    }
}

// ------------------------------------------------- find for credentials

#[test]
fn a_find_for_credential_names_that_feeds_a_reader_is_a_sensitive_read() {
    let g = shipped();
    expect_lines(
        &g,
        Action::Ask,
        Some("shell.read-sensitive"),
        &[
            "find ~ -name id_rsa | xargs cat",
            "find ~/.ssh -name 'id_*' -exec cat {} \\;",
            "find ~ -name 'id_*' -exec cat {} +",
            "find ~ -iname 'ID_*' -execdir cat {} \\;",
            "find ~ -name id_rsa -print0 | xargs -0 cat",
            "find ~ -name id_rsa | xargs head -n 5",
            "find ~ -name id_rsa | xargs less",
            "find ~ -name 'id_*' | xargs base64",
            "find / -name '*.pem' | xargs cat",
            "find /root -name credentials -exec cat {} +",
            "find /etc -name shadow -exec cat {} \\;",
            "find ~ -path '*/.aws/*' | xargs cat",
            "find ~ -name .ssh | xargs -I{} cat {}/id_rsa",
            "find ~ -type f | xargs cat",
            "cd ~ && find . -name '*.key' | xargs cat",
            "find \"$HOME\" -name 'id_*' | xargs cat",
        ],
    );
    // allow controls: a project search feeding a reader, a home search
    // for other names or without a reader, listing credential names only
    expect_lines(
        &g,
        Action::Allow,
        None,
        &[
            "find . -name '*.rs' | xargs wc -l",
            "find src -name '*.py' -exec grep -n TODO {} +",
            "find ~ -name '*.log' -mtime +7",
            "find ~ -name '*.log' | xargs grep -n error",
            "find ~ -name id_rsa",
            "find . -name '*.pem' | xargs cat",
            "find . -name '*.py' -not -path './.venv/*'",
            "find ~ -name 'id_*' | wc -l",
        ],
    );
}
