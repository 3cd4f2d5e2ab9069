//! The JSON input of `toolgate eval` / `explain` and of policy examples.
//!
//! ```json
//! {
//!   "context": { "conversation_stage": "debugging", "active_language": "sql", ... },
//!   "message": "why does the users query return nothing?",
//!   "usage": { "call_counts": {"sqlite.read_query": 3},
//!              "seconds_since_last_call": {"sqlite.read_query": 40.0},
//!              "usage_frequency": {} },
//!   "tools": [ { "name": "...", "domains": [...], ... } ],
//!   "now": 0.0
//! }
//! ```
//!
//! Every key is optional. `message` is raw user text: its extracted keywords
//! (the policy's `[keywords]`) are appended to `context.user_intent_keywords`.
//! `tools`, when present, replaces the catalog (each tool with inline tags, or
//! without tags to be auto-tagged). The keys of a seed-vector line (`id`,
//! `preset`, `expected`) are accepted and ignored, so a vector can be fed as
//! is; a `preset` must still name a seed preset (`input::preset`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use crate::context::{SessionContext, UsageStats};
use crate::parse::tags::InlineTool;
use crate::plan::Plan;

pub mod collect;
pub mod located;
pub mod preset;
mod ranges;

/// Usage as given in an input: counts, seconds since the last call, frequencies.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageInput {
    /// Calls per tool.
    #[serde(default)]
    pub call_counts: BTreeMap<String, f64>,
    /// Seconds since each tool's last call (relative to `now`).
    #[serde(default)]
    pub seconds_since_last_call: BTreeMap<String, f64>,
    /// Usage frequency in \[0,1\] per tool.
    #[serde(default)]
    pub usage_frequency: BTreeMap<String, f64>,
}

/// One evaluation input (see the module docs).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalInput {
    /// The session context.
    #[serde(default)]
    pub context: SessionContext,
    /// Raw user message.
    #[serde(default)]
    pub message: Option<String>,
    /// Usage.
    #[serde(default)]
    pub usage: UsageInput,
    /// A catalog replacing the plan's.
    #[serde(default)]
    pub tools: Option<Vec<InlineTool>>,
    /// The current time, seconds (default 0: then `seconds_since_last_call` are plain ages).
    #[serde(default)]
    pub now: f64,
    /// Seed-vector id (ignored).
    #[serde(default)]
    pub id: Option<serde_json::Value>,
    /// Seed-vector preset (ignored).
    #[serde(default)]
    pub preset: Option<serde_json::Value>,
    /// Seed-vector expectations (ignored).
    #[serde(default)]
    pub expected: Option<serde_json::Value>,
}

