//! The `toolgate` command line: a thin shell over the library.
//!
//! Exit codes: 0 success; 1 the policy, tags or tools did not load (diagnostics
//! on stderr); 2 bad command-line usage; 3 the input JSON is invalid; 4
//! `check --fuzz` found violations; 5 `explain` names an unknown tool.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand, ValueEnum};
use toolgate::compile::compile;
use toolgate::input::EvalInput;
use toolgate::load::{Sources, load_catalog, load_policy};
use toolgate::{Activation, LoadError, Plan};

/// Appends a line to the output buffer (stdout is written once, at the end).
macro_rules! w {
    ($o:expr) => {{
        $o.push('\n');
    }};
    ($o:expr, $($t:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($o, $($t)*);
    }};
}

#[derive(Parser)]
#[command(
    name = "toolgate",
    version,
    about = "Tool-policy engine for AI agents: which tools a session sees, and why."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct PlanArgs {
    /// Policy file (default: the shipped policies/default.toml, embedded).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Tool-tags directory (default: the shipped tool-tags/, embedded).
    #[arg(long, value_name = "DIR")]
    tags: Option<PathBuf>,
    /// Extra tools from an MCP tools/list result or an OpenAI tools array (repeatable; auto-tagged).
    #[arg(long, value_name = "FILE")]
    tools: Vec<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum Format {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a policy and its tool tags, run the policy's examples, print a summary.
    Check {
        #[command(flatten)]
        plan: PlanArgs,
        /// Also evaluate N random sessions and report scores outside the clamp bounds, NaNs and active-count breaches.
        #[arg(long, value_name = "N")]
        fuzz: Option<usize>,
        /// RNG seed for --fuzz.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Score every tool for a session context and show the active set.
    Eval {
        #[command(flatten)]
        plan: PlanArgs,
        /// Input JSON (context, message, usage, tools); `-` reads stdin; absent = empty context.
        #[arg(long, value_name = "FILE")]
        input: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Explain, term by term, why one tool is active or not.
    Explain {
        /// Tool name (or alias).
        tool: String,
        #[command(flatten)]
        plan: PlanArgs,
        #[arg(long, value_name = "FILE")]
        input: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

fn render(err: &LoadError) {
    use miette::{GraphicalReportHandler, GraphicalTheme};
    let theme = if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme);
    for d in &err.diagnostics {
        eprintln!("error: {d}");
        let mut s = String::new();
        if d.file.is_some() && d.span.is_some() && handler.render_report(&mut s, d).is_ok() {
            eprintln!("{s}");
        }
    }
    let n = err.diagnostics.len();
    eprintln!("{n} problem{} found", if n == 1 { "" } else { "s" });
}

fn read_input(path: &Option<String>) -> Result<EvalInput, String> {
    let text = match path.as_deref() {
        None => return Ok(EvalInput::default()),
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("cannot read stdin: {e}"))?;
            s
        }
        Some(p) => std::fs::read_to_string(p).map_err(|e| format!("cannot read {p}: {e}"))?,
    };
    EvalInput::from_str(&text).map_err(|e| format!("{}: {e}", path.as_deref().unwrap_or("-")))
}

enum Fail {
    Load(LoadError),
    Input(String),
}

fn build(args: &PlanArgs, input: Option<&EvalInput>) -> Result<Arc<Plan>, Fail> {
    let sources = Sources {
        policy: args.policy.clone(),
        tags: args.tags.clone(),
        tools: args.tools.clone(),
    };
    let policy = load_policy(sources.policy.as_deref());
    let catalog = match input.and_then(|i| i.tools.clone()) {
        Some(tools) => Ok(tools.into_iter().map(|t| t.into_spec()).collect()),
        None => load_catalog(&sources),
    };
    let plan = match (policy, catalog) {
        (Ok(p), Ok(c)) => compile(&p, c),
        (Err(mut a), Err(b)) => {
            a.diagnostics.extend(b.diagnostics);
            Err(a)
        }
        (Err(a), _) | (_, Err(a)) => Err(a),
    };
    plan.map(Arc::new).map_err(Fail::Load)
}

fn evaluate(args: &PlanArgs, input: &Option<String>) -> Result<Activation, Fail> {
    let input = read_input(input).map_err(Fail::Input)?;
    let plan = build(args, Some(&input))?;
    let (ctx, usage, now) = input.resolve(&plan).map_err(Fail::Input)?;
    Ok(plan.evaluate(&ctx, &usage, now))
}

fn order(act: &Activation) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..act.tools.len()).collect();
    idx.sort_by(|&a, &b| {
        let (x, y) = (&act.tools[a], &act.tools[b]);
        y.active
            .cmp(&x.active)
            .then(y.score.total_cmp(&x.score))
            .then(act.plan.tools[a].name.cmp(&act.plan.tools[b].name))
    });
    idx
}

