//! Property tests for argument coercion and role paths: arbitrary nested
//! schemas (`anyOf`/`oneOf`/`allOf`, `type` lists, `nullable`, recursive
//! `$ref`s, items, properties) and arbitrary nested arguments never panic,
//! take bounded time, give bounded output, and coercion is idempotent and
//! only ever turns strings into other types. Arbitrary arguments through a
//! tool with roles at nested and wildcard paths never panic, and every
//! finding names a path that exists in the arguments.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate::diag::SourceFile;
use toolgate::gate::config::shipped;
use toolgate::gate::schema::ToolSchema;
use toolgate::gate::{Action, Gate};
use toolgate::load::{Sources, load_catalog, load_policy};
use toolgate::parse::tags::parse_tag_file;

fn leaf_schema() -> impl Strategy<Value = Value> {
    let ty = prop_oneof![
        Just("integer"),
        Just("number"),
        Just("boolean"),
        Just("string"),
        Just("null"),
        Just("array"),
        Just("object"),
    ];
    prop_oneof![
        ty.clone().prop_map(|t| json!({ "type": t })),
        (ty.clone(), ty.clone()).prop_map(|(a, b)| json!({ "type": [a, b] })),
        ty.clone()
            .prop_map(|t| json!({ "type": t, "nullable": true })),
        Just(json!({"type": "integer", "minimum": 3, "maximum": 9})),
        Just(json!({"type": "string", "enum": ["auto", "none"]})),
        Just(json!({"enum": [1, "a", null]})),
        Just(json!({"const": true})),
        Just(json!({"$ref": "#/$defs/A"})),
        Just(json!({"$ref": "#/$defs/Missing"})),
        Just(json!({"$ref": "#"})),
        Just(json!({})),
        Just(json!(true)),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    leaf_schema().prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({ "anyOf": v })),
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({ "oneOf": v })),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({ "allOf": v })),
            inner
                .clone()
                .prop_map(|s| json!({ "type": "array", "items": s })),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({
                "type": "object", "properties": { "a": a, "b": b }
            })),
            inner
                .clone()
                .prop_map(|s| json!({ "type": "object", "additionalProperties": s })),
            inner.prop_map(|s| json!({ "anyOf": [s, {"type": "null"}], "nullable": true })),
        ]
    })
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        prop_oneof![
            Just("3"),
            Just("2.5"),
            Just("-7"),
            Just("yes"),
            Just("no"),
            Just("maybe"),
            Just("null"),
            Just("[1, \"2\", null]"),
            Just("{\"a\": \"4\", \"b\": \"true\"}"),
            Just("[[[["),
            Just("1e400"),
            Just("auto"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
        "\\PC{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![Just("a".to_string()), Just("b".to_string()), "[a-c]{1,2}"],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A small deterministic generator (xorshift) for schema-directed values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A value shaped by `s` (through `$ref`, unions and type lists), with
/// scalars often written as strings the way models send them, whole arrays
/// and objects sometimes JSON-encoded, and now and then a value of the
/// wrong kind.
fn sample(root: &Value, s: &Value, rng: &mut Rng, depth: usize) -> Value {
    const JUNK: [&str; 6] = ["maybe", "3.5", "[[[", "null", "1e400", ""];
    if depth > 6 || rng.below(10) == 0 {
        return json!(JUNK[rng.below(JUNK.len())]);
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str)
        && let Some(t) = r.strip_prefix('#').and_then(|p| root.pointer(p))
    {
        return sample(root, t, rng, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(bs)) = s.get(key)
            && !bs.is_empty()
        {
            let b = &bs[rng.below(bs.len())];
            return sample(root, b, rng, depth + 1);
        }
    }
    if let Some(Value::Array(e)) = s.get("enum")
        && !e.is_empty()
    {
        return e[rng.below(e.len())].clone();
    }
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    let t = match s.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) if !ts.is_empty() => ts[rng.below(ts.len())]
            .as_str()
            .unwrap_or("string")
            .to_string(),
        _ => ["integer", "boolean", "string"][rng.below(3)].to_string(),
    };
    let enc = rng.below(2) == 0;
    let v = match t.as_str() {
        "integer" => json!(rng.below(12) as i64 - 2),
        "number" => json!((rng.below(40) as f64) / 4.0),
        "boolean" => json!(rng.below(2) == 0),
        "null" => return Value::Null,
        "array" => {
            let items = s.get("items").cloned().unwrap_or(json!({}));
            let n = rng.below(3);
            Value::Array(
                (0..n)
                    .map(|_| sample(root, &items, rng, depth + 1))
                    .collect(),
            )
        }
        "object" => {
            let mut m = Map::new();
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (k, p) in props {
                    if rng.below(4) != 0 {
                        m.insert(k.clone(), sample(root, p, rng, depth + 1));
                    }
                }
            }
            if let Some(extra) = s.get("additionalProperties").filter(|a| a.is_object()) {
                m.insert("z".into(), sample(root, extra, rng, depth + 1));
            }
            Value::Object(m)
        }
        _ => return json!(["auto", "x", "5"][rng.below(3)]),
    };
    match (&v, enc) {
        (Value::Number(_) | Value::Bool(_), true) => Value::String(v.to_string()),
        (Value::Array(_) | Value::Object(_), true) if rng.below(3) == 0 => {
            Value::String(v.to_string())
        }
        _ => v,
    }
}

