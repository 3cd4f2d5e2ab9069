//! `[gate.shell]`: the effect model (what each known command does with its
//! operands and options, environment variables and settings that run code,
//! inline code rules, trusted project commands, the outcome of each
//! effect), wrappers, interpreters, `find`, and the rules on normalised
//! commands and redirections.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap, FxHashSet};

use serde::Deserialize;

use super::code::CodeRules;
use super::effect::{Effect, Effects};
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
    /// What a program the policy does not know gets (fail closed: `ask`).
    #[serde(default = "crate::plan::gate::config::d::shell_unknown_command")]
    pub unknown_command: Action,
    /// Invisible, bidirectional and control characters flagged in any word.
    #[serde(default = "crate::plan::gate::config::d::shell_suspicious_chars")]
    pub suspicious_chars: ConfigRegex,
    /// Directories from which a program named by its path runs as the
    /// command of its basename (`/usr/bin/git` is `git`).
    #[serde(default = "crate::plan::gate::config::d::shell_system_bin_dirs")]
    pub system_bin_dirs: Vec<String>,
    /// Programs that an option, script or environment variable may name
    /// without an `exec` finding (`PAGER=cat`), alone or with options.
    #[serde(default = "crate::plan::gate::config::d::shell_harmless_programs")]
    pub harmless_programs: Vec<String>,
    /// Redirection targets that are not files (`/dev/null`, `/dev/stderr`).
    #[serde(default = "crate::plan::gate::config::d::shell_harmless_redirects")]
    pub harmless_redirects: ConfigRegex,
    /// Reads of these paths (after resolution) get `effects.read_sensitive`.
    #[serde(default = "crate::plan::gate::config::d::shell_sensitive_reads")]
    pub sensitive_reads: ConfigRegex,
    /// Trusted project commands (`NAME` or `NAME SUB`): the `project`
    /// effect of these adds no finding.
    #[serde(default = "crate::plan::gate::config::d::shell_trusted")]
    pub trusted: Vec<String>,
    /// More trusted commands, added to `trusted` (for a deployment that
    /// keeps the shipped list).
    #[serde(default)]
    pub extra_trusted: Vec<String>,
    /// Tool arguments that name the directory the command line runs in.
    #[serde(default = "crate::plan::gate::config::d::shell_cwd_arguments")]
    pub cwd_arguments: Vec<String>,
    /// The outcome of each effect.
    #[serde(default = "crate::plan::gate::config::d::shell_effects")]
    pub effects: EffectChecks,
    /// Environment variables that load or run code.
    #[serde(default = "crate::plan::gate::config::d::shell_env")]
    pub env: Vec<EnvSpec>,
    /// Settings whose values are commands (`git -c`, `ssh -o`), by name.
    #[serde(default = "crate::plan::gate::config::d::shell_config")]
    pub config: BTreeMap<String, ConfigKeys>,
    /// Inline code rules, by language (`python`, `javascript`).
    #[serde(default = "crate::plan::gate::config::d::shell_code")]
    pub code: BTreeMap<String, CodeRules>,
    /// Shell builtins that change the shell's state, by name, and how.
    #[serde(default = "crate::plan::gate::config::d::shell_builtins")]
    pub builtins: BTreeMap<String, BuiltinRole>,
    /// Package operands that are local files (`./pkg`, a wheel), run as
    /// project code rather than installed from a registry.
    #[serde(default = "crate::plan::gate::config::d::shell_package_files")]
    pub package_files: ConfigRegex,
    /// Network addresses that run a command (git's `ext::` transport).
    #[serde(default = "crate::plan::gate::config::d::shell_command_urls")]
    pub command_urls: ConfigRegex,
    /// More known commands, added to `commands`; an entry here replaces a
    /// shipped entry of the same name.
    #[serde(default)]
    pub extra_commands: Vec<CommandSpec>,
    /// Variable names that look like secrets (`GITHUB_TOKEN`,
    /// `AWS_SECRET_ACCESS_KEY`): a URL's query or a request body built
    /// from one gets `effects.exfiltration`.
    #[serde(default = "crate::plan::gate::config::d::shell_secret_variables")]
    pub secret_variables: ConfigRegex,
    /// Request data that names a file whose content is sent (curl's
    /// `-d @FILE`, `-F name=@FILE`, `-F name=<FILE`): the first capture
    /// group that matches is the file.
    #[serde(default = "crate::plan::gate::config::d::shell_data_files")]
    pub data_files: ConfigRegex,
    /// Commands whose writes change a file's metadata (mode, owner, times),
    /// not its content (`chmod +x f` after `echo ... > f` keeps the
    /// content the line showed).
    #[serde(default = "crate::plan::gate::config::d::shell_keeps_content")]
    pub keeps_content: Vec<String>,
    /// Commands whose written paths may be whole directory trees with
    /// content the line does not show (a clone, an extracted archive, a
    /// recursive copy), for the "written now, run later" check of runners
    /// that collect code from every directory under theirs
    /// ([`super::written::WrittenRunner::collects_recursively`]). Each entry
    /// is a command as the effect model names it (`tar`, `git clone`),
    /// optionally followed by flags of which one must be given (`cp -r
    /// -R --recursive -a --archive`: a long flag as written, a short one
    /// also inside a cluster such as `-rf`).
    #[serde(default = "crate::plan::gate::config::d::shell_writes_trees")]
    pub writes_trees: Vec<String>,
    /// Files commands run as code, for the "written now, run later" check
    /// (`[[gate.shell.written_code]]`).
    #[serde(default = "crate::plan::gate::config::d::shell_written_code")]
    pub written_code: Vec<super::written::WrittenCode>,
    /// Where those commands work, from their own options
    /// (`[[gate.shell.written_runners]]`: `make -C`, `npm --prefix`,
    /// `cargo --manifest-path`, `pytest DIR`).
    #[serde(default = "crate::plan::gate::config::d::shell_written_runners")]
    pub written_runners: Vec<super::written::WrittenRunner>,
    /// Name lookups, built on first use (not configuration).
    #[serde(skip)]
    index: IndexCell,
}

