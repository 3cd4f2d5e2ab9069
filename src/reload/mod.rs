//! Hot reload: watch the policy and tool-tag files, recompile on change, swap
//! the served [`Plan`] atomically, and keep the last good plan on a bad edit.
//!
//! A [`Reloader`] serves one plan at a time behind an [`ArcSwap`]. Readers take
//! the current plan with [`Reloader::plan`] (a lock-free `Arc` clone) and
//! evaluate on it: an evaluation in flight finishes on the plan it started
//! with, whatever is swapped in meanwhile. A reload
//!
//! 1. reads every input (policy file, each `*.toml` of the tags directory,
//!    extra tool files) into memory, pauses for the *settle* time and reads
//!    them again, until two reads agree byte for byte (a writer that truncates
//!    and then writes is never seen half way: an empty or missing file counts
//!    as not settled yet);
//! 2. parses and compiles exactly those bytes (syntax, validation and the
//!    policy's examples);
//! 3. on success swaps the new plan in and tells subscribers
//!    ([`ReloadEvent`]); on failure keeps serving the previous plan, records
//!    the error (`file:line:column: message`) in the [`Status`] and logs it
//!    through `tracing`.
//!
//! [`Reloader::watch`] starts a watcher thread that reloads on file events
//! (`notify` and `notify-debouncer-full`) or, with [`WatchMode::Poll`], on
//! polled changes. It watches the *parent directories* of the files,
//! non-recursively, and filters events by path, so editors' atomic renames,
//! vim-style saves (backup, rename, new inode), delete-and-recreate, a file
//! replaced by a symlink and a Kubernetes-style `..data` symlink swap are all
//! seen. Symlinks are followed: the directories of every link on the way to a
//! file are watched too, and the watch set is recomputed after each change.
//! Editor droppings (`*.swp`, `*.swo`, `*.swx`, `*~`, `.#*`) are ignored.
//!
//! The watch settings come from [`ReloadOptions`], else from the policy's
//! `[reload]` section ([`ReloadParams`]: `debounce_ms`, `poll_interval_ms`,
//! `settle_ms`), else from the defaults ([`DEFAULT_DEBOUNCE`],
//! [`DEFAULT_SETTLE`]).
//!
//! ```no_run
//! use toolgate::load::Sources;
//! use toolgate::reload::{ReloadOptions, Reloader};
//! use toolgate::{SessionContext, UsageStats};
//!
//! let sources = Sources { policy: Some("policy.toml".into()), ..Default::default() };
//! let reloader = Reloader::new(ReloadOptions::new(sources)).expect("the first load must succeed");
//! let changes = reloader.subscribe();
//! let _watch = reloader.watch().expect("cannot start the watcher");
//! let ctx = SessionContext::default();
//! for ev in changes {
//!     let diff = ev.diff(&ctx, &UsageStats::default(), 0.0);
//!     println!("plan v{} -> v{}: +{:?} -{:?}", ev.previous_version, ev.version, diff.added, diff.removed);
//! }
//! ```

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, PollWatcher, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{
    DebounceEventResult, DebouncedEvent, Debouncer, NoCache, RecommendedCache, new_debouncer_opt,
};

use crate::context::{SessionContext, UsageStats};
use crate::diag::{Diagnostic, ErrorKind, LoadError};
use crate::eval::ActivationDiff;
use crate::load::{DEFAULT_POLICY, Sources};
use crate::parse::policy::{PolicySource, ReloadParams};
use crate::parse::tags::ToolSpec;
use crate::plan::Plan;

mod snapshot;
pub use snapshot::is_editor_dropping;
use snapshot::{Snapshot, UnitCache, build, is_tag_file_name, list_tag_dir, stable_snapshot};

/// Default quiet time after a file event before reloading (100 ms).
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);
/// Default pause between the two reads that must agree (25 ms).
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(25);
/// Default number of reads before content that keeps changing is rejected (20).
pub const DEFAULT_MAX_READS: u32 = 20;