impl EvalInput {
    /// Parses an input from JSON text. An error names the place once, as
    /// `line L, column C: ` followed by the JSON path of the bad value, the
    /// JSON type expected there and what was found, or an unknown key with a
    /// did-you-mean (see [`InputError`]).
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::parse_text(text).map_err(|e| e.to_string())
    }

    /// [`EvalInput::parse`] for a named file: errors read
    /// `NAME:LINE:COLUMN: message`, as policy errors do.
    pub fn parse_file(name: &str, text: &str) -> Result<Self, String> {
        // Every misspelt key and wrong type at once (`collect`), when the
        // first problem is one of them.
        // Every number out of its range at once, too (`ranges`).
        Self::parse_text(text).map_err(|first| {
            let all = collect::serde_problems(text);
            if all.first().is_some_and(|a| a.message == first.message) {
                return collect::render(name, &all);
            }
            if let Ok(input) = serde_json::from_str::<EvalInput>(text) {
                let all = ranges::problems(&input, text);
                if all.first() == Some(&first) {
                    return collect::render(name, &all);
                }
            }
            first.in_file(name)
        })
    }

    /// [`EvalInput::parse`] with the error as a value.
    pub fn parse_text(text: &str) -> Result<Self, InputError> {
        if text.trim().is_empty() {
            return Err(InputError {
                line: 1,
                column: 1,
                message: format!("the input is empty; expected a JSON object ({KEYS_HINT})"),
            });
        }
        // Syntax first: a syntax error has no JSON path.
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| syntax_error(e, text))?;
        if !v.is_object() {
            return Err(InputError {
                line: 1,
                column: 1,
                message: format!(
                    "the input must be a JSON object ({KEYS_HINT}), found {}",
                    crate::diag::json_kind(&v)
                ),
            });
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let input: EvalInput = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let (line, column) = (e.inner().line(), e.inner().column());
            InputError {
                line,
                column,
                message: describe(e.path(), &crate::diag::json_message(e.inner())),
            }
        })?;
        // A key repeated inside a map (`usage.call_counts`), which serde
        // reads last-wins; a repeated struct field was refused above, by
        // serde's "duplicate field" (issue 29: the input's maps were the
        // one JSON input still read last-wins).
        if let Some(d) = crate::diag::duplicate_keys::find(text) {
            return Err(InputError {
                line: d.line,
                column: d.column,
                message: format!(
                    "duplicate key `{}`: a key may appear once in an object (JSON readers differ on which value wins); remove one of them",
                    crate::diag::echo(&d.key)
                ),
            });
        }
        for (i, t) in input.tools.iter().flatten().enumerate() {
            t.check().map_err(|m| {
                // at the tool's object (json_path; 0:0 if not found)
                use crate::diag::json_path::{Seg, value_span};
                let at = value_span(text, &[Seg::Key("tools"), Seg::Index(i)]);
                let (line, column) = at.map_or((0, 0), |s| {
                    crate::diag::SourceFile::new("", text).line_col(s.start)
                });
                InputError {
                    line,
                    column,
                    message: format!("tools[{i}]: {m}"),
                }
            })?;
        }
        ranges::check(&input, text)?;
        preset::check(&input, text)?;
        Ok(input)
    }

    /// Parses an input from a JSON value (a policy example, a seed-vector
    /// line). Errors name the JSON path of the bad value (there is no text
    /// location to give).
    pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
        if !v.is_object() {
            return Err(format!(
                "the input must be a JSON object ({KEYS_HINT}), found {}",
                crate::diag::json_kind(v)
            ));
        }
        let input: EvalInput = serde_path_to_error::deserialize(v)
            .map_err(|e| describe(e.path(), &e.inner().to_string()))?;
        for (i, t) in input.tools.iter().flatten().enumerate() {
            t.check().map_err(|m| format!("tools[{i}]: {m}"))?;
        }
        if let Some(m) = preset::problem(&input) {
            return Err(m);
        }
        Ok(input)
    }

    /// Checks the input against `plan` and turns it into the engine's types:
    /// the context (message keywords appended), usage stats and `now`.
    /// Errors: an undeclared stage, a recent call or a usage entry naming an
    /// unknown tool (with a did-you-mean), a negative
    /// or non-finite number.
    pub fn resolve(&self, plan: &Arc<Plan>) -> Result<(SessionContext, UsageStats, f64), String> {
        let mut ctx = self.context.clone();
        if let Some(o) = ranges::out_of_range(self).first() {
            return Err(o.message(&crate::diag::short_number(o.value)));
        }
        if let Some(stage) = &ctx.conversation_stage
            && plan.stage_index(stage).is_none()
        {
            let hint = crate::diag::did_you_mean(stage, plan.stages.iter().map(|s| s.as_str()))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "conversation stage `{}` is not declared by the policy; declared: {}{hint}",
                crate::diag::echo(stage),
                plan.stages.join(", ")
            ));
        }
        if let Some(m) = &self.message {
            ctx.user_intent_keywords.extend(plan.analyzer.extract(m));
            // the text for `[features.semantic_match] input = "message"`,
            // unless the context gives its own
            ctx.user_message.get_or_insert_with(|| m.clone());
        }
        if let Some(u) = self.unknown_tool(plan) {
            return Err(u.message(plan));
        }
        let mut usage = UsageStats::default();
        // (every number is in its range: checked above)
        for (k, &v) in &self.usage.call_counts {
            usage.call_counts.insert(k.clone(), v as u64);
        }
        for (k, &v) in &self.usage.seconds_since_last_call {
            usage.last_call_at.insert(k.clone(), self.now - v);
        }
        for (k, &v) in &self.usage.usage_frequency {
            usage.usage_frequency.insert(k.clone(), v);
        }
        Ok((ctx, usage, self.now))
    }
}

