//! Issue 24, item 4: the speed-ups of a new user message under
//! `policies/selection-transformer.toml` (candle's thread count read once,
//! the argument-fill gate's per-tool work, ...) keep every score. On the
//! Seal-Tools slice (`tests/data/seal-slice`: 664 tools, 70 requests) each
//! request is evaluated as a new message and compared, to 1e-6, with the
//! scores recorded before the changes (`tests/data/seal-slice/
//! transformer-scores.json`): the ten best tools in order with their scores,
//! the active set's size, the sum of every tool's score and the number of
//! tools the argument-fill gate took the request's terms from. Each request
//! is evaluated twice, with candle on one thread and on every CPU (at least
//! two threads), and both must agree with the file.
//!
//! `TOOLGATE_BLESS=1 cargo test --features embed --test
//! selection_transformer_scores` writes the file anew (only for a change
//! that is meant to move scores, said in its commit).

use std::path::Path;
use std::sync::Arc;

use toolgate::compile::compile;
use toolgate::load::load_policy;
use toolgate::parse::tags::import_tools_json;
use toolgate::{SessionContext, UsageStats};

const GOLDEN: &str = "tests/data/seal-slice/transformer-scores.json";

/// One request's result: what the golden file keeps of it.
fn summary(act: &toolgate::Activation) -> serde_json::Value {
    let mut order: Vec<usize> = (0..act.tools.len()).collect();
    order.sort_by(|&a, &b| toolgate::ToolScore::better_first(&act.tools[a], &act.tools[b]));
    let top: Vec<serde_json::Value> = order[..10]
        .iter()
        .map(|&i| serde_json::json!([act.plan.tools[i].name, act.tools[i].score]))
        .collect();
    serde_json::json!({
        "top": top,
        "active": act.tools.iter().filter(|t| t.active).count(),
        "sum": act.tools.iter().map(|t| t.score).sum::<f64>(),
        "unfilled": act.unfilled_count(),
    })
}

#[test]
fn seal_slice_scores_are_the_recorded_ones() {
    let model = Path::new("policies/models/all-MiniLM-L6-v2/model.safetensors");
    assert!(
        model.is_file(),
        "{} is missing: run scripts/install-minilm",
        model.display()
    );
    let dir = std::env::temp_dir().join(format!("toolgate-scores-{}", std::process::id()));
    // SAFETY: the only test of this binary, before any thread is started.
    unsafe { std::env::set_var("TOOLGATE_CACHE_DIR", &dir) };
    let mut policy =
        load_policy(Some(Path::new("policies/selection-transformer.toml"))).expect("policy");
    policy.examples.clear();
    let path = "tests/data/seal-slice/catalog.json";
    let tools = import_tools_json(path, &std::fs::read_to_string(path).unwrap()).unwrap();
    let plan = Arc::new(compile(&policy, tools).expect("plan"));
    assert!(
        plan.argument_fill.is_some(),
        "the shipped table has the gate"
    );
    let trace = std::fs::read_to_string("tests/data/seal-slice/trace.jsonl").unwrap();
    let msgs: Vec<String> = trace
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "user_message")
        .map(|v| v["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(msgs.len(), 70);
    let run = || -> Vec<serde_json::Value> {
        msgs.iter()
            .map(|m| {
                let ctx = SessionContext {
                    user_intent_keywords: plan.analyzer.extract(m),
                    user_message: Some(m.clone()),
                    ..Default::default()
                };
                summary(&plan.evaluate(&ctx, &UsageStats::default(), 0.0))
            })
            .collect()
    };
    // candle's thread counts, which it reads on each matrix product: one
    // thread, then every CPU (the requests are encoded again: the
    // encoder's memo holds the last 16 of the 70)
    let threads = |n: String| {
        // SAFETY: the only test of this binary; nothing else reads the
        // environment while it runs.
        unsafe {
            std::env::set_var("RAYON_NUM_THREADS", &n);
            std::env::set_var("CANDLE_NUM_THREADS", &n);
        }
    };
    threads("1".into());
    let got = run();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    threads(cpus.max(2).to_string());
    let again = run();
    let _ = std::fs::remove_dir_all(&dir);
    if std::env::var_os("TOOLGATE_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&got).unwrap();
        std::fs::write(GOLDEN, text + "\n").unwrap();
        return;
    }
    let want: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(GOLDEN).unwrap()).unwrap();
    assert_eq!(want.len(), got.len());
    let close = |a: &serde_json::Value, b: &serde_json::Value| {
        (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() <= 1e-6
    };
    let mut moved = 0;
    let runs = want.iter().zip(&got).chain(want.iter().zip(&again));
    for (k, (w, g)) in runs.enumerate() {
        let k = k % want.len();
        let same = w["active"] == g["active"]
            && w["unfilled"] == g["unfilled"]
            && close(&w["sum"], &g["sum"])
            && w["top"]
                .as_array()
                .unwrap()
                .iter()
                .zip(g["top"].as_array().unwrap())
                .all(|(a, b)| a[0] == b[0] && close(&a[1], &b[1]));
        if !same {
            moved += 1;
            eprintln!("request {k} ({}):\n want {w}\n got  {g}", msgs[k]);
        }
    }
    assert_eq!(
        moved, 0,
        "{moved} of 140 evaluations (70 requests, two thread counts) scored differently"
    );
}
