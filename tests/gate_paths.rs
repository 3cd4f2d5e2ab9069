//! Path containment on real temporary directories.

mod gate_common;
use gate_common as common;

use std::os::unix::fs::symlink;

use toolgate::gate::{Action, FindingKind, PathConfig, analyze_path, decide};

struct Fixture {
    _tmp: tempfile::TempDir,
    base: std::path::PathBuf,
    cfg: PathConfig,
}

/// `base/root` (the allowed root, holding `file.txt`), `base/root-secret`
/// (a sibling with a shared prefix), `base/outside/secret.txt`, and inside
/// the root: `link-out` -> `base/outside/secret.txt`, `dir-out` ->
/// `base/outside`, `link-in` -> `file.txt`, `loop-a` <-> `loop-b`.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(base.join("root-secret")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(root.join("file.txt"), "ok").unwrap();
    std::fs::write(base.join("outside/secret.txt"), "secret").unwrap();
    std::fs::write(base.join("root-secret/key"), "k").unwrap();
    symlink(base.join("outside/secret.txt"), root.join("link-out")).unwrap();
    symlink(base.join("outside"), root.join("dir-out")).unwrap();
    symlink("file.txt", root.join("link-in")).unwrap();
    symlink("sub/../dir-out", root.join("rel-out")).unwrap();
    symlink("loop-b", root.join("loop-a")).unwrap();
    symlink("loop-a", root.join("loop-b")).unwrap();
    let mut cfg = common::config().paths;
    cfg.roots = vec![root.display().to_string()];
    Fixture {
        _tmp: tmp,
        base,
        cfg,
    }
}

fn action(fx: &Fixture, p: &str, write: bool) -> Action {
    decide(&analyze_path(&fx.cfg, "/path", p, write))
}

#[test]
fn normal_files_inside_the_root_are_allowed() {
    let fx = fixture();
    let root = fx.base.join("root");
    for p in [
        "file.txt",
        "./file.txt",
        "sub/../file.txt",
        "sub/new.txt",
        "new-dir/new.txt",
        "link-in",
        ".",
        &root.join("file.txt").display().to_string(),
        &root.display().to_string(),
    ] {
        assert_eq!(action(&fx, p, false), Action::Allow, "read {p}");
        assert_eq!(action(&fx, p, true), Action::Allow, "write {p}");
    }
}

#[test]
fn dot_dot_escapes_are_denied() {
    let fx = fixture();
    for p in [
        "../../etc/passwd",
        "../outside/secret.txt",
        "sub/../../outside",
        "..",
        "sub/../../../../../../etc/shadow",
    ] {
        let f = analyze_path(&fx.cfg, "/path", p, false);
        assert_eq!(decide(&f), Action::Deny, "{p}: {f:?}");
        assert_eq!(f[0].rule_id, "path.outside-roots");
        assert_eq!(f[0].kind, FindingKind::Path);
        assert!(f[0].message.contains("through `..`"), "{}", f[0].message);
    }
}

#[test]
fn absolute_paths_outside_roots_are_denied() {
    let fx = fixture();
    for p in [
        "/etc/passwd",
        "/",
        &fx.base.join("outside/secret.txt").display().to_string(),
    ] {
        assert_eq!(action(&fx, p, false), Action::Deny, "{p}");
        assert_eq!(action(&fx, p, true), Action::Deny, "{p}");
    }
}

#[test]
fn sibling_with_shared_prefix_is_outside() {
    let fx = fixture();
    let sibling = fx.base.join("root-secret/key").display().to_string();
    assert_eq!(action(&fx, &sibling, false), Action::Deny);
    assert_eq!(action(&fx, "../root-secret/key", false), Action::Deny);
}

#[test]
fn symlink_inside_pointing_outside_is_denied_for_read() {
    let fx = fixture();
    for p in [
        "link-out",
        "dir-out/secret.txt",
        "rel-out/secret.txt",
        "sub/../link-out",
    ] {
        let f = analyze_path(&fx.cfg, "/path", p, false);
        assert_eq!(decide(&f), Action::Deny, "{p}: {f:?}");
        assert_eq!(f[0].rule_id, "path.symlink-escape", "{p}");
    }
}

#[test]
fn new_file_under_symlinked_dir_pointing_outside_is_denied_for_write() {
    let fx = fixture();
    for p in ["dir-out/new.txt", "dir-out/new-dir/new.txt", "rel-out/x"] {
        let f = analyze_path(&fx.cfg, "/path", p, true);
        assert_eq!(decide(&f), Action::Deny, "{p}: {f:?}");
        assert_eq!(f[0].rule_id, "path.symlink-escape", "{p}");
    }
    // `..` after a symlink is taken from the symlink's target, as the
    // kernel does: dir-out/.. is the fixture base, not the root.
    assert_eq!(
        action(&fx, "dir-out/../root/file.txt", false),
        Action::Allow
    );
    assert_eq!(
        action(&fx, "dir-out/../outside/secret.txt", false),
        Action::Deny
    );
}

