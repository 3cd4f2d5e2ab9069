//! One client session of the proxy: the context it learnt (from `_meta`,
//! roots, searches and calls), the tools a search found, and what the client
//! was last told is listed.
//!
//! What a session lists is the union of
//!
//! 1. the proxy's own tools (`find_tools`, `call_tool`, when enabled);
//! 2. the plan's active set for the session's context — under an empty
//!    context that is the policy's cold-start set: the pinned tools, then
//!    `min_active` tools by score (and whatever passes the threshold);
//! 3. the tools the last search found, until a later search replaces them or
//!    the policy's `[discovery] expiry_seconds` / `expiry_calls` move them out;
//!
//! minus the tools withheld because their definition changed (see
//! [`super::pins`]).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use crate::context::{Session, SessionContext};
use crate::eval::Activation;
use crate::parse::discovery::DiscoveryParams;

use super::context::ProjectInfo;

/// A tool a search found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    /// Catalog name (`server.tool`), so it survives a catalog rebuild.
    pub tool: String,
    /// Session time (seconds) it was found or last called.
    pub since: f64,
    /// Calls of other tools since then.
    pub calls: u64,
}

/// The session as the proxy keeps it.
pub(crate) struct SessionState {
    /// When the session began: session time (seconds, [`SessionState::now`])
    /// counts from here.
    pub started: Instant,
    /// Context given by the client in `_meta`.
    pub client: SessionContext,
    /// What the roots tell.
    pub project: ProjectInfo,
    /// The roots' directories.
    pub roots: Vec<PathBuf>,
    /// Usage and recent calls.
    pub session: Session,
    /// Keywords from the string arguments of the last forwarded call
    /// (`[discovery] intent_from_calls`).
    pub call_keywords: Vec<String>,
    /// The tools the last search found.
    pub found: Vec<Found>,
    /// The last evaluation (for hysteresis).
    pub last: Option<Activation>,
    /// Changed definitions this session's user confirmed (catalog name ->
    /// definition hash) while the proxy serves several sessions: trusted in
    /// this session only (see [`super::pins`]).
    pub accepted: rustc_hash::FxHashMap<String, String>,
    /// The exposed names listed as of the last `notifications/tools/list_changed`
    /// (or of the first `tools/list` answer): a change from it is announced.
    pub announced: Option<BTreeSet<String>>,
    /// The level the client set with `logging/setLevel` (`None`: not set).
    #[allow(deprecated)] // logging: deprecated by SEP-2577, current before it
    pub log_level: Option<rmcp::model::LoggingLevel>,
    /// What the shadow policy keeps of this session ([`super::shadow`]).
    pub shadow: super::shadow::SessionShadow,
    /// What the `[gate.flow]` rules remember of this session's calls.
    pub flow: crate::gate::flow::FlowHistory,
}

impl Default for SessionState {
    fn default() -> Self {
        SessionState {
            started: Instant::now(),
            client: SessionContext::default(),
            project: ProjectInfo::default(),
            roots: Vec::new(),
            session: Session::default(),
            call_keywords: Vec::new(),
            found: Vec::new(),
            last: None,
            accepted: Default::default(),
            announced: None,
            log_level: None,
            shadow: Default::default(),
            flow: Default::default(),
        }
    }
}

impl SessionState {
    /// Session time now: seconds since the session began.
    pub fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The context evaluations see at session time `now` (seconds).
    pub fn effective_context(&self, now: f64) -> SessionContext {
        let mut c = self.client.clone();
        if c.active_language.is_none() {
            c.active_language = self.project.language.clone();
        }
        if c.project_type.is_none() {
            c.project_type = self.project.project_type.clone();
        }
        c.user_intent_keywords
            .extend(self.call_keywords.iter().cloned());
        c.recent_tool_calls = self.session.context.recent_tool_calls.clone();
        c.session_duration_seconds = now;
        c
    }

    /// Records a forwarded call of `tool` (catalog name) at `now`: usage,
    /// recency, and the found tools' expiry clocks. A called tool joins the
    /// found set (the model uses it, so it stays listed until the policy's
    /// expiry moves it out), whether it was found, listed by the policy, or
    /// called by name.
    pub fn record_call(&mut self, tool: &str, now: f64, window: usize) {
        self.session.record_call(tool, now, window);
        let mut seen = false;
        for f in &mut self.found {
            if f.tool == tool {
                f.since = now;
                f.calls = 0;
                seen = true;
            } else {
                f.calls += 1;
            }
        }
        if !seen {
            self.found.push(Found {
                tool: tool.to_string(),
                since: now,
                calls: 0,
            });
        }
    }

