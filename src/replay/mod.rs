//! Replay of recorded sessions and A/B comparison of policies.
//!
//! * [`trace`]: the JSON Lines trace format (`docs/trace-format.md`), parsed
//!   with line-numbered errors.
//! * [`engine`]: replays a trace against a plan, keeping the session state the
//!   engine keeps, and evaluates the active set before every tool call.
//! * [`questions`]: BFCL's own judging: each question against its own
//!   candidate functions (needed tools exposed; nothing exposed when nothing fits).
//! * [`ranks`]: recall at any rank and multi-step completeness (all of a
//!   request's tools active before its first call), by held-out split.
//! * [`stats`]: recall, active-set size, schema tokens, list changes, the
//!   breakdown by stage, and the paired comparison of two policies.
//! * [`stream`]: the same replay read line by line in two passes, keeping
//!   only the open sessions' lines, sessions replayed in parallel batches.
//! * [`curve`]: recall against active-set size as the threshold sweeps
//!   (what `compare --plot` draws).
//! * [`auc`]: ROC AUC and point-biserial correlation.
//! * [`fit`]: per-feature AUC, and (feature `fit`) a logistic-regression fit of
//!   the formula's weights with a held-out split.
//! * [`floor`]: the absolute relevance floor chosen for a target recall,
//!   with its effect on turns without a call, on a held-out split.
//! * [`transitions`]: counts of which tool follows which, learned from a
//!   trace and written as the data file of `[features.transition_match]`.
//! * `flow` (feature `gate`): which calls the `[gate.flow]` rules would
//!   have stopped (`toolgate replay --flow`).
//! * [`bfcl`]: conversion of the Berkeley Function Calling Leaderboard data to
//!   a catalog and traces.
//!
//! All of it is pure: text in, values out; the CLI reads and writes the files.
//!
//! ```
//! use std::sync::Arc;
//! use toolgate::load::{load_plan, Sources};
//! use toolgate::replay::{engine::{replay, ReplayOptions}, stats::summarize, trace::parse_trace};
//!
//! let plan = Arc::new(load_plan(&Sources::default()).unwrap());
//! let trace = parse_trace(r#"
//! {"session": "s1", "t": 0, "event": "context", "stage": "exploration", "language": "sql"}
//! {"session": "s1", "t": 1, "event": "user_message", "text": "list the tables of the database"}
//! {"session": "s1", "t": 2, "event": "tool_call", "tool": "sqlite.list_tables"}
//! "#, false).unwrap();
//! let r = replay(&plan, &trace, &ReplayOptions::default()).unwrap();
//! let s = summarize(&r);
//! assert_eq!((s.calls, s.hits), (1, 1));
//! ```

pub mod auc;
pub mod bfcl;
pub mod bfcl_check;
pub mod curve;
pub mod engine;
pub mod fit;
pub mod floor;
#[cfg(feature = "gate")]
pub mod flow;
pub mod questions;
pub mod ranks;
pub mod stats;
pub mod stream;
pub mod trace;
pub mod transitions;
