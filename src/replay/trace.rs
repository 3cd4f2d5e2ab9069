//! Recorded sessions: the JSON Lines trace format (`docs/trace-format.md`).
//!
//! One JSON object per line, each with a session id, a time in seconds and an
//! event:
//!
//! ```text
//! {"session": "s1", "t": 0,   "event": "context", "stage": "debugging", "language": "sql"}
//! {"session": "s1", "t": 1.5, "event": "user_message", "text": "why is the users query empty?"}
//! {"session": "s1", "t": 4,   "event": "tool_call", "tool": "sqlite.read_query",
//!  "arguments": {"query": "select * from users"}, "outcome": "ok"}
//! ```
//!
//! Parsing checks what a line can check by itself and against the lines before
//! it (syntax, keys, types, time going back within a session); references to
//! the catalog (tool names, stages) are checked when the trace is replayed
//! against a plan. Every error names its 1-based line.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// A problem with one trace line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("trace line {line}: {message}")]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// A change of the session context: only the fields present change.
/// `Some(None)` clears an optional field (JSON `null`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextChange {
    /// `stage` / `conversation_stage`.
    pub conversation_stage: Option<Option<String>>,
    /// `language` / `active_language`.
    pub active_language: Option<Option<String>>,
    /// `project_type`.
    pub project_type: Option<Option<String>>,
    /// `active_files` (replaces the list).
    pub active_files: Option<Vec<String>>,
    /// `entities` / `user_intent_entities` (replaces the list).
    pub user_intent_entities: Option<Vec<String>>,
}

/// What happened at one trace line.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The user wrote a message: its keywords become the intent keywords.
    UserMessage {
        /// The raw text.
        text: String,
    },
    /// The session context changed.
    Context(ContextChange),
    /// The agent called a tool.
    ToolCall {
        /// Tool name (or alias) in the catalog.
        tool: String,
        /// The call's arguments (any JSON; not scored).
        arguments: Value,
        /// Optional outcome (`"ok"`, `"error"` or any JSON; not scored).
        outcome: Option<Value>,
    },
    /// A note of `mcp-proxy`'s shadow log: a decision the shadow policy
    /// made differently (`kind`: `list` or `call`). Kept, not replayed: it
    /// changes no state and is no step.
    Shadow {
        /// `list` (another active set) or `call` (another verdict).
        kind: String,
        /// The line's other keys (`tool`, `live`, `shadow`, `live_only`,
        /// `shadow_only`, `detail`).
        note: Map<String, Value>,
    },
}

/// One parsed trace line.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceLine {
    /// 1-based line number in the file.
    pub line: usize,
    /// Session id.
    pub session: String,
    /// Time in seconds (any origin; must not decrease within a session).
    pub t: f64,
    /// The event.
    pub event: Event,
}

/// A parsed trace: the valid lines, in file order, and the lines skipped.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Valid lines in file order.
    pub lines: Vec<TraceLine>,
    /// Lines skipped because they were invalid (only with `skip_invalid`).
    pub skipped: Vec<TraceError>,
}

impl Trace {
    /// Session ids in order of first appearance, each with the indices (into
    /// [`Trace::lines`]) of its lines in file order.
    pub fn sessions(&self) -> Vec<(&str, Vec<usize>)> {
        let mut order: Vec<(&str, Vec<usize>)> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, l) in self.lines.iter().enumerate() {
            let k = *index.entry(l.session.as_str()).or_insert_with(|| {
                order.push((l.session.as_str(), Vec::new()));
                order.len() - 1
            });
            order[k].1.push(i);
        }
        order
    }

    /// Number of tool calls.
    pub fn calls(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| matches!(l.event, Event::ToolCall { .. }))
            .count()
    }
}

const COMMON_KEYS: [&str; 3] = ["session", "t", "event"];
const EVENTS: [&str; 4] = ["user_message", "context", "tool_call", "shadow"];
const SHADOW_KEYS: [&str; 7] = [
    "kind",
    "tool",
    "live",
    "shadow",
    "live_only",
    "shadow_only",
    "detail",
];
const CONTEXT_KEYS: [&str; 8] = [
    "stage",
    "conversation_stage",
    "language",
    "active_language",
    "project_type",
    "active_files",
    "entities",
    "user_intent_entities",
];

