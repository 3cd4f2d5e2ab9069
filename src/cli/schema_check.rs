//! `check`'s test of every tool's input schema as a validator (issue 29).
//! The plan builds a schema's validator on the first call that needs it;
//! a schema the meta-schema accepts but that cannot validate (a `pattern`
//! that is not a regular expression, a `$ref` to nothing, a remote `$ref`,
//! never fetched) would load, and the call gate would then deny every call
//! of the tool as `schema.schema_unusable` (fail closed). `check` builds
//! each distinct schema's validator and reports such a schema as an error
//! (exit 1), at the bad keyword's place in the catalog or tag file when the
//! file is JSON, else at the schema; `eval`, `guard` and the proxy still
//! load the tool (and the gate still denies its calls).

use std::collections::HashSet;

use serde_json::Value;
use toolgate::diag::json_path::{Seg, value_span};
use toolgate::diag::{Diagnostic, ErrorKind};
use toolgate::load::{Sources, load_catalog};
use toolgate::plan::Plan;

use super::PlanArgs;

/// One problem per distinct schema of the plan's tools that cannot
/// validate (the first tool that has it is named), in catalog order.
pub fn unusable_schemas(p: &Plan, args: &PlanArgs) -> Vec<Diagnostic> {
    use rayon::prelude::*;
    let g = toolgate::gate::compiled(p);
    let mut seen = HashSet::new();
    let distinct: Vec<usize> = (0..g.tools.len())
        .filter(|&i| seen.insert(p.tools[i].input_schema.hash64()))
        .collect();
    // (building a validator is most of the cost: on every core, in
    // catalog order)
    let bad: Vec<(usize, String, Vec<String>)> = distinct
        .par_iter()
        .filter_map(|&i| {
            let s = &g.tools[i].schema;
            let why = s.validator().err()?;
            Some((i, why.to_string(), pointer_of(s.schema(), why)))
        })
        .collect();
    if bad.is_empty() {
        return Vec::new();
    }
    // The specs carry each tool's file and the span of its schema (read
    // again only when there is something to locate).
    let specs = load_catalog(&Sources {
        policy: None,
        tags: args.tags.clone(),
        tools: args.tools.clone(),
    })
    .unwrap_or_default();
    bad.into_iter()
        .map(|(i, why, pointer)| {
            let name = &p.tools[i].name;
            let message = format!(
                "tool `{}`: its inputSchema cannot validate arguments ({}){}: the call gate would deny every call of it (`schema.schema_unusable`); fix the schema",
                toolgate::diag::echo(name),
                toolgate::diag::clip_chars(&why, 300),
                match pointer.is_empty() {
                    true => String::new(),
                    false => format!(" at /{}", toolgate::diag::echo(&pointer.join("/"))),
                }
            );
            let spec = specs.iter().find(|s| s.name.value == *name);
            let located = spec.and_then(|s| {
                let file = s.file.as_ref()?;
                let span = s
                    .input_schema_span
                    .clone()
                    .or_else(|| schema_in_tools_file(&file.text, s.name.span.start))?;
                Some((file, span))
            });
            match located {
                Some((file, span)) => {
                    let at = inside(&file.text, span.clone(), &pointer).unwrap_or(span);
                    Diagnostic::at(ErrorKind::InvalidValue, file, at, message)
                }
                None => Diagnostic::bare(ErrorKind::InvalidValue, message),
            }
        })
        .collect()
}

/// The JSON path, inside `schema`, of what keeps it from validating: the
/// keyword the schema's own check points at (a `pattern`), or the `$ref`
/// whose target the message names; empty when neither is found.
fn pointer_of(schema: &Value, why: &str) -> Vec<String> {
    let draft = toolgate::plan::gate::schema::draft_of(schema);
    if let Err(e) = jsonschema::options().with_draft(draft).build(schema) {
        let at: Vec<String> = e
            .instance_path()
            .as_str()
            .split('/')
            .skip(1)
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect();
        if !at.is_empty() {
            return at;
        }
    }
    // "Pointer '/$defs/nosuch' does not exist", "… 'https://x/y' …": the
    // first `$ref` whose value ends with the quoted target.
    let target = why.split('\'').nth(1).unwrap_or("");
    let mut path = Vec::new();
    if !target.is_empty() && find_ref(schema, target, &mut path, 0) {
        return path;
    }
    Vec::new()
}

fn find_ref(v: &Value, target: &str, path: &mut Vec<String>, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    match v {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("$ref")
                && r.ends_with(target)
            {
                path.push("$ref".into());
                return true;
            }
            for (k, x) in o {
                path.push(k.clone());
                if find_ref(x, target, path, depth + 1) {
                    return true;
                }
                path.pop();
            }
            false
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.to_string());
                if find_ref(x, target, path, depth + 1) {
                    return true;
                }
                path.pop();
            }
            false
        }
        _ => false,
    }
}

/// The span of the value at `pointer` inside the JSON text of the schema
/// at `span` of `text`; `None` when the schema is not written as JSON
/// there (a TOML table) or the path is not found.
fn inside(
    text: &str,
    span: std::ops::Range<usize>,
    pointer: &[String],
) -> Option<std::ops::Range<usize>> {
    let schema = text.get(span.clone())?;
    if pointer.is_empty() || !schema.trim_start().starts_with('{') {
        return None;
    }
    // An array index in a pointer is a number; a key may look like one.
    let mut segs: Vec<Seg<'_>> = Vec::new();
    let mut cur: Option<Value> = serde_json::from_str(schema).ok();
    for p in pointer {
        let next = match (&cur, p.parse::<usize>()) {
            (Some(Value::Array(a)), Ok(i)) => {
                segs.push(Seg::Index(i));
                a.get(i).cloned()
            }
            (Some(Value::Object(o)), _) => {
                segs.push(Seg::Key(p));
                o.get(p).cloned()
            }
            _ => return None,
        };
        cur = next;
    }
    value_span(schema, &segs).map(|r| span.start + r.start..span.start + r.end)
}

/// The span of the schema (`inputSchema`, `input_schema` or OpenAI's
/// `function.parameters`) of the tool whose object, in the JSON tools file
/// `text` (an array of tools, or `{"tools": [...]}`, or a `tools/list`
/// response's `result.tools`), holds byte `name_at` (its name).
fn schema_in_tools_file(text: &str, name_at: usize) -> Option<std::ops::Range<usize>> {
    let root: Value = serde_json::from_str(text).ok()?;
    let lists: [&[Seg<'_>]; 3] = [
        &[],
        &[Seg::Key("tools")],
        &[Seg::Key("result"), Seg::Key("tools")],
    ];
    for list in lists {
        let mut node = Some(&root);
        for seg in list {
            node = match seg {
                Seg::Key(k) => node.and_then(|n| n.get(*k)),
                Seg::Index(i) => node.and_then(|n| n.get(*i)),
            };
        }
        let Some(Value::Array(tools)) = node else {
            continue;
        };
        for (i, t) in tools.iter().enumerate() {
            let mut path = list.to_vec();
            path.push(Seg::Index(i));
            if !value_span(text, &path).is_some_and(|r| r.contains(&name_at)) {
                continue;
            }
            let (holder, t) = match t.get("function") {
                Some(f) if f.is_object() => (Some("function"), f),
                _ => (None, t),
            };
            path.extend(holder.map(Seg::Key));
            let key = ["inputSchema", "input_schema", "parameters"]
                .into_iter()
                .find(|k| t.get(*k).is_some())?;
            path.push(Seg::Key(key));
            return value_span(text, &path);
        }
    }
    None
}