/// A tool the input names that `plan`'s catalog does not hold: the first one
/// found, in the order `context.recent_tool_calls`, `usage.call_counts`,
/// `usage.seconds_since_last_call`, `usage.usage_frequency`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTool {
    /// The JSON path of the reference (`context.recent_tool_calls[1]`, or
    /// `usage.call_counts` for a key of that object).
    pub path: String,
    /// The key under which the name is written (`recent_tool_calls`,
    /// `call_counts`, ...), to find it in the input's text.
    pub section: &'static str,
    /// The name as written.
    pub name: String,
}

impl UnknownTool {
    /// `PATH names `NAME`, which is not in the catalog (did you mean `X`?)`,
    /// the name clipped ([`crate::diag::echo`]).
    pub fn message(&self, plan: &Plan) -> String {
        let hint = crate::diag::did_you_mean(&self.name, plan.by_name.keys().map(|s| s.as_str()))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        format!(
            "{} names `{}`, which is not in the catalog{hint}",
            self.path,
            crate::diag::echo(&self.name)
        )
    }

    /// The 1-based line and column (in characters) of the name in the
    /// input's JSON `text`: its first occurrence, as `serde_json` writes it,
    /// after the `"SECTION"` key; `None` when it is not found (a name
    /// written with other escapes).
    pub fn locate(&self, text: &str) -> Option<(usize, usize)> {
        let key = format!("\"{}\"", self.section);
        let from = text.find(&key)? + key.len();
        let needle = serde_json::to_string(&self.name).ok()?;
        let at = from + text[from..].find(&needle)?;
        let before = &text[..at];
        let line = 1 + before.matches('\n').count();
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        Some((line, 1 + before[start..].chars().count()))
    }
}

impl EvalInput {
    /// The first tool this input names that `plan` does not hold (see
    /// [`UnknownTool`]), `None` when every name resolves.
    pub fn unknown_tool(&self, plan: &Plan) -> Option<UnknownTool> {
        let unknown = |name: &str| plan.tool_index(name).is_none();
        if let Some((i, n)) = self
            .context
            .recent_tool_calls
            .iter()
            .enumerate()
            .find(|(_, n)| unknown(n))
        {
            return Some(UnknownTool {
                path: format!("context.recent_tool_calls[{i}]"),
                section: "recent_tool_calls",
                name: n.clone(),
            });
        }
        let maps = [
            ("call_counts", self.usage.call_counts.keys()),
            (
                "seconds_since_last_call",
                self.usage.seconds_since_last_call.keys(),
            ),
            ("usage_frequency", self.usage.usage_frequency.keys()),
        ];
        for (section, mut keys) in maps {
            if let Some(n) = keys.find(|n| unknown(n)) {
                return Some(UnknownTool {
                    path: format!("usage.{section}"),
                    section,
                    name: n.clone(),
                });
            }
        }
        None
    }
}

/// What a valid input may hold, for messages.
const KEYS_HINT: &str = "optional keys: context, message, usage, tools, now";

/// An invalid input: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// 1-based line of the problem in the input text (0 when unknown).
    pub line: usize,
    /// 1-based column (0 when unknown).
    pub column: usize,
    /// The JSON path of the bad value (`context.session_duration_seconds`,
    /// `tools[0].name`) and what is wrong with it, or the syntax error.
    pub message: String,
}

impl InputError {
    /// The error located in file `name`: `name:line:column: message`.
    pub fn in_file(&self, name: &str) -> String {
        if self.line == 0 {
            format!("{name}: {}", self.message)
        } else {
            format!("{name}:{}:{}: {}", self.line, self.column, self.message)
        }
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(
                f,
                "line {}, column {}: {}",
                self.line, self.column, self.message
            )
        }
    }
}

impl std::error::Error for InputError {}