/// How the files are watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// File-system events (inotify, FSEvents, ReadDirectoryChangesW).
    Events,
    /// Poll the watched directories every this long (for network mounts and
    /// containers without events). Each poll compares the modification time
    /// and a hash of the contents of every file in the watched directories,
    /// so keep the policy in a directory of its own when polling.
    Poll(Duration),
}

/// What to load and how to watch it. Options left `None` come from the
/// policy's `[reload]` section, then from the defaults.
#[derive(Debug, Clone)]
pub struct ReloadOptions {
    /// The files: policy, tags directory, extra tool files (`None` parts are
    /// the embedded defaults and are not watched).
    pub sources: Sources,
    /// Debounce time of the watcher (else `[reload] debounce_ms`, else [`DEFAULT_DEBOUNCE`]).
    pub debounce: Option<Duration>,
    /// Poll instead of using events, with this interval (else
    /// `[reload] poll_interval_ms`; absent there too = events).
    pub poll_interval: Option<Duration>,
    /// Pause between two reads of the inputs (else `[reload] settle_ms`, else [`DEFAULT_SETTLE`]).
    pub settle: Option<Duration>,
    /// Reads before giving up on content that keeps changing (at least 2; default [`DEFAULT_MAX_READS`]).
    pub max_reads: u32,
    /// The embedded policy `(name, text)` served when `sources.policy` is
    /// `None` (default: [`DEFAULT_POLICY`]).
    pub default_policy: (&'static str, &'static str),
}

/// The parsed inputs of the plan being served (the MCP proxy compiles them
/// again with the tools it discovers).
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The policy.
    pub policy: PolicySource,
    /// The tool tags and imported tools, one unit per file in load order
    /// (shared with the compiler's cache: see
    /// [`CompileCache`](crate::compile::CompileCache)).
    pub units: Vec<Arc<Vec<ToolSpec>>>,
}

impl Inputs {
    /// The tool tags, in load order.
    pub fn tags(&self) -> impl Iterator<Item = &ToolSpec> {
        self.units.iter().flat_map(|u| u.iter())
    }
}

impl ReloadOptions {
    /// Options for `sources`, everything else from the policy or the defaults.
    pub fn new(sources: Sources) -> Self {
        ReloadOptions {
            sources,
            debounce: None,
            poll_interval: None,
            settle: None,
            max_reads: DEFAULT_MAX_READS,
            default_policy: DEFAULT_POLICY,
        }
    }
}

/// The reloader's state as reported to operators.
#[derive(Debug, Clone)]
pub struct Status {
    /// Version of the plan being served: 1 for the first load, +1 for each
    /// successful reload.
    pub version: u64,
    /// [`Plan::content_hash`] of the plan being served.
    pub content_hash: u64,
    /// `[policy] name` of the plan being served.
    pub policy_name: String,
    /// When the plan being served was loaded.
    pub loaded_at: SystemTime,
    /// The error of the latest load attempt, if it failed (every diagnostic as
    /// `file:line:column: message`, one per line); cleared by a successful load.
    pub last_error: Option<String>,
    /// When `last_error` happened.
    pub last_error_at: Option<SystemTime>,
    /// Successful loads so far (the first one included).
    pub loads: u64,
    /// Rejected load attempts so far.
    pub rejections: u64,
}

/// A successful reload, as sent to subscribers.
#[derive(Debug, Clone)]
pub struct ReloadEvent {
    /// Version of the new plan.
    pub version: u64,
    /// Version of the plan it replaced.
    pub previous_version: u64,
    /// The new plan (now served).
    pub plan: Arc<Plan>,
    /// The plan it replaced.
    pub previous: Arc<Plan>,
    /// When the new plan was swapped in.
    pub loaded_at: SystemTime,
}

impl ReloadEvent {
    /// Tools added to and removed from the active set of `context` by this
    /// reload: both plans are evaluated with the same `usage` at `now`
    /// (seconds, on the clock of `usage`). An empty diff means no
    /// `notifications/tools/list_changed` is needed for that session.
    pub fn diff(&self, context: &SessionContext, usage: &UsageStats, now: f64) -> ActivationDiff {
        let after = self.plan.evaluate(context, usage, now);
        let before = self.previous.evaluate(context, usage, now);
        after.diff(&before)
    }
}

