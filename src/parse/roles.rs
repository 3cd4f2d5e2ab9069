//! Argument role paths: where in a call's arguments a role (shell, SQL,
//! path) applies, as written in tool tags (`arguments = { "/edits/*/file_path"
//! = "path" }`), and whether such a path names anything a tool's input schema
//! describes.
//!
//! A path is a top-level parameter name, taken literally, or a JSON Pointer
//! (RFC 6901) whose `*` segments match every array item and object member.

use serde_json::Value;

/// One segment of an argument role's path ([`parse_role_path`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RoleSeg {
    /// An object key, or an array index written in decimal.
    Key(String),
    /// `*`: every array item and every object member.
    Any,
}

impl RoleSeg {
    /// Whether the segment matches object key `k`.
    pub fn matches_key(&self, k: &str) -> bool {
        match self {
            RoleSeg::Any => true,
            RoleSeg::Key(s) => s == k,
        }
    }

    /// Whether the segment matches array index `i`.
    pub fn matches_index(&self, i: usize) -> bool {
        match self {
            RoleSeg::Any => true,
            RoleSeg::Key(s) => {
                !s.is_empty()
                    && s.bytes().all(|b| b.is_ascii_digit())
                    && (s == "0" || !s.starts_with('0'))
                    && s.parse::<usize>() == Ok(i)
            }
        }
    }
}

/// Most segments in one argument role path.
pub const MAX_ROLE_PATH_SEGMENTS: usize = 32;

/// Reads the key of an `arguments` entry: a top-level parameter name
/// (`command`, taken literally), or a path into the arguments written as a
/// JSON Pointer (RFC 6901: `/` between segments, `~1` for a `/` and `~0` for
/// a `~` inside one) whose `*` segments match every array item and object
/// member: `/edits/*/file_path`, `/options/cwd`, `/files/*`.
///
/// Errors (a message for the policy author): an empty path or segment, a
/// `~` not followed by `0` or `1`, a name containing `/` without the leading
/// `/` of a path, more than [`MAX_ROLE_PATH_SEGMENTS`] segments.
pub fn parse_role_path(key: &str) -> Result<Vec<RoleSeg>, String> {
    let Some(rest) = key.strip_prefix('/') else {
        if key.is_empty() {
            return Err("an argument name cannot be empty".into());
        }
        if key.contains('/') {
            return Err(format!(
                "argument `{key}` contains `/`: a path into the arguments starts with `/` (`/{key}`)"
            ));
        }
        return Ok(vec![RoleSeg::Key(key.to_string())]);
    };
    let mut out = Vec::new();
    for raw in rest.split('/') {
        if raw.is_empty() {
            return Err(format!(
                "argument path `{key}` has an empty segment; write `/a/*/b`"
            ));
        }
        if raw == "*" {
            out.push(RoleSeg::Any);
            continue;
        }
        let mut seg = String::with_capacity(raw.len());
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            if c != '~' {
                seg.push(c);
                continue;
            }
            match chars.next() {
                Some('0') => seg.push('~'),
                Some('1') => seg.push('/'),
                _ => {
                    return Err(format!(
                        "argument path `{key}`: `~` must be followed by 0 (for `~`) or 1 (for `/`)"
                    ));
                }
            }
        }
        out.push(RoleSeg::Key(seg));
    }
    if out.len() > MAX_ROLE_PATH_SEGMENTS {
        return Err(format!(
            "argument path `{key}` has more than {MAX_ROLE_PATH_SEGMENTS} segments"
        ));
    }
    Ok(out)
}

/// Writes a role path back: a bare name for one plain segment, else
/// `/a/*/b` with `~0`/`~1` escapes.
pub fn role_path_string(segs: &[RoleSeg]) -> String {
    if let [RoleSeg::Key(k)] = segs
        && !k.contains('/')
        && !k.is_empty()
    {
        return k.clone();
    }
    let mut out = String::new();
    for s in segs {
        out.push('/');
        match s {
            RoleSeg::Any => out.push('*'),
            RoleSeg::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
        }
    }
    out
}

