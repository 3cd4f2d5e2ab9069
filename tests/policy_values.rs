//! No constant of the formula, its rules or its thresholds lives in Rust code:
//! every number of the default policy is changed here, one at a time, and the
//! evaluation of a fixed set of scenarios must change with it.

use std::sync::Arc;

use toolgate::compile::compile;
use toolgate::diag::SourceFile;
use toolgate::input::EvalInput;
use toolgate::parse::policy::parse_policy;
use toolgate::{Plan, Session};

const DEFAULT: &str = include_str!("../policies/default.toml");

const TOOLS: &str = r#"[
 {"name": "sql_tool", "domains": ["database"], "preferred_stages": ["debugging"], "trigger_keywords": ["query", "table"], "base_priority": 0.5, "parameter_complexity": 3},
 {"name": "file_tool", "domains": ["file_operation", "code_generation"], "preferred_stages": ["implementation"], "trigger_keywords": ["read", "file"], "base_priority": 0.2, "parameter_complexity": 1},
 {"name": "all_tool", "domains": ["file_operation", "code_generation", "database", "network", "shell_execution", "data_analysis", "documentation"], "preferred_stages": ["debugging"], "trigger_keywords": ["query", "select", "users"], "base_priority": 1.0, "parameter_complexity": 1},
 {"name": "net_tool", "domains": ["network", "shell_execution"], "trigger_keywords": ["fetch"], "base_priority": 0.4, "parameter_complexity": 5},
 {"name": "py_tool", "domains": ["data_analysis", "documentation"], "preferred_stages": ["exploration"], "trigger_keywords": ["plot", "the"], "base_priority": 0.3, "parameter_complexity": 2},
 {"name": "low_tool", "base_priority": 0.0, "parameter_complexity": 5},
 {"name": "auto_tool", "description": "Tool that does many things alpha beta gamma delta epsilon zeta query"}
]"#;

const SCENARIOS: [&str; 4] = [
    // cold start (2 calls), sql, rule keywords from the message, recency 100 s and 400 s
    r#"{"context": {"conversation_stage": "debugging", "active_language": "sql", "user_intent_keywords": ["query", "select", "users"]},
        "message": "Please run the build and fetch api data",
        "usage": {"call_counts": {"sql_tool": 1, "file_tool": 1}, "seconds_since_last_call": {"sql_tool": 100, "file_tool": 400}}}"#,
    // warm session, python
    r#"{"context": {"conversation_stage": "implementation", "active_language": "python", "user_intent_keywords": ["read", "file"]},
        "usage": {"call_counts": {"sql_tool": 6, "file_tool": 3, "net_tool": 1}, "seconds_since_last_call": {"net_tool": 299, "file_tool": 10}}}"#,
    // web language, no keywords
    r#"{"context": {"conversation_stage": "exploration", "active_language": "javascript"}}"#,
    // no rule fires
    r#"{"context": {"conversation_stage": "documentation", "active_language": "rust"}}"#,
];

fn fingerprint(policy_text: &str) -> String {
    let policy =
        parse_policy(SourceFile::new("p.toml", policy_text)).unwrap_or_else(|e| panic!("{e}"));
    let tools: Vec<toolgate::parse::tags::InlineTool> = serde_json::from_str(TOOLS).unwrap();
    let plan: Arc<Plan> =
        Arc::new(compile(&policy, tools.into_iter().map(|t| t.into_spec()).collect()).unwrap());
    let mut out = String::new();
    let mut previous = None;
    for s in SCENARIOS {
        let input = EvalInput::parse(s).unwrap();
        let (ctx, usage, now) = input.resolve(&plan).unwrap();
        // each scenario follows the previous one in the same session (hysteresis)
        let act = plan.evaluate_with_previous(&ctx, &usage, now, previous.as_ref());
        out += &format!(
            "eff {:.12} {:?}\n",
            act.effective_threshold,
            act.active_names()
        );
        for t in &act.tools {
            out += &format!("  {} {:.12}\n", plan.tools[t.tool].name, t.score);
        }
        previous = Some(act);
    }
    out += &format!(
        "{:?}\n",
        plan.analyzer
            .extract("the alpha beta gamma delta epsilon run the tests")
    );
    let mut s = Session::new();
    for i in 0..8 {
        s.record_call("sql_tool", i as f64, plan.recent_calls_window);
    }
    out += &format!("recent {}\n", s.context.recent_tool_calls.len());
    out
}

