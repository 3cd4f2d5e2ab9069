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

/// A problem with one trace line: `trace line 3, column 22: message` (the
/// column when the problem is a value or key of the line).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column (in characters) of the value or key at fault, when
    /// the problem has one.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.column {
            Some(c) => write!(f, "trace line {}, column {c}: {}", self.line, self.message),
            None => write!(f, "trace line {}: {}", self.line, self.message),
        }
    }
}

impl std::error::Error for TraceError {}

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
    /// 1-based column (in characters) of a context event's stage value,
    /// for a message about it (an undeclared stage); `None` otherwise.
    pub stage_column: Option<usize>,
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

/// The first key of `o` that a line of this `event` does not hold, with
/// the message naming it (and a did-you-mean).
fn check_keys<'a>(
    o: &'a Map<String, Value>,
    allowed: &[&str],
    event: &str,
) -> Result<(), (&'a str, String)> {
    for k in o.keys() {
        if COMMON_KEYS.contains(&k.as_str()) || allowed.contains(&k.as_str()) {
            continue;
        }
        let hint = crate::diag::did_you_mean(k, allowed.iter().chain(&COMMON_KEYS).copied())
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err((
            k,
            format!(
                "unknown key `{}` in a `{event}` event{hint}; allowed: {}",
                crate::diag::echo(k),
                allowed.join(", ")
            ),
        ));
    }
    Ok(())
}

/// "a string \"5\"", "an array [1, 2]": a found value's JSON kind and its
/// text as written in `line` at `span` (clipped), for type errors.
fn found(v: &Value, line: &str, span: Option<std::ops::Range<usize>>) -> String {
    let kind = crate::diag::json_kind(v);
    match span.and_then(|s| line.get(s)) {
        Some(w) if !matches!(v, Value::Null) => {
            format!("{kind} {}", crate::diag::clip_chars(w, 40))
        }
        _ => kind.to_string(),
    }
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

/// Parses one line's JSON object (without the time-order check). An error
/// about a key or a value gives its column; the line's other unknown keys
/// follow it, each at its column with its did-you-mean (issue 29: a line
/// with several typos reported the first only).
pub fn parse_line(text: &str, line: usize) -> Result<TraceLine, TraceError> {
    parse_line_first(text, line).map_err(|e| with_other_unknown_keys(text, e))
}

/// The keys a line of event `kind` holds besides [`COMMON_KEYS`]; `None`
/// for an unknown event.
fn event_keys(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "user_message" => Some(&["text"]),
        "context" => Some(&CONTEXT_KEYS),
        "tool_call" => Some(&["tool", "arguments", "outcome"]),
        "shadow" => Some(&SHADOW_KEYS),
        _ => None,
    }
}

/// At most this many further unknown keys of a line are listed.
const MAX_OTHER_KEYS: usize = 10;

/// `e`, followed by the line's unknown keys that it does not name:
/// `…; also unknown on this line: `evnt` at column 20 (did you mean
/// `event`?), …`. A key is unknown when no event holds it (the line's
/// event unknown or missing) or the line's event does not.
fn with_other_unknown_keys(text: &str, mut e: TraceError) -> TraceError {
    use crate::diag::json_path::key_span;
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
        return e;
    };
    let every: Vec<&str> = EVENTS
        .iter()
        .filter_map(|k| event_keys(k))
        .flatten()
        .copied()
        .collect();
    let allowed: Vec<&str> = match o.get("event").and_then(Value::as_str).and_then(event_keys) {
        Some(keys) => keys.to_vec(),
        None => every,
    };
    let others: Vec<String> = o
        .keys()
        .filter(|k| !COMMON_KEYS.contains(&k.as_str()) && !allowed.contains(&k.as_str()))
        .filter(|k| {
            !e.message
                .contains(&format!("unknown key `{}`", crate::diag::echo(k)))
        })
        .map(|k| {
            let at = key_span(text, &[], k)
                .map(|s| format!(" at column {}", 1 + text[..s.start].chars().count()))
                .unwrap_or_default();
            let hint = crate::diag::did_you_mean(k, allowed.iter().chain(&COMMON_KEYS).copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            format!("`{}`{at}{hint}", crate::diag::echo(k))
        })
        .collect();
    if !others.is_empty() {
        let mut list: Vec<String> = others.iter().take(MAX_OTHER_KEYS).cloned().collect();
        if others.len() > MAX_OTHER_KEYS {
            list.push(crate::diag::more(others.len() - MAX_OTHER_KEYS));
        }
        e.message = format!(
            "{}; also unknown on this line: {}",
            e.message,
            list.join(", ")
        );
    }
    e
}

