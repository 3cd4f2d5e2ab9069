//! Hot reload with real files and real file-system events: every save style,
//! bad edits, rapid saves, symlink swaps, polling, and a no-torn-state stress
//! test. Waits poll with a generous deadline (never a fixed sleep for an
//! expected state), so a loaded 2-core CI machine does not make them flaky.

#![cfg(feature = "reload")]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use toolgate::load::Sources;
use toolgate::reload::{LoadAttempt, ReloadOptions, Reloader, WatchMode};
use toolgate::{ErrorKind, Plan, SessionContext, UsageStats};

const DEADLINE: Duration = Duration::from_secs(10);
const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// The shipped default policy with another activation threshold.
fn policy_text(threshold: &str) -> String {
    let text = fs::read_to_string(Path::new(MANIFEST).join("policies/default.toml")).unwrap();
    assert!(text.contains("\nthreshold = 0.4 "));
    text.replacen(
        "\nthreshold = 0.4 ",
        &format!("\nthreshold = {threshold} "),
        1,
    )
}

/// A syntax error on the threshold line.
fn invalid_text() -> String {
    policy_text("0.4.5")
}

fn tag_text(name: &str) -> String {
    fs::read_to_string(Path::new(MANIFEST).join("tool-tags").join(name)).unwrap()
}

fn extra_tool(name: &str) -> String {
    format!(
        r#"[[tool]]
name = "{name}"
description = "A tool added while watching"
domains = ["database"]
preferred_stages = ["exploration"]
trigger_keywords = ["select", "rows"]
base_priority = 0.5
parameter_complexity = 1
"#
    )
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    policy: PathBuf,
    tags: PathBuf,
}

const TAGS: [&str; 4] = ["sqlite.toml", "time.toml", "fetch.toml", "shell.toml"];

/// `root/policy.toml` (threshold 0.3) and `root/tags/` with four tag files.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let policy = root.join("policy.toml");
    let tags = root.join("tags");
    fs::create_dir(&tags).unwrap();
    for t in TAGS {
        fs::write(tags.join(t), tag_text(t)).unwrap();
    }
    fs::write(&policy, policy_text("0.3")).unwrap();
    Fixture {
        _dir: dir,
        root,
        policy,
        tags,
    }
}

fn options(policy: &Path, tags: &Path) -> ReloadOptions {
    let mut o = ReloadOptions::new(Sources {
        policy: Some(policy.to_path_buf()),
        tags: Some(tags.to_path_buf()),
        tools: vec![],
    });
    o.debounce = Some(Duration::from_millis(50));
    o.settle = Some(Duration::from_millis(10));
    o
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < DEADLINE {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out after {DEADLINE:?} waiting for: {what}");
}

fn wait_threshold(r: &Reloader, t: f64) {
    wait_until(&format!("threshold {t}"), || r.plan().threshold == t);
}

/// Atomic save: write a temporary file in the same directory, then rename it over.
fn atomic_write(path: &Path, text: &str) {
    let tmp = path.with_file_name(format!(
        ".{}.tmp{}",
        path.file_name().unwrap().to_string_lossy(),
        std::process::id()
    ));
    let mut f = fs::File::create(&tmp).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f.sync_all().unwrap();
    drop(f);
    fs::rename(&tmp, path).unwrap();
}

fn sql_context() -> (SessionContext, UsageStats) {
    let ctx = SessionContext {
        user_intent_keywords: vec![
            "select".into(),
            "rows".into(),
            "users".into(),
            "table".into(),
        ],
        conversation_stage: Some("exploration".into()),
        active_language: Some("sql".into()),
        ..Default::default()
    };
    let mut usage = UsageStats::default();
    usage.call_counts.insert("sqlite.read_query".into(), 6);
    (ctx, usage)
}

#[test]
fn first_load_and_status() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let s = r.status();
    assert_eq!(s.version, 1);
    assert_eq!(s.loads, 1);
    assert_eq!(s.rejections, 0);
    assert_eq!(s.content_hash, r.plan().content_hash);
    assert_eq!(s.policy_name, "default");
    assert!(s.last_error.is_none());
    assert!(s.loaded_at.elapsed().unwrap() < Duration::from_secs(60));
    assert_eq!(r.plan().threshold, 0.3);
    assert_eq!(r.plan().tools.len(), 10);
}

#[test]
fn first_load_failure_is_an_error_with_location() {
    let f = fixture();
    fs::write(&f.policy, invalid_text()).unwrap();
    let e = Reloader::new(options(&f.policy, &f.tags)).unwrap_err();
    let msg = e.to_string();
    assert!(e.has(ErrorKind::Syntax), "{msg}");
    assert!(msg.contains(&format!("{}:", f.policy.display())), "{msg}");
}

