//! `toolgate check --fuzz N`: evaluate N random sessions under a policy and
//! report every breach of its declared bounds (feature `proptest`).
//!
//! Checked for every tool of every evaluation: the score lies within the clamp
//! bounds and is not NaN; the term contributions add up to the raw score;
//! the active set respects `min_active` (when the catalog is large enough),
//! `max_active` and the pinned tools.
//!
//! The random sessions come from [`strategies`], which Rust users can also
//! use for their own properties (re-exported as `toolgate::strategies`).
//! [`properties`] checks the policy's declared `[[properties]]`: statically
//! from the score bounds where it can, otherwise by a proptest search, each
//! counterexample a ready `toolgate eval --input` object.

pub mod properties;
pub mod strategies;

use std::sync::Arc;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::eval::Reason;
use crate::plan::Plan;

/// One breach found by the fuzzer.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Violation {
    /// Which sample (0-based).
    pub sample: usize,
    /// The tool, if the breach concerns one.
    pub tool: Option<String>,
    /// What was wrong.
    pub message: String,
    /// The context, as JSON, to reproduce it with `toolgate eval`.
    pub context: serde_json::Value,
}

/// The most random sessions one `check --fuzz N` evaluates: 1,000,000
/// (each evaluates every tool of the catalog, so a run's time grows with
/// both; `check` prints its progress on long runs). For more, run several
/// checks with different `--seed` values.
pub const MAX_FUZZ_SAMPLES: usize = 1_000_000;

/// Runs `samples` random evaluations with RNG seed `seed`; returns the breaches.
pub fn fuzz(plan: &Arc<Plan>, samples: usize, seed: u64) -> Vec<Violation> {
    fuzz_with_progress(plan, samples, seed, &mut |_| {})
}

/// [`fuzz`], calling `progress` with the number of sessions evaluated so
/// far after each one (the caller decides when to report; the library
/// prints nothing).
pub fn fuzz_with_progress(
    plan: &Arc<Plan>,
    samples: usize,
    seed: u64,
    progress: &mut dyn FnMut(usize),
) -> Vec<Violation> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = strategies::session(plan);
    let (lo, hi) = plan.clamp;
    let mut out = Vec::new();
    for sample in 0..samples {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        let (ctx, usage, now) = tree.current();
        let act = plan.evaluate(&ctx, &usage, now);
        let mut push = |tool: Option<&str>, message: String| {
            out.push(Violation {
                sample,
                tool: tool.map(String::from),
                message,
                context: serde_json::to_value(&ctx).unwrap_or_default(),
            })
        };
        for t in &act.tools {
            let name = plan.tools[t.tool].name.as_str();
            if t.raw_score.is_nan() || t.reason == Reason::InvalidScore {
                push(Some(name), "the formula gave NaN".into());
                continue;
            }
            if !(lo..=hi).contains(&t.score) {
                push(
                    Some(name),
                    format!("score {} outside the clamp bounds [{lo}, {hi}]", t.score),
                );
            }
            let sum: f64 = act
                .explain(t.tool)
                .iter()
                .map(|e| e.contribution)
                .fold(None, |acc: Option<f64>, c| Some(acc.map_or(c, |a| a + c)))
                .unwrap_or(0.0);
            if sum.to_bits() != t.raw_score.to_bits() && !(sum.is_nan() && t.raw_score.is_nan()) {
                push(
                    Some(name),
                    format!(
                        "term contributions add up to {sum}, not the raw score {}",
                        t.raw_score
                    ),
                );
            }
        }
        let active = act.tools.iter().filter(|t| t.active).count();
        let valid = act
            .tools
            .iter()
            .filter(|t| t.reason != Reason::InvalidScore)
            .count();
        if active < plan.min_active.min(valid) {
            push(
                None,
                format!(
                    "{active} active tools, below min_active {}",
                    plan.min_active
                ),
            );
        }
        if let Some(k) = plan.max_active
            && active > k
        {
            push(None, format!("{active} active tools, above max_active {k}"));
        }
        for &p in &plan.pinned {
            if !act.tools[p].active {
                push(
                    Some(&plan.tools[p].name),
                    "pinned tool is not active".into(),
                );
            }
        }
        progress(sample + 1);
    }
    out
}
