//! `[gate]` of a policy: the configuration of every layer of the call gate.
//!
//! The section is deserialized with serde straight from the policy's TOML
//! text, so every problem (unknown key, wrong type, a regex the linear-time
//! engine rejects) comes with the file:line:column of the offending value.
//! Unknown keys are errors at every level.
//!
//! Every key is optional: a key left out takes the value shipped in
//! `policies/default.toml`, field by field (lists of rules are replaced
//! whole). A policy without `[gate]` gets the shipped gate unchanged.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::code::CodeRules;
use super::path::{PathChecks, PathConfig};
use super::patterns::PatternRule;
use super::shell::{
    BuiltinRole, CommandSpec, ConfigKeys, EffectChecks, EnvSpec, FindSpec, InterpreterSpec,
    RedirectRule, ShellChecks, ShellConfig, ShellLimits, ShellRule, WrapperSpec,
};
use super::sql::{FunctionRule, ReadOnlySpec, SqlChecks, SqlConfig};
use super::types::{Action, Check, ConfigRegex, Severity};
use crate::parse::tags::{ArgRole, RiskLevel};

/// The `[gate]` table of a policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    /// `[gate.limits]`: bounds on the arguments of one call.
    #[serde(default = "d::limits")]
    pub limits: Limits,
    /// `[gate.checks]`: outcome of the call-level checks.
    #[serde(default = "d::checks")]
    pub checks: CallChecks,
    /// `[gate.coercion]`: which string-to-type coercions are applied.
    #[serde(default = "d::coercion")]
    pub coercion: Coercion,
    /// `[[gate.infer]]`: argument roles inferred for tools whose tags declare none.
    #[serde(default = "d::infer")]
    pub infer: Vec<InferRule>,
    /// `[gate.risk]`: the decision table.
    #[serde(default = "d::risk")]
    pub risk: RiskConfig,
    /// `[gate.execution]`: timeout and retries of the execution helper.
    #[serde(default = "d::execution")]
    pub execution: ExecutionConfig,
    /// `[gate.audit]`: redaction of audit records.
    #[serde(default = "d::audit")]
    pub audit: AuditConfig,
    /// `[gate.shell]`.
    #[serde(default = "d::shell")]
    pub shell: ShellConfig,
    /// `[gate.sql]`.
    #[serde(default = "d::sql")]
    pub sql: SqlConfig,
    /// `[gate.paths]`.
    #[serde(default = "d::paths")]
    pub paths: PathConfig,
    /// `[[gate.patterns]]`: regex rules over string arguments.
    #[serde(default = "d::patterns")]
    pub patterns: Vec<PatternRule>,
    /// Whether a registered tool that is not in the active set may still be
    /// called (seed 000's `get_handler` serves any registered tool: true).
    /// Read by the MCP proxy.
    #[serde(default = "allow_inactive_calls_default")]
    pub allow_inactive_calls: bool,
    /// `[gate.flow]`: data-flow labels and rules over a session's history.
    #[serde(default = "d::flow")]
    pub flow: super::flow::FlowConfig,
}

fn allow_inactive_calls_default() -> bool {
    true
}

/// `[gate.limits]`: what one call's arguments may weigh. Over a limit, the
/// call is denied with a clear finding before any analysis runs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Longest arguments JSON text (or its equivalent size), in bytes.
    #[serde(default = "d::limits_max_argument_bytes")]
    pub max_argument_bytes: usize,
    /// Deepest nesting of arrays and objects.
    #[serde(default = "d::limits_max_depth")]
    pub max_depth: usize,
    /// Most JSON values (every scalar, array and object counts one).
    #[serde(default = "d::limits_max_values")]
    pub max_values: usize,
    /// Most findings kept for one call (the rest are counted in the message).
    #[serde(default = "d::limits_max_findings")]
    pub max_findings: usize,
}

/// `[gate.checks]`: call-level checks.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallChecks {
    /// The tool is not registered.
    #[serde(default = "d::checks_unknown_tool")]
    pub unknown_tool: Check,
    /// The arguments are not valid JSON, or not an object.
    #[serde(default = "d::checks_invalid_json")]
    pub invalid_json: Check,
    /// Over a limit of `[gate.limits]`.
    #[serde(default = "d::checks_too_large")]
    pub too_large: Check,
    /// Schema violations; the id is a prefix (`schema.required`, `schema.type`, ...).
    #[serde(default = "d::checks_invalid_arguments")]
    pub invalid_arguments: Check,
    /// An argument the schema does not declare, on a tool with a shell,
    /// SQL or path role (no rule would see it).
    #[serde(default = "d::checks_undeclared_argument")]
    pub undeclared_argument: Check,
}

