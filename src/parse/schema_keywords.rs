//! Keywords of a tool's JSON Schema (`inputSchema`, OpenAI `parameters`)
//! that no validator reads (issue 29). JSON Schema allows unknown keywords
//! (2020-12 Core, section 6.5: they are collected as annotations), so a
//! misspelt `requird` or `propertes` silently validates nothing; toolgate
//! warns about them (`check`, `guard`), with a did-you-mean, and never
//! refuses the schema for it.

use serde_json::Value;

/// The keywords of JSON Schema 2020-12 (Core, Applicator, Unevaluated,
/// Validation, Meta-Data, Format-Annotation and Content vocabularies),
/// the keywords of earlier drafts still common in tool catalogs
/// (`definitions`, `dependencies`, `additionalItems`, `id`,
/// `$recursiveRef`, `$recursiveAnchor`), and common annotations of OpenAPI
/// and editors (`nullable`, `example`, `discriminator`, `xml`,
/// `externalDocs`, `markdownDescription`, `enumDescriptions`,
/// `deprecationMessage`, `errorMessage`). A keyword starting with `x-` is
/// an extension and always accepted.
pub const KNOWN_KEYWORDS: [&str; 72] = [
    // core
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    // applicator
    "prefixItems",
    "items",
    "contains",
    "additionalProperties",
    "properties",
    "patternProperties",
    "dependentSchemas",
    "propertyNames",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    // unevaluated
    "unevaluatedItems",
    "unevaluatedProperties",
    // validation
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    // meta-data
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    // format, content
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    // earlier drafts
    "definitions",
    "dependencies",
    "additionalItems",
    "id",
    "$recursiveRef",
    "$recursiveAnchor",
    // common annotations (OpenAPI, editors)
    "nullable",
    "example",
    "discriminator",
    "xml",
    "externalDocs",
    "markdownDescription",
    "enumDescriptions",
    "deprecationMessage",
    "errorMessage",
];

/// One keyword of a schema that is neither in [`KNOWN_KEYWORDS`] nor an
/// `x-` extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKeyword {
    /// The JSON Pointer (RFC 6901) of the schema object that holds it
    /// (`""` for the root, `/properties/n`).
    pub at: String,
    /// The keyword as written.
    pub keyword: String,
    /// The known keyword it is closest to ([`crate::diag::did_you_mean`]).
    pub suggestion: Option<&'static str>,
}

/// The unknown keywords of `schema` and its subschemas, in the order of the
/// parsed object's keys (the values of `properties`, `patternProperties`, `$defs`,
/// `definitions`, `dependentSchemas`, `dependencies`; `items`,
/// `prefixItems`, `allOf`/`anyOf`/`oneOf` members; the other applicators).
/// Values that are data (`enum`, `const`, `default`, `examples`) and
/// property names are not keywords and are not read. At most `max` are
/// returned (the walk stops there).
pub fn unknown_keywords(schema: &Value, max: usize) -> Vec<UnknownKeyword> {
    let mut out = Vec::new();
    walk(schema, &mut String::new(), &mut out, max, 0);
    out
}

/// Subschemas nested deeper than this are not read (a schema is rarely
/// deeper than 10; the bound keeps a crafted one from exhausting the stack).
const MAX_DEPTH: usize = 64;

fn walk(v: &Value, at: &mut String, out: &mut Vec<UnknownKeyword>, max: usize, depth: usize) {
    let Value::Object(o) = v else { return };
    if depth > MAX_DEPTH {
        return;
    }
    for (k, sub) in o {
        if out.len() >= max {
            return;
        }
        if !KNOWN_KEYWORDS.contains(&k.as_str()) && !k.starts_with("x-") {
            out.push(UnknownKeyword {
                at: at.clone(),
                keyword: k.clone(),
                suggestion: crate::diag::did_you_mean(k, KNOWN_KEYWORDS),
            });
            continue;
        }
        let len = at.len();
        at.push('/');
        at.push_str(&pointer_token(k));
        match k.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
            | "dependencies" => {
                if let Value::Object(m) = sub {
                    for (name, s) in m {
                        let l = at.len();
                        at.push('/');
                        at.push_str(&pointer_token(name));
                        walk(s, at, out, max, depth + 1);
                        at.truncate(l);
                    }
                }
            }
            "items" | "prefixItems" | "allOf" | "anyOf" | "oneOf" | "additionalItems" => {
                match sub {
                    Value::Array(a) => {
                        for (i, s) in a.iter().enumerate() {
                            let l = at.len();
                            at.push('/');
                            at.push_str(&i.to_string());
                            walk(s, at, out, max, depth + 1);
                            at.truncate(l);
                        }
                    }
                    s => walk(s, at, out, max, depth + 1),
                }
            }
            "additionalProperties"
            | "contains"
            | "propertyNames"
            | "if"
            | "then"
            | "else"
            | "not"
            | "unevaluatedItems"
            | "unevaluatedProperties"
            | "contentSchema" => walk(sub, at, out, max, depth + 1),
            _ => {}
        }
        at.truncate(len);
    }
}

/// A JSON Pointer reference token (`~` as `~0`, `/` as `~1`).
fn pointer_token(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspelt_keywords_are_found_with_a_suggestion() {
        let s = serde_json::json!({
            "type": "object",
            "propertes": {"n": {"type": "integer"}},
            "properties": {
                "requird": {"type": "string", "maxLenght": 3, "x-ui": 1},
                "e": {"enum": [{"requird": 1}], "default": {"typo": 1}}
            },
            "anyOf": [{"requird": ["n"]}],
            "x-extension": {"anything": 1}
        });
        let u = unknown_keywords(&s, 10);
        let mut got: Vec<(&str, &str, Option<&str>)> = u
            .iter()
            .map(|k| (k.at.as_str(), k.keyword.as_str(), k.suggestion))
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("", "propertes", Some("properties")),
                ("/anyOf/0", "requird", Some("required")),
                ("/properties/requird", "maxLenght", Some("maxLength")),
            ]
        );
        assert_eq!(unknown_keywords(&s, 1).len(), 1);
        assert!(unknown_keywords(&serde_json::json!({"type": "object"}), 10).is_empty());
    }
}
