//! Hot-reload benchmarks (`cargo bench --bench reload`).
//!
//! - `rename_to_serving/debounce_{N}ms`: time from the rename of a new policy
//!   file over the watched one to the new plan being served (watcher, debounce,
//!   settle, parse, compile, swap), with the watcher's debounce at N ms.
//! - `eval/idle` and `eval/while_reloading`: one evaluation (plan load +
//!   `Plan::evaluate`) without reloads, and while another thread reloads
//!   back to back, alternating two policies.
//!
//! Besides criterion's report, each group prints the median (and p90) of the
//! individual measurements on stderr; `docs/performance.md` records them.

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate::load::Sources;
use toolgate::reload::{ReloadOptions, Reloader};
use toolgate::{SessionContext, UsageStats};

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn policy_text(threshold: &str) -> String {
    let text = fs::read_to_string(Path::new(MANIFEST).join("policies/default.toml")).unwrap();
    text.replacen(
        "\nthreshold = 0.4 ",
        &format!("\nthreshold = {threshold} "),
        1,
    )
}

/// A temp dir with `policy.toml` and a copy of every shipped tag file.
fn fixture() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let tags = root.join("tags");
    fs::create_dir(&tags).unwrap();
    for e in fs::read_dir(Path::new(MANIFEST).join("tool-tags")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            fs::copy(&p, tags.join(p.file_name().unwrap())).unwrap();
        }
    }
    let policy = root.join("policy.toml");
    fs::write(&policy, policy_text("0.4")).unwrap();
    (dir, policy, tags)
}

fn atomic_write(path: &Path, text: &str) {
    let tmp = path.with_file_name(".policy.toml.tmp");
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, path).unwrap();
}

fn context() -> (SessionContext, UsageStats) {
    let ctx = SessionContext {
        user_intent_keywords: vec![
            "select".into(),
            "rows".into(),
            "users".into(),
            "table".into(),
        ],
        conversation_stage: Some("exploration".into()),
        active_language: Some("sql".into()),
        recent_tool_calls: vec!["sqlite.list_tables".into()],
        ..Default::default()
    };
    let mut usage = UsageStats::default();
    usage.call_counts.insert("sqlite.read_query".into(), 6);
    (ctx, usage)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn rename_to_serving(c: &mut Criterion) {
    let mut group = c.benchmark_group("rename_to_serving");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for debounce_ms in [100u64, 50, 20] {
        let (_dir, policy, tags) = fixture();
        let mut o = ReloadOptions::new(Sources {
            policy: Some(policy.clone()),
            tags: Some(tags),
            tools: vec![],
        });
        o.debounce = Some(Duration::from_millis(debounce_ms));
        let r = Reloader::new(o).unwrap();
        let _watch = r.watch().unwrap();
        let texts = [policy_text("0.35"), policy_text("0.5")];
        let mut k = 0;
        let mut samples: Vec<f64> = Vec::new();
        group.bench_function(format!("debounce_{debounce_ms}ms"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    k += 1;
                    let before = r.plan().content_hash;
                    let tmp = policy.with_file_name(".policy.toml.tmp");
                    fs::write(&tmp, &texts[k % 2]).unwrap();
                    let start = Instant::now();
                    fs::rename(&tmp, &policy).unwrap();
                    while r.plan().content_hash == before {
                        assert!(start.elapsed() < Duration::from_secs(10), "no reload");
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    let d = start.elapsed();
                    samples.push(d.as_secs_f64() * 1e3);
                    total += d;
                }
                total
            })
        });
        if samples.is_empty() {
            continue; // filtered out
        }
        let median = percentile(&mut samples, 0.5);
        let p90 = percentile(&mut samples, 0.9);
        eprintln!(
            "rename_to_serving debounce={debounce_ms}ms: median {median:.1} ms, p90 {p90:.1} ms over {} renames",
            samples.len()
        );
    }
    group.finish();
}

