//! `toolgate replay` and `toolgate compare` on traces of any size: the trace
//! is read line by line in two passes (`toolgate::replay::stream`), every
//! session's steps are printed as soon as it and the sessions that started
//! before it are done, and the summaries are accumulated without keeping the
//! steps. The output is the same bytes as the in-memory report of commit
//! 389b7bc (`print_compare` still prints the in-memory `compare --plot`);
//! `tests/replay_golden.rs` holds them to that binary's outputs.

use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::sync::Arc;

use toolgate::Plan;
use toolgate::replay::engine::{ReplayOptions, replay_session, tool_tokens};
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

    /// The first pass ([`index_trace`]) against `plans`.
    pub fn index(
        &self,
        name: &str,
        skip_invalid: bool,
        plans: &[&Arc<Plan>],
    ) -> Result<TraceIndex, Fail> {
        let index =
            index_trace(self.reader(name)?, skip_invalid, plans).map_err(|e| input(name, e))?;
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

/// Replays one closed session (the first pass checked its lines: no error).
fn run_session(
    plan: &Arc<Plan>,
    tokens: &[u64],
    s: &ClosedSession,
    opts: &ReplayOptions,
) -> (
    Vec<toolgate::replay::engine::Step>,
    toolgate::replay::engine::SessionSummary,
) {
    let mut skipped = Vec::new();
    replay_session(
        plan,
        (s.index, &s.id),
        &s.lines,
        opts,
        tokens,
        &mut skipped,
        |_, _| {},
    )
    .expect("the first pass checked every line")
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
            let (steps, summary) = run_session(plan, &tokens, &s, opts);
            let mut text = String::new();
            for (k, st) in steps.iter().enumerate() {
                if json {
                    if k > 0 {
                        text.push(',');
                    }
                    text.push_str(&step_json(plan, &s.id, st).to_string());
                } else {
                    if k == 0 {
                        text.push_str(&format!("session {}\n", s.id));
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
pub fn stream_compare(
    out: &mut dyn Write,
    (a, b): (&Arc<Plan>, &Arc<Plan>),
    path: &str,
    opts: &ReplayOptions,
    format: Format,
    show: usize,
) -> Result<(), Fail> {
    let file = TraceFile::open(path)?;
    let index = file.index(path, opts.skip_invalid, &[a, b])?;
    let (ta, tb) = (tool_tokens(a), tool_tokens(b));
    let keep = if format == Format::Json {
        usize::MAX
    } else {
        show
    };
    let (mut acc_a, mut acc_b) = (SummaryAcc::default(), SummaryAcc::default());
    let mut pairs = PairedAcc::new(keep);
    file.sessions(
        path,
        &index,
        |s| {
            let (sa, ma) = run_session(a, &ta, &s, opts);
            let (sb, mb) = run_session(b, &tb, &s, opts);
            let (mut x, mut y) = (SummaryAcc::default(), SummaryAcc::default());
            x.add_session(&sa, &ma);
            y.add_session(&sb, &mb);
            let mut p = PairedAcc::new(keep);
            p.add_session(&sa, &sb, &s.id, a);
            (x, y, p)
        },
        |(x, y, p)| {
            acc_a.merge(&x);
            acc_b.merge(&y);
            pairs.append(p);
        },
    )?;
    let sa = acc_a.finish(a, index.skipped[0].len());
    let sb = acc_b.finish(b, index.skipped[1].len());
    let total = pairs.discordant_total;
    let p = pairs.finish();
    let mut o = String::new();
    super::compare::print_summaries(&mut o, path, (a, &sa), (b, &sb), (&p, total), format, show);
    let _ = out.write_all(o.as_bytes());
    let _ = out.flush();
    Ok(())
}
