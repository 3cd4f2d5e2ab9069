//! A JSON file given to the JSON option that does not take its kind
//! (issue 29): a trace (JSON Lines of session events) as `--input`, a
//! session input as `--trace`, a `tools/list` result as `--input` (which
//! read it as an input with inline tools and no session, silently), an
//! audit log as either. Each kind is told by its shape ([`kind_of`]), and
//! the error says what the file looks like and which option takes it.
//!
//! `json_options` names a TOML file given to these options; this module
//! does the same for JSON files of the wrong kind, and is called from
//! there once a command failed, and by `eval`/`explain`/`watch` for a
//! catalog given as `--input`, which does not fail.

use serde_json::{Map, Value};

/// What a JSON file looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// JSON Lines of session events (`session`, `t`, `event`).
    Trace,
    /// One session input object (`context`, `message`, `usage`, ...).
    Input,
    /// A tool catalog: an MCP `tools/list` result (`{"tools": [...]}`, or a
    /// JSON-RPC response holding one) or an array of MCP or OpenAI tools.
    Catalog,
    /// JSON Lines of audit records (`guard --audit`, `mcp-proxy --audit`).
    AuditLog,
}

impl Kind {
    /// "looks like …; pass it as …": what the file is and who takes it.
    pub fn looks(self) -> &'static str {
        match self {
            Kind::Trace => {
                "looks like a trace (JSON Lines of session events, with `session`, `t` and `event` on each line): pass it as --trace (to replay, compare or fit)"
            }
            Kind::Input => {
                "looks like a session input (one JSON object with context, message, usage): pass it as --input (to eval, explain or watch)"
            }
            Kind::Catalog => {
                "looks like a tool catalog (an MCP tools/list result or an OpenAI tools array): pass it as --tools"
            }
            Kind::AuditLog => {
                "looks like an audit log (JSON Lines of `guard --audit` or `mcp-proxy --audit` records): read it with `toolgate audit summary FILE`"
            }
        }
    }
}

/// The keys only a session input has (`tools` is shared with a catalog).
const INPUT_KEYS: [&str; 6] = ["context", "message", "usage", "now", "preset", "expected"];

/// The keys of a `tools/list` result, or of the JSON-RPC response holding one.
const CATALOG_KEYS: [&str; 7] = [
    "tools",
    "nextCursor",
    "_meta",
    "server",
    "result",
    "jsonrpc",
    "id",
];

/// The keys of an inline tool that only toolgate's tags have: a tool with
/// one is an input's inline tool, not a catalog's.
const TAG_KEYS: [&str; 10] = [
    "domains",
    "preferred_stages",
    "trigger_keywords",
    "base_priority",
    "parameter_complexity",
    "risk_level",
    "requires_confirmation",
    "read_only",
    "arguments",
    "follows",
];

/// Whether `o` is one trace event.
fn is_event(o: &Map<String, Value>) -> bool {
    o.contains_key("session") && (o.contains_key("event") || o.contains_key("t"))
}

/// Whether `v` is a list of tools without toolgate tags (MCP tools with a
/// `name`, or OpenAI tools `{"type": "function", ...}`).
fn is_tool_list(v: &Value) -> bool {
    let Some(a) = v.as_array() else { return false };
    !a.is_empty()
        && a.iter().all(|t| {
            t.as_object().is_some_and(|o| {
                (o.contains_key("name")
                    || o.get("type").and_then(Value::as_str) == Some("function"))
                    && !TAG_KEYS.iter().any(|k| o.contains_key(*k))
            })
        })
}

/// What the JSON object `o` (a whole file or its first line) looks like.
fn kind_of_object(o: &Map<String, Value>, line: &str) -> Option<Kind> {
    // (a gate record has an `event`, and may have a `session`, too)
    if toolgate::gate::audit::check_record(line).is_ok() {
        return Some(Kind::AuditLog);
    }
    if is_event(o) {
        return Some(Kind::Trace);
    }
    let listing = o.get("tools").or_else(|| o.get("result")?.get("tools"));
    if listing.is_some_and(is_tool_list) && o.keys().all(|k| CATALOG_KEYS.contains(&k.as_str())) {
        return Some(Kind::Catalog);
    }
    INPUT_KEYS
        .iter()
        .any(|k| o.contains_key(*k))
        .then_some(Kind::Input)
}