/// Most subschemas (`$ref` targets, `allOf`, `anyOf`, `oneOf` members) read
/// as describing one value.
const MAX_FACETS: usize = 32;

/// `schema` with the subschemas that describe the same value: its `$ref`
/// target, `allOf`, `anyOf` and `oneOf` members (transitively, bounded).
pub fn facets<'a>(root: &'a Value, schema: &'a Value) -> Vec<&'a Value> {
    let mut out: Vec<&Value> = Vec::new();
    let mut stack = vec![schema];
    while let Some(s) = stack.pop() {
        if out.len() >= MAX_FACETS {
            break;
        }
        if !s.is_object() || out.iter().any(|f| std::ptr::eq(*f, s)) {
            continue;
        }
        out.push(s);
        for key in ["oneOf", "anyOf", "allOf"] {
            if let Some(Value::Array(bs)) = s.get(key) {
                stack.extend(bs.iter().rev());
            }
        }
        if let Some(t) = s
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| root.pointer(p))
        {
            stack.push(t);
        }
    }
    out
}

/// A local `$ref` (`#`, `#/...`; JSON Pointer, RFC 6901, percent-decoded
/// as a URI fragment) resolved in `root`; `None` for a remote reference or a
/// pointer to nothing.
pub fn resolve_ref<'a>(root: &'a Value, r: &str) -> Option<&'a Value> {
    let frag = r.strip_prefix('#')?;
    if frag.contains('%') {
        let decoded = percent_decode(frag)?;
        return root.pointer(&decoded);
    }
    root.pointer(frag)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Property names declared for an object schema (through `$ref`, `allOf`
/// and `anyOf`/`oneOf` branches, at most 8 levels), in schema order, each
/// name once. `root` is the whole schema (`$ref`s resolve in it).
pub fn property_names<'a>(root: &'a Value, schema: &'a Value) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    let mut seen = rustc_hash::FxHashSet::default();
    collect_props(root, schema, &mut out, &mut seen, 0);
    out
}

fn collect_props<'a>(
    root: &'a Value,
    schema: &'a Value,
    out: &mut Vec<&'a str>,
    seen: &mut rustc_hash::FxHashSet<&'a str>,
    depth: usize,
) {
    if depth > 8 {
        return;
    }
    if let Some(p) = schema.get("properties").and_then(Value::as_object) {
        for k in p.keys() {
            if seen.insert(k.as_str()) {
                out.push(k);
            }
        }
    }
    if let Some(t) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
    {
        collect_props(root, t, out, seen, depth + 1);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(bs)) = schema.get(key) {
            for b in bs {
                collect_props(root, b, out, seen, depth + 1);
            }
        }
    }
}

/// Deepest nesting followed when looking a path up in a schema.
const MAX_SCHEMA_PATH_DEPTH: usize = 32;