/// A rejected load attempt: the previous plan keeps serving.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// Version of the plan still being served.
    pub version: u64,
    /// What was wrong (each diagnostic displays as `file:line:column: message`).
    pub error: LoadError,
    /// When the attempt was rejected.
    pub at: SystemTime,
}

/// One load attempt, as sent to [`Reloader::subscribe_attempts`] subscribers.
#[derive(Debug, Clone)]
pub enum LoadAttempt {
    /// A new plan is served.
    Loaded(ReloadEvent),
    /// The files did not load; the previous plan keeps serving.
    Rejected(Rejection),
}

impl LoadAttempt {
    /// Version of the plan served after this attempt.
    pub fn version(&self) -> u64 {
        match self {
            LoadAttempt::Loaded(e) => e.version,
            LoadAttempt::Rejected(r) => r.version,
        }
    }
}

/// Serves the latest good plan of a set of files and reloads it on demand
/// ([`Reloader::reload_now`]) or on change ([`Reloader::watch`]). Cloning is
/// cheap and shares the same state.
#[derive(Clone)]
pub struct Reloader {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Reloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloader")
            .field("sources", &self.inner.options.sources)
            .field("status", &self.status())
            .finish()
    }
}

struct Inner {
    options: ReloadOptions,
    plan: Arc<ArcSwap<Plan>>,
    inputs: ArcSwap<Inputs>,
    /// Held for the whole of a reload: reloads are serialised.
    state: Mutex<State>,
    status: Mutex<Status>,
    subscribers: Mutex<Subscribers>,
}

struct State {
    version: u64,
    /// The inputs of the latest attempt whose content was stable; a watcher
    /// event that finds the same bytes does not recompile.
    last_attempt: Option<Snapshot>,
    /// The inputs of the latest attempt whose content did not settle (an
    /// emptied or deleted file) and was rejected: a re-check that finds the
    /// very same bytes again does not reject them again (one rejection per
    /// edit, not one per re-check).
    last_unsettled_rejected: Option<Snapshot>,
    /// `[reload]` of the policy being served.
    params: ReloadParams,
    /// The parsed files and compiled parts of the last build, reused by the
    /// next one for whatever did not change.
    cache: UnitCache,
}

#[derive(Default)]
struct Subscribers {
    changes: Vec<Sender<ReloadEvent>>,
    attempts: Vec<Sender<LoadAttempt>>,
}

/// Locks a mutex, ignoring poisoning (the data stay consistent: every
/// critical section only assigns whole values).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

impl Reloader {
    /// Loads the files of `options` (content must settle first, as for every
    /// reload) and serves the result as version 1.
    ///
    /// Errors: the first load failed (there is no good plan to fall back on);
    /// the error lists every problem as `file:line:column: message`.
    pub fn new(options: ReloadOptions) -> Result<Reloader, LoadError> {
        let settle = options.settle.unwrap_or(DEFAULT_SETTLE);
        let (snap, stable) = stable_snapshot(&options.sources, settle, options.max_reads);
        let mut cache = UnitCache::default();
        let (plan, params, inputs) = if stable || snap.incomplete() {
            build(&snap, options.default_policy, &mut cache)?
        } else {
            return Err(unstable_error(&options.sources, options.max_reads));
        };
        let now = SystemTime::now();
        let status = Status {
            version: 1,
            content_hash: plan.content_hash,
            policy_name: plan.policy_name.clone(),
            loaded_at: now,
            last_error: None,
            last_error_at: None,
            loads: 1,
            rejections: 0,
        };
        tracing::info!(
            version = 1,
            policy = %plan.policy_name,
            hash = %format_args!("{:016x}", plan.content_hash),
            "plan loaded"
        );
        Ok(Reloader {
            inner: Arc::new(Inner {
                options,
                plan: Arc::new(ArcSwap::from_pointee(plan)),
                inputs: ArcSwap::from_pointee(inputs),
                state: Mutex::new(State {
                    version: 1,
                    last_attempt: stable.then_some(snap),
                    last_unsettled_rejected: None,
                    params,
                    cache,
                }),
                status: Mutex::new(status),
                subscribers: Mutex::new(Subscribers::default()),
            }),
        })
    }