/// (what is changed, exact text in policies/default.toml, replacement)
const CHANGES: &[(&str, &str, &str)] = &[
    ("threshold", "threshold = 0.4 ", "threshold = 0.35 "),
    ("clamp low", "clamp = [0.0, 1.0]", "clamp = [0.02, 1.0]"),
    ("clamp high", "clamp = [0.0, 1.0]", "clamp = [0.0, 0.9]"),
    ("min active", "min_active = 0", "min_active = 7"),
    ("max active", "# max_active = 10 ", "max_active = 1 "),
    ("pinned", "pinned = []", "pinned = [\"low_tool\"]"),
    (
        "hysteresis",
        "hysteresis_margin = 0.0",
        "hysteresis_margin = 0.3",
    ),
    (
        "recent calls window",
        "recent_calls_window = 5",
        "recent_calls_window = 3",
    ),
    ("cold start min calls", "min_calls = 5", "min_calls = 2"),
    (
        "cold start factor",
        "threshold_factor = 0.6",
        "threshold_factor = 0.5",
    ),
    ("w_domain", "w_domain = 0.30", "w_domain = 0.31"),
    ("w_keyword", "w_keyword = 0.25", "w_keyword = 0.26"),
    ("w_stage", "w_stage = 0.20", "w_stage = 0.21"),
    ("w_usage", "w_usage = 0.15", "w_usage = 0.16"),
    ("w_priority", "w_priority = 0.10", "w_priority = 0.11"),
    ("w_complexity", "w_complexity = 0.05", "w_complexity = 0.06"),
    ("formula", "+ recency_bonus -", "+ 0.5*recency_bonus -"),
    ("stage hit", "hit = 1.0", "hit = 0.9"),
    ("stage miss", "miss = 0.3", "miss = 0.2"),
    ("usage multiplier", "multiplier = 2.0", "multiplier = 3.0"),
    (
        "usage cap",
        "cap = 1.0                        # min(normalized",
        "cap = 0.8 # min(normalized",
    ),
    (
        "usage normalization",
        "normalization = \"busiest_tool\"",
        "normalization = \"frequency\"",
    ),
    (
        "recency window",
        "window_seconds = 300.0",
        "window_seconds = 200.0",
    ),
    ("recency bonus", "bonus = 0.15 ", "bonus = 0.1 "),
    (
        "complexity min",
        "min = 1                      # parameter_complexity",
        "min = 0 # parameter_complexity",
    ),
    ("complexity max", "max = 5\n", "max = 6\n"),
    (
        "complexity cap",
        "cap = 1.0                    # min((c - 1)",
        "cap = 0.5 # min((c - 1)",
    ),
    (
        "keyword method",
        "method = \"jaccard\"",
        "method = \"containment\"",
    ),
    (
        "domain file_operation",
        "file_operation = 0.3",
        "file_operation = 0.35",
    ),
    (
        "domain code_generation",
        "code_generation = 0.2\n",
        "code_generation = 0.25\n",
    ),
    ("domain database", "database = 0.1\n", "database = 0.15\n"),
    ("domain network", "network = 0.1\n", "network = 0.15\n"),
    (
        "domain shell_execution",
        "shell_execution = 0.1\n",
        "shell_execution = 0.15\n",
    ),
    (
        "domain data_analysis",
        "data_analysis = 0.1\n",
        "data_analysis = 0.15\n",
    ),
    (
        "domain documentation",
        "documentation = 0.1\n",
        "documentation = 0.15\n",
    ),
    (
        "rule python",
        "adjust = { code_generation = 0.2, data_analysis = 0.1 }",
        "adjust = { code_generation = 0.25, data_analysis = 0.1 }",
    ),
    (
        "rule python (2nd delta)",
        "adjust = { code_generation = 0.2, data_analysis = 0.1 }",
        "adjust = { code_generation = 0.2, data_analysis = 0.15 }",
    ),
    (
        "rule sql",
        "adjust = { database = 0.4 }",
        "adjust = { database = 0.45 }",
    ),
    (
        "rule web",
        "adjust = { network = 0.2, code_generation = 0.1 }",
        "adjust = { network = 0.25, code_generation = 0.1 }",
    ),
    (
        "rule web (2nd delta)",
        "adjust = { network = 0.2, code_generation = 0.1 }",
        "adjust = { network = 0.2, code_generation = 0.15 }",
    ),
    (
        "rule database keywords",
        "adjust = { database = 0.3 }",
        "adjust = { database = 0.35 }",
    ),
    (
        "rule network keywords",
        "adjust = { network = 0.3 }",
        "adjust = { network = 0.35 }",
    ),
    (
        "rule shell keywords",
        "adjust = { shell_execution = 0.2 }",
        "adjust = { shell_execution = 0.25 }",
    ),
    (
        "rule condition",
        "language = [\"sql\"]",
        "language = [\"sqlite\"]",
    ),
    ("keyword min length", "min_length = 3", "min_length = 4"),
    ("keyword max count", "max_count = 10", "max_count = 3"),
    ("stop words", "stop_words = [\"the\", ", "stop_words = ["),
    (
        "auto-tag priority",
        "base_priority = 0.3",
        "base_priority = 0.35",
    ),
    (
        "auto-tag keyword count",
        "max_keywords = 10",
        "max_keywords = 12",
    ),
    (
        "auto-tag complexity",
        "parameter_complexity = 1\n",
        "parameter_complexity = 2\n",
    ),
];

