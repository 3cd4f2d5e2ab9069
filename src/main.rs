//! The `toolgate` command line: a thin shell over the library.
//!
//! Exit codes: 0 success; 1 the policy, tags or tools did not load (diagnostics
//! on stderr); 2 bad command-line usage; 3 the input JSON or trace is invalid
//! (or a file cannot be read or written, or a fit is impossible); 4
//! `check` found a failing declared property or `--fuzz` violations; 5 `explain` names an unknown tool; 6 and
//! 7 `guard`'s verdict is ask or deny (0 when allowed).
//! `mcp-proxy` exits 0 when the client disconnects, 1 when the policy or tags
//! do not load or the proxy fails, 2 on a bad configuration, 3 when the
//! `--config` file cannot be read. `guard` exits 3 when `--args` is not JSON
//! (or, given inline, not UTF-8).
//! With `--format json` an error goes to stderr as one JSON object
//! (`cli::json_error`), with the same exit code.

use std::path::PathBuf;
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

/// The parser of a file argument kept as text (`-` = stdin): an argument
/// that is not UTF-8 is refused naming the option and the argument (clap's
/// own message names neither). Path options that are `PathBuf`s accept any
/// name the OS allows.
fn utf8_arg() -> impl clap::builder::TypedValueParser<Value = String> {
    use clap::builder::TypedValueParser as _;
    clap::builder::OsStringValueParser::new().try_map(|s| {
        s.into_string().map_err(|s| {
            format!(
                "`{}` is not UTF-8; give this file under a UTF-8 name (or pipe it to stdin with `-`)",
                s.to_string_lossy()
            )
        })
    })
}

