//! Arguments against the tool's JSON Schema, with coercion toward the
//! declared type only.
//!
//! Each tool's schema is compiled once, when the plan is built, with the
//! `jsonschema` crate (draft from `$schema`: 2020-12 by default, 2019-09, 7,
//! 6 and 4 supported). A call's arguments are first coerced where the schema
//! declares a type the value does not have and `[gate.coercion]` allows it:
//!
//! - a numeric string where an integer or number is declared (`"3"` → 3;
//!   `"3.5"` for an integer is an error, so is a non-finite number);
//! - a boolean spelling where a boolean is declared, by value (`" yes "`,
//!   `"FALSE"`), never by truthiness: `"maybe"` is an error listing the
//!   accepted spellings;
//! - a JSON-encoded string where an array or object is declared, whose
//!   contents are then coerced too.
//!
//! A string is never turned into a number where a string is allowed
//! (`"00713"` stays a string) and a number is never stringified. The coerced
//! arguments are then validated (type, required, enum, minimum, ...), and
//! every error becomes a finding that names the parameter, its description,
//! the expected type or values, and for unknown parameters the accepted ones.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

use super::config::{CallChecks, Coercion};
use super::types::{Finding, FindingKind};

pub use crate::plan::gate::schema::{ToolSchema, draft_of};

impl ToolSchema {
    /// Coerces `args` in place, then validates them. Returns the findings
    /// (empty when the arguments are valid).
    pub fn check(
        &self,
        tool: &str,
        args: &mut Value,
        coercion: &Coercion,
        checks: &CallChecks,
    ) -> Vec<Finding> {
        let mut errors: Vec<Finding> = Vec::new();
        if !self.strings_only {
            let mut ptr = String::new();
            let mut cx = Cx {
                root: &self.schema,
                cfg: coercion,
                checks,
                errors: &mut errors,
            };
            cx.coerce(&self.schema, args, &mut ptr, 0);
        }
        if self.validator.is_valid(args) {
            return errors;
        }
        let coerced_paths: Vec<String> = errors.iter().map(|f| f.path.clone()).collect();
        for e in self.validator.iter_errors(args) {
            let path = e.instance_path().as_str().to_string();
            if coerced_paths.contains(&path) {
                continue;
            }
            errors.push(self.describe(tool, &e, path, checks));
        }
        errors.dedup_by(|a, b| a.path == b.path && a.message == b.message);
        errors
    }

    fn describe(
        &self,
        tool: &str,
        e: &jsonschema::ValidationError<'_>,
        path: String,
        checks: &CallChecks,
    ) -> Finding {
        use jsonschema::error::ValidationErrorKind as K;
        let check = &checks.invalid_arguments;
        let (suffix, msg) = match e.kind() {
            K::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let parent = schema_at(&self.schema, &path);
                let prop = parent
                    .and_then(|p| p.get("properties"))
                    .and_then(|p| p.get(name));
                let mut m = format!("Missing required parameter `{}`", join_ptr(&path, name));
                if let Some(p) = prop {
                    let _ = write!(m, "{}", about(p));
                }
                m.push_str(". Add it to the arguments.");
                ("required", m)
            }
            K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
                let parent = schema_at(&self.schema, &path);
                let accepted: Vec<String> = parent
                    .and_then(|p| p.get("properties"))
                    .and_then(Value::as_object)
                    .map(|o| o.keys().map(|k| format!("`{k}`")).collect())
                    .unwrap_or_default();
                let names: Vec<String> = unexpected
                    .iter()
                    .map(|u| format!("`{}`", join_ptr(&path, u)))
                    .collect();
                let what = if names.len() == 1 {
                    "Unknown parameter"
                } else {
                    "Unknown parameters"
                };
                let hint = unexpected
                    .first()
                    .and_then(|u| {
                        crate::diag::did_you_mean(
                            u,
                            parent
                                .and_then(|p| p.get("properties"))
                                .and_then(Value::as_object)
                                .into_iter()
                                .flat_map(|o| o.keys().map(String::as_str)),
                        )
                    })
                    .map(|s| format!(" Did you mean `{s}`?"))
                    .unwrap_or_default();
                let accepted = if accepted.is_empty() {
                    "no parameters".to_string()
                } else {
                    accepted.join(", ")
                };
                (
                    "unknown-parameter",
                    format!(
                        "{what} {} for `{tool}`, which accepts: {accepted}.{hint} Remove it or use one of the accepted names.",
                        names.join(", ")
                    ),
                )
            }
            K::Enum { options } => {
                let allowed: Vec<String> = options
                    .as_array()
                    .map(|a| a.iter().map(|v| v.to_string()).collect())
                    .unwrap_or_default();
                (
                    "enum",
                    format!(
                        "Parameter `{}` must be one of {}; got {}{}. Send one of the allowed values.",
                        display_ptr(&path),
                        allowed.join(", "),
                        excerpt(e.instance()),
                        about_at(&self.schema, &path),
                    ),
                )
            }
            K::Constant { expected_value } => (
                "const",
                format!(
                    "Parameter `{}` must be {}; got {}.",
                    display_ptr(&path),
                    expected_value,
                    excerpt(e.instance())
                ),
            ),
            K::Type { .. } => (
                "type",
                format!(
                    "Parameter `{}` must be {}; got {} {}{}. Send a value of the declared type.",
                    display_ptr(&path),
                    expected_type(schema_at(&self.schema, &path)),
                    type_article(e.instance()),
                    excerpt(e.instance()),
                    about_at(&self.schema, &path),
                ),
            ),
            other => (
                other.keyword(),
                format!(
                    "Parameter `{}`: {}{}.",
                    display_ptr(&path),
                    e,
                    about_at(&self.schema, &path)
                ),
            ),
        };
        Finding {
            rule_id: format!("{}.{suffix}", check.id),
            kind: FindingKind::Schema,
            path,
            severity: check.severity,
            action: check.action,
            message: super::types::fill(&check.message, &msg),
        }
    }
}

