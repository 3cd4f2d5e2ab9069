//! `[gate.shell]`: wrappers, interpreters, `find`, option syntax, and the
//! rules on normalised commands and redirections.

use serde::Deserialize;

use super::types::{Action, Check, ConfigRegex, Severity};

/// `[gate.shell]`: everything the shell analyzer knows.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellConfig {
    /// Size and nesting limits.
    #[serde(default = "crate::plan::gate::config::d::shell_limits")]
    pub limits: ShellLimits,
    /// Actions of the structural checks.
    #[serde(default = "crate::plan::gate::config::d::shell_checks")]
    pub checks: ShellChecks,
    /// Operands that make an interpreter read its program from standard
    /// input (`-`, `/dev/stdin`...).
    #[serde(default = "crate::plan::gate::config::d::shell_stdin_operands")]
    pub stdin_operands: ConfigRegex,
    /// Commands that run another command given in their arguments.
    #[serde(default = "crate::plan::gate::config::d::shell_wrappers")]
    pub wrappers: Vec<WrapperSpec>,
    /// Commands that run code: shells, `eval`, script interpreters.
    #[serde(default = "crate::plan::gate::config::d::shell_interpreters")]
    pub interpreters: Vec<InterpreterSpec>,
    /// How `find` runs commands and deletes.
    #[serde(default = "crate::plan::gate::config::d::shell_find")]
    pub find: FindSpec,
    /// Per-command option syntax: flag aliases and flags taking a value.
    #[serde(default = "crate::plan::gate::config::d::shell_commands")]
    pub commands: Vec<CommandSpec>,
    /// Rules on normalised commands.
    #[serde(default = "crate::plan::gate::config::d::shell_rules")]
    pub rules: Vec<ShellRule>,
    /// Rules on redirection targets.
    #[serde(default = "crate::plan::gate::config::d::shell_redirect_rules")]
    pub redirect_rules: Vec<RedirectRule>,
    /// Name lookups, built on first use (not configuration).
    #[serde(skip)]
    index: IndexCell,
}

/// Name → entry lookups over a [`ShellConfig`]'s lists.
#[derive(Debug, Default)]
pub(crate) struct ShellIndex {
    pub(crate) rule_names: std::collections::HashSet<String>,
    pub(crate) wrappers: std::collections::HashMap<String, usize>,
    pub(crate) interpreters: std::collections::HashMap<String, usize>,
    pub(crate) commands: std::collections::HashMap<String, usize>,
}

/// A lazily built [`ShellIndex`]; a clone starts empty, so a configuration
/// changed after cloning never uses a stale index.
#[derive(Debug, Default)]
struct IndexCell(std::sync::OnceLock<ShellIndex>);

impl Clone for IndexCell {
    fn clone(&self) -> Self {
        IndexCell::default()
    }
}

impl ShellConfig {
    /// The name lookups over the lists (built on first use).
    pub(crate) fn index(&self) -> &ShellIndex {
        self.index.0.get_or_init(|| {
            let mut ix = ShellIndex::default();
            for r in &self.rules {
                ix.rule_names.extend(r.commands.iter().cloned());
            }
            let first =
                |map: &mut std::collections::HashMap<String, usize>, names: &[String], i| {
                    for n in names {
                        map.entry(n.clone()).or_insert(i);
                    }
                };
            for (i, w) in self.wrappers.iter().enumerate() {
                first(&mut ix.wrappers, &w.names, i);
            }
            for (i, w) in self.interpreters.iter().enumerate() {
                first(&mut ix.interpreters, &w.names, i);
            }
            for (i, w) in self.commands.iter().enumerate() {
                first(&mut ix.commands, &w.names, i);
            }
            ix
        })
    }
}