/// Name → entry lookups over a [`ShellConfig`]'s lists (FxHash: short
/// keys, looked up several times per command).
#[derive(Debug, Default)]
pub(crate) struct ShellIndex {
    pub(crate) rule_names: FxHashSet<String>,
    pub(crate) wrappers: FxHashMap<String, usize>,
    pub(crate) interpreters: FxHashMap<String, usize>,
    /// Name (`git`, `git log`) → entry: `(true, i)` in `extra_commands`,
    /// `(false, i)` in `commands`.
    pub(crate) commands: FxHashMap<String, (bool, usize)>,
    /// Subcommand names with `*` in a word after the first (`aws *
    /// describe-*`), split into words: tried in order (`extra_commands`
    /// first) when no name matches exactly.
    pub(crate) command_patterns: Vec<(Vec<String>, bool, usize)>,
    /// Trusted command names (`cargo build`, `make`).
    pub(crate) trusted: FxHashSet<String>,
    /// Environment variable names (exact) → entry; prefixes (`GIT_CONFIG_`)
    /// are tried in order.
    pub(crate) env: FxHashMap<String, usize>,
    pub(crate) env_prefixes: Vec<(String, usize)>,
    /// When `suspicious_chars` matches exactly one character (a class, as
    /// shipped): which ASCII bytes it matches. A word of other ASCII bytes
    /// cannot match, and the regex is not run on it.
    pub(crate) suspicious_ascii: Option<[bool; 128]>,
    /// The rules' `command_regex`es as one alternation (one search per
    /// command instead of one per rule); `None` when no rule has one.
    pub(crate) rule_regex: Option<regex::Regex>,
    /// Each name in some rule's `commands` → the rules that apply to it
    /// (named, or whose `command_regex` matches the name), in order.
    pub(crate) rules_for: FxHashMap<String, Vec<usize>>,
    /// The rules with a `command_regex`, in order: the only ones that can
    /// apply to a name no rule names.
    pub(crate) regex_rules: Vec<usize>,
}

