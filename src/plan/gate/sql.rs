//! `[gate.sql]`: dialects, statement and function rules, read-only checks.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::types::{Action, Check, Severity};

/// `[gate.sql]`: everything the SQL analyzer knows.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlConfig {
    /// Dialect used when the tool gives none (a `sqlparser` dialect name).
    #[serde(default = "crate::plan::gate::config::d::sql_default_dialect")]
    pub default_dialect: String,
    /// Tool dialect tag (lowercase) -> `sqlparser` dialect name
    /// (`generic`, `sqlite`, `postgresql`, `mysql`, `mssql`...). A tag not
    /// listed is tried as a `sqlparser` name.
    #[serde(default = "crate::plan::gate::config::d::sql_dialects")]
    pub dialects: BTreeMap<String, String>,
    /// Longest SQL text analyzed, in bytes.
    #[serde(default = "crate::plan::gate::config::d::sql_max_input_bytes")]
    pub max_input_bytes: usize,
    /// Parser recursion limit (nesting of expressions and subqueries).
    #[serde(default = "crate::plan::gate::config::d::sql_max_nesting")]
    pub max_nesting: usize,
    /// A `WHERE` that is constant true (`1=1`, `true`, `x OR 1=1`) counts
    /// as no `WHERE`.
    #[serde(default = "crate::plan::gate::config::d::sql_tautology_is_no_where")]
    pub tautology_is_no_where: bool,
    /// Actions of the structural checks.
    #[serde(default = "crate::plan::gate::config::d::sql_checks")]
    pub checks: SqlChecks,
    /// Statement variant name -> rule (`Drop`, `Truncate`, `Grant`...).
    #[serde(default = "crate::plan::gate::config::d::sql_statements")]
    pub statements: BTreeMap<String, Check>,
    /// `ALTER TABLE` operation variant name -> rule (`DropColumn`...).
    #[serde(default = "crate::plan::gate::config::d::sql_alter_operations")]
    pub alter_operations: BTreeMap<String, Check>,
    /// Functions whose call is flagged wherever it appears.
    #[serde(default = "crate::plan::gate::config::d::sql_functions")]
    pub functions: Vec<FunctionRule>,
    /// Block comments starting with one of these are run by some servers
    /// (MySQL's `/*! ... */`): flagged by `checks.executable_comment`
    /// whatever the dialect.
    #[serde(default = "crate::plan::gate::config::d::sql_executable_comment_prefixes")]
    pub executable_comment_prefixes: Vec<String>,
    /// What a read-only tool accepts.
    #[serde(default = "crate::plan::gate::config::d::sql_read_only")]
    pub read_only: ReadOnlySpec,
}

/// `[gate.sql.checks]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlChecks {
    /// The SQL does not parse, or names an unknown dialect.
    #[serde(default = "crate::plan::gate::config::d::sql_checks_parse_error")]
    pub parse_error: Check,
    /// The SQL is longer than `max_input_bytes`: too large to analyse
    /// (not a syntax error; the gate fails closed all the same).
    #[serde(default = "crate::plan::gate::config::d::sql_checks_too_large")]
    pub too_large: Check,
    /// No statement at all (only comments or whitespace).
    #[serde(default = "crate::plan::gate::config::d::sql_checks_empty")]
    pub empty: Check,
    /// `DELETE` without `WHERE`.
    #[serde(default = "crate::plan::gate::config::d::sql_checks_delete_without_where")]
    pub delete_without_where: Check,
    /// `UPDATE` without `WHERE`.
    #[serde(default = "crate::plan::gate::config::d::sql_checks_update_without_where")]
    pub update_without_where: Check,
    /// Several statements, one of which was flagged.
    #[serde(default = "crate::plan::gate::config::d::sql_checks_stacked")]
    pub stacked: Check,
    /// A read-only tool got something other than exactly one read statement.
    #[serde(default = "crate::plan::gate::config::d::sql_checks_not_read_only")]
    pub not_read_only: Check,
    /// A comment that some servers execute.
    #[serde(default = "crate::plan::gate::config::d::sql_checks_executable_comment")]
    pub executable_comment: Check,
    /// A read-only tool calls a function `read_only.functions` does not
    /// list.
    #[serde(default = "crate::plan::gate::config::d::sql_checks_unlisted_function")]
    pub unlisted_function: Check,
}

/// `[gate.sql.read_only]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadOnlySpec {
    /// Statement variant names that can be read statements (`Query`,
    /// `Explain`...). A `Query` must also have no write in its body or
    /// CTEs, no `SELECT INTO` and no locking clause; an `Explain` must
    /// explain a read statement.
    pub statements: Vec<String>,
    /// The functions a read-only tool may call (lowercase names, the last
    /// part of a qualified name; table functions included). Empty: any
    /// function not flagged by `[[gate.sql.functions]]`.
    #[serde(default)]
    pub functions: Vec<String>,
    /// SQLite pragmas that only read (`table_info`, `index_list`): a
    /// single `PRAGMA name`, or `PRAGMA name(arg)` with a table or index
    /// name, of these is a read statement on any tool; with `=`, or any
    /// other pragma, it is a `Pragma` statement (and not a read).
    /// Case-insensitive. Empty: every pragma is a `Pragma` statement.
    #[serde(default)]
    pub pragmas: Vec<String>,
}

/// A rule on function calls (`[[gate.sql.functions]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionRule {
    /// Rule id reported in findings.
    pub id: String,
    /// Function names, matched case-insensitively.
    pub names: Vec<String>,
    /// Name prefixes, matched case-insensitively (`system$`).
    #[serde(default)]
    pub prefixes: Vec<String>,
    /// Severity reported in findings.
    pub severity: Severity,
    /// Action reported in findings.
    pub action: Action,
    /// Message for the model; `{detail}` becomes the function name.
    pub message: String,
}
