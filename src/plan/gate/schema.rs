//! A tool's input schema, compiled with the `jsonschema` crate when the plan
//! is built (draft from `$schema`: 2020-12 by default, 2019-09, 7, 6 and 4
//! supported). Checking arguments against it is the gate's first layer.
//!
//! The compile checks the schema (against its draft's meta-schema) and reads
//! what the gate needs without the tree (draft, parameter names, whether the
//! arguments need a coercion walk); the schema itself is kept as its
//! canonical text ([`SchemaText`]), and the tree, the validator and the
//! branch index are built the first time a call needs them: most tools of a
//! large catalog are never called, and their trees would dominate a plan's
//! memory (issue 14).
//!
//! Two things are prepared besides the validator:
//!
//! - OpenAPI's `nullable: true` (emitted by zod's OpenAPI target, Gemini-style
//!   function declarations and OpenAPI 3.0 generators) is not a JSON Schema
//!   keyword, so a validator would ignore it and refuse `null`. The schema is
//!   read with `nullable: true` turned into the JSON Schema spelling: `"null"`
//!   added to the `type` (or a `{"type": "null"}` branch added to an
//!   `anyOf`/`oneOf`, or the whole subschema wrapped in one).
//! - Every `anyOf`/`oneOf` branch is indexed, and a validator for it is
//!   compiled the first time coercion needs to know whether a value already
//!   satisfies that branch (so a plan with many tools does not pay for
//!   branches no call ever reaches).

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::parse::schema_text::SchemaText;

/// A tool's compiled input schema. Cheap to clone: the tools of a catalog
/// with the same schema share one tree, validator and branch index, built on
/// first use.
#[derive(Debug, Clone)]
pub struct ToolSchema {
    /// The schema as declared, as canonical text.
    pub(crate) source: SchemaText,
    /// The draft the schema is read with.
    pub(crate) draft: jsonschema::Draft,
    /// Whether the declared schema uses OpenAPI's `nullable` (rewritten when
    /// the tree is loaded).
    nullable: bool,
    /// The schema needs no coercion walk: it declares no property that is
    /// not a plain string (so a string value can never be coerced).
    pub(crate) strings_only: bool,
    /// The tree, validator, branch index and parameter names, built on
    /// first use ([`ToolSchema::loaded`]; boxed, so that a schema never
    /// loaded costs one small allocation).
    loaded: Arc<OnceLock<Box<Loaded>>>,
}

/// What a [`ToolSchema`] builds the first time a call needs it.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The schema as validated (`nullable` read as a null type). It does
    /// not move once built, so the addresses of its subschemas are stable:
    /// [`Branches`] is keyed by them.
    pub(crate) schema: Value,
    /// The `anyOf`/`oneOf` branches of the schema, with their validators.
    pub(crate) branches: Branches,
    /// Top-level parameter names of the schema as validated, in schema order.
    params: Box<[String]>,
    /// Top-level parameter names of the declared schema, when they differ
    /// from `params` (a root `nullable` moved them into an `anyOf`).
    declared_params: Option<Box<[String]>>,
    /// The schema was checked against its draft's meta-schema when the plan
    /// was compiled; building the validator can still fail (a `$ref` to
    /// nothing).
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

/// The `anyOf`/`oneOf` branches of one schema, by the address of the
/// branch's value inside [`ToolSchema::schema`], each with its JSON Pointer
/// in the schema and a validator compiled on first use.
pub struct Branches {
    draft: jsonschema::Draft,
    /// Sorted by address.
    entries: Vec<Branch>,
}

struct Branch {
    addr: usize,
    pointer: String,
    validator: OnceLock<Option<jsonschema::Validator>>,
}

impl std::fmt::Debug for Branches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Branches")
            .field("count", &self.entries.len())
            .finish()
    }
}