fn check_keys(o: &Map<String, Value>, allowed: &[&str], event: &str) -> Result<(), String> {
    for k in o.keys() {
        if COMMON_KEYS.contains(&k.as_str()) || allowed.contains(&k.as_str()) {
            continue;
        }
        let hint = crate::diag::did_you_mean(k, allowed.iter().copied())
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err(format!(
            "unknown key `{}` in a `{event}` event{hint}; allowed: {}",
            crate::diag::echo(k),
            allowed.join(", ")
        ));
    }
    Ok(())
}

fn opt_string(v: &Value, key: &str) -> Result<Option<String>, String> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(format!("`{key}` must be a string or null")),
    }
}

fn string_list(v: &Value, key: &str) -> Result<Vec<String>, String> {
    v.as_array()
        .and_then(|a| {
            a.iter()
                .map(|x| x.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| format!("`{key}` must be an array of strings"))
}

/// Parses one line's JSON object (without the time-order check).
pub fn parse_line(text: &str, line: usize) -> Result<TraceLine, TraceError> {
    let err = |message: String| TraceError { line, message };
    let v: Value = serde_json::from_str(text).map_err(|e| {
        err(format!(
            "not valid JSON at column {}: {e}",
            e.column().max(1)
        ))
    })?;
    let Value::Object(o) = v else {
        return Err(err("a trace line must be a JSON object".into()));
    };
    let session = match o.get("session") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => return Err(err("`session` must be a non-empty string".into())),
        None => return Err(err("missing `session` (the session id)".into())),
    };
    let t = match o.get("t") {
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() => x,
            _ => return Err(err("`t` must be a finite number of seconds".into())),
        },
        Some(_) => return Err(err("`t` must be a number of seconds".into())),
        None => return Err(err("missing `t` (the time in seconds)".into())),
    };
    let kind = match o.get("event") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(err("`event` must be a string".into())),
        None => {
            return Err(err(format!(
                "missing `event` (one of {})",
                EVENTS.join(", ")
            )));
        }
    };
    let event = match kind {
        "user_message" => {
            check_keys(&o, &["text"], kind).map_err(err)?;
            match o.get("text") {
                Some(Value::String(s)) => Event::UserMessage { text: s.clone() },
                Some(_) => return Err(err("`text` must be a string".into())),
                None => return Err(err("a `user_message` event needs `text`".into())),
            }
        }
        "context" => {
            check_keys(&o, &CONTEXT_KEYS, kind).map_err(err)?;
            let mut c = ContextChange::default();
            for (k, v) in &o {
                match k.as_str() {
                    "stage" | "conversation_stage" => {
                        c.conversation_stage = Some(opt_string(v, k).map_err(err)?)
                    }
                    "language" | "active_language" => {
                        c.active_language = Some(opt_string(v, k).map_err(err)?)
                    }
                    "project_type" => c.project_type = Some(opt_string(v, k).map_err(err)?),
                    "active_files" => c.active_files = Some(string_list(v, k).map_err(err)?),
                    "entities" | "user_intent_entities" => {
                        c.user_intent_entities = Some(string_list(v, k).map_err(err)?)
                    }
                    _ => {}
                }
            }
            Event::Context(c)
        }
        "tool_call" => {
            check_keys(&o, &["tool", "arguments", "outcome"], kind).map_err(err)?;
            let tool = match o.get("tool") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                Some(_) => return Err(err("`tool` must be a non-empty string".into())),
                None => return Err(err("a `tool_call` event needs `tool`".into())),
            };
            Event::ToolCall {
                tool,
                arguments: o.get("arguments").cloned().unwrap_or(Value::Null),
                outcome: o.get("outcome").cloned(),
            }
        }
        "shadow" => {
            check_keys(&o, &SHADOW_KEYS, kind).map_err(err)?;
            let kind = match o.get("kind") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                _ => return Err(err("a `shadow` event needs `kind` (a string)".into())),
            };
            let note = o
                .iter()
                .filter(|(k, _)| SHADOW_KEYS[1..].contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Event::Shadow { kind, note }
        }
        other => {
            let hint = crate::diag::did_you_mean(other, EVENTS)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(err(format!(
                "unknown event `{}`{hint}; events: {}",
                crate::diag::echo(other),
                EVENTS.join(", ")
            )));
        }
    };
    Ok(TraceLine {
        line,
        session,
        t,
        event,
    })
}

