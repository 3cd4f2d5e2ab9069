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
//! The analysis runs in four stages, one module each:
//!
//! 1. `parse`: tokenize and parse a line (or embedded code) into an AST;
//! 2. `normalize`: words after quote removal and expansion, options and
//!    operands as the command reads them;
//! 3. `effects`: walk the AST and follow each command through wrappers,
//!    `find` and interpreters, with the structural checks;
//! 4. `rules`: match normalised commands and redirections against the
//!    configured rules.
//!
//! The configuration types live with the plan ([`crate::plan::gate::shell`])
//! and are re-exported here.

mod effects;
mod normalize;
mod parse;
mod rules;

use std::collections::BTreeSet;

use super::types::{Check, Finding, FindingKind};

pub use crate::plan::gate::shell::{
    CodeOperands, CommandSpec, FindSpec, InterpreterSpec, OperandPosition, RedirectMode,
    RedirectRule, ShellChecks, ShellConfig, ShellLimits, ShellRule, WrapperSpec,
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
/// `path`, and returns one finding per rule or check that fires.
pub fn analyze_shell(cfg: &ShellConfig, path: &str, input: ShellInput) -> Vec<Finding> {
    let mut w = Walker {
        cfg,
        path,
        findings: Vec::new(),
        opts: brush_parser::ParserOptions::default(),
        parses: 0,
    };
    let scope = Scope::default();
    match input {
        ShellInput::Line(line) => w.parse_and_walk(line, &scope),
        ShellInput::Argv(argv) => {
            let args = argv
                .iter()
                .map(|a| Arg {
                    text: a.clone(),
                    dynamic: false,
                    procsub: false,
                })
                .collect();
            w.command(args, &scope, 0);
        }
    }
    let mut seen = BTreeSet::new();
    w.findings
        .retain(|f| seen.insert((f.rule_id.clone(), f.message.clone())));
    w.findings
}

/// One argument after quote removal.
#[derive(Debug, Clone)]
struct Arg {
    /// Text with quotes and escapes removed; expansions rendered as `$NAME`,
    /// `${...}`, `$(...)`.
    text: String,
    /// Contains an expansion or is supplied at run time.
    dynamic: bool,
    /// A process substitution (`<(...)`): a pipe from another command.
    procsub: bool,
}

impl Arg {
    fn literal(text: &str) -> Self {
        Arg {
            text: text.to_owned(),
            dynamic: false,
            procsub: false,
        }
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
    path: &'c str,
    findings: Vec<Finding>,
    opts: brush_parser::ParserOptions,
    /// Parser runs so far.
    parses: usize,
}

/// Parsed options and operands of a command.
struct Parsed {
    flags: BTreeSet<String>,
    operands: Vec<Arg>,
    /// An argument from an expansion could hold options.
    unknown_flags: bool,
}

impl Walker<'_> {
    fn check(&mut self, pick: impl Fn(&ShellChecks) -> &Check, kind: FindingKind, detail: &str) {
        let f = pick(&self.cfg.checks).finding(kind, self.path, detail);
        self.findings.push(f);
    }
}

/// Shortens text quoted in messages.
fn excerpt(s: &str) -> String {
    const MAX: usize = 120;
    let one_line = s.replace('\n', "\\n");
    if one_line.chars().count() <= MAX {
        one_line
    } else {
        let cut: String = one_line.chars().take(MAX).collect();
        format!("{cut}...")
    }
}