/// Whether `segs` can name a value the schema describes: `Some(true)` when a
/// route exists, `Some(false)` when the schema declares the properties (or
/// items) at some level and none matches, `None` when it cannot tell (no
/// `properties` declared there, `patternProperties`, too deep). `root` is
/// the whole schema (`$ref`s resolve in it), `schema` the subschema at the
/// current level, `depth` 0 at the top.
pub fn path_in_schema(
    root: &Value,
    schema: &Value,
    segs: &[RoleSeg],
    depth: usize,
) -> Option<bool> {
    let Some((seg, rest)) = segs.split_first() else {
        return Some(true);
    };
    if depth > MAX_SCHEMA_PATH_DEPTH {
        return None;
    }
    let mut structural = false;
    let mut unknown = false;
    let go = |s: &Value, unknown: &mut bool| match path_in_schema(root, s, rest, depth + 1) {
        Some(true) => true,
        Some(false) => false,
        None => {
            *unknown = true;
            false
        }
    };
    for f in facets(root, schema) {
        if f.get("patternProperties").is_some() {
            unknown = true;
        }
        if let Some(props) = f.get("properties").and_then(Value::as_object)
            && !props.is_empty()
        {
            structural = true;
            match seg {
                RoleSeg::Key(k) => {
                    if let Some(s) = props.get(k)
                        && go(s, &mut unknown)
                    {
                        return Some(true);
                    }
                }
                RoleSeg::Any => {
                    for s in props.values() {
                        if go(s, &mut unknown) {
                            return Some(true);
                        }
                    }
                }
            }
        }
        if let Some(s @ Value::Object(_)) = f.get("additionalProperties") {
            structural = true;
            if go(s, &mut unknown) {
                return Some(true);
            }
        }
        let mut items: Vec<&Value> = Vec::new();
        match f.get("items") {
            Some(Value::Array(t)) => items.extend(t.iter()),
            Some(s @ Value::Object(_)) => items.push(s),
            _ => {}
        }
        if let Some(Value::Array(p)) = f.get("prefixItems") {
            items.extend(p.iter());
        }
        if !items.is_empty() {
            let index_like = match seg {
                RoleSeg::Any => true,
                RoleSeg::Key(k) => !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()),
            };
            structural = true;
            if index_like {
                for s in items {
                    if go(s, &mut unknown) {
                        return Some(true);
                    }
                }
            }
        }
    }
    if unknown || !structural {
        None
    } else {
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn k(s: &str) -> RoleSeg {
        RoleSeg::Key(s.into())
    }

    #[test]
    fn role_paths_read_names_and_pointers() {
        assert_eq!(parse_role_path("command").unwrap(), [k("command")]);
        assert_eq!(parse_role_path("/command").unwrap(), [k("command")]);
        assert_eq!(
            parse_role_path("/edits/*/file_path").unwrap(),
            [k("edits"), RoleSeg::Any, k("file_path")]
        );
        assert_eq!(
            parse_role_path("/a~1b/~0c/0").unwrap(),
            [k("a/b"), k("~c"), k("0")]
        );
        assert_eq!(parse_role_path("*").unwrap(), [k("*")]);
        for bad in ["", "/", "/a//b", "/a/", "a/b", "/a/~2", "/a~"] {
            assert!(parse_role_path(bad).is_err(), "{bad:?}");
        }
        let long = "/x".repeat(MAX_ROLE_PATH_SEGMENTS + 1);
        assert!(parse_role_path(&long).is_err());
    }

    #[test]
    fn role_paths_write_back() {
        for s in ["command", "/edits/*/file_path", "/a~1b/~0c", "/*"] {
            assert_eq!(role_path_string(&parse_role_path(s).unwrap()), s);
        }
        assert_eq!(role_path_string(&parse_role_path("/path").unwrap()), "path");
    }

    #[test]
    fn segments_match_keys_and_indices() {
        assert!(RoleSeg::Any.matches_key("x") && RoleSeg::Any.matches_index(7));
        assert!(k("3").matches_index(3) && k("3").matches_key("3"));
        assert!(!k("03").matches_index(3) && !k("").matches_index(0) && !k("x").matches_index(0));
        assert!(k("0").matches_index(0));
    }

    #[test]
    fn paths_are_looked_up_through_refs_items_and_unions() {
        let s = json!({"type": "object", "properties": {
            "edits": {"type": "array", "items": {"$ref": "#/$defs/Edit"}},
            "opt": {"anyOf": [{"type": "object", "properties": {"cwd": {"type": "string"}}}, {"type": "null"}]},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object"}
        }, "$defs": {"Edit": {"type": "object", "properties": {"file_path": {"type": "string"}}}}});
        let at = |p: &str| path_in_schema(&s, &s, &parse_role_path(p).unwrap(), 0);
        for ok in [
            "edits",
            "/edits/*/file_path",
            "/edits/0/file_path",
            "/opt/cwd",
            "/map/*",
            "/map/x",
            "/*",
        ] {
            assert_eq!(at(ok), Some(true), "{ok}");
        }
        for bad in [
            "file_path",
            "/edits/*/file_pth",
            "/opt/dir",
            "/edits/x/file_path",
        ] {
            assert_eq!(at(bad), Some(false), "{bad}");
        }
        // Nothing declared below `free`: cannot tell.
        assert_eq!(at("/free/anything"), None);
        assert_eq!(
            path_in_schema(&json!({}), &json!({}), &[RoleSeg::Any], 0),
            None
        );
    }
}
