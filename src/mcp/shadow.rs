//! The shadow policy (`mcp-proxy --shadow-policy FILE`, `shadow_policy`):
//! every decision the live policy makes is made again under a second
//! policy, which is never enforced. What the client sees, what is called
//! and what is audited come from the live policy only; the shadow's
//! decisions are compared with the live ones:
//!
//! * the **active set** of each `tools/list` answer: the tools the policy
//!   activates for the session's context (found and called tools, which do
//!   not depend on the policy, are left out of the comparison);
//! * the **verdict** (allow / ask / deny) of each `tools/call`: the call
//!   gate's and the data-flow rules', and the policy's refusals before and
//!   after the gate (a changed definition, `[discovery]
//!   on_definition_change`; a tool not listed in the session while `[gate]
//!   allow_inactive_calls = false`, so a tool the live policy withholds and
//!   the shadow lists is a difference; an unknown name). Refusals no policy
//!   decides (integers beyond 64 bits, an invalid definition) are counted
//!   as compared and never differ ([`decide`]);
//! * the **result list** of each `toolgate__find_tools` search: the same
//!   query in the same session under the shadow plan; other tools or another
//!   order is a difference.
//!
//! Each comparison is counted (`toolgate_shadow_decisions_total{kind}`),
//! each difference too (`toolgate_shadow_diffs_total{kind}`, `kind` =
//! `list`, `call` or `find`) and logged. With a shadow log (`--shadow-log FILE`,
//! `shadow_log`) the sessions are written in the trace format
//! (docs/trace-format.md) — their `context` and `user_message` changes and
//! their forwarded `tool_call`s, without arguments — with every difference
//! as a `shadow` event, so that `toolgate compare --policy-a LIVE
//! --policy-b SHADOW --trace FILE` replays the recorded traffic under both.
//!
//! The shadow plan is compiled from the shadow policy, the live tool tags
//! and the servers' live tools, and reloaded like the live one (the crate's
//! [`Reloader`]: events or polling, settled reads). A shadow edit that does
//! not load is logged with every `file:line:column` diagnostic and counted
//! (`toolgate_shadow_loads_total{outcome="error"}`); the last good shadow
//! plan keeps serving.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::diag::LoadError;
use crate::eval::Activation;
use crate::load::{SELECTION_POLICY, Sources};
use crate::reload::{LoadAttempt, ReloadOptions, Reloader, WatchGuard};

use super::catalog::{Catalog, CatalogCompiler, Naming, ServerTools};
use super::metrics::Metrics;
use super::proxy::lock;
use super::session::SessionState;
use super::source::PlanInputs;

mod decide;
pub(crate) use decide::{LiveCall, would_list};

/// What the shadow remembers of one session: its own last evaluation (for
/// hysteresis) and the context last written to the shadow log.
#[derive(Default)]
pub(crate) struct SessionShadow {
    last: Option<Activation>,
    written: Option<Written>,
}

/// The context of a session as last written to the shadow log.
#[derive(Default, Clone, PartialEq)]
struct Written {
    stage: Option<String>,
    language: Option<String>,
    project_type: Option<String>,
    active_files: Vec<String>,
    entities: Vec<String>,
    keywords: Vec<String>,
}

/// The shadow policy of a proxy (see the module docs).
pub struct Shadow {
    reloader: Reloader,
    guard: Mutex<Option<WatchGuard>>,
    compiler: Mutex<CatalogCompiler>,
    catalog: ArcSwapOption<Catalog>,
    changed: watch::Sender<u64>,
    log: Option<ShadowLog>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Shadow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shadow")
            .field("reloader", &self.reloader)
            .finish_non_exhaustive()
    }
}

/// The shadow log: JSON lines in the trace format, appended and flushed
/// per write.
struct ShadowLog {
    path: PathBuf,
    file: Mutex<std::io::BufWriter<std::fs::File>>,
}

impl ShadowLog {
    fn open(path: &Path) -> std::io::Result<Self> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(ShadowLog {
            path: path.to_path_buf(),
            file: Mutex::new(std::io::BufWriter::new(f)),
        })
    }

    fn write(&self, lines: &[Value]) {
        if lines.is_empty() {
            return;
        }
        let mut buf = Vec::new();
        for l in lines {
            if serde_json::to_writer(&mut buf, l).is_ok() {
                buf.push(b'\n');
            }
        }
        let mut f = lock(&self.file);
        if let Err(e) = f.write_all(&buf).and_then(|_| f.flush()) {
            tracing::error!(path = %self.path.display(), error = %e, "cannot write the shadow log");
        }
    }
}

/// Why a shadow policy could not be set up.
#[derive(Debug)]
pub enum ShadowError {
    /// The shadow policy (or the tags with it) does not load.
    Load(LoadError),
    /// The shadow log cannot be opened, or the files cannot be watched.
    Other(String),
}