#[test]
fn every_value_of_the_policy_has_an_effect() {
    let base = fingerprint(DEFAULT);
    for (what, from, to) in CHANGES {
        assert!(
            DEFAULT.contains(from),
            "{what}: {from:?} is not in the default policy"
        );
        let changed = DEFAULT.replacen(from, to, 1);
        assert_ne!(
            fingerprint(&changed),
            base,
            "changing {what} ({from:?} -> {to:?}) had no effect"
        );
    }
}

/// Keys whose effect needs more than one edit to show; each has its own test below.
// `[discovery]` expiries do not enter the evaluation: the MCP proxy applies
// them to found tools (src/mcp/session.rs unit tests; tests/mcp/test_discovery.py
// changes `expiry_calls` and checks the list).
const COVERED_ELSEWHERE: &[&str] = &["neutral", "expiry_seconds", "expiry_calls"];

#[test]
fn neutral_domain_match_comes_from_the_policy() {
    // With every base weight at 0 and no rule firing, no domain weight can be
    // inferred and every tool gets the neutral domain match.
    let zeroed = DEFAULT
        .replace("file_operation = 0.3", "file_operation = 0.0")
        .replace("code_generation = 0.2\n", "code_generation = 0.0\n")
        .replace("database = 0.1\n", "database = 0.0\n")
        .replace("network = 0.1\n", "network = 0.0\n")
        .replace("shell_execution = 0.1\n", "shell_execution = 0.0\n")
        .replace("data_analysis = 0.1\n", "data_analysis = 0.0\n")
        .replace("documentation = 0.1\n", "documentation = 0.0\n");
    let a = fingerprint(&zeroed);
    let b = fingerprint(&zeroed.replacen("neutral = 0.5", "neutral = 0.7", 1));
    assert_ne!(a, b);
}

#[test]
fn every_number_in_the_policy_is_covered() {
    // Each numeric assignment of the default policy (outside examples and comments)
    // must be named by a CHANGES entry, so a new constant cannot slip in untested.
    let body = DEFAULT.split("[[examples]]").next().unwrap();
    for line in body.lines() {
        let code = line.split('#').next().unwrap().trim();
        let Some((key, value)) = code.split_once('=') else {
            continue;
        };
        let value = value.trim();
        let numeric = value.starts_with(|c: char| {
            c.is_ascii_digit() || c == '[' && value[1..].starts_with(|c: char| c.is_ascii_digit())
        }) || value.starts_with('{') && value.chars().any(|c| c.is_ascii_digit());
        if !numeric {
            continue;
        }
        let key = key.trim();
        if COVERED_ELSEWHERE.contains(&key) {
            continue;
        }
        assert!(
            CHANGES
                .iter()
                .any(|(_, from, _)| from.starts_with(&format!("{key} = "))
                    || (from.contains(key)
                        && from.contains(value.split_whitespace().next().unwrap()))),
            "the default policy's `{code}` is not exercised by CHANGES"
        );
    }
}
