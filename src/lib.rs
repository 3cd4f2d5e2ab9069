//! # toolgate
//!
//! A tool-policy engine for AI agents. Given a session context, toolgate scores
//! every registered tool with the activation formula of a declarative TOML
//! policy and exposes only the tools above the threshold, explaining each score
//! term by term.
//!
//! The data flow is visible in the module layout:
//!
//! ```text
//! policies/*.toml, tool-tags/*.toml
//!        │  parse      (parse::policy, parse::tags; TOML with spans → sources)
//!        ▼
//!   PolicySource + ToolSpec
//!        │  compile    (compile: validate, lower the formula, intern keywords,
//!        ▼              compile [gate]; then check the policy's examples)
//!      Plan            (plan: immutable data, shared behind Arc)
//!        │  evaluate   (eval: SessionContext + UsageStats + now → Activation)
//!        ▼
//!   Activation         (scores, active set, explanations, diffs)
//! ```
//!
//! Below the stages sit [`diag`] (diagnostics), [`defaults`] (the embedded
//! policy and tags), [`datafile`] (reading the files a policy names:
//! regular files only, capped), [`context`] (what a session knows) and [`text`] (keyword
//! analysis, BM25). Module dependencies point one way, from policy text to
//! the edges; `docs/architecture.md` lists the order and `tests/layering.rs`
//! enforces it.
//!
//! [`replay`] replays recorded sessions (JSON Lines traces) against plans,
//! compares two policies on them and fits a policy's weights.
//!
//! I/O lives at the edges: [`load`] reads files, [`input`] reads JSON inputs;
//! everything between is pure. With the `reload` feature, `reload` watches the
//! files and swaps a new plan in atomically when they change.
//!
//! The plan also carries the **call gate** (feature `gate`, on by default):
//! [`gate::Gate`] checks a tool call against the policy's `[gate]` (schema
//! with typed coercion, shell/SQL/path/regex danger analysis, risk table) and
//! returns allow (with coerced arguments), ask or deny; it can run allowed
//! calls under timeouts and retries and writes an audit log. Without the
//! feature the crate is the activation engine alone.
//!
//! ```
//! use std::sync::Arc;
//! use toolgate::{load::{load_plan, Sources}, SessionContext, UsageStats};
//!
//! let plan = Arc::new(load_plan(&Sources::default()).unwrap());
//! let ctx = SessionContext {
//!     user_intent_keywords: vec!["query".into(), "table".into()],
//!     conversation_stage: Some("exploration".into()),
//!     active_language: Some("sql".into()),
//!     ..Default::default()
//! };
//! let act = plan.evaluate(&ctx, &UsageStats::default(), 0.0);
//! assert!(act.active_names().contains(&"sqlite.read_query"));
//! ```

#![warn(missing_docs)]

pub mod compile;
pub mod context;
pub mod datafile;
pub mod defaults;
pub mod diag;
pub mod embed;
pub mod eval;
#[cfg(feature = "proptest")]
pub mod fuzz;
#[cfg(feature = "gate")]
pub mod gate;
pub mod input;
pub mod load;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod parse;
pub mod plan;
#[cfg(feature = "reload")]
pub mod reload;
pub mod replay;
pub mod text;

/// The README's Rust examples, compiled and run as doc tests (its shell
/// examples are run by `tests/readme.rs`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use context::{Session, SessionContext, UsageStats};
pub use diag::{Diagnostic, ErrorKind, LoadError};
pub use eval::{Activation, ActivationDiff, Reason, TermExplanation, ToolScore};
#[cfg(feature = "proptest")]
pub use fuzz::strategies;
pub use plan::{FEATURES, Plan};

/// The Rust examples of `docs/policy-reference.md` (the declared-properties
/// route through `toolgate::strategies`), run as doctests.
#[cfg(all(doctest, feature = "proptest"))]
#[doc = include_str!("../docs/policy-reference.md")]
pub struct PolicyReferenceExamples;
