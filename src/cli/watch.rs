//! `toolgate watch`: serve a plan from files, reload it when they change, and
//! print one line per load attempt with the active set of one input.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use toolgate::input::EvalInput;
use toolgate::load::Sources;
use toolgate::reload::{LoadAttempt, ReloadOptions, Reloader};
use toolgate::{LoadError, Plan};

use super::{Format, PlanArgs, read_input_text};

/// What `run` fails with: exit code, diagnostics to render, message.
pub type Failure = (ExitCode, Option<LoadError>, Option<String>);

/// The active set of the input under one plan.
enum Active {
    Set(BTreeSet<String>),
    /// The input does not fit this plan (an undeclared stage, usage of a tool
    /// that is gone).
    Unfit(String),
}

/// The input `input`, read from the file `file` (`-`: stdin) whose text is
/// `text`, under `plan`: its active set, or why it does not fit, located
/// in the file as `eval --input` locates it (`FILE:LINE:COLUMN: …`, issue
/// 29) for a tool the catalog does not hold and an undeclared stage.
fn active(plan: &Arc<Plan>, input: &EvalInput, file: &str, text: &str) -> Active {
    let unfit = |m: String| Active::Unfit(format!("the input does not fit this plan: {m}"));
    if let Some(u) = input.unknown_tool(plan) {
        let at = match u.locate(text) {
            Some((l, c)) => format!("{file}:{l}:{c}: "),
            None => format!("{file}: "),
        };
        return unfit(format!("{at}{}", u.message(plan)));
    }
    if let Some(m) = toolgate::input::located::undeclared_stage(input, plan, file, text) {
        return unfit(m);
    }
    match input.resolve(plan) {
        Ok((ctx, usage, now)) => Active::Set(
            plan.evaluate(&ctx, &usage, now)
                .active_names()
                .into_iter()
                .map(String::from)
                .collect(),
        ),
        Err(e) => Active::Unfit(format!("the input does not fit this plan: {e}")),
    }
}

/// One `--format json` line, keys in this order.
#[derive(Serialize)]
struct Line<'a> {
    event: &'a str,
    version: u64,
    hash: Option<String>,
    error: Option<&'a str>,
    active: Option<&'a [String]>,
    added: &'a [String],
    removed: &'a [String],
}

struct Printer {
    format: Format,
    /// Active set of the last plan the input fitted.
    last: BTreeSet<String>,
}

impl Printer {
    /// One line (JSON) or one entry (text) per attempt. `Err` when stdout is closed.
    fn print(
        &mut self,
        event: &str,
        version: u64,
        plan: &Plan,
        error: Option<&str>,
        act: Option<Active>,
    ) -> std::io::Result<()> {
        let (active, added, removed, error) = match act {
            Some(Active::Set(now)) => {
                let added: Vec<&String> = now.difference(&self.last).collect();
                let removed: Vec<&String> = self.last.difference(&now).collect();
                let line = (
                    Some(now.iter().cloned().collect::<Vec<_>>()),
                    added.into_iter().cloned().collect::<Vec<_>>(),
                    removed.into_iter().cloned().collect::<Vec<_>>(),
                    error.map(String::from),
                );
                self.last = now;
                line
            }
            Some(Active::Unfit(e)) => (None, vec![], vec![], Some(e)),
            None => (
                Some(self.last.iter().cloned().collect()),
                vec![],
                vec![],
                error.map(String::from),
            ),
        };
        let mut out = std::io::stdout().lock();
        if self.format == Format::Json {
            let line = Line {
                event,
                version,
                hash: Some(format!("{:016x}", plan.content_hash)),
                error: error.as_deref(),
                active: active.as_deref(),
                added: &added,
                removed: &removed,
            };
            writeln!(out, "{}", serde_json::to_string(&line).unwrap_or_default())?;
        } else {
            match &error {
                Some(e) if event == "rejected" => {
                    writeln!(out, "rejected: still serving v{version}")?;
                    for l in e.lines() {
                        writeln!(out, "  error: {l}")?;
                    }
                }
                _ => {
                    writeln!(
                        out,
                        "{event} v{version}: policy `{}`, {} tools, hash {:016x}",
                        plan.policy_name,
                        plan.tools.len(),
                        plan.content_hash
                    )?;
                    if let Some(e) = &error {
                        writeln!(out, "  error: {e}")?;
                    }
                    if let Some(a) = &active {
                        // names clipped, at most MAX_LISTED (`super::bounded`)
                        let names = if a.is_empty() {
                            String::new()
                        } else {
                            super::bounded::list(a, ", ")
                        };
                        writeln!(out, "  active ({}): {names}", a.len())?;
                    }
                    if !added.is_empty() {
                        writeln!(out, "  added: {}", super::bounded::list(&added, ", "))?;
                    }
                    if !removed.is_empty() {
                        writeln!(out, "  removed: {}", super::bounded::list(&removed, ", "))?;
                    }
                }
            }
        }
        out.flush()
    }
}

/// Runs until interrupted (or until stdout is closed).
pub fn run(
    args: &PlanArgs,
    input: &str,
    format: Format,
    poll_ms: Option<u64>,
    debounce_ms: Option<u64>,
) -> Result<(), Failure> {
    let file = input;
    let (input, text) = read_input_text(&Some(input.to_string()))
        .map_err(|m| (ExitCode::from(3), None, Some(m)))?;
    if input.tools.is_some() {
        return Err((
            ExitCode::from(3),
            None,
            Some("`tools` in the input is not supported by `watch`: the catalog comes from the watched files (--tags, --tools)".into()),
        ));
    }
    let mut options = ReloadOptions::new(Sources {
        policy: args.policy.clone(),
        tags: args.tags.clone(),
        tools: args.tools.clone(),
    });
    options.poll_interval = poll_ms.map(Duration::from_millis);
    options.debounce = debounce_ms.map(Duration::from_millis);
    let mut printer = Printer {
        format,
        last: BTreeSet::new(),
    };
    let reloader = match Reloader::new(options) {
        Ok(r) => r,
        Err(e) => {
            let msg = e.to_string();
            let mut out = std::io::stdout().lock();
            let _ = if format == Format::Json {
                let line = Line {
                    event: "rejected",
                    version: 0,
                    hash: None,
                    error: Some(&msg),
                    active: None,
                    added: &[],
                    removed: &[],
                };
                writeln!(out, "{}", serde_json::to_string(&line).unwrap_or_default())
            } else {
                writeln!(out, "rejected: no plan to serve")
            };
            return Err((ExitCode::from(1), Some(e), None));
        }
    };
    let attempts = reloader.subscribe_attempts();
    let plan = reloader.plan();
    if printer
        .print(
            "loaded",
            reloader.version(),
            &plan,
            None,
            Some(active(&plan, &input, file, &text)),
        )
        .is_err()
    {
        return Ok(());
    }
    let _watch = reloader.watch().map_err(|e| {
        (
            ExitCode::from(1),
            None,
            Some(format!("cannot watch the files: {e}")),
        )
    })?;
    for attempt in attempts {
        let r = match &attempt {
            LoadAttempt::Loaded(ev) => printer.print(
                "loaded",
                ev.version,
                &ev.plan,
                None,
                Some(active(&ev.plan, &input, file, &text)),
            ),
            LoadAttempt::Rejected(rej) => {
                let msg = rej.error.to_string();
                printer.print("rejected", rej.version, &reloader.plan(), Some(&msg), None)
            }
        };
        if r.is_err() {
            break;
        }
    }
    Ok(())
}
