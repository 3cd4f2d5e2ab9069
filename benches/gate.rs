//! The call gate's speed (issue targets): a full check of a 200-byte shell
//! command with schema validation ≤ 20 µs median; a call with no shell, SQL
//! or path argument ≤ 2 µs; regex scanning ≥ 200 MB/s of argument text.
//! Figures are recorded in docs/performance.md ("Call gate").

use std::hint::black_box;
use std::sync::Arc;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use toolgate::gate::{PatternScope, PatternSet, check_call, config::shipped};
use toolgate::load::{Sources, load_plan};

#[path = "common/shell_line.rs"]
mod shell_line;
use shell_line::command_200;

/// Argument text for the regex scan: prose, code and logs, no match.
fn scan_text(bytes: usize) -> String {
    let chunk = "The deployment finished in 42 seconds; see logs/build-2024-05-01.txt for details. \
fn main() { let x = vec![1, 2, 3]; println!(\"{:?}\", x); } \
INFO request id=7f3a latency_ms=12 path=/api/v1/items status=200 \
Bitte prüfen Sie die Konfiguration unter /srv/app/config.yaml. 数据库连接正常。\n";
    let mut s = String::with_capacity(bytes + chunk.len());
    while s.len() < bytes {
        s.push_str(chunk);
    }
    s
}

/// Thread CPU time (`CLOCK_THREAD_CPUTIME_ID`): on a shared machine, wall
/// time also counts the time other processes hold the CPU; CPU time does
/// not. Both are reported.
struct CpuTime;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, i: u64) -> u64 {
        thread_cpu_ns().saturating_sub(i)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        WallTime.formatter()
    }
}

fn gate<M: Measurement + 'static>(c: &mut Criterion<M>, clock: &str) {
    let plan = Arc::new(load_plan(&Sources::default()).unwrap());
    let cmd = command_200();
    assert_eq!(cmd.len(), 200);
    let shell_args = json!({ "command": cmd });
    let v = check_call(&plan, "shell.run_command", shell_args.clone());
    assert_eq!(v.decision, toolgate::gate::Action::Allow, "{}", v.message);
    c.bench_function(
        &format!("gate/{clock}/full check, 200-byte shell command"),
        |b| b.iter(|| check_call(&plan, "shell.run_command", black_box(shell_args.clone()))),
    );

    let cfg = shipped();
    c.bench_function(
        &format!("gate/{clock}/shell analyzer alone, 200-byte command"),
        |b| {
            b.iter(|| {
                toolgate::gate::analyze_shell(
                    &cfg.shell,
                    &cfg.paths,
                    "/command",
                    toolgate::gate::ShellInput::Line(black_box(&cmd)),
                )
            })
        },
    );
    c.bench_function(
        &format!("gate/{clock}/shell analyzer alone, `git status`"),
        |b| {
            b.iter(|| {
                toolgate::gate::analyze_shell(
                    &cfg.shell,
                    &cfg.paths,
                    "/command",
                    toolgate::gate::ShellInput::Line(black_box("git status")),
                )
            })
        },
    );

    let plain = json!({
        "source_timezone": "Europe/Berlin",
        "time": "16:30",
        "target_timezone": "Asia/Tokyo"
    });
    let v = check_call(&plan, "time.convert_time", plain.clone());
    assert_eq!(v.decision, toolgate::gate::Action::Allow, "{}", v.message);
    c.bench_function(
        &format!("gate/{clock}/full check, no shell/SQL/path argument"),
        |b| b.iter(|| check_call(&plan, "time.convert_time", black_box(plain.clone()))),
    );

    let sql = json!({ "query": "SELECT id, name, email FROM users WHERE created_at > '2024-01-01' AND status = 'active' ORDER BY id LIMIT 50" });
    c.bench_function(&format!("gate/{clock}/full check, SQL read query"), |b| {
        b.iter(|| check_call(&plan, "sqlite.read_query", black_box(sql.clone())))
    });

    let coerce = json!({ "path": "README.md", "head": "20" });
    c.bench_function(
        &format!("gate/{clock}/full check, path argument with coercion"),
        |b| {
            b.iter(|| {
                check_call(
                    &plan,
                    "filesystem.read_text_file",
                    black_box(coerce.clone()),
                )
            })
        },
    );

    // Pydantic-style optional parameters (`anyOf: [T, null]`), sent as
    // strings: each union's branches are tried with their validators.
    let mut tools = toolgate::load::load_catalog(&Sources::default()).unwrap();
    let opt: toolgate::parse::tags::InlineTool = serde_json::from_value(json!({
        "name": "bench.optional",
        "input_schema": {"type": "object", "properties": {
            "query": {"type": "string"},
            "limit": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": null},
            "offset": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null},
            "exact": {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": null},
            "since": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}
        }, "required": ["query"]}
    }))
    .unwrap();
    tools.push(opt.into_spec());
    let plan2 = Arc::new(
        toolgate::compile::compile(&toolgate::load::load_policy(None).unwrap(), tools).unwrap(),
    );
    let optional = json!({"query": "error budget", "limit": "20", "offset": "40", "exact": "true", "since": "2024-01-01"});
    let v = check_call(&plan2, "bench.optional", optional.clone());
    assert_eq!(v.decision, toolgate::gate::Action::Allow, "{}", v.message);
    assert_eq!(v.coercions.len(), 3);
    c.bench_function(
        &format!("gate/{clock}/full check, optional parameters anyOf [T, null] with coercion"),
        |b| b.iter(|| check_call(&plan2, "bench.optional", black_box(optional.clone()))),
    );

    let set = PatternSet::compile(&shipped().patterns).unwrap();
    let text = scan_text(1 << 20);
    assert!(set.scan_as(PatternScope::Text, "/t", &text).is_empty());
    let mut g = c.benchmark_group(format!("gate/{clock}/regex scan"));
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("1 MiB of argument text, seed patterns", |b| {
        b.iter(|| set.scan_as(PatternScope::Text, "/t", black_box(&text)))
    });
    g.finish();
}

fn gate_wall(c: &mut Criterion) {
    gate(c, "wall");
}

fn gate_cpu(c: &mut Criterion<CpuTime>) {
    gate(c, "cpu");
}

criterion_group!(wall, gate_wall);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(CpuTime);
    targets = gate_cpu
}
criterion_main!(wall, cpu);