#[test]
fn symlink_loops_are_denied() {
    let fx = fixture();
    let f = analyze_path(&fx.cfg, "/path", "loop-a/x", false);
    assert_eq!(decide(&f), Action::Deny, "{f:?}");
    assert_eq!(f[0].rule_id, "path.unresolvable");
}

#[test]
fn odd_characters_are_flagged() {
    let fx = fixture();
    let cases = [
        ("file.txt\0.png", "path.nul-byte"),
        ("file\u{202E}txt.exe", "path.invisible-chars"),
        ("fi\u{200B}le.txt", "path.invisible-chars"),
        ("file\u{2066}.txt", "path.invisible-chars"),
        ("\u{FEFF}file.txt", "path.invisible-chars"),
        ("line\nbreak", "path.invisible-chars"),
        ("C:\\Windows\\system32", "path.windows-syntax"),
        ("..\\..\\etc\\passwd", "path.windows-syntax"),
        ("\\\\server\\share\\x", "path.windows-syntax"),
        ("c:/temp/x", "path.windows-syntax"),
        ("~/.ssh/id_rsa", "path.tilde"),
    ];
    for (p, rule) in cases {
        let f = analyze_path(&fx.cfg, "/path", p, false);
        assert!(f.iter().any(|f| f.rule_id == rule), "{p:?}: {f:?}");
        assert_ne!(decide(&f), Action::Allow, "{p:?}");
    }
    // Backslash traversal is also checked as a traversal.
    let f = analyze_path(&fx.cfg, "/path", "..\\..\\etc\\passwd", false);
    assert!(f.iter().any(|f| f.rule_id == "path.outside-roots"), "{f:?}");
    // Ordinary non-ASCII names are fine.
    assert_eq!(action(&fx, "données/café.txt", true), Action::Allow);
}

/// `base/root/notes.txt` is a hard link to `base/outside/secret.txt`;
/// `base/root/single.txt` has one link; `base/root/twin-a` and `twin-b` are
/// two names of one file, both inside the root.
fn hard_link_fixture() -> Fixture {
    let fx = fixture();
    let root = fx.base.join("root");
    std::fs::hard_link(fx.base.join("outside/secret.txt"), root.join("notes.txt")).unwrap();
    std::fs::write(root.join("single.txt"), "one").unwrap();
    std::fs::write(root.join("twin-a"), "t").unwrap();
    std::fs::hard_link(root.join("twin-a"), root.join("twin-b")).unwrap();
    fx
}

#[test]
fn writing_through_a_hard_link_is_asked_per_the_policy() {
    let fx = hard_link_fixture();
    for p in ["notes.txt", "./sub/../notes.txt", "twin-b"] {
        let f = analyze_path(&fx.cfg, "/path", p, true);
        assert_eq!(decide(&f), Action::Ask, "{p}: {f:?}");
        assert_eq!(f.len(), 1, "{p}: {f:?}");
        assert_eq!(f[0].rule_id, "path.hard-link");
        assert_eq!(f[0].kind, FindingKind::Path);
        assert!(
            f[0].message.contains("2 hard links")
                && f[0].message.contains("outside the allowed roots"),
            "{}",
            f[0].message
        );
    }
    // Through a symlink to the hard-linked file: the same file.
    symlink("notes.txt", fx.base.join("root/via-link")).unwrap();
    let f = analyze_path(&fx.cfg, "/path", "via-link", true);
    assert_eq!(f[0].rule_id, "path.hard-link", "{f:?}");
    // The action comes from the policy.
    let mut cfg = fx.cfg.clone();
    cfg.checks.hard_link_write.action = Action::Deny;
    assert_eq!(
        decide(&analyze_path(&cfg, "/path", "notes.txt", true)),
        Action::Deny
    );
}

