//! Full evaluation of 50, 1,000 and 10,000 tools, and compiling a policy with
//! 1,000 tool tags (issue targets: 50 tools ≤ 2 µs, 10,000 ≤ 0.5 ms, compile ≤ 50 ms).
//! Tools get random tags over the seed's vocabulary (as `shared/reference/bench_seed.py`
//! draws them); a third of them have been used.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use toolgate::compile::compile;
use toolgate::diag::SourceFile;
use toolgate::load::load_policy;
use toolgate::parse::tags::parse_tag_file;
use toolgate::{Plan, SessionContext, UsageStats};

const DOMAINS: [&str; 7] = [
    "file_operation",
    "code_generation",
    "database",
    "network",
    "shell_execution",
    "data_analysis",
    "documentation",
];
const STAGES: [&str; 4] = [
    "exploration",
    "implementation",
    "debugging",
    "documentation",
];
const KW: [&str; 40] = [
    "query",
    "select",
    "insert",
    "database",
    "sql",
    "table",
    "migration",
    "api",
    "http",
    "request",
    "fetch",
    "endpoint",
    "curl",
    "rest",
    "run",
    "execute",
    "command",
    "script",
    "build",
    "deploy",
    "test",
    "read",
    "write",
    "file",
    "open",
    "load",
    "search",
    "web",
    "email",
    "send",
    "time",
    "date",
    "calculate",
    "math",
    "git",
    "commit",
    "diff",
    "log",
    "memory",
    "graph",
];

/// xorshift64*: deterministic tags without an RNG dependency in the bench.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn sample<'a>(&mut self, from: &[&'a str], k: usize) -> Vec<&'a str> {
        let mut v: Vec<&str> = from.to_vec();
        for i in 0..k.min(v.len()) {
            let j = i + self.below(v.len() - i);
            v.swap(i, j);
        }
        v.truncate(k);
        v
    }
}

fn tag_file(n: usize, seed: u64) -> String {
    let mut r = Rng(seed);
    let mut s = String::new();
    for i in 0..n {
        let q = |v: Vec<&str>| {
            v.iter()
                .map(|x| format!("\"{x}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (nd, ns, nk) = (r.below(4), r.below(4), r.below(7));
        s += &format!(
            "[[tool]]\nname = \"tool_{i}\"\ndescription = \"synthetic tool {i}\"\ndomains = [{}]\npreferred_stages = [{}]\ntrigger_keywords = [{}]\nbase_priority = {}\nparameter_complexity = {}\n\n",
            q(r.sample(&DOMAINS, nd)),
            q(r.sample(&STAGES, ns)),
            q(r.sample(&KW, nk)),
            r.below(1000) as f64 / 1000.0,
            1 + r.below(5)
        );
    }
    s
}

fn plan(n: usize) -> Arc<Plan> {
    let policy = load_policy(None).unwrap();
    let tools = parse_tag_file(SourceFile::new("bench.toml", tag_file(n, 42))).unwrap();
    Arc::new(compile(&policy, tools).unwrap())
}

fn session(n: usize) -> (SessionContext, UsageStats) {
    let mut r = Rng(7);
    let ctx = SessionContext {
        user_intent_keywords: r.sample(&KW, 5).into_iter().map(String::from).collect(),
        conversation_stage: Some("debugging".into()),
        recent_tool_calls: (0..5).map(|_| format!("tool_{}", r.below(n))).collect(),
        session_duration_seconds: 1800.0,
        active_language: Some("python".into()),
        project_type: Some("web".into()),
        ..Default::default()
    };
    let mut usage = UsageStats::default();
    for i in (0..n).step_by(3) {
        usage
            .call_counts
            .insert(format!("tool_{i}"), 1 + r.below(20) as u64);
        usage
            .last_call_at
            .insert(format!("tool_{i}"), -(r.below(900) as f64));
    }
    (ctx, usage)
}

fn evaluate(c: &mut Criterion) {
    let mut g = c.benchmark_group("evaluate");
    for n in [50usize, 1_000, 10_000] {
        let p = plan(n);
        let (ctx, usage) = session(n);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| black_box(p.evaluate(black_box(&ctx), black_box(&usage), 0.0)))
        });
    }
    g.finish();
}

fn compile_1000(c: &mut Criterion) {
    let policy_text = std::fs::read_to_string("policies/default.toml").unwrap();
    let tags = tag_file(1_000, 42);
    c.bench_function("compile/1000_tool_tags", |b| {
        b.iter(|| {
            let policy = toolgate::parse::policy::parse_policy(SourceFile::new(
                "p.toml",
                policy_text.as_str(),
            ))
            .unwrap();
            let tools = parse_tag_file(SourceFile::new("t.toml", tags.as_str())).unwrap();
            black_box(compile(&policy, tools).unwrap())
        })
    });
}

criterion_group!(benches, evaluate, compile_1000);
criterion_main!(benches);
