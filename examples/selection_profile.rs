//! Where a new user message's time goes under
//! `policies/selection-transformer.toml` on the Seal-Tools catalog (4,076
//! tools): issue 24's 30 ms budget (`benches/selection_embed.rs`,
//! `new_message/transformer/4076`), split into its parts outside criterion.
//!
//! For each of `N` Seal-Tools requests (default 60, taken in trace order),
//! it times, on the wall clock and in CPU time of the whole process (all
//! threads, candle's workers included, from `/proc/self/task/*/schedstat`):
//!
//! * `tokenize`: the request through the model's `tokenizer.json`
//!   (Hugging Face `tokenizers`, as the bi-encoder runs it), with its token
//!   count (the real tokens: the file pads to 128, the encoder does not);
//! * `forward`: the bi-encoder's encoding of the request
//!   (`BiEncoder::encode`: tokenization, candle's BERT forward pass, mean
//!   pooling), the model loaded a second time, apart from the plan's;
//! * `fill`: the argument-fill gate (`[features.argument_fill]`): the request
//!   read once, then every tool's required parameters tested;
//! * `evaluate_no_forward`: `Plan::evaluate` of the request when its vector
//!   is already in the encoder's memo (so no forward pass), but not the
//!   semantic values (one fixed other request was scored in between): keywords,
//!   BM25, one dot product per tool, the fill gate, scores, the set;
//! * `evaluate`: `Plan::evaluate` of a request seen for the first time, as
//!   the bench's `new_message` case does.
//!
//! Medians over the `N` requests are printed, one line per part. The CPU
//! time is read from the scheduler's counters, which move at scheduling
//! events: parts well under a millisecond read as 0 there. Run it
//! from the repository root, with the model installed
//! (`scripts/install-minilm`):
//!
//! ```sh
//! cargo build --release --features embed --example selection_profile
//! target/release/examples/selection_profile 60
//! ```
//!
//! The catalog and trace are `../shared/data/seal-tools/` (or
//! `TOOLGATE_SEAL_DIR`); the embedding cache is the user's
//! (`embed::cache::cache_dir`), filled on the first run.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use toolgate::compile::compile;
use toolgate::embed::{BiEncoder, EncoderFiles};
use toolgate::load::load_policy;
use toolgate::parse::tags::import_tools_json;
use toolgate::{SessionContext, UsageStats};

fn seal_dir() -> PathBuf {
    std::env::var_os("TOOLGATE_SEAL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/seal-tools"))
}

/// CPU time of this process so far, in nanoseconds (the sum over its
/// threads), or 0 where `/proc` cannot be read.
fn cpu_ns() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("schedstat")).ok())
        .filter_map(|t| t.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Wall and CPU milliseconds of `f`, and its result.
fn timed<R>(f: impl FnOnce() -> R) -> (f64, f64, R) {
    let (c0, t0) = (cpu_ns(), Instant::now());
    let r = f();
    let wall = t0.elapsed().as_secs_f64() * 1e3;
    (wall, (cpu_ns().saturating_sub(c0)) as f64 / 1e6, r)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

fn main() {
    // candle's thread counts as the `toolgate` binary sets them (values in
    // the environment are kept). SAFETY: no other thread runs yet.
    unsafe { toolgate::embed::set_thread_env() };
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let dir = seal_dir();
    let catalog = dir.join("catalog.json");
    let text = std::fs::read_to_string(&catalog).expect("the Seal-Tools catalog");
    let tools = import_tools_json(&catalog.display().to_string(), &text).expect("catalog");
    let trace = std::fs::read_to_string(dir.join("trace-in-domain.jsonl")).expect("trace");
    let msgs: Vec<String> = trace
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "user_message")
        .filter_map(|v| v["text"].as_str().map(String::from))
        .collect();
    let mut policy =
        load_policy(Some(Path::new("policies/selection-transformer.toml"))).expect("policy");
    policy.examples.clear();
    let plan = Arc::new(compile(&policy, tools).expect("plan"));
    let model_dir = Path::new("policies/models/all-MiniLM-L6-v2");
    let read = |f: &str| std::fs::read(model_dir.join(f)).expect("model file");
    let (config, tok_bytes, weights) = (
        read("config.json"),
        read("tokenizer.json"),
        read("model.safetensors"),
    );
    let encoder = BiEncoder::load(EncoderFiles {
        dir: "all-MiniLM-L6-v2",
        config: &config,
        tokenizer: &tok_bytes,
        model: &weights,
    })
    .expect("the model loads");
    let tokenizer = tokenizers::Tokenizer::from_bytes(&tok_bytes).expect("tokenizer");
    let context = |m: &str| SessionContext {
        user_intent_keywords: plan.analyzer.extract(m),
        user_message: Some(m.to_string()),
        ..Default::default()
    };
    let usage = UsageStats::default();
    let af = plan.argument_fill.clone();
    let between = context("an unrelated request to reset the last-request cache");
    // warm up: the first forward pass allocates candle's buffers and pool
    encoder.encode(&["warm up the model"]);
    plan.evaluate(&context("warm up the plan"), &usage, 0.0);
    let mut parts: Vec<(&str, Vec<f64>, Vec<f64>)> = [
        "tokenize",
        "forward",
        "fill",
        "evaluate_no_forward",
        "evaluate",
    ]
    .iter()
    .map(|p| (*p, Vec::new(), Vec::new()))
    .collect();
    let mut tokens = Vec::new();
    for k in 0..n {
        let m = &msgs[k % msgs.len()];
        let (w, c, enc) = timed(|| tokenizer.encode(m.as_str(), true).expect("tokenizes"));
        // the real tokens (tokenizer.json pads to 128; the encoder does not)
        tokens.push(enc.get_attention_mask().iter().sum::<u32>() as f64);
        parts[0].1.push(w);
        parts[0].2.push(c);
        let (w, c, _) = timed(|| encoder.encode(&[m.as_str()]));
        parts[1].1.push(w);
        parts[1].2.push(c);
        if let Some(af) = &af {
            let (w, c, _) = timed(|| {
                let req = af.request(m);
                (0..plan.tools.len())
                    .filter(|&i| af.passes(&req, i))
                    .count()
            });
            parts[2].1.push(w);
            parts[2].2.push(c);
        }
        // new: the forward pass included
        let ctx = context(m);
        let (w, c, _) = timed(|| plan.evaluate(&ctx, &usage, 0.0));
        parts[4].1.push(w);
        parts[4].2.push(c);
        // another request in between (always the same one, so that no
        // request of the loop gets into the encoder's memo early), then
        // this one again: its vector from the memo, its semantic values
        // computed again
        plan.evaluate(&between, &usage, 0.0);
        let (w, c, _) = timed(|| plan.evaluate(&ctx, &usage, 0.0));
        parts[3].1.push(w);
        parts[3].2.push(c);
    }
    println!(
        "{} requests, {} tools, median {} tokens (load {})",
        n,
        plan.tools.len(),
        median(&mut tokens),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!("{:<22} {:>10} {:>10}", "part", "wall ms", "CPU ms");
    for (name, wall, cpu) in &mut parts {
        if wall.is_empty() {
            continue;
        }
        println!("{name:<22} {:>10.3} {:>10.3}", median(wall), median(cpu));
    }
}
