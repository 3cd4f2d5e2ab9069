//! `toolgate replay` and `toolgate compare` on traces of any size: the trace
//! is read line by line in two passes (`toolgate::replay::stream`), every
//! session's steps are printed as soon as it and the sessions that started
//! before it are done, and the summaries are accumulated without keeping the
//! steps. The output is the same bytes as the in-memory report of commit
//! 389b7bc (`compare --plot` streams too, its curves accumulated call by call);
//! `tests/replay_golden.rs` holds them to that binary's outputs.

use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::sync::Arc;

use toolgate::Plan;
use toolgate::eval::Activation;
use toolgate::replay::curve::CurveAcc;
use toolgate::replay::engine::{ReplayOptions, Step, replay_session, tool_tokens};
use toolgate::replay::stats::{PairedAcc, SummaryAcc};
use toolgate::replay::stream::{ClosedSession, TraceIndex, index_trace, replay_sessions};
use toolgate::replay::trace::TraceError;

use super::replay::{step_json, step_text, summary_line};
use super::{Fail, Format};

/// A trace file to read twice: the file itself, or stdin copied to a
/// temporary file (removed on drop).
pub struct TraceFile {
    path: PathBuf,
    temporary: bool,
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl TraceFile {
    /// Opens `path` (`-`: stdin, copied to the system's temporary directory).
    pub fn open(path: &str) -> Result<TraceFile, Fail> {
        if path != "-" {
            return Ok(TraceFile {
                path: PathBuf::from(path),
                temporary: false,
            });
        }
        let tmp = std::env::temp_dir().join(format!("toolgate-stdin-{}.jsonl", std::process::id()));
        let copy = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            std::io::copy(&mut std::io::stdin().lock(), &mut f)?;
            f.flush()
        };
        copy().map_err(|e| Fail::Input(format!("cannot read stdin: {e}")))?;
        Ok(TraceFile {
            path: tmp,
            temporary: true,
        })
    }

    fn reader(&self, name: &str) -> Result<BufReader<std::fs::File>, Fail> {
        std::fs::File::open(&self.path)
            .map(|f| BufReader::with_capacity(1 << 16, f))
            .map_err(|e| Fail::Input(format!("cannot read {name}: {e}")))
    }

    /// The trace opened again, for a further pass of the library's streamed
    /// code (`fit_stream`): a read error is a [`TraceError`] at line 0.
    pub fn open_reader(&self) -> Result<BufReader<std::fs::File>, TraceError> {
        std::fs::File::open(&self.path)
            .map(|f| BufReader::with_capacity(1 << 16, f))
            .map_err(|e| TraceError {
                column: None,
                line: 0,
                message: format!("cannot read the trace again: {e}"),
            })
    }

    /// The first pass ([`index_trace`]) against `plans`.
    pub fn index(
        &self,
        name: &str,
        skip_invalid: bool,
        plans: &[&Arc<Plan>],
    ) -> Result<TraceIndex, Fail> {
        let index = match index_trace(self.reader(name)?, skip_invalid, plans) {
            Ok(index) => index,
            // Every bad line at once (issue 29): the trace is read again,
            // skipping them, to find the others.
            Err(first) if !skip_invalid && first.line > 0 => {
                let all = match index_trace(self.reader(name)?, true, plans) {
                    Ok(i) => i
                        .parse_skipped
                        .into_iter()
                        .chain(i.skipped.into_iter().flatten())
                        .collect(),
                    Err(_) => Vec::new(),
                };
                return Err(Fail::Input(every_bad_line(name, first, all)));
            }
            Err(e) => return Err(input(name, e)),
        };
        // A trace with no session (an empty file, only blank lines, or every
        // line skipped) is an input error: there is nothing to replay
        // (issue 29; sessions without a tool call are valid).
        if index.sessions() == 0 {
            let what = if index.parse_skipped.is_empty() {
                "the file holds no trace line".to_string()
            } else {
                format!(
                    "all {} lines were skipped as invalid",
                    index.parse_skipped.len()
                )
            };
            return Err(Fail::Input(format!(
                "{name}: the trace has no sessions ({what}), so there is nothing to replay; a trace is JSON Lines, one event per line, e.g. {{\"session\": \"s1\", \"t\": 4, \"event\": \"tool_call\", \"tool\": \"sqlite.list_tables\"}} (docs/trace-format.md)"
            )));
        }
        Ok(index)
    }

    /// `Ok` when the trace of `index` holds a tool call; else the input
    /// error `replay` prints as a note (`no tool calls to score`), for the
    /// commands that have nothing to say without one (`fit`'s weights:
    /// statistics over 0 calls are no result, issue 29).
    pub fn needs_calls(
        name: &str,
        index: &TraceIndex,
        tools: usize,
        command: &str,
    ) -> Result<(), Fail> {
        if index.tool_calls > 0 {
            return Ok(());
        }
        Err(Fail::Input(format!(
            "{name}: no tool calls to score ({} session(s), {tools} tools): {command} scores the active set at each tool call, so it needs `tool_call` events, e.g. {{\"session\": \"s1\", \"t\": 4, \"event\": \"tool_call\", \"tool\": \"sqlite.list_tables\"}} (docs/trace-format.md)",
            index.sessions()
        )))
    }