    /// The plan being served (lock-free; the `Arc` keeps it alive for as long
    /// as the caller holds it, across any number of reloads).
    pub fn plan(&self) -> Arc<Plan> {
        self.inner.plan.load_full()
    }

    /// The parsed policy and tags of the plan being served.
    pub fn inputs(&self) -> Arc<Inputs> {
        self.inner.inputs.load_full()
    }

    /// The shared cell the plan is served from, for embedders that want to
    /// read it without the reloader (`handle.load()`).
    pub fn handle(&self) -> Arc<ArcSwap<Plan>> {
        self.inner.plan.clone()
    }

    /// A copy of the current status.
    pub fn status(&self) -> Status {
        lock(&self.inner.status).clone()
    }

    /// Version of the plan being served (see [`Status::version`]).
    pub fn version(&self) -> u64 {
        lock(&self.inner.status).version
    }

    /// What the last load recompiled and what it reused: a policy-only edit
    /// reuses the whole compiled catalog, an edited tool or tag file
    /// recompiles that file's tools only. Waits for a reload in progress.
    pub fn last_compile(&self) -> crate::compile::CompileStats {
        lock(&self.inner.state).cache.compiler.stats().clone()
    }

    /// The sources being watched.
    pub fn sources(&self) -> &Sources {
        &self.inner.options.sources
    }

    /// A channel that receives one [`ReloadEvent`] per successful reload from
    /// now on. Dropping the receiver unsubscribes.
    pub fn subscribe(&self) -> Receiver<ReloadEvent> {
        let (tx, rx) = mpsc::channel();
        lock(&self.inner.subscribers).changes.push(tx);
        rx
    }

    /// A channel that receives every load attempt from now on, loaded or
    /// rejected. Dropping the receiver unsubscribes.
    pub fn subscribe_attempts(&self) -> Receiver<LoadAttempt> {
        let (tx, rx) = mpsc::channel();
        lock(&self.inner.subscribers).attempts.push(tx);
        rx
    }

    /// Reloads now, whether or not the files changed: waits for the content
    /// to settle, recompiles, and swaps the plan in on success.
    ///
    /// Errors: the files did not load ([`Rejection`]); the previous plan keeps
    /// serving and the error is in [`Reloader::status`].
    pub fn reload_now(&self) -> Result<ReloadEvent, Rejection> {
        let inner = &self.inner;
        let mut st = lock(&inner.state);
        let settle = inner.settle(&st.params);
        let (snap, stable) =
            stable_snapshot(&inner.options.sources, settle, inner.options.max_reads);
        inner.load(&mut st, snap, stable)
    }

    /// The debounce time the watcher uses: [`ReloadOptions::debounce`], else
    /// the served policy's `[reload] debounce_ms`, else [`DEFAULT_DEBOUNCE`].
    pub fn debounce(&self) -> Duration {
        let params = lock(&self.inner.state).params;
        self.inner
            .options
            .debounce
            .or(params.debounce_ms.map(ms))
            .unwrap_or(DEFAULT_DEBOUNCE)
    }

    /// The settle time between two reads ([`ReloadOptions::settle`], else
    /// `[reload] settle_ms`, else [`DEFAULT_SETTLE`]).
    pub fn settle(&self) -> Duration {
        let params = lock(&self.inner.state).params;
        self.inner.settle(&params)
    }

    /// How [`Reloader::watch`] watches: [`ReloadOptions::poll_interval`], else
    /// the served policy's `[reload] poll_interval_ms`, else events.
    pub fn mode(&self) -> WatchMode {
        let params = lock(&self.inner.state).params;
        match self
            .inner
            .options
            .poll_interval
            .or(params.poll_interval_ms.map(ms))
        {
            Some(d) => WatchMode::Poll(d),
            None => WatchMode::Events,
        }
    }