/// Most `anyOf`/`oneOf` branches indexed in one schema; branches past it are
/// judged by their declared types only.
const MAX_BRANCHES: usize = 4096;
/// Deepest schema nesting walked when indexing branches or reading `nullable`.
const MAX_SCHEMA_DEPTH: usize = 128;
/// The URI the schema is registered under when a branch validator is built.
const BASE_URI: &str = "urn:toolgate:input-schema";

impl Branches {
    fn index(root: &Value, draft: jsonschema::Draft) -> Branches {
        let mut entries = Vec::new();
        let mut ptr = String::new();
        if mentions_branches(root, 0) {
            walk_branches(root, &mut ptr, 0, &mut entries);
        }
        entries.sort_by_key(|b| b.addr);
        Branches { draft, entries }
    }

    /// Whether `instance` is valid against `branch`, a subschema of `root`
    /// found in an `anyOf`/`oneOf` list. `None` when the branch is not
    /// indexed or its validator cannot be built (the caller then judges by
    /// declared types).
    pub(crate) fn is_valid(&self, root: &Value, branch: &Value, instance: &Value) -> Option<bool> {
        let addr = branch as *const Value as usize;
        let i = self.entries.binary_search_by_key(&addr, |b| b.addr).ok()?;
        let b = &self.entries[i];
        let v = b
            .validator
            .get_or_init(|| compile_at(root, &b.pointer, self.draft));
        v.as_ref().map(|v| v.is_valid(instance))
    }

    /// Number of indexed branches.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the schema has no `anyOf`/`oneOf` branch.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn walk_branches(v: &Value, ptr: &mut String, depth: usize, out: &mut Vec<Branch>) {
    if depth > MAX_SCHEMA_DEPTH || out.len() >= MAX_BRANCHES {
        return;
    }
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let len = ptr.len();
                ptr.push('/');
                push_escaped(ptr, k);
                if (k == "anyOf" || k == "oneOf")
                    && let Value::Array(items) = child
                {
                    for (i, b) in items.iter().enumerate() {
                        if out.len() >= MAX_BRANCHES {
                            break;
                        }
                        let l2 = ptr.len();
                        ptr.push('/');
                        ptr.push_str(&i.to_string());
                        out.push(Branch {
                            addr: b as *const Value as usize,
                            pointer: ptr.clone(),
                            validator: OnceLock::new(),
                        });
                        ptr.truncate(l2);
                    }
                }
                walk_branches(child, ptr, depth + 1, out);
                ptr.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let len = ptr.len();
                ptr.push('/');
                ptr.push_str(&i.to_string());
                walk_branches(child, ptr, depth + 1, out);
                ptr.truncate(len);
            }
        }
        _ => {}
    }
}

fn push_escaped(ptr: &mut String, key: &str) {
    for c in key.chars() {
        match c {
            '~' => ptr.push_str("~0"),
            '/' => ptr.push_str("~1"),
            c => ptr.push(c),
        }
    }
}

/// A validator for the subschema of `root` at JSON Pointer `pointer`: the
/// root is registered as a resource, so `$ref`s inside the branch resolve
/// against the whole schema (`#/$defs/...`), as they do in the tool's own
/// validator.
fn compile_at(
    root: &Value,
    pointer: &str,
    draft: jsonschema::Draft,
) -> Option<jsonschema::Validator> {
    let registry = jsonschema::Registry::new()
        .draft(draft)
        .retrieve_known_draft_meta_schemas(false)
        .add(BASE_URI, root.clone())
        .ok()?
        .prepare()
        .ok()?;
    let mut fragment = String::with_capacity(pointer.len());
    for b in pointer.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            fragment.push(b as char);
        } else {
            fragment.push_str(&format!("%{b:02X}"));
        }
    }
    let wrapper = serde_json::json!({ "$ref": format!("{BASE_URI}#{fragment}") });
    jsonschema::options()
        .with_draft(draft)
        .with_registry(&registry)
        .build(&wrapper)
        .ok()
}

