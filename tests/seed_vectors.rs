//! Differential tests against the seed's own reference code: both shipped presets
//! must reproduce every vector line (scores to 1e-9, effective threshold, active
//! set), and the default keyword extractor must reproduce the seed's extractor.
//!
//! The vectors are read from `tests/data/seed-vectors/` and, when present, from
//! `../shared/data/seed-vectors/` (new vectors drawn the same way are checked too).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate::compile::compile;
use toolgate::input::EvalInput;
use toolgate::load::load_policy;

fn vector_files(name: &str) -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from("tests/data/seed-vectors").join(name)];
    let shared = Path::new("../shared/data/seed-vectors").join(name);
    if shared.exists() {
        v.push(shared);
    }
    v
}

fn check_preset(policy_file: &str, vectors: &str) -> usize {
    let policy = load_policy(Some(Path::new(policy_file))).expect("policy loads");
    let mut n = 0;
    for file in vector_files(vectors) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (lineno, line) in text.lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let input = EvalInput::from_json(&v).unwrap();
            let tools = input
                .tools
                .clone()
                .unwrap()
                .into_iter()
                .map(|t| t.into_spec())
                .collect();
            let plan = Arc::new(
                compile(&policy, tools)
                    .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), lineno + 1)),
            );
            let (ctx, usage, now) = input.resolve(&plan).unwrap();
            let act = plan.evaluate(&ctx, &usage, now);
            let exp = &v["expected"];
            let id = v["id"].as_str().unwrap();
            assert!(
                (act.effective_threshold - exp["effective_threshold"].as_f64().unwrap()).abs()
                    < 1e-12,
                "{id}: effective threshold {} vs {}",
                act.effective_threshold,
                exp["effective_threshold"]
            );
            for (name, want) in exp["scores"].as_object().unwrap() {
                let got = act.get(name).unwrap().score;
                let want = want.as_f64().unwrap();
                assert!(
                    (got - want).abs() <= 1e-9,
                    "{id}: {name}: score {got} vs {want}"
                );
            }
            let mut active: Vec<String> =
                act.active_names().into_iter().map(String::from).collect();
            active.sort();
            let want: Vec<String> = exp["active"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect();
            assert_eq!(active, want, "{id}: active set");
            if let Some(dw) = exp.get("domain_weights") {
                for (i, d) in plan.domains.iter().enumerate() {
                    let want = dw[d].as_f64().unwrap();
                    assert!(
                        (act.domain_weights()[i] - want).abs() < 1e-12,
                        "{id}: domain weight {d}"
                    );
                }
            }
            n += 1;
        }
    }
    n
}

#[test]
fn default_policy_reproduces_the_registry_vectors() {
    assert!(check_preset("policies/default.toml", "registry.jsonl") >= 300);
}

#[test]
fn article_policy_reproduces_the_article_vectors() {
    assert!(check_preset("policies/seed-article.toml", "article.jsonl") >= 300);
}

#[test]
fn default_keyword_extraction_reproduces_the_seed() {
    let policy = load_policy(None).unwrap();
    let plan = compile(&policy, vec![]).unwrap();
    let mut n = 0;
    for file in vector_files("keywords.jsonl") {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let want: Vec<String> = serde_json::from_value(v["expected_keywords"].clone()).unwrap();
            assert_eq!(
                plan.analyzer.extract(v["message"].as_str().unwrap()),
                want,
                "{}",
                v["id"]
            );
            n += 1;
        }
    }
    assert!(n >= 300);
}
