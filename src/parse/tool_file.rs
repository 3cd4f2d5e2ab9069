//! Where a problem of a JSON tool file (`--tools`: an MCP `tools/list`
//! result, a captured catalog or an OpenAI `tools` array) stands: the
//! tool at an index, a misspelt wrapper key, a `tools` that is not an
//! array (issue 29). [`super::tags::import_tools`] reads the file; this
//! module only locates what it refuses, by walking the text again
//! ([`crate::diag::json_path`]).

use std::ops::Range;

use serde_json::Value;

use crate::diag::json_path::{Seg, key_span, value_span};

/// The keys of a tool file's top-level object that are read.
pub const LISTING_KEYS: [&str; 3] = ["tools", "result", "server"];

/// The byte span of the `i`-th (0-based) tool of the listing in `text`
/// (an array of tools, or an object's `tools` or `result.tools`), with
/// the JSON path that leads there (`tools[1]`).
pub fn tool_span(text: &str, i: usize) -> Option<(Range<usize>, String)> {
    if text.trim_start().starts_with('[') {
        return value_span(text, &[Seg::Index(i)]).map(|s| (s, format!("[{i}]")));
    }
    if value_span(text, &[Seg::Key("tools")]).is_some() {
        return value_span(text, &[Seg::Key("tools"), Seg::Index(i)])
            .map(|s| (s, format!("tools[{i}]")));
    }
    value_span(
        text,
        &[Seg::Key("result"), Seg::Key("tools"), Seg::Index(i)],
    )
    .map(|s| (s, format!("result.tools[{i}]")))
}

/// The first repeated key of a tool file, at its second occurrence: the
/// file's JSON reader keeps the last value and others the first (RFC 8259
/// §4), so a tool file with one is refused (issue 29), as `--input` is.
pub fn duplicate_key(
    file: &std::sync::Arc<crate::diag::SourceFile>,
) -> Option<crate::diag::Diagnostic> {
    let d = crate::diag::duplicate_keys::find(&file.text)?;
    let end = d.offset + 1 + file.text[d.offset + 1..].find('"').map_or(0, |e| e + 1);
    Some(crate::diag::Diagnostic::at(
        crate::diag::ErrorKind::InvalidValue,
        file,
        d.offset..end.min(file.text.len()),
        format!(
            "duplicate key `{}`: the same key twice is read differently by different JSON readers (this one would keep the last value); write each key once",
            crate::diag::echo(&d.key)
        ),
    ))
}

/// The byte span, in a tool file's `text`, of the value at the JSON
/// `pointer` (`/properties/name/type`) inside the input schema of the tool
/// whose object holds the byte offset `within` (its name): its
/// `inputSchema`, or an OpenAI tool's `function.parameters`. `None` when
/// the text holds no such value (a schema rewritten before it was checked).
pub fn schema_value_span(text: &str, within: usize, pointer: &str) -> Option<Range<usize>> {
    // tools come in file order: the last one starting before `within`
    let starts = |i: usize| tool_span(text, i).map(|(s, _)| s.start);
    let (mut lo, mut hi) = (0usize, 1usize);
    while starts(hi).is_some_and(|s| s <= within) {
        lo = hi;
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        match starts(mid) {
            Some(s) if s <= within => lo = mid,
            _ => hi = mid,
        }
    }
    let (span, _) = tool_span(text, lo).filter(|(s, _)| s.contains(&within))?;
    let segs: Vec<String> = pointer
        .split('/')
        .skip(1)
        .filter(|s| !s.is_empty() || pointer.len() > 1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut path: Vec<Seg<'_>> = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        let list = i > 0
            && matches!(
                segs[i - 1].as_str(),
                "anyOf"
                    | "oneOf"
                    | "allOf"
                    | "items"
                    | "prefixItems"
                    | "enum"
                    | "required"
                    | "type"
            );
        match s.parse::<usize>() {
            Ok(n) if list => path.push(Seg::Index(n)),
            _ => path.push(Seg::Key(s)),
        }
    }
    let tool = &text[span.clone()];
    for schema in [
        &[Seg::Key("inputSchema")][..],
        &[Seg::Key("function"), Seg::Key("parameters")],
    ] {
        let full: Vec<Seg<'_>> = schema.iter().cloned().chain(path.iter().cloned()).collect();
        if let Some(r) = value_span(tool, &full) {
            return Some(span.start + r.start..span.start + r.end);
        }
    }
    None
}