/// A JSON syntax error, its location given once; `NaN` or `Infinity`
/// where a value belongs, and a number beyond what a 64-bit float holds,
/// are named as such.
fn syntax_error(e: serde_json::Error, text: &str) -> InputError {
    let msg = crate::diag::json_message(&e);
    let at = &text[crate::diag::json_offset(text, e.line(), e.column())..];
    let message = match msg.strip_prefix("EOF while parsing ") {
        Some(what) => format!("the input ends inside {what} (is it cut short?)"),
        None if msg == "expected value"
            && ["NaN", "Infinity", "-Infinity", "nan", "inf"]
                .iter()
                .any(|w| at.starts_with(w)) =>
        {
            "invalid JSON: JSON has no NaN or Infinity; write a finite number".to_string()
        }
        None if msg == "number out of range" => {
            "invalid JSON: number out of range (a number must lie within ±1.7976931348623157e308)"
                .to_string()
        }
        None => format!("invalid JSON: {msg}"),
    };
    InputError {
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// A JSON path as messages write it: `context.active_files[2]`,
/// `usage.call_counts[`sqlite.read_query`]` (keys that are not plain
/// identifiers in brackets, as [`EvalInput::resolve`] writes them).
pub fn path_text(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                let plain =
                    !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if plain {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(key);
                } else {
                    out.push_str(&format!("[`{}`]", crate::diag::echo(key)));
                }
            }
            Segment::Unknown => out.push_str(".?"),
        }
    }
    out
}

/// serde's wording of a type (`f64`, `a sequence`, `struct X`) in JSON's terms.
fn json_expected(exp: &str) -> String {
    let exp = exp.trim();
    match exp {
        "f32" | "f64" => "a number".into(),
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number >= 0".into(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "an integer" => "a whole number".into(),
        "a string" | "a borrowed string" | "a character" | "a char" => "a string".into(),
        "a sequence" => "an array".into(),
        "a map" => "an object".into(),
        "a boolean" => "true or false".into(),
        _ if exp.starts_with("struct ") || exp.starts_with("a map") => "an object".into(),
        _ if exp.starts_with("a sequence") || exp.starts_with("a tuple") => "an array".into(),
        _ => exp.to_string(),
    }
}

/// serde's wording of a found value (`string "x"`, `integer `3``) in JSON's terms.
fn json_found(unexp: &str) -> String {
    let u = unexp.trim();
    let ticked = |prefix: &str| {
        u.strip_prefix(prefix)
            .map(|rest| rest.trim().trim_matches('`').to_string())
    };
    if let Some(s) = u.strip_prefix("string ") {
        format!("the string {s}")
    } else if let Some(n) = ticked("integer ").or_else(|| ticked("floating point ")) {
        format!("the number {n}")
    } else if let Some(b) = ticked("boolean ") {
        b
    } else {
        match u {
            "unit value" | "null" => "null".into(),
            "sequence" => "an array".into(),
            "map" => "an object".into(),
            _ => u.to_string(),
        }
    }
}