impl ShellIndex {
    /// Whether some rule names command `name` (by name or regex).
    pub(crate) fn rule_names_command(&self, cfg: &ShellConfig, name: &str) -> bool {
        self.rule_names.contains(name)
            || match &self.rule_regex {
                Some(r) => r.is_match(name),
                None => cfg
                    .rules
                    .iter()
                    .any(|r| r.command_regex.as_ref().is_some_and(|x| x.is_match(name))),
            }
    }
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
            for n in &ix.rule_names {
                let applies = self.rules.iter().enumerate().filter(|(_, r)| {
                    r.commands.iter().any(|c| c == n)
                        || r.command_regex.as_ref().is_some_and(|x| x.is_match(n))
                });
                let v = applies.map(|(i, _)| i).collect();
                ix.rules_for.insert(n.clone(), v);
            }
            ix.regex_rules = (self.rules.iter().enumerate())
                .filter(|(_, r)| r.command_regex.is_some())
                .map(|(i, _)| i)
                .collect();
            let first = |map: &mut FxHashMap<String, usize>, names: &[String], i| {
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
            for (i, c) in self.extra_commands.iter().enumerate() {
                for n in c.names.iter().filter(|n| is_command_pattern(n)) {
                    ix.command_patterns
                        .push((n.split(' ').map(str::to_owned).collect(), true, i));
                }
            }
            for (i, c) in self.commands.iter().enumerate() {
                for n in &c.names {
                    if is_command_pattern(n) {
                        ix.command_patterns.push((
                            n.split(' ').map(str::to_owned).collect(),
                            false,
                            i,
                        ));
                    } else {
                        ix.commands.entry(n.clone()).or_insert((false, i));
                    }
                }
            }
            for (i, c) in self.extra_commands.iter().enumerate() {
                for n in c.names.iter().filter(|n| !is_command_pattern(n)) {
                    ix.commands.insert(n.clone(), (true, i));
                }
            }
            ix.trusted = self
                .trusted
                .iter()
                .chain(&self.extra_trusted)
                .cloned()
                .collect();
            for (i, e) in self.env.iter().enumerate() {
                for n in &e.names {
                    match n.strip_suffix('*') {
                        Some(p) => ix.env_prefixes.push((p.to_string(), i)),
                        None => {
                            ix.env.entry(n.clone()).or_insert(i);
                        }
                    }
                }
            }
            ix.suspicious_ascii = one_char_ascii(&self.suspicious_chars.0);
            let alternatives: Vec<String> = self
                .rules
                .iter()
                .filter_map(|r| r.command_regex.as_ref())
                .map(|r| format!("(?:{})", r.0.as_str()))
                .collect();
            // (A failure to build leaves the rules' own regexes to run.)
            ix.rule_regex = (!alternatives.is_empty())
                .then(|| {
                    regex::RegexBuilder::new(&alternatives.join("|"))
                        .size_limit(1 << 24)
                        .build()
                        .ok()
                })
                .flatten();
            ix
        })
    }

    /// The entry describing command `name` (`git` or `git log`).
    pub fn command(&self, name: &str) -> Option<&CommandSpec> {
        self.command_match(name).map(|(c, _)| c)
    }

    /// The entry describing command `name`, and whether it was found by a
    /// pattern name (`gcloud * list`) rather than by its own name. A name
    /// matches a pattern of as many words whose every word matches (`*`
    /// stands for any run of characters within the word); exact names win,
    /// then the patterns in the order written (`extra_commands` first).
    pub fn command_match(&self, name: &str) -> Option<(&CommandSpec, bool)> {
        let ix = self.index();
        let pick = |extra: bool, i: usize| {
            if extra {
                &self.extra_commands[i]
            } else {
                &self.commands[i]
            }
        };
        if let Some((extra, i)) = ix.commands.get(name) {
            return Some((pick(*extra, *i), false));
        }
        if ix.command_patterns.is_empty() || !name.contains(' ') {
            return None;
        }
        ix.command_patterns
            .iter()
            .find(|(words, _, _)| {
                let mut n = name.split(' ');
                words
                    .iter()
                    .all(|w| n.next().is_some_and(|x| word_glob(w, x)))
                    && n.next().is_none()
            })
            .map(|(_, extra, i)| (pick(*extra, *i), true))
    }

    /// Whether `name` (`cargo build`) or a prefix of it (`yarn`) is a
    /// trusted project command.
    pub fn trusted(&self, name: &str) -> bool {
        let t = &self.index().trusted;
        if t.contains(name) {
            return true;
        }
        let mut cut = name;
        while let Some((head, _)) = cut.rsplit_once(' ') {
            if t.contains(head) {
                return true;
            }
            cut = head;
        }
        false
    }

    /// The entry for environment variable `name`, if it loads or runs code.
    pub fn env_spec(&self, name: &str) -> Option<&EnvSpec> {
        let ix = self.index();
        ix.env
            .get(name)
            .or_else(|| {
                ix.env_prefixes
                    .iter()
                    .find(|(p, _)| name.starts_with(p.as_str()))
                    .map(|(_, i)| i)
            })
            .map(|i| &self.env[*i])
    }
}