#[test]
fn reload_now_swaps_and_in_flight_plans_stay() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let held: Arc<Plan> = r.plan();
    let handle = r.handle();
    fs::write(&f.policy, policy_text("0.5")).unwrap();
    let ev = r.reload_now().unwrap();
    assert_eq!((ev.previous_version, ev.version), (1, 2));
    assert_eq!(ev.plan.threshold, 0.5);
    assert_eq!(held.threshold, 0.3, "a plan in use is never changed");
    assert_eq!(handle.load().threshold, 0.5);
    assert_eq!(r.status().version, 2);
    assert_eq!(r.status().content_hash, ev.plan.content_hash);
}

#[test]
fn bad_edits_are_rejected_and_the_last_good_plan_serves() {
    let f = fixture();
    let mut o = options(&f.policy, &f.tags);
    o.max_reads = 3;
    let r = Reloader::new(o).unwrap();
    let good = r.plan();
    let attempts = r.subscribe_attempts();
    let full = policy_text("0.3");
    let cases: Vec<(&str, String, ErrorKind)> = vec![
        ("syntax error", invalid_text(), ErrorKind::Syntax),
        (
            "failed validation",
            policy_text("1.5"),
            ErrorKind::OutOfRange,
        ),
        (
            "failing policy example",
            policy_text("0.95"),
            ErrorKind::ExampleFailed,
        ),
        (
            "truncated file",
            full[..full.find("formula = \"").unwrap() + 15].to_string(),
            ErrorKind::Syntax,
        ),
        ("empty file", String::new(), ErrorKind::Empty),
    ];
    for (what, text, kind) in cases {
        fs::write(&f.policy, &text).unwrap();
        let rej = r.reload_now().expect_err(what);
        assert_eq!(rej.version, 1, "{what}");
        assert!(rej.error.has(kind), "{what}: {}", rej.error);
        assert!(
            Arc::ptr_eq(&r.plan(), &good),
            "{what}: the good plan keeps serving"
        );
        let s = r.status();
        assert_eq!(s.version, 1);
        let err = s.last_error.expect(what);
        if kind != ErrorKind::Empty {
            // file:line:column: message
            let prefix = format!("{}:", f.policy.display());
            let rest = err
                .strip_prefix(&prefix)
                .unwrap_or_else(|| panic!("{what}: {err}"));
            let mut parts = rest.splitn(3, ':');
            assert!(
                parts.next().unwrap().parse::<u32>().is_ok(),
                "{what}: {err}"
            );
            assert!(
                parts.next().unwrap().parse::<u32>().is_ok(),
                "{what}: {err}"
            );
        } else {
            assert!(err.contains("empty"), "{err}");
        }
        match attempts.try_recv() {
            Ok(LoadAttempt::Rejected(x)) => assert_eq!(x.version, 1),
            other => panic!("{what}: expected a rejection event, got {other:?}"),
        }
    }
    assert_eq!(r.status().rejections, 5);
    fs::write(&f.policy, policy_text("0.5")).unwrap();
    let ev = r.reload_now().unwrap();
    assert_eq!(ev.version, 2);
    assert!(r.status().last_error.is_none());
}

#[test]
fn a_writer_that_truncates_then_writes_is_not_loaded_empty() {
    let f = fixture();
    let mut o = options(&f.policy, &f.tags);
    o.settle = Some(Duration::from_millis(30));
    let r = Reloader::new(o).unwrap();
    let (tx, rx) = mpsc::channel();
    let path = f.policy.clone();
    let writer = std::thread::spawn(move || {
        let mut file = fs::File::create(&path).unwrap(); // truncates
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(80));
        file.write_all(policy_text("0.5").as_bytes()).unwrap();
    });
    rx.recv().unwrap();
    let ev = r.reload_now().expect("the settled content loads");
    writer.join().unwrap();
    assert_eq!(ev.plan.threshold, 0.5);
    assert_eq!(r.status().rejections, 0);
}

#[test]
fn in_place_write() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let _w = r.watch().unwrap();
    fs::write(&f.policy, policy_text("0.5")).unwrap();
    wait_threshold(&r, 0.5);
    assert!(r.status().last_error.is_none());
    assert!(r.version() >= 2);
}

#[test]
fn atomic_write_then_rename() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let _w = r.watch().unwrap();
    atomic_write(&f.policy, &policy_text("0.5"));
    wait_threshold(&r, 0.5);
    // and again: the watch survives the rename (it is on the directory)
    atomic_write(&f.policy, &policy_text("0.45"));
    wait_threshold(&r, 0.45);
    assert_eq!(r.status().rejections, 0);
}

