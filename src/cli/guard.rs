//! `toolgate guard`: one call through the call gate.

use std::path::PathBuf;
use std::sync::Arc;

use toolgate::gate::{Action, Gate, JsonlSink, Verdict};

use super::{Fail, Format, PlanArgs, build};

/// Reads the `--args` value: inline JSON, `-` for stdin, `@FILE` for a file.
/// Inline text that is not UTF-8 is an error naming `--args` and the byte
/// offset (0-based) of the first bad byte, as for a file
/// ([`toolgate::datafile::decode_text`]).
fn read_args(args: &std::ffi::OsStr) -> Result<String, String> {
    let args = inline_text(args).map_err(|e| format!("--args is {e}"))?;
    match args.as_str() {
        "-" => super::read_text("-").map_err(|e| format!("--args {e}")),
        a if a.starts_with('@') => super::read_text(&a[1..]).map_err(|e| format!("--args {e}")),
        _ => Ok(args),
    }
}

/// The text of an inline command-line argument: its bytes decoded as
/// UTF-8 (a leading byte-order mark dropped), or the decoder's message
/// (`not valid UTF-8 at byte 12 (line 1, column 13)`).
fn inline_text(arg: &std::ffi::OsStr) -> Result<String, String> {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(arg).to_vec();
    #[cfg(not(unix))]
    let bytes = arg
        .to_str()
        .ok_or_else(|| "not valid UTF-8".to_string())?
        .as_bytes()
        .to_vec();
    if let Some(mark) = toolgate::datafile::utf16_mark(&bytes) {
        return Err(format!("not valid UTF-8: it looks like UTF-16 ({mark})"));
    }
    toolgate::datafile::decode_text(bytes)
}

/// What `guard` found: the verdict, and what the caller reports beside it.
pub struct Guarded {
    /// The gate's verdict.
    pub verdict: Verdict,
    /// The message of the `--audit` record that could not be written (the
    /// caller prints the verdict, then exits 3 with it).
    pub audit_error: Option<String>,
    /// Unknown keywords of the called tool's schema
    /// ([`super::schema_warnings`]).
    pub warnings: Vec<String>,
}

/// Runs the gate on one call; returns the verdict with the audit failure
/// and schema warnings ([`Guarded`]). `tool` is a catalog
/// name or alias, or the client-visible name of `toolgate mcp-proxy`
/// (`sqlite__read_query`), as for `explain`. `--args` that is not
/// JSON is an input error (exit 3), not a verdict.
pub fn guard(
    plan: &PlanArgs,
    tool: &str,
    args: &std::ffi::OsStr,
    session: Option<&str>,
    audit: Option<&PathBuf>,
    state: Option<(&super::guard_session::SessionState, bool)>,
) -> Result<Guarded, Fail> {
    if let Some(path) = audit {
        super::paths::existing_folder("--audit", path).map_err(Fail::Input)?;
        super::paths::audit_target("--audit", path).map_err(Fail::Input)?;
    }
    let text = read_args(args).map_err(Fail::Input)?;
    // (Nesting deeper than the parser follows is JSON too: the gate denies it.)
    if let Err(e) = serde_json::from_str::<serde_json::Value>(&text)
        && !e.to_string().starts_with("recursion limit exceeded")
    {
        return Err(Fail::Input(format!(
            "--args is not JSON: {e} (give a JSON object such as '{{\"query\": \"select 1\"}}', `-` for stdin or `@FILE`)"
        )));
    }
    // The gate reads `null` as no arguments (MCP's `arguments` may be left
    // out); typed on the command line it is a mistake, not `{}`. Other
    // arguments that are not an object, and a repeated key, are the
    // user's input error too (exit 3, as `--input` and `--tools` refuse
    // them); an MCP client's such arguments stay the gate's deny.
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
        if !v.is_object() {
            let shown = if v.is_null() {
                "null".to_string()
            } else {
                format!("is {}", toolgate::diag::json_kind(&v))
            };
            return Err(Fail::Input(format!(
                "--args {shown}: the arguments must be a JSON object; give '{{}}' for a call without arguments, or an object such as '{{\"query\": \"select 1\"}}'"
            )));
        }
        if let Some(d) = toolgate::diag::duplicate_keys::first_duplicate(&text) {
            return Err(Fail::Input(format!(
                "--args: {d}: the same key twice is read differently by different JSON parsers; give each key once"
            )));
        }
    }
    let p = build(plan, None)?;
    // The catalog name, or the name MCP clients see through the proxy (as
    // `explain` accepts it).
    let tool = match p.tool_index(tool) {
        Some(_) => tool.to_string(),
        None => super::report::proxy_names(&p)
            .iter()
            .position(|n| n.as_deref() == Some(tool))
            .map(|i| p.tools[i].name.clone())
            .unwrap_or_else(|| tool.to_string()),
    };
    let tool = tool.as_str();
    let mut gate = Gate::new(Arc::clone(&p));
    let mut sink = None;
    if let Some(path) = audit {
        let s = Arc::new(JsonlSink::open(path).map_err(|e| {
            Fail::Input(format!("cannot open the audit log {}: {e}", path.display()))
        })?);
        gate = gate.with_audit(Arc::clone(&s) as Arc<dyn toolgate::gate::audit::AuditSink>);
        sink = Some(s);
    }
    // A record that could not be written is a failure (exit 3), whatever
    // the verdict (issue 29).
    let warnings = match p.tool_index(tool) {
        Some(i) => super::schema_warnings::warnings(&p, [i]),
        None => Vec::new(),
    };
    let audited = |verdict: Verdict| {
        Ok(Guarded {
            verdict,
            audit_error: sink
                .as_ref()
                .and_then(|s| s.write_error())
                .zip(audit)
                .map(|(e, path)| format!("--audit {}: {e}", path.display())),
            warnings,
        })
    };
    let (Some(id), Some((state, confirmed))) = (session, state) else {
        return audited(gate.check_json(session, tool, &text));
    };
    gate.set_flow_history(id, state.load().map_err(Fail::Input)?);
    let v = gate.check_json(session, tool, &text);
    if confirmed && v.decision == Action::Ask {
        gate.confirm_in(id, &v);
    }
    if let Some(h) = gate.flow_history(id) {
        state.save(&h).map_err(Fail::Input)?;
    }
    audited(v)
}

