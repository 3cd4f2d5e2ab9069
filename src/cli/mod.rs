//! Pieces shared by the subcommands: plan arguments, input reading, diagnostics.
//! Each subcommand's printing lives in its own module.

pub mod audit;
pub mod bounded;
pub mod check;
pub mod compare;
pub mod fit;
pub mod guard;
pub mod guard_session;
pub mod import;
pub mod json_error;
pub mod json_kinds;
pub mod json_options;
pub mod mcp_proxy;
pub mod option_ranges;
pub mod path_options;
pub mod paths;
pub mod plot;
pub mod replay;
pub mod replay_flow;
pub mod report;
pub mod schema_check;
pub mod schema_warnings;
pub mod stream;
pub mod toml_kinds;
pub mod unknown_tool;
pub mod watch;

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use toolgate::compile::compile;
use toolgate::input::EvalInput;
use toolgate::load::{Sources, load_catalog};
use toolgate::{Activation, LoadError, Plan};

/// Where the plan comes from.
#[derive(Args, Clone)]
pub struct PlanArgs {
    /// Policy file (default: the shipped policies/default.toml, embedded).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Tool-tags directory (default: the shipped tool-tags/, embedded, unless --tools is given).
    #[arg(long, value_name = "DIR")]
    pub tags: Option<PathBuf>,
    /// Tools from an MCP tools/list result or an OpenAI tools array (repeatable; auto-tagged).
    /// With --tags, added to the tag files; without --tags, the catalog is these tools alone.
    #[arg(long, value_name = "FILE")]
    pub tools: Vec<PathBuf>,
}

/// Output format.
#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum Format {
    /// For people.
    Text,
    /// For scripts.
    Json,
}

pub fn render(err: &LoadError) {
    use miette::{GraphicalReportHandler, GraphicalTheme};
    let theme = if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme);
    // Rendering locates each problem in its file; a file with thousands of
    // problems is summarised after the first ones.
    for d in err.diagnostics.iter().take(toolgate::diag::MAX_SHOWN) {
        let mut s = String::new();
        if d.file.is_some() && d.span.is_some() && handler.render_report(&mut s, d).is_ok() {
            eprintln!("{s}");
        } else {
            eprintln!("error: {d}");
        }
    }
    let n = err.diagnostics.len();
    if n > toolgate::diag::MAX_SHOWN {
        eprintln!(
            "{} problems",
            toolgate::diag::more(n - toolgate::diag::MAX_SHOWN)
        );
    }
    eprintln!("{n} problem{} found", if n == 1 { "" } else { "s" });
}

/// The text of `path` (`-` = stdin): UTF-8, a leading byte-order mark
/// dropped; bytes that are not UTF-8 are an error with their byte offset.
pub fn read_text(path: &str) -> Result<String, String> {
    let bytes = if path == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        b
    } else {
        std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?
    };
    toolgate::datafile::decode_text(bytes).map_err(|e| format!("{path}: {e}"))
}

/// The `--input` file `path` as an input, with its text (an empty input
/// and text without `--input`); errors are located in the file.
pub fn read_input_text(path: &Option<String>) -> Result<(EvalInput, String), String> {
    let text = match path.as_deref() {
        None => return Ok((EvalInput::default(), String::new())),
        Some(p) => read_text(p)?,
    };
    let name = path.as_deref().unwrap_or("-");
    let input = EvalInput::parse_file(name, &text)?;
    // a tools/list result reads as an input of inline tools and no session
    if input.tools.is_some()
        && let Some(m) = json_kinds::catalog_as_input(&toolgate::diag::echo(name), &text)
    {
        return Err(m);
    }
    Ok((input, text))
}

pub enum Fail {
    /// The policy, tags or tools did not load (exit 1).
    Load(LoadError),
    /// The input is invalid (exit 3).
    Input(String),
    /// An option's value is out of range (exit 2, bad command-line usage:
    /// `option_ranges`).
    Usage(String),
    /// A result was refused (exit 1): the problems to render, if any, and
    /// one sentence saying what was not done and why (`fit`'s fitted policy
    /// that was not written).
    NotWritten(Option<LoadError>, String),
}