struct Cx<'a> {
    root: &'a Value,
    cfg: &'a Coercion,
    checks: &'a CallChecks,
    errors: &'a mut Vec<Finding>,
}

const MAX_REF_HOPS: usize = 16;
const MAX_COERCE_DEPTH: usize = 64;

impl Cx<'_> {
    fn error(&mut self, ptr: &str, suffix: &str, msg: String) {
        let c = &self.checks.invalid_arguments;
        self.errors.push(Finding {
            rule_id: format!("{}.{suffix}", c.id),
            kind: FindingKind::Schema,
            path: ptr.to_string(),
            severity: c.severity,
            action: c.action,
            message: super::types::fill(&c.message, &msg),
        });
    }

    fn coerce(&mut self, schema: &Value, v: &mut Value, ptr: &mut String, depth: usize) {
        if depth > MAX_COERCE_DEPTH {
            return;
        }
        let schema = resolve(self.root, schema);
        let types = declared_types(schema);
        if let Value::String(s) = v {
            if !types.is_empty()
                && !types.contains(&"string")
                && let Some(new) = self.coerce_string(schema, &types, s, ptr)
            {
                *v = new;
                if v.is_array() || v.is_object() {
                    self.coerce(schema, v, ptr, depth + 1);
                }
            }
            return;
        }
        match v {
            Value::Object(map) => self.coerce_object(schema, map, ptr, depth),
            Value::Array(items) => {
                let prefix = schema.get("prefixItems").and_then(Value::as_array);
                let items_schema = schema.get("items");
                for (i, item) in items.iter_mut().enumerate() {
                    let sub = match (prefix.and_then(|p| p.get(i)), items_schema) {
                        (Some(s), _) => s,
                        (None, Some(Value::Array(tuple))) => match tuple.get(i) {
                            Some(s) => s,
                            None => continue,
                        },
                        (None, Some(s)) => s,
                        (None, None) => continue,
                    };
                    let len = ptr.len();
                    let _ = write!(ptr, "/{i}");
                    self.coerce(sub, item, ptr, depth + 1);
                    ptr.truncate(len);
                }
            }
            _ => {}
        }
    }

    fn coerce_object(
        &mut self,
        schema: &Value,
        map: &mut Map<String, Value>,
        ptr: &mut String,
        depth: usize,
    ) {
        let props = schema.get("properties").and_then(Value::as_object);
        let extra = schema.get("additionalProperties").filter(|a| a.is_object());
        for (k, child) in map.iter_mut() {
            let sub = match props.and_then(|p| p.get(k)) {
                Some(s) => s,
                None => match extra {
                    Some(s) => s,
                    None => continue,
                },
            };
            let len = ptr.len();
            ptr.push('/');
            ptr.push_str(&k.replace('~', "~0").replace('/', "~1"));
            self.coerce(sub, child, ptr, depth + 1);
            ptr.truncate(len);
        }
    }

    fn coerce_string(
        &mut self,
        schema: &Value,
        types: &[&str],
        s: &str,
        ptr: &str,
    ) -> Option<Value> {
        let shown = excerpt(&Value::String(s.to_string()));
        let about = about(schema);
        let param = display_ptr(ptr);
        let wants_int = types.contains(&"integer");
        let wants_num = types.contains(&"number");
        if (wants_int || wants_num) && self.cfg.numeric_strings {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return Some(Value::from(i));
            }
            if let Ok(u) = t.parse::<u64>() {
                return Some(Value::from(u));
            }
            let looks_numeric = !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
            match t.parse::<f64>() {
                Ok(x) if looks_numeric && x.is_finite() => {
                    if wants_num {
                        return Number::from_f64(x).map(Value::Number);
                    }
                    if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 {
                        return Some(Value::from(x as i64));
                    }
                    if !types.contains(&"boolean") {
                        self.error(
                            ptr,
                            "coercion",
                            format!(
                                "Parameter `{param}` must be an integer{about}; got {shown}, which is not a whole number. Send a whole number such as {}.",
                                x.trunc()
                            ),
                        );
                        return None;
                    }
                }
                Ok(_) if looks_numeric => {
                    self.error(
                        ptr,
                        "coercion",
                        format!(
                            "Parameter `{param}` must be a finite {}{about}; got {shown}. Send a finite number.",
                            if wants_int { "integer" } else { "number" }
                        ),
                    );
                    return None;
                }
                _ => {}
            }
        }
        if types.contains(&"boolean") && self.cfg.boolean_strings {
            let t = s.trim();
            if self
                .cfg
                .true_values
                .iter()
                .any(|x| x.trim().eq_ignore_ascii_case(t))
            {
                return Some(Value::Bool(true));
            }
            if self
                .cfg
                .false_values
                .iter()
                .any(|x| x.trim().eq_ignore_ascii_case(t))
            {
                return Some(Value::Bool(false));
            }
            if !(types.contains(&"array") || types.contains(&"object")) {
                let spellings: Vec<&str> = self
                    .cfg
                    .true_values
                    .iter()
                    .chain(self.cfg.false_values.iter())
                    .map(String::as_str)
                    .collect();
                self.error(
                    ptr,
                    "coercion",
                    format!(
                        "Parameter `{param}` must be a boolean{about}; got {shown}. Send true or false (accepted spellings: {}).",
                        spellings.join(", ")
                    ),
                );
                return None;
            }
        }
        let wants_array = types.contains(&"array");
        let wants_object = types.contains(&"object");
        if (wants_array || wants_object) && self.cfg.json_strings {
            let t = s.trim_start();
            let opens = (wants_array && t.starts_with('[')) || (wants_object && t.starts_with('{'));
            if opens {
                match serde_json::from_str::<Value>(s) {
                    Ok(v @ Value::Array(_)) if wants_array => return Some(v),
                    Ok(v @ Value::Object(_)) if wants_object => return Some(v),
                    Ok(_) => {}
                    Err(e) => {
                        self.error(
                            ptr,
                            "coercion",
                            format!(
                                "Parameter `{param}` must be {}{about}; got a string that is not valid JSON ({e}). Send the value itself, not a string.",
                                expected_type(Some(schema))
                            ),
                        );
                        return None;
                    }
                }
            }
        }
        None
    }
}

