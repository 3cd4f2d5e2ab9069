//! Activation-set controls (pinned tools, top-k, minimum count, hysteresis) and
//! activation diffs, on a small inline catalog.

use std::sync::Arc;

use toolgate::compile::compile;
use toolgate::diag::SourceFile;
use toolgate::parse::policy::parse_policy;
use toolgate::parse::tags::InlineTool;
use toolgate::{Plan, Reason, SessionContext, UsageStats};

const DEFAULT: &str = include_str!("../policies/default.toml");

fn plan(edits: &[(&str, &str)]) -> Arc<Plan> {
    let mut text = DEFAULT.to_string();
    for (a, b) in edits {
        assert!(text.contains(a), "{a}");
        text = text.replacen(a, b, 1);
    }
    let policy = parse_policy(SourceFile::new("p.toml", text)).unwrap();
    let tools: Vec<InlineTool> = serde_json::from_str(
        r#"[
        {"name": "a", "domains": ["database"], "preferred_stages": ["debugging"], "trigger_keywords": ["sql"], "base_priority": 0.9, "parameter_complexity": 1},
        {"name": "b", "domains": ["database"], "preferred_stages": ["debugging"], "base_priority": 0.9, "parameter_complexity": 1},
        {"name": "c", "domains": ["network"], "preferred_stages": ["debugging"], "base_priority": 0.4, "parameter_complexity": 2},
        {"name": "d", "base_priority": 0.0, "parameter_complexity": 5}
    ]"#,
    )
    .unwrap();
    Arc::new(compile(&policy, tools.into_iter().map(|t| t.into_spec()).collect()).unwrap())
}

fn ctx(lang: &str) -> SessionContext {
    SessionContext {
        conversation_stage: Some("debugging".into()),
        user_intent_keywords: vec!["sql".into()],
        active_language: Some(lang.into()),
        ..Default::default()
    }
}

fn warm() -> UsageStats {
    let mut u = UsageStats::default();
    u.call_counts.insert("a".into(), 10); // no cold start
    u
}

#[test]
fn baseline_is_the_threshold_rule() {
    let p = plan(&[]);
    let act = p.evaluate(&ctx("sql"), &warm(), 0.0);
    for t in &act.tools {
        assert_eq!(t.active, t.score >= act.effective_threshold);
    }
}

#[test]
fn pinned_tools_are_always_active() {
    let p = plan(&[("pinned = []", "pinned = [\"d\"]")]);
    let act = p.evaluate(&ctx("sql"), &warm(), 0.0);
    let d = act.get("d").unwrap();
    assert!(d.active && d.reason == Reason::Pinned && d.score < act.effective_threshold);
}

#[test]
fn max_active_keeps_the_best_scores() {
    let p0 = plan(&[]);
    let before = p0.evaluate(&ctx("sql"), &warm(), 0.0);
    assert!(
        before.active_names().len() >= 2,
        "{:?}",
        before.active_names()
    );
    let p = plan(&[("# max_active = 10 ", "max_active = 1 ")]);
    let act = p.evaluate(&ctx("sql"), &warm(), 0.0);
    assert_eq!(act.active_names(), vec!["a"]);
    assert_eq!(act.get("b").unwrap().reason, Reason::MaxActive);
}

#[test]
fn min_active_fills_up_with_the_best_inactive() {
    let p = plan(&[("min_active = 0", "min_active = 4")]);
    let act = p.evaluate(&ctx("sql"), &warm(), 0.0);
    assert_eq!(act.active_names().len(), 4);
    assert_eq!(act.get("d").unwrap().reason, Reason::MinActive);
}

#[test]
fn hysteresis_keeps_a_tool_that_dips_just_below() {
    // b is active in a SQL context; in a python context its domain weight falls.
    let p = plan(&[("hysteresis_margin = 0.0", "hysteresis_margin = 0.2")]);
    let first = p.evaluate(&ctx("sql"), &warm(), 0.0);
    assert!(first.get("b").unwrap().active);
    let alone = p.evaluate(&ctx("python"), &warm(), 0.0);
    let b = alone.get("b").unwrap();
    assert!(!b.active, "without history b drops out (score {})", b.score);
    let kept = p.evaluate_with_previous(&ctx("python"), &warm(), 0.0, Some(&first));
    let b = kept.get("b").unwrap();
    assert!(b.active && b.reason == Reason::Hysteresis, "{b:?}");
    // without a margin, history changes nothing
    let p0 = plan(&[]);
    let first = p0.evaluate(&ctx("sql"), &warm(), 0.0);
    assert!(
        !p0.evaluate_with_previous(&ctx("python"), &warm(), 0.0, Some(&first))
            .get("b")
            .unwrap()
            .active
    );
}

#[test]
fn diff_names_added_and_removed_tools() {
    let p = plan(&[]);
    let a = p.evaluate(&ctx("sql"), &warm(), 0.0);
    let b = p.evaluate(&ctx("python"), &warm(), 0.0);
    let d = b.diff(&a);
    assert!(d.removed.contains(&"b".to_string()), "{d:?}");
    assert!(d.added.is_empty());
    assert!(a.diff(&a).is_empty());
    // across plans (a reload): by name
    let p2 = plan(&[("threshold = 0.4 ", "threshold = 0.9 ")]);
    let c = p2.evaluate(&ctx("sql"), &warm(), 0.0);
    let d = c.diff(&a);
    assert!(!d.removed.is_empty() && d.added.is_empty(), "{d:?}");
}

#[test]
fn recency_uses_the_given_clock() {
    let p = plan(&[]);
    let mut u = warm();
    u.last_call_at.insert("c".into(), 1000.0);
    let near = p.evaluate(&ctx("sql"), &u, 1000.0 + 299.0);
    let far = p.evaluate(&ctx("sql"), &u, 1000.0 + 300.0);
    let i = p.tool_index("c").unwrap();
    assert_eq!(near.features(i)[toolgate::plan::F_RECENCY], 0.15);
    assert_eq!(far.features(i)[toolgate::plan::F_RECENCY], 0.0);
}