#[test]
fn vim_style_save() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let _w = r.watch().unwrap();
    for t in ["0.5", "0.45"] {
        // swap file, backup by rename, new file (new inode), backup removed
        let swp = f.root.join(".policy.toml.swp");
        fs::write(&swp, "vim swap junk").unwrap();
        let backup = f.root.join("policy.toml~");
        fs::rename(&f.policy, &backup).unwrap();
        let mut file = fs::File::create(&f.policy).unwrap();
        file.write_all(policy_text(t).as_bytes()).unwrap();
        file.sync_all().unwrap();
        drop(file);
        fs::remove_file(&backup).unwrap();
        fs::remove_file(&swp).unwrap();
        wait_threshold(&r, t.parse().unwrap());
    }
}

#[test]
fn delete_then_recreate() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let _w = r.watch().unwrap();
    fs::remove_file(&f.policy).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    fs::write(&f.policy, policy_text("0.5")).unwrap();
    wait_threshold(&r, 0.5);
    // a deletion that lasts is rejected, and the last good plan keeps serving
    fs::remove_file(&f.policy).unwrap();
    wait_until("missing policy rejected", || {
        r.status().last_error.is_some()
    });
    assert_eq!(r.plan().threshold, 0.5);
    fs::write(&f.policy, policy_text("0.45")).unwrap();
    wait_threshold(&r, 0.45);
    assert!(r.status().last_error.is_none());
}

#[cfg(unix)]
#[test]
fn file_replaced_by_a_symlink() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let _w = r.watch().unwrap();
    let elsewhere = f.root.join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let target = elsewhere.join("real.toml");
    fs::write(&target, policy_text("0.5")).unwrap();
    fs::remove_file(&f.policy).unwrap();
    std::os::unix::fs::symlink(&target, &f.policy).unwrap();
    wait_threshold(&r, 0.5);
    // an edit of the link's target is seen too (its directory is watched now)
    fs::write(&target, policy_text("0.45")).unwrap();
    wait_threshold(&r, 0.45);
}

/// Kubernetes mounts a config map as `dir/key -> ..data/key`,
/// `..data -> ..<timestamp>`, and updates it by writing a new timestamped
/// directory and renaming a new `..data` link over the old one.
#[cfg(unix)]
#[test]
fn kubernetes_config_map_swap() {
    use std::os::unix::fs::symlink;
    let f = fixture();
    let cm = f.root.join("config");
    fs::create_dir_all(cm.join("..2024_01")).unwrap();
    fs::write(cm.join("..2024_01/policy.toml"), policy_text("0.3")).unwrap();
    symlink("..2024_01", cm.join("..data")).unwrap();
    symlink("..data/policy.toml", cm.join("policy.toml")).unwrap();
    let r = Reloader::new(options(&cm.join("policy.toml"), &f.tags)).unwrap();
    let _w = r.watch().unwrap();
    assert_eq!(r.plan().threshold, 0.3);
    let mut old = "..2024_01".to_string();
    for (i, t) in ["0.5", "0.45", "0.35"].iter().enumerate() {
        let new = format!("..2024_0{}", i + 2);
        fs::create_dir(cm.join(&new)).unwrap();
        fs::write(cm.join(&new).join("policy.toml"), policy_text(t)).unwrap();
        symlink(&new, cm.join("..data_tmp")).unwrap();
        fs::rename(cm.join("..data_tmp"), cm.join("..data")).unwrap();
        fs::remove_dir_all(cm.join(&old)).unwrap();
        old = new;
        wait_threshold(&r, t.parse().unwrap());
    }
}

/// A tags directory that is a symlink re-pointed to another directory.
#[cfg(unix)]
#[test]
fn tags_directory_swapped_by_repointing_a_symlink() {
    use std::os::unix::fs::symlink;
    let f = fixture();
    let v1 = f.root.join("tags-v1");
    let v2 = f.root.join("tags-v2");
    for (d, files) in [(&v1, &TAGS[..2]), (&v2, &TAGS[..3])] {
        fs::create_dir(d).unwrap();
        for t in files {
            fs::write(d.join(t), tag_text(t)).unwrap();
        }
    }
    let link = f.root.join("tags-current");
    symlink("tags-v1", &link).unwrap();
    let r = Reloader::new(options(&f.policy, &link)).unwrap();
    let _w = r.watch().unwrap();
    let n1 = r.plan().tools.len();
    assert!(r.plan().tool("fetch.fetch").is_none());
    symlink("tags-v2", f.root.join("tags-tmp")).unwrap();
    fs::rename(f.root.join("tags-tmp"), &link).unwrap();
    wait_until("fetch tool from tags-v2", || {
        r.plan().tool("fetch.fetch").is_some()
    });
    assert!(r.plan().tools.len() > n1);
    // edits inside the new target are watched
    fs::write(v2.join("extra.toml"), extra_tool("extra.v2")).unwrap();
    wait_until("extra tool in tags-v2", || {
        r.plan().tool("extra.v2").is_some()
    });
    // and the old target no longer matters
    fs::write(v1.join("broken.toml"), "this is not toml [").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(r.status().last_error.is_none());
}

