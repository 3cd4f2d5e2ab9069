//! A tool's input schema (MCP `inputSchema`, OpenAI `parameters`) kept as
//! its canonical JSON text (issue 14).
//!
//! A large catalog holds thousands of small schemas. As `serde_json::Value`
//! trees they cost about 3 KB a tool (every object a `BTreeMap` with room for
//! eleven entries, every key and string its own allocation); as text, the
//! few hundred bytes of the JSON itself. So a [`ToolSpec`] and its compiled
//! tool hold a [`SchemaText`], and the tree is parsed where something reads
//! the schema: once per tool while the plan is compiled (then dropped), and
//! once per distinct schema the first time the call gate checks arguments
//! against it.
//!
//! The text is canonical: `serde_json`'s compact serialisation of the tree,
//! object keys in sorted order (`serde_json::Map` is a `BTreeMap`). Two
//! equal trees give equal texts, so the text is the schema's identity: the
//! compile keys compiled schemas by it, and an import shares one text among
//! the tools whose schemas are equal. MCP definition pins hash the tree the
//! server listed (`mcp::pins::definition_hash`), not this text.
//!
//! [`ToolSpec`]: super::tags::ToolSpec

use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Deepest nesting (arrays and objects) whose text `serde_json` reads back
/// (its parser stops at 128 levels); a deeper tree is kept beside its text.
const MAX_TEXT_DEPTH: usize = 127;

/// A JSON Schema kept as canonical JSON text: compact, object keys sorted
/// (see the [module docs](self)). Cheap to clone (shared); equality, hashing
/// and [`Display`](std::fmt::Display) are those of the text, which equals
/// `serde_json::to_string` of the tree.
#[derive(Clone)]
pub struct SchemaText(Arc<Inner>);

struct Inner {
    /// FxHash of `text`.
    hash: u64,
    text: Box<str>,
    /// The tree itself, for a tree nested deeper than `serde_json` reads
    /// back (never from JSON text, which `serde_json` bounds alike).
    deep: Option<Box<Value>>,
}

fn text_hash(text: &str) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(text.as_bytes());
    h.finish()
}

/// Whether `v` nests deeper than `limit` levels of arrays and objects.
fn deeper_than(v: &Value, limit: usize) -> bool {
    match v {
        Value::Array(a) => limit == 0 || a.iter().any(|x| deeper_than(x, limit - 1)),
        Value::Object(m) => limit == 0 || m.values().any(|x| deeper_than(x, limit - 1)),
        _ => false,
    }
}

static EMPTY_OBJECT: LazyLock<SchemaText> =
    LazyLock::new(|| SchemaText::new(&serde_json::json!({"type": "object", "properties": {}})));

impl SchemaText {
    /// The canonical text of `schema` (any JSON value: what is not a valid
    /// JSON Schema is reported when the plan is compiled).
    pub fn new(schema: &Value) -> SchemaText {
        // Writing a `Value` into a `String` cannot fail (its keys are strings).
        let text = serde_json::to_string(schema).unwrap_or_default();
        let deep = deeper_than(schema, MAX_TEXT_DEPTH).then(|| Box::new(schema.clone()));
        SchemaText(Arc::new(Inner {
            hash: text_hash(&text),
            text: text.into_boxed_str(),
            deep,
        }))
    }

    /// The schema tools get when they declare none:
    /// `{"properties":{},"type":"object"}` (one shared text).
    pub fn empty_object() -> SchemaText {
        EMPTY_OBJECT.clone()
    }

    /// The canonical JSON text.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    /// The schema as a tree, parsed from the text (a tree nested too deeply
    /// for `serde_json` to read back is kept, and borrowed).
    pub fn value(&self) -> Cow<'_, Value> {
        if let Some(v) = &self.0.deep {
            return Cow::Borrowed(v);
        }
        // The text is `serde_json`'s own serialisation of a tree it reads
        // back (depth checked in `new`); `Null` cannot happen.
        Cow::Owned(serde_json::from_str(&self.0.text).unwrap_or(Value::Null))
    }

    /// A 64-bit hash of the text (FxHash), computed once: the key under
    /// which the compile keeps compiled schemas.
    pub fn hash64(&self) -> u64 {
        self.0.hash
    }

    /// Whether both share one text (a clone of the other).
    pub fn ptr_eq(a: &SchemaText, b: &SchemaText) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl PartialEq for SchemaText {
    fn eq(&self, other: &SchemaText) -> bool {
        SchemaText::ptr_eq(self, other)
            || (self.0.hash == other.0.hash && self.0.text == other.0.text)
    }
}