#[test]
fn new_files_single_links_and_reads_are_unaffected() {
    let fx = hard_link_fixture();
    for p in ["single.txt", "new.txt", "sub/new.txt", "sub", "."] {
        assert_eq!(action(&fx, p, true), Action::Allow, "write {p}");
    }
    for p in ["notes.txt", "twin-a", "single.txt"] {
        assert_eq!(action(&fx, p, false), Action::Allow, "read {p}");
    }
    // Unless the policy checks reads too.
    let mut cfg = fx.cfg.clone();
    let mut read_check = cfg.checks.hard_link_write.clone();
    read_check.action = Action::Deny;
    cfg.checks.hard_link_read = Some(read_check);
    let f = analyze_path(&cfg, "/path", "notes.txt", false);
    assert_eq!(decide(&f), Action::Deny, "{f:?}");
    assert!(f[0].message.contains("a later write"), "{}", f[0].message);
    assert_eq!(
        decide(&analyze_path(&cfg, "/path", "single.txt", false)),
        Action::Allow
    );
}

#[test]
fn no_roots_fails_closed() {
    let mut cfg = common::config().paths;
    cfg.roots.clear();
    let f = analyze_path(&cfg, "/path", "file.txt", false);
    assert_eq!(decide(&f), Action::Deny);
    assert_eq!(f[0].rule_id, "path.no-roots");
}

#[test]
fn any_of_several_roots_contains() {
    let fx = fixture();
    let mut cfg = fx.cfg.clone();
    cfg.roots
        .push(fx.base.join("outside").display().to_string());
    let secret = fx.base.join("outside/secret.txt").display().to_string();
    assert_eq!(
        decide(&analyze_path(&cfg, "/p", &secret, false)),
        Action::Allow
    );
    // Through the symlink in the first root it now lands in the second.
    assert_eq!(
        decide(&analyze_path(&cfg, "/p", "link-out", false)),
        Action::Allow
    );
}

#[test]
fn symlinked_root_is_resolved() {
    let fx = fixture();
    let alias = fx.base.join("root-alias");
    symlink(fx.base.join("root"), &alias).unwrap();
    let mut cfg = fx.cfg.clone();
    cfg.roots = vec![alias.display().to_string()];
    let real = fx.base.join("root/file.txt").display().to_string();
    assert_eq!(
        decide(&analyze_path(&cfg, "/p", &real, false)),
        Action::Allow
    );
    assert_eq!(
        decide(&analyze_path(&cfg, "/p", "file.txt", false)),
        Action::Allow
    );
    assert_eq!(
        decide(&analyze_path(&cfg, "/p", "../outside/secret.txt", false)),
        Action::Deny
    );
}

// ---------------------------------------------------------------------------
// The same kinds through the whole gate: a policy whose `[gate.paths] roots`
// is a real temporary directory, and the shipped filesystem tools
// (`read_text_file` is read-only, `write_file` writes).
// ---------------------------------------------------------------------------

mod through_the_gate {
    use std::os::unix::fs::symlink;
    use std::sync::Arc;

    use serde_json::json;
    use toolgate::diag::SourceFile;
    use toolgate::gate::{Action, Gate};
    use toolgate::load::{DEFAULT_POLICY, Sources, load_catalog};
    use toolgate::parse::policy::parse_policy;

    struct Env {
        _tmp: tempfile::TempDir,
        base: std::path::PathBuf,
        gate: Gate,
    }

    /// `base/root` (allowed; holds `notes.txt`, `link-out` -> `base/outside/secret.txt`,
    /// `dir-out` -> `base/outside`), `base/root-secret` (sibling with a shared prefix),
    /// `base/outside/secret.txt`.
    fn env() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(base.join("root-secret")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(root.join("notes.txt"), "ok").unwrap();
        std::fs::write(base.join("outside/secret.txt"), "s").unwrap();
        std::fs::write(base.join("root-secret/key"), "k").unwrap();
        symlink(base.join("outside/secret.txt"), root.join("link-out")).unwrap();
        symlink(base.join("outside"), root.join("dir-out")).unwrap();
        // Only `[gate.paths] roots` is set: every other key keeps its shipped value.
        let text = format!(
            "{}\n",
            DEFAULT_POLICY
                .1
                .replace("\n[gate.paths]\n", "\n[gate.paths]\n# test root\n",)
        )
        .replacen(
            "roots = [\".\"]",
            &format!("roots = [{:?}]", root.display().to_string()),
            1,
        );
        assert!(text.contains("# test root"));
        let policy = parse_policy(SourceFile::new("test.toml", text)).unwrap();
        let tools = load_catalog(&Sources::default()).unwrap();
        let plan = toolgate::compile::compile(&policy, tools).unwrap();
        Env {
            _tmp: tmp,
            base,
            gate: Gate::new(Arc::new(plan)),
        }
    }

    fn read(e: &Env, path: &str) -> toolgate::gate::Verdict {
        e.gate
            .check("filesystem.read_text_file", json!({ "path": path }))
    }

    fn write(e: &Env, path: &str) -> toolgate::gate::Verdict {
        e.gate.check(
            "filesystem.write_file",
            json!({ "path": path, "content": "x" }),
        )
    }

