//! Replaying a trace of any size: read line by line, in two passes, keeping
//! only the open sessions' lines.
//!
//! * [`index_trace`], the first pass, parses every line and checks it as
//!   [`crate::replay::trace::parse_trace`] and the replay would (syntax, time
//!   order, tools and stages of every plan), and keeps per session only its
//!   place in order of first appearance and its last valid line: memory grows
//!   with the number of sessions, not of lines. It finds the error the
//!   in-memory replay reports (a parse error first, in file order; else the
//!   first invalid line of the first session, in order of first appearance,
//!   under the first plan that has one), and with `skip_invalid` the whole
//!   list of skipped lines, before anything is replayed.
//! * [`replay_sessions`], the second pass, reads the lines again, buffers
//!   each session's lines until its last one, then replays the closed
//!   sessions in batches ([`BATCH`] sessions; in parallel with the feature
//!   `parallel`, rayon) and hands the results to the caller in order of first
//!   appearance, whatever the number of threads.
//!
//! Sessions may interleave: what is held is the lines of the sessions open at
//! a point of the file, and the results of the sessions that closed before an
//! earlier-starting one (a session open over the whole file holds back every
//! result until it ends).

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::sync::Arc;

use crate::plan::Plan;
use crate::replay::engine::validate;
use crate::replay::trace::{Event, TraceError, TraceLine, parse_line};

/// Sessions replayed per batch (the unit of parallel work).
pub const BATCH: usize = 256;

/// What the first pass learned: where each session starts and ends, and the
/// lines skipped.
#[derive(Debug, Clone, Default)]
pub struct TraceIndex {
    /// Session id → (place in order of first appearance, 1-based line of its
    /// last valid line).
    sessions: HashMap<String, (usize, usize)>,
    /// Lines that do not parse or go back in time (file order).
    pub parse_skipped: Vec<TraceError>,
    /// Per plan: every skipped line (the parse errors and the lines naming an
    /// unknown tool or undeclared stage), sorted by line.
    pub skipped: Vec<Vec<TraceError>>,
    /// Trace lines read.
    pub lines: usize,
    /// `tool_call` lines that parse and keep time order (some may still
    /// name a tool a plan does not know).
    pub tool_calls: usize,
}

impl TraceIndex {
    /// Number of sessions.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }
}

fn read_err(line: usize, e: std::io::Error) -> TraceError {
    TraceError {
        column: None,
        line,
        message: format!("cannot read the trace: {e}"),
    }
}

/// The lines of a trace as text, numbered from 1: `\n` or `\r\n` ends a
/// line, a UTF-8 byte-order mark before the first line is dropped, and bytes
/// that are not UTF-8 are an error naming their byte offset (0-based, in the
/// file) and line, as [`crate::datafile::decode_text`] names them for a whole
/// file.
fn text_lines(reader: impl BufRead) -> impl Iterator<Item = (usize, Result<String, TraceError>)> {
    let mut offset = 0usize;
    reader.split(b'\n').enumerate().map(move |(i, raw)| {
        let line = i + 1;
        let mut bytes = match raw {
            Ok(b) => b,
            Err(e) => return (line, Err(read_err(line, e))),
        };
        let mut start = offset;
        offset += bytes.len() + 1;
        if line == 1
            && let Some(mark) = crate::datafile::utf16_mark(&bytes)
        {
            return (
                line,
                Err(TraceError {
                    column: None,
                    line,
                    message: crate::datafile::utf16_message(mark),
                }),
            );
        }
        if line == 1 && bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
            bytes.drain(..3);
            start += 3;
        }
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        let text = String::from_utf8(bytes).map_err(|e| TraceError {
            column: None,
            line,
            message: format!(
                "not valid UTF-8 at byte {} (line {line}, column {})",
                start + e.utf8_error().valid_up_to(),
                crate::datafile::utf8_line_column(&e.as_bytes()[..e.utf8_error().valid_up_to()]).1
            ),
        });
        (line, text)
    })
}