#[test]
fn tag_files_added_and_removed() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let _w = r.watch().unwrap();
    atomic_write(&f.tags.join("extra.toml"), &extra_tool("extra.one"));
    wait_until("extra tool added", || r.plan().tool("extra.one").is_some());
    fs::remove_file(f.tags.join("time.toml")).unwrap();
    wait_until("time tools removed", || {
        r.plan().tool("time.get_current_time").is_none()
    });
    fs::remove_file(f.tags.join("extra.toml")).unwrap();
    wait_until("extra tool removed", || {
        r.plan().tool("extra.one").is_none()
    });
    assert_eq!(r.status().rejections, 0);
}

#[test]
fn editor_droppings_are_ignored() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let attempts = r.subscribe_attempts();
    let _w = r.watch().unwrap();
    // Would break the load (duplicate tools, bad TOML) if they were read.
    fs::write(f.tags.join(".#sqlite.toml"), tag_text("sqlite.toml")).unwrap();
    fs::write(f.tags.join("sqlite.toml~"), tag_text("sqlite.toml")).unwrap();
    fs::write(f.tags.join(".sqlite.toml.swp"), "junk [").unwrap();
    fs::write(f.root.join("policy.toml~"), "junk [").unwrap();
    fs::write(f.root.join(".#policy.toml"), "junk [").unwrap();
    fs::write(f.root.join("unrelated.txt"), "hello").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(attempts.try_recv().is_err(), "no load attempt");
    assert_eq!(r.version(), 1);
    // a real edit still goes through (and the droppings are not part of it)
    fs::write(&f.policy, policy_text("0.5")).unwrap();
    wait_threshold(&r, 0.5);
    assert!(r.status().last_error.is_none());
}

#[test]
fn invalid_edit_then_fix() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let attempts = r.subscribe_attempts();
    let _w = r.watch().unwrap();
    atomic_write(&f.policy, &invalid_text());
    wait_until("rejection", || r.status().last_error.is_some());
    let s = r.status();
    assert_eq!(s.version, 1);
    let err = s.last_error.unwrap();
    assert!(
        err.starts_with(&format!("{}:11:", f.policy.display())),
        "file:line:column expected, got {err}"
    );
    assert_eq!(r.plan().threshold, 0.3);
    match attempts.recv_timeout(DEADLINE).unwrap() {
        LoadAttempt::Rejected(x) => assert!(x.error.has(ErrorKind::Syntax)),
        other => panic!("{other:?}"),
    }
    // fixing it back to the very content that is served clears the error too
    atomic_write(&f.policy, &policy_text("0.3"));
    wait_until("error cleared", || r.status().last_error.is_none());
    atomic_write(&f.policy, &policy_text("0.5"));
    wait_threshold(&r, 0.5);
}

