//! Property tests of the scoring engine (proptest).
#![cfg(feature = "proptest")]

use std::sync::Arc;

use proptest::prelude::*;
use toolgate::compile::compile;
use toolgate::compile::formula::{lower, reference_eval};
use toolgate::diag::SourceFile;
use toolgate::load::{Sources, load_catalog};
use toolgate::parse::policy::parse_policy;
use toolgate::{FEATURES, Plan};

const DEFAULT: &str = include_str!("../policies/default.toml");

fn try_plan(text: &str) -> Result<Arc<Plan>, toolgate::LoadError> {
    let policy = parse_policy(SourceFile::new("p.toml", text)).unwrap_or_else(|e| panic!("{e}"));
    let tools = load_catalog(&Sources::default()).unwrap();
    // examples are written for the default weights; drop them for random weights
    let mut policy = policy;
    policy.examples.clear();
    compile(&policy, tools).map(Arc::new)
}

fn plan_from(text: &str) -> Arc<Plan> {
    try_plan(text).unwrap_or_else(|e| panic!("{e}"))
}

fn with_weights(w: &[f64; 6]) -> String {
    let names = [
        "w_domain",
        "w_keyword",
        "w_stage",
        "w_usage",
        "w_priority",
        "w_complexity",
    ];
    let olds = ["0.30", "0.25", "0.20", "0.15", "0.10", "0.05"];
    let mut t = DEFAULT.to_string();
    for ((n, o), x) in names.iter().zip(olds).zip(w) {
        t = t.replacen(&format!("{n} = {o}"), &format!("{n} = {x:e}"), 1);
    }
    t
}