use cli::report::{print_eval, print_explain};
use cli::{Fail, Format, PlanArgs, evaluate, render};

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
    /// Validate a policy and its tool tags, run the policy's examples, print the score bounds, check the declared properties.
    ///
    /// Exits 4 when a declared property fails (each with its smallest counterexample, a ready
    /// `eval --input` object) or --fuzz finds a breach.
    Check {
        #[command(flatten)]
        plan: PlanArgs,
        /// Also evaluate N random sessions (1 to 1,000,000; progress on stderr on long runs) and report
        /// scores outside the clamp bounds, NaNs and active-count breaches.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        fuzz: Option<i64>,
        /// RNG seed for --fuzz and for the property searches.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Random sessions tried for a property that cannot be decided statically (1 to 100000; a property's own `samples` wins).
        #[arg(long, value_name = "N", default_value_t = 256)]
        samples: u64,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Score every tool for a session context and show the active set.
    Eval {
        #[command(flatten)]
        plan: PlanArgs,
        /// Input JSON (context, message, usage, tools); `-` reads stdin; absent = empty context.
        #[arg(long, value_name = "FILE", value_parser = utf8_arg())]
        input: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Explain, term by term, why one tool is active or not.
    Explain {
        /// Tool name (or alias), or the name MCP clients see through mcp-proxy (`sqlite__read_query`).
        // (an empty name is a usage error, exit 2, as for `guard --tool`)
        #[arg(value_parser = tool_name)]
        tool: String,
        #[command(flatten)]
        plan: PlanArgs,
        /// Input JSON (context, message, usage, tools), as for `eval`; `-` reads stdin; absent = empty context.
        #[arg(long, value_name = "FILE", value_parser = utf8_arg())]
        input: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Replay a recorded trace (JSON Lines, docs/trace-format.md): the active set before every tool call.
    ///
    /// The catalog: --tags DIR and/or --tools FILE; with --tools and no --tags, the tools file alone
    /// (the shipped tags are not mixed in); with neither, the shipped tags.
    Replay {
        /// Trace file; `-` reads stdin.
        #[arg(long, value_name = "FILE", value_parser = utf8_arg())]
        trace: String,
        #[command(flatten)]
        plan: PlanArgs,
        /// Skip (and count) trace lines that do not parse, go back in time, or name an unknown tool or stage.
        #[arg(long)]
        skip_invalid: bool,
        /// At most this many tool names per added/removed list in the text output (0: counts only).
        #[arg(long, value_name = "N", default_value_t = 8)]
        max_names: usize,
        /// Report instead which tool calls the policy's data-flow rules ([gate.flow]) would
        /// have stopped, with the earlier calls that armed each rule (docs/gate.md, "Data flow").
        #[arg(long)]
        flow: bool,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Replay one trace under two policies and compare recall, active-set size, tokens and list changes.
    ///
    /// The catalog is built as for `replay`. The paired section joins the two replays call by call:
    /// recall difference with a 95% Wald interval and McNemar's exact test, size difference with a
    /// 95% interval.
    Compare {
        /// Policy A.
        #[arg(long, value_name = "FILE")]
        policy_a: PathBuf,
        /// Policy B.
        #[arg(long, value_name = "FILE")]
        policy_b: PathBuf,
        /// Trace file; `-` reads stdin.
        #[arg(long, value_name = "FILE", value_parser = utf8_arg())]
        trace: String,
        /// Tool-tags directory (default: the shipped tool-tags/, embedded, unless --tools is given).
        #[arg(long, value_name = "DIR")]
        tags: Option<PathBuf>,
        /// Tools (MCP tools/list result or OpenAI tools array; repeatable; auto-tagged); with
        /// --tags, added to the tag files; without --tags, the catalog is these tools alone.
        #[arg(long, value_name = "FILE")]
        tools: Vec<PathBuf>,
        /// Skip (and count) trace lines that do not parse, go back in time, or name an unknown tool or stage.
        #[arg(long)]
        skip_invalid: bool,
        /// List at most this many calls where only one policy had the tool active.
        #[arg(
            long,
            value_name = "N",
            default_value_t = 20,
            allow_negative_numbers = true
        )]
        show: i64,
        /// Draw recall against mean active-set size for both policies (the threshold swept over
        /// [0, 1]), with each policy's operating point marked, as an SVG file.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Per-feature AUC on a trace, and a policy with weights fitted by logistic regression.
    ///
    /// The catalog is built as for `replay`. The fitted policy is the input file with only the
    /// weights of `weight * feature` terms and the threshold replaced.
    Fit {
        /// Trace file; `-` reads stdin.
        #[arg(long, value_name = "FILE", value_parser = utf8_arg())]
        trace: String,
        #[command(flatten)]
        plan: PlanArgs,
        /// Write the fitted policy here (the input policy with new weights and threshold), in a folder that must exist.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// The threshold is chosen so that this share of training calls is active.
        #[arg(
            long,
            value_name = "R",
            default_value_t = 0.95,
            allow_negative_numbers = true
        )]
        target_recall: f64,
        /// Share of sessions held out for validation, from 0 up to (not including) 1: 0.2 holds
        /// out a fifth, chosen by a hash of the session id. A number, not a file.
        #[arg(
            long,
            value_name = "SHARE",
            default_value_t = 0.2,
            allow_negative_numbers = true
        )]
        holdout: f64,
        /// L2 penalty of the logistic regression (finite, 0 or more).
        #[arg(
            long,
            value_name = "A",
            default_value_t = 1.0,
            allow_negative_numbers = true
        )]
        l2: f64,
        /// Solver iterations (1 or more).
        #[arg(long, value_name = "N", default_value_t = 200)]
        max_iterations: u64,
        /// Keep at most N (1 or more) not-called tools per call (all by default).
        #[arg(long, value_name = "N")]
        negatives: Option<usize>,
        /// Fit the weights on about N (call, tool) rows at most: a larger trace's rows are
        /// sampled, the called tool's and the others' each at a fixed rate (reported).
        #[arg(long, value_name = "N", default_value_t = toolgate::replay::fit::DEFAULT_MAX_ROWS)]
        max_rows: usize,
        /// Seed of the row sampling (with --max-rows).
        #[arg(long, value_name = "S", default_value_t = 0)]
        seed: u64,
        /// Remove the policy's [[examples]] and [[properties]] that fail under the fitted
        /// weights from the written policy (without it, such a fit is reported and nothing is
        /// written).
        #[arg(long)]
        drop_failing_examples: bool,
        /// What to fit: the formula's weights and the threshold, or an absolute relevance
        /// floor (`[features.keyword_match.relevance]`, see --floor) for the target recall.
        #[arg(long, value_enum, default_value = "weights")]
        fit: cli::fit::FitWhat,
        /// With --fit floor: which floor (the policy must set it to a number).
        #[arg(long, value_enum, default_value = "min-score")]
        floor: cli::fit::FloorWhich,
        /// Also write the tool transitions of the training sessions (counts of the tool called
        /// right after each tool) as a TOML file for `[features.transition_match] file`.
        #[arg(long, value_name = "FILE")]
        transitions_out: Option<PathBuf>,
        /// Skip (and count) trace lines that do not parse, go back in time, or name an unknown tool or stage.
        #[arg(long)]
        skip_invalid: bool,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Serve the plan, reload it whenever the policy or tool tags change, and print
    /// one line per load attempt with the input's active set (runs until interrupted).
    Watch {
        #[command(flatten)]
        plan: PlanArgs,
        /// Input JSON (context, message, usage) evaluated under each new plan; `-` reads stdin.
        #[arg(long, value_name = "FILE", value_parser = utf8_arg())]
        input: String,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Poll the files every MS milliseconds instead of using file-system events
        /// (network mounts, some containers); overrides `[reload] poll_interval_ms`.
        #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
        poll: Option<u64>,
        /// Quiet time after a change before reloading, in milliseconds (default 100);
        /// overrides `[reload] debounce_ms`.
        #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=60_000))]
        debounce: Option<u64>,
    },
    /// Run as an MCP server (stdio, or Streamable HTTP with --listen) in front of MCP servers: list only the active tools, gate every call.
    ///
    /// Clients see the servers' tools under client-safe names ({server}__{tool}) plus two tools of
    /// the proxy: toolgate__find_tools (search; the matches join the list) and toolgate__call_tool
    /// (call any tool by name). Without --policy the proxy uses the shipped policies/selection.toml,
    /// which finds the needed tool on real catalogs, with the call gate of policies/default.toml.
    McpProxy(cli::mcp_proxy::McpProxyArgs),
    /// Check one tool call with the call gate: allow (with coerced arguments), ask or deny.
    Guard {
        #[command(flatten)]
        plan: PlanArgs,
        /// Tool name (or alias), or the name MCP clients see through mcp-proxy (`sqlite__read_query`).
        // (an empty name is a usage error, exit 2, not a deny verdict)
        #[arg(long, value_name = "NAME", value_parser = tool_name)]
        tool: String,
        /// Arguments as JSON: inline, `-` for stdin, or `@FILE`.
        // (kept as the OS gave it: inline bytes that are not UTF-8 are an
        // input error naming the argument and the byte, exit 3)
        #[arg(long, value_name = "JSON", default_value = "{}")]
        args: std::ffi::OsString,
        /// Session id recorded in the audit log. The session's data-flow history
        /// (`[gate.flow]`) is kept in a state file between calls: --state, else
        /// $TOOLGATE_STATE_DIR/ID.json (a folder that must exist), else $XDG_STATE_HOME
        /// (~/.local/state)/toolgate/sessions/ID.json (created when missing).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// The session's state file (JSON; created when missing, in a folder that must exist). Needs --session.
        #[arg(long, value_name = "FILE", requires = "session")]
        state: Option<std::path::PathBuf>,
        /// The user confirmed this call: an `ask` verdict is recorded in the
        /// session's history as a call that ran. Needs --session.
        #[arg(long, requires = "session")]
        confirmed: bool,
        /// Append the verdict to this JSON Lines audit log (created when missing, in a folder that must exist).
        #[arg(long, value_name = "FILE")]
        audit: Option<std::path::PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Audit logs: the JSON Lines of `guard --audit FILE` and of `mcp-proxy --audit FILE` (either, or both in one file).
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Convert external data into a catalog and traces.
    Import {
        #[command(subcommand)]
        source: ImportSource,
    },
}