/// For a regex that matches exactly one character (a character class or a
/// single literal character), the ASCII bytes it matches; `None` for any
/// other regex.
fn one_char_ascii(re: &regex::Regex) -> Option<[bool; 128]> {
    use regex_syntax::hir::HirKind;
    let hir = regex_syntax::Parser::new().parse(re.as_str()).ok()?;
    let one = match hir.kind() {
        HirKind::Class(_) => true,
        HirKind::Literal(l) => std::str::from_utf8(&l.0).is_ok_and(|t| t.chars().count() == 1),
        _ => false,
    };
    if !one {
        return None;
    }
    let mut mask = [false; 128];
    let mut buf = [0u8; 4];
    for (b, m) in mask.iter_mut().enumerate() {
        *m = re.is_match(char::from(b as u8).encode_utf8(&mut buf));
    }
    Some(mask)
}

/// `[gate.shell.effects]`: the outcome of each effect. A check whose action
/// is `allow` adds no finding (the effect is still listed by `guard`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectChecks {
    /// A path written outside every root.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_write_outside")]
    pub write_outside: Check,
    /// A path deleted outside every root.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_delete_outside")]
    pub delete_outside: Check,
    /// A path read outside every root.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_read_outside")]
    pub read_outside: Check,
    /// A path read that matches `sensitive_reads`.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_read_sensitive")]
    pub read_sensitive: Check,
    /// A path written or deleted that is only known at run time.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_dynamic_path")]
    pub dynamic_path: Check,
    /// Written or deleted inside the roots by name, outside through a
    /// symlink.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_symlink_escape")]
    pub symlink_escape: Check,
    /// A command line run through another command's options, script or
    /// environment.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_exec")]
    pub exec: Check,
    /// Inline interpreter code outside the harmless subset, or in a
    /// language without a parser.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_code")]
    pub code: Check,
    /// A script or code file from outside the roots (or only known at run
    /// time).
    #[serde(default = "crate::plan::gate::config::d::shell_effects_script_outside")]
    pub script_outside: Check,
    /// An environment variable that loads or runs code.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_env_code")]
    pub env_code: Check,
    /// Contacts the network.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_network")]
    pub network: Check,
    /// Changes the system.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_system")]
    pub system: Check,
    /// Acts on another machine or service.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_remote")]
    pub remote: Check,
    /// Installs packages named in the line.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_install")]
    pub install: Check,
    /// Runs project code without being a trusted project command.
    #[serde(default = "crate::plan::gate::config::d::shell_effects_project")]
    pub project: Check,
    /// A host name built at run time is resolved (DNS exfiltration:
    /// `dig $(whoami).example.com`).
    #[serde(default = "crate::plan::gate::config::d::shell_effects_dynamic_host")]
    pub dynamic_host: Check,
    /// Data from a file, a command's output or a secret-looking variable
    /// is sent over the network (a URL's query, a request body, an
    /// upload, a `/dev/tcp` redirect).
    #[serde(default = "crate::plan::gate::config::d::shell_effects_exfiltration")]
    pub exfiltration: Check,
    /// A file written earlier in the line is run as code that cannot be
    /// judged (downloaded, or of a kind without a reader).
    #[serde(default = "crate::plan::gate::config::d::shell_effects_written_code")]
    pub written_code: Check,
}