fn default_plan() -> Arc<Plan> {
    plan_from(DEFAULT)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// For any finite weights and any inputs the score stays within the clamp
    /// bounds and is never NaN; the term contributions add up to the raw score.
    /// Weights under which no score reaches the threshold fail the load, and
    /// for that reason only.
    #[test]
    fn scores_stay_in_bounds_for_any_finite_weights(
        w in prop::array::uniform6(-1.0e6f64..1.0e6),
        seed in any::<u64>(),
    ) {
        match try_plan(&with_weights(&w)) {
            Ok(plan) => {
                let violations = toolgate::fuzz::fuzz(&plan, 4, seed);
                prop_assert!(violations.is_empty(), "{:?}", violations.first());
            }
            Err(e) => prop_assert!(
                e.diagnostics.iter().all(|d| d.message.contains("can never be reached")),
                "{e}"
            ),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Raising the threshold never adds an active tool.
    #[test]
    fn raising_the_threshold_never_adds_a_tool(
        (ctx, usage, now) in toolgate::strategies::session(&default_plan()),
        t1 in 0.0f64..=1.0,
        dt in 0.0f64..=1.0,
    ) {
        let t2 = (t1 + dt).min(1.0);
        let low = plan_from(&DEFAULT.replacen("threshold = 0.4 ", &format!("threshold = {t1:e} "), 1));
        let high = plan_from(&DEFAULT.replacen("threshold = 0.4 ", &format!("threshold = {t2:e} "), 1));
        let a = low.evaluate(&ctx, &usage, now).active_set();
        let b = high.evaluate(&ctx, &usage, now).active_set();
        prop_assert!(b.is_subset(&a), "{:?} not within {:?}", b, a);
    }

    /// Cold start only ever lowers the threshold.
    #[test]
    fn cold_start_only_lowers_the_threshold(
        (ctx, usage, now) in toolgate::strategies::session(&default_plan()),
        factor in 0.0f64..=1.0,
        min_calls in 0u64..100,
    ) {
        let text = DEFAULT
            .replacen("threshold_factor = 0.6", &format!("threshold_factor = {factor:e}"), 1)
            .replacen("min_calls = 5", &format!("min_calls = {min_calls}"), 1);
        let plan = plan_from(&text);
        let act = plan.evaluate(&ctx, &usage, now);
        prop_assert!(act.effective_threshold <= act.threshold);
        prop_assert_eq!(act.cold_start, usage.total_calls() < min_calls);
        let sum: f64 = act.explain(0).iter().map(|t| t.contribution).sum::<f64>();
        prop_assert!((sum - act.tools[0].raw_score).abs() < 1e-12);
    }
}

/// A random formula over the features, weights `wa`/`wb` and constants.
fn formula() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(FEATURES.to_vec()).prop_map(String::from),
        prop::sample::select(vec!["wa", "wb"]).prop_map(String::from),
        (0u32..1000).prop_map(|x| format!("{}", x as f64 / 100.0)),
        (0i64..5).prop_map(|x| format!("{x}")),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["+", "-", "*", "/", "^"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            inner.clone().prop_map(|a| format!("({a})")),
            inner.clone().prop_map(|a| format!("-({a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("min({a}, {b})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("max({a}, {b}, {c})")),
            (
                prop::sample::select(vec![
                    "floor",
                    "ceil",
                    "round",
                    "math::abs",
                    "math::sqrt",
                    "math::ln",
                    "math::exp"
                ]),
                inner
            )
                .prop_map(|(f, a)| format!("{f}({a})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The lowered, slot-indexed formula computes exactly what evalexpr computes.
    #[test]
    fn lowered_formula_equals_evalexpr(
        src in formula(),
        values in prop::array::uniform::<_, { FEATURES.len() }>(-2.0f64..2.0),
        wa in -2.0f64..2.0,
        wb in -2.0f64..2.0,
    ) {
        let feature = |n: &str| FEATURES.iter().position(|f| *f == n).map(|i| i as u8);
        let weight = |n: &str| match n { "wa" => Some(wa), "wb" => Some(wb), _ => None };
        let lowered = lower(&src, &feature, &weight).unwrap_or_else(|e| panic!("{src}: {e}"));
        let ours = lowered.eval(&values, None);
        let named: Vec<(&str, f64)> = FEATURES.iter().copied().zip(values).collect();
        let theirs = reference_eval(&src, &named, &[("wa", wa), ("wb", wb)]).unwrap_or_else(|e| panic!("{src}: {e}"));
        prop_assert!(ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()), "{src}: {ours} vs {theirs}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Arbitrary text never panics the policy or tag readers.
    #[test]
    fn arbitrary_text_never_panics_the_readers(text in "\\PC{0,400}") {
        let _ = parse_policy(SourceFile::new("p.toml", text.as_str()));
        let _ = toolgate::parse::tags::parse_tag_file(SourceFile::new("t.toml", text.as_str()));
        let _ = toolgate::parse::tags::import_tools_json("t.json", &text);
        let _ = toolgate::input::EvalInput::parse(&text);
    }

    /// A default policy with a random splice loads or fails cleanly, never panics;
    /// when it loads, evaluation stays within bounds.
    #[test]
    fn mutated_policies_never_panic(pos in 0usize..DEFAULT.len(), cut in 0usize..40, insert in "[a-z_=\\[\\]{}\"., 0-9-]{0,12}") {
        let mut start = pos.min(DEFAULT.len());
        while !DEFAULT.is_char_boundary(start) { start -= 1; }
        let mut end = (start + cut).min(DEFAULT.len());
        while !DEFAULT.is_char_boundary(end) { end -= 1; }
        let text = format!("{}{}{}", &DEFAULT[..start], insert, &DEFAULT[end..]);
        if let Ok(policy) = parse_policy(SourceFile::new("p.toml", text.as_str())) {
            let tools = load_catalog(&Sources::default()).unwrap();
            if let Ok(plan) = compile(&policy, tools) {
                let plan = Arc::new(plan);
                // a splice may create a formula that yields NaN (reported, tool inactive);
                // nothing else may break
                let violations = toolgate::fuzz::fuzz(&plan, 3, pos as u64);
                prop_assert!(violations.iter().all(|v| v.message.contains("NaN")), "{:?}", violations.first());
            }
        }
    }

    /// Arbitrary JSON inputs never panic input resolution and evaluation.
    #[test]
    fn arbitrary_inputs_never_panic(
        stage in prop::option::of("[a-z]{0,12}"),
        counts in prop::collection::btree_map("[a-z_.]{1,20}", -10.0f64..1e20, 0..4),
        ago in prop::collection::btree_map("[a-z_.]{1,20}", prop::num::f64::ANY, 0..4),
        now in prop::num::f64::ANY,
        message in "\\PC{0,200}",
    ) {
        let plan = default_plan();
        let input = serde_json::json!({
            "context": {"conversation_stage": stage, "session_duration_seconds": 1.0},
            "message": message,
            "usage": {"call_counts": counts, "seconds_since_last_call": ago.into_iter().filter(|(_, v)| v.is_finite()).collect::<std::collections::BTreeMap<_, _>>()},
            "now": if now.is_finite() { now } else { 0.0 },
        });
        if let Ok(i) = toolgate::input::EvalInput::from_json(&input)
            && let Ok((ctx, usage, now)) = i.resolve(&plan) {
                let act = plan.evaluate(&ctx, &usage, now);
                prop_assert!(act.tools.iter().all(|t| (0.0..=1.0).contains(&t.score)));
            }
    }
}

/// The shipped semantic model, from the binary's embedded copy.
fn semantic_index(
    normalization: toolgate::parse::selection::SemanticNormalization,
) -> toolgate::text::semantic::SemanticIndex {
    use toolgate::text::semantic::{ModelFiles, SemanticIndex, SemanticModel, tool_text};
    let get = |name: &str| -> &'static [u8] {
        toolgate::defaults::DEFAULT_BINARY_DATA
            .iter()
            .find(|(n, _)| n.ends_with(name))
            .expect("the semantic feature embeds the model")
            .1
    };
    let data = ModelFiles {
        dir: "minilm-static-128",
        tokenizer: get("tokenizer.json"),
        model: get("model.safetensors"),
        config: get("config.json"),
    };
    let tools = [
        ("delete_file", "Delete a file"),
        ("get_forecast", "Weather forecast"),
        ("x", ""),
        ("日本語_ツール", "説明"),
    ];
    SemanticIndex::build(
        SemanticModel::load(data).unwrap(),
        normalization,
        tools
            .iter()
            .map(|(n, d)| tool_text(n, d, &serde_json::json!({}))),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `semantic_match` is within [0,1] and finite for any request text (any
    /// Unicode, empty, huge, control characters) and any turn weights, and
    /// never panics.
    #[test]
    fn semantic_match_is_within_0_1_for_any_text(
        turns in prop::collection::vec(
            (prop::collection::vec(any::<String>(), 0..6), prop_oneof![Just(f64::NAN), Just(f64::INFINITY), -2.0f64..2.0]),
            0..4,
        ),
        huge in prop::option::of(prop::collection::vec(any::<char>(), 600..1200)),
        best in any::<bool>(),
    ) {
        use toolgate::parse::selection::SemanticNormalization::{Best, None};
        static INDEX: std::sync::OnceLock<[toolgate::text::semantic::SemanticIndex; 2]> =
            std::sync::OnceLock::new();
        let both = INDEX.get_or_init(|| [semantic_index(Best), semantic_index(None)]);
        let idx = &both[if best { 0 } else { 1 }];
        let mut turns = turns;
        if let Some(h) = huge {
            turns.push((vec![h.into_iter().collect()], 1.0));
        }
        let refs: Vec<(&[String], f64)> = turns.iter().map(|(k, w)| (k.as_slice(), *w)).collect();
        let mut out = Vec::new();
        idx.score(&refs, &mut out);
        prop_assert_eq!(out.len(), 4);
        prop_assert!(out.iter().all(|x| x.is_finite() && (0.0..=1.0).contains(x)), "{:?}", out);
        if best && out.iter().any(|&x| x > 0.0) {
            prop_assert!(out.contains(&1.0), "the closest tool gets 1: {:?}", out);
        }
    }
}