/// `[gate.shell.limits]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellLimits {
    /// Longest command line analyzed, in bytes.
    #[serde(default = "crate::plan::gate::config::d::shell_limits_max_input_bytes")]
    pub max_input_bytes: usize,
    /// Deepest nesting of re-parsed code (`$(...)`, `sh -c`, `eval`...).
    #[serde(default = "crate::plan::gate::config::d::shell_limits_max_depth")]
    pub max_depth: usize,
    /// Deepest bracket nesting in one line (guards the parser's stack).
    #[serde(default = "crate::plan::gate::config::d::shell_limits_max_nesting")]
    pub max_nesting: usize,
    /// Most words one brace expansion may produce.
    #[serde(default = "crate::plan::gate::config::d::shell_limits_max_brace_expansion")]
    pub max_brace_expansion: usize,
    /// Most wrappers unwrapped around one command.
    #[serde(default = "crate::plan::gate::config::d::shell_limits_max_wrappers")]
    pub max_wrappers: usize,
    /// Most parser runs (the line, each substitution, each `sh -c` string...)
    /// for one input: bounds the work whatever the shape of the input.
    #[serde(default = "crate::plan::gate::config::d::shell_limits_max_parses")]
    pub max_parses: usize,
}

/// `[gate.shell.checks]`: outcome of each structural check.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellChecks {
    /// The line (or an embedded script) does not parse.
    #[serde(default = "crate::plan::gate::config::d::shell_checks_parse_error")]
    pub parse_error: Check,
    /// Over a limit of `[gate.shell.limits]`.
    #[serde(default = "crate::plan::gate::config::d::shell_checks_too_complex")]
    pub too_complex: Check,
    /// The command name comes from an expansion (`$CMD`, `$(...)`).
    #[serde(default = "crate::plan::gate::config::d::shell_checks_dynamic_command")]
    pub dynamic_command: Check,
    /// Code for an interpreter comes from an expansion (`eval "$x"`,
    /// `sh -c "$VAR"`).
    #[serde(default = "crate::plan::gate::config::d::shell_checks_dynamic_code")]
    pub dynamic_code: Check,
    /// Data from another process is run as code (`curl ... | sh`,
    /// `bash <(curl ...)`).
    #[serde(default = "crate::plan::gate::config::d::shell_checks_piped_code")]
    pub piped_code: Check,
    /// A function that starts itself concurrently (`:(){ :|:& };:`).
    #[serde(default = "crate::plan::gate::config::d::shell_checks_fork_bomb")]
    pub fork_bomb: Check,
}

/// A command that runs another command (`[[gate.shell.wrappers]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapperSpec {
    /// Command basenames.
    pub names: Vec<String>,
    /// Options that take a value (next argument, or attached).
    #[serde(default)]
    pub value_flags: Vec<String>,
    /// Skip `NAME=value` arguments before the command (`env`, `sudo`).
    #[serde(default)]
    pub skip_assignments: bool,
    /// Positional arguments before the command (`timeout DURATION`).
    #[serde(default)]
    pub positional: usize,
    /// The wrapped command gets more arguments at run time (`xargs`): this
    /// text is appended as an unknown (dynamic) operand.
    #[serde(default)]
    pub appends_operand: Option<String>,
    /// Options whose value is a shell command line (`env -S`, `flock -c`).
    #[serde(default)]
    pub code_flags: Vec<String>,
    /// The remaining arguments are joined into a shell command line
    /// (`watch`) instead of being run as argv.
    #[serde(default)]
    pub args_are_code: bool,
    /// Options that make the wrapper not run anything (`command -v`).
    #[serde(default)]
    pub no_exec_flags: Vec<String>,
}

/// Where an interpreter finds code without a code flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeOperands {
    /// Operands are script files or arguments, not code.
    None,
    /// The first operand is code (`trap CODE SIGNAL`).
    First,
    /// All operands joined by spaces are code (`eval`).
    All,
}

