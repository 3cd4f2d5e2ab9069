//! Score bounds (compile::bounds, compile::witness) and the load-time
//! findings that follow (compile::findings), on the shipped policies and on
//! mutated copies: exact bounds with witnesses that evaluate to them, bounds
//! that are only bounds, and each finding with its file:line:column.

use std::sync::Arc;

use toolgate::compile::compile;
use toolgate::compile::witness::{CatalogBounds, ScoreBounds, evaluate_input, score_bounds};
use toolgate::diag::SourceFile;
use toolgate::load::{Sources, load_catalog};
use toolgate::parse::policy::{PolicySource, parse_policy};
use toolgate::{LoadError, Plan};

const DEFAULT: &str = include_str!("../policies/default.toml");
const ARTICLE: &str = include_str!("../policies/seed-article.toml");
const SELECTION: &str = include_str!("../policies/selection.toml");

/// Parses `text` as `p.toml`; the examples are dropped when `keep_examples` is false.
fn source(text: &str, keep_examples: bool) -> PolicySource {
    let mut p = parse_policy(SourceFile::new("p.toml", text)).unwrap_or_else(|e| panic!("{e}"));
    // Data files (selection.toml's transitions) are read beside policies/.
    let name = std::mem::replace(&mut p.file, SourceFile::new("policies/p.toml", text));
    toolgate::load::load_data_files(&mut p).unwrap_or_else(|e| panic!("{e}"));
    p.file = name;
    if !keep_examples {
        p.examples.clear();
    }
    p
}

fn load(text: &str) -> Result<(PolicySource, Arc<Plan>), LoadError> {
    let p = source(text, false);
    let tools = load_catalog(&Sources::default()).unwrap();
    compile(&p, tools).map(|plan| (p, Arc::new(plan)))
}

fn plan(text: &str) -> (PolicySource, Arc<Plan>) {
    load(text).unwrap_or_else(|e| panic!("{e}"))
}

fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} not in the policy");
    text.replacen(from, to, 1)
}

/// `p.toml:line:column` of the first occurrence of `needle` in `text`.
fn at(text: &str, needle: &str) -> String {
    let off = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not found"));
    let (l, c) = SourceFile::new("p.toml", text).line_col(off);
    format!("p.toml:{l}:{c}")
}