impl std::fmt::Display for ShadowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShadowError::Load(e) => {
                for d in &e.diagnostics {
                    writeln!(f, "shadow policy: {d}")?;
                }
                Ok(())
            }
            ShadowError::Other(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for ShadowError {}

impl Shadow {
    /// Loads the shadow `policy` with the live `tags` (`None`: the embedded
    /// ones), polling every `poll` (else file-system events, or the
    /// policy's `[reload]`), and opens the shadow `log` if one is given.
    /// Fails with every diagnostic when the policy does not load.
    pub fn open(
        policy: &Path,
        tags: Option<&Path>,
        poll: Option<Duration>,
        log: Option<&Path>,
        metrics: Arc<Metrics>,
    ) -> Result<Arc<Shadow>, ShadowError> {
        let mut options = ReloadOptions::new(Sources {
            policy: Some(policy.to_path_buf()),
            tags: tags.map(Path::to_path_buf),
            tools: Vec::new(),
        });
        options.default_policy = SELECTION_POLICY;
        options.poll_interval = poll;
        let reloader = Reloader::new(options).map_err(ShadowError::Load)?;
        let log = log
            .map(|p| {
                ShadowLog::open(p).map_err(|e| {
                    ShadowError::Other(format!("cannot open the shadow log {}: {e}", p.display()))
                })
            })
            .transpose()?;
        metrics.shadow_loaded(true);
        Ok(Arc::new(Shadow {
            reloader,
            guard: Mutex::new(None),
            compiler: Mutex::new(CatalogCompiler::default()),
            catalog: ArcSwapOption::empty(),
            changed: watch::Sender::new(1),
            log,
            metrics,
        }))
    }

    /// Starts watching the shadow policy (and the tags), and a thread that
    /// reports each load attempt: a new shadow plan is announced on
    /// [`Shadow::subscribe`]; a rejected one is logged with its diagnostics
    /// and counted, and the last good one stays. Stops when dropped.
    pub fn watch(self: &Arc<Self>) -> Result<(), ShadowError> {
        let attempts = self.reloader.subscribe_attempts();
        let guard = self
            .reloader
            .watch()
            .map_err(|e| ShadowError::Other(format!("cannot watch the shadow policy: {e}")))?;
        *lock(&self.guard) = Some(guard);
        let weak = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("toolgate-shadow-source".into())
            .spawn(move || {
                loop {
                    match attempts.recv_timeout(Duration::from_millis(250)) {
                        Ok(LoadAttempt::Loaded(ev)) => {
                            let Some(s) = weak.upgrade() else { return };
                            tracing::info!(version = ev.version, "shadow policy changed: reloaded");
                            s.metrics.shadow_loaded(true);
                            s.changed.send_replace(ev.version);
                        }
                        Ok(LoadAttempt::Rejected(r)) => {
                            let Some(s) = weak.upgrade() else { return };
                            s.metrics.shadow_loaded(false);
                            tracing::error!(
                                problems = r.error.diagnostics.len(),
                                "the changed shadow policy does not load; keeping the last good shadow plan"
                            );
                            for d in &r.error.diagnostics {
                                tracing::error!("shadow policy: {d}");
                            }
                        }
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                            if weak.strong_count() == 0 {
                                return;
                            }
                        }
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
            })
            .map_err(|e| ShadowError::Other(format!("cannot start the shadow thread: {e}")))?;
        Ok(())
    }

    /// A receiver whose value changes when a new shadow policy loaded.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The reloader of the shadow policy (status, last error).
    pub fn reloader(&self) -> &Reloader {
        &self.reloader
    }

    /// The compiled shadow catalog (`None` until one compiled).
    pub fn catalog(&self) -> Option<Arc<Catalog>> {
        self.catalog.load_full()
    }

    /// Compiles the shadow catalog from the shadow policy, the tags and
    /// `servers`' tools; on failure the previous one stays (and the error
    /// is logged).
    pub(crate) fn rebuild(&self, servers: &[ServerTools], naming: &Naming) {
        let mut compiler = lock(&self.compiler);
        let inputs = self.reloader.inputs();
        let plan_inputs = PlanInputs {
            policy: inputs.policy.clone(),
            tags: inputs.tags().cloned().collect(),
            version: self.reloader.version(),
        };
        match compiler.build(&plan_inputs, servers, naming) {
            Ok(c) => self.catalog.store(Some(Arc::new(c))),
            Err(e) => {
                for d in &e.diagnostics {
                    tracing::error!(
                        "the shadow catalog does not compile; keeping the previous one: {d}"
                    );
                }
            }
        }
    }

    /// The trace lines that bring the shadow log's copy of session `st`'s
    /// context up to date (a `context` event and a `user_message` whose
    /// text is the intent keywords), at session time `t`.
    fn context_lines(st: &mut SessionState, session: &str, t: f64, out: &mut Vec<Value>) {
        let now = Written {
            stage: st.client.conversation_stage.clone(),
            language: st
                .client
                .active_language
                .clone()
                .or_else(|| st.project.language.clone()),
            project_type: st
                .client
                .project_type
                .clone()
                .or_else(|| st.project.project_type.clone()),
            active_files: st.client.active_files.clone(),
            entities: st.client.user_intent_entities.clone(),
            keywords: st.client.user_intent_keywords.clone(),
        };
        let before = st.shadow.written.take().unwrap_or_default();
        let mut ctx = serde_json::Map::new();
        let mut put = |k: &str, changed: bool, v: Value| {
            if changed {
                ctx.insert(k.into(), v);
            }
        };
        put("stage", now.stage != before.stage, json!(now.stage));
        put(
            "language",
            now.language != before.language,
            json!(now.language),
        );
        put(
            "project_type",
            now.project_type != before.project_type,
            json!(now.project_type),
        );
        put(
            "active_files",
            now.active_files != before.active_files,
            json!(now.active_files),
        );
        put(
            "entities",
            now.entities != before.entities,
            json!(now.entities),
        );
        if !ctx.is_empty() {
            ctx.insert("session".into(), json!(session));
            ctx.insert("t".into(), json!(t));
            ctx.insert("event".into(), json!("context"));
            out.push(Value::Object(ctx));
        }
        if now.keywords != before.keywords {
            out.push(json!({"session": session, "t": t, "event": "user_message",
                "text": now.keywords.join(" ")}));
        }
        st.shadow.written = Some(now);
    }

    /// A `tools/list` answer: compares the live active set (`st.last`, just
    /// evaluated under `live`) with the shadow's for the same session.
    pub(crate) fn list(&self, st: &mut SessionState, session: &str, live: &Catalog) {
        let Some(cat) = self.catalog.load_full() else {
            return;
        };
        let Some(live_act) = st.last.as_ref() else {
            return;
        };
        let now = st.now();
        let ctx = st.effective_context(now);
        let act =
            cat.plan
                .evaluate_with_previous(&ctx, &st.session.usage, now, st.shadow.last.as_ref());
        let active = |a: &Activation, c: &Catalog| -> Vec<String> {
            a.tools
                .iter()
                .filter(|t| t.active)
                .map(|t| c.plan.tools[t.tool].name.clone())
                .collect()
        };
        let live_on = active(live_act, live);
        let shadow_on = active(&act, &cat);
        st.shadow.last = Some(act);
        self.metrics.shadow_decision("list");
        let live_only: Vec<&String> = live_on.iter().filter(|n| !shadow_on.contains(n)).collect();
        let shadow_only: Vec<&String> = shadow_on.iter().filter(|n| !live_on.contains(n)).collect();
        let differs = !live_only.is_empty() || !shadow_only.is_empty();
        if differs {
            self.metrics.shadow_diff("list");
            tracing::info!(
                session,
                ?live_only,
                ?shadow_only,
                "shadow policy: another active set"
            );
        }
        if let Some(log) = &self.log {
            let mut lines = Vec::new();
            Self::context_lines(st, session, now, &mut lines);
            if differs {
                lines.push(
                    json!({"session": session, "t": now, "event": "shadow", "kind": "list",
                    "live_only": live_only, "shadow_only": shadow_only}),
                );
            }
            log.write(&lines);
        }
    }

    /// A forwarded call of `tool` (catalog name) ended with `outcome`: a
    /// `tool_call` line of the shadow log (without its arguments).
    pub(crate) fn called(&self, st: &mut SessionState, session: &str, tool: &str, outcome: &str) {
        if let Some(log) = &self.log {
            let now = st.now();
            let mut lines = Vec::new();
            Self::context_lines(st, session, now, &mut lines);
            lines.push(json!({"session": session, "t": now, "event": "tool_call",
                "tool": tool, "outcome": outcome}));
            log.write(&lines);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_lines_write_only_what_changed() {
        let mut st = SessionState::default();
        let mut out = Vec::new();
        Shadow::context_lines(&mut st, "s", 0.0, &mut out);
        assert!(out.is_empty(), "an empty context writes nothing: {out:?}");
        st.client.conversation_stage = Some("debugging".into());
        st.client.user_intent_keywords = vec!["users".into(), "query".into()];
        Shadow::context_lines(&mut st, "s", 1.0, &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0]["event"], "context");
        assert_eq!(out[0]["stage"], "debugging");
        assert!(out[0].get("language").is_none(), "{:?}", out[0]);
        assert_eq!(out[1]["event"], "user_message");
        assert_eq!(out[1]["text"], "users query");
        out.clear();
        Shadow::context_lines(&mut st, "s", 2.0, &mut out);
        assert!(out.is_empty(), "nothing changed: {out:?}");
        st.client.conversation_stage = None;
        Shadow::context_lines(&mut st, "s", 3.0, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["stage"], Value::Null, "a cleared stage is null");
    }
}