/// Which JSON Schema draft a schema is read with, from its `$schema`.
pub fn draft_of(schema: &Value) -> jsonschema::Draft {
    use jsonschema::Draft;
    match schema.get("$schema").and_then(Value::as_str) {
        Some(s) if s.contains("draft-07") => Draft::Draft7,
        Some(s) if s.contains("draft-06") => Draft::Draft6,
        Some(s) if s.contains("draft-04") => Draft::Draft4,
        Some(s) if s.contains("2019-09") => Draft::Draft201909,
        _ => Draft::Draft202012,
    }
}

/// Checks `schema` against the meta-schema of `draft` (what building a
/// validator checks first): the error names what is wrong.
fn meta_check(schema: &Value, draft: jsonschema::Draft) -> Result<(), String> {
    use jsonschema::Draft;
    let r = match draft {
        Draft::Draft4 => jsonschema::draft4::meta::validate(schema),
        Draft::Draft6 => jsonschema::draft6::meta::validate(schema),
        Draft::Draft7 => jsonschema::draft7::meta::validate(schema),
        Draft::Draft201909 => jsonschema::draft201909::meta::validate(schema),
        _ => jsonschema::draft202012::meta::validate(schema),
    };
    r.map_err(|e| {
        let pointer = e.instance_path().to_string();
        schema_problem(&pointer, e.instance(), &e.to_string())
    })
}

/// The type names of JSON Schema (every draft).
const SCHEMA_TYPES: [&str; 7] = [
    "array", "boolean", "integer", "null", "number", "object", "string",
];

/// The message of a schema the meta-schema refuses: its JSON pointer in
/// backquotes first (`` `/properties/name/type`: ``, `ToolSchema::compile_text`'s
/// callers read it back to locate the value), then why; a `type` that is
/// not a JSON Schema type is named with the types and a did-you-mean
/// (`strng`: `string`) instead of the meta-schema's `anyOf` message.
fn schema_problem(pointer: &str, found: &Value, why: &str) -> String {
    let at = format!("`{}`", if pointer.is_empty() { "/" } else { pointer });
    let unknown_type = match found {
        _ if !pointer.ends_with("/type") && pointer != "/type" => None,
        Value::String(t) => Some(t.as_str()),
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .find(|t| !SCHEMA_TYPES.contains(t)),
        _ => None,
    }
    .filter(|t| !SCHEMA_TYPES.contains(t));
    match unknown_type {
        Some(t) => {
            let hint = crate::diag::did_you_mean(t, SCHEMA_TYPES)
                .map(|m| format!(" (did you mean `{m}`?)"))
                .unwrap_or_default();
            format!(
                "{at}: `{}` is not a JSON Schema type{hint}; the types are {}",
                crate::diag::echo(t),
                SCHEMA_TYPES.join(", ")
            )
        }
        None => format!("{at}: {}", crate::diag::clip_chars(why, 300)),
    }
}

/// Whether `v` lies in a small subset of JSON Schema that the meta-schema
/// of every supported draft accepts: objects whose keys are only `type` (a
/// simple type, or a non-empty list of distinct ones), `properties` (of such
/// objects), `required` (a non-empty list of distinct strings, at most 64),
/// `items` and `additionalProperties` (such an object; the latter also a
/// boolean), `description` and `title` (strings). Most tool schemas are
/// this shape; [`ToolSchema::compile_text`] skips the (costly)
/// meta-schema check for them and runs it on everything else.
fn plainly_valid(v: &Value, depth: usize) -> bool {
    const TYPES: [&str; 7] = SCHEMA_TYPES;
    let distinct = |a: &[Value]| a.iter().enumerate().all(|(i, x)| !a[..i].contains(x));
    let Value::Object(m) = v else {
        return false;
    };
    depth <= MAX_SCHEMA_DEPTH
        && m.iter().all(|(k, x)| match k.as_str() {
            "description" | "title" => x.is_string(),
            "type" => match x {
                Value::String(s) => TYPES.contains(&s.as_str()),
                Value::Array(a) => {
                    !a.is_empty()
                        && a.len() <= TYPES.len()
                        && a.iter()
                            .all(|t| t.as_str().is_some_and(|s| TYPES.contains(&s)))
                        && distinct(a)
                }
                _ => false,
            },
            "properties" => x
                .as_object()
                .is_some_and(|p| p.values().all(|s| plainly_valid(s, depth + 1))),
            "required" => x.as_array().is_some_and(|a| {
                !a.is_empty() && a.len() <= 64 && a.iter().all(Value::is_string) && distinct(a)
            }),
            "items" => plainly_valid(x, depth + 1),
            "additionalProperties" => x.is_boolean() || plainly_valid(x, depth + 1),
            _ => false,
        })
}