fn reason_text(r: toolgate::Reason) -> &'static str {
    use toolgate::Reason::*;
    match r {
        AboveThreshold => "score >= effective threshold",
        Hysteresis => "kept by hysteresis",
        Pinned => "pinned by the policy",
        MinActive => "added to reach min_active",
        BelowThreshold => "score < effective threshold",
        MaxActive => "cut by max_active",
        InvalidScore => "the formula gave NaN",
    }
}

fn threshold_text(act: &Activation) -> String {
    match (act.cold_start, act.plan.cold_start) {
        (true, Some((min, f))) => format!(
            "{:.4} (cold start: {} call{} < {min}, threshold {} x {f})",
            act.effective_threshold,
            act.total_calls,
            if act.total_calls == 1 { "" } else { "s" },
            act.threshold
        ),
        _ => format!("{:.4}", act.effective_threshold),
    }
}

fn tool_json(act: &Activation, i: usize) -> serde_json::Value {
    let s = &act.tools[i];
    let mut terms = serde_json::Map::new();
    for (k, e) in act.explain(i).into_iter().enumerate() {
        let key = e
            .feature
            .map(String::from)
            .unwrap_or_else(|| format!("term_{}", k + 1));
        terms.insert(key, serde_json::json!({"term": e.term, "value": e.value, "weight": e.weight, "contribution": e.contribution}));
    }
    serde_json::json!({
        "name": act.plan.tools[i].name,
        "score": s.score,
        "raw_score": s.raw_score,
        "active": s.active,
        "reason": s.reason,
        "terms": terms,
    })
}

fn header_json(act: &Activation) -> serde_json::Map<String, serde_json::Value> {
    let plan = &act.plan;
    let dw: serde_json::Map<String, serde_json::Value> = plan
        .domains
        .iter()
        .zip(&act.domain_weights)
        .map(|(d, w)| (d.clone(), serde_json::json!(w)))
        .collect();
    let v = serde_json::json!({
        "policy": plan.policy_name,
        "threshold": act.threshold,
        "effective_threshold": act.effective_threshold,
        "cold_start": act.cold_start,
        "total_calls": act.total_calls,
        "domain_weights": dw,
        "rules_applied": act.rules_applied,
        "intent_terms": act.intent_terms,
        "warnings": act.warnings,
    });
    v.as_object().cloned().unwrap_or_default()
}

