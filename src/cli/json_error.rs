//! Errors as JSON, for a command run with `--format json` (issue 29): the
//! same exit code as in text, and on stderr, instead of text, one JSON
//! object:
//!
//! ```json
//! {"error": {"kind": "input", "message": "...", "location": "in.json:1:56",
//!            "problems": [{"kind", "message", "location", "help"}, ...]}}
//! ```
//!
//! * `kind`: `usage` (exit 2: the command line, or a value out of range),
//!   `input` (exit 3: an input, trace or other file that cannot be read,
//!   written or understood), `unknown_tool` (exit 5), `failed` (exit 1
//!   without load problems: a result refused, a run that failed) or, when
//!   the policy, tags or tools did not load (exit 1), the first problem's
//!   kind (`unknown_key`, `syntax`, `io`, ...: `toolgate::diag::ErrorKind`'s
//!   code without its `toolgate::` prefix).
//! * `message`: one sentence, without the location.
//! * `location`: `file:line:column` (or the file alone) when the error
//!   stands at a place; left out otherwise.
//! * `problems`: every load problem (kind, message, location, help), only
//!   when the policy, tags or tools did not load.
//!
//! stdout keeps carrying results only: a verdict, a check report.

use std::process::ExitCode;

use serde_json::{Map, Value, json};
use toolgate::LoadError;
use toolgate::diag::Diagnostic;

/// The kind of a message-only error by its exit code.
fn kind_of(code: ExitCode) -> &'static str {
    match code {
        c if c == ExitCode::from(2) => "usage",
        c if c == ExitCode::from(3) => "input",
        c if c == ExitCode::from(5) => "unknown_tool",
        _ => "failed",
    }
}

/// Splits a leading `file:line:column: ` off `message` (the form every
/// located message of the CLI starts with): `(Some(location), rest)`. Only
/// the text before the first `": "` is read as a location.
fn split_location(message: &str) -> (Option<&str>, &str) {
    let Some(i) = message.find(": ") else {
        return (None, message);
    };
    let head = &message[..i];
    let mut parts = head.rsplitn(3, ':');
    let (col, line, file) = (parts.next(), parts.next(), parts.next());
    let digits =
        |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    if digits(col) && digits(line) && file.is_some_and(|f| !f.is_empty()) {
        (Some(head), &message[i + 2..])
    } else {
        (None, message)
    }
}

/// One load problem as JSON.
fn problem(d: &Diagnostic) -> Value {
    let mut m = Map::new();
    m.insert("kind".into(), json!(kind_code(d)));
    m.insert("message".into(), json!(d.message));
    if let Some(l) = d.location() {
        m.insert("location".into(), json!(l));
    }
    if let Some(h) = &d.help {
        m.insert("help".into(), json!(h));
    }
    Value::Object(m)
}

/// The diagnostic's kind code without its `toolgate::` prefix.
fn kind_code(d: &Diagnostic) -> &'static str {
    let c = d.kind.code();
    c.strip_prefix("toolgate::").unwrap_or(c)
}

/// The JSON object of an error: load problems (`load`) and/or one message
/// (`message`), ended with exit `code`. `None` when there is nothing to say
/// (an exit code that is a result, such as `guard`'s deny).
pub fn error_object(
    code: ExitCode,
    load: Option<&LoadError>,
    message: Option<&str>,
) -> Option<Value> {
    let first = load.and_then(|l| l.diagnostics.first());
    let mut m = Map::new();
    match (message, first) {
        (Some(msg), _) => {
            let (location, rest) = split_location(msg);
            // (exit 1 with load problems: a result refused, `failed`)
            m.insert("kind".into(), json!(kind_of(code)));
            m.insert("message".into(), json!(rest));
            if let Some(l) = location {
                m.insert("location".into(), json!(l));
            }
        }
        (None, Some(d)) => {
            m.insert("kind".into(), json!(kind_code(d)));
            let msg = match &d.help {
                Some(h) => format!("{} ({h})", d.message),
                None => d.message.clone(),
            };
            m.insert("message".into(), json!(msg));
            if let Some(l) = d.location() {
                m.insert("location".into(), json!(l));
            }
        }
        (None, None) => return None,
    }
    if let Some(l) = load {
        m.insert(
            "problems".into(),
            Value::Array(l.diagnostics.iter().map(problem).collect()),
        );
    }
    Some(json!({ "error": Value::Object(m) }))
}

/// Prints [`error_object`] on stderr, one line.
pub fn print(code: ExitCode, load: Option<&LoadError>, message: Option<&str>) {
    if let Some(v) = error_object(code, load, message) {
        eprintln!("{v}");
    }
}

/// Whether the raw command line asks for `--format json` (read before
/// parsing, so that a command line clap refuses is answered in JSON too).
pub fn asked_for_json(args: &[std::ffi::OsString]) -> bool {
    args.windows(2)
        .any(|w| w[0] == "--format" && w[1] == "json")
        || args.iter().any(|a| a == "--format=json")
}

/// A clap error (bad usage, exit 2) as the JSON error object: the error's
/// first paragraph, without clap's `error: ` prefix and usage lines.
pub fn clap_error(e: &clap::Error) -> Value {
    let text = e.render().to_string();
    let first = text.split("\n\n").next().unwrap_or("").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    json!({"error": {"kind": "usage", "message": first}})
}

#[cfg(test)]
mod tests {
    use super::split_location;

    #[test]
    fn a_leading_location_is_split_off() {
        assert_eq!(
            split_location("bad.json:1:56: `x` must be a number"),
            (Some("bad.json:1:56"), "`x` must be a number")
        );
        assert_eq!(
            split_location("-:1:9: unknown key"),
            (Some("-:1:9"), "unknown key")
        );
        assert_eq!(
            split_location("cannot read x.json: No such file"),
            (None, "cannot read x.json: No such file")
        );
        assert_eq!(
            split_location("--max-rows must be at least 100"),
            (None, "--max-rows must be at least 100")
        );
    }
}