    /// Starts watching the files (with [`Reloader::mode`] and
    /// [`Reloader::debounce`] as they are now) on a background thread. Every
    /// relevant change triggers a reload whose outcome goes to the
    /// subscribers; a change that leaves every byte as it was is not
    /// reloaded. Before returning, the watches are in place and the files
    /// have been checked once for changes since the last load, so every later
    /// change is seen. Watching stops when the guard is dropped.
    ///
    /// Errors: the watcher could not be created (for example no inotify
    /// instance left). A directory that cannot be watched yet (it does not
    /// exist) is only logged, and retried after each change.
    pub fn watch(&self) -> Result<WatchGuard, notify::Error> {
        let mode = self.mode();
        let debounce = self.debounce().max(Duration::from_millis(1));
        let (tx, rx) = mpsc::channel::<Msg>();
        let etx = tx.clone();
        let handler = move |res: DebounceEventResult| {
            let _ = etx.send(Msg::Events(res));
        };
        let debouncer = match mode {
            WatchMode::Events => {
                AnyDebouncer::Events(
                    new_debouncer_opt::<_, RecommendedWatcher, RecommendedCache>(
                        debounce,
                        None,
                        handler,
                        RecommendedCache::new(),
                        notify::Config::default(),
                    )?,
                )
            }
            WatchMode::Poll(interval) => {
                AnyDebouncer::Poll(new_debouncer_opt::<_, PollWatcher, NoCache>(
                    debounce,
                    None,
                    handler,
                    NoCache::new(),
                    // The poller compares modification times in whole seconds:
                    // compare contents too, or a second save within the same
                    // second would go unseen.
                    notify::Config::default()
                        .with_poll_interval(interval)
                        .with_compare_contents(true),
                )?)
            }
        };
        let mut worker = Worker {
            inner: self.inner.clone(),
            debounce,
            debouncer,
            watching: HashMap::new(),
            set: WatchSet::default(),
        };
        worker.reconcile();
        // Catch a change made between the last load and the first watch: from
        // here on, events report every change.
        if self.inner.reload(true).is_some() {
            worker.reconcile();
        }
        tracing::info!(
            ?mode,
            debounce_ms = debounce.as_millis() as u64,
            dirs = worker.watching.len(),
            "watching for changes"
        );
        let thread = std::thread::Builder::new()
            .name("toolgate-reload".into())
            .spawn(move || worker.run(rx))
            .map_err(notify::Error::io)?;
        Ok(WatchGuard {
            tx,
            thread: Some(thread),
            mode,
            debounce,
        })
    }
}

impl Inner {
    fn settle(&self, params: &ReloadParams) -> Duration {
        self.options
            .settle
            .or(params.settle_ms.map(ms))
            .unwrap_or(DEFAULT_SETTLE)
    }

    /// Reads the inputs until they settle and loads them. With `skip_unchanged`,
    /// returns `None` instead when they are the bytes of the last attempt.
    fn reload(&self, skip_unchanged: bool) -> Option<Result<ReloadEvent, Rejection>> {
        let mut st = lock(&self.state);
        let settle = self.settle(&st.params);
        let (snap, stable) = stable_snapshot(&self.options.sources, settle, self.options.max_reads);
        if skip_unchanged && stable && st.last_attempt.as_ref() == Some(&snap) {
            tracing::debug!("files unchanged; no reload");
            return None;
        }
        if skip_unchanged && !stable && st.last_unsettled_rejected.as_ref() == Some(&snap) {
            tracing::debug!("the same unsettled files as the last rejection; not rejected again");
            return None;
        }
        Some(self.load(&mut st, snap, stable))
    }

    fn load(&self, st: &mut State, snap: Snapshot, stable: bool) -> Result<ReloadEvent, Rejection> {
        let result = if stable || snap.incomplete() {
            build(&snap, self.options.default_policy, &mut st.cache)
        } else {
            Err(unstable_error(
                &self.options.sources,
                self.options.max_reads,
            ))
        };
        // Content that did not settle is never remembered: the next event
        // must retry even if it finds the same bytes.
        st.last_unsettled_rejected = (!stable && result.is_err()).then(|| snap.clone());
        st.last_attempt = stable.then_some(snap);
        self.apply(st, result)
    }

