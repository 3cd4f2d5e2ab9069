//! proptest strategies for property-testing a policy's score bounds
//! (feature `proptest`).
//!
//! The strategies draw contexts and usage from what a plan declares (its stages,
//! keyword vocabulary, tool names, the languages its rules test) mixed with
//! arbitrary strings, so that rules fire and miss ([`session`]; centred on a
//! few tools: [`session_for`]), and feature vectors within the ranges the
//! policy gives each feature ([`features`]). `toolgate check --fuzz N` runs
//! [`fuzz`](super::fuzz) on them, and `toolgate check` searches the policy's
//! declared `[[properties]]` with them ([`super::properties`]); Rust users can
//! state the same properties in their own tests (docs/policy-reference.md,
//! "Declared properties"):
//!
//! ```
//! use std::sync::Arc;
//! use proptest::prelude::*;
//! use proptest::test_runner::TestRunner;
//! use toolgate::load::{load_plan, Sources};
//!
//! let plan = Arc::new(load_plan(&Sources::default()).unwrap());
//! let mut runner = TestRunner::deterministic();
//! runner.run(&toolgate::strategies::session(&plan), |(ctx, usage, now)| {
//!     let act = plan.evaluate(&ctx, &usage, now);
//!     prop_assert!(act.tools.iter().all(|t| (0.0..=1.0).contains(&t.score)));
//!     Ok(())
//! }).unwrap();
//! ```

use std::collections::HashMap;

use proptest::prelude::*;

use crate::context::{SessionContext, UsageStats};
use crate::plan::{N_FEATURES, Plan};

fn words(plan: &Plan) -> Vec<String> {
    let mut w: Vec<String> = plan.vocab.keys().cloned().collect();
    w.sort();
    w.extend(
        ["the", "数据库", "用户", "read", "zzz", "Ünïcode", ""]
            .iter()
            .map(|s| s.to_string()),
    );
    w
}

fn languages() -> Vec<Option<String>> {
    [
        "python",
        "sql",
        "html",
        "css",
        "javascript",
        "typescript",
        "rust",
        "go",
        "PYTHON",
    ]
    .iter()
    .map(|s| Some(s.to_string()))
    .chain([None])
    .collect()
}

/// A session context drawn from the plan's vocabulary, stages and tool names.
pub fn context(plan: &Plan) -> impl Strategy<Value = SessionContext> + use<> {
    let vocab = words(plan);
    let mut names: Vec<String> = plan.tools.iter().map(|t| t.name.clone()).collect();
    names.push("db_query".into());
    let stages: Vec<Option<String>> = plan
        .stages
        .iter()
        .cloned()
        .map(Some)
        .chain([None])
        .collect();
    (
        prop::collection::vec(prop::sample::select(vocab), 0..12),
        prop::collection::vec(".{0,8}", 0..3),
        prop::sample::select(stages),
        prop::collection::vec(prop::sample::select(names), 0..6),
        0.0f64..7200.0,
        prop::collection::vec("[a-z]{1,6}\\.(py|sql|rs|ts|md|json)", 0..4),
        prop::sample::select(languages()),
        prop::sample::select(vec![
            None,
            Some("web".to_string()),
            Some("cli".into()),
            Some("library".into()),
            Some("data".into()),
        ]),
    )
        .prop_map(|(kw, extra, stage, recent, dur, files, lang, project)| {
            let mut user_intent_keywords = kw;
            user_intent_keywords.extend(extra);
            SessionContext {
                user_intent_keywords,
                previous_intent_keywords: vec![],
                user_message: None,
                previous_user_messages: vec![],
                user_intent_entities: vec![],
                conversation_stage: stage,
                recent_tool_calls: recent,
                session_duration_seconds: dur,
                active_files: files,
                active_language: lang,
                project_type: project,
            }
        })
}

/// Usage stats over the plan's tools: counts up to 50, last calls within 1,000 s
/// before `now` = 0, frequencies in \[0,1\].
pub fn usage(plan: &Plan) -> impl Strategy<Value = UsageStats> + use<> {
    let names: Vec<String> = plan.tools.iter().map(|t| t.name.clone()).collect();
    let n = names.len();
    let entry = (0..n.max(1), 0u64..50, -1000.0f64..0.0, 0.0f64..=1.0);
    prop::collection::vec(entry, 0..(n.min(20) + 1)).prop_map(move |entries| {
        let mut u = UsageStats {
            call_counts: HashMap::new(),
            last_call_at: HashMap::new(),
            usage_frequency: HashMap::new(),
        };
        for (i, c, at, f) in entries {
            if let Some(name) = names.get(i) {
                if c > 0 {
                    u.call_counts.insert(name.clone(), c);
                    u.last_call_at.insert(name.clone(), at);
                }
                u.usage_frequency.insert(name.clone(), f);
            }
        }
        u
    })
}

/// A whole evaluation input: context, usage and `now` (always 0.0, the clock of
/// [`usage`]).
pub fn session(plan: &Plan) -> impl Strategy<Value = (SessionContext, UsageStats, f64)> + use<> {
    (context(plan), usage(plan)).prop_map(|(c, u)| (c, u, 0.0))
}

/// The intent terms that matter to `tools`: their trigger terms, the domain
/// rules' keywords, and a word no tool knows.
fn focus_words(plan: &Plan, tools: &[usize]) -> Vec<String> {
    let mut terms = vec![String::new(); plan.vocab.len()];
    for (t, &id) in &plan.vocab {
        terms[id as usize] = t.clone();
    }
    let mut w: Vec<String> = Vec::new();
    for &i in tools.iter().take(64) {
        w.extend(
            plan.tools[i]
                .keyword_ids
                .iter()
                .map(|&id| terms[id as usize].clone()),
        );
    }
    for r in &plan.rules {
        for entry in &r.condition.keywords_any {
            w.extend(entry.iter().map(|&id| terms[id as usize].clone()));
        }
    }
    w.push("zzz".into());
    w.sort();
    w.dedup();
    w
}