    /// A note on standard error when the trace of `index` holds no tool
    /// call, for the commands whose report still says something without
    /// one (`compare`: what each policy shows on the turns where no tool
    /// is called, as in an irrelevance trace): its recall rows are then
    /// over 0 calls, and the note says so (issue 29). (`fit --fit floor`
    /// prints its calls, 0, in its own report.)
    pub fn note_no_calls(name: &str, index: &TraceIndex, tools: usize, command: &str) {
        if index.tool_calls == 0 {
            eprintln!(
                "note: {name}: no tool calls to score ({} session(s), {tools} tools): {command}'s recall rows are over 0 calls; only the turns without a call (what each policy shows when no tool fits) are measured",
                index.sessions()
            );
        }
    }

    /// The second pass ([`replay_sessions`]).
    pub fn sessions<T: Send>(
        &self,
        name: &str,
        index: &TraceIndex,
        work: impl Fn(ClosedSession) -> T + Sync,
        emit: impl FnMut(T),
    ) -> Result<(), Fail> {
        replay_sessions(self.reader(name)?, index, work, emit).map_err(|e| input(name, e))
    }
}

fn input(name: &str, e: TraceError) -> Fail {
    Fail::Input(format!("{name}: {e}"))
}

/// At most this many bad trace lines are listed ("… N more" past it).
const MAX_BAD_LINES: usize = 20;

/// The message of a trace whose lines `all` (as a skipping read found them)
/// are bad, `first` the one a read without skipping stopped at: one
/// `NAME: trace line L, column C: message` line each, in line order, then
/// `N problems found`. Only `first` when `all` does not hold it (a read
/// that skips may meet other problems).
pub fn every_bad_line(name: &str, first: TraceError, mut all: Vec<TraceError>) -> String {
    all.sort_by_key(|e| e.line);
    all.dedup_by(|a, b| a.line == b.line && a.message == b.message);
    let holds_first = all
        .iter()
        .any(|e| e.line == first.line && e.message == first.message);
    if !holds_first || all.len() < 2 {
        return format!("{name}: {first}");
    }
    let n = all.len();
    let mut out: Vec<String> = all
        .iter()
        .take(MAX_BAD_LINES)
        .map(|e| format!("{name}: {e}"))
        .collect();
    if n > MAX_BAD_LINES {
        out.push(toolgate::diag::more(n - MAX_BAD_LINES));
    }
    out.push(format!("{n} problems found"));
    out.join("\n")
}

/// Replays one closed session (the first pass checked its lines: no error),
/// calling `on_step` with every step.
fn run_session(
    plan: &Arc<Plan>,
    tokens: &[u64],
    s: &ClosedSession,
    opts: &ReplayOptions,
    on_step: impl FnMut(&Step, &Activation),
) -> (Vec<Step>, toolgate::replay::engine::SessionSummary) {
    let mut skipped = Vec::new();
    replay_session(
        plan,
        (s.index, &s.id),
        &s.lines,
        opts,
        tokens,
        &mut skipped,
        on_step,
    )
    .expect("the first pass checked every line")
}

/// [`CurveAcc::add`] for a step that is a call.
fn add_call(acc: &mut Option<CurveAcc>, step: &Step, act: &Activation) {
    if let (Some(acc), Some(c), Some(rank)) = (acc.as_mut(), step.called, step.rank) {
        acc.add(act, c, rank);
    }
}

