//! Replay, comparison and fit on hand-made traces (library level).

use std::sync::Arc;

use toolgate::load::{Sources, load_plan};
use toolgate::plan::{F_KEYWORD, F_RECENCY, F_USAGE};
use toolgate::replay::engine::{ReplayOptions, replay, replay_with};
use toolgate::replay::stats::{paired, summarize};
use toolgate::replay::trace::parse_trace;
use toolgate::{Activation, Plan};

fn default_plan() -> Arc<Plan> {
    Arc::new(load_plan(&Sources::default()).unwrap())
}

fn policy_plan(path: &str) -> Arc<Plan> {
    Arc::new(
        load_plan(&Sources {
            policy: Some(path.into()),
            ..Default::default()
        })
        .unwrap(),
    )
}

const SESSION: &str = r#"{"session":"s","t":100,"event":"context","stage":"exploration","language":"sql"}
{"session":"s","t":101,"event":"user_message","text":"list the tables of the database"}
{"session":"s","t":110,"event":"tool_call","tool":"sqlite.list_tables","arguments":{}}
{"session":"s","t":115,"event":"user_message","text":"what time is it in Tokyo"}
{"session":"s","t":120,"event":"tool_call","tool":"time.get_current_time","arguments":{"timezone":"Asia/Tokyo"},"outcome":"ok"}
{"session":"s","t":500,"event":"tool_call","tool":"sqlite.list_tables"}
{"session":"s","t":600,"event":"user_message","text":"thanks"}
"#;

#[test]
fn replay_keeps_the_session_state() {
    let plan = default_plan();
    let trace = parse_trace(SESSION, false).unwrap();
    let mut seen: Vec<(usize, Activation)> = Vec::new();
    let r = replay_with(&plan, &trace, &ReplayOptions::default(), |s, a| {
        seen.push((s.line, a.clone()))
    })
    .unwrap();
    assert_eq!(
        r.steps.len(),
        4,
        "3 calls and the final turn without a call"
    );
    let lt = plan.tool_index("sqlite.list_tables").unwrap();
    let (line, a1) = &seen[0];
    assert_eq!(*line, 3);
    assert!(a1.intent_terms.contains(&"tables".to_string()));
    assert_eq!(a1.features(lt)[F_RECENCY], 0.0);
    assert_eq!(a1.total_calls, 0);
    // Second call: the keywords are those of the latest message only; the
    // first call is recent (10 s ago) and counted.
    let (_, a2) = &seen[1];
    assert!(a2.intent_terms.contains(&"time".to_string()));
    assert!(!a2.intent_terms.contains(&"tables".to_string()));
    assert_eq!(a2.features(lt)[F_RECENCY], 0.15);
    assert_eq!(a2.features(lt)[F_USAGE], 1.0);
    assert_eq!(a2.total_calls, 1);
    // Third call, 390 s after the first: no longer recent; two calls made.
    let (_, a3) = &seen[2];
    assert_eq!(a3.features(lt)[F_RECENCY], 0.0);
    assert_eq!(a3.total_calls, 2);
    // The last message has no call: a no-call step on its line.
    let last = r.steps.last().unwrap();
    assert_eq!((last.line, last.called), (7, None));
    // Stage and changes.
    assert!(
        r.steps
            .iter()
            .all(|s| s.stage.as_deref() == Some("exploration"))
    );
    assert!(r.steps[0].initial && !r.steps[1].initial);
    for (s, w) in r.steps.iter().zip(r.steps.iter().skip(1)) {
        // The sets follow from each other: size(next) = size(prev) + added - removed.
        assert_eq!(
            w.active_count as i64,
            s.active_count as i64 + w.added.len() as i64 - w.removed.len() as i64
        );
    }
    let sum = summarize(&r);
    assert_eq!(sum.calls, 3);
    assert_eq!(sum.hits, r.steps.iter().filter(|s| s.hit).count());
    assert_eq!(sum.no_call_active.n, 1);
    assert_eq!(sum.sessions, 1);
    assert_eq!(
        sum.changes_per_session.mean,
        r.steps.iter().filter(|s| s.changed()).count() as f64
    );
}