    fn apply(
        &self,
        st: &mut State,
        result: Result<(Plan, ReloadParams, Inputs), LoadError>,
    ) -> Result<ReloadEvent, Rejection> {
        let now = SystemTime::now();
        match result {
            Ok((plan, params, inputs)) => {
                let plan = Arc::new(plan);
                self.inputs.store(Arc::new(inputs));
                let previous = self.plan.swap(plan.clone());
                let previous_version = st.version;
                st.version += 1;
                st.params = params;
                {
                    let mut s = lock(&self.status);
                    s.version = st.version;
                    s.content_hash = plan.content_hash;
                    s.policy_name = plan.policy_name.clone();
                    s.loaded_at = now;
                    s.last_error = None;
                    s.last_error_at = None;
                    s.loads += 1;
                }
                tracing::info!(
                    version = st.version,
                    previous_version,
                    policy = %plan.policy_name,
                    hash = %format_args!("{:016x}", plan.content_hash),
                    "plan reloaded"
                );
                let ev = ReloadEvent {
                    version: st.version,
                    previous_version,
                    plan,
                    previous,
                    loaded_at: now,
                };
                self.publish(&LoadAttempt::Loaded(ev.clone()));
                Ok(ev)
            }
            Err(error) => {
                let message = error.to_string();
                {
                    let mut s = lock(&self.status);
                    s.last_error = Some(message.clone());
                    s.last_error_at = Some(now);
                    s.rejections += 1;
                }
                tracing::warn!(
                    version = st.version,
                    error = %message,
                    "reload rejected; the previous plan keeps serving"
                );
                let r = Rejection {
                    version: st.version,
                    error,
                    at: now,
                };
                self.publish(&LoadAttempt::Rejected(r.clone()));
                Err(r)
            }
        }
    }

    fn publish(&self, attempt: &LoadAttempt) {
        let mut subs = lock(&self.subscribers);
        if let LoadAttempt::Loaded(ev) = attempt {
            subs.changes.retain(|tx| tx.send(ev.clone()).is_ok());
        }
        subs.attempts.retain(|tx| tx.send(attempt.clone()).is_ok());
    }
}

fn unstable_error(sources: &Sources, reads: u32) -> LoadError {
    let what = sources
        .policy
        .as_ref()
        .or(sources.tags.as_ref())
        .map(|p| format!("{}: ", p.display()))
        .unwrap_or_default();
    LoadError::single(Diagnostic::bare(
        ErrorKind::Io,
        format!(
            "{what}the files kept changing over {reads} reads; not applied (the next change retries)"
        ),
    ))
}

// ---------------------------------------------------------------------------
// Watching.

/// Every path met while resolving `path`: each symbolic link on the way (a
/// link in a parent directory included), then the final, link-free path
/// (which may not exist). All absolute.
fn resolve_chain(path: &Path) -> Vec<PathBuf> {
    let mut chain = Vec::new();
    let Ok(abs) = std::path::absolute(path) else {
        return chain;
    };
    let mut cur = PathBuf::new();
    let mut rest: VecDeque<OsString> = VecDeque::new();
    for c in abs.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => cur.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => rest.push_back("..".into()),
            Component::Normal(n) => rest.push_back(n.to_os_string()),
        }
    }
    let mut hops = 0;
    while let Some(name) = rest.pop_front() {
        if name == ".." {
            cur.pop();
            continue;
        }
        let next = cur.join(&name);
        let is_link = std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link || hops >= 40 {
            cur = next;
            continue;
        }
        hops += 1;
        chain.push(next.clone());
        match std::fs::read_link(&next) {
            Ok(target) => {
                let mut front = Vec::new();
                if target.has_root() {
                    cur = PathBuf::new();
                }
                for c in target.components() {
                    match c {
                        Component::Prefix(_) | Component::RootDir => cur.push(c.as_os_str()),
                        Component::CurDir => {}
                        Component::ParentDir => front.push(OsString::from("..")),
                        Component::Normal(n) => front.push(n.to_os_string()),
                    }
                }
                for n in front.into_iter().rev() {
                    rest.push_front(n);
                }
            }
            Err(_) => cur = next,
        }
    }
    chain.push(cur);
    chain
}

