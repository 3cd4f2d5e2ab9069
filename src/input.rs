//! The JSON input of `toolgate eval` / `explain` and of policy examples.
//!
//! ```json
//! {
//!   "context": { "conversation_stage": "debugging", "active_language": "sql", ... },
//!   "message": "why does the users query return nothing?",
//!   "usage": { "call_counts": {"sqlite.read_query": 3},
//!              "seconds_since_last_call": {"sqlite.read_query": 40.0},
//!              "usage_frequency": {} },
//!   "tools": [ { "name": "...", "domains": [...], ... } ],
//!   "now": 0.0
//! }
//! ```
//!
//! Every key is optional. `message` is raw user text: its extracted keywords
//! (the policy's `[keywords]`) are appended to `context.user_intent_keywords`.
//! `tools`, when present, replaces the catalog (each tool with inline tags, or
//! without tags to be auto-tagged). The keys of a seed-vector line (`id`,
//! `preset`, `expected`) are accepted and ignored, so a vector can be fed as is.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use crate::context::{SessionContext, UsageStats};
use crate::parse::tags::InlineTool;
use crate::plan::Plan;

/// Usage as given in an input: counts, seconds since the last call, frequencies.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageInput {
    /// Calls per tool.
    #[serde(default)]
    pub call_counts: BTreeMap<String, f64>,
    /// Seconds since each tool's last call (relative to `now`).
    #[serde(default)]
    pub seconds_since_last_call: BTreeMap<String, f64>,
    /// Usage frequency in \[0,1\] per tool.
    #[serde(default)]
    pub usage_frequency: BTreeMap<String, f64>,
}

/// One evaluation input (see the module docs).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalInput {
    /// The session context.
    #[serde(default)]
    pub context: SessionContext,
    /// Raw user message.
    #[serde(default)]
    pub message: Option<String>,
    /// Usage.
    #[serde(default)]
    pub usage: UsageInput,
    /// A catalog replacing the plan's.
    #[serde(default)]
    pub tools: Option<Vec<InlineTool>>,
    /// The current time, seconds (default 0: then `seconds_since_last_call` are plain ages).
    #[serde(default)]
    pub now: f64,
    /// Seed-vector id (ignored).
    #[serde(default)]
    pub id: Option<serde_json::Value>,
    /// Seed-vector preset (ignored).
    #[serde(default)]
    pub preset: Option<serde_json::Value>,
    /// Seed-vector expectations (ignored).
    #[serde(default)]
    pub expected: Option<serde_json::Value>,
}

impl EvalInput {
    /// Parses an input from JSON text; errors carry line and column.
    pub fn parse(text: &str) -> Result<Self, String> {
        let at = |e: serde_json::Error| {
            format!(
                "invalid input JSON at line {}, column {}: {e}",
                e.line(),
                e.column()
            )
        };
        let v: serde_json::Value = serde_json::from_str(text).map_err(at)?;
        if !v.is_object() {
            return Self::from_json(&v);
        }
        let input: EvalInput = serde_json::from_str(text).map_err(at)?;
        for t in input.tools.iter().flatten() {
            t.check()?;
        }
        Ok(input)
    }

    /// Parses an input from a JSON value.
    pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
        if !v.is_object() {
            return Err("the input must be a JSON object with the optional keys context, message, usage, tools and now".into());
        }
        let input: EvalInput =
            serde_json::from_value(v.clone()).map_err(|e| format!("invalid input: {e}"))?;
        for t in input.tools.iter().flatten() {
            t.check()?;
        }
        Ok(input)
    }

    /// Checks the input against `plan` and turns it into the engine's types:
    /// the context (message keywords appended), usage stats and `now`.
    /// Errors: an undeclared stage, a usage entry for an unknown tool, a negative
    /// or non-finite number.
    pub fn resolve(&self, plan: &Arc<Plan>) -> Result<(SessionContext, UsageStats, f64), String> {
        let mut ctx = self.context.clone();
        if !self.now.is_finite() {
            return Err("`now` must be a finite number of seconds".into());
        }
        if !ctx.session_duration_seconds.is_finite() || ctx.session_duration_seconds < 0.0 {
            return Err("`context.session_duration_seconds` must be a finite number >= 0".into());
        }
        if let Some(stage) = &ctx.conversation_stage
            && plan.stage_index(stage).is_none()
        {
            let hint = crate::diag::did_you_mean(stage, plan.stages.iter().map(|s| s.as_str()))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "conversation stage `{stage}` is not declared by the policy; declared: {}{hint}",
                plan.stages.join(", ")
            ));
        }
        if let Some(m) = &self.message {
            ctx.user_intent_keywords.extend(plan.analyzer.extract(m));
        }
        let check_tool = |name: &str, what: &str| -> Result<(), String> {
            if plan.tool_index(name).is_some() {
                return Ok(());
            }
            let hint = crate::diag::did_you_mean(name, plan.by_name.keys().map(|s| s.as_str()))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            Err(format!(
                "usage.{what} names `{name}`, which is not in the catalog{hint}"
            ))
        };
        let mut usage = UsageStats::default();
        for (k, &v) in &self.usage.call_counts {
            check_tool(k, "call_counts")?;
            if !(v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64) {
                return Err(format!(
                    "usage.call_counts[`{k}`] must be a whole number >= 0, found {v}"
                ));
            }
            usage.call_counts.insert(k.clone(), v as u64);
        }
        for (k, &v) in &self.usage.seconds_since_last_call {
            check_tool(k, "seconds_since_last_call")?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!(
                    "usage.seconds_since_last_call[`{k}`] must be a finite number >= 0, found {v}"
                ));
            }
            usage.last_call_at.insert(k.clone(), self.now - v);
        }
        for (k, &v) in &self.usage.usage_frequency {
            check_tool(k, "usage_frequency")?;
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return Err(format!(
                    "usage.usage_frequency[`{k}`] must be within [0, 1], found {v}"
                ));
            }
            usage.usage_frequency.insert(k.clone(), v);
        }
        Ok((ctx, usage, self.now))
    }
}
