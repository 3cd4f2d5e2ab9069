//! The roots' real paths are resolved once (src/gate/path.rs, `roots`) and
//! a path is then resolved from its root down, each component below the
//! root `lstat`ed and each symlink followed (issue 30, the 20 µs pass): the
//! root's own ancestors are not looked at again per check. These tests pin
//! that nothing below the root is trusted — a symlink directly under the
//! root, under a root that is itself a symlink, or under a root reached
//! through a symlinked ancestor, is still followed and caught when it
//! leads outside — for path arguments (`analyze_path`) and for shell lines
//! (`analyze_shell`), with allow controls beside each.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use toolgate::gate::config::shipped;
use toolgate::gate::{
    Action, Finding, PathConfig, ShellInput, analyze_path, analyze_shell, decide,
};

/// `base/root` (holds `notes.txt` and `sub/`), `base/outside/secret.txt`,
/// and directly under the root: `out-dir` -> `base/outside`, `out-file`
/// -> `base/outside/secret.txt`, `in-file` -> `notes.txt`. Also
/// `base/alias` -> `base/root` (a root that is a symlink) and
/// `base/up` -> `base` (a symlinked ancestor: `base/up/root` is the root).
struct Tree {
    _tmp: tempfile::TempDir,
    base: PathBuf,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(root.join("notes.txt"), "ok").unwrap();
    std::fs::write(base.join("outside/secret.txt"), "secret").unwrap();
    symlink(base.join("outside"), root.join("out-dir")).unwrap();
    symlink(base.join("outside/secret.txt"), root.join("out-file")).unwrap();
    symlink("notes.txt", root.join("in-file")).unwrap();
    symlink(&root, base.join("alias")).unwrap();
    symlink(&base, base.join("up")).unwrap();
    Tree { _tmp: tmp, base }
}

fn paths_with_root(root: &Path) -> PathConfig {
    let mut p = shipped().paths.clone();
    p.roots = vec![root.display().to_string()];
    p
}

fn path_check(root: &Path, value: &str, write: bool) -> Vec<Finding> {
    analyze_path(&paths_with_root(root), "/path", value, write)
}

fn shell(root: &Path, line: &str) -> Vec<Finding> {
    analyze_shell(
        &shipped().shell,
        &paths_with_root(root),
        "/command",
        ShellInput::Line(line),
    )
}

fn ids(f: &[Finding]) -> Vec<&str> {
    f.iter().map(|f| f.rule_id.as_str()).collect()
}

/// The three spellings of one root: its real path, a symlink to it, and
/// a path through a symlinked ancestor.
fn roots_of(t: &Tree) -> [PathBuf; 3] {
    [
        t.base.join("root"),
        t.base.join("alias"),
        t.base.join("up/root"),
    ]
}

#[test]
fn a_path_argument_through_a_symlink_directly_under_the_root_is_denied() {
    let t = tree();
    for root in roots_of(&t) {
        for (p, write) in [
            ("out-dir/secret.txt", false),
            ("out-dir/new.txt", true),
            ("out-file", false),
            ("out-file", true),
            ("sub/../out-dir/x", true),
        ] {
            let f = path_check(&root, p, write);
            assert_eq!(decide(&f), Action::Deny, "{root:?} {p}: {f:?}");
            assert_eq!(ids(&f), ["path.symlink-escape"], "{root:?} {p}");
        }
        // The same file named absolutely, through each spelling of the root.
        let abs = root.join("out-dir/new.txt").display().to_string();
        let f = path_check(&root, &abs, true);
        assert_eq!(ids(&f), ["path.symlink-escape"], "{abs}: {f:?}");
        // Allow controls: the root's own files, a symlink that stays inside,
        // and `..` taken after the symlink as the kernel does (out-dir/.. is
        // `base`, so `out-dir/../root/notes.txt` is the root's file).
        for p in [
            "notes.txt",
            "in-file",
            "sub/new.txt",
            ".",
            "out-dir/../root/notes.txt",
        ] {
            for write in [false, true] {
                let f = path_check(&root, p, write);
                assert_eq!(decide(&f), Action::Allow, "{root:?} {p} {write}: {f:?}");
            }
        }
        let real = t.base.join("root/notes.txt").display().to_string();
        assert_eq!(decide(&path_check(&root, &real, true)), Action::Allow);
        // `..` after the symlink that lands outside is caught too.
        let f = path_check(&root, "out-dir/../outside/secret.txt", false);
        assert_eq!(decide(&f), Action::Deny, "{f:?}");
        // And plain `..` above the root, lexically.
        let f = path_check(&root, "../outside/secret.txt", false);
        assert_eq!(ids(&f), ["path.outside-roots"], "{f:?}");
    }
}

#[test]
fn a_shell_write_through_a_symlink_directly_under_the_root_is_denied() {
    let t = tree();
    for root in roots_of(&t) {
        for line in [
            "echo x > out-dir/new.txt",
            "echo x > out-file",
            "cp notes.txt out-dir/",
            "rm -rf out-dir/",
            "cd sub && echo x > ../out-dir/new.txt",
            "cd out-dir && touch new.txt",
        ] {
            let f = shell(&root, line);
            assert!(
                ids(&f).contains(&"shell.symlink-escape"),
                "{root:?} `{line}`: {f:?}"
            );
            assert_eq!(decide(&f), Action::Deny, "{root:?} `{line}`");
        }
        // Allow controls: writes inside and through a link that stays
        // inside. (`rm out-dir`, which only removes the link, is denied
        // too: a write or delete follows the last component as well.)
        for line in [
            "echo x > notes.txt",
            "echo x > in-file",
            "cd sub && echo x > new.txt",
            "cat out-file > /dev/null; echo x > sub/log.txt",
        ] {
            let f = shell(&root, line);
            assert!(
                !ids(&f).contains(&"shell.symlink-escape"),
                "{root:?} `{line}`: {f:?}"
            );
        }
        let f = shell(&root, "echo x > notes.txt && echo y >> sub/new.txt");
        assert_eq!(decide(&f), Action::Allow, "{root:?}: {f:?}");
    }
}

#[test]
fn a_symlinked_root_holds_the_paths_under_its_real_path() {
    let t = tree();
    let alias = t.base.join("alias");
    let real = t.base.join("root");
    // A line under the symlinked root writing through the root's real
    // path: inside.
    let line = format!("echo x > {}/sub/a.txt", real.display());
    assert_eq!(decide(&shell(&alias, &line)), Action::Allow, "{line}");
    // The other way round, a path is placed by name first: a symlink
    // outside the roots that leads in is not followed, so it asks.
    let line = format!("echo x > {}/sub/a.txt", alias.display());
    let f = shell(&real, &line);
    assert_eq!(ids(&f), ["shell.write-outside"], "{line}: {f:?}");
    // Outside both: asked, not allowed.
    let line = format!("echo x > {}/outside/new.txt", t.base.display());
    let f = shell(&alias, &line);
    assert!(ids(&f).contains(&"shell.write-outside"), "{f:?}");
}