fn count(v: &Value) -> (usize, usize) {
    match v {
        Value::String(_) => (1, 1),
        Value::Array(a) => a.iter().fold((1, 0), |(n, s), x| {
            let (a, b) = count(x);
            (n + a, s + b)
        }),
        Value::Object(o) => o.values().fold((1, 0), |(n, s), x| {
            let (a, b) = count(x);
            (n + a, s + b)
        }),
        _ => (1, 0),
    }
}

/// Every non-string value of `before` is unchanged in `after` (where the
/// same path still exists): coercion only turns strings into other types.
fn only_strings_changed(before: &Value, after: &Value) -> bool {
    match (before, after) {
        (Value::String(_), _) => true,
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| only_strings_changed(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, x)| b.get(k).is_some_and(|y| only_strings_changed(x, y)))
        }
        (x, y) => x == y,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_schemas_and_arguments_coerce_safely(
        a in schema(), b in schema(), defs in schema(), seed in 1..u64::MAX, other in value()
    ) {
        let root = json!({
            "type": "object",
            "properties": {"a": a, "b": b},
            "$defs": {"A": defs}
        });
        let Ok(s) = ToolSchema::compile(&root) else {
            return Ok(());
        };
        let cfg = shipped();
        // `a` shaped by its schema, `b` anything at all.
        let mut rng = Rng(seed);
        let sent = json!({"a": sample(&root, &root["properties"]["a"], &mut rng, 0), "b": other});
        let (values, strings) = count(&sent);
        let mut coerced = sent.clone();
        let t = Instant::now();
        let r = s.check("t", &mut coerced, &cfg.coercion, &cfg.checks);
        prop_assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
        prop_assert!(only_strings_changed(&sent, &coerced), "{sent} -> {coerced}");
        // Bounded output: a coercion per string (JSON strings add their
        // contents), a handful of findings per value.
        let (after_values, _) = count(&coerced);
        prop_assert!(r.coerced.len() <= strings + after_values, "{:?}", r.coerced);
        prop_assert!(r.findings.len() <= 4 * (values + after_values), "{:?}", r.findings);
        for c in &r.coerced {
            prop_assert_eq!(c.from, "string");
            prop_assert!(coerced.pointer(&c.path).is_some(), "{} not in {}", c.path, coerced);
        }
        // Idempotent: the coerced arguments need no more coercion.
        let mut again = coerced.clone();
        let r2 = s.check("t", &mut again, &cfg.coercion, &cfg.checks);
        prop_assert_eq!(&again, &coerced);
        prop_assert!(r2.coerced.is_empty(), "{:?}", r2.coerced);
        prop_assert_eq!(r.findings.is_empty(), r2.findings.is_empty());
    }
}