#[test]
fn fifty_rapid_saves_final_content_wins() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let _w = r.watch().unwrap();
    // 49 intermediate versions, then the final one
    let texts: Vec<String> = (0..50)
        .map(|i| match i {
            49 => policy_text("0.5"),
            _ => policy_text(&format!("0.{}", 31 + i % 9)),
        })
        .collect();
    for (i, t) in texts.iter().enumerate() {
        if i % 2 == 0 {
            atomic_write(&f.policy, t);
        } else {
            fs::write(&f.policy, t).unwrap();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    wait_threshold(&r, 0.5);
    // let any straggling event through, then check the final state holds
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(r.plan().threshold, 0.5);
    let s = r.status();
    eprintln!(
        "50 rapid saves: {} loads, {} rejections",
        s.loads - 1,
        s.rejections
    );
    assert!(
        s.loads - 1 + s.rejections <= 20,
        "load attempts are bounded: {} loads, {} rejections",
        s.loads - 1,
        s.rejections
    );
}

#[test]
fn polling_watcher() {
    let f = fixture();
    let mut o = options(&f.policy, &f.tags);
    o.poll_interval = Some(Duration::from_millis(50));
    let r = Reloader::new(o).unwrap();
    assert_eq!(r.mode(), WatchMode::Poll(Duration::from_millis(50)));
    let w = r.watch().unwrap();
    assert_eq!(w.mode(), WatchMode::Poll(Duration::from_millis(50)));
    atomic_write(&f.policy, &policy_text("0.5"));
    wait_threshold(&r, 0.5);
    fs::write(&f.policy, policy_text("0.45 ")).unwrap();
    wait_threshold(&r, 0.45);
    fs::write(f.tags.join("extra.toml"), extra_tool("extra.polled")).unwrap();
    wait_until("extra tool", || r.plan().tool("extra.polled").is_some());
}

#[test]
fn reload_settings_come_from_the_policy() {
    let f = fixture();
    let text = format!(
        "{}\n[reload]\ndebounce_ms = 40\npoll_interval_ms = 250\nsettle_ms = 5\n",
        policy_text("0.3")
    );
    fs::write(&f.policy, text).unwrap();
    let mut o = ReloadOptions::new(Sources {
        policy: Some(f.policy.clone()),
        tags: Some(f.tags.clone()),
        tools: vec![],
    });
    let r = Reloader::new(o.clone()).unwrap();
    assert_eq!(r.debounce(), Duration::from_millis(40));
    assert_eq!(r.settle(), Duration::from_millis(5));
    assert_eq!(r.mode(), WatchMode::Poll(Duration::from_millis(250)));
    // options override the policy
    o.debounce = Some(Duration::from_millis(70));
    o.poll_interval = Some(Duration::from_millis(90));
    let r = Reloader::new(o).unwrap();
    assert_eq!(r.debounce(), Duration::from_millis(70));
    assert_eq!(r.mode(), WatchMode::Poll(Duration::from_millis(90)));
    // and without either, the defaults
    fs::write(&f.policy, policy_text("0.3")).unwrap();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    assert_eq!(r.mode(), WatchMode::Events);
}

#[test]
fn reload_section_is_validated() {
    use toolgate::diag::SourceFile;
    use toolgate::parse::policy::parse_policy;
    let parse = |extra: &str| {
        let text = format!("{}\n[reload]\n{extra}\n", policy_text("0.3"));
        parse_policy(SourceFile::new("p.toml", text))
    };
    let ok = parse("debounce_ms = 100\nsettle_ms = 0").unwrap();
    assert_eq!(ok.reload.debounce_ms, Some(100));
    assert_eq!(ok.reload.settle_ms, Some(0));
    assert_eq!(ok.reload.poll_interval_ms, None);
    assert!(
        parse("debounce_ms = 0")
            .unwrap_err()
            .has(ErrorKind::OutOfRange)
    );
    assert!(
        parse("poll_interval_ms = 1")
            .unwrap_err()
            .has(ErrorKind::OutOfRange)
    );
    assert!(
        parse("debounce_ms = \"fast\"")
            .unwrap_err()
            .has(ErrorKind::WrongType)
    );
    let e = parse("debounce = 100").unwrap_err();
    assert!(e.has(ErrorKind::UnknownKey));
    assert!(e.to_string().contains("debounce_ms"), "{e}");
}

#[test]
fn subscribers_get_versions_and_the_active_set_diff() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let changes = r.subscribe();
    let _w = r.watch().unwrap();
    atomic_write(&f.policy, &policy_text("0.5"));
    let ev = changes.recv_timeout(DEADLINE).unwrap();
    assert_eq!((ev.previous_version, ev.version), (1, 2));
    assert_eq!(ev.previous.threshold, 0.3);
    assert_eq!(ev.plan.threshold, 0.5);
    let (ctx, usage) = sql_context();
    let diff = ev.diff(&ctx, &usage, 0.0);
    assert!(diff.added.is_empty(), "{diff:?}");
    assert!(
        diff.removed.contains(&"sqlite.list_tables".to_string()),
        "{diff:?}"
    );
    assert!(
        !diff.removed.contains(&"sqlite.read_query".to_string()),
        "{diff:?}"
    );
    // a change that leaves this context's set alone gives an empty diff
    fs::write(f.tags.join("extra.toml"), extra_tool("extra.quiet")).unwrap();
    let ev = changes.recv_timeout(DEADLINE).unwrap();
    assert_eq!(ev.version, 3);
    let diff = ev.diff(&SessionContext::default(), &UsageStats::default(), 0.0);
    let before = ev
        .previous
        .evaluate(&SessionContext::default(), &UsageStats::default(), 0.0);
    let after = ev
        .plan
        .evaluate(&SessionContext::default(), &UsageStats::default(), 0.0);
    assert_eq!(diff, after.diff(&before));
}

/// The score and active flag of every tool: what "the same result" means.
fn fingerprint(plan: &Arc<Plan>, ctx: &SessionContext, usage: &UsageStats) -> Vec<(u64, bool)> {
    plan.evaluate(ctx, usage, 0.0)
        .tools
        .iter()
        .map(|t| (t.score.to_bits(), t.active))
        .collect()
}