/// `[gate.coercion]`: coercion toward the declared type only.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coercion {
    /// `"3"` → 3 where an integer or number is declared.
    #[serde(default = "d::coercion_numeric_strings")]
    pub numeric_strings: bool,
    /// `"yes"` → true where a boolean is declared (by value, never truthiness).
    #[serde(default = "d::coercion_boolean_strings")]
    pub boolean_strings: bool,
    /// A JSON-encoded string decoded where an array or object is declared.
    #[serde(default = "d::coercion_json_strings")]
    pub json_strings: bool,
    /// Spellings of true (compared trimmed and case-insensitively).
    #[serde(default = "d::coercion_true_values")]
    pub true_values: Vec<String>,
    /// Spellings of false.
    #[serde(default = "d::coercion_false_values")]
    pub false_values: Vec<String>,
    /// Most values one call's coercion may visit while trying `anyOf`/`oneOf`
    /// branches (each try works on a copy of the value); past it, values are
    /// left as sent and validation decides. Bounds the work on nested unions.
    #[serde(default = "d::coercion_max_trial_values")]
    pub max_trial_values: usize,
}

/// JSON type an inferred argument must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JsonType {
    /// A string.
    String,
    /// An array (of strings).
    Array,
}

/// `[[gate.infer]]`: for a tool whose tags declare no `arguments`, a
/// property with one of `names` and the declared `type` gets `role` when the
/// tool has one of `domains` or `categories` (both empty: any tool). The
/// property may sit at any depth of the input schema (inside objects, array
/// items, `$ref`s and `anyOf`/`oneOf` branches): the role's path is then
/// `/edits/*/file_path`, and every value at it is checked. A property whose
/// declared types include `type` matches (`anyOf: [string, null]` is a string).
/// `tool_words` narrows a rule to tools whose name or description says so;
/// `fallback` rules apply only where the others give the tool no role.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferRule {
    /// The role given.
    pub role: ArgRole,
    /// Property names (exact, case-insensitive).
    pub names: Vec<String>,
    /// The declared JSON type the property must have.
    #[serde(rename = "type")]
    pub json_type: JsonType,
    /// Tool domains the rule applies to.
    #[serde(default)]
    pub domains: Vec<String>,
    /// Tool categories the rule applies to.
    #[serde(default)]
    pub categories: Vec<String>,
    /// Words the tool's name or description must hold (one of them, as a
    /// whole word, case-insensitive; the name is split at `.`, `_`, `-` and
    /// case changes too): `["sql"]` gives `execute_sql` and "Run SQL on
    /// the database" the rule. Empty: any tool.
    #[serde(default)]
    pub tool_words: Vec<String>,
    /// A fallback: applies only to a tool that the other rules give no
    /// role (an auto-tagged tool of an unknown server), and not to an open
    /// schema (one that declares no property).
    #[serde(default)]
    pub fallback: bool,
}

/// What a risk rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RiskDecision {
    /// Allow the call.
    Allow,
    /// Ask the user.
    Ask,
    /// Deny the call.
    Deny,
    /// The strictest action among the findings (allow when there are none).
    Finding,
}

/// `[gate.risk]`: the decision table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RiskConfig {
    /// Risk level of a tool whose tags do not give one (seed 002: `safe`).
    #[serde(default = "d::risk_default_risk_level")]
    pub default_risk_level: RiskLevel,
    /// Rules, tried in order; the first whose conditions all hold decides.
    /// When none holds, the strictest finding action decides.
    #[serde(default = "d::risk_rules")]
    pub rules: Vec<RiskRule>,
}

/// One row of the decision table. Absent conditions always hold.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RiskRule {
    /// Shown in findings and explanations.
    pub name: String,
    /// The tool's risk level is one of these.
    #[serde(default)]
    pub risk_level: Option<Vec<RiskLevel>>,
    /// The tool's requires-confirmation flag equals this.
    #[serde(default)]
    pub requires_confirmation: Option<bool>,
    /// The most severe finding is at least this severe (no finding: never holds).
    #[serde(default)]
    pub min_severity: Option<Severity>,
    /// The strictest finding action is one of these (`allow` when no finding).
    #[serde(default)]
    pub finding_action: Option<Vec<Action>>,
    /// The decision.
    pub decision: RiskDecision,
    /// Message for the model when the rule is what makes the call ask or deny.
    #[serde(default)]
    pub message: Option<String>,
}

