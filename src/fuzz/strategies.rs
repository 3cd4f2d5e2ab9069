//! proptest strategies for property-testing a policy's score bounds
//! (feature `proptest`).
//!
//! The strategies draw contexts and usage from what a plan declares (its stages,
//! keyword vocabulary, tool names, the languages its rules test) mixed with
//! arbitrary strings, so that rules fire and miss. `toolgate check --fuzz N` runs
//! [`fuzz`](super::fuzz) on them; Rust users can run their own properties:
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
use crate::plan::Plan;

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
pub fn context(plan: &Plan) -> impl Strategy<Value = SessionContext> {
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
pub fn usage(plan: &Plan) -> impl Strategy<Value = UsageStats> {
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
pub fn session(plan: &Plan) -> impl Strategy<Value = (SessionContext, UsageStats, f64)> {
    (context(plan), usage(plan)).prop_map(|(c, u)| (c, u, 0.0))
}