/// The keys of an MCP tool (`Tool` of the MCP specification, 2025-11-25:
/// `name`, `title`, `description`, `inputSchema`, `outputSchema`,
/// `annotations`, `execution`, `icons`, `_meta`). Keys toolgate does not
/// read are accepted; any other key of an MCP tool is an error.
pub const MCP_TOOL_KEYS: [&str; 9] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
    "icons",
    "_meta",
];

/// The keys of an OpenAI tool (`{"type": "function", "function": {...}}`,
/// OpenAI's Chat Completions `tools`).
pub const OPENAI_TOOL_KEYS: [&str; 2] = ["type", "function"];

/// The keys of an OpenAI tool's `function` object (`name`, `description`,
/// `parameters`, `strict`).
pub const OPENAI_FUNCTION_KEYS: [&str; 4] = ["name", "description", "parameters", "strict"];

/// The JSON path segments of the `i`-th tool of the listing in `text`, as
/// [`tool_span`] finds it.
fn tool_segs(text: &str, i: usize) -> Option<Vec<Seg<'static>>> {
    if text.trim_start().starts_with('[') {
        return Some(vec![Seg::Index(i)]);
    }
    if value_span(text, &[Seg::Key("tools")]).is_some() {
        return Some(vec![Seg::Key("tools"), Seg::Index(i)]);
    }
    Some(vec![Seg::Key("result"), Seg::Key("tools"), Seg::Index(i)])
}