/// `[gate.execution]`: defaults of the execution helper; a tool's
/// `timeout_seconds` and `max_retries` tags override them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutionConfig {
    /// Time limit of one attempt, in seconds (seed 002: 30).
    #[serde(default = "d::execution_timeout_seconds")]
    pub timeout_seconds: f64,
    /// Retries after a retryable failure (seed 002: 1).
    #[serde(default = "d::execution_max_retries")]
    pub max_retries: u32,
    /// Wait before the first retry, in milliseconds (seed 002: 500).
    #[serde(default = "d::execution_backoff_initial_ms")]
    pub backoff_initial_ms: u64,
    /// Each further wait is multiplied by this.
    #[serde(default = "d::execution_backoff_factor")]
    pub backoff_factor: f64,
    /// Longest wait, in milliseconds.
    #[serde(default = "d::execution_backoff_max_ms")]
    pub backoff_max_ms: u64,
    /// Whether a timed-out attempt is retried.
    #[serde(default = "d::execution_retry_timeouts")]
    pub retry_timeouts: bool,
}

/// `[gate.audit]`: what audit records keep of the arguments.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// Argument keys whose values are replaced (any depth).
    #[serde(default = "d::audit_redact_keys")]
    pub redact_keys: ConfigRegex,
    /// Secrets inside string values, replaced wherever they appear.
    #[serde(default = "d::audit_redact_values")]
    pub redact_values: Vec<ConfigRegex>,
    /// The replacement text.
    #[serde(default = "d::audit_replacement")]
    pub replacement: String,
    /// Longest redacted argument preview kept in a record, in bytes.
    #[serde(default = "d::audit_max_preview_bytes")]
    pub max_preview_bytes: usize,
}

/// A policy document seen only for its `[gate]` table.
#[derive(Deserialize)]
pub(crate) struct Wrapper {
    /// `[gate]`, when present.
    #[serde(default)]
    pub(crate) gate: Option<GateConfig>,
}

thread_local! {
    static BUILDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The gate configuration shipped in `policies/default.toml`.
///
/// The shipped file is embedded and tested; it defines every key, so the
/// panics below are unreachable in a tested build.
pub fn shipped() -> &'static GateConfig {
    static SHIPPED: OnceLock<GateConfig> = OnceLock::new();
    if BUILDING.with(|b| b.get()) {
        panic!("policies/default.toml lacks a [gate] key that has no other default");
    }
    SHIPPED.get_or_init(|| {
        BUILDING.with(|b| b.set(true));
        let parsed = toml::from_str::<Wrapper>(crate::defaults::DEFAULT_POLICY.1);
        BUILDING.with(|b| b.set(false));
        match parsed {
            Ok(Wrapper { gate: Some(g) }) => g,
            Ok(_) => panic!("policies/default.toml has no [gate]"),
            Err(e) => panic!("policies/default.toml [gate] does not load: {e}"),
        }
    })
}

/// Field defaults: the shipped value of each key.
#[allow(missing_docs)]
pub(crate) mod d {
    use super::*;

    macro_rules! shipped_defaults {
        ($($name:ident : $ty:ty = $($field:ident).+ ;)*) => {
            $(pub(crate) fn $name() -> $ty { shipped().$($field).+.clone() })*
        };
    }