    /// Replaces the found set (a new search).
    pub fn set_found(&mut self, tools: Vec<String>, now: f64) {
        self.found = tools
            .into_iter()
            .map(|tool| Found {
                tool,
                since: now,
                calls: 0,
            })
            .collect();
    }

    /// Drops the found tools the policy's expiry moved out at `now`;
    /// returns whether any left.
    pub fn expire(&mut self, params: &DiscoveryParams, now: f64) -> bool {
        let before = self.found.len();
        self.found.retain(|f| !expired(f, params, now));
        self.found.len() != before
    }

    /// Seconds from `now` until the next found tool expires by time, if any.
    pub fn next_expiry(&self, params: &DiscoveryParams, now: f64) -> Option<f64> {
        let e = params.expiry_seconds?;
        self.found
            .iter()
            .map(|f| (f.since + e - now).max(0.0))
            .min_by(|a, b| a.total_cmp(b))
    }
}

fn expired(f: &Found, params: &DiscoveryParams, now: f64) -> bool {
    params.expiry_seconds.is_some_and(|e| now - f.since >= e)
        || params.expiry_calls.is_some_and(|n| f.calls >= n)
}

/// The strings of a call's arguments (every string value, at any depth, and
/// no key), joined by spaces: the text `intent_from_calls` extracts keywords
/// from.
pub(crate) fn argument_text(args: &serde_json::Value) -> String {
    fn walk(v: &serde_json::Value, out: &mut String) {
        match v {
            serde_json::Value::String(s) => {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(s);
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            serde_json::Value::Object(m) => m.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    walk(args, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_tools_expire_by_time_and_by_calls() {
        let mut st = SessionState::default();
        st.set_found(vec!["a.x".into(), "a.y".into()], 10.0);
        let by_time = DiscoveryParams {
            expiry_seconds: Some(60.0),
            ..Default::default()
        };
        assert_eq!(st.next_expiry(&by_time, 20.0), Some(50.0));
        st.record_call("a.x", 30.0, 5);
        assert!(st.expire(&by_time, 70.0), "a.y: found at 10, 60 s");
        assert_eq!(st.found.len(), 1);
        assert_eq!(st.found[0].tool, "a.x");
        assert!(!st.expire(&by_time, 89.0));
        assert!(st.expire(&by_time, 90.0));
        let by_calls = DiscoveryParams {
            expiry_calls: Some(2),
            ..Default::default()
        };
        st.set_found(vec!["a.x".into(), "a.y".into()], 0.0);
        st.record_call("a.z", 1.0, 5); // a.z, called, joins the found set
        assert!(!st.expire(&by_calls, 1.5), "one call of another tool");
        let names = |st: &SessionState| st.found.iter().map(|f| f.tool.clone()).collect::<Vec<_>>();
        assert_eq!(names(&st), ["a.x", "a.y", "a.z"]);
        st.record_call("a.x", 2.0, 5); // a.x used: its count restarts
        assert!(st.expire(&by_calls, 2.5), "a.y: two calls of other tools");
        assert_eq!(names(&st), ["a.x", "a.z"]);
        st.record_call("a.z", 3.0, 5);
        st.record_call("a.z", 4.0, 5);
        assert!(st.expire(&by_calls, 5.0));
        assert_eq!(names(&st), ["a.z"], "a.x after two calls since it was used");
        assert!(!st.expire(&DiscoveryParams::default(), 1e9));
    }

    #[test]
    fn argument_text_takes_string_values_only() {
        let v = serde_json::json!({"query": "SELECT name FROM users", "n": 3,
            "opts": {"path": "/tmp/report.csv", "flags": ["fast", true]}});
        let t = argument_text(&v);
        assert!(
            t.contains("SELECT name FROM users")
                && t.contains("/tmp/report.csv")
                && t.contains("fast")
        );
        assert!(!t.contains("query") && !t.contains('3'));
    }

    #[test]
    fn call_keywords_join_the_intent() {
        let mut st = SessionState::default();
        st.client.user_intent_keywords = vec!["tables".into()];
        st.call_keywords = vec!["users".into()];
        let c = st.effective_context(5.0);
        assert_eq!(c.user_intent_keywords, ["tables", "users"]);
        assert_eq!(c.session_duration_seconds, 5.0);
    }
}