/// Two threads evaluate continuously while the plan is reloaded `n` times,
/// cycling through valid policy A, valid policy B and an invalid policy.
/// No evaluation may fail and every result must be exactly A's or B's.
fn stress(n: usize, watch: bool) {
    let f = fixture();
    let mut o = options(&f.policy, &f.tags);
    if !watch {
        o.settle = Some(Duration::ZERO);
        o.max_reads = 2;
    }
    let r = Reloader::new(o).unwrap();
    let texts = [policy_text("0.3"), policy_text("0.5"), invalid_text()];
    let (ctx, usage) = sql_context();
    let expected_a = fingerprint(&r.plan(), &ctx, &usage);
    fs::write(&f.policy, &texts[1]).unwrap();
    r.reload_now().unwrap();
    let expected_b = fingerprint(&r.plan(), &ctx, &usage);
    assert_ne!(expected_a, expected_b);
    let active = |fp: &[(u64, bool)]| fp.iter().filter(|x| x.1).count();
    assert_ne!(active(&expected_a), active(&expected_b));

    let stop = Arc::new(AtomicBool::new(false));
    let evals = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for _ in 0..2 {
        let (r, stop, evals) = (r.clone(), stop.clone(), evals.clone());
        let (ctx, usage) = (ctx.clone(), usage.clone());
        let (ea, eb) = (expected_a.clone(), expected_b.clone());
        threads.push(std::thread::spawn(move || {
            let (mut seen_a, mut seen_b) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let plan = r.plan();
                let fp = fingerprint(&plan, &ctx, &usage);
                if fp == ea && plan.threshold == 0.3 {
                    seen_a += 1;
                } else if fp == eb && plan.threshold == 0.5 {
                    seen_b += 1;
                } else {
                    panic!(
                        "torn or unexpected result under threshold {}",
                        plan.threshold
                    );
                }
                evals.fetch_add(1, Ordering::Relaxed);
            }
            (seen_a, seen_b)
        }));
    }
    let watch_guard = if watch {
        Some(r.watch().unwrap())
    } else {
        None
    };
    let attempts = r.subscribe_attempts();
    let (mut loaded, mut rejected) = (0, 0);
    for i in 0..n {
        // Start from B (served): A, invalid, B, A, invalid, B, ...
        let k = [0, 2, 1][i % 3];
        atomic_write(&f.policy, &texts[k]);
        let outcome = if watch {
            attempts
                .recv_timeout(DEADLINE)
                .expect("the watcher reloads")
        } else {
            match r.reload_now() {
                Ok(ev) => LoadAttempt::Loaded(ev),
                Err(rej) => LoadAttempt::Rejected(rej),
            }
        };
        match (k, outcome) {
            (2, LoadAttempt::Rejected(_)) => rejected += 1,
            (0 | 1, LoadAttempt::Loaded(ev)) => {
                assert_eq!(ev.plan.threshold, if k == 0 { 0.3 } else { 0.5 });
                loaded += 1;
            }
            (k, other) => panic!("reload {i} (text {k}): unexpected {other:?}"),
        }
    }
    drop(watch_guard);
    stop.store(true, Ordering::Relaxed);
    let mut seen = (0, 0);
    for t in threads {
        let (a, b) = t.join().expect("no evaluation failed");
        seen.0 += a;
        seen.1 += b;
    }
    let s = r.status();
    eprintln!(
        "stress ({n} reloads, watch={watch}): {loaded} loaded, {rejected} rejected, {} evaluations ({} on A, {} on B)",
        evals.load(Ordering::Relaxed),
        seen.0,
        seen.1
    );
    assert_eq!(loaded + rejected, n);
    assert_eq!(s.rejections as usize, rejected);
    assert_eq!(s.version as usize, 2 + loaded);
    assert!(evals.load(Ordering::Relaxed) > 0);
}

#[test]
fn stress_thousand_reloads_no_torn_state() {
    stress(1000, false);
}

#[test]
fn stress_watcher_driven_reloads_no_torn_state() {
    stress(30, true);
}