/// Follows local `$ref`s (`#/...`) from `schema`, at most a few hops.
fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..MAX_REF_HOPS {
        let Some(r) = schema.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let Some(ptr) = r.strip_prefix('#') else {
            break;
        };
        match root.pointer(ptr) {
            Some(s) => schema = s,
            None => break,
        }
    }
    schema
}

fn declared_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The subschema describing the instance at JSON pointer `ptr`, following
/// `properties`, `additionalProperties`, `items` and `prefixItems`.
fn schema_at<'a>(root: &'a Value, ptr: &str) -> Option<&'a Value> {
    let mut s = resolve(root, root);
    if ptr.is_empty() {
        return Some(s);
    }
    for seg in ptr.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        let next = s
            .get("properties")
            .and_then(|p| p.get(&seg))
            .or_else(|| {
                let i: usize = seg.parse().ok()?;
                s.get("prefixItems")
                    .and_then(|p| p.get(i))
                    .or_else(|| match s.get("items") {
                        Some(Value::Array(t)) => t.get(i),
                        other => other,
                    })
            })
            .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))?;
        s = resolve(root, next);
    }
    Some(s)
}

fn expected_type(schema: Option<&Value>) -> String {
    let Some(schema) = schema else {
        return "of the declared type".into();
    };
    let types = declared_types(schema);
    let name = |t: &str| match t {
        "integer" => "an integer".to_string(),
        "number" => "a number".to_string(),
        "boolean" => "a boolean (true or false)".to_string(),
        "string" => "a string".to_string(),
        "null" => "null".to_string(),
        "object" => "an object".to_string(),
        "array" => match schema
            .get("items")
            .map(declared_types)
            .and_then(|t| t.first().copied())
        {
            Some(item) => format!("an array of {item}s"),
            None => "an array".to_string(),
        },
        other => other.to_string(),
    };
    if types.is_empty() {
        return "of the declared type".into();
    }
    types
        .iter()
        .map(|t| name(t))
        .collect::<Vec<_>>()
        .join(" or ")
}

