//! BFCL's own way of judging selection: each question against its own
//! candidate functions (`questions.jsonl` of `toolgate import bfcl`, see
//! [`crate::replay::bfcl`]), not against the pooled catalog.
//!
//! Per question, the policy is compiled over the question's candidates (1 to
//! 37 tools) and its user messages are replayed as one turn without a call;
//! the active set at the end of that turn is what the agent would see
//! before its first call.
//!
//! * **Relevance** (questions with expected calls): the share of needed
//!   tools exposed (each expected name counts once per question), and the
//!   share of questions with every needed tool exposed.
//! * **Irrelevance** (questions with nothing expected): the share of
//!   questions for which nothing is exposed, and the tools exposed per
//!   question.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::compile::compile;
use crate::diag::LoadError;
use crate::parse::policy::PolicySource;
use crate::parse::tags::import_tools_json;
use crate::replay::engine::{ReplayOptions, replay};
use crate::replay::trace::parse_trace;

/// One line of `questions.jsonl`.
#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    /// BFCL question id (the session id of the traces).
    pub id: String,
    /// The BFCL file: `multiple`, `live_multiple` or `irrelevance`.
    pub set: String,
    /// The user messages of the question's first turn.
    pub messages: Vec<String>,
    /// The question's candidate functions (an OpenAI `tools` array).
    pub tools: Value,
    /// Names of the correct calls (empty: nothing fits).
    pub expected: Vec<String>,
}

/// Parses `questions.jsonl` (blank lines skipped); errors name the line.
pub fn parse_questions(text: &str) -> Result<Vec<Question>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// What one question exposes under a policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// Question id.
    pub id: String,
    /// Its BFCL file.
    pub set: String,
    /// Number of candidate functions.
    pub candidates: usize,
    /// Names of the exposed tools, best first.
    pub exposed: Vec<String>,
    /// Expected names.
    pub expected: Vec<String>,
}

impl Judged {
    /// Expected tools that are exposed.
    pub fn needed_exposed(&self) -> usize {
        self.expected
            .iter()
            .filter(|e| self.exposed.contains(e))
            .count()
    }
}

/// Compiles `policy` over the question's own candidates and returns the
/// active set after its user messages (no call made). Clear the policy's
/// examples first: they name tools of another catalog, and compiling runs
/// them.
pub fn judge(policy: &PolicySource, q: &Question) -> Result<Judged, LoadError> {
    let tools = import_tools_json(&format!("{}.json", q.id), &q.tools.to_string())?;
    let candidates = tools.len();
    let plan = Arc::new(compile(policy, tools)?);
    let mut trace = String::new();
    for m in &q.messages {
        trace.push_str(
            &serde_json::json!({"session": q.id, "t": 0, "event": "user_message", "text": m})
                .to_string(),
        );
        trace.push('\n');
    }
    let mut exposed = Vec::new();
    if let Ok(t) = parse_trace(&trace, false)
        && let Ok(r) = replay(
            &plan,
            &t,
            &ReplayOptions {
                skip_invalid: false,
                keep_active: true,
            },
        )
        && let Some(step) = r.steps.last()
    {
        exposed = step
            .active
            .iter()
            .map(|&i| plan.tools[i].name.clone())
            .collect();
    }
    Ok(Judged {
        id: q.id.clone(),
        set: q.set.clone(),
        candidates,
        exposed,
        expected: q.expected.clone(),
    })
}

/// Relevance and irrelevance over judged questions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuestionReport {
    /// Questions with expected calls.
    pub relevant: usize,
    /// Needed tools over those questions (distinct names per question).
    pub needed: usize,
    /// Of those, exposed.
    pub needed_exposed: usize,
    /// Relevant questions with every needed tool exposed.
    pub all_exposed: usize,
    /// Tools exposed over the relevant questions.
    pub relevant_sizes: Vec<usize>,
    /// Questions with nothing expected.
    pub irrelevant: usize,
    /// Of those, the ones exposing nothing.
    pub nothing_exposed: usize,
    /// Tools exposed over the irrelevant questions.
    pub irrelevant_sizes: Vec<usize>,
}

impl QuestionReport {
    /// Sums up `judged` (sizes sorted).
    pub fn of<'a>(judged: impl IntoIterator<Item = &'a Judged>) -> QuestionReport {
        let mut r = QuestionReport::default();
        for j in judged {
            if j.expected.is_empty() {
                r.irrelevant += 1;
                r.nothing_exposed += j.exposed.is_empty() as usize;
                r.irrelevant_sizes.push(j.exposed.len());
            } else {
                r.relevant += 1;
                r.needed += j.expected.len();
                let n = j.needed_exposed();
                r.needed_exposed += n;
                r.all_exposed += (n == j.expected.len()) as usize;
                r.relevant_sizes.push(j.exposed.len());
            }
        }
        r.relevant_sizes.sort_unstable();
        r.irrelevant_sizes.sort_unstable();
        r
    }

    /// Share of needed tools exposed, in \[0,1\].
    pub fn relevance(&self) -> f64 {
        ratio(self.needed_exposed, self.needed)
    }

    /// Share of irrelevant questions exposing nothing, in \[0,1\].
    pub fn irrelevance(&self) -> f64 {
        ratio(self.nothing_exposed, self.irrelevant)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}
