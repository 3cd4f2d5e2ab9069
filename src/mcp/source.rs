//! The plan-source seam: where the proxy gets the policy and the tool tags,
//! and how it learns that they changed.
//!
//! The proxy compiles its own [`Plan`](crate::plan::Plan) from these inputs plus
//! the tools it discovered downstream, so a source hands out the *parsed*
//! inputs ([`PlanInputs`]), checked by a trial compile, and a change counter
//! to [`subscribe`](PlanSource::subscribe) to. [`PollingPlanSource`] re-reads
//! the files when their modification times change; a file watcher can
//! implement the same trait.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::diag::LoadError;
use crate::load::{Sources, load_catalog, load_policy};
use crate::parse::policy::PolicySource;
use crate::parse::tags::ToolSpec;

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

/// Re-reads the policy file and the tags directory when one of their files
/// changes (modification time, size, or the set of `*.toml` files). A change
/// that does not load (or whose trial compile fails) is reported on stderr
/// and the previous inputs stay in force. Embedded defaults never change.
#[derive(Debug)]
pub struct PollingPlanSource {
    sources: Sources,
    inputs: ArcSwap<PlanInputs>,
    stamp: std::sync::Mutex<Stamp>,
    tx: watch::Sender<u64>,
}

/// Modification time and size of each watched file, in a stable order.
type Stamp = Vec<(PathBuf, Option<(SystemTime, u64)>)>;

fn file_stamp(p: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(p).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Loads and trial-compiles the inputs named by `sources`.
pub fn load_inputs(sources: &Sources) -> Result<(PolicySource, Vec<ToolSpec>), LoadError> {
    let policy = load_policy(sources.policy.as_deref());
    let catalog = load_catalog(sources);
    let (policy, tags) = match (policy, catalog) {
        (Ok(p), Ok(c)) => (p, c),
        (Err(mut a), Err(b)) => {
            a.diagnostics.extend(b.diagnostics);
            return Err(a);
        }
        (Err(a), _) | (_, Err(a)) => return Err(a),
    };
    crate::compile::compile(&policy, tags.clone())?;
    Ok((policy, tags))
}

impl PollingPlanSource {
    /// Loads the inputs once; fails with every diagnostic when they do not load.
    pub fn load(sources: Sources) -> Result<Self, LoadError> {
        let stamp = Self::stamp_of(&sources);
        let (policy, tags) = load_inputs(&sources)?;
        Ok(PollingPlanSource {
            sources,
            inputs: ArcSwap::from_pointee(PlanInputs {
                policy,
                tags,
                version: 1,
            }),
            stamp: std::sync::Mutex::new(stamp),
            tx: watch::Sender::new(1),
        })
    }

    fn stamp_of(sources: &Sources) -> Stamp {
        let mut out = Vec::new();
        if let Some(p) = &sources.policy {
            out.push((p.clone(), file_stamp(p)));
        }
        if let Some(dir) = &sources.tags {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .map(|rd| {
                    rd.filter_map(|e| e.ok())
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                        .collect()
                })
                .unwrap_or_default();
            files.sort();
            out.push((dir.clone(), None));
            for f in files {
                let s = file_stamp(&f);
                out.push((f, s));
            }
        }
        out
    }

    /// Whether any file can change (a policy file or a tags directory was given).
    pub fn watches_files(&self) -> bool {
        self.sources.policy.is_some() || self.sources.tags.is_some()
    }

    /// Checks the files once; reloads when they changed. Returns `Ok(true)`
    /// when new inputs are in force, `Ok(false)` when nothing changed, and the
    /// diagnostics when the changed files do not load (the old inputs stay).
    pub fn poll_once(&self) -> Result<bool, LoadError> {
        let now = Self::stamp_of(&self.sources);
        {
            let mut old = self.stamp.lock().unwrap_or_else(|p| p.into_inner());
            if *old == now {
                return Ok(false);
            }
            // Remember the stamp even when the load fails, so a broken file is
            // reported once, not on every poll.
            *old = now;
        }
        let (policy, tags) = load_inputs(&self.sources)?;
        let version = self.inputs.load().version + 1;
        self.inputs.store(Arc::new(PlanInputs {
            policy,
            tags,
            version,
        }));
        self.tx.send_replace(version);
        Ok(true)
    }

    /// Polls every `every` on the current tokio runtime until the source is dropped.
    pub fn spawn_polling(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(src) = weak.upgrade() else { return };
                if !src.watches_files() {
                    return;
                }
                let r = tokio::task::spawn_blocking(move || src.poll_once()).await;
                match r {
                    Ok(Ok(true)) => tracing::info!("policy or tool tags changed: reloaded"),
                    Ok(Ok(false)) => {}
                    Ok(Err(e)) => {
                        tracing::error!(
                            problems = e.diagnostics.len(),
                            "the changed policy or tool tags do not load; keeping the previous ones"
                        );
                        for d in &e.diagnostics {
                            tracing::error!("{d}");
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "policy polling task failed"),
                }
            }
        })
    }
}

impl PlanSource for PollingPlanSource {
    fn current(&self) -> Arc<PlanInputs> {
        self.inputs.load_full()
    }
    fn subscribe(&self) -> watch::Receiver<u64> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_source_reloads_on_change_and_keeps_old_inputs_on_error() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("policy.toml");
        let text = crate::load::DEFAULT_POLICY.1;
        std::fs::write(&p, text).unwrap();
        let src = PollingPlanSource::load(Sources {
            policy: Some(p.clone()),
            ..Sources::default()
        })
        .unwrap();
        let rx = src.subscribe();
        assert!(!src.poll_once().unwrap());
        std::fs::write(&p, text.replace("threshold = 0.4 ", "threshold = 0.35 ")).unwrap();
        assert!(src.poll_once().unwrap());
        assert_eq!(*rx.borrow(), 2);
        assert_eq!(src.current().version, 2);
        assert_eq!(src.current().policy.activation.threshold.value, 0.35);
        // a broken edit is reported once and the previous inputs stay
        std::fs::write(
            &p,
            text.replace("threshold = 0.4 ", "threshold = \"high\" "),
        )
        .unwrap();
        assert!(src.poll_once().is_err());
        assert!(!src.poll_once().unwrap());
        assert_eq!(src.current().version, 2);
    }
}
