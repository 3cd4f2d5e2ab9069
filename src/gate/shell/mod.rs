//! Shell command analysis (`[gate.shell]`).
//!
//! A command line is parsed with `brush-parser` (bash grammar). Every simple
//! command is extracted, across lists, pipelines, subshells, groups, control
//! flow, function bodies, command and process substitutions, here-strings,
//! `sh -c` strings and `eval` arguments (parsed recursively), wrappers
//! (`sudo`, `env`, `timeout`, `xargs`...) and `find -exec`. Each command is
//! normalised (quotes and escapes removed as the shell does, name by
//! basename, flag clusters split and long aliases mapped) and matched against
//! the configured rules. Structural checks (unparseable input, command names
//! or code that come from expansions, data piped into an interpreter, fork
//! bombs) take their action from the configuration. A line the parser cannot
//! read yields a `Parse` finding (fail closed).
//!
//! Beyond the rules, every command is checked by its **effects** (the
//! policy's effect model, `[[gate.shell.commands]]`): what it reads,
//! writes and deletes (resolved against the working directory the line
//! has at that point and through the links it made, with `$HOME` as `~`,
//! and checked against `[gate.paths]` roots), the code
//! it runs through its own options, scripts or environment, inline
//! interpreter code (parsed, [`crate::gate::code`]), the network, system
//! changes and package installs. A program the policy does not know asks
//! (fail closed, `unknown_command`).
//!
//! The analysis runs in four stages, one module each:
//!
//! 1. `parse`: tokenize and parse a line (or embedded code) into an AST;
//! 2. `normalize`: words after quote removal and expansion (variables the
//!    line assigned substituted), options and operands as the command
//!    reads them;
//! 3. `effects`: walk the AST in execution order with the shell's
//!    [`state`] (working directory, variables, functions), follow each
//!    command (`commands`: builtins, functions, wrappers, `find`,
//!    interpreters, known commands), read its arguments with its entry
//!    (`model`) and check each effect (`targets`), resolving paths
//!    through the links the line made before (`links`: `ln -s ~ h &&
//!    rm -rf h/` deletes `~`); `spelling` reads how the first word names
//!    the program, `written` judges files the line writes and then runs,
//!    `exfil` the names and data a command sends away;
//! 4. `rules`: match normalised commands and redirections against the
//!    configured rules.
//!
//! The configuration types live with the plan ([`crate::plan::gate::shell`])
//! and are re-exported here.

mod commands;
mod effects;
mod exfil;
mod found;
mod globs;
mod links;
mod model;
mod normalize;
mod parse;
mod rules;
mod spelling;
mod sqlite;
pub mod state;
mod targets;
mod written;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::Serialize;

use super::path::{PathConfig, Roots};
use super::types::{Check, EffectFound, Finding, FindingKind};
use compact_str::CompactString;
use state::{Cwd, Dir, St};

pub use crate::plan::gate::shell::{
    CodeOperands, CommandSpec, ConfigKeys, EffectChecks, EnvSpec, EnvValue, FindSpec,
    InterpreterSpec, OperandPosition, RedirectMode, RedirectRule, ShellChecks, ShellConfig,
    ShellLimits, ShellRule, WrapperSpec,
};

/// The value of a shell-running tool's command argument.
#[derive(Debug, Clone, Copy)]
pub enum ShellInput<'a> {
    /// A command line, run by a shell.
    Line(&'a str),
    /// An argv array run without a shell; the first element is the program.
    /// Elements are literal: no quote removal or expansion applies.
    Argv(&'a [String]),
}

/// Analyzes a shell command line or argv, the argument at JSON pointer
/// `path`, and returns one finding per rule, check or effect that fires.
/// Paths are checked against `paths`' roots; the line starts in the first.
/// The SQL of `sqlite3` command lines is judged with the shipped
/// `[gate.sql]` (a gate uses its policy's).
pub fn analyze_shell(
    cfg: &ShellConfig,
    paths: &PathConfig,
    path: &str,
    input: ShellInput,
) -> Vec<Finding> {
    let want = Want {
        effects: false,
        runs: false,
    };
    let sql = &crate::plan::gate::config::shipped().sql;
    analyze(cfg, sql, paths, None, path, input, None, want).findings
}

/// What the analysis of one command line found.
#[derive(Debug, Clone, Default)]
pub struct ShellAnalysis {
    /// Findings, one per rule, check or effect that fires (deduplicated).
    pub findings: Vec<Finding>,
    /// Every effect found, in the order of the line (deduplicated).
    pub effects: Vec<EffectFound>,
    /// The programs the line runs, as far as the analysis can tell.
    pub runs: Vec<Run>,
}

/// How a program starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunVia {
    /// Run by the shell (a simple command, in any list, pipeline, subshell,
    /// function or `bash -c` string).
    Shell,
    /// Run by a wrapper program (`env`, `nice`, `timeout`, `sudo`...).
    Wrapper,
    /// Run by a program for data it finds at run time (`find -exec`,
    /// `xargs`): its arguments are only partly known.
    Derived,
}