/// The backticked names of serde's `expected one of `a`, `b`` list.
fn expected_names(rest: &str) -> Vec<String> {
    rest.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// A deserialization error at `path` rewritten for people (and models): the
/// JSON path of the bad value, what JSON type is expected there, what was
/// found, and a did-you-mean for an unknown key or value.
fn describe(path: &serde_path_to_error::Path, msg: &str) -> String {
    let full = path_text(path);
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        // The path ends with the unknown key itself.
        let (key, rest) = rest.split_once('`').unwrap_or((rest, ""));
        let known = expected_names(rest);
        let parent = full
            .strip_suffix(key)
            .map(|p| p.trim_end_matches('.'))
            .unwrap_or("");
        let where_ = if parent.is_empty() {
            "at the top level of the input".to_string()
        } else {
            format!("in `{parent}`")
        };
        let hint = crate::diag::did_you_mean(key, known.iter().map(String::as_str))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return format!(
            "unknown key `{}` {where_}{hint}; known keys here: {}",
            crate::diag::echo(key),
            known.join(", ")
        );
    }
    let at = if full.is_empty() {
        "the input".to_string()
    } else {
        format!("`{full}`")
    };
    if let Some(rest) = msg.strip_prefix("invalid type: ")
        && let Some((found, exp)) = rest.rsplit_once(", expected ")
    {
        return format!(
            "{at} must be {}, found {}",
            json_expected(exp),
            json_found(found)
        );
    }
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let (got, rest) = rest.split_once('`').unwrap_or((rest, ""));
        let known = expected_names(rest);
        let hint = crate::diag::did_you_mean(got, known.iter().map(String::as_str))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return format!(
            "{at}: unknown value `{}`{hint}; expected one of: {}",
            crate::diag::echo(got),
            known.join(", ")
        );
    }
    if let Some(rest) = msg.strip_prefix("invalid value: ")
        && let Some((found, exp)) = rest.rsplit_once(", expected ")
    {
        return format!("{at} must be {exp}, found {}", json_found(found));
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let key = rest.trim_end_matches('`');
        return format!("{at} lacks the required key `{key}`");
    }
    format!("{at}: {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        EvalInput::parse_file("in.json", text).unwrap_err()
    }

    #[test]
    fn a_wrong_type_names_the_path_the_json_type_and_the_place_once() {
        let e = err("{\"context\": {\n  \"session_duration_seconds\": \"seven minutes\"}}");
        assert_eq!(
            e,
            "in.json:2:45: `context.session_duration_seconds` must be a number, found the string \"seven minutes\""
        );
        assert_eq!(
            e.matches("line").count() + e.matches(":2:").count(),
            1,
            "{e}"
        );
        let e = err(r#"{"context": {"recent_tool_calls": ["a", 3]}}"#);
        assert!(
            e.ends_with("`context.recent_tool_calls[1]` must be a string, found the number 3"),
            "{e}"
        );
        let e = err(r#"{"usage": {"call_counts": {"sqlite.read_query": true}}}"#);
        assert!(
            e.ends_with("`usage.call_counts[`sqlite.read_query`]` must be a number, found true"),
            "{e}"
        );
        let e = err(r#"{"tools": {"name": "x"}}"#);
        assert!(
            e.ends_with("`tools` must be an array, found an object"),
            "{e}"
        );
        let e = err(r#"{"message": null, "context": null}"#);
        assert!(
            e.ends_with("`context` must be an object, found null"),
            "{e}"
        );
        assert!(!e.contains("f64") && !e.contains("struct"), "{e}");
    }

    #[test]
    fn unknown_keys_get_a_did_you_mean() {
        let e = err(r#"{"contxt": {}}"#);
        assert!(
            e.contains(
                "unknown key `contxt` at the top level of the input (did you mean `context`?)"
            ),
            "{e}"
        );
        assert!(e.starts_with("in.json:1:"), "{e}");
        let e = err(r#"{"context": {"conversation_stag": "x"}}"#);
        assert!(
            e.contains(
                "unknown key `conversation_stag` in `context` (did you mean `conversation_stage`?)"
            ),
            "{e}"
        );
        let e = err(r#"{"tools": [{"name": "a", "risk_level": "dangerus"}]}"#);
        assert!(
            e.contains(
                "`tools[0].risk_level`: unknown value `dangerus` (did you mean `dangerous`?)"
            ),
            "{e}"
        );
        let e = err(r#"{"tools": [{"description": "a"}]}"#);
        assert!(
            e.contains("`tools[0]` lacks the required key `name`"),
            "{e}"
        );
    }

    #[test]
    fn empty_cut_short_and_not_an_object() {
        assert_eq!(
            err("  \n"),
            format!("in.json:1:1: the input is empty; expected a JSON object ({KEYS_HINT})")
        );
        let e = err("{\"context\": {");
        assert!(e.starts_with("in.json:1:"), "{e}");
        assert!(e.contains("the input ends inside an object"), "{e}");
        assert!(!e.contains("EOF") && !e.contains(" at line "), "{e}");
        let e = err("[1, 2]");
        assert!(
            e.contains("must be a JSON object") && e.ends_with("found an array"),
            "{e}"
        );
        let e = err("{\"now\": 1,}");
        assert!(
            e.starts_with("in.json:1:") && e.contains("invalid JSON: trailing comma"),
            "{e}"
        );
    }

    #[test]
    fn values_name_the_path_too() {
        let v = serde_json::json!({"usage": {"seconds_since_last_call": {"t": "soon"}}});
        let e = EvalInput::from_json(&v).unwrap_err();
        assert_eq!(
            e,
            "`usage.seconds_since_last_call.t` must be a number, found the string \"soon\""
        );
        let e = EvalInput::parse(r#"{"now": "x"}"#).unwrap_err();
        assert_eq!(
            e,
            "line 1, column 11: `now` must be a number, found the string \"x\""
        );
    }
}