fn parse_line_first(text: &str, line: usize) -> Result<TraceLine, TraceError> {
    use crate::diag::json_path::{Seg, key_span, value_span};
    let err = |message: String| TraceError {
        line,
        column: None,
        message,
    };
    let column = |at: usize| Some(1 + text[..at.min(text.len())].chars().count());
    // at the value of a top-level key / at the key itself
    let at_value = |key: &str, message: String| TraceError {
        line,
        column: value_span(text, &[Seg::Key(key)]).and_then(|s| column(s.start)),
        message,
    };
    let at_key = |key: &str, message: String| TraceError {
        line,
        column: key_span(text, &[], key).and_then(|s| column(s.start)),
        message,
    };
    let bad_type = |key: &str, v: &Value, want: &str| {
        let span = value_span(text, &[Seg::Key(key)]);
        at_value(
            key,
            format!("`{key}` must be {want}, found {}", found(v, text, span)),
        )
    };
    let v: Value = serde_json::from_str(text).map_err(|e| {
        err(format!(
            "not valid JSON at column {}: {e}",
            e.column().max(1)
        ))
    })?;
    // A repeated key: serde_json keeps the last value, other readers the
    // first (RFC 8259 §4), so the line is refused (issue 29).
    if let Some(d) = crate::diag::duplicate_keys::find(text) {
        return Err(TraceError {
            line,
            column: Some(d.column),
            message: format!(
                "duplicate key `{}`: the same key twice is read differently by different JSON readers (this one would keep the last value); write each key once",
                crate::diag::echo(&d.key)
            ),
        });
    }
    let Value::Object(o) = v else {
        return Err(err(format!(
            "a trace line must be a JSON object, found {}",
            crate::diag::json_kind(&v)
        )));
    };
    // A required key that is missing, when another key looks like it
    // misspelt: the error stands at that key.
    let missing = |key: &str, what: String| {
        let near = o.keys().find(|k| {
            !COMMON_KEYS.contains(&k.as_str()) && crate::diag::did_you_mean(k, [key]).is_some()
        });
        match near {
            Some(k) => at_key(
                k,
                format!(
                    "unknown key `{}` (did you mean `{key}`?); {what}",
                    crate::diag::echo(k)
                ),
            ),
            None => err(what),
        }
    };
    let session = match o.get("session") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(v) => return Err(bad_type("session", v, "a non-empty string")),
        None => {
            return Err(missing(
                "session",
                "missing `session` (the session id)".into(),
            ));
        }
    };
    let t = match o.get("t") {
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() => x,
            _ => {
                return Err(at_value(
                    "t",
                    "`t` must be a finite number of seconds".into(),
                ));
            }
        },
        Some(v) => return Err(bad_type("t", v, "a number of seconds")),
        None => return Err(missing("t", "missing `t` (the time in seconds)".into())),
    };
    let kind = match o.get("event") {
        Some(Value::String(s)) => s.as_str(),
        Some(v) => return Err(bad_type("event", v, "a string")),
        None => {
            return Err(missing(
                "event",
                format!("missing `event` (one of {})", EVENTS.join(", ")),
            ));
        }
    };
    let mut stage_column = None;
    let keys = |allowed: &[&str]| check_keys(&o, allowed, kind).map_err(|(k, m)| at_key(k, m));
    let event = match kind {
        "user_message" => {
            keys(&["text"])?;
            match o.get("text") {
                Some(Value::String(s)) => Event::UserMessage { text: s.clone() },
                Some(v) => return Err(bad_type("text", v, "a string")),
                None => return Err(err("a `user_message` event needs `text`".into())),
            }
        }
        "context" => {
            keys(&CONTEXT_KEYS)?;
            let mut c = ContextChange::default();
            for (k, v) in &o {
                match k.as_str() {
                    "stage" | "conversation_stage" => {
                        c.conversation_stage = Some(opt_string(v, k).map_err(err)?);
                        stage_column =
                            value_span(text, &[Seg::Key(k)]).and_then(|s| column(s.start));
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
            keys(&["tool", "arguments", "outcome"])?;
            let tool = match o.get("tool") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                Some(v) => return Err(bad_type("tool", v, "a non-empty string")),
                None => return Err(err("a `tool_call` event needs `tool`".into())),
            };
            Event::ToolCall {
                tool,
                arguments: o.get("arguments").cloned().unwrap_or(Value::Null),
                outcome: o.get("outcome").cloned(),
            }
        }
        "shadow" => {
            keys(&SHADOW_KEYS)?;
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
            return Err(at_value(
                "event",
                format!(
                    "unknown event `{}`{hint}; events: {}",
                    crate::diag::echo(other),
                    EVENTS.join(", ")
                ),
            ));
        }
    };
    Ok(TraceLine {
        line,
        session,
        t,
        event,
        stage_column,
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
            Some(&prev) if l.t < prev => Err(time_goes_back(&l, prev, raw)),
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

/// The error for line `l` (text `raw`) of a session whose previous line
/// had the later time `prev`: `time goes back in session `S`: t = 5 after
/// t = 1e300`, this line's `t` as written, clipped
/// ([`crate::diag::number_as_written`]), the previous one in short form
/// ([`crate::diag::short_number`]): never a float's 300 digits.
pub fn time_goes_back(l: &TraceLine, prev: f64, raw: &str) -> TraceError {
    use crate::diag::json_path::{Seg, value_span};
    let now = value_span(raw, &[Seg::Key("t")])
        .map(|s| crate::diag::number_as_written(&raw[s]).into_owned())
        .unwrap_or_else(|| crate::diag::short_number(l.t));
    TraceError {
        column: None,
        line: l.line,
        message: format!(
            "time goes back in session `{}`: t = {now} after t = {}",
            crate::diag::echo(&l.session),
            crate::diag::short_number(prev)
        ),
    }
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