    #[test]
    fn dot_dot_escape_from_a_root_is_denied() {
        let e = env();
        let root = e.base.join("root");
        let v = read(&e, &format!("{}/../../etc/passwd", root.display()));
        assert_eq!(v.decision, Action::Deny, "{}", v.message);
        assert!(v.message.contains(".."), "{}", v.message);
        let v = read(&e, "../../etc/passwd");
        assert_eq!(v.decision, Action::Deny, "{}", v.message);
        assert_eq!(v.findings[0].path, "/path");
    }

    #[test]
    fn absolute_path_outside_the_roots_is_denied() {
        let e = env();
        for p in ["/etc/passwd", "/", "/root/.ssh/id_rsa"] {
            let v = read(&e, p);
            assert_eq!(v.decision, Action::Deny, "{p}: {}", v.message);
            assert!(v.rule_ids().contains(&"path.outside-roots"), "{p}");
        }
    }

    #[test]
    fn sibling_with_a_shared_prefix_is_outside() {
        let e = env();
        let p = e.base.join("root-secret/key");
        let v = read(&e, &p.display().to_string());
        assert_eq!(v.decision, Action::Deny, "{}", v.message);
        assert!(v.rule_ids().contains(&"path.outside-roots"));
    }

    #[test]
    fn symlink_inside_pointing_outside_is_denied_for_reads() {
        let e = env();
        let p = e.base.join("root/link-out");
        let v = read(&e, &p.display().to_string());
        assert_eq!(v.decision, Action::Deny, "{}", v.message);
        assert!(v.rule_ids().contains(&"path.symlink-escape"));
        let v = read(&e, "link-out");
        assert_eq!(v.decision, Action::Deny, "relative: {}", v.message);
    }

    #[test]
    fn new_file_under_a_symlinked_directory_pointing_outside_is_denied() {
        let e = env();
        let p = e.base.join("root/dir-out/new-file.txt");
        assert!(!p.exists());
        let v = write(&e, &p.display().to_string());
        assert_eq!(v.decision, Action::Deny, "{}", v.message);
        assert!(v.rule_ids().contains(&"path.symlink-escape"));
        let v = write(&e, "dir-out/deeper/new.txt");
        assert_eq!(v.decision, Action::Deny, "{}", v.message);
    }

    #[test]
    fn normal_file_inside_the_root_is_allowed() {
        let e = env();
        let p = e.base.join("root/notes.txt");
        let v = read(&e, &p.display().to_string());
        assert_eq!(v.decision, Action::Allow, "{}", v.message);
        assert!(v.findings.is_empty());
        assert_eq!(read(&e, "notes.txt").decision, Action::Allow);
        let v = write(&e, &e.base.join("root/new.txt").display().to_string());
        assert_eq!(v.decision, Action::Allow, "{}", v.message);
    }

    #[test]
    fn nul_windows_and_invisible_characters_are_flagged() {
        let e = env();
        for p in [
            "notes.txt\u{0}.png",
            "C:\\Windows\\system32",
            "notes\u{202e}txt.exe",
            "no\u{200b}tes.txt",
        ] {
            let v = read(&e, p);
            assert_ne!(v.decision, Action::Allow, "{p:?}: {}", v.message);
        }
    }

    #[test]
    fn a_write_through_a_hard_link_to_a_file_outside_is_asked() {
        let e = env();
        let root = e.base.join("root");
        std::fs::hard_link(e.base.join("outside/secret.txt"), root.join("linked.txt")).unwrap();
        let v = write(&e, "linked.txt");
        assert_eq!(v.decision, Action::Ask, "{}", v.message);
        assert_eq!(v.findings[0].rule_id, "path.hard-link");
        assert_eq!(v.findings[0].path, "/path");
        assert!(v.message.contains("hard link"), "{}", v.message);
        // Reading it, writing a file with one link, or a new file: allowed.
        assert_eq!(read(&e, "linked.txt").decision, Action::Allow);
        assert_eq!(write(&e, "notes.txt").decision, Action::Allow);
        assert_eq!(write(&e, "brand-new.txt").decision, Action::Allow);
    }

    #[test]
    fn every_path_of_an_array_argument_is_checked() {
        let e = env();
        let ok = e.base.join("root/notes.txt").display().to_string();
        let v = e.gate.check(
            "filesystem.read_multiple_files",
            json!({ "paths": [ok, "/etc/shadow"] }),
        );
        assert_eq!(v.decision, Action::Deny, "{}", v.message);
        assert_eq!(v.findings[0].path, "/paths/1");
    }
}
