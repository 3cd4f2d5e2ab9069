//! Learning tool transitions from traces: how often tool B is called right
//! after tool A within a session (`toolgate fit --transitions-out FILE`).
//!
//! The counts are written as a TOML file that policies reference from
//! `[features.transition_match] file` (read by the loader,
//! `parse::selection::parse_transitions`): one `[after."A"]` table per tool
//! with `"B" = count` entries, sorted by name, so that a new file diffs well
//! against the old one. Smoothing is the policy's business
//! (`[features.transition_match] smoothing`), not the file's: the file holds
//! plain counts.

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::replay::fit::is_holdout;
use crate::replay::stream::{TraceIndex, replay_sessions};
use crate::replay::trace::{Event, Trace, TraceError, TraceLine};

/// Transition counts: from → to → count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TransitionCounts {
    /// `counts[a][b]`: calls of `b` right after a call of `a` in the same session.
    pub counts: BTreeMap<String, BTreeMap<String, u64>>,
    /// Sessions counted.
    pub sessions: usize,
    /// Pairs counted.
    pub pairs: u64,
}

/// Counts consecutive tool calls per session, over the sessions that are not
/// held out (`is_holdout(id, holdout)` false), so that a held-out replay
/// never sees its own transitions. Tool names are taken as written in the
/// trace.
pub fn learn_transitions(trace: &Trace, holdout: f64) -> TransitionCounts {
    let mut out = TransitionCounts::default();
    for (id, lines) in trace.sessions() {
        if is_holdout(id, holdout) {
            continue;
        }
        out.add_session(lines.iter().map(|&li| &trace.lines[li]));
    }
    out
}

/// [`learn_transitions`] on a trace read line by line: `reader` is the trace
/// that `index` indexed ([`crate::replay::stream::index_trace`]; no plan is
/// needed, tool names are taken as written). Sessions are counted as
/// [`replay_sessions`] closes them (in parallel with the feature
/// `parallel`) and the counts added up, so memory holds the open sessions'
/// lines and the counts (at most one entry per distinct pair of tools), not
/// the trace. The counts are the same as [`learn_transitions`]'s on the
/// trace held in memory, for any number of threads (sums of integers).
/// Errors: the trace cannot be read again or changed since it was indexed.
pub fn learn_transitions_stream(
    reader: impl BufRead,
    index: &TraceIndex,
    holdout: f64,
) -> Result<TransitionCounts, TraceError> {
    let mut out = TransitionCounts::default();
    replay_sessions(
        reader,
        index,
        |s| {
            (!is_holdout(&s.id, holdout)).then(|| {
                let mut c = TransitionCounts::default();
                c.add_session(&s.lines);
                c
            })
        },
        |c| {
            if let Some(c) = c {
                out.merge(c);
            }
        },
    )?;
    Ok(out)
}

impl TransitionCounts {
    /// Counts one session: `lines` are its lines in file order; every
    /// `tool_call` after another adds one to `counts[previous][this]`.
    pub fn add_session<'l>(&mut self, lines: impl IntoIterator<Item = &'l TraceLine>) {
        self.sessions += 1;
        let mut last: Option<&str> = None;
        for l in lines {
            if let Event::ToolCall { tool, .. } = &l.event {
                if let Some(a) = last {
                    *self
                        .counts
                        .entry(a.to_string())
                        .or_default()
                        .entry(tool.clone())
                        .or_insert(0) += 1;
                    self.pairs += 1;
                }
                last = Some(tool);
            }
        }
    }

    /// Adds `other`'s sessions, pairs and counts to these.
    pub fn merge(&mut self, other: TransitionCounts) {
        self.sessions += other.sessions;
        self.pairs += other.pairs;
        for (a, row) in other.counts {
            let mine = self.counts.entry(a).or_default();
            for (b, n) in row {
                *mine.entry(b).or_insert(0) += n;
            }
        }
    }
}

fn quoted(s: &str) -> String {
    // a TOML basic string
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if c.is_control() => o.push_str(&format!("\\u{:04X}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

impl TransitionCounts {
    /// The transitions file: a comment header (`source` says where the counts
    /// come from), then one `[after."A"]` table per tool, sorted by name.
    pub fn to_toml(&self, source: &str) -> String {
        let mut o = String::new();
        o.push_str("# Tool transitions: how often each tool was called right after another\n");
        o.push_str("# in the same session. Learned by `toolgate fit --transitions-out`;\n");
        o.push_str("# referenced by a policy's [features.transition_match] file.\n");
        for line in source.lines() {
            o.push_str(&format!("# {line}\n"));
        }
        o.push_str(&format!(
            "# {} sessions, {} transitions, {} distinct tools followed.\n",
            self.sessions,
            self.pairs,
            self.counts.len()
        ));
        for (a, row) in &self.counts {
            o.push_str(&format!("\n[after.{}]\n", quoted(a)));
            for (b, n) in row {
                o.push_str(&format!("{} = {n}\n", quoted(b)));
            }
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::SourceFile;
    use crate::parse::selection::parse_transitions;
    use crate::replay::trace::parse_trace;

    #[test]
    fn counts_consecutive_calls_and_round_trips() {
        let t = parse_trace(
            r#"{"session": "a", "t": 0, "event": "user_message", "text": "go"}
{"session": "a", "t": 1, "event": "tool_call", "tool": "cd"}
{"session": "b", "t": 1, "event": "tool_call", "tool": "cd"}
{"session": "a", "t": 2, "event": "tool_call", "tool": "ls"}
{"session": "a", "t": 3, "event": "user_message", "text": "and"}
{"session": "a", "t": 4, "event": "tool_call", "tool": "cd"}
{"session": "a", "t": 5, "event": "tool_call", "tool": "ls"}
{"session": "b", "t": 2, "event": "tool_call", "tool": "say \"hi\""}
"#,
            false,
        )
        .unwrap();
        let c = learn_transitions(&t, 0.0);
        assert_eq!(c.sessions, 2);
        assert_eq!(c.pairs, 4);
        assert_eq!(c.counts["cd"]["ls"], 2);
        assert_eq!(c.counts["ls"]["cd"], 1);
        assert_eq!(c.counts["cd"]["say \"hi\""], 1);
        let text = c.to_toml("from a test");
        let d = parse_transitions(SourceFile::new("t.toml", text.clone())).unwrap();
        assert_eq!(d.counts.len(), 3, "{text}");
        assert!(
            d.counts
                .iter()
                .any(|(a, b, n)| a == "cd" && b.value == "say \"hi\"" && *n == 1.0)
        );
        // Held-out sessions are not counted.
        let all_out = learn_transitions(&t, 1.0);
        assert_eq!((all_out.sessions, all_out.pairs), (0, 0));
    }
}