    shipped_defaults! {
        limits: Limits = limits;
        checks: CallChecks = checks;
        coercion: Coercion = coercion;
        infer: Vec<InferRule> = infer;
        risk: RiskConfig = risk;
        execution: ExecutionConfig = execution;
        audit: AuditConfig = audit;
        shell: ShellConfig = shell;
        sql: SqlConfig = sql;
        paths: PathConfig = paths;
        patterns: Vec<PatternRule> = patterns;
        flow: super::super::flow::FlowConfig = flow;
        limits_max_argument_bytes: usize = limits.max_argument_bytes;
        limits_max_depth: usize = limits.max_depth;
        limits_max_values: usize = limits.max_values;
        limits_max_findings: usize = limits.max_findings;
        checks_unknown_tool: Check = checks.unknown_tool;
        checks_invalid_json: Check = checks.invalid_json;
        checks_too_large: Check = checks.too_large;
        checks_invalid_arguments: Check = checks.invalid_arguments;
        checks_undeclared_argument: Check = checks.undeclared_argument;
        coercion_numeric_strings: bool = coercion.numeric_strings;
        coercion_boolean_strings: bool = coercion.boolean_strings;
        coercion_json_strings: bool = coercion.json_strings;
        coercion_true_values: Vec<String> = coercion.true_values;
        coercion_false_values: Vec<String> = coercion.false_values;
        coercion_max_trial_values: usize = coercion.max_trial_values;
        risk_default_risk_level: RiskLevel = risk.default_risk_level;
        risk_rules: Vec<RiskRule> = risk.rules;
        execution_timeout_seconds: f64 = execution.timeout_seconds;
        execution_max_retries: u32 = execution.max_retries;
        execution_backoff_initial_ms: u64 = execution.backoff_initial_ms;
        execution_backoff_factor: f64 = execution.backoff_factor;
        execution_backoff_max_ms: u64 = execution.backoff_max_ms;
        execution_retry_timeouts: bool = execution.retry_timeouts;
        audit_redact_keys: ConfigRegex = audit.redact_keys;
        audit_redact_values: Vec<ConfigRegex> = audit.redact_values;
        audit_replacement: String = audit.replacement;
        audit_max_preview_bytes: usize = audit.max_preview_bytes;
        shell_limits: ShellLimits = shell.limits;
        shell_checks: ShellChecks = shell.checks;
        shell_stdin_operands: ConfigRegex = shell.stdin_operands;
        shell_wrappers: Vec<WrapperSpec> = shell.wrappers;
        shell_interpreters: Vec<InterpreterSpec> = shell.interpreters;
        shell_find: FindSpec = shell.find;
        shell_find_broad_starts: ConfigRegex = shell.find.broad_starts;
        shell_find_sensitive_names: Vec<String> = shell.find.sensitive_names;
        shell_find_passes_listing: Vec<String> = shell.find.passes_listing;
        shell_commands: Vec<CommandSpec> = shell.commands;
        shell_rules: Vec<ShellRule> = shell.rules;
        shell_redirect_rules: Vec<RedirectRule> = shell.redirect_rules;
        shell_limits_max_input_bytes: usize = shell.limits.max_input_bytes;
        shell_limits_max_depth: usize = shell.limits.max_depth;
        shell_limits_max_nesting: usize = shell.limits.max_nesting;
        shell_limits_max_brace_expansion: usize = shell.limits.max_brace_expansion;
        shell_limits_max_wrappers: usize = shell.limits.max_wrappers;
        shell_limits_max_parses: usize = shell.limits.max_parses;
        shell_limits_max_cwds: usize = shell.limits.max_cwds;
        shell_limits_max_function_calls: usize = shell.limits.max_function_calls;
        shell_limits_max_links: usize = shell.limits.max_links;
        shell_unknown_command: Action = shell.unknown_command;
        shell_suspicious_chars: ConfigRegex = shell.suspicious_chars;
        shell_system_bin_dirs: Vec<String> = shell.system_bin_dirs;
        shell_harmless_programs: Vec<String> = shell.harmless_programs;
        shell_harmless_redirects: ConfigRegex = shell.harmless_redirects;
        shell_sensitive_reads: ConfigRegex = shell.sensitive_reads;
        shell_trusted: Vec<String> = shell.trusted;
        shell_cwd_arguments: Vec<String> = shell.cwd_arguments;
        shell_effects: EffectChecks = shell.effects;
        shell_env: Vec<EnvSpec> = shell.env;
        shell_config: BTreeMap<String, ConfigKeys> = shell.config;
        shell_code: BTreeMap<String, CodeRules> = shell.code;
        shell_builtins: BTreeMap<String, BuiltinRole> = shell.builtins;
        shell_package_files: ConfigRegex = shell.package_files;
        shell_command_urls: ConfigRegex = shell.command_urls;
        shell_checks_unknown_command: Check = shell.checks.unknown_command;
        shell_checks_suspicious_chars: Check = shell.checks.suspicious_chars;
        shell_checks_alias: Check = shell.checks.alias;
        shell_effects_write_outside: Check = shell.effects.write_outside;
        shell_effects_delete_outside: Check = shell.effects.delete_outside;
        shell_effects_read_outside: Check = shell.effects.read_outside;
        shell_effects_read_sensitive: Check = shell.effects.read_sensitive;
        shell_effects_dynamic_path: Check = shell.effects.dynamic_path;
        shell_effects_symlink_escape: Check = shell.effects.symlink_escape;
        shell_effects_exec: Check = shell.effects.exec;
        shell_effects_code: Check = shell.effects.code;
        shell_effects_script_outside: Check = shell.effects.script_outside;
        shell_effects_env_code: Check = shell.effects.env_code;
        shell_effects_network: Check = shell.effects.network;
        shell_effects_system: Check = shell.effects.system;
        shell_effects_remote: Check = shell.effects.remote;
        shell_effects_install: Check = shell.effects.install;
        shell_effects_project: Check = shell.effects.project;
        shell_effects_dynamic_host: Check = shell.effects.dynamic_host;
        shell_effects_exfiltration: Check = shell.effects.exfiltration;
        shell_effects_written_code: Check = shell.effects.written_code;
        shell_secret_variables: ConfigRegex = shell.secret_variables;
        shell_data_files: ConfigRegex = shell.data_files;
        shell_keeps_content: Vec<String> = shell.keeps_content;
        shell_writes_trees: Vec<String> = shell.writes_trees;
        shell_written_code: Vec<crate::plan::gate::written::WrittenCode> = shell.written_code;
        shell_written_runners: Vec<crate::plan::gate::written::WrittenRunner> = shell.written_runners;
        shell_checks_parse_error: Check = shell.checks.parse_error;
        shell_checks_too_complex: Check = shell.checks.too_complex;
        shell_checks_dynamic_command: Check = shell.checks.dynamic_command;
        shell_checks_dynamic_code: Check = shell.checks.dynamic_code;
        shell_checks_piped_code: Check = shell.checks.piped_code;
        shell_checks_fork_bomb: Check = shell.checks.fork_bomb;
        sql_default_dialect: String = sql.default_dialect;
        sql_dialects: BTreeMap<String, String> = sql.dialects;
        sql_max_input_bytes: usize = sql.max_input_bytes;
        sql_max_nesting: usize = sql.max_nesting;
        sql_tautology_is_no_where: bool = sql.tautology_is_no_where;
        sql_checks: SqlChecks = sql.checks;
        sql_statements: BTreeMap<String, Check> = sql.statements;
        sql_alter_operations: BTreeMap<String, Check> = sql.alter_operations;
        sql_functions: Vec<FunctionRule> = sql.functions;
        sql_executable_comment_prefixes: Vec<String> = sql.executable_comment_prefixes;
        sql_read_only: ReadOnlySpec = sql.read_only;
        sql_checks_parse_error: Check = sql.checks.parse_error;
        sql_checks_too_large: Check = sql.checks.too_large;
        sql_checks_empty: Check = sql.checks.empty;
        sql_checks_delete_without_where: Check = sql.checks.delete_without_where;
        sql_checks_update_without_where: Check = sql.checks.update_without_where;
        sql_checks_stacked: Check = sql.checks.stacked;
        sql_checks_not_read_only: Check = sql.checks.not_read_only;
        sql_checks_executable_comment: Check = sql.checks.executable_comment;
        sql_checks_unlisted_function: Check = sql.checks.unlisted_function;
        paths_roots: Vec<String> = paths.roots;
        paths_max_symlinks: usize = paths.max_symlinks;
        paths_suspicious_chars: ConfigRegex = paths.suspicious_chars;
        paths_windows_syntax: ConfigRegex = paths.windows_syntax;
        paths_tilde: ConfigRegex = paths.tilde;
        paths_checks: PathChecks = paths.checks;
        paths_checks_nul_byte: Check = paths.checks.nul_byte;
        paths_checks_suspicious_chars: Check = paths.checks.suspicious_chars;
        paths_checks_windows_syntax: Check = paths.checks.windows_syntax;
        paths_checks_tilde: Check = paths.checks.tilde;
        paths_checks_no_roots: Check = paths.checks.no_roots;
        paths_checks_outside_read: Check = paths.checks.outside_read;
        paths_checks_outside_write: Check = paths.checks.outside_write;
        paths_checks_symlink_escape: Check = paths.checks.symlink_escape;
        paths_checks_unresolvable: Check = paths.checks.unresolvable;
        paths_checks_broad_root: Check = paths.checks.broad_root;
        paths_checks_sensitive: Check = paths.checks.sensitive;
        paths_checks_hard_link_write: Check = paths.checks.hard_link_write;
    }
}