#[derive(Subcommand)]
enum ImportSource {
    /// Berkeley Function Calling Leaderboard v4 data (see docs/selection.md).
    ///
    /// BFCL's files are the folder berkeley-function-call-leaderboard/bfcl_eval/data/ of the
    /// public gorilla repository (also in the `bfcl-eval` package on PyPI, bfcl_eval/data/).
    /// Each file is checked first: an empty file, a line that is not JSON or a value of the
    /// wrong type is an error at FILE:LINE:COLUMN.
    ///
    /// Example:
    ///   git clone --depth 1 https://github.com/ShishirPatil/gorilla
    ///   toolgate import bfcl --data gorilla/berkeley-function-call-leaderboard/bfcl_eval/data --out bfcl
    #[command(verbatim_doc_comment)]
    Bfcl {
        /// Folder with BFCL_v4_*.json, possible_answer/ and multi_turn_func_doc/.
        #[arg(long, value_name = "DIR")]
        data: PathBuf,
        /// Output folder (created, in a folder that must exist): catalog.json, *.jsonl traces, multi_turn_catalog.json.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Keep only the first N questions of each file in the traces (the catalog keeps every candidate).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Total calls, success rate, latency p50/p95, decisions, confirmations, downstream latency and errors by kind.
    ///
    /// Reads the log of `toolgate guard --audit FILE` and that of `toolgate mcp-proxy --audit FILE`
    /// (one record per tools/call), or both in one file. Lines that are not audit records are
    /// skipped and counted (by line number); a file without any record exits 3.
    Summary {
        /// The JSON Lines audit log (`guard --audit` or `mcp-proxy --audit`).
        file: std::path::PathBuf,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

type Failed = (ExitCode, Option<LoadError>, Option<String>);

fn fail(f: Fail) -> Failed {
    match f {
        Fail::Load(e) => (ExitCode::from(1), Some(e), None),
        Fail::Input(m) => (ExitCode::from(3), None, Some(m)),
        Fail::Usage(m) => (ExitCode::from(2), None, Some(m)),
        Fail::NotWritten(e, m) => (ExitCode::from(1), e, Some(m)),
    }
}

/// Checks the paths the command names for reading (each error names its
/// option: `cli::path_options`), runs it, and on a failed load says when
/// the files given look swapped (a tag file as `--policy`, policies as
/// `--tags`).
fn run(o: &mut String, cli: Cli) -> Result<(), Failed> {
    let paths = cli.command.read_paths();
    cli::path_options::check(&paths).map_err(fail)?;
    // No file written is one the command reads (`cli::paths`), before any work.
    let outputs = cli.command.write_paths();
    let outputs: Vec<(&str, &std::path::Path)> =
        outputs.iter().map(|(o, p)| (*o, p.as_path())).collect();
    for (option, p) in &outputs {
        cli::paths::not_an_input(option, p, &paths, &outputs)
            .map_err(|m| (ExitCode::from(3), None, Some(m)))?;
    }
    run_command(o, cli)
        .map_err(|(code, load, m)| match load {
            Some(e) if code == ExitCode::from(1) => {
                let e = cli::path_options::swapped(&paths, &e).unwrap_or(e);
                (code, Some(e), m)
            }
            load => (code, load, m),
        })
        // a TOML file given to an option that reads JSON
        .map_err(|(code, load, m)| {
            let input = code == ExitCode::from(3);
            let (load, m) = cli::json_options::toml_given_for_json(&paths, load, m, input);
            (code, load, m)
        })
}

fn run_command(o: &mut String, cli: Cli) -> Result<(), Failed> {
    match cli.command {
        Command::Check {
            plan,
            fuzz,
            seed,
            samples,
            format,
        } => {
            let fuzz = fuzz
                .map(cli::check::fuzz_count)
                .transpose()
                .map_err(|m| (ExitCode::from(2), None, Some(m)))?;
            if !cli::check::run(o, &plan, fuzz, seed, samples, format).map_err(fail)? {
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
        Command::Watch {
            plan,
            input,
            format,
            poll,
            debounce,
        } => cli::watch::run(&plan, &input, format, poll, debounce)?,
        Command::Explain {
            tool,
            plan,
            input,
            format,
        } => {
            let (act, parsed) = cli::evaluate_input(&plan, &input).map_err(fail)?;
            // the catalog name, or the name MCP clients see through the proxy
            let index = act.plan.tool_index(&tool).or_else(|| {
                cli::report::proxy_names(&act.plan)
                    .iter()
                    .position(|n| n.as_deref() == Some(tool.as_str()))
            });
            match index {
                Some(i) => print_explain(o, &act, i, format),
                None => {
                    let m = cli::unknown_tool::explain_message(&tool, &act.plan, &plan, &parsed);
                    return Err((ExitCode::from(5), None, Some(m)));
                }
            }
        }
        Command::Replay {
            trace,
            plan,
            skip_invalid,
            max_names,
            flow,
            format,
        } => {
            if flow {
                let plan = cli::replay::replay_plan(&plan).map_err(fail)?;
                let t = cli::replay::read_trace(&trace, skip_invalid).map_err(fail)?;
                let r = toolgate::replay::flow::flow_report(&plan, &t);
                cli::replay_flow::print(o, &r, format);
                return Ok(());
            }
            let opts = toolgate::replay::engine::ReplayOptions {
                skip_invalid,
                keep_active: false,
            };
            let plan = cli::replay::replay_plan(&plan).map_err(fail)?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            cli::stream::stream_replay(&mut out, &plan, &trace, &opts, format, max_names)
                .map_err(fail)?;
        }
        Command::Compare {
            policy_a,
            policy_b,
            trace,
            tags,
            tools,
            skip_invalid,
            show,
            plot,
            format,
        } => {
            let show = cli::option_ranges::compare_show(show).map_err(fail)?;
            let opts = toolgate::replay::engine::ReplayOptions {
                skip_invalid,
                keep_active: false,
            };
            let args = |p: PathBuf| PlanArgs {
                policy: Some(p),
                tags: tags.clone(),
                tools: tools.clone(),
            };
            if let Some(p) = &plot {
                cli::plot::svg_path(p).map_err(|m| (ExitCode::from(2), None, Some(m)))?;
                cli::paths::existing_folder("--plot", p)
                    .map_err(|m| (ExitCode::from(3), None, Some(m)))?;
            }
            // Both with and without --plot the trace is read line by line.
            let a = cli::replay::replay_plan(&args(policy_a)).map_err(fail)?;
            let b = cli::replay::replay_plan(&args(policy_b)).map_err(fail)?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            return cli::stream::stream_compare(
                &mut out,
                (&a, &b),
                &trace,
                &opts,
                (format, show),
                plot.as_deref(),
            )
            .map_err(fail);
        }
        Command::Fit {
            trace,
            plan,
            out,
            target_recall,
            holdout,
            l2,
            max_iterations,
            negatives,
            max_rows,
            seed,
            drop_failing_examples,
            fit,
            floor,
            transitions_out,
            skip_invalid,
            format,
        } => {
            if max_rows < 100 {
                return Err((
                    ExitCode::from(2),
                    None,
                    Some(format!("--max-rows must be at least 100 (got {max_rows})")),
                ));
            }
            // Each option out of range is named alone, with its accepted range.
            if !(0.0..=1.0).contains(&target_recall) {
                return Err((
                    ExitCode::from(2),
                    None,
                    Some(format!(
                        "--target-recall {} is out of range: give a share of the training calls from 0 to 1 (0.95 keeps 95% of them active)",
                        toolgate::diag::short_number(target_recall)
                    )),
                ));
            }
            if !(0.0..1.0).contains(&holdout) {
                return Err((
                    ExitCode::from(2),
                    None,
                    Some(format!(
                        "--holdout {} is out of range: give a share of the sessions from 0 up to, not including, 1 (0.2 holds out a fifth)",
                        toolgate::diag::short_number(holdout)
                    )),
                ));
            }
            cli::option_ranges::fit(l2, max_iterations, negatives).map_err(fail)?;
            for (option, path) in [("--out", &out), ("--transitions-out", &transitions_out)] {
                if let Some(p) = path {
                    cli::paths::writable_file(option, p)
                        .map_err(|m| (ExitCode::from(3), None, Some(m)))?;
                }
            }
            let opts = toolgate::replay::fit::FitOptions {
                target_recall,
                holdout,
                l2,
                max_iterations,
                negatives,
                skip_invalid,
                drop_failing_examples,
            };
            let what = cli::fit::FitRequest {
                what: fit,
                floor,
                transitions_out: transitions_out.as_ref(),
                sampling: toolgate::replay::fit::Sampling { max_rows, seed },
            };
            cli::fit::run_fit(o, &plan, &trace, &opts, out.as_ref(), &what, format)
                .map_err(fail)?;
        }
        Command::Import {
            source: ImportSource::Bfcl { data, out, limit },
        } => {
            cli::import::run_import_bfcl(o, &data, &out, limit).map_err(fail)?;
        }
        Command::McpProxy(args) => {
            use cli::mcp_proxy::ProxyFail;
            cli::mcp_proxy::run(&args).map_err(|f| match f {
                ProxyFail::Usage(m) => (ExitCode::from(2), None, Some(m)),
                ProxyFail::Load(e) => (ExitCode::from(1), Some(e), None),
                ProxyFail::Runtime(m) => (ExitCode::from(1), None, Some(m)),
                ProxyFail::Unreadable(m) => (ExitCode::from(3), None, Some(m)),
            })?;
        }
        Command::Guard {
            plan,
            tool,
            args,
            session,
            state,
            confirmed,
            audit,
            format,
        } => {
            let flow = cli::guard_session::SessionState::locate(session.as_deref(), state)
                .map_err(fail)?;
            let v = cli::guard::guard(
                &plan,
                &tool,
                &args,
                session.as_deref(),
                audit.as_ref(),
                flow.as_ref().map(|s| (s, confirmed)),
            )
            .map_err(fail)?;
            let cli::guard::Guarded {
                verdict: v,
                audit_error: audit_failed,
                warnings,
            } = v;
            if format == Format::Text {
                for w in &warnings {
                    eprintln!("warning: {w}");
                }
            }
            cli::guard::print_verdict(o, &v, &warnings, format);
            if let Some(m) = audit_failed {
                return Err((ExitCode::from(3), None, Some(m)));
            }
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

impl Command {
    /// The files and folders the command reads, with the options that name
    /// them (`cli::path_options`). Output paths are checked where they are
    /// written (`cli::paths`); `import bfcl --data` and `mcp-proxy
    /// --config` by their commands, with what they expect.
    fn read_paths(&self) -> Vec<cli::path_options::PathOption> {
        use cli::path_options::{PathOption, Role, Want, of_plan, plan_paths};
        let input =
            |option: &'static str, p: &str| PathOption::new(option, p, Want::File, Role::Input);
        match self {
            Command::Check { plan, .. } => of_plan(plan),
            Command::Eval { plan, input: i, .. } | Command::Explain { plan, input: i, .. } => {
                let mut v = of_plan(plan);
                v.extend(i.as_deref().map(|p| input("--input", p)));
                v
            }
            Command::Watch { plan, input: i, .. } => {
                let mut v = of_plan(plan);
                v.push(input("--input", i));
                v
            }
            Command::Replay { trace, plan, .. } | Command::Fit { trace, plan, .. } => {
                let mut v = of_plan(plan);
                v.push(input("--trace", trace));
                v
            }
            Command::Compare {
                policy_a,
                policy_b,
                trace,
                tags,
                tools,
                ..
            } => {
                let mut v = plan_paths(Some(("--policy-a", policy_a)), tags.as_deref(), tools);
                v.insert(
                    1,
                    PathOption::new("--policy-b", policy_b, Want::File, Role::Policy),
                );
                v.push(input("--trace", trace));
                v
            }
            Command::Guard { plan, args, .. } => {
                let mut v = of_plan(plan);
                if let Some(f) = args.to_str().and_then(|a| a.strip_prefix('@')) {
                    v.push(input("--args", f));
                }
                v
            }
            Command::McpProxy(a) => {
                let mut v = plan_paths(
                    a.policy.as_deref().map(|p| ("--policy", p)),
                    a.tags.as_deref(),
                    &[],
                );
                v.extend(
                    a.shadow_policy
                        .as_deref()
                        .map(|p| PathOption::new("--shadow-policy", p, Want::File, Role::Policy)),
                );
                v
            }
            Command::Audit {
                command: AuditCommand::Summary { file, .. },
            } => vec![PathOption::new(
                "audit summary",
                file,
                Want::File,
                Role::Input,
            )],
            Command::Import { .. } => Vec::new(),
        }
    }

    /// The files the command writes where the user says, with their
    /// options (`mcp-proxy`'s and `import bfcl`'s are checked by their
    /// commands, with their configuration's values).
    fn write_paths(&self) -> Vec<(&'static str, PathBuf)> {
        let some = |option: &'static str, p: &Option<PathBuf>| p.clone().map(|p| (option, p));
        match self {
            Command::Fit {
                out,
                transitions_out,
                ..
            } => [
                some("--out", out),
                some("--transitions-out", transitions_out),
            ]
            .into_iter()
            .flatten()
            .collect(),
            Command::Compare { plot, .. } => some("--plot", plot).into_iter().collect(),
            Command::Guard { audit, state, .. } => [some("--audit", audit), some("--state", state)]
                .into_iter()
                .flatten()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The `--format` the command was given (`None`: a command without one).
    fn format(&self) -> Option<Format> {
        match self {
            Command::Check { format, .. }
            | Command::Eval { format, .. }
            | Command::Explain { format, .. }
            | Command::Replay { format, .. }
            | Command::Compare { format, .. }
            | Command::Fit { format, .. }
            | Command::Watch { format, .. }
            | Command::Guard { format, .. }
            | Command::Audit {
                command: AuditCommand::Summary { format, .. },
            } => Some(*format),
            Command::McpProxy(_) | Command::Import { .. } => None,
        }
    }
}

/// The parser of `guard --tool`: an empty name is a usage error (exit 2),
/// not a call the gate denies.
fn tool_name(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("the tool name is empty; give the name of a tool (`toolgate eval` lists the catalog's tools)".into());
    }
    Ok(s.to_string())
}

/// `e`, or when an argument of the command line is longer than
/// [`toolgate::diag::MAX_ECHOED_CHARS`], the error of the same command
/// line with each such argument clipped ([`toolgate::diag::echo`]): clap
/// quotes the value it refuses (`invalid value '…' for '--format'`,
/// `unrecognized subcommand '…'`), and a 120 KB value must not come back
/// whole (issue 29 item 5). A command line of short arguments keeps its
/// error as it is; so does one whose clipped form parses (the error then
/// was about the long value's content, which clap does not quote).
fn clipped_error(e: clap::Error) -> clap::Error {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let long = |a: &std::ffi::OsString| a.len() > toolgate::diag::MAX_ECHOED_CHARS;
    if !args.iter().any(long) {
        return e;
    }
    let clipped = args.into_iter().map(|a| {
        if long(&a) {
            std::ffi::OsString::from(toolgate::diag::echo(&a.to_string_lossy()).into_owned())
        } else {
            a
        }
    });
    match Cli::try_parse_from(clipped) {
        Err(c) if c.kind() == e.kind() => c,
        _ => e,
    }
}

fn main() -> ExitCode {
    // SAFETY: nothing else runs yet. candle's thread counts, read once here
    // instead of from /proc/cpuinfo on every matrix product (issue 24).
    unsafe { toolgate::embed::set_thread_env() };
    let cli = match Cli::try_parse().map_err(clipped_error) {
        Ok(c) => c,
        // With `--format json`, a refused command line is a JSON error too.
        Err(e)
            if e.use_stderr()
                && cli::json_error::asked_for_json(&std::env::args_os().collect::<Vec<_>>()) =>
        {
            eprintln!("{}", cli::json_error::clap_error(&e));
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
        Err(e) => e.exit(),
    };
    let json_errors = cli.command.format() == Some(Format::Json);
    // Logs go to stderr only (stdout carries results, or MCP messages for mcp-proxy).
    let default_filter = match cli.command {
        Command::McpProxy(_) => "warn,toolgate::mcp=info",
        // `guard --audit` reports a record it could not write itself, once,
        // with the option and the path (exit 3): the sink's log line would
        // say it a second time.
        Command::Guard { .. } => "warn,toolgate::audit=off",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_filter.into()),
        )
        .init();
    let mut out = String::new();
    let result = run(&mut out, cli);
    // A closed stdout (`toolgate eval | head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes());
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, load, msg)) if json_errors => {
            cli::json_error::print(code, load.as_ref(), msg.as_deref());
            code
        }
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