/// Sessions centred on `tools` (indices into the plan's tools): half of them
/// as [`session`] draws them, half drawn from those tools' trigger terms and
/// the rules' keywords, their preferred stages, the languages the rules test,
/// with recent calls of them and usage of them and of a few other tools. A search for a property of a few
/// tools finds its counterexamples much sooner this way. `now` is 0.0.
pub fn session_for(
    plan: &Plan,
    tools: &[usize],
) -> impl Strategy<Value = (SessionContext, UsageStats, f64)> + use<> {
    let focus: Vec<usize> = if tools.is_empty() {
        (0..plan.tools.len()).collect()
    } else {
        tools.to_vec()
    };
    let vocab = focus_words(plan, &focus);
    let mut names: Vec<String> = focus
        .iter()
        .take(64)
        .map(|&i| plan.tools[i].name.clone())
        .collect();
    if names.is_empty() {
        names.push("db_query".into());
    }
    let mut stages: Vec<Option<String>> = vec![None];
    for &i in focus.iter().take(64) {
        for (s, name) in plan.stages.iter().enumerate() {
            if plan.tools[i].stage_mask & (1u64 << s) != 0 && !stages.contains(&Some(name.clone()))
            {
                stages.push(Some(name.clone()));
            }
        }
    }
    for s in &plan.stages {
        if !stages.contains(&Some(s.clone())) {
            stages.push(Some(s.clone()));
        }
    }
    let mut langs: Vec<Option<String>> = vec![None];
    for r in &plan.rules {
        for l in &r.condition.language {
            if !langs.contains(&Some(l.clone())) {
                langs.push(Some(l.clone()));
            }
        }
    }
    let mut exts: Vec<String> = vec!["md".into()];
    for r in &plan.rules {
        exts.extend(r.condition.file_extensions.iter().cloned());
    }
    let mut projects: Vec<Option<String>> = vec![None];
    for r in &plan.rules {
        projects.extend(r.condition.project_type.iter().cloned().map(Some));
    }
    // usage falls on the focus tools and on a few others (calls of other
    // tools end the cold start without raising the focus tools' usage)
    let mut usage_names = names.clone();
    usage_names.extend(
        (0..plan.tools.len())
            .filter(|i| !focus.contains(i))
            .take(8)
            .map(|i| plan.tools[i].name.clone()),
    );
    let n = usage_names.len();
    let focused = (
        prop::collection::vec(prop::sample::select(vocab), 0..8),
        prop::sample::select(stages),
        prop::collection::vec(prop::sample::select(names), 0..4),
        prop::collection::vec(
            prop::sample::select(exts).prop_map(|e| format!("f.{e}")),
            0..3,
        ),
        prop::sample::select(langs),
        prop::sample::select(projects),
        prop::collection::vec(
            (0..n, 0u64..20, 0.0f64..1000.0, 0.0f64..=1.0),
            0..(n.min(6) + 1),
        ),
    )
        .prop_map(move |(kw, stage, recent, files, lang, project, uses)| {
            let mut u = UsageStats::default();
            for (i, c, ago, f) in uses {
                let name = &usage_names[i];
                if c > 0 {
                    u.call_counts.insert(name.clone(), c);
                    u.last_call_at.insert(name.clone(), -ago);
                }
                u.usage_frequency.insert(name.clone(), f);
            }
            let ctx = SessionContext {
                user_intent_keywords: kw,
                conversation_stage: stage,
                recent_tool_calls: recent,
                active_files: files,
                active_language: lang,
                project_type: project,
                ..SessionContext::default()
            };
            (ctx, u, 0.0)
        });
    prop_oneof![session(plan), focused]
}

/// Feature vectors (in [`FEATURES`](crate::plan::FEATURES) order) within the
/// ranges the policy's own parameters give each feature (see
/// `compile::bounds`): half of them drawn from the attainable values (stage
/// hit or miss, recency 0 or bonus, the ends of each range, ...), half
/// uniformly within each feature's interval. For formula-level properties:
/// `plan.formula.eval(&x, None)` is the raw score a tool with these features
/// gets.
pub fn features(plan: &Plan) -> impl Strategy<Value = [f64; N_FEATURES]> + use<> {
    use crate::compile::bounds::{DomainWeights, policy_ranges};
    let ranges = policy_ranges(plan, &DomainWeights::of(plan), true);
    let points: Vec<Vec<f64>> = ranges
        .iter()
        .map(|r| {
            let mut v: Vec<f64> = r.points.iter().map(|p| p.value).collect();
            if v.is_empty() {
                v.push(0.0);
            }
            v
        })
        .collect();
    let bounds: Vec<(f64, f64)> = ranges
        .iter()
        .zip(&points)
        .map(|(r, p)| {
            if r.interval.lo.is_finite() && r.interval.hi.is_finite() {
                (r.interval.lo, r.interval.hi)
            } else {
                (p[0], p[0])
            }
        })
        .collect();
    let grid = prop::array::uniform::<_, N_FEATURES>(0usize..64)
        .prop_map(move |idx| std::array::from_fn(|f| points[f][idx[f] % points[f].len()]));
    let uniform = prop::array::uniform::<_, N_FEATURES>(0.0f64..=1.0).prop_map(move |u| {
        std::array::from_fn(|f| {
            let (lo, hi) = bounds[f];
            lo + (hi - lo) * u[f]
        })
    });
    prop_oneof![grid, uniform]
}