/// A program the line runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Run {
    /// Program and arguments after quote removal and expansion; a part
    /// only known at run time is rendered (`$NAME`, `$(...)`).
    pub argv: Vec<String>,
    /// Some argument is only known at run time.
    pub dynamic: bool,
    /// The working directories it may run in (`.` is where the line starts,
    /// `a/b` below it, `/etc` absolute, `~/x` under home); empty when
    /// unknown.
    pub cwd: Vec<String>,
    /// How it starts.
    pub via: RunVia,
}

/// Analyzes `input` in full: findings, effects and the programs it runs.
/// `start` is the directory the line starts in (a tool's `cwd` argument);
/// `None` is the first root. The SQL of `sqlite3` command lines is judged
/// with the shipped `[gate.sql]`.
pub fn analyze_shell_full(
    cfg: &ShellConfig,
    paths: &PathConfig,
    path: &str,
    input: ShellInput,
    start: Option<&str>,
) -> ShellAnalysis {
    let sql = &crate::plan::gate::config::shipped().sql;
    analyze(cfg, sql, paths, None, path, input, start, Want::all())
}

/// What an analysis records beyond findings (each costs time: strings per
/// effect and per program run).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Want {
    /// Every effect found ([`ShellAnalysis::effects`]).
    pub(crate) effects: bool,
    /// The programs the line runs ([`ShellAnalysis::runs`]).
    pub(crate) runs: bool,
}

impl Want {
    /// Findings, effects and runs.
    pub(crate) fn all() -> Want {
        Want {
            effects: true,
            runs: true,
        }
    }
}

/// [`analyze_shell_full`], recording only what `want` asks for beyond the
/// findings (which are the same either way); `sql` is the `[gate.sql]`
/// that judges the SQL of `sqlite3` command lines; `roots`, `paths`' roots
/// when the caller resolved them already (`None`: resolved here).
#[allow(clippy::too_many_arguments)]
pub(crate) fn analyze(
    cfg: &ShellConfig,
    sql: &crate::plan::gate::sql::SqlConfig,
    paths: &PathConfig,
    roots: Option<Arc<Roots>>,
    path: &str,
    input: ShellInput,
    start: Option<&str>,
    want: Want,
) -> ShellAnalysis {
    let cwd = match start {
        None => Cwd::start(),
        Some(s) if s.contains('$') || s.contains('`') => Cwd::Unknown,
        Some(s) => Cwd::Known(vec![Dir::start().join(s)]),
    };
    let mut w = Walker {
        cfg,
        sql,
        roots: roots.unwrap_or_else(|| super::path::roots(paths)),
        path,
        findings: Vec::new(),
        effects: Vec::new(),
        effect_count: 0,
        runs: Vec::new(),
        opts: brush_parser::ParserOptions::default(),
        parses: 0,
        st: std::rc::Rc::new(state::State::new(cwd)),
        calls: 0,
        call_stack: Vec::new(),
        record: true,
        want_effects: want.effects,
        want_runs: want.runs,
        lstats: super::path::Lstats::default(),
        links: links::Links::default(),
        written: Vec::new(),
        content_kept: false,
        tree_writer: None,
        judging: Vec::new(),
        found: None,
        found_out: None,
        found_subst: None,
        found_stdin: None,
        found_files: Vec::new(),
        found_vars: Vec::new(),
    };
    let scope = Scope::default();
    match input {
        ShellInput::Line(line) => w.parse_and_walk(line, &scope),
        ShellInput::Argv(argv) => {
            let args: Vec<Arg> = argv.iter().map(|a| Arg::literal(a)).collect();
            for a in &args {
                w.suspicious(&a.text);
            }
            w.command(args, &scope, 0, None);
        }
    }
    // The first of each (rule, message); effects are kept once each as
    // they are recorded.
    let keep: Vec<bool> = {
        let mut seen = BTreeSet::new();
        w.findings
            .iter()
            .map(|f| seen.insert((f.rule_id.as_str(), f.message.as_str())))
            .collect()
    };
    let mut k = keep.into_iter();
    w.findings.retain(|_| k.next().unwrap_or(true));
    ShellAnalysis {
        findings: w.findings,
        effects: w.effects,
        runs: w.runs,
    }
}

