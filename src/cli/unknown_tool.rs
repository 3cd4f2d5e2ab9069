//! `eval`'s message for an input naming a tool outside the loaded catalog:
//! where the name stands in the input file, which catalog is loaded, and how
//! to add the tool to it.

use toolgate::Plan;
use toolgate::input::{EvalInput, UnknownTool};

use super::PlanArgs;

/// The catalog `args` (and the input) load, as a user would name it.
fn catalog_name(args: &PlanArgs, input: &EvalInput) -> String {
    if input.tools.is_some() {
        return "the input's `tools`".to_string();
    }
    let files = || {
        args.tools
            .iter()
            .map(|f| format!("--tools {}", f.display()))
            .collect::<Vec<_>>()
    };
    match &args.tags {
        Some(d) => {
            let mut parts = vec![format!("--tags {}", d.display())];
            parts.extend(files());
            parts.join(" and ")
        }
        None if !args.tools.is_empty() => files().join(" and "),
        None => "the shipped tool-tags/ (embedded)".to_string(),
    }
}

/// How to make `name` part of the catalog: the shipped tag file that
/// declares it, if one does, and the ways to add a tool.
fn advice(u: &UnknownTool, args: &PlanArgs, input: &EvalInput) -> String {
    let needle = format!(
        "name = {}",
        serde_json::to_string(&u.name).unwrap_or_default()
    );
    let shipped = toolgate::load::DEFAULT_TAGS
        .iter()
        .find(|(_, text)| text.lines().any(|l| l.trim() == needle))
        .map(|(file, _)| format!("; the shipped {file} declares it"));
    let how = if input.tools.is_some() {
        "add it to the input's `tools`, or remove the reference".to_string()
    } else {
        let dir = args
            .tags
            .as_ref()
            .map(|d| format!("a tag file in {}", d.display()))
            .unwrap_or_else(|| "a tag file of a --tags DIR".to_string());
        format!(
            "to add it, declare it in {dir} (a [[tool]] table, as in tool-tags/*.toml) or give its definition with --tools FILE (an MCP tools/list result); else remove the reference"
        )
    };
    format!("{}; {how}", shipped.unwrap_or_default())
}

/// The full message: `FILE:LINE:COLUMN: PATH names `X`, which is not in the
/// catalog (did you mean ...) (the loaded catalog: N tools from ...; ...)`.
/// `file` is the input's name (`-` for stdin), `text` its JSON text.
pub fn message(
    u: &UnknownTool,
    plan: &Plan,
    args: &PlanArgs,
    input: &EvalInput,
    file: &str,
    text: &str,
) -> String {
    let at = match u.locate(text) {
        Some((l, c)) => format!("{file}:{l}:{c}: "),
        None => format!("{file}: "),
    };
    format!(
        "{at}{}\n  the loaded catalog: {} tool(s) from {}{}",
        u.message(plan),
        plan.tools.len(),
        catalog_name(args, input),
        advice(u, args, input)
    )
}

/// `explain`'s message for a tool name the loaded catalog does not hold
/// (exit 5): the name (clipped), up to 3 close names of the catalog
/// ([`Plan::close_tool_names`], the tools `guard` suggests for the same
/// name), and which catalog is loaded.
pub fn explain_message(name: &str, plan: &Plan, args: &PlanArgs, input: &EvalInput) -> String {
    let close = plan.close_tool_names(name, 3);
    let hint = match close.as_slice() {
        [] => "; no name of the catalog is close (`toolgate eval` lists them all)".to_string(),
        [one] => format!(" (did you mean `{}`?)", toolgate::diag::echo(one)),
        many => format!(
            " (did you mean one of: {}?)",
            many.iter()
                .map(|c| format!("`{}`", toolgate::diag::echo(c)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!(
        "unknown tool `{}`{hint}\n  the loaded catalog: {} tool(s) from {}",
        toolgate::diag::echo(name),
        plan.tools.len(),
        catalog_name(args, input)
    )
}