#[cfg(feature = "cli")]
mod cli {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};

    struct Watch {
        child: Child,
        lines: mpsc::Receiver<String>,
    }

    impl Watch {
        fn start(f: &Fixture, input: &Path) -> Watch {
            let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
                .args(["watch", "--format", "json", "--debounce", "50", "--policy"])
                .arg(&f.policy)
                .arg("--tags")
                .arg(&f.tags)
                .arg("--input")
                .arg(input)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let (tx, lines) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            Watch { child, lines }
        }

        fn next(&self) -> serde_json::Value {
            let line = self
                .lines
                .recv_timeout(DEADLINE)
                .expect("a line from watch");
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
        }
    }

    impl Drop for Watch {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn strings(v: &serde_json::Value) -> Vec<&str> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect()
    }

    #[test]
    fn watch_prints_one_json_line_per_load_attempt() {
        let f = fixture();
        let input = f.root.join("input.json");
        fs::write(
            &input,
            r#"{"message": "select all rows from the users table",
                "context": {"conversation_stage": "exploration", "active_language": "sql"},
                "usage": {"call_counts": {"sqlite.read_query": 6}}}"#,
        )
        .unwrap();
        let w = Watch::start(&f, &input);
        let first = w.next();
        assert_eq!(first["event"], "loaded");
        assert_eq!(first["version"], 1);
        assert!(first["error"].is_null());
        let active = strings(&first["active"]);
        assert!(active.contains(&"sqlite.list_tables"), "{first}");
        assert_eq!(strings(&first["added"]), active);
        assert!(strings(&first["removed"]).is_empty());
        let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 7, "{first}");

        atomic_write(&f.policy, &policy_text("0.5"));
        let second = w.next();
        assert_eq!(second["event"], "loaded", "{second}");
        assert_eq!(second["version"], 2);
        assert!(
            strings(&second["removed"]).contains(&"sqlite.list_tables"),
            "{second}"
        );
        assert!(strings(&second["added"]).is_empty());

        fs::write(&f.policy, invalid_text()).unwrap();
        let third = w.next();
        assert_eq!(third["event"], "rejected", "{third}");
        assert_eq!(third["version"], 2);
        let err = third["error"].as_str().unwrap();
        assert!(
            err.starts_with(&format!("{}:11:", f.policy.display())),
            "{err}"
        );
        assert_eq!(third["active"], second["active"]);

        atomic_write(&f.policy, &policy_text("0.3"));
        let fourth = w.next();
        assert_eq!(fourth["event"], "loaded", "{fourth}");
        assert_eq!(fourth["version"], 3);
        assert!(
            strings(&fourth["added"]).contains(&"sqlite.list_tables"),
            "{fourth}"
        );
    }

    #[test]
    fn watch_exits_1_when_the_first_load_fails() {
        let f = fixture();
        fs::write(&f.policy, invalid_text()).unwrap();
        let input = f.root.join("input.json");
        fs::write(&input, "{}").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["watch", "--format", "json", "--policy"])
            .arg(&f.policy)
            .arg("--input")
            .arg(&input)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let line: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
        assert_eq!(line["event"], "rejected");
        assert!(line["error"].as_str().unwrap().contains(":11:"), "{line}");
    }
}

/// Issue 14: a policy-only edit reuses the compiled catalog; an edited tool
/// file recompiles that file's tools only; the plans equal a fresh load.
#[test]
fn reloads_recompile_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let tool = |name: &str, desc: &str| {
        serde_json::json!({"type": "function", "function": {"name": name, "description": desc,
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}})
    };
    let write_tools = |file: &str, names: &[&str]| {
        let tools: Vec<_> = names
            .iter()
            .map(|n| tool(n, &format!("{n} reads the weather of a city")))
            .collect();
        fs::write(
            dir.path().join(file),
            serde_json::Value::Array(tools).to_string(),
        )
        .unwrap();
    };
    write_tools("a.json", &["a.one", "a.two", "a.three"]);
    write_tools("b.json", &["b.one", "b.two"]);
    let policy = dir.path().join("policy.toml");
    let text = fs::read_to_string("policies/default.toml").unwrap();
    fs::write(&policy, &text).unwrap();
    let sources = Sources {
        policy: Some(policy.clone()),
        tags: None,
        tools: vec![dir.path().join("a.json"), dir.path().join("b.json")],
    };
    let mut options = ReloadOptions::new(sources.clone());
    options.settle = Some(Duration::ZERO);
    let r = Reloader::new(options).unwrap();
    let first = r.last_compile();
    assert_eq!(
        first.units_compiled, 2,
        "2 tool files, no tags (tools without tags are the tools alone): {first:?}"
    );
    let fresh = || toolgate::load::load_plan(&sources).unwrap();
    let same = |a: &Plan, b: &Plan| {
        let names = |p: &Plan| p.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(a), names(b));
        assert_eq!(a.content_hash, b.content_hash);
        assert_eq!(a.hysteresis_margin.to_bits(), b.hysteresis_margin.to_bits());
    };

    // A policy-only edit: nothing of the catalog is compiled again.
    fs::write(
        &policy,
        text.replace("hysteresis_margin = 0.0 ", "hysteresis_margin = 0.05 "),
    )
    .unwrap();
    r.reload_now().unwrap();
    let s = r.last_compile();
    assert!(s.catalog_reused, "{s:?}");
    assert_eq!(s.units_compiled, 0);
    assert!((r.plan().hysteresis_margin - 0.05).abs() < 1e-12);
    same(&r.plan(), &fresh());

    // One tool file edited: its tools only.
    write_tools("b.json", &["b.one", "b.two", "b.four"]);
    r.reload_now().unwrap();
    let s = r.last_compile();
    assert_eq!(
        (s.units_compiled, s.tools_compiled, s.units_reused),
        (1, 3, 1),
        "{s:?}"
    );
    assert!(r.plan().tool("b.four").is_some());
    same(&r.plan(), &fresh());
}

/// `policy_text(threshold)` with `[features.semantic_match] model = "model"`
/// (a folder beside the policy).
fn policy_with_model(threshold: &str) -> String {
    format!(
        "{}\n[features.semantic_match]\nmodel = \"model\"\nnormalization = \"best\"\n",
        policy_text(threshold)
    )
}

