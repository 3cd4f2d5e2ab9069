//! The absolute evidence a "nothing fits" gate could read, per BFCL
//! question and candidate (`questions.jsonl` of `toolgate import bfcl`):
//! for each question, the policy is compiled over its own candidates (as
//! `replay::questions::judge` does) and each candidate gets
//!
//! * `cos_message`: the raw cosine (not divided by the best tool's) between
//!   the question's user message text and the tool's text
//!   (`text::semantic::tool_text`: name, description, parameter names),
//!   with the policy's `[features.semantic_match]` model;
//! * `cos_keywords`: the same with the message's intent keywords joined by
//!   spaces (what `semantic_match` read before `input = "message"`);
//! * `bm25_idf`: the raw BM25 score in units of `idf₁` (the unit of
//!   `min_score_idf`);
//! * `coverage`: the IDF-weighted share of the request's known terms the
//!   tool contains (`min_coverage`), and `coverage_all` with the unknown
//!   terms counted at `idf₁` (`query_terms = "all"`).
//!
//! One JSON line per question on standard output: `id`, `set`, `holdout`
//! (`toolgate fit`'s session-id hash at the given fraction; "A" = false
//! tunes, "B" = true is held out), `expected`, and `tools` (one object per
//! candidate with the fields above and `name`). `scripts/bfcl-gate-roc.py`
//! turns it into ROC points.
//!
//! ```sh
//! cargo build --features embed --example bfcl_gate_roc
//! target/debug/examples/bfcl_gate_roc /tmp/bfcl/questions.jsonl \
//!     policies/selection-transformer.toml [HELD_OUT_FRACTION] > /tmp/bfcl/evidence.jsonl
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use toolgate::compile::compile;
use toolgate::parse::tags::import_tools_json;
use toolgate::replay::fit::is_holdout;
use toolgate::replay::questions::parse_questions;

/// The unit vector of `text` under the plan's semantic model (empty when
/// the text has no known token).
fn unit(model: &toolgate::text::semantic::SemanticModel, text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; model.dim()];
    model.add_embedding(text, 1.0, &mut v);
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 1e-12 && n.is_finite() {
        v.iter_mut().for_each(|x| *x /= n);
        v
    } else {
        Vec::new()
    }
}

fn cosine(v: &[f32], row: &[i8], scale: f32) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.iter()
        .zip(row)
        .map(|(a, &b)| *a as f64 * b as f64)
        .sum::<f64>()
        * scale as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: bfcl_gate_roc QUESTIONS POLICY [HELD_OUT_FRACTION]";
    let qpath = PathBuf::from(args.next().expect(usage));
    let ppath = PathBuf::from(args.next().expect(usage));
    let fraction: f64 = args.next().map_or(0.5, |f| f.parse().expect("a fraction"));
    let qs =
        parse_questions(&std::fs::read_to_string(&qpath).expect("questions")).expect("questions");
    let mut policy = toolgate::load::load_policy(Some(&ppath)).unwrap_or_else(|e| panic!("{e:?}"));
    policy.examples.clear();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for q in &qs {
        let tools = import_tools_json(&format!("{}.json", q.id), &q.tools.to_string())
            .unwrap_or_else(|e| panic!("{}: {e:?}", q.id));
        let plan = Arc::new(compile(&policy, tools).unwrap_or_else(|e| panic!("{}: {e:?}", q.id)));
        let message = q.messages.join(" ");
        let keywords = plan.analyzer.extract(&message);
        let (vm, vk) = match &plan.semantic {
            Some(s) => (
                unit(&s.model, &message),
                unit(&s.model, &keywords.join(" ")),
            ),
            None => (Vec::new(), Vec::new()),
        };
        // BM25: raw scores and coverage of the request's terms.
        let mut bm25 = vec![0.0f64; plan.tools.len()];
        let mut covered = vec![0.0f64; plan.tools.len()];
        let (mut known, mut unknown, mut idf1) = (0.0, 0.0, 1.0);
        if let Some(idx) = &plan.bm25 {
            idf1 = idx.idf_of_df(1);
            let a = toolgate::text::bm25::Bm25Analyzer::new(&idx.params, &plan.analyzer);
            let mut terms = Vec::new();
            for k in &keywords {
                a.terms(k, &mut terms);
            }
            terms.sort();
            terms.dedup();
            for t in &terms {
                match idx.terms.get(t) {
                    Some(&id) => {
                        let idf = idx.idf[id as usize];
                        known += idf;
                        for &(tool, x) in &idx.postings[id as usize] {
                            bm25[tool as usize] += x;
                            covered[tool as usize] += idf;
                        }
                    }
                    None => unknown += idf1,
                }
            }
        }
        let tools: Vec<serde_json::Value> = plan
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let (cm, ck) = match &plan.semantic {
                    Some(s) if s.vectors.len() == plan.tools.len() => {
                        let (row, scale) = s.vectors.row(i);
                        (cosine(&vm, row, scale), cosine(&vk, row, scale))
                    }
                    _ => (0.0, 0.0),
                };
                serde_json::json!({
                    "name": t.name,
                    "cos_message": cm,
                    "cos_keywords": ck,
                    "bm25_idf": bm25[i] / idf1,
                    "coverage": if known > 0.0 { covered[i] / known } else { 0.0 },
                    "coverage_all": if known + unknown > 0.0 { covered[i] / (known + unknown) } else { 0.0 },
                })
            })
            .collect();
        let line = serde_json::json!({
            "id": q.id,
            "set": q.set,
            "holdout": is_holdout(&q.id, fraction),
            "expected": q.expected,
            "tools": tools,
        });
        writeln!(out, "{line}").expect("stdout");
    }
}