/// What to watch and which event paths matter.
#[derive(Debug, Default)]
struct WatchSet {
    /// Directories to watch, non-recursively.
    dirs: BTreeSet<PathBuf>,
    /// Exact paths whose events trigger a reload.
    paths: HashSet<PathBuf>,
    /// Resolved tags directories: events on their `*.toml` children trigger a reload.
    tag_dirs: Vec<PathBuf>,
}

impl WatchSet {
    fn add_file(&mut self, path: &Path) -> Option<PathBuf> {
        let chain = resolve_chain(path);
        for p in &chain {
            if let Some(parent) = p.parent() {
                self.dirs.insert(parent.to_path_buf());
            }
            self.paths.insert(p.clone());
        }
        chain.last().cloned()
    }

    fn compute(sources: &Sources) -> WatchSet {
        let mut set = WatchSet::default();
        if let Some(p) = &sources.policy {
            set.add_file(p);
        }
        for p in &sources.tools {
            set.add_file(p);
        }
        if let Some(dir) = &sources.tags
            && let Some(resolved) = set.add_file(dir)
        {
            set.dirs.insert(resolved.clone());
            if let Ok(files) = list_tag_dir(&resolved) {
                for f in files {
                    set.add_file(&f);
                }
            }
            set.tag_dirs.push(resolved);
        }
        set
    }

    fn relevant_path(&self, p: &Path) -> bool {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if is_editor_dropping(name) {
            return false;
        }
        self.paths.contains(p)
            || (is_tag_file_name(p)
                && p.parent()
                    .is_some_and(|d| self.tag_dirs.iter().any(|t| t == d)))
    }

    fn relevant(&self, ev: &DebouncedEvent) -> bool {
        match ev.kind {
            // Opening or reading a file (our own reads among them) changes nothing.
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
            EventKind::Access(_) => return false,
            _ => {}
        }
        ev.need_rescan() || ev.paths.iter().any(|p| self.relevant_path(p))
    }
}

enum AnyDebouncer {
    Events(Debouncer<RecommendedWatcher, RecommendedCache>),
    Poll(Debouncer<PollWatcher, NoCache>),
}

impl AnyDebouncer {
    fn watch(&mut self, dir: &Path) -> notify::Result<()> {
        match self {
            AnyDebouncer::Events(d) => d.watch(dir, RecursiveMode::NonRecursive),
            AnyDebouncer::Poll(d) => d.watch(dir, RecursiveMode::NonRecursive),
        }
    }

    fn unwatch(&mut self, dir: &Path) -> notify::Result<()> {
        match self {
            AnyDebouncer::Events(d) => d.unwatch(dir),
            AnyDebouncer::Poll(d) => d.unwatch(dir),
        }
    }

    fn stop(self) {
        match self {
            AnyDebouncer::Events(d) => d.stop(),
            AnyDebouncer::Poll(d) => d.stop(),
        }
    }
}

enum Msg {
    Events(DebounceEventResult),
    Stop,
}

/// Identity of a directory (device and inode on Unix), to notice a directory
/// replaced under the same path.
fn dir_id(p: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(p).ok().filter(|m| m.is_dir())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        Some((0, 0))
    }
}

struct Worker {
    inner: Arc<Inner>,
    debounce: Duration,
    debouncer: AnyDebouncer,
    /// Watched directory → its identity when the watch was added.
    watching: HashMap<PathBuf, (u64, u64)>,
    set: WatchSet,
}

