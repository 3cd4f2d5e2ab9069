//! Arguments against the tool's JSON Schema, with coercion toward the
//! declared types only.
//!
//! Each tool's schema is compiled once, when the plan is built, with the
//! `jsonschema` crate (draft from `$schema`: 2020-12 by default, 2019-09, 7,
//! 6 and 4 supported). A call's arguments are first coerced where the schema
//! declares a type the value does not have and `[gate.coercion]` allows it
//! ([`coerce`](super::coerce) documents the kinds, the walk through `$ref`,
//! `allOf`, `anyOf`/`oneOf`, `type` lists and `nullable`, and which branch
//! wins). Every coercion made is listed ([`Coerced`]).
//!
//! The coerced arguments are then validated (type, required, enum, minimum,
//! ...), and every error becomes a finding that names the parameter, its
//! description, the expected type or values, and for unknown parameters the
//! accepted ones.

use std::fmt::Write as _;

use serde_json::Value;

use super::coerce::{Cx, allowed_types, child_schema, description_of, types_phrase};
use super::config::{CallChecks, Coercion};
use super::types::{Coerced, Finding, FindingKind};
use crate::parse::roles::property_names;

pub use crate::plan::gate::schema::{ToolSchema, draft_of};

/// At most this many items (enum values, accepted parameter names, unknown
/// parameter names) are listed in one message to the model; the rest are
/// counted: "`a`, `b`, ..., and 990 more". It bounds the size of a message
/// (a schema's size is under the server's control), and is no constant of
/// the activation formula, so it lives here rather than in the policy.
pub const MAX_LISTED: usize = 10;

/// At most this many findings come from checking one call's arguments
/// against its schema; when there are more, one last finding
/// (`<invalid_arguments id>.more`) says how many were left out. Bounds the
/// findings, the gate's message and the audit record for hostile inputs
/// (e.g. 100,000 missing required properties).
pub const MAX_FINDINGS: usize = 20;

/// Lists the first [`MAX_LISTED`] of `items` (`total` of them), joined with
/// ", ", followed by ", … M more" when some are left out. `items` is only
/// read as far as needed.
pub(crate) fn capped_list(items: impl IntoIterator<Item = String>, total: usize) -> String {
    let shown: Vec<String> = items.into_iter().take(MAX_LISTED).collect();
    let mut out = shown.join(", ");
    if total > shown.len() {
        let _ = write!(out, ", {}", crate::diag::more(total - shown.len()));
    }
    out
}

/// What checking arguments against a schema gives.
#[derive(Debug, Clone, Default)]
pub struct SchemaCheck {
    /// Coercion and validation errors (empty when the arguments are valid).
    pub findings: Vec<Finding>,
    /// Every coercion made, in the order of the walk.
    pub coerced: Vec<Coerced>,
}

impl ToolSchema {
    /// Coerces `args` in place, then validates them.
    pub fn check(
        &self,
        tool: &str,
        args: &mut Value,
        coercion: &Coercion,
        checks: &CallChecks,
    ) -> SchemaCheck {
        let loaded = self.loaded();
        let root: &Value = &loaded.schema;
        let mut cx = Cx::new(root, &loaded.branches, coercion, checks);
        if !self.strings_only {
            let mut ptr = String::new();
            cx.coerce(root, args, &mut ptr, 0);
        }
        let mut errors = cx.errors;
        let coerced = cx.coerced;
        let validator = match self.validator() {
            Ok(v) => v,
            Err(e) => {
                // Fail closed: arguments that cannot be validated are refused.
                errors.push(checks.invalid_arguments.sub_finding(
                    "schema_unusable",
                    FindingKind::Schema,
                    "",
                    &format!("The input schema of `{tool}` cannot validate arguments ({e}); the call cannot be checked."),
                ));
                return SchemaCheck {
                    findings: errors,
                    coerced,
                };
            }
        };
        // Floats where an integer is declared that no 64-bit integer holds
        // (fail closed: see `numbers`).
        let mut coerced_paths: std::collections::HashSet<String> =
            errors.iter().map(|f| f.path.clone()).collect();
        for (ptr, f) in super::numbers::imprecise_integers(root, args) {
            if coerced_paths.insert(ptr.clone()) {
                errors.push(super::numbers::imprecise_finding(checks, &ptr, f));
            }
        }
        if validator.is_valid(args) && errors.len() <= MAX_FINDINGS {
            return SchemaCheck {
                findings: errors,
                coerced,
            };
        }
        // Findings past MAX_FINDINGS are counted, not described.
        let mut omitted = errors.len().saturating_sub(MAX_FINDINGS);
        errors.truncate(MAX_FINDINGS);
        for e in validator.iter_errors(args) {
            let path = e.instance_path().as_str().to_string();
            if coerced_paths.contains(&path) {
                continue;
            }
            if errors.len() >= MAX_FINDINGS {
                omitted += 1;
                continue;
            }
            let f = self.describe(tool, &e, path, checks);
            if errors
                .last()
                .is_some_and(|l| l.path == f.path && l.message == f.message)
            {
                continue;
            }
            errors.push(f);
        }
        if omitted > 0 {
            errors.push(checks.invalid_arguments.sub_finding(
                "more",
                FindingKind::Schema,
                "",
                &format!("{omitted} more problems with the arguments of `{tool}` are not listed. Fix the ones above, then call again."),
            ));
        }
        SchemaCheck {
            findings: errors,
            coerced,
        }
    }

