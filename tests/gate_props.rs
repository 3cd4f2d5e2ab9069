//! Property tests: arbitrary arguments, command lines, SQL and JSON text
//! go through the whole gate without a panic, in bounded time, and the
//! verdict is consistent (coercion is idempotent; what is allowed stays
//! allowed when checked again).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate::gate::{Action, Gate};
use toolgate::load::{Sources, load_catalog, load_policy};
use toolgate::parse::tags::InlineTool;

fn gate() -> &'static Gate {
    static G: OnceLock<Gate> = OnceLock::new();
    G.get_or_init(|| {
        let policy = load_policy(None).unwrap();
        let mut tools = load_catalog(&Sources::default()).unwrap();
        let t: InlineTool = serde_json::from_value(json!({
            "name": "props.typed",
            "input_schema": {"type": "object", "properties": {
                "n": {"type": "integer", "minimum": 0},
                "x": {"type": "number"},
                "b": {"type": "boolean"},
                "s": {"type": "string"},
                "list": {"type": "array", "items": {"type": "integer"}},
                "obj": {"type": "object", "properties": {"k": {"type": "boolean"}}},
                "e": {"enum": ["a", "b"]}
            }}
        }))
        .unwrap();
        tools.push(t.into_spec());
        Gate::new(Arc::new(
            toolgate::compile::compile(&policy, tools).unwrap(),
        ))
    })
}

const TOOLS: [&str; 7] = [
    "shell.run_command",
    "shell.shell_execute",
    "sqlite.write_query",
    "sqlite.read_query",
    "filesystem.write_file",
    "memory.create_entities",
    "props.typed",
];

/// Shell-ish text: words, quotes, operators, expansions, brackets.
fn shellish() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        Just("rm".to_string()),
        Just("-rf".to_string()),
        Just("/".to_string()),
        Just("~".to_string()),
        Just("$HOME".to_string()),
        Just("sudo".to_string()),
        Just("bash -c".to_string()),
        Just("find . -exec".to_string()),
        Just("{}".to_string()),
        Just("\\;".to_string()),
        Just("eval".to_string()),
        Just("| sh".to_string()),
        Just("&&".to_string()),
        Just(";".to_string()),
        Just("$(".to_string()),
        Just(")".to_string()),
        Just("`".to_string()),
        Just("'".to_string()),
        Just("\"".to_string()),
        Just("<<<".to_string()),
        Just("<(".to_string()),
        Just("((".to_string()),
        Just("${x:-".to_string()),
        Just("}".to_string()),
        Just("$[".to_string()),
        Just("\n".to_string()),
        "[a-z0-9./*?=-]{0,8}",
    ];
    prop::collection::vec(atoms, 0..24).prop_map(|v| v.join(" "))
}

fn sqlish() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        Just("SELECT".to_string()),
        Just("DELETE FROM".to_string()),
        Just("UPDATE t SET a = 1".to_string()),
        Just("DROP TABLE".to_string()),
        Just("WHERE".to_string()),
        Just("1=1".to_string()),
        Just("--".to_string()),
        Just("/*".to_string()),
        Just("*/".to_string()),
        Just("'".to_string()),
        Just(";".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("\n".to_string()),
        "[a-z0-9_*,.]{0,8}",
    ];
    prop::collection::vec(atoms, 0..20).prop_map(|v| v.join(" "))
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::from),
        "\\PC{0,16}".prop_map(Value::String),
        prop_oneof![
            Just("3"),
            Just("3.5"),
            Just(" yes "),
            Just("maybe"),
            Just("[1, \"2\"]"),
            Just("{\"k\": \"no\"}"),
            Just("inf"),
            Just("NaN"),
            Just("1e400"),
            Just("00713"),
            Just("[[[["),
            Just("-0"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("n".to_string()),
                    Just("x".to_string()),
                    Just("b".to_string()),
                    Just("s".to_string()),
                    Just("list".to_string()),
                    Just("obj".to_string()),
                    Just("command".to_string()),
                    Just("query".to_string()),
                    Just("path".to_string()),
                    Just("k".to_string()),
                    "[a-z]{1,4}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn bounded(f: impl FnOnce() -> toolgate::gate::Verdict) -> toolgate::gate::Verdict {
    let t = Instant::now();
    let v = f();
    // Debug build, shared CI machine: generous, but catches blow-ups.
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    v
}

fn consistent(tool: &str, v: &toolgate::gate::Verdict) {
    if v.decision != Action::Allow {
        assert!(
            !v.findings.is_empty(),
            "{tool}: {} without findings",
            v.decision
        );
    }
    if v.decision == Action::Allow {
        // Coercion is idempotent and an allowed call stays allowed.
        let again = gate().check(tool, v.arguments.clone());
        assert_eq!(again.decision, Action::Allow, "{tool}: {}", again.message);
        assert_eq!(again.arguments, v.arguments);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_arguments_never_panic(tool in 0..TOOLS.len(), args in json_value()) {
        let tool = TOOLS[tool];
        let v = bounded(|| gate().check(tool, args));
        consistent(tool, &v);
    }

    #[test]
    fn arbitrary_command_lines_never_panic(line in shellish()) {
        let v = bounded(|| gate().check("shell.run_command", json!({"command": line})));
        consistent("shell.run_command", &v);
    }

    #[test]
    fn arbitrary_argv_never_panic(argv in prop::collection::vec(shellish(), 0..6)) {
        let v = bounded(|| gate().check("shell.shell_execute", json!({"command": argv})));
        consistent("shell.shell_execute", &v);
    }

    #[test]
    fn arbitrary_sql_never_panics(q in sqlish(), read in any::<bool>()) {
        let tool = if read { "sqlite.read_query" } else { "sqlite.write_query" };
        let v = bounded(|| gate().check(tool, json!({"query": q})));
        consistent(tool, &v);
    }

    #[test]
    fn arbitrary_json_text_never_panics(text in "\\PC{0,64}", tool in 0..TOOLS.len()) {
        let v = bounded(|| gate().check_json(None, TOOLS[tool], &text));
        if serde_json::from_str::<Value>(&text).is_err() {
            prop_assert_eq!(v.decision, Action::Deny);
        }
    }
}

#[test]
fn huge_and_deep_arguments_are_rejected_quickly() {
    let g = gate();
    let huge = "a".repeat(4 << 20);
    let v = bounded(|| g.check("shell.run_command", json!({"command": huge})));
    assert_eq!(v.decision, Action::Deny);
    assert!(v.message.contains("too large"), "{}", v.message);
    let mut deep = json!("x");
    for _ in 0..100 {
        deep = json!([deep]);
    }
    let v = bounded(|| g.check("props.typed", json!({"list": deep})));
    assert_eq!(v.decision, Action::Deny);
    let text = format!("{{\"s\": {}1{}}}", "[".repeat(200_000), "]".repeat(200_000));
    let v = bounded(|| g.check_json(None, "props.typed", &text));
    assert_eq!(v.decision, Action::Deny);
    let wide: Vec<Value> = (0..200_000).map(Value::from).collect();
    let v = bounded(|| g.check("props.typed", json!({"list": wide})));
    assert_eq!(v.decision, Action::Deny);
    let long_line = "echo a && ".repeat(20_000);
    let v = bounded(|| g.check("shell.run_command", json!({"command": long_line})));
    assert_ne!(v.decision, Action::Allow);
}
