//! The `toolgate` command line: a thin shell over the library.
//!
//! Exit codes: 0 success; 1 the policy, tags or tools did not load (diagnostics
//! on stderr); 2 bad command-line usage; 3 the input JSON is invalid; 4
//! `check --fuzz` found violations; 5 `explain` names an unknown tool; 6 and
//! 7 `guard`'s verdict is ask or deny (0 when allowed).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use toolgate::LoadError;

/// Appends a line to the output buffer (stdout is written once, at the end).
#[macro_export]
macro_rules! w {
    ($o:expr) => {{
        $o.push('\n');
    }};
    ($o:expr, $($t:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($o, $($t)*);
    }};
}

mod cli;

use cli::report::{print_eval, print_explain};
use cli::{Fail, Format, PlanArgs, build, evaluate, render};

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
    /// Check one tool call with the call gate: allow (with coerced arguments), ask or deny.
    Guard {
        #[command(flatten)]
        plan: PlanArgs,
        /// Tool name (or alias).
        #[arg(long, value_name = "NAME")]
        tool: String,
        /// Arguments as JSON: inline, `-` for stdin, or `@FILE`.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        args: String,
        /// Session id recorded in the audit log.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Append the verdict to this JSON Lines audit log.
        #[arg(long, value_name = "FILE")]
        audit: Option<std::path::PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Audit logs written by the gate.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Total calls, success rate, latency p50/p95 and errors by kind.
    Summary {
        /// The JSON Lines audit log.
        file: std::path::PathBuf,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
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
                        "gate": cli::gate_summary(&p),
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
                let g = cli::gate_summary(&p);
                w!(
                    o,
                    "  gate: {} shell rules, {} SQL statement rules, {} patterns, {} risk rules, path roots: {}",
                    g["shell_rules"],
                    g["sql_statement_rules"],
                    g["patterns"],
                    g["risk_rules"],
                    g["roots"]
                        .as_array()
                        .map(|r| r
                            .iter()
                            .filter_map(|x| x.as_str())
                            .collect::<Vec<_>>()
                            .join(", "))
                        .unwrap_or_default()
                );
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
        Command::Guard {
            plan,
            tool,
            args,
            session,
            audit,
            format,
        } => {
            let v = cli::guard::guard(&plan, &tool, &args, session.as_deref(), audit.as_ref())
                .map_err(fail)?;
            cli::guard::print_verdict(o, &v, format);
            let code = cli::guard::exit_code(&v);
            if code != 0 {
                return Err((ExitCode::from(code), None, None));
            }
        }
        Command::Audit {
            command: AuditCommand::Summary { file, format },
        } => {
            let s = cli::audit::summary(&file).map_err(|m| (ExitCode::from(3), None, Some(m)))?;
            cli::audit::print_summary(o, &s, format);
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
