//! Coercion against real parameter schemas.
//!
//! The parameters come from the BFCL function docs (`../shared/data/bfcl`,
//! or the slice in `tests/data/bfcl-slice`), each with the ground-truth
//! value of a possible answer, and from the MCP catalogs
//! (`../shared/data/mcp-catalogs`, or `tests/data/mcp-catalogs`), each with a
//! value generated from its schema. Only values that the parameter's schema
//! accepts (checked with the `jsonschema` crate) are kept, and only typed
//! ones (numbers, booleans, arrays, objects): those are the ones a model
//! sends as strings.
//!
//! Each parameter is then written the ways real schema generators write
//! optional and nested parameters — Pydantic's `anyOf [T, null]` and
//! `$ref`/`$defs` (v2) or `allOf [$ref]` with `definitions` (v1), zod's
//! `type: [T, "null"]`, OpenAPI's `nullable: true`, `oneOf` with `null`
//! first, unions with a string enum or a plain string, an object property,
//! array items — and called with the value encoded as a string (and, for
//! arrays and objects, with each typed leaf encoded as a string).
//!
//! The expected result is computed independently of the gate's coercion
//! code: the encoded value must come back as the original typed value (the
//! schema declares its type at every level, so decoding is exact), and the
//! result must be valid under the wrapped schema by the `jsonschema` crate.
//! Where the documented branch order says the string stays a string (a
//! union with a plain `string` branch that it already satisfies), it must
//! stay unchanged. `null` stays `null` where a wrapper allows it and is never
//! coerced where it does not.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use toolgate::gate::config::shipped;
use toolgate::gate::schema::ToolSchema;
use toolgate::replay::bfcl::map_schema;