impl Worker {
    /// Brings the watches in line with the files as they are now.
    fn reconcile(&mut self) {
        let set = WatchSet::compute(&self.inner.options.sources);
        let stale: Vec<PathBuf> = self
            .watching
            .keys()
            .filter(|d| !set.dirs.contains(*d))
            .cloned()
            .collect();
        for d in stale {
            self.watching.remove(&d);
            let _ = self.debouncer.unwatch(&d);
        }
        for d in &set.dirs {
            let id = dir_id(d);
            match (self.watching.get(d), id) {
                (Some(old), Some(new)) if *old == new => continue,
                (Some(_), _) => {
                    self.watching.remove(d);
                    let _ = self.debouncer.unwatch(d);
                }
                (None, _) => {}
            }
            let Some(id) = id else {
                tracing::debug!(dir = %d.display(), "not watched: not a directory (yet)");
                continue;
            };
            match self.debouncer.watch(d) {
                Ok(()) => {
                    tracing::debug!(dir = %d.display(), "watching");
                    self.watching.insert(d.clone(), id);
                }
                Err(e) => tracing::warn!(dir = %d.display(), error = %e, "cannot watch"),
            }
        }
        self.set = set;
    }

    fn run(mut self, rx: Receiver<Msg>) {
        // The debouncer drops a create and a remove of the same path that fall
        // within one debounce period, even when a reload read the file in
        // between; so after each reload, look once more when such a pair
        // would have been emitted.
        let recheck_after = self.debounce * 2 + Duration::from_millis(20);
        let mut recheck: Option<Instant> = None;
        'outer: loop {
            let first = match recheck {
                Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => break,
                },
                None => match rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => break,
                },
            };
            let mut relevant = first.is_none();
            if relevant {
                recheck = None;
            }
            let mut next = first;
            // Coalesce every batch already queued into one reload.
            while let Some(m) = next.take() {
                match m {
                    Msg::Stop => break 'outer,
                    Msg::Events(Ok(events)) => {
                        relevant |= events.iter().any(|e| self.set.relevant(e));
                    }
                    Msg::Events(Err(errors)) => {
                        for e in errors {
                            tracing::warn!(error = %e, "file watcher error; rescanning");
                        }
                        relevant = true;
                    }
                }
                next = rx.try_recv().ok();
            }
            if relevant {
                if self.inner.reload(true).is_some() {
                    recheck = Some(Instant::now() + recheck_after);
                }
                self.reconcile();
            }
        }
        self.debouncer.stop();
    }
}

/// Keeps a [`Reloader::watch`] running; dropping it (or [`WatchGuard::stop`])
/// stops the watcher and waits for its thread.
pub struct WatchGuard {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<()>>,
    mode: WatchMode,
    debounce: Duration,
}

impl std::fmt::Debug for WatchGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchGuard")
            .field("mode", &self.mode)
            .field("debounce", &self.debounce)
            .finish()
    }
}

impl WatchGuard {
    /// How the files are watched.
    pub fn mode(&self) -> WatchMode {
        self.mode
    }

    /// The debounce time in use.
    pub fn debounce(&self) -> Duration {
        self.debounce
    }

    /// Stops watching and waits for the watcher thread (at most one reload
    /// in progress plus one debounce tick).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn droppings() {
        for n in [".#policy.toml", "policy.toml~", ".policy.toml.swp", "x.swo"] {
            assert!(is_editor_dropping(n), "{n}");
        }
        for n in ["policy.toml", "git.toml", "..data"] {
            assert!(!is_editor_dropping(n), "{n}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn chain_follows_links_in_parents_and_files() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("v1")).unwrap();
        std::fs::write(root.join("v1/p.toml"), "x").unwrap();
        std::os::unix::fs::symlink("v1", root.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/p.toml", root.join("p.toml")).unwrap();
        let chain = resolve_chain(&root.join("p.toml"));
        assert_eq!(
            chain,
            vec![
                root.join("p.toml"),
                root.join("..data"),
                root.join("v1/p.toml")
            ]
        );
        let plain = resolve_chain(&root.join("v1/../v1/p.toml"));
        assert_eq!(plain, vec![root.join("v1/p.toml")]);
    }
}