/// `toolgate replay`, streamed to `out`.
pub fn stream_replay(
    out: &mut dyn Write,
    plan: &Arc<Plan>,
    path: &str,
    opts: &ReplayOptions,
    format: Format,
    max_names: usize,
) -> Result<(), Fail> {
    let file = TraceFile::open(path)?;
    let index = file.index(path, opts.skip_invalid, &[plan])?;
    let skipped = &index.skipped[0];
    let tokens = tool_tokens(plan);
    let json = format == Format::Json;
    let mut head = String::new();
    if json {
        let list: Vec<serde_json::Value> = skipped
            .iter()
            .map(|e| serde_json::json!({"line": e.line, "error": e.message}))
            .collect();
        let list = serde_json::Value::Array(list).to_string();
        head.push_str(&format!("{{\"skipped\":{list},\"steps\":["));
    } else {
        head.push_str(&format!(
            "policy `{}` | {} tools\n",
            plan.policy_name,
            plan.tools.len()
        ));
    }
    let _ = out.write_all(head.as_bytes());
    let mut acc = SummaryAcc::default();
    let mut first = true;
    file.sessions(
        path,
        &index,
        |s| {
            let (steps, summary) = run_session(plan, &tokens, &s, opts, |_, _| {});
            let mut text = String::new();
            for (k, st) in steps.iter().enumerate() {
                if json {
                    if k > 0 {
                        text.push(',');
                    }
                    text.push_str(&step_json(plan, &s.id, st).to_string());
                } else {
                    if k == 0 {
                        text.push_str(&format!("session {}\n", super::bounded::name(&s.id)));
                    }
                    text.push_str(&step_text(plan, st, max_names));
                    text.push('\n');
                }
            }
            let mut a = SummaryAcc::default();
            a.add_session(&steps, &summary);
            (text, a)
        },
        |(text, a)| {
            acc.merge(&a);
            if text.is_empty() {
                return;
            }
            if json && !first {
                let _ = out.write_all(b",");
            }
            first = false;
            let _ = out.write_all(text.as_bytes());
        },
    )?;
    let summary = acc.finish(plan, skipped.len());
    let mut tail = String::new();
    if json {
        let v = serde_json::to_value(&summary).expect("a summary serialises");
        tail.push_str(&format!("],\"summary\":{v}}}\n"));
    } else {
        for e in skipped {
            tail.push_str(&format!("skipped: {e}\n"));
        }
        tail.push_str(&summary_line(&summary));
        tail.push('\n');
        if summary.skipped > 0 {
            tail.push_str(&format!("{} invalid line(s) skipped\n", summary.skipped));
        }
    }
    let _ = out.write_all(tail.as_bytes());
    let _ = out.flush();
    Ok(())
}

/// `toolgate compare` (without `--plot`), streamed: both policies replay
/// each session as it closes. The text report keeps the first `show`
/// discordant calls; the JSON report lists them all (its size grows with
/// the number of discordant calls, 4 bytes per paired call are kept for the
/// size interval either way).
///
/// With `plot`, also draws `compare --plot` there: the recall / set-size
/// curves are accumulated call by call ([`CurveAcc`]), so the plot needs no
/// more memory than the report.
pub fn stream_compare(
    out: &mut dyn Write,
    (a, b): (&Arc<Plan>, &Arc<Plan>),
    path: &str,
    opts: &ReplayOptions,
    (format, show): (Format, usize),
    plot: Option<&std::path::Path>,
) -> Result<(), Fail> {
    let file = TraceFile::open(path)?;
    let index = file.index(path, opts.skip_invalid, &[a, b])?;
    TraceFile::note_no_calls(path, &index, a.tools.len(), "compare");
    let (ta, tb) = (tool_tokens(a), tool_tokens(b));
    let keep = if format == Format::Json {
        usize::MAX
    } else {
        show
    };
    let (mut acc_a, mut acc_b) = (SummaryAcc::default(), SummaryAcc::default());
    let mut pairs = PairedAcc::new(keep);
    let mut curve_acc = plot.map(|_| {
        (
            CurveAcc::new(a, super::compare::CURVE_STEPS),
            CurveAcc::new(b, super::compare::CURVE_STEPS),
        )
    });
    file.sessions(
        path,
        &index,
        |s| {
            let mut ca = plot.map(|_| CurveAcc::new(a, super::compare::CURVE_STEPS));
            let mut cb = plot.map(|_| CurveAcc::new(b, super::compare::CURVE_STEPS));
            let (sa, ma) = run_session(a, &ta, &s, opts, |st, act| add_call(&mut ca, st, act));
            let (sb, mb) = run_session(b, &tb, &s, opts, |st, act| add_call(&mut cb, st, act));
            let curves = ca.zip(cb);
            let (mut x, mut y) = (SummaryAcc::default(), SummaryAcc::default());
            x.add_session(&sa, &ma);
            y.add_session(&sb, &mb);
            let mut p = PairedAcc::new(keep);
            p.add_session(&sa, &sb, &s.id, a);
            (x, y, p, curves)
        },
        |(x, y, p, curves)| {
            acc_a.merge(&x);
            acc_b.merge(&y);
            pairs.append(p);
            if let (Some((ca, cb)), Some((ma, mb))) = (curves, curve_acc.as_mut()) {
                ma.merge(&ca);
                mb.merge(&cb);
            }
        },
    )?;
    let sa = acc_a.finish(a, index.skipped[0].len());
    let sb = acc_b.finish(b, index.skipped[1].len());
    let total = pairs.discordant_total;
    let p = pairs.finish();
    if let (Some(file), Some((ca, cb))) = (plot, &curve_acc) {
        super::compare::plot_curves(file, path, (a, &sa, &ca.curve()), (b, &sb, &cb.curve()))
            .map_err(Fail::Input)?;
    }
    let mut o = String::new();
    super::compare::print_summaries(&mut o, path, (a, &sa), (b, &sb), (&p, total), format, show);
    if let (Some(file), Format::Text) = (plot, format) {
        o.push_str(&format!("wrote {}\n", file.display()));
    }
    let _ = out.write_all(o.as_bytes());
    let _ = out.flush();
    Ok(())
}