/// Whether some object in `v` has an `anyOf` or `oneOf` key (bounded walk):
/// when none has, there is no branch to index.
fn mentions_branches(v: &Value, depth: usize) -> bool {
    if depth > MAX_SCHEMA_DEPTH {
        return false;
    }
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, c)| k == "anyOf" || k == "oneOf" || mentions_branches(c, depth + 1)),
        Value::Array(a) => a.iter().any(|c| mentions_branches(c, depth + 1)),
        _ => false,
    }
}

/// Whether any object in `v` has the key `nullable` (bounded walk).
fn mentions_nullable(v: &Value, depth: usize) -> bool {
    if depth > MAX_SCHEMA_DEPTH {
        return false;
    }
    match v {
        Value::Object(m) => {
            m.contains_key("nullable") || m.values().any(|c| mentions_nullable(c, depth + 1))
        }
        Value::Array(a) => a.iter().any(|c| mentions_nullable(c, depth + 1)),
        _ => false,
    }
}

/// Reads OpenAPI's `nullable: true` as JSON Schema: `"null"` joins the
/// `type`; without a `type`, a `{"type": "null"}` branch joins an
/// `anyOf`/`oneOf`, or the subschema's constraints become
/// `anyOf: [constraints, {"type": "null"}]`. `nullable: false` is dropped.
/// The keyword is only read where a schema is expected (not inside
/// `properties` names, `enum`, `const`, `default` or `examples`).
pub fn normalize_nullable(v: &mut Value) {
    normalize_at(v, 0);
}

fn normalize_at(v: &mut Value, depth: usize) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let Value::Object(map) = v else {
        return;
    };
    // Subschemas first.
    for (k, child) in map.iter_mut() {
        match k.as_str() {
            "enum" | "const" | "default" | "examples" | "example" => {}
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(m) = child {
                    for s in m.values_mut() {
                        normalize_at(s, depth + 1);
                    }
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(a) = child {
                    for s in a.iter_mut() {
                        normalize_at(s, depth + 1);
                    }
                }
            }
            "items" => match child {
                Value::Array(a) => {
                    for s in a.iter_mut() {
                        normalize_at(s, depth + 1);
                    }
                }
                s => normalize_at(s, depth + 1),
            },
            "additionalProperties"
            | "additionalItems"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems" => normalize_at(child, depth + 1),
            _ => {}
        }
    }
    let Some(nullable) = map.get("nullable").and_then(Value::as_bool) else {
        return;
    };
    map.remove("nullable");
    if !nullable {
        return;
    }
    let null = Value::String("null".into());
    match map.get_mut("type") {
        Some(Value::String(t)) => {
            if t != "null" {
                let t = std::mem::take(t);
                map.insert("type".into(), Value::Array(vec![Value::String(t), null]));
            }
            add_null_to_enum(map);
            return;
        }
        Some(Value::Array(a)) => {
            if !a.contains(&null) {
                a.push(null);
            }
            add_null_to_enum(map);
            return;
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(a)) = map.get_mut(key) {
            a.push(serde_json::json!({"type": "null"}));
            return;
        }
    }
    // No type, no union: the constraints (a `$ref`, an `allOf`, ...) or null.
    let keep = [
        "title",
        "description",
        "default",
        "examples",
        "$defs",
        "definitions",
        "$schema",
        "$id",
        "$comment",
    ];
    let mut inner = Map::new();
    let keys: Vec<String> = map.keys().cloned().collect();
    for k in keys {
        if !keep.contains(&k.as_str())
            && let Some(x) = map.remove(&k)
        {
            inner.insert(k, x);
        }
    }
    if inner.is_empty() {
        return;
    }
    map.insert(
        "anyOf".into(),
        Value::Array(vec![
            Value::Object(inner),
            serde_json::json!({"type": "null"}),
        ]),
    );
}