pub fn build(args: &PlanArgs, input: Option<&EvalInput>) -> Result<Arc<Plan>, Fail> {
    build_located(args, input, None)
}

/// [`build`], the input's inline tools located in its file (`(name,
/// text)`): their errors stand at `NAME:LINE:COLUMN`.
pub fn build_located(
    args: &PlanArgs,
    input: Option<&EvalInput>,
    file: Option<(&str, &str)>,
) -> Result<Arc<Plan>, Fail> {
    let sources = Sources {
        policy: args.policy.clone(),
        tags: args.tags.clone(),
        tools: args.tools.clone(),
    };
    let policy = toolgate::load::load_policy_partial(sources.policy.as_deref());
    let located = match (input, file) {
        (Some(i), Some((name, text))) => toolgate::input::located::located_tools(i, name, text),
        _ => None,
    };
    let catalog = match located.or_else(|| {
        input
            .and_then(|i| i.tools.clone())
            .map(|tools| tools.into_iter().map(|t| t.into_spec()).collect())
    }) {
        Some(tools) => Ok(tools),
        None => load_catalog(&sources),
    };
    let plan = match (policy, catalog) {
        (Ok(p), Ok(c)) => compile(&p, c),
        // (only the data files failed: the policy's other problems too)
        (Err(e), Ok(c)) => Err(toolgate::load::compile_failed_policy(e, c)),
        (Err(toolgate::load::PolicyLoadError { error: mut a, .. }), Err(b)) => {
            a.diagnostics.extend(b.diagnostics);
            Err(a)
        }
        (_, Err(a)) => Err(a),
    };
    plan.map(Arc::new).map_err(Fail::Load)
}

pub fn evaluate(args: &PlanArgs, input: &Option<String>) -> Result<Activation, Fail> {
    evaluate_input(args, input).map(|(a, _)| a)
}

/// [`evaluate`], with the input as read (`--input -` is read once).
pub fn evaluate_input(
    args: &PlanArgs,
    input: &Option<String>,
) -> Result<(Activation, EvalInput), Fail> {
    let (parsed, text) = read_input_text(input).map_err(Fail::Input)?;
    let file = input.as_deref().unwrap_or("-");
    let plan = build_located(
        args,
        Some(&parsed),
        input.is_some().then_some((file, &text)),
    )?;
    if let Some(u) = parsed.unknown_tool(&plan) {
        return Err(Fail::Input(unknown_tool::message(
            &u, &plan, args, &parsed, file, &text,
        )));
    }
    if let Some(m) = toolgate::input::located::undeclared_stage(&parsed, &plan, file, &text) {
        return Err(Fail::Input(m));
    }
    let (ctx, usage, now) = parsed.resolve(&plan).map_err(Fail::Input)?;
    // A policy whose every score is pinned to one end of the clamp shows
    // every tool active (or none) for no visible reason: `check`'s warning
    // says why, once, on stderr (stdout stays the report).
    for w in plan
        .warnings
        .iter()
        .filter(|w| toolgate::compile::weights::is_pinned_scores(w))
        .take(1)
    {
        eprintln!("warning: {w}");
    }
    Ok((plan.evaluate(&ctx, &usage, now), parsed))
}

/// What the plan's call gate holds, for `check`.
pub fn gate_summary(p: &Plan) -> serde_json::Value {
    let g = toolgate::gate::compiled(p);
    let c = &g.config;
    serde_json::json!({
        "shell_rules": c.shell.rules.len() + c.shell.redirect_rules.len(),
        "sql_statement_rules": c.sql.statements.len() + c.sql.alter_operations.len(),
        "patterns": c.patterns.len(),
        "risk_rules": c.risk.rules.len(),
        "roots": c.paths.roots,
        "tools_with_roles": g.tools.iter().filter(|t| !t.roles.is_empty()).count(),
    })
}