struct Sample {
    source: String,
    schema: Value,
    value: Value,
}

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared/data/<sub>` when present, else `tests/data/<fallback>`.
fn data_dir(sub: &str, fallback: &str) -> (PathBuf, bool) {
    for base in ["../shared/data", "../../shared/data"] {
        let p = manifest().join(base).join(sub);
        if p.exists() {
            return (p, true);
        }
    }
    (manifest().join("tests/data").join(fallback), false)
}

fn jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn valid(schema: &Value, v: &Value) -> bool {
    jsonschema::validator_for(schema)
        .map(|val| val.is_valid(v))
        .unwrap_or(false)
}

/// The schema declares one typed JSON type (what coercion converts to).
fn declares_type(schema: &Value) -> bool {
    matches!(
        schema.get("type").and_then(Value::as_str),
        Some("integer" | "number" | "boolean" | "array" | "object")
    )
}

fn typed(v: &Value) -> bool {
    matches!(
        v,
        Value::Number(_) | Value::Bool(_) | Value::Array(_) | Value::Object(_)
    )
}

fn bfcl_samples(dir: &Path, out: &mut Vec<Sample>) {
    for name in ["BFCL_v4_multiple.json", "BFCL_v4_live_multiple.json"] {
        let questions = jsonl(&dir.join(name));
        let answers = jsonl(&dir.join("possible_answer").join(name));
        for a in &answers {
            let Some(q) = questions.iter().find(|q| q["id"] == a["id"]) else {
                continue;
            };
            let funcs = q["function"].as_array().cloned().unwrap_or_default();
            for gt in a["ground_truth"].as_array().into_iter().flatten() {
                for (fname, params) in gt.as_object().into_iter().flatten() {
                    let Some(f) = funcs.iter().find(|f| f["name"] == *fname) else {
                        continue;
                    };
                    for (p, vals) in params.as_object().into_iter().flatten() {
                        let Some(ps) = f["parameters"]["properties"].get(p) else {
                            continue;
                        };
                        let schema = map_schema(ps);
                        if !declares_type(&schema) {
                            continue;
                        }
                        let Some(value) = vals
                            .as_array()
                            .into_iter()
                            .flatten()
                            .find(|v| typed(v) && valid(&schema, v))
                        else {
                            continue;
                        };
                        out.push(Sample {
                            source: format!("bfcl {}: {fname}.{p}", a["id"]),
                            schema,
                            value: value.clone(),
                        });
                    }
                }
            }
        }
    }
    // Multi-turn API classes: their parameters, with generated values.
    let docs = dir.join("multi_turn_func_doc");
    if let Ok(rd) = std::fs::read_dir(&docs) {
        let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        files.sort();
        for file in files {
            for f in jsonl(&file) {
                for (p, ps) in f["parameters"]["properties"]
                    .as_object()
                    .into_iter()
                    .flatten()
                {
                    let schema = map_schema(ps);
                    push_generated(
                        out,
                        format!("bfcl {}: {}.{p}", file.display(), f["name"]),
                        schema,
                    );
                }
            }
        }
    }
}

fn mcp_samples(dir: &Path, out: &mut Vec<Sample>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for file in files {
        let cat: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap_or(Value::Null);
        for t in cat["tools"].as_array().into_iter().flatten() {
            let schema = &t["inputSchema"];
            for (p, ps) in schema["properties"].as_object().into_iter().flatten() {
                push_generated(
                    out,
                    format!("mcp {}: {}.{p}", file.display(), t["name"]),
                    ps.clone(),
                );
            }
        }
    }
}

fn push_generated(out: &mut Vec<Sample>, source: String, schema: Value) {
    if !declares_type(&schema) {
        return;
    }
    let Some(value) = generate(&schema, 0) else {
        return;
    };
    if typed(&value) && valid(&schema, &value) {
        out.push(Sample {
            source,
            schema,
            value,
        });
    }
}

/// A value a schema accepts, built from its declared type (and enum,
/// minimum, required properties): the generator knows nothing of the gate.
fn generate(s: &Value, depth: usize) -> Option<Value> {
    if depth > 6 {
        return None;
    }
    if let Some(Value::Array(e)) = s.get("enum") {
        return e.first().cloned();
    }
    if let Some(d) = s.get("default").filter(|d| !d.is_null()) {
        return Some(d.clone());
    }
    let t = s.get("type").and_then(Value::as_str)?;
    Some(match t {
        "integer" => {
            let min = s.get("minimum").and_then(Value::as_i64).unwrap_or(3);
            json!(min.max(3))
        }
        "number" => {
            let min = s.get("minimum").and_then(Value::as_f64).unwrap_or(2.5);
            json!(if min > 2.5 { min } else { 2.5 })
        }
        "boolean" => json!(true),
        "string" => json!("text"),
        "array" => {
            let item = s
                .get("items")
                .and_then(|i| generate(i, depth + 1))
                .unwrap_or(json!("text"));
            json!([item.clone(), item])
        }
        "object" => {
            let mut m = Map::new();
            let props = s.get("properties").and_then(Value::as_object);
            for (k, p) in props.into_iter().flatten() {
                if let Some(v) = generate(p, depth + 1) {
                    m.insert(k.clone(), v);
                }
            }
            Value::Object(m)
        }
        _ => return None,
    })
}

fn samples() -> (Vec<Sample>, bool) {
    let mut out = Vec::new();
    let (bfcl, shared_b) = data_dir("bfcl", "bfcl-slice");
    bfcl_samples(&bfcl, &mut out);
    let (mcp, shared_m) = data_dir("mcp-catalogs", "mcp-catalogs");
    mcp_samples(&mcp, &mut out);
    let mut seen = BTreeSet::new();
    out.retain(|s| seen.insert(format!("{}|{}", s.schema, s.value)));
    (out, shared_b && shared_m)
}

/// The value with every scalar that the schema types as a number or a
/// boolean, at every level, written as a string ("3", "true").
fn encode_leaves(schema: &Value, v: &Value) -> Value {
    match v {
        Value::Number(_) | Value::Bool(_) => Value::String(v.to_string()),
        Value::Array(a) => {
            let item = schema.get("items");
            Value::Array(
                a.iter()
                    .map(|x| match item {
                        Some(i) if i.get("type").is_some() => encode_leaves(i, x),
                        _ => x.clone(),
                    })
                    .collect(),
            )
        }
        Value::Object(o) => {
            let props = schema.get("properties").and_then(Value::as_object);
            Value::Object(
                o.iter()
                    .map(|(k, x)| {
                        let enc = match props.and_then(|p| p.get(k)) {
                            Some(p) if p.get("type").is_some() => encode_leaves(p, x),
                            _ => x.clone(),
                        };
                        (k.clone(), enc)
                    })
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// The whole value as one string: `"3"`, `"true"`, `"[1, 2]"`.
fn encode_whole(v: &Value) -> Value {
    Value::String(v.to_string())
}

struct Wrapper {
    name: &'static str,
    /// The tool's input schema for parameter `p` written this way.
    build: fn(&Value) -> Value,
    /// Whether `null` is a valid argument.
    allows_null: bool,
    /// Whether an encoded string stays a string (a branch it satisfies).
    string_stays: bool,
}

fn tool(prop: Value) -> Value {
    json!({"type": "object", "properties": {"p": prop}, "required": ["p"]})
}

fn with_defs(prop: Value, p: &Value) -> Value {
    let mut t = tool(prop);
    t["$defs"] = json!({ "P": p });
    t
}

fn wrappers() -> Vec<Wrapper> {
    vec![
        Wrapper {
            name: "plain",
            build: |p| tool(p.clone()),
            allows_null: false,
            string_stays: false,
        },
        Wrapper {
            name: "pydantic Optional: anyOf [T, null]",
            build: |p| tool(json!({"anyOf": [p, {"type": "null"}], "default": null, "title": "P"})),
            allows_null: true,
            string_stays: false,
        },
        Wrapper {
            name: "zod nullable: type [T, null]",
            build: |p| {
                let mut q = p.clone();
                let t = q["type"].clone();
                q["type"] = json!([t, "null"]);
                tool(q)
            },
            allows_null: true,
            string_stays: false,
        },
        Wrapper {
            name: "OpenAPI nullable: true",
            build: |p| {
                let mut q = p.clone();
                q["nullable"] = json!(true);
                tool(q)
            },
            allows_null: true,
            string_stays: false,
        },
        Wrapper {
            name: "pydantic v2 model: $ref to $defs",
            build: |p| with_defs(json!({"$ref": "#/$defs/P"}), p),
            allows_null: false,
            string_stays: false,
        },
        Wrapper {
            name: "pydantic v2 Optional model: anyOf [$ref, null]",
            build: |p| {
                with_defs(
                    json!({"anyOf": [{"$ref": "#/$defs/P"}, {"type": "null"}]}),
                    p,
                )
            },
            allows_null: true,
            string_stays: false,
        },
        Wrapper {
            name: "pydantic v1 model: allOf [$ref] with definitions",
            build: |p| {
                json!({"$schema": "http://json-schema.org/draft-07/schema#",
                       "type": "object",
                       "properties": {"p": {"allOf": [{"$ref": "#/definitions/P"}], "description": "the parameter"}},
                       "required": ["p"], "definitions": {"P": p}})
            },
            allows_null: false,
            string_stays: false,
        },
        Wrapper {
            name: "oneOf [null, T]",
            build: |p| tool(json!({"oneOf": [{"type": "null"}, p]})),
            allows_null: true,
            string_stays: false,
        },
        Wrapper {
            name: "anyOf [string enum, T]",
            build: |p| tool(json!({"anyOf": [{"type": "string", "enum": ["auto", "none"]}, p]})),
            allows_null: false,
            string_stays: false,
        },
        Wrapper {
            name: "anyOf [T, string]",
            build: |p| tool(json!({"anyOf": [p, {"type": "string"}]})),
            allows_null: false,
            string_stays: true,
        },
    ]
}

fn check(schema: &Value, args: Value) -> (Value, Vec<toolgate::gate::Finding>, usize) {
    let cfg = shipped();
    let s = ToolSchema::compile(schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
    let mut a = args;
    let r = s.check("t", &mut a, &cfg.coercion, &cfg.checks);
    (a, r.findings, r.coerced.len())
}

#[test]
fn real_parameter_schemas_coerce_string_encoded_values() {
    let (all, shared) = samples();
    // The full data holds several hundred typed parameters; the slices in
    // tests/data some dozens.
    let min = if shared { 300 } else { 40 };
    assert!(
        all.len() >= min,
        "{} real parameter samples (shared data: {shared})",
        all.len()
    );
    let mut kinds = BTreeSet::new();
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for s in &all {
        kinds.insert(s.schema["type"].as_str().unwrap_or("?").to_string());
        for w in wrappers() {
            let schema = (w.build)(&s.schema);
            let mut encodings = vec![("whole", encode_whole(&s.value))];
            if s.value.is_array() || s.value.is_object() {
                encodings.push(("leaves", encode_leaves(&s.schema, &s.value)));
            }
            for (how, enc) in encodings {
                checked += 1;
                let (got, findings, n) = check(&schema, json!({ "p": enc.clone() }));
                let want = if w.string_stays && enc.is_string() {
                    enc.clone()
                } else {
                    s.value.clone()
                };
                let ok = findings.is_empty()
                    && got["p"] == want
                    && valid(&schema, &got)
                    && valid(&s.schema, &got["p"]) != (w.string_stays && enc.is_string())
                    && (n > 0) == (got["p"] != enc);
                if !ok {
                    failures.push(format!(
                        "{} [{}; {how}] sent {} -> got {} (want {want}), {} coercions, findings: {:?}",
                        s.source,
                        w.name,
                        enc,
                        got["p"],
                        n,
                        findings.iter().map(|f| &f.message).collect::<Vec<_>>()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} checks failed:\n{}",
        failures.len(),
        failures
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!("{} samples, {checked} checks, kinds {kinds:?}", all.len());
    for k in ["integer", "number", "boolean", "array", "object"] {
        assert!(kinds.contains(k), "no real {k} parameter in {kinds:?}");
    }
}

#[test]
fn real_parameters_nested_in_objects_and_arrays() {
    let (all, _) = samples();
    let mut failures = Vec::new();
    for s in &all {
        // An object property and array items, each optional the Pydantic way.
        let schema = tool(json!({"anyOf": [
            {"type": "object", "properties": {"inner": s.schema, "list": {"type": "array", "items": s.schema}}},
            {"type": "null"}
        ]}));
        let enc = encode_whole(&s.value);
        let args = json!({"p": {"inner": enc, "list": [enc, enc]}});
        let (got, findings, n) = check(&schema, args);
        let want = json!({"inner": s.value, "list": [s.value, s.value]});
        if !(findings.is_empty() && got["p"] == want && valid(&schema, &got) && n == 3) {
            failures.push(format!(
                "{}: got {} ({n} coercions) {:?}",
                s.source,
                got["p"],
                findings.iter().map(|f| &f.message).collect::<Vec<_>>()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn null_stays_null_where_allowed_and_is_never_coerced() {
    let (all, _) = samples();
    for s in all.iter().take(200) {
        for w in wrappers() {
            let schema = (w.build)(&s.schema);
            let (got, findings, n) = check(&schema, json!({"p": null}));
            assert_eq!(got["p"], Value::Null, "{} [{}]", s.source, w.name);
            assert_eq!(n, 0, "{} [{}]: null was coerced", s.source, w.name);
            assert_eq!(
                findings.is_empty(),
                w.allows_null,
                "{} [{}]: {:?}",
                s.source,
                w.name,
                findings
            );
        }
    }
}

#[test]
fn strings_that_convert_to_nothing_are_refused_unchanged() {
    let (all, _) = samples();
    for s in all.iter().take(200) {
        for w in wrappers().into_iter().filter(|w| !w.string_stays) {
            let schema = (w.build)(&s.schema);
            let sent = json!("definitely not a value");
            let (got, findings, n) = check(&schema, json!({ "p": sent }));
            assert_eq!(got["p"], sent, "{} [{}]", s.source, w.name);
            assert_eq!(n, 0);
            assert!(!findings.is_empty(), "{} [{}] accepted", s.source, w.name);
            assert!(
                findings.iter().all(|f| f.path == "/p"),
                "{} [{}]: {:?}",
                s.source,
                w.name,
                findings
            );
        }
    }
}