impl Eq for SchemaText {}

impl Hash for SchemaText {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash);
    }
}

impl std::fmt::Display for SchemaText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.text)
    }
}

impl std::fmt::Debug for SchemaText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SchemaText({})", self.0.text)
    }
}

impl From<Value> for SchemaText {
    fn from(v: Value) -> SchemaText {
        SchemaText::new(&v)
    }
}

impl From<&Value> for SchemaText {
    fn from(v: &Value) -> SchemaText {
        SchemaText::new(v)
    }
}

/// Reads any JSON value (through a transient tree) into its canonical text.
impl<'de> Deserialize<'de> for SchemaText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SchemaText, D::Error> {
        Value::deserialize(d).map(|v| SchemaText::new(&v))
    }
}

/// Shares one [`SchemaText`] among equal schemas (an import's tools often
/// repeat a schema).
#[derive(Debug, Default)]
pub(crate) struct SchemaInterner {
    seen: rustc_hash::FxHashSet<SchemaText>,
}

impl SchemaInterner {
    /// `s`, or the equal text seen before.
    pub(crate) fn intern(&mut self, s: SchemaText) -> SchemaText {
        if let Some(x) = self.seen.get(&s) {
            return x.clone();
        }
        self.seen.insert(s.clone());
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_the_canonical_serialisation_and_reads_back() {
        let a: Value = serde_json::from_str(r#"{"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "number", "minimum": 1.5}}, "required": ["b"]}"#).unwrap();
        let s = SchemaText::new(&a);
        assert_eq!(s.as_str(), serde_json::to_string(&a).unwrap());
        assert_eq!(s.to_string(), a.to_string());
        assert!(s.as_str().starts_with(r#"{"properties":{"a":"#), "{s}");
        assert_eq!(*s.value(), a);
        // Key order in the source does not matter; values do.
        let b: Value = serde_json::from_str(r#"{"required": ["b"], "properties": {"a": {"minimum": 1.5, "type": "number"}, "b": {"type": "string"}}, "type": "object"}"#).unwrap();
        assert_eq!(SchemaText::new(&b), s);
        assert_eq!(SchemaText::new(&b).hash64(), s.hash64());
        assert_ne!(SchemaText::new(&json!({"type": "object"})), s);
        assert_ne!(SchemaText::new(&json!(1.0)), SchemaText::new(&json!(1)));
        assert_eq!(
            SchemaText::empty_object(),
            SchemaText::new(&json!({"type": "object", "properties": {}}))
        );
    }

    #[test]
    fn trees_too_deep_for_the_parser_are_kept() {
        let mut v = json!({"type": "string"});
        for _ in 0..200 {
            v = json!({"type": "array", "items": v});
        }
        assert!(serde_json::from_str::<Value>(&v.to_string()).is_err());
        let s = SchemaText::new(&v);
        assert_eq!(*s.value(), v);
        let shallow = SchemaText::new(&json!({"items": {"type": "string"}}));
        assert!(matches!(shallow.value(), Cow::Owned(_)));
    }

    #[test]
    fn deserialises_through_a_tree_and_interns() {
        let s: SchemaText = serde_json::from_str(r#"{ "type" : "object" , "a" : null }"#).unwrap();
        assert_eq!(s.as_str(), r#"{"a":null,"type":"object"}"#);
        let mut i = SchemaInterner::default();
        let a = i.intern(s.clone());
        let b = i.intern(SchemaText::new(&json!({"type": "object", "a": null})));
        assert!(SchemaText::ptr_eq(&a, &b) && SchemaText::ptr_eq(&a, &s));
    }
}
