//! The plan-source seam: where the proxy gets the policy and the tool tags,
//! and how it learns that they changed.
//!
//! The proxy compiles its own [`Plan`](crate::plan::Plan) from these inputs plus
//! the tools it discovered downstream, so a source hands out the *parsed*
//! inputs ([`PlanInputs`]), checked by a trial compile, and a change counter
//! to [`subscribe`](PlanSource::subscribe) to. [`ReloadingPlanSource`] gets
//! them from [`crate::reload::Reloader`] (file-system events or polling).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::diag::LoadError;
use crate::parse::policy::PolicySource;
use crate::parse::tags::ToolSpec;
use crate::reload::{LoadAttempt, ReloadOptions, Reloader, WatchGuard};

/// A parsed policy and tool-tag catalog.
#[derive(Debug, Clone)]
pub struct PlanInputs {
    /// The policy.
    pub policy: PolicySource,
    /// The tool tags (semantic and gate tags by `server.tool` name).
    pub tags: Vec<ToolSpec>,
    /// Increases by one on every change (starts at 1).
    pub version: u64,
}

/// Hands out the current [`PlanInputs`] and signals changes.
pub trait PlanSource: Send + Sync + 'static {
    /// The inputs now.
    fn current(&self) -> Arc<PlanInputs>;
    /// A receiver whose value (the inputs' version) changes when they do.
    fn subscribe(&self) -> watch::Receiver<u64>;
}

/// Inputs that never change.
#[derive(Debug)]
pub struct StaticPlanSource {
    inputs: Arc<PlanInputs>,
    tx: watch::Sender<u64>,
}

impl StaticPlanSource {
    /// Wraps fixed inputs.
    pub fn new(policy: PolicySource, tags: Vec<ToolSpec>) -> Self {
        StaticPlanSource {
            inputs: Arc::new(PlanInputs {
                policy,
                tags,
                version: 1,
            }),
            tx: watch::Sender::new(1),
        }
    }
}

impl PlanSource for StaticPlanSource {
    fn current(&self) -> Arc<PlanInputs> {
        self.inputs.clone()
    }
    fn subscribe(&self) -> watch::Receiver<u64> {
        self.tx.subscribe()
    }
}

/// The plan source of the built-in proxy: a [`Reloader`] over the policy
/// file and the tags directory (the one reload path of the crate: settled
/// reads, last good plan, status). It watches file-system events, or polls
/// with [`ReloadOptions::poll_interval`] (`--poll-ms`); a change that does
/// not load is logged with every diagnostic and the previous inputs stay in
/// force. Embedded defaults never change and are not watched.
pub struct ReloadingPlanSource {
    reloader: Reloader,
    current: ArcSwap<PlanInputs>,
    tx: watch::Sender<u64>,
    guard: Mutex<Option<WatchGuard>>,
}

impl std::fmt::Debug for ReloadingPlanSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadingPlanSource")
            .field("reloader", &self.reloader)
            .finish()
    }
}

impl ReloadingPlanSource {
    /// Loads the inputs once; fails with every diagnostic when they do not load.
    pub fn new(options: ReloadOptions) -> Result<Self, LoadError> {
        let reloader = Reloader::new(options)?;
        let inputs = reloader.inputs();
        Ok(ReloadingPlanSource {
            current: ArcSwap::from_pointee(PlanInputs {
                policy: inputs.policy.clone(),
                tags: inputs.tags().cloned().collect(),
                version: reloader.version(),
            }),
            reloader,
            tx: watch::Sender::new(1),
            guard: Mutex::new(None),
        })
    }

    /// The reloader (status, version, last error).
    pub fn reloader(&self) -> &Reloader {
        &self.reloader
    }

    /// Whether any file can change (a policy file or a tags directory was given).
    pub fn watches_files(&self) -> bool {
        let s = self.reloader.sources();
        s.policy.is_some() || s.tags.is_some()
    }

    /// Starts watching the files (nothing to do for embedded defaults), and a
    /// thread that hands every load attempt to the proxy. Stops when the
    /// source is dropped.
    pub fn watch(self: &Arc<Self>) -> Result<(), String> {
        if !self.watches_files() {
            return Ok(());
        }
        let attempts = self.reloader.subscribe_attempts();
        let guard = self
            .reloader
            .watch()
            .map_err(|e| format!("cannot watch the policy and tags: {e}"))?;
        tracing::info!(mode = ?guard.mode(), "watching the policy and tool tags");
        *self.guard.lock().unwrap_or_else(|p| p.into_inner()) = Some(guard);
        self.take(); // a change between the first load and the watch
        let weak = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("toolgate-plan-source".into())
            .spawn(move || {
                loop {
                    match attempts.recv_timeout(Duration::from_millis(250)) {
                        Ok(LoadAttempt::Loaded(ev)) => {
                            let Some(src) = weak.upgrade() else { return };
                            tracing::info!(version = ev.version, "policy or tool tags changed: reloaded");
                            src.take();
                        }
                        Ok(LoadAttempt::Rejected(r)) => {
                            tracing::error!(
                                problems = r.error.diagnostics.len(),
                                "the changed policy or tool tags do not load; keeping the previous ones"
                            );
                            for d in &r.error.diagnostics {
                                tracing::error!("{d}");
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
            .map_err(|e| format!("cannot start the plan-source thread: {e}"))?;
        Ok(())
    }

    /// Takes the reloader's inputs when their version moved.
    fn take(&self) {
        let version = self.reloader.version();
        if version == self.current.load().version {
            return;
        }
        let inputs = self.reloader.inputs();
        self.current.store(Arc::new(PlanInputs {
            policy: inputs.policy.clone(),
            tags: inputs.tags().cloned().collect(),
            version,
        }));
        self.tx.send_replace(version);
    }
}

impl PlanSource for ReloadingPlanSource {
    fn current(&self) -> Arc<PlanInputs> {
        self.current.load_full()
    }
    fn subscribe(&self) -> watch::Receiver<u64> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Sources;

    fn wait_for(mut cond: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(std::time::Instant::now() < deadline, "timed out");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn reloads_through_the_reloader_and_keeps_old_inputs_on_error() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("policy.toml");
        let text = crate::load::DEFAULT_POLICY.1;
        std::fs::write(&p, text).unwrap();
        let mut o = ReloadOptions::new(Sources {
            policy: Some(p.clone()),
            ..Sources::default()
        });
        o.poll_interval = Some(Duration::from_millis(50));
        o.debounce = Some(Duration::from_millis(20));
        o.settle = Some(Duration::from_millis(5));
        let src = Arc::new(ReloadingPlanSource::new(o).unwrap());
        src.watch().unwrap();
        let rx = src.subscribe();
        assert_eq!(src.current().version, 1);
        std::fs::write(&p, text.replace("threshold = 0.4 ", "threshold = 0.35 ")).unwrap();
        // The inputs are stored first, then subscribers are told: wait for both.
        wait_for(|| src.current().version == 2 && *rx.borrow() == 2);
        assert_eq!(src.current().policy.activation.threshold.value, 0.35);
        // a broken edit is rejected and the previous inputs stay
        std::fs::write(
            &p,
            text.replace("threshold = 0.4 ", "threshold = \"high\" "),
        )
        .unwrap();
        wait_for(|| src.reloader().status().rejections == 1);
        assert_eq!(src.current().version, 2);
        assert!(
            src.reloader()
                .status()
                .last_error
                .unwrap()
                .contains("policy.toml")
        );
    }
}
