//! Issue 29, pass 6's leftovers: a dangling or looping symbolic link given
//! as a file option is named as a link (not "the file does not exist"),
//! and no `--help` text shows rustdoc link syntax (`` [`FloorWhich`] ``).

mod common;
use common::{stderr, stdout, toolgate};

/// Every subcommand, and the subcommands of `audit` and `import`.
const COMMANDS: &[&[&str]] = &[
    &[],
    &["check"],
    &["eval"],
    &["explain"],
    &["replay"],
    &["compare"],
    &["fit"],
    &["watch"],
    &["mcp-proxy"],
    &["guard"],
    &["audit"],
    &["audit", "summary"],
    &["import"],
    &["import", "bfcl"],
];

#[test]
fn no_help_text_shows_rustdoc_link_syntax() {
    for cmd in COMMANDS {
        let mut args: Vec<&str> = cmd.to_vec();
        args.push("--help");
        let o = toolgate(&args, None);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(out.len() > 100, "{args:?}: {out}");
        for (i, line) in out.lines().enumerate() {
            assert!(
                !line.contains("[`") && !line.contains("`]"),
                "toolgate {}: line {} shows a rustdoc link: {line}",
                args.join(" "),
                i + 1
            );
        }
    }
}

#[test]
fn a_dangling_input_symlink_is_named_as_a_link_with_its_target() {
    let d = tempfile::tempdir().unwrap();
    let link = d.path().join("session.json");
    let target = d.path().join("gone").join("session.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let link = link.to_str().unwrap();
    let missing = d.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    for args in [
        vec!["eval", "--input", link],
        vec![
            "eval",
            "--input",
            "examples/sql-session.json",
            "--policy",
            link,
        ],
        vec!["replay", "--trace", link],
    ] {
        let o = toolgate(&args, None);
        let e = stderr(&o);
        // the exit code of a missing file for the same option (3 for inputs)
        let plain: Vec<&str> = args
            .iter()
            .map(|a| if *a == link { missing } else { a })
            .collect();
        let want = toolgate(&plain, None).status.code();
        assert!(want.is_some_and(|c| c != 0), "{plain:?}");
        assert_eq!(o.status.code(), want, "{args:?}: {e}");
        if args[args.len() - 2] == "--input" {
            assert_eq!(o.status.code(), Some(3), "{e}");
        }
        assert!(e.contains("symbolic link"), "{args:?}: {e}");
        assert!(e.contains(target.to_str().unwrap()), "{args:?}: {e}");
        assert!(!e.contains("the file does not exist"), "{args:?}: {e}");
    }
}

#[test]
fn a_looping_symlink_is_named_as_a_loop() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a.json");
    let b = d.path().join("b.json");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let a = a.to_str().unwrap();
    let o = toolgate(&["eval", "--input", a], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{e}");
    assert!(e.contains("symbolic link that loops"), "{e}");
    assert!(!e.contains("os error"), "{e}");
}

#[test]
fn a_symlink_to_a_real_file_still_works() {
    let d = tempfile::tempdir().unwrap();
    let link = d.path().join("s.json");
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sql-session.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = toolgate(&["eval", "--input", link.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("sqlite"), "{}", stdout(&o));
}

/// The backquoted names after `marker` in `text`, up to the end of its line.
fn names_after(text: &str, marker: &str) -> Vec<String> {
    let Some(at) = text.find(marker) else {
        return Vec::new();
    };
    let rest = &text[at + marker.len()..];
    let line = rest.lines().next().unwrap_or("");
    line.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn explain_and_guard_suggest_the_same_tools_for_one_unknown_name() {
    for name in [
        "sqlite__read_qery",
        "read_qery",
        "sqlite.red_query",
        "git_stauts",
        "filesystem.read_fil",
    ] {
        let e = toolgate(&["explain", name], None);
        let g = toolgate(&["guard", "--tool", name, "--args", "{}"], None);
        let (ee, ge) = (stderr(&e), stdout(&g) + &stderr(&g));
        let from_explain = {
            let mut v = names_after(&ee, "did you mean");
            v.retain(|n| n != name);
            v
        };
        let from_guard = names_after(&ge, "The closest registered tools are:");
        assert!(!from_explain.is_empty(), "{name}: {ee}");
        assert_eq!(from_explain, from_guard, "{name}:\n{ee}\n{ge}");
    }
    // a name nothing resembles: neither invents a suggestion
    let e = stderr(&toolgate(&["explain", "zzqqxxvv"], None));
    assert!(e.contains("no name of the catalog is close"), "{e}");
    let g = toolgate(&["guard", "--tool", "zzqqxxvv", "--args", "{}"], None);
    let ge = stdout(&g) + &stderr(&g);
    assert!(ge.contains("no registered tool has a close name"), "{ge}");
}

#[test]
fn a_repeated_key_inside_an_input_map_is_refused_at_its_place() {
    let d = tempfile::tempdir().unwrap();
    let f = common::write(
        d.path(),
        "in.json",
        "{\"message\": \"query the users table\",\n \"usage\": {\"call_counts\": {\"sqlite.read_query\": 1, \"sqlite.read_query\": 50}}}",
    );
    let o = toolgate(&["eval", "--input", &f], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{e}");
    assert!(e.contains(&format!("{f}:2:")), "{e}");
    assert!(e.contains("duplicate key `sqlite.read_query`"), "{e}");
    // the same map without the repeat is read
    let f = common::write(
        d.path(),
        "ok.json",
        "{\"message\": \"query the users table\",\n \"usage\": {\"call_counts\": {\"sqlite.read_query\": 50}}}",
    );
    let o = toolgate(&["eval", "--input", &f], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