fn eval_throughput(c: &mut Criterion) {
    let (_dir, policy, tags) = fixture();
    let mut o = ReloadOptions::new(Sources {
        policy: Some(policy.clone()),
        tags: Some(tags),
        tools: vec![],
    });
    o.settle = Some(Duration::ZERO);
    o.max_reads = 2;
    let r = Reloader::new(o).unwrap();
    let (ctx, usage) = context();
    let mut group = c.benchmark_group("eval");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("idle", |b| {
        b.iter(|| black_box(r.plan().evaluate(&ctx, &usage, 0.0)))
    });

    let stop = Arc::new(AtomicBool::new(false));
    let reloads = Arc::new(AtomicU64::new(0));
    let reloader = {
        let (r, stop, reloads, policy) = (r.clone(), stop.clone(), reloads.clone(), policy.clone());
        std::thread::spawn(move || {
            let texts = [policy_text("0.35"), policy_text("0.5")];
            let mut k = 0;
            while !stop.load(Ordering::Relaxed) {
                k += 1;
                atomic_write(&policy, &texts[k % 2]);
                r.reload_now().expect("valid policy");
                reloads.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let started = Instant::now();
    group.bench_function("while_reloading", |b| {
        b.iter(|| black_box(r.plan().evaluate(&ctx, &usage, 0.0)))
    });
    let n = reloads.load(Ordering::Relaxed);
    let secs = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    reloader.join().unwrap();
    group.finish();
    eprintln!(
        "while_reloading: {n} reloads in {secs:.1} s ({:.0} reloads/s)",
        n as f64 / secs
    );

    ratio(&r, &ctx, &usage);
}

/// CPU time consumed by the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[derive(Clone, Copy, PartialEq)]
enum Load {
    Idle,
    /// Continuous editing: a writer renames a new policy over the watched one
    /// as soon as the previous one is served; the watcher reloads each.
    Watcher,
    /// Another thread reloads back to back (`reload_now` in a loop).
    BackToBack,
}

/// Evaluations per wall-clock second and per CPU second of the evaluating
/// thread in one window under `load`, and the reloads done meanwhile.
fn window(
    r: &Reloader,
    ctx: &SessionContext,
    usage: &UsageStats,
    load: Load,
    d: Duration,
) -> (f64, f64, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let reloads_before = r.status().loads;
    let policy = r.sources().policy.clone().unwrap();
    let _watch = (load == Load::Watcher).then(|| r.watch().unwrap());
    let background = (load != Load::Idle).then(|| {
        let (r, stop) = (r.clone(), stop.clone());
        std::thread::spawn(move || {
            let texts = [policy_text("0.35"), policy_text("0.5")];
            while !stop.load(Ordering::Relaxed) {
                // always the other policy than the one served
                let k = usize::from(r.plan().threshold != 0.5);
                let before = r.plan().content_hash;
                atomic_write(&policy, &texts[k]);
                if load == Load::BackToBack {
                    r.reload_now().expect("valid policy");
                } else {
                    while r.plan().content_hash == before && !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
        })
    });
    let (start, cpu0) = (Instant::now(), thread_cpu());
    let mut n = 0u64;
    while start.elapsed() < d {
        for _ in 0..100 {
            black_box(r.plan().evaluate(ctx, usage, 0.0));
        }
        n += 100;
    }
    let (wall, cpu) = (start.elapsed(), thread_cpu() - cpu0);
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = background {
        t.join().unwrap();
    }
    let reloads = r.status().loads - reloads_before;
    (
        n as f64 / wall.as_secs_f64(),
        n as f64 / cpu.as_secs_f64(),
        reloads,
    )
}

/// Alternates idle and loaded windows so that machine noise hits all alike,
/// and prints the medians and ratios.
fn ratio(r: &Reloader, ctx: &SessionContext, usage: &UsageStats) {
    let with_debounce = |ms: u64| {
        let mut o = ReloadOptions::new(r.sources().clone());
        o.debounce = Some(Duration::from_millis(ms));
        Reloader::new(o).unwrap()
    };
    let cases = [
        ("idle", Load::Idle, r.clone()),
        (
            "watcher, debounce 100 ms",
            Load::Watcher,
            with_debounce(100),
        ),
        ("watcher, debounce 20 ms", Load::Watcher, with_debounce(20)),
        ("back-to-back reload_now", Load::BackToBack, r.clone()),
    ];
    let d = Duration::from_secs(1);
    let rounds = 7;
    let mut wall: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut reloads = vec![0u64; cases.len()];
    for _ in 0..rounds {
        for (i, (_, load, r)) in cases.iter().enumerate() {
            let (w, c, n) = window(r, ctx, usage, *load, d);
            wall[i].push(w);
            cpu[i].push(c);
            reloads[i] += n;
        }
    }
    let (wi, ci) = (percentile(&mut wall[0], 0.5), percentile(&mut cpu[0], 0.5));
    eprintln!("eval throughput, idle: {wi:.0}/s wall, {ci:.0}/s per CPU second");
    for (i, (name, _, _)) in cases.iter().enumerate().skip(1) {
        let (w, c) = (percentile(&mut wall[i], 0.5), percentile(&mut cpu[i], 0.5));
        eprintln!(
            "eval throughput, {name} ({:.0} reloads/s): {w:.0}/s wall ({:.1}% of idle), {c:.0}/s per CPU second ({:.1}% of idle)",
            reloads[i] as f64 / (rounds as f64 * d.as_secs_f64()),
            100.0 * w / wi,
            100.0 * c / ci
        );
    }
}

criterion_group!(benches, rename_to_serving, eval_throughput);
criterion_main!(benches);