/// One argument after quote removal.
#[derive(Debug, Clone)]
struct Arg {
    /// Text with quotes and escapes removed; expansions rendered as `$NAME`,
    /// `${...}`, `$(...)`. Inline up to 24 bytes (most words), so an
    /// argument and its copies do not allocate.
    text: CompactString,
    /// Contains an expansion or is supplied at run time.
    dynamic: bool,
    /// A process substitution (`<(...)`): a pipe from another command.
    procsub: bool,
    /// Holds unquoted glob characters: the shell expands it to file names.
    glob: bool,
}

impl Arg {
    fn literal(text: &str) -> Self {
        Arg {
            text: CompactString::from(text),
            dynamic: false,
            procsub: false,
            glob: false,
        }
    }
}

impl model::ArgText for Arg {
    fn text(&self) -> &str {
        &self.text
    }
}

/// What a command's standard input is.
#[derive(Debug, Clone, Default)]
enum Stdin {
    /// Whatever the caller gives (terminal or nothing).
    #[default]
    Inherit,
    /// Output of another command.
    Pipe,
    /// A file.
    File,
    /// A file the line wrote before (`self.written[i]`) with content it
    /// does not show (`curl -o f URL && bash < f`).
    Written(usize),
    /// A here-string or here-document.
    Literal(Arg),
}

#[derive(Debug, Clone, Default)]
struct Scope {
    depth: usize,
    stdin: Stdin,
    /// Names of the functions whose bodies enclose this point.
    functions: Vec<String>,
    /// Runs concurrently with something (pipeline or `&`).
    concurrent: bool,
}

impl Scope {
    fn deeper(&self) -> Scope {
        Scope {
            depth: self.depth + 1,
            stdin: Stdin::Inherit,
            functions: self.functions.clone(),
            concurrent: false,
        }
    }
}

struct Walker<'c> {
    cfg: &'c ShellConfig,
    /// `[gate.sql]`, for the SQL of `sqlite3` ([`sqlite`]).
    sql: &'c crate::plan::gate::sql::SqlConfig,
    roots: Arc<Roots>,
    path: &'c str,
    findings: Vec<Finding>,
    effects: Vec<EffectFound>,
    /// Effects recorded so far, repeats included (the cap counts them).
    effect_count: usize,
    runs: Vec<Run>,
    opts: brush_parser::ParserOptions,
    /// Parser runs so far.
    parses: usize,
    /// The shell's state where the walk is (each walk function starts from
    /// it; see [`effects`]).
    st: St,
    /// Function calls followed so far.
    calls: usize,
    /// Functions being followed (no recursion).
    call_stack: Vec<String>,
    /// Runs are recorded (not while a function body is checked where it is
    /// defined, before any call).
    record: bool,
    /// Effects are wanted ([`Want`]).
    want_effects: bool,
    /// Runs are wanted ([`Want`]).
    want_runs: bool,
    /// What `lstat` said of the paths placed so far.
    lstats: super::path::Lstats,
    /// Links made earlier in the line (`ln -s`), for [`links`].
    links: links::Links,
    /// Files the line wrote so far, for [`written`] (empty for a line
    /// that writes nothing: the check then costs nothing).
    written: Vec<written::Written>,
    /// The command whose targets are being checked only changes metadata
    /// (`chmod`, `touch`: `[gate.shell] keeps_content`): its writes keep
    /// a file's content.
    content_kept: bool,
    /// The command whose targets are being checked writes whole directory
    /// trees (`[gate.shell] writes_trees`: `git clone`, `tar`, `cp -r`):
    /// its name and the flag that made it one, for [`written`]'s messages.
    tree_writer: Option<String>,
    /// Written files whose content is being judged (no recursion).
    judging: Vec<usize>,
    /// The command being followed runs for what a `find` that may list
    /// credentials lists (`find -exec`, `find ... | xargs`): why, for
    /// [`found`]'s messages.
    found: Option<String>,
    /// The last `find` of the pipeline stage being walked prints what may
    /// be credentials: why (passed to the next stage as `found`).
    found_out: Option<String>,
    /// A command substitution in the words of the command being read
    /// prints what a `find` that may list credentials lists: why (a read
    /// of a path built from `$(...)` is then a sensitive read; [`found`]).
    found_subst: Option<String>,
    /// The standard input of the command being read is a file that holds
    /// such a listing (`xargs cat < list`): why.
    found_stdin: Option<String>,
    /// Files the line wrote such a listing to (`find ~ -name id_rsa >
    /// list`; a process substitution's pipe is `/dev/fd/63`), and why
    /// (empty for a line without such a `find`).
    found_files: Vec<(std::path::PathBuf, String)>,
    /// Variables the line read such a listing into (`while read f`,
    /// `f=$(find ...)`, `for f in $(find ...)`), and why.
    found_vars: Vec<(String, String)>,
}