const TAGS: &str = r#"
[[tool]]
name = "nested.tool"
arguments = { "/edits/*/file_path" = "path", "/steps/*/run" = "shell", "/steps/*/argv" = "shell_argv", "/q/*" = "sql", "/deep/*/*/p" = "path" }
input_schema = '''{"type": "object"}'''
"#;

fn gate() -> &'static Gate {
    static G: OnceLock<Gate> = OnceLock::new();
    G.get_or_init(|| {
        let mut tools = load_catalog(&Sources::default()).unwrap();
        tools.extend(parse_tag_file(SourceFile::new("nested.toml", TAGS.to_string())).unwrap());
        Gate::new(Arc::new(
            toolgate::compile::compile(&load_policy(None).unwrap(), tools).unwrap(),
        ))
    })
}

fn arguments() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<i32>().prop_map(Value::from),
        prop_oneof![
            Just("src/main.rs"),
            Just("/etc/passwd"),
            Just("../../x"),
            Just("rm -rf /"),
            Just("git status"),
            Just("SELECT 1"),
            Just("DROP TABLE t"),
            Just("$(curl x | sh)"),
            Just("~/.ssh/id_rsa"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("edits".to_string()),
                    Just("file_path".to_string()),
                    Just("steps".to_string()),
                    Just("run".to_string()),
                    Just("argv".to_string()),
                    Just("q".to_string()),
                    Just("deep".to_string()),
                    Just("p".to_string()),
                    "[a-z]{1,3}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_arguments_through_nested_roles_never_panic(args in arguments()) {
        let args = match args {
            Value::Object(_) => args,
            other => json!({ "edits": [{"file_path": other.clone()}], "steps": [{"run": other}] }),
        };
        let t = Instant::now();
        let v = gate().check("nested.tool", args.clone());
        prop_assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
        prop_assert!(v.findings.len() <= shipped().limits.max_findings);
        if v.decision != Action::Allow {
            prop_assert!(!v.findings.is_empty());
        }
        for f in &v.findings {
            prop_assert!(
                f.path.is_empty() || args.pointer(&f.path).is_some(),
                "{} is not a path of {}", f.path, args
            );
        }
        // The same arguments give the same verdict.
        let again = gate().check("nested.tool", args);
        prop_assert_eq!(again.decision, v.decision);
        prop_assert_eq!(again.findings.len(), v.findings.len());
    }
}

/// The generators reach what the properties are about: compiled schemas
/// with unions, calls where something is coerced, calls where it is refused.
#[test]
fn the_schema_generator_exercises_unions_and_coercion() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let cfg = shipped();
    let (mut compiled, mut with_unions, mut coerced, mut union_coerced, mut refused) =
        (0, 0, 0, 0, 0);
    for i in 0..400u64 {
        let a = schema().new_tree(&mut runner).unwrap().current();
        let root =
            json!({"type": "object", "properties": {"a": a}, "$defs": {"A": {"type": "integer"}}});
        let Ok(s) = ToolSchema::compile(&root) else {
            continue;
        };
        let v = sample(&root, &root["properties"]["a"], &mut Rng(i * 7919 + 1), 0);
        compiled += 1;
        let union = !s.branches().is_empty();
        with_unions += union as usize;
        let mut args = json!({ "a": v });
        let r = s.check("t", &mut args, &cfg.coercion, &cfg.checks);
        coerced += !r.coerced.is_empty() as usize;
        union_coerced += (union && !r.coerced.is_empty()) as usize;
        refused += !r.findings.is_empty() as usize;
    }
    eprintln!(
        "{compiled} schemas compiled, {with_unions} with unions, {coerced} calls coerced ({union_coerced} through unions), {refused} refused"
    );
    assert!(compiled > 300, "{compiled}");
    assert!(with_unions > 100, "{with_unions}");
    assert!(coerced > 20, "{coerced}");
    assert!(union_coerced > 10, "{union_coerced}");
    assert!(refused > 50, "{refused}");
}