/// A command that runs code (`[[gate.shell.interpreters]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterpreterSpec {
    /// Command basenames.
    pub names: Vec<String>,
    /// The code is shell syntax: it is parsed and analyzed recursively.
    /// Code in other languages is not analyzed, only its origin.
    pub shell: bool,
    /// Flags that mark inline code.
    #[serde(default)]
    pub code_flags: Vec<String>,
    /// `true`: the code is the code flag's value (`python -c CODE`);
    /// `false`: the code flag is boolean and the code is the first operand
    /// (`sh -c CODE`).
    #[serde(default)]
    pub code_flag_takes_value: bool,
    /// Code given as operands without a flag.
    pub code_operands: CodeOperands,
    /// Other options that take a value.
    #[serde(default)]
    pub value_flags: Vec<String>,
    /// The first operand is a script file to run.
    #[serde(default)]
    pub operands_are_scripts: bool,
    /// Without inline code or a script, the program is read from stdin.
    #[serde(default)]
    pub reads_stdin: bool,
    /// Flags that make it read the program from stdin whatever the operands
    /// (`sh -s`).
    #[serde(default)]
    pub stdin_flags: Vec<String>,
    /// Options may follow operands (GNU argument permutation, as in `su`).
    #[serde(default)]
    pub permute: bool,
}

/// `[gate.shell.find]`: how `find` runs commands.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindSpec {
    /// Command basenames.
    pub names: Vec<String>,
    /// Leading options (before start paths) that take a value.
    #[serde(default)]
    pub leading_value_flags: Vec<String>,
    /// Actions that run a command up to `;` or `+` (`-exec`, `-ok`...).
    pub exec_actions: Vec<String>,
    /// Actions that delete what is found (`-delete`).
    pub delete_actions: Vec<String>,
    /// Argv of the command a delete action amounts to, run on each start
    /// path (e.g. `["rm", "-r", "-f"]`).
    pub delete_as: Vec<String>,
    /// The placeholder replaced by each found path (`{}`).
    pub placeholder: String,
    /// Start paths when none is given.
    pub default_start: String,
}

/// Option syntax of one or more commands (`[[gate.shell.commands]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// Command basenames.
    pub names: Vec<String>,
    /// Flag spelling -> canonical flag (`"--recursive" = "-r"`).
    #[serde(default)]
    pub flag_aliases: std::collections::BTreeMap<String, String>,
    /// Flags (canonical or not) that take a value.
    #[serde(default)]
    pub value_flags: Vec<String>,
}

/// Which operands a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperandPosition {
    /// Any operand.
    #[default]
    Any,
    /// The first operand.
    First,
    /// The last operand.
    Last,
    /// Every operand but the last (sources of `cp`/`mv`).
    NotLast,
}

/// A rule on a normalised simple command (`[[gate.shell.rules]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellRule {
    /// Rule id reported in findings.
    pub id: String,
    /// Command basenames the rule applies to.
    #[serde(default)]
    pub commands: Vec<String>,
    /// Or a regex on the basename.
    #[serde(default)]
    pub command_regex: Option<ConfigRegex>,
    /// Canonical flags that must all be present.
    #[serde(default)]
    pub flags_all: Vec<String>,
    /// Canonical flags of which one must be present (if any listed).
    #[serde(default)]
    pub flags_any: Vec<String>,
    /// Regex an operand must match (after quote removal and lexical path
    /// normalisation).
    #[serde(default)]
    pub operand: Option<ConfigRegex>,
    /// The operand must come from an expansion or be supplied at run time.
    #[serde(default)]
    pub operand_dynamic: bool,
    /// Which operands are looked at.
    #[serde(default)]
    pub operand_position: OperandPosition,
    /// Severity reported in findings.
    pub severity: Severity,
    /// Action reported in findings.
    pub action: Action,
    /// Message for the model; `{detail}` becomes the normalised command.
    pub message: String,
}

/// Kind of a redirection, for [`RedirectRule::modes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedirectMode {
    /// `<`
    Read,
    /// `>`, `&>`
    Write,
    /// `>>`, `&>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `>|`
    Clobber,
}

/// A rule on a redirection target (`[[gate.shell.redirect_rules]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedirectRule {
    /// Rule id reported in findings.
    pub id: String,
    /// Regex the normalised target must match.
    pub target: ConfigRegex,
    /// Redirection kinds the rule applies to.
    pub modes: Vec<RedirectMode>,
    /// Severity reported in findings.
    pub severity: Severity,
    /// Action reported in findings.
    pub action: Action,
    /// Message for the model; `{detail}` becomes the redirection.
    pub message: String,
}