/// The first pass over a trace (see the module documentation). Without
/// `skip_invalid`, returns the error the in-memory replay of `plans[0]`, then
/// of `plans[1]` ..., would report.
pub fn index_trace(
    reader: impl BufRead,
    skip_invalid: bool,
    plans: &[&Arc<Plan>],
) -> Result<TraceIndex, TraceError> {
    let mut index = TraceIndex {
        skipped: vec![Vec::new(); plans.len()],
        ..TraceIndex::default()
    };
    let mut last_t: HashMap<String, f64> = HashMap::new();
    // Per plan, without skip_invalid: the first invalid line of the earliest session.
    let mut first_error: Vec<Option<(usize, TraceError)>> = vec![None; plans.len()];
    for (line, raw) in text_lines(reader) {
        let raw = raw?;
        index.lines = line;
        if raw.trim().is_empty() {
            continue;
        }
        let parsed = parse_line(&raw, line).and_then(|l| match last_t.get(&l.session) {
            Some(&prev) if l.t < prev => Err(super::trace::time_goes_back(&l, prev, &raw)),
            _ => Ok(l),
        });
        let l = match parsed {
            Ok(l) => l,
            Err(e) if skip_invalid => {
                index.parse_skipped.push(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        if matches!(l.event, Event::ToolCall { .. }) {
            index.tool_calls += 1;
        }
        match last_t.get_mut(&l.session) {
            Some(t) => *t = l.t,
            None => {
                last_t.insert(l.session.clone(), l.t);
            }
        }
        let next = index.sessions.len();
        let place = match index.sessions.get_mut(&l.session) {
            Some(e) => {
                e.1 = line;
                e.0
            }
            None => {
                index.sessions.insert(l.session.clone(), (next, line));
                next
            }
        };
        for (p, plan) in plans.iter().enumerate() {
            if let Err(e) = validate(plan, &l) {
                if skip_invalid {
                    index.skipped[p].push(e);
                } else if first_error[p].as_ref().is_none_or(|(s, _)| place < *s) {
                    first_error[p] = Some((place, e));
                }
            }
        }
    }
    if let Some((_, e)) = first_error.into_iter().flatten().next() {
        return Err(e);
    }
    for s in &mut index.skipped {
        s.extend(index.parse_skipped.iter().cloned());
        s.sort_by_key(|e| e.line);
    }
    Ok(index)
}

/// A session closed by the second pass: its place in order of first
/// appearance, its id and its valid lines in file order.
#[derive(Debug, Clone)]
pub struct ClosedSession {
    /// Place in order of first appearance (0-based).
    pub index: usize,
    /// Session id.
    pub id: String,
    /// Its lines that parse and keep time order, in file order (lines naming
    /// an unknown tool or stage included: the replay skips them per plan).
    pub lines: Vec<TraceLine>,
}

#[cfg(feature = "parallel")]
fn run_batch<T: Send>(
    batch: Vec<ClosedSession>,
    work: &(impl Fn(ClosedSession) -> T + Sync),
) -> Vec<(usize, T)> {
    use rayon::prelude::*;
    batch.into_par_iter().map(|s| (s.index, work(s))).collect()
}

#[cfg(not(feature = "parallel"))]
fn run_batch<T: Send>(
    batch: Vec<ClosedSession>,
    work: &(impl Fn(ClosedSession) -> T + Sync),
) -> Vec<(usize, T)> {
    batch.into_iter().map(|s| (s.index, work(s))).collect()
}

/// The second pass: reads `reader` (the trace [`index_trace`] indexed) again,
/// runs `work` on every session once it is closed (in parallel batches with
/// the feature `parallel`), and calls `emit` with the results in order of
/// first appearance. `work` sees the same lines, in the same order, as the
/// in-memory replay's session loop; errors are only those of reading.
pub fn replay_sessions<T: Send>(
    reader: impl BufRead,
    index: &TraceIndex,
    work: impl Fn(ClosedSession) -> T + Sync,
    mut emit: impl FnMut(T),
) -> Result<(), TraceError> {
    let mut skip = index.parse_skipped.iter().map(|e| e.line).peekable();
    let mut open: HashMap<usize, ClosedSession> = HashMap::new();
    let mut batch: Vec<ClosedSession> = Vec::new();
    let mut done: BTreeMap<usize, T> = BTreeMap::new();
    let mut next = 0usize;
    let mut flush = |batch: &mut Vec<ClosedSession>, done: &mut BTreeMap<usize, T>| {
        for (i, t) in run_batch(std::mem::take(batch), &work) {
            done.insert(i, t);
        }
        while let Some(t) = done.remove(&next) {
            emit(t);
            next += 1;
        }
    };
    for (line, raw) in text_lines(reader) {
        let raw = raw?;
        if skip.peek() == Some(&line) {
            skip.next();
            continue;
        }
        if raw.trim().is_empty() {
            continue;
        }
        let l = parse_line(&raw, line)?;
        let Some(&(place, last)) = index.sessions.get(&l.session) else {
            return Err(TraceError {
                column: None,
                line,
                message: "the trace changed between the two passes".into(),
            });
        };
        let s = open.entry(place).or_insert_with(|| ClosedSession {
            index: place,
            id: l.session.clone(),
            lines: Vec::new(),
        });
        s.lines.push(l);
        if line == last {
            let s = open.remove(&place).expect("just inserted");
            batch.push(s);
            if batch.len() >= BATCH {
                flush(&mut batch, &mut done);
            }
        }
    }
    flush(&mut batch, &mut done);
    if !open.is_empty() || !done.is_empty() {
        return Err(TraceError {
            column: None,
            line: index.lines,
            message: "the trace changed between the two passes".into(),
        });
    }
    Ok(())
}