/// What a shell builtin does to the shell's state (`[gate.shell.builtins]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuiltinRole {
    /// Changes the working directory (`cd`).
    Chdir,
    /// Pushes the directory and changes to another (`pushd`).
    Pushd,
    /// Pops the directory stack (`popd`).
    Popd,
    /// Always succeeds (`true`, `:`).
    Succeed,
    /// Always fails (`false`).
    Fail,
    /// Ends the shell or function (`exit`, `return`).
    Exit,
    /// Assigns its `NAME=VALUE` operands (`declare`, `local`, `readonly`);
    /// with an `x` option they are exported.
    Assign,
    /// Assigns and exports (`export`).
    Export,
    /// Unsets variables (`-f`: functions).
    Unset,
    /// Sets its operands to values read at run time (`read`, `mapfile`).
    ReadVars,
    /// `-v NAME` sets NAME to a value built at run time (`printf -v`).
    PrintfVar,
    /// Defines aliases (`alias NAME=VALUE`).
    Alias,
}

/// How an environment variable's value is read (`[[gate.shell.env]]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvValue {
    /// Files loaded as code, separated by `:` or blanks.
    Files,
    /// Directories searched for code or programs, separated by `:`.
    Dirs,
    /// A command line run later.
    Command,
    /// Interpreter options; those in `code_options` load code.
    Options,
    /// Always code (or changes how commands are read).
    Code,
}