/// With `nullable`, an `enum` must list `null` for null to pass it.
fn add_null_to_enum(map: &mut Map<String, Value>) {
    if let Some(Value::Array(e)) = map.get_mut("enum")
        && !e.contains(&Value::Null)
    {
        e.push(Value::Null);
    }
}

/// Top-level `properties` names of `schema`, in its order.
fn top_params(schema: &Value) -> Box<[String]> {
    // The root's own `properties` and those it reaches through `$ref`,
    // `allOf`, `anyOf` and `oneOf` (a schema whose root is a `$ref` declares
    // its parameters there).
    crate::parse::roles::property_names(schema, schema)
        .into_iter()
        .map(str::to_string)
        .collect()
}

impl ToolSchema {
    /// Compiles `schema`; the error says why it is not a usable JSON Schema.
    pub fn compile(schema: &Value) -> Result<ToolSchema, String> {
        Self::compile_text(&SchemaText::new(schema), schema)
    }

    /// [`ToolSchema::compile`] of a schema whose text is `source` and whose
    /// tree, `declared`, the caller has parsed from it (the compiled schema
    /// keeps the text only, never `declared`).
    pub fn compile_text(source: &SchemaText, declared: &Value) -> Result<ToolSchema, String> {
        let nullable = mentions_nullable(declared, 0);
        let normalized;
        let schema = if nullable {
            let mut s = declared.clone();
            normalize_nullable(&mut s);
            normalized = s;
            &normalized
        } else {
            declared
        };
        let draft = draft_of(schema);
        if !plainly_valid(schema, 0) {
            meta_check(schema, draft)?;
        }
        let strings_only = schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|props| {
                props.values().all(|p| {
                    p.get("type").and_then(Value::as_str) == Some("string")
                        && p.get("$ref").is_none()
                        && p.get("anyOf").is_none()
                        && p.get("oneOf").is_none()
                        && p.get("allOf").is_none()
                })
            })
            && schema.get("$ref").is_none()
            && schema.get("anyOf").is_none()
            && schema.get("oneOf").is_none()
            && schema.get("allOf").is_none()
            && schema
                .get("additionalProperties")
                .is_none_or(|a| !a.is_object())
            && schema.get("patternProperties").is_none();
        Ok(ToolSchema {
            source: source.clone(),
            draft,
            nullable,
            strings_only,
            loaded: Arc::new(OnceLock::new()),
        })
    }

    /// The tree (parsed from the text, `nullable` rewritten), its branch
    /// index and parameter names, built on first use and shared by the
    /// clones of `self`.
    pub(crate) fn loaded(&self) -> &Loaded {
        self.loaded.get_or_init(|| {
            let mut schema = self.source.value().into_owned();
            let mut declared_params = None;
            if self.nullable {
                declared_params = Some(top_params(&schema));
                normalize_nullable(&mut schema);
            }
            let params = top_params(&schema);
            if declared_params.as_ref() == Some(&params) {
                declared_params = None;
            }
            Box::new(Loaded {
                branches: Branches::index(&schema, self.draft),
                schema,
                validator: OnceLock::new(),
                params,
                declared_params,
            })
        })
    }

    /// The validator, built on first use; an error (a `$ref` that does not
    /// resolve, a `pattern` that is not a regular expression: what the
    /// meta-schema does not catch) says why the schema cannot validate, and
    /// the gate then refuses the call's arguments.
    pub fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        let l = self.loaded();
        l.validator
            .get_or_init(|| {
                jsonschema::options()
                    .with_draft(self.draft)
                    .build(&l.schema)
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// The schema as validated: the declared schema, with OpenAPI's
    /// `nullable: true` read as a null type (parsed on first use).
    pub fn schema(&self) -> &Value {
        &self.loaded().schema
    }

    /// The schema as declared, as canonical text.
    pub fn source(&self) -> &SchemaText {
        &self.source
    }

    /// Top-level parameter names of the schema as validated (read on first
    /// use).
    pub fn params(&self) -> &[String] {
        &self.loaded().params
    }

    /// Top-level parameter names of the schema as declared (its
    /// `properties` keys, in order; read on first use).
    pub fn declared_params(&self) -> &[String] {
        let l = self.loaded();
        l.declared_params.as_deref().unwrap_or(&l.params)
    }

    /// The `anyOf`/`oneOf` branches of the schema (indexed on first use).
    pub fn branches(&self) -> &Branches {
        &self.loaded().branches
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plainly_valid_schemas_pass_every_meta_schema() {
        use jsonschema::Draft;
        let plain = [
            json!({"type": "object", "properties": {"a_0": {"type": "string", "description": "the a to b"}}, "required": ["a_0"]}),
            json!({"type": "object", "properties": {}}),
            json!({"type": ["string", "null"], "title": "t"}),
            json!({"type": "object", "additionalProperties": false, "properties": {
                "l": {"type": "array", "items": {"type": "integer"}},
                "o": {"type": "object", "additionalProperties": {"type": "number"}}}}),
            json!({}),
        ];
        let not_plain = [
            json!({"type": "strin"}),
            json!({"type": []}),
            json!({"type": ["string", "string"]}),
            json!({"type": "object", "required": []}),
            json!({"type": "object", "required": ["a", "a"]}),
            json!({"type": "object", "required": [1]}),
            json!({"properties": {"a": {"type": 5}}}),
            json!({"properties": {"a": true}}),
            json!({"items": [{"type": "string"}]}),
            json!({"description": 3}),
            json!({"type": "string", "minLength": 2}),
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "string"}),
            json!(true),
        ];
        let drafts = [
            Draft::Draft4,
            Draft::Draft6,
            Draft::Draft7,
            Draft::Draft201909,
            Draft::Draft202012,
        ];
        for s in &plain {
            assert!(plainly_valid(s, 0), "{s}");
            for d in drafts {
                assert!(meta_check(s, d).is_ok(), "{s} under {d:?}");
            }
        }
        for s in &not_plain {
            assert!(!plainly_valid(s, 0), "{s}");
        }
        // What the fast path leaves out still gets the full check.
        assert!(ToolSchema::compile(&json!({"type": "strin"})).is_err());
        assert!(ToolSchema::compile(&json!({"type": "object", "required": ["a", "a"]})).is_err());
        assert!(ToolSchema::compile(&json!({"type": "string", "minLength": 2})).is_ok());
    }

    #[test]
    fn nullable_becomes_a_null_type() {
        let mut s = json!({"type": "object", "properties": {
            "a": {"type": "integer", "nullable": true},
            "b": {"type": ["string"], "nullable": true, "enum": ["x"]},
            "c": {"anyOf": [{"type": "integer"}], "nullable": true},
            "d": {"$ref": "#/$defs/D", "nullable": true, "description": "d"},
            "e": {"type": "integer", "nullable": false},
            "f": {"enum": [{"nullable": true}]}
        }, "$defs": {"D": {"type": "object", "properties": {"x": {"type": "number", "nullable": true}}}}});
        normalize_nullable(&mut s);
        let p = &s["properties"];
        assert_eq!(p["a"], json!({"type": ["integer", "null"]}));
        assert_eq!(
            p["b"],
            json!({"type": ["string", "null"], "enum": ["x", null]})
        );
        assert_eq!(
            p["c"],
            json!({"anyOf": [{"type": "integer"}, {"type": "null"}]})
        );
        assert_eq!(
            p["d"],
            json!({"description": "d", "anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]})
        );
        assert_eq!(p["e"], json!({"type": "integer"}));
        assert_eq!(p["f"], json!({"enum": [{"nullable": true}]}));
        assert_eq!(
            s["$defs"]["D"]["properties"]["x"],
            json!({"type": ["number", "null"]})
        );
    }

    #[test]
    fn the_tree_is_built_on_first_use_and_shared_by_clones() {
        let declared =
            json!({"nullable": true, "properties": {"a": {"type": "integer"}}, "required": ["a"]});
        let text = SchemaText::new(&declared);
        let s = ToolSchema::compile_text(&text, &declared).unwrap();
        let c = s.clone();
        assert!(s.loaded.get().is_none(), "compiled without a tree");
        assert_eq!(s.source(), &text);
        let mut normalized = declared.clone();
        normalize_nullable(&mut normalized);
        assert_eq!(c.schema(), &normalized);
        // Built once, through the clone, for both.
        assert!(std::ptr::eq(s.schema(), c.schema()));
        // The root `nullable` moved `properties` into an `anyOf`, whose
        // branch still declares `a` (the parameters follow the root's
        // `anyOf`, `allOf`, `oneOf` and `$ref`).
        assert_eq!(s.params(), ["a".to_string()]);
        assert_eq!(s.declared_params(), ["a".to_string()]);
        let via_ref = ToolSchema::compile(&json!({"$ref": "#/$defs/o",
            "$defs": {"o": {"properties": {"c": {}}}}}))
        .unwrap();
        assert_eq!(via_ref.declared_params(), ["c".to_string()]);
        assert!(s.validator().unwrap().is_valid(&json!(null)));
        assert!(!s.validator().unwrap().is_valid(&json!({})));
        let plain = ToolSchema::compile(&json!({"properties": {"b": {}, "a": {}}})).unwrap();
        assert_eq!(plain.params(), ["a".to_string(), "b".to_string()]);
        assert_eq!(plain.declared_params(), plain.params());
    }

    #[test]
    fn branch_validators_resolve_refs_against_the_whole_schema() {
        let s = ToolSchema::compile(&json!({
            "type": "object",
            "properties": {"m": {"anyOf": [{"$ref": "#/$defs/M"}, {"type": "null"}]}},
            "$defs": {"M": {"type": "integer", "minimum": 3}}
        }))
        .unwrap();
        assert_eq!(s.branches().len(), 2);
        let root = s.schema();
        let b0 = &root["properties"]["m"]["anyOf"][0];
        let b1 = &root["properties"]["m"]["anyOf"][1];
        assert_eq!(s.branches().is_valid(root, b0, &json!(4)), Some(true));
        assert_eq!(s.branches().is_valid(root, b0, &json!(2)), Some(false));
        assert_eq!(s.branches().is_valid(root, b0, &json!("4")), Some(false));
        assert_eq!(s.branches().is_valid(root, b1, &json!(null)), Some(true));
        // A value that is not a branch of this schema is not judged.
        assert_eq!(s.branches().is_valid(root, &json!({}), &json!(1)), None);
    }

    #[test]
    fn branch_pointers_escape_odd_property_names() {
        let s = ToolSchema::compile(&json!({
            "type": "object",
            "properties": {"a/b ~c%d é": {"oneOf": [{"type": "integer"}, {"type": "string", "enum": ["x"]}]}}
        }))
        .unwrap();
        let root = s.schema();
        let p = &root["properties"]["a/b ~c%d é"]["oneOf"];
        assert_eq!(s.branches().is_valid(root, &p[0], &json!(1)), Some(true));
        assert_eq!(s.branches().is_valid(root, &p[1], &json!("x")), Some(true));
        assert_eq!(s.branches().is_valid(root, &p[1], &json!("y")), Some(false));
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