    fn describe(
        &self,
        tool: &str,
        e: &jsonschema::ValidationError<'_>,
        path: String,
        checks: &CallChecks,
    ) -> Finding {
        use jsonschema::error::ValidationErrorKind as K;
        let root: &Value = self.schema();
        let check = &checks.invalid_arguments;
        let (suffix, msg) = match e.kind() {
            K::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let prop = schema_at(root, &path).and_then(|p| child_schema(root, p, name));
                let mut m = format!("Missing required parameter `{}`", join_ptr(&path, name));
                if let Some(p) = prop {
                    let _ = write!(m, "{}", about(root, p));
                }
                // An argument the schema does not declare, close to the
                // missing name, is most likely it misspelt (`comand`).
                let declared: Vec<&str> = schema_at(root, &path)
                    .map(|p| property_names(root, p))
                    .unwrap_or_default();
                let misspelt = e.instance().as_object().and_then(|o| {
                    o.keys().find(|k| {
                        !declared.contains(&k.as_str())
                            && crate::diag::did_you_mean(k, [name]).is_some()
                    })
                });
                match misspelt {
                    Some(k) => {
                        let _ = write!(
                            m,
                            ". The arguments have `{}`, which `{tool}` does not declare: did you mean `{name}`? Rename it.",
                            join_ptr(&path, &crate::diag::echo(k))
                        );
                    }
                    None => m.push_str(". Add it to the arguments."),
                }
                ("required", m)
            }
            K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
                let parent = schema_at(root, &path);
                let props: Vec<&str> = parent.map(|p| property_names(root, p)).unwrap_or_default();
                let accepted = capped_list(props.iter().map(|k| format!("`{k}`")), props.len());
                let names = capped_list(
                    unexpected
                        .iter()
                        .map(|u| format!("`{}`", join_ptr(&path, &crate::diag::echo(u)))),
                    unexpected.len(),
                );
                let what = if unexpected.len() == 1 {
                    "Unknown parameter"
                } else {
                    "Unknown parameters"
                };
                let hint = unexpected
                    .first()
                    .and_then(|u| crate::diag::did_you_mean(u, props.iter().copied()))
                    .map(|s| format!(" Did you mean `{s}`?"))
                    .unwrap_or_default();
                let accepted = if props.is_empty() {
                    "no parameters".to_string()
                } else {
                    accepted
                };
                (
                    "unknown-parameter",
                    format!(
                        "{what} {names} for `{tool}`, which accepts: {accepted}.{hint} Remove it or use one of the accepted names.",
                    ),
                )
            }
            K::Enum { options } => {
                let options: &[Value] = options.as_array().map(Vec::as_slice).unwrap_or_default();
                let allowed = capped_list(options.iter().map(excerpt), options.len());
                (
                    "enum",
                    format!(
                        "{} must be one of {}; got {}{}. Send one of the allowed values.",
                        subject(&path),
                        allowed,
                        excerpt(e.instance()),
                        about_at(root, &path),
                    ),
                )
            }
            K::Constant { expected_value } => (
                "const",
                format!(
                    "{} must be {}; got {}.",
                    subject(&path),
                    excerpt(expected_value),
                    excerpt(e.instance())
                ),
            ),
            K::Type { .. } => (
                "type",
                format!(
                    "{} must be {}; got {} {}{}. Send a value of the declared type.",
                    subject(&path),
                    expected_type(root, schema_at(root, &path)),
                    type_article(e.instance()),
                    excerpt(e.instance()),
                    about_at(root, &path),
                ),
            ),
            K::AnyOf { context } | K::OneOfNotValid { context } => {
                let suffix = if matches!(e.kind(), K::AnyOf { .. }) {
                    "anyOf"
                } else {
                    "oneOf"
                };
                // A branch whose type the value has: its own complaint says
                // more than "matches no branch".
                let closest = context
                    .iter()
                    .find(|errs| {
                        !errs.is_empty() && errs.iter().all(|x| !matches!(x.kind(), K::Type { .. }))
                    })
                    .and_then(|errs| errs.first())
                    .map(|x| format!(" ({x})"))
                    .unwrap_or_default();
                (
                    suffix,
                    format!(
                        "{} must be {}; got {} {}{closest}{}. Send a value of one of the declared types.",
                        subject(&path),
                        expected_type(root, schema_at(root, &path)),
                        type_article(e.instance()),
                        excerpt(e.instance()),
                        about_at(root, &path),
                    ),
                )
            }
            other => (
                other.keyword(),
                format!("{}: {}{}.", subject(&path), e, about_at(root, &path)),
            ),
        };
        check.sub_finding(suffix, FindingKind::Schema, &path, &msg)
    }
}