/// Parsed options and operands of a command (the operands borrowed from
/// its arguments).
struct Parsed<'a> {
    flags: BTreeSet<String>,
    operands: Vec<&'a Arg>,
    /// An argument from an expansion could hold options.
    unknown_flags: bool,
    /// The values of options that take one: (canonical option, value), in
    /// argument order (for a rule's `option_values`).
    values: Vec<(String, Arg)>,
}

impl Walker<'_> {
    /// The current state, to change (copied first when shared).
    fn st_mut(&mut self) -> &mut state::State<brush_parser::ast::FunctionBody> {
        std::rc::Rc::make_mut(&mut self.st)
    }

    fn check(&mut self, pick: impl Fn(&ShellChecks) -> &Check, kind: FindingKind, detail: &str) {
        let f = pick(&self.cfg.checks).finding(kind, self.path, detail);
        self.findings.push(f);
    }

    /// Flags invisible, bidirectional and control characters in a word.
    fn suspicious(&mut self, text: &str) {
        if let Some(ascii) = &self.cfg.index().suspicious_ascii
            && text
                .bytes()
                .all(|b| !ascii.get(b as usize).copied().unwrap_or(true))
        {
            return;
        }
        if !self.cfg.suspicious_chars.is_match(text) {
            return;
        }
        let odd: Vec<String> = self
            .cfg
            .suspicious_chars
            .0
            .find_iter(text)
            .flat_map(|m| m.as_str().chars())
            .map(|ch| format!("U+{:04X}", ch as u32))
            .collect();
        let d = format!(
            "word `{}` contains invisible or control characters {}",
            excerpt(&text.escape_debug().to_string()),
            odd.join(", ")
        );
        self.check(|c| &c.suspicious_chars, FindingKind::Shell, &d);
    }

    /// Records an effect for `toolgate guard`.
    /// Records an effect: the first 256 recorded, each (kind, operand,
    /// resolved) once (a repeat counts towards the 256 but is not kept).
    fn effect(&mut self, kind: &'static str, operand: &str, resolved: &str) {
        if self.want_effects && self.effect_count < 256 {
            self.effect_count += 1;
            // Compared before copying: a repeat allocates nothing.
            let (operand, resolved) = (excerpt_cow(operand), excerpt_cow(resolved));
            let seen = self
                .effects
                .iter()
                .any(|e| e.kind == kind && e.operand == *operand && e.resolved == *resolved);
            if !seen {
                self.effects.push(EffectFound {
                    kind: kind.into(),
                    operand: operand.into_owned(),
                    resolved: resolved.into_owned(),
                });
            }
        }
    }
}

/// Shortens text quoted in messages.
fn excerpt(s: &str) -> String {
    excerpt_cow(s).into_owned()
}

/// [`excerpt`], borrowing `s` when it is kept as it is.
fn excerpt_cow(s: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 120;
    // Most words are short and on one line: kept as they are (at most
    // MAX bytes is at most MAX characters).
    if s.len() <= MAX && !s.as_bytes().contains(&b'\n') {
        return s.into();
    }
    let one_line = s.replace('\n', "\\n");
    if one_line.chars().count() <= MAX {
        one_line.into()
    } else {
        let cut: String = one_line.chars().take(MAX).collect();
        format!("{cut}...").into()
    }
}