/// Every unknown key of an object, each with a did-you-mean among `known`
/// and the list of known keys (`what` names the object in the message).
fn unknown_keys(
    text: &str,
    path: &[Seg<'_>],
    o: &serde_json::Map<String, Value>,
    known: &[&'static str],
    what: &str,
) -> Vec<(Range<usize>, String)> {
    o.keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| {
            let hint = crate::diag::did_you_mean(k, known.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            let span = key_span(text, path, k).unwrap_or(0..0);
            (
                span,
                format!(
                    "unknown key `{}`{hint} of {what}; known keys: {}",
                    crate::diag::echo(k),
                    known.join(", ")
                ),
            )
        })
        .collect()
}

/// What is wrong with the keys of the `i`-th tool `item` of the listing in
/// `text`, and where (issue 29: a misspelt `inputSchema` used to be
/// ignored, and the gate then validated nothing): a `type` other than
/// `"function"` (did you mean `function`?), a key that is neither an MCP
/// tool's ([`MCP_TOOL_KEYS`]) nor an OpenAI tool's ([`OPENAI_TOOL_KEYS`],
/// [`OPENAI_FUNCTION_KEYS`]). Every problem is returned, in the order of
/// the keys; empty: every key is known (or the item is not an object,
/// which the caller reports).
pub fn tool_problems(text: &str, i: usize, item: &Value) -> Vec<(Range<usize>, String)> {
    let Some(o) = item.as_object() else {
        return Vec::new();
    };
    let Some(path) = tool_segs(text, i) else {
        return Vec::new();
    };
    match o.get("type") {
        None => unknown_keys(text, &path, o, &MCP_TOOL_KEYS, "an MCP tool"),
        Some(Value::String(t)) if t == "function" => {
            let mut found = unknown_keys(text, &path, o, &OPENAI_TOOL_KEYS, "an OpenAI tool");
            if let Some(f) = o.get("function").and_then(Value::as_object) {
                let mut fpath = path.clone();
                fpath.push(Seg::Key("function"));
                found.extend(unknown_keys(
                    text,
                    &fpath,
                    f,
                    &OPENAI_FUNCTION_KEYS,
                    "an OpenAI tool's \"function\" object",
                ));
            }
            found
        }
        Some(t) => {
            let mut tpath = path.clone();
            tpath.push(Seg::Key("type"));
            let span = value_span(text, &tpath).unwrap_or(0..0);
            let msg = match t {
                Value::String(t) => format!(
                    "unknown type `{}`{}; an OpenAI tool is `\"type\": \"function\"` (an MCP tool has no `type`)",
                    crate::diag::echo(t),
                    crate::diag::did_you_mean(t, ["function"])
                        .map(|s| format!(" (did you mean `{s}`?)"))
                        .unwrap_or_default()
                ),
                other => format!(
                    "`type` must be the string \"function\", found {}",
                    crate::diag::json_kind(other)
                ),
            };
            vec![(span, msg)]
        }
    }
}

/// What is wrong with a top-level object that holds no `tools` array (nor
/// `result.tools`), and where: a `tools` (or `result.tools`) of another
/// type at its value, else a key close to one that is read at that key
/// (with a did-you-mean), else `None` (the caller's general message).
pub fn listing_problem(text: &str, v: &Value) -> Option<(Range<usize>, String)> {
    let o = v.as_object()?;
    const WANT: &str =
        "an MCP tools/list result (an object with a \"tools\" array) or an OpenAI tools array";
    let wrong = |path: &[Seg<'_>], name: &str, found: &Value| {
        value_span(text, path).map(|s| {
            (
                s,
                format!(
                    "`{name}` must be an array of tools, found {} (expected {WANT})",
                    crate::diag::json_kind(found)
                ),
            )
        })
    };
    if let Some(t) = o.get("tools") {
        return wrong(&[Seg::Key("tools")], "tools", t);
    }
    if let Some(t) = o.get("result").and_then(|r| r.get("tools")) {
        return wrong(&[Seg::Key("result"), Seg::Key("tools")], "result.tools", t);
    }
    for k in o.keys() {
        if LISTING_KEYS.contains(&k.as_str()) {
            continue;
        }
        if let Some(s) = crate::diag::did_you_mean(k, LISTING_KEYS) {
            let span = key_span(text, &[], k)?;
            return Some((
                span,
                format!(
                    "unknown key `{}` (did you mean `{s}`?); expected {WANT}",
                    crate::diag::echo(k)
                ),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_and_wrapper_keys_are_located() {
        let t = "{\"tools\": [{\"name\": \"a\"},\n {\"description\": \"b\"}]}";
        let (s, p) = tool_span(t, 1).unwrap();
        assert_eq!(
            (&t[s], p.as_str()),
            ("{\"description\": \"b\"}", "tools[1]")
        );
        let t = "[{}, {\"type\": \"function\"}]";
        assert_eq!(tool_span(t, 1).unwrap().1, "[1]");
        let t = "{\"result\": {\"tools\": [{}]}}";
        assert_eq!(tool_span(t, 0).unwrap().1, "result.tools[0]");
        let t = "{\"tool\": []}";
        let v: Value = serde_json::from_str(t).unwrap();
        let (s, m) = listing_problem(t, &v).unwrap();
        assert_eq!(&t[s], "\"tool\"");
        assert!(
            m.starts_with("unknown key `tool` (did you mean `tools`?)"),
            "{m}"
        );
        let t = "{\"tools\": {\"a\": 1}}";
        let v: Value = serde_json::from_str(t).unwrap();
        let (s, m) = listing_problem(t, &v).unwrap();
        assert_eq!(&t[s], "{\"a\": 1}");
        assert!(
            m.starts_with("`tools` must be an array of tools, found an object"),
            "{m}"
        );
        let t = "{\"other\": []}";
        assert!(listing_problem(t, &serde_json::from_str(t).unwrap()).is_none());
    }
}
