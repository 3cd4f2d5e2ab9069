//! `[gate.paths]`: the roots tool paths must stay in, and the path checks.

use serde::Deserialize;

use super::types::{Check, ConfigRegex};

/// `[gate.paths]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathConfig {
    /// Directories the tools may touch. Relative argument paths resolve
    /// against the first.
    #[serde(default = "crate::plan::gate::config::d::paths_roots")]
    pub roots: Vec<String>,
    /// Most symlinks followed while resolving one path.
    #[serde(default = "crate::plan::gate::config::d::paths_max_symlinks")]
    pub max_symlinks: usize,
    /// Characters that are flagged wherever they appear (invisible,
    /// bidirectional controls, other control characters).
    #[serde(default = "crate::plan::gate::config::d::paths_suspicious_chars")]
    pub suspicious_chars: ConfigRegex,
    /// Windows path syntax (drive letters, UNC prefixes, backslashes).
    #[serde(default = "crate::plan::gate::config::d::paths_windows_syntax")]
    pub windows_syntax: ConfigRegex,
    /// A leading `~`, which no shell expands in a tool argument.
    #[serde(default = "crate::plan::gate::config::d::paths_tilde")]
    pub tilde: ConfigRegex,
    /// Outcome of each check.
    #[serde(default = "crate::plan::gate::config::d::paths_checks")]
    pub checks: PathChecks,
}

/// `[gate.paths.checks]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathChecks {
    /// A NUL byte in the path.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_nul_byte")]
    pub nul_byte: Check,
    /// A character matched by `suspicious_chars`.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_suspicious_chars")]
    pub suspicious_chars: Check,
    /// A match of `windows_syntax`.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_windows_syntax")]
    pub windows_syntax: Check,
    /// A match of `tilde`.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_tilde")]
    pub tilde: Check,
    /// No root is configured: nothing can be contained.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_no_roots")]
    pub no_roots: Check,
    /// A read outside every root.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_outside_read")]
    pub outside_read: Check,
    /// A write outside every root.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_outside_write")]
    pub outside_write: Check,
    /// Lexically inside a root, but a symlink leads outside.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_symlink_escape")]
    pub symlink_escape: Check,
    /// A file read, written or deleted while an allowed root holds every
    /// file (`/`), or every file of the user (the home directory or an
    /// ancestor of it): where an MCP client starts the proxy in `/` or in
    /// the home directory and sends no roots. Containment proves nothing
    /// there; the shipped policy asks.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_broad_root")]
    pub broad_root: Check,
    /// A path argument that names credentials or secrets (`[gate.shell]
    /// sensitive_reads`: `~/.ssh`, `~/.aws`, `/etc/shadow`, ...), read or
    /// written, inside the roots or not: a project that holds such a file
    /// does not make reading it safe. The shipped policy asks.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_sensitive")]
    pub sensitive: Check,
    /// Too many symlinks to resolve (a loop).
    #[serde(default = "crate::plan::gate::config::d::paths_checks_unresolvable")]
    pub unresolvable: Check,
    /// A write to an existing regular file with more than one hard link:
    /// the same file has another name, which may lie outside the roots, and
    /// neither the path's text nor its symlinks show where. New files and
    /// files with one link are not affected.
    #[serde(default = "crate::plan::gate::config::d::paths_checks_hard_link_write")]
    pub hard_link_write: Check,
    /// The same for reads; not checked when absent (the shipped policy
    /// leaves it out: reading a hard-linked file is allowed).
    #[serde(default)]
    pub hard_link_read: Option<Check>,
}