#[test]
fn unknown_tools_and_stages_name_their_line() {
    let plan = default_plan();
    let text = "{\"session\":\"a\",\"t\":1,\"event\":\"user_message\",\"text\":\"x\"}\n{\"session\":\"a\",\"t\":2,\"event\":\"tool_call\",\"tool\":\"sqlite.list_table\"}\n{\"session\":\"a\",\"t\":3,\"event\":\"context\",\"stage\":\"testing\"}\n{\"session\":\"a\",\"t\":4,\"event\":\"tool_call\",\"tool\":\"sqlite.list_tables\"}\n";
    let trace = parse_trace(text, false).unwrap();
    let e = replay(&plan, &trace, &ReplayOptions::default()).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(
        e.message.contains("did you mean `sqlite.list_tables`"),
        "{e}"
    );
    let opts = ReplayOptions {
        skip_invalid: true,
        keep_active: true,
    };
    let r = replay(&plan, &trace, &opts).unwrap();
    assert_eq!(
        r.skipped.iter().map(|e| e.line).collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert_eq!(r.steps.len(), 1);
    assert_eq!(r.steps[0].active.len(), r.steps[0].active_count);
    assert_eq!(summarize(&r).skipped, 2);
}

#[test]
fn paired_comparison_counts_add_up() {
    let a = default_plan();
    let b = policy_plan("policies/selection.toml");
    let trace = parse_trace(SESSION, false).unwrap();
    let ra = replay(&a, &trace, &ReplayOptions::default()).unwrap();
    let rb = replay(&b, &trace, &ReplayOptions::default()).unwrap();
    let p = paired(&ra, &rb);
    assert_eq!(p.calls, 3);
    assert_eq!(p.both + p.a_only + p.b_only + p.neither, 3);
    assert_eq!(p.discordant.len(), p.a_only + p.b_only);
    let (sa, sb) = (summarize(&ra), summarize(&rb));
    assert!((p.recall_diff - (sb.recall - sa.recall)).abs() < 1e-12);
    assert!((p.size_diff - (sb.active.mean - sa.active.mean)).abs() < 1e-9);
    assert!(p.recall_diff_ci.0 <= p.recall_diff && p.recall_diff <= p.recall_diff_ci.1);
}

#[test]
fn the_selection_policy_uses_bm25() {
    let plan = policy_plan("policies/selection.toml");
    let trace = parse_trace(SESSION, false).unwrap();
    let mut kw = Vec::new();
    replay_with(&plan, &trace, &ReplayOptions::default(), |s, a| {
        if let Some(c) = s.called {
            kw.push(a.features(c)[F_KEYWORD]);
        }
    })
    .unwrap();
    // The called tools of the two messages match them well, and are active.
    assert!(kw[0] > 0.5 && kw[1] > 0.5, "{kw:?}");
    let r = replay(&plan, &trace, &ReplayOptions::default()).unwrap();
    // The second message's tool ranks 4th of 8: the remembered first
    // message (decay 0.3) still lifts its tools.
    assert!(
        r.steps[..2].iter().all(|s| s.hit && s.rank <= Some(4)),
        "{:?}",
        r.steps
    );
}

/// A synthetic catalog and trace where the truth is known: the called tool is
/// always one whose own keyword the user named, and among the two named, the
/// one with the higher priority. Keyword match is the strong signal, priority a
/// weaker one, and the domain and stage features carry nothing.
#[cfg(feature = "fit")]
#[test]
fn fit_recovers_known_weights() {
    use std::path::Path;
    use toolgate::compile::compile;
    use toolgate::load::load_policy;
    use toolgate::parse::tags::InlineTool;
    use toolgate::replay::fit::{FitOptions, fit};

    let n = 40;
    // Keywords made of letters only (the default extractor drops words with digits).
    let word = |i: usize| {
        format!(
            "kw{}{}",
            (b'a' + (i / 26) as u8) as char,
            (b'a' + (i % 26) as u8) as char
        )
    };
    let group = |g: usize| format!("grp{}", (b'a' + g as u8) as char);
    let tools: Vec<_> = (0..n)
        .map(|i| {
            let t: InlineTool = serde_json::from_value(serde_json::json!({
                "name": format!("tool{i}"),
                "description": "synthetic",
                "trigger_keywords": [word(i), group(i % 5)],
                "base_priority": ((i * 37) % 100) as f64 / 100.0,
                "parameter_complexity": 1,
            }))
            .unwrap();
            t.into_spec()
        })
        .collect();
    let mut rng = 12345u64;
    let mut next = |m: usize| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((rng >> 33) as usize) % m
    };
    let prio = |i: usize| ((i * 37) % 100) as f64 / 100.0;
    let mut trace = String::new();
    for s in 0..400 {
        let g = s % 5;
        let a = g + 5 * next(n / 5);
        let mut b = g + 5 * next(n / 5);
        if b == a {
            b = g + 5 * ((a / 5 + 1) % (n / 5));
        }
        let called = if prio(a) >= prio(b) { a } else { b };
        trace.push_str(&format!(
            "{{\"session\":\"s{s}\",\"t\":0,\"event\":\"user_message\",\"text\":\"{} {} {}\"}}\n{{\"session\":\"s{s}\",\"t\":1,\"event\":\"tool_call\",\"tool\":\"tool{called}\"}}\n",
            group(g),
            word(a),
            word(b)
        ));
    }
    let trace = parse_trace(&trace, false).unwrap();
    let policy = load_policy(Some(Path::new("policies/default.toml"))).unwrap();
    let report = fit(
        &policy,
        &tools,
        &trace,
        &FitOptions {
            target_recall: 1.0,
            holdout: 0.25,
            l2: 0.01,
            max_iterations: 300,
            negatives: None,
            skip_invalid: false,
            drop_failing_examples: false,
        },
    )
    .unwrap();
    let auc = |f: &str| {
        report
            .features
            .iter()
            .find(|x| x.feature == f)
            .unwrap()
            .auc
            .unwrap()
    };
    assert!(auc("keyword_match") > 0.95, "{}", auc("keyword_match"));
    assert!(auc("priority_bonus") > 0.5);
    let w = |name: &str| {
        report
            .weights
            .iter()
            .find(|x| x.weight == name)
            .unwrap()
            .after
    };
    assert!(w("w_keyword") > w("w_priority"), "{:?}", report.weights);
    assert!(w("w_priority") > 0.0, "{:?}", report.weights);
    assert!(w("w_domain").abs() < 1e-6 && w("w_stage").abs() < 1e-6);
    // The written policy reaches the target on the held-out sessions too, and
    // exposes far fewer than all 40 tools.
    let after = &report.test.as_ref().expect("held-out calls").after;
    assert!(after.recall >= 0.95, "{}", after.recall);
    assert!(after.active.mean < 10.0, "{}", after.active.mean);
    // And it is the input text but for the weights and threshold.
    let changed: Vec<(&str, &str)> = policy
        .file
        .text
        .lines()
        .zip(report.policy_text.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert!(changed.len() <= 7, "{changed:?}");
    assert!(
        changed
            .iter()
            .all(|(a, _)| a.starts_with("w_") || a.starts_with("threshold"))
    );
    let reparsed = toolgate::parse::policy::parse_policy(toolgate::diag::SourceFile::new(
        "fitted.toml",
        report.policy_text.clone(),
    ))
    .unwrap();
    compile(&reparsed, tools).unwrap();
}