/// What `text` looks like: the whole text as one JSON value, else (JSON
/// Lines) its first line that is not blank; `None` for anything else.
pub fn kind_of(text: &str) -> Option<Kind> {
    let text = text.trim_start_matches('\u{feff}');
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(o)) => kind_of_object(&o, text),
        Ok(v) if is_tool_list(&v) => Some(Kind::Catalog),
        Ok(_) => None,
        Err(_) => {
            let first = text.lines().find(|l| !l.trim().is_empty())?;
            match serde_json::from_str::<Value>(first).ok()? {
                Value::Object(o) => kind_of_object(&o, first),
                _ => None,
            }
        }
    }
}

/// The kind the JSON option `option` takes.
fn taken_by(option: &str) -> Option<Kind> {
    Some(match option {
        "--input" => Kind::Input,
        "--trace" => Kind::Trace,
        "--tools" => Kind::Catalog,
        "audit summary" => Kind::AuditLog,
        _ => return None,
    })
}

/// After `option`'s file `shown` failed to read as what the option takes
/// (`takes`, said in the message): when its text looks like another kind,
/// the message that says so. A catalog given as `--input` is not told here
/// (an input may hold inline tools: its own error says more), but by
/// [`catalog_as_input`].
pub fn swapped(option: &str, shown: &str, text: &str, takes: &str) -> Option<String> {
    let want = taken_by(option)?;
    let kind = kind_of(text)?;
    if kind == want || (want == Kind::Input && kind == Kind::Catalog) {
        return None;
    }
    Some(format!(
        "{option} {shown} {}; {option} takes {takes}. Are the options swapped?",
        kind.looks()
    ))
}

/// The error for an `--input` (named `shown`) that parsed, but is a tool
/// catalog: a `tools/list` result, whose tools would replace the catalog
/// and be scored for an empty session; `None` for any other input.
pub fn catalog_as_input(shown: &str, text: &str) -> Option<String> {
    (kind_of(text)? == Kind::Catalog).then(|| {
        format!(
            "--input {shown} {}; --input takes a session (context, message, usage). To score these tools for a session, give them as --tools and the session as --input (or add a \"context\" key to keep them inline)",
            Kind::Catalog.looks()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{Kind, kind_of};

    #[test]
    fn each_kind_is_told_by_its_shape() {
        let trace = "{\"session\": \"s\", \"t\": 0, \"event\": \"context\"}\n{\"session\": \"s\", \"t\": 1, \"event\": \"user_message\", \"text\": \"hi\"}\n";
        assert_eq!(kind_of(trace), Some(Kind::Trace));
        assert_eq!(kind_of("{\n \"context\": {}\n}"), Some(Kind::Input));
        assert_eq!(
            kind_of("{\"tools\": [{\"name\": \"a\", \"inputSchema\": {}}]}"),
            Some(Kind::Catalog)
        );
        assert_eq!(
            kind_of(
                "{\"jsonrpc\": \"2.0\", \"id\": 1, \"result\": {\"tools\": [{\"name\": \"a\"}]}}"
            ),
            Some(Kind::Catalog)
        );
        assert_eq!(
            kind_of("[{\"type\": \"function\", \"function\": {\"name\": \"a\"}}]"),
            Some(Kind::Catalog)
        );
        // inline tools with tags, or beside a message: an input
        assert_eq!(
            kind_of("{\"tools\": [{\"name\": \"a\", \"domains\": [\"database\"]}]}"),
            None
        );
        assert_eq!(
            kind_of("{\"message\": \"x\", \"tools\": [{\"name\": \"a\"}]}"),
            Some(Kind::Input)
        );
        assert_eq!(kind_of("[1, 2]"), None);
        assert_eq!(kind_of("not json"), None);
    }
}
