//! The argument-fill evidence per BFCL question and candidate
//! (`[features.argument_fill]`, `text::argument_fill`): for each question
//! of `questions.jsonl` (`toolgate import bfcl`), each candidate's filled
//! and required parameters under the policy's word lists, read from the
//! question's user messages. No model is loaded; one JSON line per
//! question: `id`, `set`, `holdout` (`toolgate fit`'s session-id hash at
//! the given fraction), `expected`, `tools` (`name`, `filled`,
//! `required`, `missing`). `scripts/bfcl-gate-roc.py` joins it with
//! `bfcl_gate_roc`'s evidence (`--fill`).
//!
//! ```sh
//! cargo build --example bfcl_argument_fill
//! target/debug/examples/bfcl_argument_fill /tmp/bfcl/questions.jsonl \
//!     policies/selection-transformer.toml [HELD_OUT_FRACTION] > /tmp/bfcl/fill.jsonl
//! ```

use std::io::Write;
use std::path::PathBuf;

use toolgate::parse::tags::import_tools_json;
use toolgate::replay::fit::is_holdout;
use toolgate::replay::questions::parse_questions;
use toolgate::text::argument_fill::ArgumentFill;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: bfcl_argument_fill QUESTIONS POLICY [HELD_OUT_FRACTION]";
    let qpath = PathBuf::from(args.next().expect(usage));
    let ppath = PathBuf::from(args.next().expect(usage));
    let fraction: f64 = args.next().map_or(0.5, |f| f.parse().expect("a fraction"));
    let qs =
        parse_questions(&std::fs::read_to_string(&qpath).expect("questions")).expect("questions");
    let text = std::fs::read_to_string(&ppath).expect("policy");
    let policy = toolgate::parse::policy::parse_policy(toolgate::diag::SourceFile::new(
        ppath.display().to_string(),
        text,
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let params = policy
        .features
        .argument_fill
        .as_ref()
        .expect("the policy has no [features.argument_fill]");
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for q in &qs {
        let tools = import_tools_json(&format!("{}.json", q.id), &q.tools.to_string())
            .unwrap_or_else(|e| panic!("{}: {e:?}", q.id));
        let schemas: Vec<serde_json::Value> = tools
            .iter()
            .map(|t| t.input_schema.value().into_owned())
            .collect();
        let gate = ArgumentFill::build(
            params,
            tools
                .iter()
                .zip(schemas)
                .map(|(t, s)| (t.name.value.as_str(), t.description.as_str(), s)),
        );
        let req = gate.request(&q.messages.join("\n"));
        let cands: Vec<serde_json::Value> = tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let f = gate.fill(&req, i);
                serde_json::json!({"name": t.name.value, "filled": f.filled, "required": f.required, "missing": f.missing})
            })
            .collect();
        let line = serde_json::json!({
            "id": q.id, "set": q.set, "holdout": is_holdout(&q.id, fraction),
            "expected": q.expected, "tools": cands,
        });
        writeln!(out, "{line}").expect("stdout");
    }
}