fn print_eval(o: &mut String, act: &Activation, format: Format) {
    let plan = &act.plan;
    if format == Format::Json {
        let mut m = header_json(act);
        m.insert(
            "active".into(),
            serde_json::json!(
                order(act)
                    .into_iter()
                    .filter(|&i| act.tools[i].active)
                    .map(|i| plan.tools[i].name.clone())
                    .collect::<Vec<_>>()
            ),
        );
        m.insert(
            "tools".into(),
            serde_json::Value::Array(order(act).into_iter().map(|i| tool_json(act, i)).collect()),
        );
        w!(o, "{}", serde_json::Value::Object(m));
        return;
    }
    let active = act.tools.iter().filter(|t| t.active).count();
    w!(
        o,
        "policy {} | {} tools, {} active | effective threshold {}",
        plan.policy_name,
        plan.tools.len(),
        active,
        threshold_text(act)
    );
    if act.domain_weights.is_empty() {
        w!(
            o,
            "domain weights: none inferred (neutral domain match {})",
            plan.features.domain_neutral
        );
    } else {
        let mut dw: Vec<(&String, f64)> = plan
            .domains
            .iter()
            .zip(act.domain_weights.iter().copied())
            .collect();
        dw.sort_by(|a, b| b.1.total_cmp(&a.1));
        w!(
            o,
            "domain weights: {}",
            dw.iter()
                .map(|(d, w)| format!("{d} {w:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    w!(
        o,
        "rules applied: {}",
        if act.rules_applied.is_empty() {
            "none".into()
        } else {
            act.rules_applied.join(", ")
        }
    );
    w!(
        o,
        "intent terms: {}",
        if act.intent_terms.is_empty() {
            "none".into()
        } else {
            act.intent_terms.join(" ")
        }
    );
    for w in &act.warnings {
        w!(o, "warning: {w}");
    }
    let width = plan
        .tools
        .iter()
        .map(|t| t.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let feats: Vec<String> = plan
        .formula
        .terms
        .iter()
        .map(|t| match t.features.as_slice() {
            [f] => short(toolgate::FEATURES[*f as usize]).to_string(),
            _ => "term".into(),
        })
        .collect();
    let mut last_active = None;
    for i in order(act) {
        let s = &act.tools[i];
        if last_active != Some(s.active) {
            w!(o);
            let n = act.tools.iter().filter(|t| t.active == s.active).count();
            w!(o, "{} ({n})", if s.active { "ACTIVE" } else { "INACTIVE" });
            w!(
                o,
                "  {:>6}  {:<width$}  {}",
                "score",
                "tool",
                feats
                    .iter()
                    .map(|f| format!("{f:>9}"))
                    .collect::<Vec<_>>()
                    .join("")
            );
            last_active = Some(s.active);
        }
        let contribs: String = act
            .explain(i)
            .iter()
            .map(|e| format!("{:>9.4}", e.contribution + 0.0))
            .collect();
        let note = match s.reason {
            toolgate::Reason::AboveThreshold | toolgate::Reason::BelowThreshold => String::new(),
            r => format!("  ({})", reason_text(r)),
        };
        w!(
            o,
            "  {:>6.4}  {:<width$}  {contribs}{note}",
            s.score,
            plan.tools[i].name
        );
    }
}

fn short(f: &str) -> &str {
    match f {
        "domain_match" => "domain",
        "keyword_match" => "keyword",
        "stage_match" => "stage",
        "usage_bonus" => "usage",
        "priority_bonus" => "priority",
        "complexity_penalty" => "complex",
        "recency_bonus" => "recency",
        other => other,
    }
}

fn print_explain(o: &mut String, act: &Activation, i: usize, format: Format) {
    let plan = &act.plan;
    let s = &act.tools[i];
    let t = &plan.tools[i];
    if format == Format::Json {
        let mut m = header_json(act);
        m.insert("tool".into(), tool_json(act, i));
        w!(o, "{}", serde_json::Value::Object(m));
        return;
    }
    let verdict = if s.active { "ACTIVE" } else { "INACTIVE" };
    w!(
        o,
        "{}: {verdict} ({}; score {:.4}, effective threshold {})",
        t.name,
        reason_text(s.reason),
        s.score,
        threshold_text(act)
    );
    w!(o);
    w!(
        o,
        "  {:<48} {:>8} {:>8} {:>13}",
        "term",
        "value",
        "weight",
        "contribution"
    );
    for e in act.explain(i) {
        let v = e
            .value
            .map(|x| format!("{x:.4}"))
            .unwrap_or_else(|| "-".into());
        let w = e
            .weight
            .map(|x| format!("{x:.4}"))
            .unwrap_or_else(|| "-".into());
        w!(o, "  {:<48} {v:>8} {w:>8} {:>13.4}", e.term, e.contribution);
    }
    w!(
        o,
        "  {:<48} {:>8} {:>8} {:>13.4}",
        "raw score (sum)",
        "",
        "",
        s.raw_score
    );
    w!(
        o,
        "  {:<48} {:>8} {:>8} {:>13.4}",
        format!("clamped to [{}, {}]", plan.clamp.0, plan.clamp.1),
        "",
        "",
        s.score
    );
    w!(o);
    let doms: Vec<String> = t
        .domains
        .iter()
        .map(|&d| {
            let name = &plan.domains[d as usize];
            match act.domain_weights.get(d as usize) {
                Some(w) => format!("{name} ({w:.3})"),
                None => name.clone(),
            }
        })
        .collect();
    w!(
        o,
        "domains: {}{}",
        if doms.is_empty() {
            "none".into()
        } else {
            doms.join(", ")
        },
        if act.domain_weights.is_empty() {
            format!(
                " — no domain weights inferred, neutral {}",
                plan.features.domain_neutral
            )
        } else {
            String::new()
        }
    );
    let stage_names: Vec<&str> = plan
        .stages
        .iter()
        .enumerate()
        .filter(|(k, _)| t.stage_mask & (1 << k) != 0)
        .map(|(_, s)| s.as_str())
        .collect();
    w!(
        o,
        "preferred stages: {}",
        if stage_names.is_empty() {
            "none".into()
        } else {
            stage_names.join(", ")
        }
    );
    let intent: std::collections::HashSet<&String> = act.intent_terms.iter().collect();
    let trig: Vec<String> = t
        .trigger_keywords
        .iter()
        .flat_map(|k| plan.analyzer.expand_keyword(k))
        .collect();
    let hits: Vec<&String> = trig.iter().filter(|k| intent.contains(k)).collect();
    w!(
        o,
        "trigger keywords: {}{}",
        trig.join(" "),
        if t.auto_tagged {
            " (auto-tagged from the description)"
        } else {
            ""
        }
    );
    w!(
        o,
        "matched intent terms: {}",
        if hits.is_empty() {
            "none".into()
        } else {
            hits.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        }
    );
    w!(
        o,
        "rules applied: {}",
        if act.rules_applied.is_empty() {
            "none".into()
        } else {
            act.rules_applied.join(", ")
        }
    );
}

fn run(o: &mut String, cli: Cli) -> Result<(), (ExitCode, Option<LoadError>, Option<String>)> {
    let fail = |f: Fail| match f {
        Fail::Load(e) => (ExitCode::from(1), Some(e), None),
        Fail::Input(m) => (ExitCode::from(3), None, Some(m)),
    };
    match cli.command {
        Command::Check {
            plan,
            fuzz,
            seed,
            format,
        } => {
            let p = build(&plan, None).map_err(fail)?;
            let violations = fuzz.map(|n| toolgate::fuzz::fuzz(&p, n, seed));
            if format == Format::Json {
                w!(
                    o,
                    "{}",
                    serde_json::json!({
                        "ok": violations.as_ref().is_none_or(|v| v.is_empty()),
                        "policy": p.policy_name,
                        "sources": p.sources,
                        "tools": p.tools.len(),
                        "auto_tagged": p.tools.iter().filter(|t| t.auto_tagged).count(),
                        "domains": p.domains,
                        "stages": p.stages,
                        "rules": p.rules.len(),
                        "formula_terms": p.formula.terms.len(),
                        "examples_checked": p.examples_checked,
                        "warnings": p.warnings,
                        "fuzz_samples": fuzz,
                        "violations": violations,
                    })
                );
            } else {
                w!(
                    o,
                    "ok: policy `{}` ({})",
                    p.policy_name,
                    p.sources.first().map(String::as_str).unwrap_or("")
                );
                w!(
                    o,
                    "  tools: {} ({} auto-tagged) from {} file(s)",
                    p.tools.len(),
                    p.tools.iter().filter(|t| t.auto_tagged).count(),
                    p.sources.len().saturating_sub(1)
                );
                w!(
                    o,
                    "  domains: {} ({})",
                    p.domains.len(),
                    p.domains.join(", ")
                );
                w!(o, "  stages: {}", p.stages.join(", "));
                w!(o, "  domain rules: {}", p.rules.len());
                w!(
                    o,
                    "  formula: {} terms: {}",
                    p.formula.terms.len(),
                    p.formula.source
                );
                w!(o, "  examples: {} checked, all hold", p.examples_checked);
                for w in &p.warnings {
                    w!(o, "  warning: {w}");
                }
                if let (Some(n), Some(v)) = (fuzz, &violations) {
                    w!(o, "  fuzz: {n} random sessions, {} violation(s)", v.len());
                    for x in v.iter().take(20) {
                        w!(
                            o,
                            "    sample {}: {}{}",
                            x.sample,
                            x.tool
                                .as_deref()
                                .map(|t| format!("{t}: "))
                                .unwrap_or_default(),
                            x.message
                        );
                    }
                }
            }
            if violations.is_some_and(|v| !v.is_empty()) {
                return Err((ExitCode::from(4), None, None));
            }
        }
        Command::Eval {
            plan,
            input,
            format,
        } => {
            let act = evaluate(&plan, &input).map_err(fail)?;
            print_eval(o, &act, format);
        }
        Command::Explain {
            tool,
            plan,
            input,
            format,
        } => {
            let act = evaluate(&plan, &input).map_err(fail)?;
            match act.plan.tool_index(&tool) {
                Some(i) => print_explain(o, &act, i, format),
                None => {
                    let hint = toolgate::diag::did_you_mean(
                        &tool,
                        act.plan.by_name.keys().map(|s| s.as_str()),
                    )
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                    return Err((
                        ExitCode::from(5),
                        None,
                        Some(format!("unknown tool `{tool}`{hint}")),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let cli = Cli::parse();
    let mut out = String::new();
    let result = run(&mut out, cli);
    // A closed stdout (`toolgate eval | head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes());
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, load, msg)) => {
            if let Some(e) = load {
                render(&e);
            }
            if let Some(m) = msg {
                eprintln!("error: {m}");
            }
            code
        }
    }
}