/// `p.toml:line:column` of `inner` within the first occurrence of `needle`.
fn at_in(text: &str, needle: &str, inner: &str) -> String {
    let off = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not found"))
        + needle.find(inner).unwrap();
    let (l, c) = SourceFile::new("p.toml", text).line_col(off);
    format!("p.toml:{l}:{c}")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

/// Each witness, re-evaluated from its eval input, gives the bound.
fn witnesses_reproduce(policy: &PolicySource, plan: &Arc<Plan>, b: &ScoreBounds) {
    for (w, bound) in [(&b.lowest, b.raw[0]), (&b.highest, b.raw[1])] {
        let w = w.as_ref().expect("an exact bound has a witness");
        let text = serde_json::to_string(&w.input).unwrap();
        let input: serde_json::Value = serde_json::from_str(&text).unwrap();
        let act = evaluate_input(Some(policy), plan, &input).unwrap();
        let s = act.get(&w.tool).unwrap();
        assert!(
            close(s.raw_score, bound),
            "{}: {} vs {bound}",
            w.tool,
            s.raw_score
        );
        assert_eq!(s.raw_score.to_bits(), w.raw_score.to_bits());
    }
}

#[test]
fn the_default_policy_reaches_exactly_0_01_and_1_15() {
    let (p, plan) = plan(DEFAULT);
    let b = score_bounds(&p, &plan);
    assert!(
        close(b.raw[0], 0.01) && close(b.raw[1], 1.15),
        "{:?}",
        b.raw
    );
    assert!(close(b.clamped[0], 0.01) && b.clamped[1] == 1.0);
    assert!(b.exact && !b.nan_possible);
    witnesses_reproduce(&p, &plan, &b);
    // the lowest: no domain, no keyword, a stage miss, complexity 5
    let lowest = b.lowest.as_ref().unwrap();
    let tool = &lowest.input["tools"][0];
    assert_eq!(tool["parameter_complexity"], 5);
    assert_eq!(tool["domains"].as_array().unwrap().len(), 0);
    assert!(lowest.input["context"].get("conversation_stage").is_none());
    // the highest: every term at its top, recency included
    let highest = b.highest.as_ref().unwrap();
    let tool = &highest.input["tools"][0];
    assert_eq!(tool["domains"].as_array().unwrap().len(), 7);
    assert_eq!(tool["base_priority"], 1.0);
    assert_eq!(
        highest.input["usage"]["seconds_since_last_call"]["toolgate.witness"],
        0.0
    );
}

#[test]
fn the_shipped_policies_have_exact_bounds() {
    let (p, plan) = plan(ARTICLE);
    let b = score_bounds(&p, &plan);
    assert!(
        close(b.raw[0], 0.01) && close(b.raw[1], 1.15),
        "{:?}",
        b.raw
    );
    assert!(b.exact);
    witnesses_reproduce(&p, &plan, &b);
}

/// `transition_match` (selection.toml, w 0.8, declared 1.0) and
/// `semantic_match` (w 0.4) are bounded but have no witness recipe: the top
/// 1.1 + 0.8 + 0.4 is reported as a bound only.
#[test]
fn learned_transitions_widen_the_bound_and_make_it_a_bound_only() {
    let (p, pl) = plan(SELECTION);
    let b = score_bounds(&p, &pl);
    assert!(close(b.raw[0], 0.0) && close(b.raw[1], 2.3), "{:?}", b.raw);
    assert!(!b.exact);
    // Without the semantic term: 1.1 + 0.8, still a bound only.
    let no_sem = SELECTION.replace(" + w_semantic*semantic_match", "");
    assert_ne!(no_sem, SELECTION);
    let (p, pl) = plan(&no_sem);
    let b = score_bounds(&p, &pl);
    assert!(close(b.raw[0], 0.0) && close(b.raw[1], 1.9), "{:?}", b.raw);
    assert!(!b.exact);
    // Without both terms the bound is exact again, as before.
    let no_tr = no_sem.replace(" + w_transition*transition_match", "");
    assert_ne!(no_tr, no_sem);
    let (p, pl) = plan(&no_tr);
    let b = score_bounds(&p, &pl);
    assert!(close(b.raw[0], 0.0) && close(b.raw[1], 1.1), "{:?}", b.raw);
    assert!(b.exact);
    witnesses_reproduce(&p, &pl, &b);
}

#[test]
fn catalog_bounds_are_tighter_and_attained() {
    let (p, plan) = plan(DEFAULT);
    let policy_wide = score_bounds(&p, &plan);
    let cb = CatalogBounds::of(&plan);
    let b = &cb.overall;
    assert!(b.exact, "{:?}", b.raw);
    assert!(b.raw[0] >= policy_wide.raw[0] && b.raw[1] <= policy_wide.raw[1]);
    assert!(
        b.raw[1] < 1.0,
        "no shipped tool reaches the clamp: {}",
        b.raw[1]
    );
    for w in [&b.lowest, &b.highest] {
        let w = w.as_ref().unwrap();
        assert!(
            w.input.get("tools").is_none(),
            "a catalog witness uses the catalog"
        );
        let act = evaluate_input(None, &plan, &w.input).unwrap();
        assert_eq!(
            act.get(&w.tool).unwrap().raw_score.to_bits(),
            w.raw_score.to_bits()
        );
    }
    // every tool's interval holds what its extreme sessions give; most tools
    // reach their ends (a domain rule's keyword that is not the tool's own
    // couples domain_match and keyword_match, and then the end is only a bound)
    let mut attained = 0;
    for i in 0..plan.tools.len() {
        for highest in [false, true] {
            let (input, v) = cb.corner_input(&plan, i, highest).unwrap();
            let act = evaluate_input(None, &plan, &input).unwrap();
            let r = cb.tools[i].raw;
            let x = act.tools[i].raw_score;
            assert!(
                r.lo <= x && x <= r.hi,
                "{}: {x} outside {:?}",
                plan.tools[i].name,
                r
            );
            if close(x, v) {
                attained += 1;
                assert_eq!(
                    cb.tool_witness(&plan, i, highest).is_some(),
                    close(v, if highest { r.hi } else { r.lo })
                );
            }
        }
    }
    assert!(
        attained > plan.tools.len(),
        "{attained} of {} ends",
        2 * plan.tools.len()
    );
}

#[test]
fn a_non_linear_formula_gets_a_bound_that_is_not_exact() {
    // keyword_match - keyword_match is always 0, but intervals do not know that
    let text = edit(
        DEFAULT,
        "formula = \"w_domain*domain_match",
        "formula = \"keyword_match - keyword_match + w_domain*domain_match",
    );
    let (p, plan) = plan(&text);
    let b = score_bounds(&p, &plan);
    assert!(!b.exact);
    assert!(
        close(b.raw[0], 0.01 - 1.0) && close(b.raw[1], 1.15 + 1.0),
        "{:?}",
        b.raw
    );
    // the value actually reached stays within the bound
    let cb = CatalogBounds::of(&plan);
    assert!(!cb.overall.exact);
}

#[test]
fn an_unreachable_threshold_fails_the_load_with_the_highest_score() {
    let text = edit(DEFAULT, "w_domain = 0.30", "w_domain = 0.0");
    let text = edit(&text, "threshold = 0.4 ", "threshold = 0.86 ");
    let e = load(&text).unwrap_err();
    let d = e.to_string();
    assert!(
        d.contains(&format!(
            "{}: threshold 0.86 can never be reached: the highest score is 0.85",
            at(&text, "0.86 ")
        )),
        "{d}"
    );
    // 0.85 itself is reachable
    let ok = edit(&text, "threshold = 0.86 ", "threshold = 0.85 ");
    assert!(load(&ok).is_ok());
}

#[test]
fn the_clamp_bounds_the_highest_score_named_by_the_error() {
    // above the clamp: found when the file is read
    let text = edit(DEFAULT, "clamp = [0.0, 1.0]", "clamp = [0.0, 0.5]");
    let text = edit(&text, "threshold = 0.4 ", "threshold = 0.6 ");
    let d = parse_policy(SourceFile::new("p.toml", text.as_str()))
        .unwrap_err()
        .to_string();
    assert_eq!(
        d,
        format!(
            "{}: threshold 0.6 can never be reached: the highest score is 0.5 (scores are clamped to [0, 0.5])",
            at_in(&text, "threshold = 0.6", "0.6")
        )
    );
    // within the clamp but above what the formula reaches before clamping
    let text = edit(DEFAULT, "w_domain = 0.30", "w_domain = 0.0");
    let text = edit(&text, "w_keyword = 0.25", "w_keyword = 0.0");
    let text = edit(&text, "threshold = 0.4 ", "threshold = 0.7 ");
    let d = load(&text).unwrap_err().to_string();
    assert!(
        d.contains("threshold 0.7 can never be reached: the highest score is 0.6"),
        "{d}"
    );
}

#[test]
fn a_threshold_at_or_below_the_lowest_score_is_a_warning() {
    let text = edit(DEFAULT, "threshold = 0.4 ", "threshold = 0.005 ");
    let (_, plan) = plan(&text);
    let w = format!(
        "{}: threshold 0.005 is at or below the lowest score 0.01: every tool passes it in every session",
        at(&text, "0.005 ")
    );
    assert!(plan.warnings.contains(&w), "{:?}", plan.warnings);
    // the default threshold gets no such warning
    let (_, plan) = self::plan(DEFAULT);
    assert!(!plan.warnings.iter().any(|w| w.contains("lowest score")));
}

#[test]
fn a_cold_start_threshold_below_the_lowest_score_is_a_warning() {
    // 0.015 × 0.6 = 0.009 < 0.01
    let text = edit(DEFAULT, "threshold = 0.4 ", "threshold = 0.015 ");
    let (_, plan) = plan(&text);
    let w = format!(
        "{}: the cold-start threshold 0.009 is at or below the lowest score 0.01: every tool passes it until the session has made 5 calls",
        at(&text, "0.6       #")
    );
    assert!(plan.warnings.contains(&w), "{:?}", plan.warnings);
}

#[test]
fn a_term_that_is_always_zero_is_a_warning() {
    let text = edit(DEFAULT, "w_usage = 0.15", "w_usage = 0.0");
    let (_, plan) = plan(&text);
    let w = format!(
        "{}: term `w_usage * usage_bonus` is always 0: it never changes any activation",
        at(&text, "w_usage*usage_bonus")
    );
    assert!(plan.warnings.contains(&w), "{:?}", plan.warnings);
}

/// The default policy with `formula`, cold start off (examples dropped).
fn with_formula(formula: &str) -> String {
    let text = edit(
        DEFAULT,
        "formula = \"w_domain*domain_match + w_keyword*keyword_match + w_stage*stage_match + w_usage*usage_bonus + w_priority*priority_bonus + recency_bonus - w_complexity*complexity_penalty\"",
        &format!("formula = \"{formula}\""),
    );
    edit(
        &text,
        "[activation.cold_start]      # _get_effective_threshold",
        "[activation.cold_start]\nenabled = false",
    )
}

#[test]
fn a_term_drowned_by_a_discrete_one_is_a_warning() {
    // stage decides alone: 0.5 × {0.3, 1} = {0.15, 0.5}; priority adds at most
    // 0.1, never enough to cross 0.4 from 0.15
    let text = with_formula("w_stage*stage_match + w_priority*priority_bonus");
    let text = edit(&text, "w_stage = 0.20", "w_stage = 0.5");
    let (_, plan) = plan(&text);
    let w = format!(
        "{}: term `w_priority * priority_bonus` (from 0 to 0.1) can never change any activation: the other terms sum to 0.15 or 0.5, and from none of these values does it cross the threshold 0.4",
        at(&text, "w_priority*priority_bonus\"")
    );
    assert!(plan.warnings.contains(&w), "{:?}", plan.warnings);
    // the stage term itself matters, and so does priority once it can bridge the gap
    assert!(!plan.warnings.iter().any(|w| w.contains("term `w_stage")));
    let wider = edit(&text, "w_priority = 0.10", "w_priority = 0.3");
    let (_, plan) = self::plan(&wider);
    assert!(
        !plan.warnings.iter().any(|w| w.contains("can never change")),
        "{:?}",
        plan.warnings
    );
}

#[test]
fn the_shipped_formula_has_no_inert_term() {
    for text in [DEFAULT, ARTICLE, SELECTION] {
        let (_, plan) = plan(text);
        assert!(
            !plan
                .warnings
                .iter()
                .any(|w| w.contains("never changes any activation")
                    || w.contains("can never change")),
            "{:?}",
            plan.warnings
        );
    }
}

#[test]
fn raw_scores_beyond_the_clamp_are_a_note() {
    let (_, plan) = plan(DEFAULT);
    let n = format!(
        "{}: for some tool the policy admits, raw scores reach 1.15, above the declared clamp's upper bound 1: the clamp makes every score from 1 to 1.15 a 1 (they tie), as it declares (the seed's formula clamps by design)",
        at(DEFAULT, "[0.0, 1.0]")
    );
    assert!(plan.notes.contains(&n), "{:?}", plan.notes);
    // a clamp the policy declares is not a problem
    assert!(
        !plan.warnings.iter().any(|w| w.contains("clamp")),
        "{:?}",
        plan.warnings
    );
    let text = edit(DEFAULT, "clamp = [0.0, 1.0]", "clamp = [0.05, 1.2]");
    let (_, plan) = self::plan(&text);
    assert!(
        !plan
            .notes
            .iter()
            .any(|w| w.contains("above the declared clamp"))
    );
    let low = format!(
        "{}: for some tool the policy admits, raw scores go down to 0.01, below the declared clamp's lower bound 0.05: the clamp makes every score from 0.01 to 0.05 a 0.05, as it declares (the seed's formula clamps by design)",
        at(&text, "[0.05, 1.2]")
    );
    assert!(plan.notes.contains(&low), "{:?}", plan.notes);
}

#[test]
fn the_issues_example_raw_scores_reach_3_85() {
    // w_domain = 3.0 with clamp [0, 5]: nothing is clamped, but the bounds say
    // how far raw scores go
    let text = edit(DEFAULT, "w_domain = 0.30", "w_domain = 3.0");
    let text = edit(&text, "clamp = [0.0, 1.0]", "clamp = [0.0, 5.0]");
    let (p, plan) = plan(&text);
    let b = score_bounds(&p, &plan);
    assert!(close(b.raw[1], 3.85) && b.exact, "{:?}", b.raw);
    witnesses_reproduce(&p, &plan, &b);
}