/// An environment variable that loads or runs code (`[[gate.shell.env]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSpec {
    /// Variable names; a trailing `*` matches a prefix.
    pub names: Vec<String>,
    /// How the value is read.
    pub value: EnvValue,
    /// With `value = "options"`: the options that load code.
    #[serde(default)]
    pub code_options: Vec<String>,
    /// Why it matters, for the message (default: it loads or runs code).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Settings whose values run programs (`[gate.shell.config.NAME]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigKeys {
    /// Keys (case-insensitive regex) whose value is a command line.
    #[serde(default)]
    pub exec_keys: Option<ConfigRegex>,
    /// Keys whose value is a command line when it starts with `!`.
    #[serde(default)]
    pub shell_alias_keys: Option<ConfigRegex>,
    /// Values (the whole `KEY=VALUE` text) naming a file that is read: the
    /// regex's first capture group is the path (`curl -d @file`).
    #[serde(default)]
    pub read_values: Option<ConfigRegex>,
    /// The effect on a value without `KEY=` (`cargo --config FILE`:
    /// `script`); such a value is otherwise a key without a value.
    #[serde(default)]
    pub bare_values: Option<Effect>,
    /// The text between key and value when it is not `=` (bash's `bind
    /// -x '"KEYSEQ": COMMAND'`: `:`); a leading double-quoted key is read
    /// to its closing quote first.
    #[serde(default)]
    pub separator: Option<String>,
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
    /// Most working directories tracked at once (`cd a || cd b`); more is
    /// unknown.
    #[serde(default = "crate::plan::gate::config::d::shell_limits_max_cwds")]
    pub max_cwds: usize,
    /// Most calls of functions defined in the line that are followed.
    #[serde(default = "crate::plan::gate::config::d::shell_limits_max_function_calls")]
    pub max_function_calls: usize,
    /// Most links made in the line that are followed (`ln -s`, and their
    /// moves and copies); past it every later path is only known at run
    /// time (fail closed).
    #[serde(default = "crate::plan::gate::config::d::shell_limits_max_links")]
    pub max_links: usize,
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
    /// A program the policy does not know; the action comes from
    /// [`ShellConfig::unknown_command`].
    #[serde(default = "crate::plan::gate::config::d::shell_checks_unknown_command")]
    pub unknown_command: Check,
    /// Invisible or control characters in a word.
    #[serde(default = "crate::plan::gate::config::d::shell_checks_suspicious_chars")]
    pub suspicious_chars: Check,
    /// An alias defined in the line and used.
    #[serde(default = "crate::plan::gate::config::d::shell_checks_alias")]
    pub alias: Check,
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
    /// Options whose value is the directory the command runs in (`env -C`).
    #[serde(default)]
    pub chdir_flags: Vec<String>,
    /// Options whose value is the file the wrapper reads its input from
    /// (`xargs -a FILE`, `--arg-file`), instead of standard input: a file
    /// holding what a `find` for credentials listed makes the wrapped
    /// command read them (src/gate/shell/found.rs).
    #[serde(default)]
    pub input_flags: Vec<String>,
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
    /// The language of non-shell code: its rules in `[gate.shell.code]`
    /// (no rules there: the code asks).
    #[serde(default)]
    pub language: Option<String>,
    /// Options whose value names a module run as a program (`python -m`).
    #[serde(default)]
    pub module_flags: Vec<String>,
    /// Modules run with a module flag that are checked as the command of
    /// the same name (`python -m pytest` is `pytest`); others are unknown.
    #[serde(default)]
    pub modules: Vec<String>,
    /// The code runs in the current shell (`eval`, `source`): its changes
    /// to the working directory and variables remain.
    #[serde(default)]
    pub in_shell: bool,
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
    /// Regex on a start path as the line resolves it (absolute, `~` or
    /// `~user` for a home directory): starts over which a search reaches
    /// credentials (`/`, `/etc`, `/root`, a home directory). A start that
    /// `[gate.shell] sensitive_reads` matches is one too.
    #[serde(default = "crate::plan::gate::config::d::shell_find_broad_starts")]
    pub broad_starts: ConfigRegex,
    /// Globs of file names that may hold keys or credentials (`id_*`,
    /// `*.pem`, `credentials`), compared case-insensitively with the
    /// `-name`/`-iname`/`-path` patterns of a `find` over a broad start
    /// whose output feeds a reader (docs/gate.md, "Finding credentials
    /// with find").
    #[serde(default = "crate::plan::gate::config::d::shell_find_sensitive_names")]
    pub sensitive_names: Vec<String>,
    /// Commands that print what they read (`head`, `sort`, `grep`): in a
    /// pipeline after a `find` that may list credentials, their output
    /// is still that listing (`find ~ -name 'id_*' | sort | xargs cat`).
    /// Any other program that reads the listing is assumed to print it
    /// as well (fail closed), with a reason that names the program.
    #[serde(default = "crate::plan::gate::config::d::shell_find_passes_listing")]
    pub passes_listing: Vec<String>,
}

fn read() -> Effect {
    Effect::Read
}

