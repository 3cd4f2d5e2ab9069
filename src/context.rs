//! The session context and usage state that activation scores are computed from.
//!
//! Field names follow seed 000's `SessionContext` dataclass. Time is always an
//! input: usage holds the times of the last calls on the caller's clock (seconds),
//! and `Plan::evaluate` takes `now` on the same clock.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

/// Seed 000 `SessionContext`: what is known about the session when tools are scored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionContext {
    /// Keywords of the user's latest message (explicit intent).
    #[serde(default)]
    pub user_intent_keywords: Vec<String>,
    /// Keywords of the earlier user messages, the most recent first (one list
    /// per message). Read only by policies with `[keywords.memory]`, which
    /// decide how many turns count and with what weight; the seed keeps none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_intent_keywords: Vec<Vec<String>>,
    /// The user's latest message as written (the text `user_intent_keywords`
    /// were extracted from), read only by policies with
    /// `[features.semantic_match] input = "message"`; `None` (a host that
    /// sends keywords only) embeds the keywords instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_message: Option<String>,
    /// The earlier user messages as written, the most recent first, one per
    /// list of `previous_intent_keywords` (the same index is the same turn);
    /// read only with `input = "message"` and `[keywords.memory]`. A turn
    /// missing here (a shorter list) or empty is embedded from its keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_user_messages: Vec<String>,
    /// Entities named in the message (file names, database names). Not scored by
    /// the seed's formula; kept for rules and explanations.
    #[serde(default)]
    pub user_intent_entities: Vec<String>,
    /// Conversation stage (`exploration`, `implementation`, `debugging`,
    /// `documentation` in the shipped policies); `None` matches no tool's stages.
    #[serde(default)]
    pub conversation_stage: Option<String>,
    /// Names of the most recent tool calls, oldest first (seed: the last 5).
    #[serde(default)]
    pub recent_tool_calls: Vec<String>,
    /// Seconds since the session started.
    #[serde(default)]
    pub session_duration_seconds: f64,
    /// Files open in the editor.
    #[serde(default)]
    pub active_files: Vec<String>,
    /// Programming language in use (`python`, `sql`, ...).
    #[serde(default)]
    pub active_language: Option<String>,
    /// Project type (`web`, `cli`, `library`, `data`).
    #[serde(default)]
    pub project_type: Option<String>,
}

/// Usage history of a session, keyed by tool name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageStats {
    /// Number of calls per tool. Their sum decides cold start.
    pub call_counts: HashMap<String, u64>,
    /// Time of each tool's last call, in seconds on the caller's clock (the clock
    /// of `now` given to evaluate). A tool absent here was never called and gets
    /// no recency bonus.
    pub last_call_at: HashMap<String, f64>,
    /// Usage frequency in \[0,1\] per tool, for policies whose usage
    /// normalisation is `frequency` (seed 000's `compute_activation_score`).
    pub usage_frequency: HashMap<String, f64>,
}

impl UsageStats {
    /// Total number of calls made in the session.
    pub fn total_calls(&self) -> u64 {
        self.call_counts
            .values()
            .fold(0u64, |a, b| a.saturating_add(*b))
    }
}

/// A session as an agent host keeps it: the context plus usage, updated on each
/// call (seed 000 `record_tool_call`).
#[derive(Debug, Clone, Default)]
pub struct Session {
    /// The current context; `recent_tool_calls` is maintained by [`Session::record_call`].
    pub context: SessionContext,
    /// Usage so far.
    pub usage: UsageStats,
    recent: VecDeque<String>,
}

impl Session {
    /// A new, empty session.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a new user message's intent keywords: the current keywords
    /// move to the front of `previous_intent_keywords`, which keeps at most
    /// `remember` lists (the policy's `[keywords.memory] turns`; 0 keeps none,
    /// as the seed does).
    pub fn user_message(&mut self, keywords: Vec<String>, remember: usize) {
        self.record_message(None, keywords, remember);
    }

    /// As [`Session::user_message`], keeping the message as written too:
    /// `text` becomes `user_message`, and the previous message's text moves
    /// to the front of `previous_user_messages` beside its keywords (for
    /// `[features.semantic_match] input = "message"`).
    pub fn user_message_text(&mut self, text: &str, keywords: Vec<String>, remember: usize) {
        self.record_message(Some(text.to_string()), keywords, remember);
    }

    fn record_message(&mut self, text: Option<String>, keywords: Vec<String>, remember: usize) {
        let ctx = &mut self.context;
        let old = std::mem::replace(&mut ctx.user_intent_keywords, keywords);
        let old_text = std::mem::replace(&mut ctx.user_message, text);
        let prev = &mut ctx.previous_intent_keywords;
        let prev_text = &mut ctx.previous_user_messages;
        if remember == 0 {
            prev.clear();
            prev_text.clear();
            return;
        }
        if prev.is_empty() && old.is_empty() {
            // the session's first message (or one with no keyword before
            // any): nothing to remember yet, as the seed's memory does
            return;
        }
        // The texts stay aligned with the keyword lists (a host that gave
        // some turns without text leaves those empty).
        prev_text.resize(prev.len(), String::new());
        prev.insert(0, old);
        prev_text.insert(0, old_text.unwrap_or_default());
        prev.truncate(remember);
        prev_text.truncate(remember);
        if prev_text.iter().all(String::is_empty) {
            prev_text.clear();
        }
    }

    /// Records a call of `tool` at time `at` (seconds, caller's clock), keeping
    /// at most `window` names in `recent_tool_calls` (the policy's
    /// `activation.recent_calls_window`, seed: 5).
    pub fn record_call(&mut self, tool: &str, at: f64, window: usize) {
        *self.usage.call_counts.entry(tool.to_string()).or_insert(0) += 1;
        self.usage.last_call_at.insert(tool.to_string(), at);
        self.recent.push_back(tool.to_string());
        while self.recent.len() > window {
            self.recent.pop_front();
        }
        self.context.recent_tool_calls = self.recent.iter().cloned().collect();
    }

    /// Replaces the recent calls (`recent`, oldest first), as a host that
    /// saved a session restores it; `context.recent_tool_calls` follows.
    pub fn restore_recent(&mut self, recent: Vec<String>) {
        self.recent = recent.into_iter().collect();
        self.context.recent_tool_calls = self.recent.iter().cloned().collect();
    }
}