fn type_article(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "the boolean",
        Value::Number(_) => "the number",
        Value::String(_) => "the string",
        Value::Array(_) => "the array",
        Value::Object(_) => "the object",
    }
}

/// ` (integer: description; one of "a", "b")` for a parameter schema.
fn about(schema: &Value) -> String {
    let mut parts = Vec::new();
    let types = declared_types(schema);
    if !types.is_empty() {
        parts.push(types.join(" or "));
    }
    if let Some(d) = schema.get("description").and_then(Value::as_str) {
        let d = d.trim();
        if !d.is_empty() {
            let short: String = d.chars().take(160).collect();
            parts.push(short);
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        let vals: Vec<String> = e.iter().take(20).map(|v| v.to_string()).collect();
        parts.push(format!("one of {}", vals.join(", ")));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(": "))
    }
}

fn about_at(root: &Value, ptr: &str) -> String {
    schema_at(root, ptr)
        .and_then(|s| s.get("description").and_then(Value::as_str))
        .map(|d| {
            let short: String = d.trim().chars().take(160).collect();
            format!(" (`{}`: {short})", display_ptr(ptr))
        })
        .unwrap_or_default()
}

fn display_ptr(ptr: &str) -> String {
    let p = ptr.strip_prefix('/').unwrap_or(ptr);
    if p.is_empty() {
        "arguments".to_string()
    } else {
        p.to_string()
    }
}

fn join_ptr(ptr: &str, name: &str) -> String {
    let p = ptr.strip_prefix('/').unwrap_or(ptr);
    if p.is_empty() {
        name.to_string()
    } else {
        format!("{p}/{name}")
    }
}

fn excerpt(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 80 {
        s
    } else {
        let mut end = 77;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sch() -> Value {
        json!({"type": "object", "properties": {
            "depth": {"type": "integer", "description": "How deep", "minimum": 0, "maximum": 10},
            "time": {"type": "number"},
            "flag": {"type": "boolean"},
            "zip": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "integer"}},
            "mode": {"type": "string", "enum": ["fast", "safe"]}
        }, "required": ["depth"], "additionalProperties": false})
    }

    fn run(args: Value) -> (Value, Vec<Finding>) {
        let cfg = super::super::config::shipped();
        let s = ToolSchema::compile(&sch()).unwrap();
        let mut a = args;
        let f = s.check("t", &mut a, &cfg.coercion, &cfg.checks);
        (a, f)
    }

    #[test]
    fn coercion_toward_declared_types() {
        let (a, f) = run(json!({"depth": " 3 ", "time": "2.5", "flag": "No", "zip": "00713"}));
        assert!(f.is_empty(), "{f:?}");
        assert_eq!(
            a,
            json!({"depth": 3, "time": 2.5, "flag": false, "zip": "00713"})
        );
    }

    #[test]
    fn coerced_values_are_validated_again() {
        let (_, f) = run(json!({"depth": "11"}));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].rule_id, "schema.maximum");
        assert!(f[0].message.contains("depth"), "{}", f[0].message);
    }

    #[test]
    fn json_strings_decode_and_their_contents_are_coerced() {
        let (a, f) = run(json!({"depth": 1, "tags": "[\"1\", 2]"}));
        assert!(f.is_empty(), "{f:?}");
        assert_eq!(a["tags"], json!([1, 2]));
    }

    #[test]
    fn non_finite_and_non_integral_are_errors() {
        for bad in ["3.5", "inf", "NaN", "1e400"] {
            let (_, f) = run(json!({"depth": bad}));
            assert_eq!(f.len(), 1, "{bad}: {f:?}");
            assert!(f[0].message.contains("depth"));
        }
    }

    #[test]
    fn numbers_are_never_stringified() {
        let (_, f) = run(json!({"depth": 1, "zip": 713}));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rule_id, "schema.type");
        assert!(f[0].message.contains("a string"), "{}", f[0].message);
    }

    #[test]
    fn draft_is_read_from_schema_keyword() {
        assert_eq!(
            draft_of(&json!({"$schema": "http://json-schema.org/draft-07/schema#"})),
            jsonschema::Draft::Draft7
        );
        assert_eq!(draft_of(&json!({})), jsonschema::Draft::Draft202012);
    }
}