/// What one command or subcommand does with its operands and options
/// (`[[gate.shell.commands]]`), and its option syntax.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// Command basenames; `NAME SUB` names a subcommand of `NAME`.
    pub names: Vec<String>,
    /// The first operand names a subcommand (a `NAME SUB` entry).
    #[serde(default)]
    pub subcommands: bool,
    /// Effect on each operand.
    #[serde(default = "read")]
    pub operands: Effect,
    /// Effect on the first operand instead.
    #[serde(default)]
    pub first_operand: Option<Effect>,
    /// Effect on the last operand instead, when there are two or more
    /// (with `after_dashdash`, the last of those before `--`).
    #[serde(default)]
    pub last_operand: Option<Effect>,
    /// The first operand is a program (`code:sed`) or data (`none`: grep's
    /// pattern), unless one of `program_unless` is given.
    #[serde(default)]
    pub program_operand: Option<Effect>,
    /// Options that supply the program instead of the first operand.
    #[serde(default)]
    pub program_unless: Vec<String>,
    /// Effect on `+WORD` operands (`less +cmd`, `cargo +nightly`).
    #[serde(default)]
    pub plus_operands: Option<Effect>,
    /// Effect on the operands after `--`.
    #[serde(default)]
    pub after_dashdash: Option<Effect>,
    /// `KEY=VALUE` operands: effect on VALUE by KEY (`dd of=FILE`).
    #[serde(default)]
    pub operand_keys: BTreeMap<String, Effect>,
    /// The first two operands are a setting `KEY VALUE` of these config
    /// rules (`git config core.pager less`).
    #[serde(default)]
    pub config_operands: Option<String>,
    /// Options that take a value, and the effect on the value.
    #[serde(default)]
    pub options: BTreeMap<String, Effect>,
    /// Options without a value and their effects (`operands:EFFECT`
    /// changes the operands' effect; `clear` drops `effects`).
    #[serde(default)]
    pub flags: BTreeMap<String, Effects>,
    /// Effects of every run (`network`, `system`, `write:~/.gitconfig`).
    #[serde(default)]
    pub effects: Vec<Effect>,
    /// Options that name where the command writes instead of the fixed
    /// paths of its `effects`: given one, those effects (`write:.`) are
    /// dropped, its value's own effect stays (`pip download -d DIR`
    /// saves in `DIR`, not in the working directory).
    #[serde(default)]
    pub fixed_unless: Vec<String>,
    /// Without an operand whose effect is code, the command reads code in
    /// this language from standard input (`sqlite3 db` reads `sqlite`):
    /// a here-document is judged as that code, any other input asks.
    #[serde(default)]
    pub stdin_code: Option<String>,
    /// Other options that take a value (next argument, or attached).
    #[serde(default)]
    pub value_flags: Vec<String>,
    /// Options whose value can only be attached (`-i.bak`, `--in-place=x`).
    #[serde(default)]
    pub optional_value_flags: Vec<String>,
    /// Flag spelling -> canonical flag (`"--recursive" = "-r"`), for rules.
    #[serde(default)]
    pub flag_aliases: BTreeMap<String, String>,
    /// The first argument is a flag cluster without `-` (`tar xzf`).
    #[serde(default)]
    pub old_style_flags: bool,
    /// An option this entry does not list makes the command unknown.
    #[serde(default)]
    pub strict_options: bool,
    /// `HOST:PATH` operands are remote (network), not local paths.
    #[serde(default)]
    pub remote_operands: bool,
    /// Given a single operand (a repository URL), the command writes the
    /// directory it derives from the URL, as `git clone` does: the last
    /// path component (after the last `/` or `:`), with trailing `/`,
    /// `/.git` and a `.git` or `.bundle` suffix stripped
    /// (`https://host/org/repo.git` and `git@host:org/repo` give `repo`).
    /// The directory is written like a directory operand would be.
    #[serde(default)]
    pub url_directory: bool,
    /// The option tables as one lookup per option, built on first use (not
    /// configuration).
    #[serde(skip)]
    opts: OptCell,
}

/// What a [`CommandSpec`]'s tables say of one option spelling (`-n`,
/// `--stat`): every table answered by one hash lookup. A spelling in none
/// of the tables has no entry (and reads as all-absent).
#[derive(Debug, Clone)]
pub(crate) struct OptInfo {
    /// `options[name]`: the option's value is an operand with this effect.
    pub(crate) option: Option<Effect>,
    /// The canonical spelling (`flag_aliases[name]`), when it is an alias.
    pub(crate) alias: Option<String>,
    /// `value_flags` holds the name or its canonical spelling.
    pub(crate) takes_value: bool,
    /// `optional_value_flags` holds the name.
    pub(crate) optional_value: bool,
    /// `flags` has the name itself as a key.
    pub(crate) flag_direct: bool,
    /// `flags[name]`, else `flags[canonical]`.
    pub(crate) flag: Option<Effects>,
}

/// A lazily built option index; a clone starts empty, so an entry changed
/// after cloning never uses a stale index.
#[derive(Debug, Default)]
struct OptCell(std::sync::OnceLock<FxHashMap<String, OptInfo>>);

impl Clone for OptCell {
    fn clone(&self) -> Self {
        OptCell::default()
    }
}

