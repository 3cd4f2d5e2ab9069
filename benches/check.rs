//! `toolgate check` on a 1,000-tool catalog with five declared properties
//! (issue target: ≤ 2 s): compile (with the load-time findings), the policy's
//! score bounds with their witnesses, the catalog's bounds, and the five
//! properties: two proven statically, two refuted statically, and one the
//! bounds cannot decide, which holds, so its search runs all 256 sessions
//! (the slowest case: a failing search stops at its first counterexample).
//!
//! The bench also writes the policy and the catalog to
//! `target/check-bench/` so that the release binary can be timed on the
//! same input (`toolgate check --policy target/check-bench/policy.toml
//! --tags target/check-bench/tags`); docs/performance.md has the figures.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate::compile::compile;
use toolgate::compile::witness::{CatalogBounds, score_bounds};
use toolgate::diag::SourceFile;
use toolgate::fuzz::properties::{CheckOptions, check_properties};
use toolgate::parse::policy::parse_policy;
use toolgate::parse::tags::parse_tag_file;

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
const KW: [&str; 24] = [
    "query", "select", "database", "sql", "table", "api", "http", "request", "fetch", "run",
    "execute", "command", "script", "build", "test", "read", "write", "file", "search", "web",
    "email", "time", "git", "memory",
];

/// xorshift64*: deterministic tags without an RNG dependency.
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
    let q = |v: Vec<&str>| {
        v.iter()
            .map(|x| format!("\"{x}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for i in 0..n {
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

/// The shipped default policy with its own properties replaced by five.
fn policy_text() -> String {
    let default = std::fs::read_to_string("policies/default.toml").unwrap();
    let cut = default
        .find("# Declared properties")
        .and_then(|i| default[..i].rfind("# ====="))
        .unwrap_or(default.len());
    format!(
        "{}{}",
        &default[..cut],
        r#"
[[properties]]
name = "raw scores stay within [0, 1.15]"
raw_score_within = [0.0, 1.15]

[[properties]]
name = "a stage hit never lowers a score"
monotone = { feature = "stage_match", direction = "increasing" }

[[properties]]
name = "tool_7 is always available"
always_active = ["tool_7"]

[[properties]]
name = "tool_8 never shows"
never_active = ["tool_8"]

[[properties]]
name = "never every tool at once"
active_count_within = [0, 999]
"#
    )
}

fn check_1000(c: &mut Criterion) {
    let policy_text = policy_text();
    let tags = tag_file(1_000, 42);
    let dir = std::path::Path::new("target/check-bench");
    let _ = std::fs::create_dir_all(dir.join("tags"));
    let _ = std::fs::write(dir.join("policy.toml"), &policy_text);
    let _ = std::fs::write(dir.join("tags/bench.toml"), &tags);
    let mut g = c.benchmark_group("check");
    g.sample_size(10);
    g.bench_function("1000_tools_5_properties", |b| {
        b.iter(|| {
            let policy = parse_policy(SourceFile::new("p.toml", policy_text.as_str())).unwrap();
            let tools = parse_tag_file(SourceFile::new("t.toml", tags.as_str())).unwrap();
            let plan = Arc::new(compile(&policy, tools).unwrap());
            let bounds = score_bounds(&policy, &plan);
            let catalog = CatalogBounds::of(&plan);
            let reports = check_properties(&policy, &plan, &catalog, CheckOptions::default());
            assert_eq!(reports.len(), 5);
            black_box((bounds, reports))
        })
    });
    g.finish();
}

/// What the load-time findings add to every compile (the bounds of the
/// default policy: 6 rules, 64 combinations, 128 corners).
fn findings(c: &mut Criterion) {
    let policy_text = policy_text();
    let policy = parse_policy(SourceFile::new("p.toml", policy_text.as_str())).unwrap();
    let tools = parse_tag_file(SourceFile::new("t.toml", tag_file(1_000, 42).as_str())).unwrap();
    let plan = compile(&policy, tools).unwrap();
    c.bench_function("findings/default_policy", |b| {
        b.iter(|| black_box(toolgate::compile::findings::findings(&policy, &plan)))
    });
}

criterion_group!(benches, check_1000, findings);
criterion_main!(benches);