/// Parses a whole trace. Blank lines are ignored. A line that does not parse
/// or whose time is earlier than the previous line of the same session is an
/// error; with `skip_invalid` it is skipped and recorded in [`Trace::skipped`].
pub fn parse_trace(text: &str, skip_invalid: bool) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    let mut last_t: HashMap<String, f64> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let parsed = parse_line(raw, line).and_then(|l| match last_t.get(&l.session) {
            Some(&prev) if l.t < prev => Err(TraceError {
                line,
                message: format!(
                    "time goes back in session `{}`: t = {} after t = {prev}",
                    crate::diag::echo(&l.session),
                    l.t
                ),
            }),
            _ => Ok(l),
        });
        match parsed {
            Ok(l) => {
                last_t.insert(l.session.clone(), l.t);
                trace.lines.push(l);
            }
            Err(e) if skip_invalid => trace.skipped.push(e),
            Err(e) => return Err(e),
        }
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shadow_event_is_kept_and_checked() {
        let t = parse_trace(
            r#"{"session":"a","t":1,"event":"shadow","kind":"call","tool":"x","live":"allow","shadow":"deny","detail":"no"}"#,
            false,
        )
        .unwrap();
        match &t.lines[0].event {
            Event::Shadow { kind, note } => {
                assert_eq!(kind, "call");
                assert_eq!(note["shadow"], "deny");
                assert!(!note.contains_key("kind"));
            }
            e => panic!("{e:?}"),
        }
        assert_eq!(t.calls(), 0, "a shadow note is not a call");
        let e = parse_trace(
            r#"{"session":"a","t":1,"event":"shadow","live":"allow"}"#,
            false,
        )
        .unwrap_err();
        assert!(e.message.contains("needs `kind`"), "{e}");
        let e = parse_trace(
            r#"{"session":"a","t":1,"event":"shadow","kind":"list","shadw":1}"#,
            false,
        )
        .unwrap_err();
        assert!(e.message.contains("did you mean `shadow`"), "{e}");
    }

    #[test]
    fn parses_the_three_events() {
        let t = parse_trace(
            r#"{"session":"a","t":0,"event":"context","stage":"debugging","language":null}

{"session":"a","t":1,"event":"user_message","text":"hi"}
{"session":"a","t":2,"event":"tool_call","tool":"x","arguments":{"q":1},"outcome":"ok"}"#,
            false,
        )
        .unwrap();
        assert_eq!(t.lines.len(), 3);
        assert_eq!(t.lines[2].line, 4);
        match &t.lines[0].event {
            Event::Context(c) => {
                assert_eq!(c.conversation_stage, Some(Some("debugging".into())));
                assert_eq!(c.active_language, Some(None));
                assert_eq!(c.project_type, None);
            }
            e => panic!("{e:?}"),
        }
        assert_eq!(t.calls(), 1);
    }

    #[test]
    fn errors_name_the_line() {
        let text =
            "{\"session\":\"a\",\"t\":1,\"event\":\"user_message\",\"text\":\"x\"}\nnot json\n";
        let e = parse_trace(text, false).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("trace line 2: not valid JSON"));

        let text = "{\"session\":\"a\",\"t\":5,\"event\":\"user_message\",\"text\":\"x\"}\n{\"session\":\"b\",\"t\":1,\"event\":\"user_message\",\"text\":\"x\"}\n{\"session\":\"a\",\"t\":4,\"event\":\"user_message\",\"text\":\"y\"}";
        let e = parse_trace(text, false).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("time goes back"), "{}", e.message);

        let e = parse_trace(
            r#"{"session":"a","t":1,"event":"tool_cal","tool":"x"}"#,
            false,
        )
        .unwrap_err();
        assert!(
            e.message.contains("did you mean `tool_call`"),
            "{}",
            e.message
        );
        let e = parse_trace(
            r#"{"session":"a","t":1,"event":"tool_call","tol":"x"}"#,
            false,
        )
        .unwrap_err();
        assert!(e.message.contains("unknown key `tol`"), "{}", e.message);
        let e = parse_trace(r#"{"t":1,"event":"tool_call","tool":"x"}"#, false).unwrap_err();
        assert!(e.message.contains("missing `session`"));
    }

    #[test]
    fn skip_invalid_counts() {
        let text = "{\"session\":\"a\",\"t\":5,\"event\":\"user_message\",\"text\":\"x\"}\n[]\n{\"session\":\"a\",\"t\":4,\"event\":\"user_message\",\"text\":\"y\"}\n{\"session\":\"a\",\"t\":6,\"event\":\"tool_call\",\"tool\":\"z\"}";
        let t = parse_trace(text, true).unwrap();
        assert_eq!(t.lines.len(), 2);
        assert_eq!(
            t.skipped.iter().map(|e| e.line).collect::<Vec<_>>(),
            vec![2, 3]
        );
    }
}
