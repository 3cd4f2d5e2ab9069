//! BFCL judged the benchmark's way: each question against its own candidate
//! functions (`questions.jsonl` of `toolgate import bfcl`), relevance (needed
//! tools exposed) and irrelevance (nothing exposed when nothing fits), on
//! all questions and on the two halves of the session-id hash split
//! (`toolgate fit`'s hash; "A" tunes, "B" is held out).
//!
//! ```sh
//! target/release/toolgate import bfcl --data ../shared/data/bfcl --out /tmp/bfcl
//! cargo build --release --example bfcl_questions
//! target/release/examples/bfcl_questions /tmp/bfcl/questions.jsonl policies/selection.toml [HELD_OUT_FRACTION]
//! ```

use std::path::PathBuf;

use toolgate::replay::fit::is_holdout;
use toolgate::replay::questions::{Judged, QuestionReport, judge, parse_questions};

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: bfcl_questions QUESTIONS POLICY [HELD_OUT_FRACTION]";
    let qpath = PathBuf::from(args.next().expect(usage));
    let ppath = PathBuf::from(args.next().expect(usage));
    let fraction: f64 = args.next().map_or(0.5, |f| f.parse().expect("a fraction"));
    let verbose = std::env::var_os("VERBOSE").is_some();
    let qs =
        parse_questions(&std::fs::read_to_string(&qpath).expect("questions")).expect("questions");
    let mut policy = toolgate::load::load_policy(Some(&ppath)).unwrap_or_else(|e| panic!("{e:?}"));
    policy.examples.clear();
    let t0 = std::time::Instant::now();
    let judged: Vec<Judged> = qs
        .iter()
        .map(|q| judge(&policy, q).unwrap_or_else(|e| panic!("{}: {e:?}", q.id)))
        .collect();
    println!(
        "policy {} | {} questions judged in {:.1} s",
        ppath.display(),
        judged.len(),
        t0.elapsed().as_secs_f64()
    );
    println!(
        "{:<14} {:<6} | {:>4} {:>9} {:>9} {:>6} | {:>4} {:>9} {:>11}",
        "set", "split", "rel", "needed", "all", "med", "irr", "nothing", "mean exposed"
    );
    let sets = ["multiple", "live_multiple", "irrelevance", "*"];
    for set in sets {
        for (name, pick) in [("all", None), ("A", Some(false)), ("B(ho)", Some(true))] {
            let r = QuestionReport::of(judged.iter().filter(|j| {
                (set == "*" || j.set == set)
                    && pick.is_none_or(|h| is_holdout(&j.id, fraction) == h)
            }));
            let med = r
                .relevant_sizes
                .get(r.relevant_sizes.len() / 2)
                .copied()
                .unwrap_or(0);
            let mean_irr = r.irrelevant_sizes.iter().sum::<usize>() as f64
                / r.irrelevant_sizes.len().max(1) as f64;
            println!(
                "{set:<14} {name:<6} | {:>4} {:>8.1}% {:>8.1}% {:>6} | {:>4} {:>8.1}% {:>11.2}",
                r.relevant,
                100.0 * r.relevance(),
                100.0 * r.all_exposed as f64 / r.relevant.max(1) as f64,
                med,
                r.irrelevant,
                100.0 * r.irrelevance(),
                mean_irr
            );
        }
    }
    // JUDGED=FILE: one JSON line per question (id, expected, exposed)
    if let Some(path) = std::env::var_os("JUDGED") {
        let mut out = String::new();
        for j in &judged {
            out.push_str(
                &serde_json::json!({"id": j.id, "set": j.set, "expected": j.expected, "exposed": j.exposed})
                    .to_string(),
            );
            out.push('\n');
        }
        std::fs::write(path, out).expect("JUDGED file");
    }
    if verbose {
        for j in &judged {
            let miss = j.needed_exposed() < j.expected.len();
            let leak = j.expected.is_empty() && !j.exposed.is_empty();
            if miss || leak {
                println!(
                    "{} [{}] expected {:?} exposed {:?}",
                    j.id, j.candidates, j.expected, j.exposed
                );
            }
        }
    }
}