/// A FIFO (or a symlink to `/dev/zero`) among the model's files is refused at
/// the `model` key without blocking the reload thread or reading without end,
/// and a later good edit is still applied (attack report 2, item 8).
#[cfg(all(unix, feature = "semantic"))]
#[test]
fn a_fifo_or_dev_zero_model_file_is_refused_and_later_edits_still_apply() {
    let f = fixture();
    let model = f.root.join("model");
    fs::create_dir(&model).unwrap();
    let shipped = Path::new(MANIFEST).join("policies/models/minilm-static-128");
    for name in ["tokenizer.json", "model.safetensors", "config.json"] {
        fs::copy(shipped.join(name), model.join(name)).unwrap();
    }
    fs::write(&f.policy, policy_with_model("0.3")).unwrap();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    assert_eq!(r.plan().threshold, 0.3);
    let _w = r.watch().unwrap();
    let tokenizer = model.join("tokenizer.json");
    let saved = fs::read(&tokenizer).unwrap();
    // The `model = "model"` value: line of the key, column 9.
    let line = policy_with_model("0.3")
        .lines()
        .position(|l| l == "model = \"model\"")
        .unwrap()
        + 1;
    let at_key = format!("{}:{line}:9: ", f.policy.display());

    fs::remove_file(&tokenizer).unwrap();
    let c = std::ffi::CString::new(tokenizer.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    atomic_write(&f.policy, &policy_with_model("0.4"));
    wait_until("the FIFO is refused", || {
        r.status().last_error.is_some_and(|e| e.contains("a FIFO"))
    });
    let err = r.status().last_error.unwrap();
    assert!(err.starts_with(&at_key), "{err}");
    assert_eq!(r.plan().threshold, 0.3, "the last good plan keeps serving");

    fs::remove_file(&tokenizer).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &tokenizer).unwrap();
    atomic_write(&f.policy, &policy_with_model("0.45"));
    wait_until("/dev/zero is refused", || {
        r.status()
            .last_error
            .is_some_and(|e| e.contains("a character device"))
    });
    assert!(r.status().last_error.unwrap().starts_with(&at_key));
    assert_eq!(r.plan().threshold, 0.3);

    fs::remove_file(&tokenizer).unwrap();
    fs::write(&tokenizer, &saved).unwrap();
    atomic_write(&f.policy, &policy_with_model("0.5"));
    wait_threshold(&r, 0.5);
    assert!(r.status().last_error.is_none());
}

/// The policy file itself replaced by a FIFO: refused, not waited on; the
/// next real save is applied.
#[cfg(unix)]
#[test]
fn a_policy_replaced_by_a_fifo_is_refused_and_the_next_save_applies() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let _w = r.watch().unwrap();
    let fifo = f.root.join(".policy.fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    fs::rename(&fifo, &f.policy).unwrap();
    wait_until("the FIFO is refused", || {
        r.status().last_error.is_some_and(|e| e.contains("a FIFO"))
    });
    assert_eq!(r.plan().threshold, 0.3);
    atomic_write(&f.policy, &policy_text("0.5"));
    wait_threshold(&r, 0.5);
}

/// Issue 29: a broken tag file does not hide the compile problems of the
/// others; the reloader reports both kinds in one load.
#[test]
fn a_broken_tag_file_and_a_bad_domain_in_another_are_reported_at_once() {
    let f = fixture();
    fs::write(f.tags.join("broken.toml"), "[[tool]\nname = \"b\"\n").unwrap();
    let time = fs::read_to_string(f.tags.join("time.toml")).unwrap();
    let bad = time.replacen("domains = [", "domains = [\"time_travel\", ", 1);
    assert_ne!(bad, time, "the fixture's time tags declare domains");
    fs::write(f.tags.join("time.toml"), bad).unwrap();
    let e = Reloader::new(options(&f.policy, &f.tags)).unwrap_err();
    let msg = e.to_string();
    assert!(e.has(ErrorKind::Syntax), "{msg}");
    assert!(e.has(ErrorKind::UndeclaredDomain), "{msg}");
    assert!(msg.contains("broken.toml:1:"), "{msg}");
    assert!(msg.contains("time_travel"), "{msg}");
}

/// An emptied policy is rejected once per edit, not once per re-check
/// (the watcher re-reads unsettled content; the same bytes again are not a
/// new rejection), and a good edit after it still loads.
#[test]
fn an_emptied_file_is_rejected_once_not_on_every_recheck() {
    let f = fixture();
    let r = Reloader::new(options(&f.policy, &f.tags)).unwrap();
    let _w = r.watch().unwrap();
    fs::write(&f.policy, "").unwrap();
    wait_until("the empty policy is rejected", || {
        r.status().rejections >= 1
    });
    std::thread::sleep(Duration::from_millis(3000));
    assert_eq!(r.status().rejections, 1, "{:?}", r.status().last_error);
    fs::write(&f.policy, policy_text("0.5")).unwrap();
    wait_threshold(&r, 0.5);
}