impl CommandSpec {
    /// What the option tables say of `name` (one FxHash lookup; the index
    /// is built on first use from `options`, `flags`, `value_flags`,
    /// `optional_value_flags` and `flag_aliases`). `None`: in no table.
    pub(crate) fn opt(&self, name: &str) -> Option<&OptInfo> {
        self.opts
            .0
            .get_or_init(|| {
                let mut m = FxHashMap::default();
                let names = self
                    .options
                    .keys()
                    .chain(self.flags.keys())
                    .chain(self.value_flags.iter())
                    .chain(self.optional_value_flags.iter())
                    .chain(self.flag_aliases.keys());
                for n in names {
                    if m.contains_key(n.as_str()) {
                        continue;
                    }
                    let alias = self.flag_aliases.get(n).cloned();
                    let c = alias.as_deref().unwrap_or(n);
                    let info = OptInfo {
                        option: self.options.get(n).cloned(),
                        takes_value: self.value_flags.iter().any(|v| v == n || v == c),
                        optional_value: self.optional_value_flags.iter().any(|o| o == n),
                        flag_direct: self.flags.contains_key(n),
                        flag: self.flags.get(n).or_else(|| self.flags.get(c)).cloned(),
                        alias,
                    };
                    m.insert(n.clone(), info);
                }
                m
            })
            .get(name)
    }
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
    /// Subcommands the rule applies to (`"push"`, `"stash drop"`): when
    /// listed, the command's first operands must spell one of them, and
    /// `operand` and `operand_position` look at the operands after it.
    #[serde(default)]
    pub subcommands: Vec<String>,
    /// Canonical flags none of which may be present (`git restore
    /// --staged` only unstages).
    #[serde(default)]
    pub flags_none: Vec<String>,
    /// Options whose values `operand` is matched against instead of the
    /// operands (`docker run -v SRC:DST`); each must take a value in the
    /// command's entry (`value_flags` or `options`).
    #[serde(default)]
    pub option_values: Vec<String>,
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

#[cfg(test)]
mod tests {
    use super::one_char_ascii;

    #[test]
    fn one_char_regexes_give_their_ascii_bytes() {
        let shipped = regex::Regex::new(
            r"[\x00-\x08\x0B-\x1F\x7F\p{Cf}\p{Co}\p{Zl}\p{Zp}\x{115F}\x{1160}\x{3164}\x{FFA0}\x{2800}]",
        )
        .unwrap();
        let m = one_char_ascii(&shipped).unwrap();
        assert!(m[0x01] && m[0x1b] && m[0x7f]);
        assert!(!m[b'a' as usize] && !m[b' ' as usize] && !m[b'\t' as usize]);
        let x = one_char_ascii(&regex::Regex::new("x").unwrap()).unwrap();
        assert_eq!(x.iter().filter(|b| **b).count(), 1);
        // More than one character, or an anchor: no shortcut.
        for p in ["ab", "[a-z]+", "^x", "a|bc", "(x)"] {
            assert!(
                one_char_ascii(&regex::Regex::new(p).unwrap()).is_none(),
                "{p}"
            );
        }
    }
}

/// Whether a `[[gate.shell.commands]]` name is a pattern: a `*` in a word
/// after the first (`aws * describe-*`; the program itself is literal).
pub(crate) fn is_command_pattern(name: &str) -> bool {
    name.split_once(' ')
        .is_some_and(|(_, rest)| rest.contains('*'))
}

/// Whether `word` matches `pat`, where each `*` stands for any run of
/// characters (no other wildcard).
fn word_glob(pat: &str, word: &str) -> bool {
    let mut parts = pat.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = word.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for p in middle {
        match rest.find(p) {
            Some(k) => rest = &rest[k + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod pattern_tests {
    use super::word_glob;

    #[test]
    fn word_glob_matches_stars_within_a_word() {
        assert!(word_glob("*", "ec2"));
        assert!(word_glob("describe-*", "describe-instances"));
        assert!(!word_glob("describe-*", "delete-instances"));
        assert!(word_glob("*-list", "node-list"));
        assert!(word_glob("a*b*c", "aXbYc"));
        assert!(!word_glob("a*b*c", "aXcYb"));
        assert!(!word_glob("list", "lists"));
        assert!(word_glob("list", "list"));
        assert!(!word_glob("ab*ba", "aba"));
    }
}
