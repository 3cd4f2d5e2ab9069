//! A tool's input schema, compiled with the `jsonschema` crate when the plan
//! is built (draft from `$schema`: 2020-12 by default, 2019-09, 7, 6 and 4
//! supported). Checking arguments against it is the gate's first layer.

use serde_json::Value;

/// A tool's compiled input schema.
#[derive(Debug, Clone)]
pub struct ToolSchema {
    pub(crate) validator: jsonschema::Validator,
    pub(crate) schema: Value,
    /// Top-level parameter names, in schema order.
    pub(crate) params: Vec<String>,
    /// The schema needs no coercion walk: it declares no property that is
    /// not a plain string (so a string value can never be coerced).
    pub(crate) strings_only: bool,
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

impl ToolSchema {
    /// Compiles `schema`; the error says why it is not a usable JSON Schema.
    pub fn compile(schema: &Value) -> Result<ToolSchema, String> {
        let validator = jsonschema::options()
            .with_draft(draft_of(schema))
            .build(schema)
            .map_err(|e| e.to_string())?;
        let params = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        let strings_only = schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|props| {
                props.values().all(|p| {
                    p.get("type").and_then(Value::as_str) == Some("string")
                        && p.get("$ref").is_none()
                })
            })
            && schema.get("$ref").is_none()
            && schema
                .get("additionalProperties")
                .is_none_or(|a| !a.is_object())
            && schema.get("patternProperties").is_none();
        Ok(ToolSchema {
            validator,
            schema: schema.clone(),
            params,
            strings_only,
        })
    }

    /// The schema as declared.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Top-level parameter names.
    pub fn params(&self) -> &[String] {
        &self.params
    }
}