/// The subschema describing the instance at JSON pointer `ptr`, following
/// `properties`, `additionalProperties`, `items` and `prefixItems`, through
/// `$ref`, `allOf` and `anyOf`/`oneOf` branches.
pub(crate) fn schema_at<'a>(root: &'a Value, ptr: &str) -> Option<&'a Value> {
    let mut s = root;
    if ptr.is_empty() {
        return Some(s);
    }
    for seg in ptr.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        s = child_schema(root, s, &seg)?;
    }
    Some(s)
}

/// "an integer or null", "an array of strings": what a subschema accepts.
pub(crate) fn expected_type(root: &Value, schema: Option<&Value>) -> String {
    let Some(schema) = schema else {
        return "of the declared type".into();
    };
    let types = allowed_types(root, schema);
    if types == ["array"]
        && let Some(items) = schema.get("items").filter(|i| i.is_object())
        && let Some(item) = allowed_types(root, items).first()
    {
        return format!("an array of {item}s");
    }
    types_phrase(&types)
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
pub(crate) fn about(root: &Value, schema: &Value) -> String {
    let mut parts = Vec::new();
    let types = allowed_types(root, schema);
    if !types.is_empty() {
        parts.push(types.join(" or "));
    }
    if let Some(d) = description_of(root, schema) {
        let d = d.trim();
        if !d.is_empty() {
            let short: String = d.chars().take(160).collect();
            parts.push(short);
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        parts.push(format!(
            "one of {}",
            capped_list(e.iter().map(excerpt), e.len())
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(": "))
    }
}

fn about_at(root: &Value, ptr: &str) -> String {
    schema_at(root, ptr)
        .and_then(|s| description_of(root, s))
        .map(|d| {
            let short: String = d.trim().chars().take(160).collect();
            format!(" (`{}`: {short})", display_ptr(ptr))
        })
        .unwrap_or_default()
}

/// A JSON pointer as shown to the model: `edits/1/file_path`, or
/// `arguments` for the whole call.
pub(crate) fn display_ptr(ptr: &str) -> String {
    let p = ptr.strip_prefix('/').unwrap_or(ptr);
    if p.is_empty() {
        "arguments".to_string()
    } else {
        p.to_string()
    }
}

/// The subject of a message about the value at `ptr`: "Parameter
/// `edits/1/file_path`", or "The arguments" for the whole call (which is
/// not a parameter).
pub(crate) fn subject(ptr: &str) -> String {
    let p = ptr.strip_prefix('/').unwrap_or(ptr);
    if p.is_empty() {
        "The arguments".to_string()
    } else {
        format!("Parameter `{p}`")
    }
}

/// Appends `/key` to a JSON pointer, escaping `~` and `/`.
pub(crate) fn push_ptr(ptr: &mut String, key: &str) {
    ptr.push('/');
    if key.contains(['~', '/']) {
        ptr.push_str(&key.replace('~', "~0").replace('/', "~1"));
    } else {
        ptr.push_str(key);
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

/// A value as JSON, cut to 80 bytes.
pub(crate) fn excerpt(v: &Value) -> String {
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

    fn run_with(schema: Value, args: Value) -> (Value, Vec<Finding>, Vec<Coerced>) {
        let cfg = super::super::config::shipped();
        let s = ToolSchema::compile(&schema).unwrap();
        let mut a = args;
        let r = s.check("t", &mut a, &cfg.coercion, &cfg.checks);
        (a, r.findings, r.coerced)
    }

    fn run(args: Value) -> (Value, Vec<Finding>) {
        let (a, f, _) = run_with(sch(), args);
        (a, f)
    }

    #[test]
    fn small_lists_are_listed_whole() {
        let (_, f) = run(json!({"depth": 1, "mode": "slow"}));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message
                .contains(r#"must be one of "fast", "safe"; got "slow""#),
            "{f:?}"
        );
        assert!(!f[0].message.contains("more"), "{f:?}");
        let (_, f) = run(json!({"depth": 1, "zz": 1}));
        assert!(
            f[0].message.contains(
                "Unknown parameter `zz` for `t`, which accepts: `depth`, `flag`, `mode`, `tags`, `time`, `zip`."
            ),
            "{f:?}"
        );
    }

    #[test]
    fn a_root_level_mismatch_speaks_of_the_arguments_not_of_a_parameter() {
        // A root that is an array of arrays, and a `false` root.
        let schema = json!({"type": "array", "items": {"type": "array"}});
        let (_, f, _) = run_with(schema, json!({"a": 1}));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.starts_with("The arguments must be an array"),
            "{f:?}"
        );
        let (_, f, _) = run_with(json!(false), json!({"a": 1}));
        assert!(f[0].message.starts_with("The arguments: "), "{f:?}");
        assert!(
            f.iter().all(|x| !x.message.contains("`arguments`")),
            "{f:?}"
        );
        // Below the root, the parameter is named.
        let (_, f) = run(json!({"depth": "deep"}));
        assert!(
            f[0].message.starts_with("Parameter `depth` must be"),
            "{f:?}"
        );
    }

    #[test]
    fn a_large_enum_lists_the_first_values_and_counts_the_rest() {
        let values: Vec<String> = (0..1000).map(|i| format!("v{i}")).collect();
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string", "enum": values}}});
        let (_, f, _) = run_with(schema, json!({"a": "nope"}));
        assert_eq!(f.len(), 1, "{f:?}");
        let m = &f[0].message;
        assert!(
            m.contains(r#""v0", "v1""#) && m.contains(r#""v9", … 990 more"#),
            "{m}"
        );
        assert!(!m.contains(r#""v10""#), "{m}");
        assert!(m.len() < 600, "{} bytes: {m}", m.len());
        assert_eq!(MAX_LISTED, 10);
        // a long value is cut
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string", "enum": ["x".repeat(10_000)]}}});
        let (_, f, _) = run_with(schema, json!({"a": "nope"}));
        assert!(f[0].message.len() < 400, "{}", f[0].message);
    }

    #[test]
    fn many_accepted_or_unknown_names_are_capped_and_the_hint_still_looks_at_all() {
        let props: serde_json::Map<String, Value> = (0..1000)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": props, "additionalProperties": false});
        let (_, f, _) = run_with(schema.clone(), json!({"colour_name_9": "x", "p1": "x"}));
        assert_eq!(f.len(), 1, "{f:?}");
        let m = &f[0].message;
        assert!(m.contains("which accepts: `p0`, `p1`"), "{m}");
        assert!(m.contains(", … 990 more."), "{m}");
        assert!(m.len() < 600, "{} bytes: {m}", m.len());
        // the suggestion may be a name that is not among the first ten
        let (_, f, _) = run_with(schema.clone(), json!({"p9999": "x"}));
        assert!(
            f[0].message.contains("Did you mean `p999`?"),
            "{}",
            f[0].message
        );
        // 30 unknown names: ten shown, 20 counted
        let args: serde_json::Map<String, Value> =
            (0..30).map(|i| (format!("zz{i:02}"), json!(1))).collect();
        let (_, f, _) = run_with(schema, Value::Object(args));
        let m = &f[0].message;
        assert!(
            m.starts_with("Unknown parameters `zz00`") || m.contains("Unknown parameters `zz00`"),
            "{m}"
        );
        assert!(m.contains("`zz09`, … 20 more for `t`"), "{m}");
    }

    #[test]
    fn integers_beyond_64_bits_are_refused_as_numbers_and_as_strings() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer", "maximum": 18446744073709551616.0_f64}, "x": {"type": "number"}}});
        let args: Value =
            serde_json::from_str(r#"{"n": 18446744073709551617, "x": 1e300}"#).unwrap();
        let (_, f, _) = run_with(schema.clone(), args);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].rule_id, "schema.inexact_integer");
        assert_eq!(f[0].path, "/n");
        let (_, f, _) = run_with(schema.clone(), json!({"n": "18446744073709551616"}));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].rule_id, "schema.coercion");
        assert!(
            f[0].message
                .contains("too large to convert to an integer exactly"),
            "{f:?}"
        );
        let (_, f, _) = run_with(schema, json!({"n": u64::MAX, "x": 2.5e19}));
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn findings_are_capped_with_a_last_one_counting_the_rest() {
        let names: Vec<String> = (0..1000).map(|i| format!("r{i}")).collect();
        let schema = json!({"type": "object", "required": names});
        let (_, f, _) = run_with(schema, json!({}));
        assert_eq!(f.len(), MAX_FINDINGS + 1, "{}", f.len());
        let last = f.last().unwrap();
        assert!(last.rule_id.ends_with(".more"), "{last:?}");
        assert!(
            last.message
                .contains("980 more problems with the arguments of `t` are not listed"),
            "{last:?}"
        );
        assert!(
            f[..MAX_FINDINGS]
                .iter()
                .all(|x| x.rule_id.ends_with(".required"))
        );
        // exactly at the cap: nothing is added
        let names: Vec<String> = (0..MAX_FINDINGS).map(|i| format!("r{i}")).collect();
        let (_, f, _) = run_with(json!({"type": "object", "required": names}), json!({}));
        assert_eq!(f.len(), MAX_FINDINGS);
        assert!(f.iter().all(|x| !x.rule_id.ends_with(".more")));
    }

    #[test]
    fn a_schema_that_cannot_validate_refuses_the_arguments() {
        // Valid against the meta-schema (so it loads), but its `$ref`
        // resolves to nothing: the validator is built on first use, fails,
        // and the gate fails closed.
        let schema = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}});
        let s = ToolSchema::compile(&schema).unwrap();
        assert!(s.validator().is_err());
        let (_, findings, _) = run_with(schema, json!({"a": 1}));
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(
            findings[0].rule_id.ends_with(".schema_unusable"),
            "{findings:?}"
        );
        assert!(
            findings[0].message.contains("cannot validate"),
            "{findings:?}"
        );
        // What the meta-schema rejects still fails the compile.
        assert!(ToolSchema::compile(&json!({"type": "integr"})).is_err());
        assert!(
            ToolSchema::compile(
                &json!({"$schema": "http://json-schema.org/draft-04/schema#", "minimum": "x"})
            )
            .is_err()
        );
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
    fn every_coercion_is_listed() {
        let (_, f, c) = run_with(
            sch(),
            json!({"depth": "3", "flag": "yes", "tags": "[\"1\"]"}),
        );
        assert!(f.is_empty(), "{f:?}");
        let got: Vec<(&str, &str, &str)> =
            c.iter().map(|c| (c.path.as_str(), c.from, c.to)).collect();
        assert_eq!(
            got,
            [
                ("/depth", "string", "integer"),
                ("/flag", "string", "boolean"),
                ("/tags", "string", "array"),
                ("/tags/0", "string", "integer"),
            ]
        );
    }

    #[test]
    fn optional_integer_written_as_any_of_with_null() {
        let s = json!({"type": "object", "properties": {
            "count": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null, "description": "How many"}
        }});
        let (a, f, c) = run_with(s.clone(), json!({"count": "42"}));
        assert!(f.is_empty(), "{f:?}");
        assert_eq!(a, json!({"count": 42}));
        assert_eq!(c.len(), 1);
        let (a, f, c) = run_with(s.clone(), json!({"count": null}));
        assert!(f.is_empty() && c.is_empty(), "{f:?}");
        assert_eq!(a, json!({"count": null}));
        let (_, f, _) = run_with(s.clone(), json!({"count": "3.5"}));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].rule_id, "schema.coercion");
        assert!(f[0].message.contains("whole number"), "{}", f[0].message);
        let (_, f, _) = run_with(s, json!({"count": "many"}));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].rule_id, "schema.anyOf");
        assert!(
            f[0].message.contains("an integer or null") && f[0].message.contains("How many"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn null_is_never_coerced() {
        let s = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "s": {"type": "string"}
        }});
        let (a, f, c) = run_with(s, json!({"n": null, "s": null}));
        assert_eq!(a, json!({"n": null, "s": null}));
        assert!(c.is_empty());
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f.iter().all(|f| f.rule_id == "schema.type"));
    }

    #[test]
    fn union_error_names_the_closest_branch() {
        let s = json!({"type": "object", "properties": {
            "n": {"anyOf": [{"type": "integer", "minimum": 10}, {"type": "null"}]}
        }});
        let (a, f, _) = run_with(s, json!({"n": "5"}));
        assert_eq!(a, json!({"n": 5}));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("minimum"), "{}", f[0].message);
    }
}
