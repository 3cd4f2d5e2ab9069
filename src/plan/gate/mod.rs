//! The call gate's part of a plan (feature `gate`): the `[gate]`
//! configuration as read, the danger patterns compiled into one `RegexSet`,
//! and each tool's compiled input schema with its argument roles and risk.
//!
//! These are data: compile builds them (`compile::gate`), the gate reads
//! them (`gate::check_call`). Each layer's configuration has its module:
//! [`config`] (the whole `[gate]` table and its shipped defaults), [`shell`]
//! (with the effect vocabulary in [`effect`] and inline code rules in
//! [`code`]),
//! [`sql`], [`path`], [`patterns`], [`schema`], with the shared vocabulary
//! in [`types`].

pub mod code;
pub mod config;
pub mod effect;
pub mod flow;
pub mod path;
pub mod patterns;
pub mod schema;
pub mod shell;
pub mod sql;
pub mod types;
pub mod written;

use crate::parse::tags::{ArgRole, RiskLevel, RoleSeg};

use config::GateConfig;
use patterns::PatternSet;
use schema::ToolSchema;

/// What the gate knows of one tool, compiled with the plan.
#[derive(Debug, Clone)]
pub struct GateTool {
    /// The compiled input schema.
    pub schema: ToolSchema,
    /// Argument → role, as written (declared in the tags, or inferred): a
    /// top-level parameter name or a path such as `/edits/*/file_path`.
    pub roles: Vec<(String, ArgRole)>,
    /// The same roles as path segments (a name is a one-segment path), in
    /// the same order; at most 64 (the gate walks them as a bit set).
    pub role_paths: Vec<(Vec<RoleSeg>, ArgRole)>,
    /// Whether the roles were inferred by `[[gate.infer]]` (all of them, or
    /// some besides the declared ones, when a declared role names nothing
    /// the schema describes).
    pub roles_inferred: bool,
    /// An open schema (no declared property) whose roles come from the
    /// `fallback` rules only: arguments no role covers are accepted (as the
    /// schema says), not refused as undeclared.
    pub open_fallback: bool,
    /// Risk level (the policy's default when the tags say nothing).
    pub risk_level: RiskLevel,
    /// The user must confirm every call.
    pub requires_confirmation: bool,
    /// Read-only: SQL must be one read statement, paths are read.
    pub read_only: bool,
    /// MCP `openWorldHint` (or the tag `open_world`); `None` when neither says.
    pub open_world: Option<bool>,
    /// SQL dialect tag (empty: the policy's default).
    pub sql_dialect: String,
}

impl GateTool {
    /// The role of top-level argument `name`, if any (a role whose path is
    /// `name`, `/name` or `/*`).
    pub fn role_of(&self, name: &str) -> Option<ArgRole> {
        self.role_paths
            .iter()
            .find(|(p, _)| p.len() == 1 && p[0].matches_key(name))
            .map(|(_, r)| *r)
    }

    /// Whether any role reaches below the top level of the arguments.
    pub fn has_nested_roles(&self) -> bool {
        self.role_paths.iter().any(|(p, _)| p.len() > 1)
    }
}

/// The gate part of a plan: configuration, compiled patterns and per-tool data.
#[derive(Debug, Clone)]
pub struct CompiledGate {
    /// `[gate]` as read (shipped defaults filled in).
    pub config: GateConfig,
    /// `[[gate.patterns]]` as one `RegexSet`.
    pub patterns: PatternSet,
    /// Per tool, in the order of [`Plan::tools`](super::Plan::tools)
    /// (shared by the plans of one compiled catalog).
    pub tools: std::sync::Arc<Vec<GateTool>>,
    /// `[gate.flow]`, compiled (labels and rules by index).
    pub flow: std::sync::Arc<flow::CompiledFlow>,
}