/// `guard --format json`'s object: the verdict's fields, then
/// `warnings`, the warnings the text format prints on standard error as
/// `warning: …` (today the keywords of the called tool's `inputSchema` that
/// are not JSON Schema: [`super::schema_warnings`]); `[]` when there are
/// none.
#[derive(serde::Serialize)]
struct JsonVerdict<'a> {
    #[serde(flatten)]
    verdict: &'a Verdict,
    warnings: &'a [String],
}

/// Prints a verdict; with `--format json`, `warnings` too (in the text
/// format the caller prints them on standard error).
pub fn print_verdict(o: &mut String, v: &Verdict, warnings: &[String], format: Format) {
    if format == Format::Json {
        let out = JsonVerdict {
            verdict: v,
            warnings,
        };
        w!(
            o,
            "{}",
            serde_json::to_string_pretty(&out).unwrap_or_else(|_| "{}".into())
        );
        return;
    }
    w!(o, "decision: {}", v.decision);
    w!(o, "tool: {}", super::bounded::name(&v.tool));
    w!(o, "message: {}", v.message);
    if !v.findings.is_empty() {
        w!(o, "findings:");
        for f in &v.findings {
            let at = if f.path.is_empty() {
                String::new()
            } else {
                format!(" at {}", f.path)
            };
            w!(
                o,
                "  [{}/{}] {}{at}: {}",
                f.action,
                f.severity.as_str(),
                f.rule_id,
                f.message
            );
        }
    }
    if !v.labels.is_empty() {
        w!(o, "labels:");
        for l in &v.labels {
            w!(o, "  {}: {}", l.label, l.why);
        }
    }
    for m in &v.flow {
        w!(o, "flow rule {} ({}), armed by:", m.rule, m.action);
        for a in &m.armed_by {
            w!(
                o,
                "  call {} {} at {}: {}: {}",
                a.call,
                super::bounded::name(&a.tool),
                super::bounded::fixed(a.at, 3),
                a.label,
                a.why
            );
        }
    }
    if !v.effects.is_empty() {
        w!(o, "effects:");
        for e in &v.effects {
            if e.resolved.is_empty() || e.resolved == e.operand {
                w!(o, "  {} {}", e.kind, super::bounded::name(&e.operand));
            } else {
                w!(
                    o,
                    "  {} {} -> {}",
                    e.kind,
                    super::bounded::name(&e.operand),
                    super::bounded::name(&e.resolved)
                );
            }
        }
    }
    if !v.coercions.is_empty() {
        w!(o, "coercions:");
        for c in &v.coercions {
            w!(o, "  {}: {} -> {}", c.path, c.from, c.to);
        }
    }
    if v.decision == Action::Allow {
        // (strings clipped, then the line: a 100,000-element array too)
        let line = super::bounded::json_line(&v.arguments);
        w!(
            o,
            "arguments: {}",
            toolgate::diag::clip_chars(&line, MAX_ARGUMENTS_LINE)
        );
    }
}

/// At most this many characters of the allowed call's arguments are
/// printed on the text format's `arguments:` line (each string is clipped
/// first, [`super::bounded::json_line`]); `--format json` gives them whole.
pub const MAX_ARGUMENTS_LINE: usize = 2_000;

/// Exit code of a verdict: 0 allow, 6 ask, 7 deny.
pub fn exit_code(v: &Verdict) -> u8 {
    match v.decision {
        Action::Allow => 0,
        Action::Ask => 6,
        Action::Deny => 7,
    }
}
