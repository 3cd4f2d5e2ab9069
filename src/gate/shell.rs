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

use std::collections::BTreeSet;

use super::types::{Check, Finding, FindingKind, fill};
use brush_parser::ast;
use brush_parser::word::{
    self, BraceExpressionMember, BraceExpressionOrText, Parameter, ParameterExpr, SpecialParameter,
    WordPiece, WordPieceWithSource,
};

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

    // ----- parsing -------------------------------------------------------

    fn parse_and_walk(&mut self, line: &str, scope: &Scope) {
        let limits = &self.cfg.limits;
        if scope.depth > limits.max_depth {
            let d = format!("code nested more than {} levels deep", limits.max_depth);
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
            return;
        }
        if line.len() > limits.max_input_bytes {
            let d = format!(
                "command line of {} bytes, over the limit of {}",
                line.len(),
                limits.max_input_bytes
            );
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
            return;
        }
        if bracket_nesting(line) > limits.max_nesting {
            let d = format!("brackets nested more than {} deep", limits.max_nesting);
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
            return;
        }
        if !self.spend_parse() {
            return;
        }
        match self.parse(line) {
            Ok(program) => {
                for cc in &program.complete_commands {
                    self.compound_list(cc, scope);
                }
            }
            Err(e) => {
                let d = format!("`{}`: {e}", excerpt(line));
                self.check(|c| &c.parse_error, FindingKind::Parse, &d);
            }
        }
    }

    /// Tokenizes and parses one line (no cache: brush's own caches take a
    /// global lock and clone their results).
    fn parse(&self, line: &str) -> Result<ast::Program, brush_parser::ParseError> {
        let tokens = match fast_tokens(line) {
            Some(t) => t,
            None => brush_parser::uncached_tokenize_str(line, &self.opts.tokenizer_options())
                .map_err(|e| brush_parser::ParseError::Tokenizing {
                    inner: e,
                    position: None,
                })?,
        };
        brush_parser::parse_tokens(&tokens, &self.opts, &brush_parser::SourceInfo::default())
    }

    /// Counts one parser run; false (and a finding, once) over the budget.
    fn spend_parse(&mut self) -> bool {
        self.parses += 1;
        let max = self.cfg.limits.max_parses;
        if self.parses == max + 1 {
            let d = format!("more than {max} pieces of code to parse");
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
        }
        self.parses <= max
    }

    /// Walks `line` if it parses and is within limits; reports nothing
    /// otherwise.
    fn parse_quietly(&mut self, line: &str, scope: &Scope) {
        let limits = &self.cfg.limits;
        if scope.depth > limits.max_depth {
            let d = format!("code nested more than {} levels deep", limits.max_depth);
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
            return;
        }
        if line.len() > limits.max_input_bytes || bracket_nesting(line) > limits.max_nesting {
            return;
        }
        if !self.spend_parse() {
            return;
        }
        if let Ok(program) = self.parse(line) {
            let before = self.findings.len();
            for cc in &program.complete_commands {
                self.compound_list(cc, scope);
            }
            // Only rule hits count here: a parse problem of this reading is
            // not a problem of the line.
            let mut i = before;
            while i < self.findings.len() {
                if self.findings[i].kind == FindingKind::Parse {
                    self.findings.remove(i);
                } else {
                    i += 1;
                }
            }
        }
    }

    // ----- AST walk ------------------------------------------------------

    fn compound_list(&mut self, list: &ast::CompoundList, scope: &Scope) {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            let mut s = scope.clone();
            if matches!(sep, ast::SeparatorOperator::Async) {
                s.concurrent = true;
            }
            self.pipeline(&and_or.first, &s);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, &s),
                }
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline, scope: &Scope) {
        let many = p.seq.len() > 1;
        for (i, cmd) in p.seq.iter().enumerate() {
            let mut s = scope.clone();
            s.concurrent |= many;
            if i > 0 {
                s.stdin = Stdin::Pipe;
            }
            self.command_node(cmd, &s);
        }
    }

    fn command_node(&mut self, cmd: &ast::Command, scope: &Scope) {
        match cmd {
            ast::Command::Simple(sc) => self.simple(sc, scope),
            ast::Command::Compound(cc, redirects) => {
                let mut s = scope.clone();
                if let Some(r) = redirects {
                    self.redirects(&r.0, &mut s);
                }
                self.compound(cc, &s);
            }
            ast::Command::Function(def) => {
                let name = self.word(&def.fname.value, scope).text;
                let mut s = scope.clone();
                s.functions.push(name);
                s.concurrent = false;
                if let Some(r) = &def.body.1 {
                    self.redirects(&r.0, &mut s);
                }
                self.compound(&def.body.0, &s);
            }
            ast::Command::ExtendedTest(t) => self.test_expr(&t.expr, scope),
        }
    }

    fn test_expr(&mut self, e: &ast::ExtendedTestExpr, scope: &Scope) {
        use ast::ExtendedTestExpr as E;
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.test_expr(a, scope);
                self.test_expr(b, scope);
            }
            E::Not(a) | E::Parenthesized(a) => self.test_expr(a, scope),
            E::UnaryTest(_, w) => {
                self.word(&w.value, scope);
            }
            E::BinaryTest(_, a, b) => {
                self.word(&a.value, scope);
                self.word(&b.value, scope);
            }
        }
    }

    fn compound(&mut self, cc: &ast::CompoundCommand, scope: &Scope) {
        use ast::CompoundCommand as C;
        match cc {
            C::Arithmetic(a) => {
                self.arithmetic(&a.expr.value, scope);
                // Shells without `((`, and old bash, read `((cmd))` as
                // nested subshells: check it as such if it parses.
                self.parse_quietly(&format!("({})", a.expr.value), &scope.deeper());
            }
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value, scope);
                }
                self.compound_list(&f.body.list, scope);
            }
            C::BraceGroup(b) => self.compound_list(&b.list, scope),
            C::Subshell(s) => self.compound_list(&s.list, scope),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value, scope);
                }
                self.compound_list(&f.body.list, scope);
            }
            C::CaseClause(c) => {
                self.word(&c.value.value, scope);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value, scope);
                    }
                    if let Some(cmd) = &item.cmd {
                        self.compound_list(cmd, scope);
                    }
                }
            }
            C::IfClause(i) => {
                self.compound_list(&i.condition, scope);
                self.compound_list(&i.then, scope);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.compound_list(c, scope);
                    }
                    self.compound_list(&e.body, scope);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.compound_list(&w.0, scope);
                self.compound_list(&w.1.list, scope);
            }
        }
    }

    /// Arithmetic text can hold command substitutions: find and walk them.
    fn arithmetic(&mut self, text: &str, scope: &Scope) {
        if has_substitution(text) {
            self.word(&format!("\"{text}\""), scope);
        }
    }

    fn simple(&mut self, sc: &ast::SimpleCommand, scope: &Scope) {
        use ast::CommandPrefixOrSuffixItem as I;
        let mut s = scope.clone();
        let mut words: Vec<&str> = Vec::new();
        let mut procsubs: Vec<(usize, &ast::ProcessSubstitutionKind, &ast::SubshellCommand)> =
            Vec::new();
        let mut redirects: Vec<&ast::IoRedirect> = Vec::new();
        for item in sc.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                I::IoRedirect(r) => redirects.push(r),
                // Prefix assignments are analyzed for substitutions only.
                I::AssignmentWord(_, w) | I::Word(w) => {
                    self.word(&w.value, scope);
                }
                I::ProcessSubstitution(kind, sub) => {
                    self.process_substitution(kind, sub, scope);
                }
            }
        }
        if let Some(name) = &sc.word_or_name {
            words.push(&name.value);
        }
        for item in sc.suffix.iter().flat_map(|p| p.0.iter()) {
            match item {
                I::IoRedirect(r) => redirects.push(r),
                // In the suffix (`declare x=1`) an assignment is an argument.
                I::Word(w) | I::AssignmentWord(_, w) => words.push(&w.value),
                I::ProcessSubstitution(kind, sub) => procsubs.push((words.len(), kind, sub)),
            }
        }
        let owned: Vec<ast::IoRedirect> = redirects.into_iter().cloned().collect();
        self.redirects(&owned, &mut s);

        let mut args: Vec<Arg> = Vec::new();
        let mut pending = procsubs.into_iter().peekable();
        for (i, raw) in words.iter().enumerate() {
            while let Some((_, kind, sub)) = pending.next_if(|(at, _, _)| *at <= i) {
                args.push(self.process_substitution(kind, sub, scope));
            }
            args.extend(self.expand_word(raw, scope));
        }
        for (_, kind, sub) in pending {
            args.push(self.process_substitution(kind, sub, scope));
        }
        if sc.word_or_name.is_some() {
            self.command(args, &s, 0);
        }
    }

    fn process_substitution(
        &mut self,
        kind: &ast::ProcessSubstitutionKind,
        sub: &ast::SubshellCommand,
        scope: &Scope,
    ) -> Arg {
        let mut s = scope.deeper();
        if matches!(kind, ast::ProcessSubstitutionKind::Write) {
            s.stdin = Stdin::Pipe;
        }
        if s.depth > self.cfg.limits.max_depth {
            let d = format!(
                "code nested more than {} levels deep",
                self.cfg.limits.max_depth
            );
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
        } else {
            self.compound_list(&sub.list, &s);
        }
        Arg {
            text: "/dev/fd/63".into(),
            dynamic: true,
            procsub: true,
        }
    }

    /// Walks redirections: applies redirect rules, walks substitutions, and
    /// records what stdin becomes.
    fn redirects(&mut self, list: &[ast::IoRedirect], scope: &mut Scope) {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T, IoRedirect as R};
        for r in list {
            match r {
                R::File(fd, kind, target) => {
                    let mode = match kind {
                        K::Read => RedirectMode::Read,
                        K::Write => RedirectMode::Write,
                        K::Append => RedirectMode::Append,
                        K::ReadAndWrite => RedirectMode::ReadWrite,
                        K::Clobber => RedirectMode::Clobber,
                        K::DuplicateInput | K::DuplicateOutput => {
                            if let T::Duplicate(w) = target {
                                self.word(&w.value, scope);
                            }
                            continue;
                        }
                    };
                    let is_stdin = fd.unwrap_or(match mode {
                        RedirectMode::Read | RedirectMode::ReadWrite => 0,
                        _ => 1,
                    }) == 0;
                    match target {
                        T::Filename(w) => {
                            let arg = self.word(&w.value, scope);
                            self.redirect_rules(mode, &arg);
                            if is_stdin && !matches!(mode, RedirectMode::ReadWrite) {
                                scope.stdin = if arg.procsub {
                                    Stdin::Pipe
                                } else {
                                    Stdin::File
                                };
                            }
                        }
                        T::ProcessSubstitution(pkind, sub) => {
                            self.process_substitution(pkind, sub, scope);
                            if is_stdin {
                                scope.stdin = Stdin::Pipe;
                            }
                        }
                        T::Fd(_) => {}
                        T::Duplicate(w) => {
                            self.word(&w.value, scope);
                        }
                    }
                }
                R::HereDocument(fd, doc) => {
                    let arg = if doc.requires_expansion {
                        self.heredoc(&doc.doc.value, scope)
                    } else {
                        Arg::literal(&doc.doc.value)
                    };
                    if fd.unwrap_or(0) == 0 {
                        scope.stdin = Stdin::Literal(arg);
                    }
                }
                R::HereString(fd, w) => {
                    let mut arg = self.word(&w.value, scope);
                    arg.text.push('\n');
                    if fd.unwrap_or(0) == 0 {
                        scope.stdin = Stdin::Literal(arg);
                    }
                }
                R::OutputAndError(w, append) => {
                    let arg = self.word(&w.value, scope);
                    let mode = if *append {
                        RedirectMode::Append
                    } else {
                        RedirectMode::Write
                    };
                    self.redirect_rules(mode, &arg);
                }
            }
        }
    }

    /// An expanding here-document: quotes are literal, `$`/backquote
    /// expansions run.
    fn heredoc(&mut self, body: &str, scope: &Scope) -> Arg {
        if !has_substitution(body) && !body.contains('$') {
            return Arg::literal(body);
        }
        let quoted = format!("\"{}\"", body.replace('"', "\\\""));
        let mut arg = self.word(&quoted, scope);
        arg.dynamic |= body.contains('$') || body.contains('`');
        arg
    }

    fn redirect_rules(&mut self, mode: RedirectMode, target: &Arg) {
        let norm = normalize_operand(&target.text);
        for rule in &self.cfg.redirect_rules {
            if rule.modes.contains(&mode) && rule.target.is_match(&norm) {
                let op = match mode {
                    RedirectMode::Read => "<",
                    RedirectMode::Write => ">",
                    RedirectMode::Append => ">>",
                    RedirectMode::ReadWrite => "<>",
                    RedirectMode::Clobber => ">|",
                };
                self.findings.push(Finding {
                    rule_id: rule.id.clone(),
                    kind: FindingKind::Shell,
                    path: self.path.to_owned(),
                    severity: rule.severity,
                    action: rule.action,
                    message: fill(&rule.message, &format!("`{op} {norm}`")),
                });
            }
        }
    }

    // ----- words ---------------------------------------------------------

    /// Brace-expands a raw word, then renders each result.
    fn expand_word(&mut self, raw: &str, scope: &Scope) -> Vec<Arg> {
        // A word holding code is not multiplied: its code is walked once.
        if raw.contains('{')
            && !has_substitution(raw)
            && let Ok(Some(pieces)) = word::parse_brace_expansions(raw, &self.opts)
        {
            let mut out = vec![String::new()];
            let cap = self.cfg.limits.max_brace_expansion;
            if brace_product(&pieces, &mut out, cap) {
                return out.iter().map(|w| self.word(w, scope)).collect();
            }
            let d = format!(
                "brace expansion of `{}` gives over {cap} words",
                excerpt(raw)
            );
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
        }
        vec![self.word(raw, scope)]
    }

    /// Renders a raw word as the shell would after quote removal, walking
    /// any command substitution inside it.
    fn word(&mut self, raw: &str, scope: &Scope) -> Arg {
        // A word of plain characters (or one simple double-quoted string) is
        // its own text: no quoting, escape, expansion or tilde to resolve.
        if let Some(text) = plain_word(raw) {
            return Arg::literal(text);
        }
        let mut arg = Arg {
            text: String::new(),
            dynamic: false,
            procsub: false,
        };
        match word::parse(raw, &self.opts) {
            Ok(pieces) => {
                let mut unquoted = String::new();
                self.pieces(&pieces, raw, scope, &mut arg, &mut unquoted);
                if unquoted.contains("$[") || unquoted.contains("$(") || unquoted.contains("${") {
                    let d = format!("unsupported expansion syntax in `{}`", excerpt(raw));
                    self.check(|c| &c.parse_error, FindingKind::Parse, &d);
                }
            }
            Err(e) => {
                let d = format!("`{}`: {e}", excerpt(raw));
                self.check(|c| &c.parse_error, FindingKind::Parse, &d);
                arg.text = raw.to_owned();
                arg.dynamic = true;
            }
        }
        arg
    }

    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        raw: &str,
        scope: &Scope,
        arg: &mut Arg,
        unquoted: &mut String,
    ) {
        for p in pieces {
            match &p.piece {
                WordPiece::Text(t) => {
                    arg.text.push_str(t);
                    unquoted.push_str(t);
                }
                WordPiece::SingleQuotedText(t) => arg.text.push_str(t),
                WordPiece::AnsiCQuotedText(t) => arg.text.push_str(&ansi_c(t)),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(inner, raw, scope, arg, unquoted);
                }
                WordPiece::TildePrefix(user) => {
                    arg.text.push('~');
                    arg.text.push_str(user);
                }
                WordPiece::EscapeSequence(e) => {
                    let rest = e.strip_prefix('\\').unwrap_or(e);
                    if rest != "\n" {
                        arg.text.push_str(rest);
                    }
                }
                WordPiece::ParameterExpansion(expr) => {
                    arg.dynamic = true;
                    let src = raw.get(p.start_index..p.end_index).unwrap_or("${?}");
                    arg.text.push_str(&render_parameter(expr, src));
                    // Operands of `${x:-...}` etc. may hold substitutions.
                    if let Some(inner) = src.strip_prefix("${").and_then(|s| s.strip_suffix('}'))
                        && has_substitution(inner)
                    {
                        self.word(&format!("\"{inner}\""), scope);
                    }
                }
                WordPiece::CommandSubstitution(code) => {
                    arg.dynamic = true;
                    arg.text.push_str("$(...)");
                    self.parse_and_walk(code, &scope.deeper());
                }
                WordPiece::BackquotedCommandSubstitution(code) => {
                    arg.dynamic = true;
                    arg.text.push_str("$(...)");
                    self.parse_and_walk(&unescape_backquoted(code), &scope.deeper());
                }
                WordPiece::ArithmeticExpression(e) => {
                    arg.dynamic = true;
                    arg.text.push_str("$((...))");
                    self.arithmetic(&e.value, &scope.deeper());
                }
            }
        }
    }

    // ----- commands ------------------------------------------------------

    /// Analyzes one command given as argv: unwraps wrappers, follows
    /// interpreters and `find`, applies rules.
    fn command(&mut self, mut args: Vec<Arg>, scope: &Scope, mut wrapped: usize) {
        loop {
            let Some(first) = args.first() else { return };
            if first.dynamic {
                let d = format!("`{}`", display(&args));
                self.check(|c| &c.dynamic_command, FindingKind::Shell, &d);
                return;
            }
            let name = basename(&first.text).to_owned();
            if scope.concurrent && scope.functions.contains(&name) {
                let d = format!("function `{name}` starts itself concurrently");
                self.check(|c| &c.fork_bomb, FindingKind::Shell, &d);
            }
            let cfg = self.cfg;
            let index = cfg.index();
            if index.rule_names.contains(name.as_str())
                || cfg
                    .rules
                    .iter()
                    .any(|r| r.command_regex.as_ref().is_some_and(|x| x.is_match(&name)))
            {
                let parsed = self.parse_args(&name, &args[1..]);
                self.rules(&name, &parsed, &args);
            }
            if let Some(spec) = index.wrappers.get(name.as_str()).map(|i| &cfg.wrappers[*i]) {
                if wrapped >= cfg.limits.max_wrappers {
                    let d = format!("more than {} nested wrappers", cfg.limits.max_wrappers);
                    self.check(|c| &c.too_complex, FindingKind::Shell, &d);
                    return;
                }
                wrapped += 1;
                match self.unwrap(spec, &args[1..], scope) {
                    Some(inner) => {
                        args = inner;
                        continue;
                    }
                    None => return,
                }
            }
            if cfg.find.names.contains(&name) {
                self.find(&args[1..], scope, wrapped);
                return;
            }
            if let Some(spec) = index
                .interpreters
                .get(name.as_str())
                .map(|i| &cfg.interpreters[*i])
            {
                self.interpreter(spec, &name, &args[1..], scope);
            }
            return;
        }
    }

    /// Strips a wrapper's own options; returns the wrapped argv.
    fn unwrap(&mut self, spec: &WrapperSpec, rest: &[Arg], scope: &Scope) -> Option<Vec<Arg>> {
        let mut i = 0;
        let mut positional_left = spec.positional;
        while i < rest.len() {
            let a = &rest[i];
            if a.text == "--" {
                i += 1 + positional_left;
                break;
            }
            if spec.skip_assignments && is_assignment(&a.text) {
                i += 1;
                continue;
            }
            if !a.text.starts_with('-') || a.text == "-" {
                if positional_left > 0 {
                    positional_left -= 1;
                    i += 1;
                    continue;
                }
                break;
            }
            if spec.no_exec_flags.contains(&a.text) {
                return None;
            }
            let (consumed, value) = option_value(&rest[i..], &spec.value_flags, &spec.code_flags);
            if let Some((flag, v)) = value
                && spec.code_flags.contains(&flag)
            {
                self.code(&v, true, &format!("`{flag}` code"), scope);
            }
            i += consumed;
        }
        let mut inner: Vec<Arg> = rest.get(i..).unwrap_or_default().to_vec();
        if inner.is_empty() {
            return None;
        }
        if spec.args_are_code {
            let joined = join_args(&inner);
            self.code(&joined, true, "command string", scope);
            return None;
        }
        if let Some(extra) = &spec.appends_operand {
            inner.push(Arg {
                text: extra.clone(),
                dynamic: true,
                procsub: false,
            });
        }
        Some(inner)
    }

    fn find(&mut self, rest: &[Arg], scope: &Scope, wrapped: usize) {
        let cfg = self.cfg;
        let spec = &cfg.find;
        let mut i = 0;
        // Leading options.
        while i < rest.len() {
            let t = &rest[i].text;
            if spec.leading_value_flags.iter().any(|f| f == t) {
                i += 2;
            } else if (t.len() == 2 && t.starts_with('-') && t != "--")
                || spec
                    .leading_value_flags
                    .iter()
                    .any(|f| t.starts_with(f.as_str()))
            {
                i += 1;
            } else {
                break;
            }
        }
        if rest.get(i).is_some_and(|a| a.text == "--") {
            i += 1;
        }
        let mut starts: Vec<Arg> = Vec::new();
        while let Some(a) = rest.get(i) {
            if a.text.starts_with('-') || a.text == "(" || a.text == "!" || a.text == ")" {
                break;
            }
            starts.push(a.clone());
            i += 1;
        }
        if starts.is_empty() {
            starts.push(Arg::literal(&spec.default_start));
        }
        let placeholder = &spec.placeholder;
        let exec_actions = &spec.exec_actions;
        let delete_actions = &spec.delete_actions;
        let delete_as = &spec.delete_as;
        while i < rest.len() {
            let t = rest[i].text.as_str();
            if exec_actions.iter().any(|e| e == t) {
                let mut end = i + 1;
                while end < rest.len() && rest[end].text != ";" && rest[end].text != "+" {
                    end += 1;
                }
                let cmd = &rest[i + 1..end];
                for start in &starts {
                    let inner: Vec<Arg> = cmd
                        .iter()
                        .map(|a| {
                            if a.text.contains(placeholder.as_str()) {
                                Arg {
                                    text: a.text.replace(placeholder.as_str(), &start.text),
                                    dynamic: true,
                                    procsub: false,
                                }
                            } else {
                                a.clone()
                            }
                        })
                        .collect();
                    self.command(inner, scope, wrapped + 1);
                }
                i = end + 1;
            } else {
                if delete_actions.iter().any(|d| d == t) {
                    for start in &starts {
                        let mut inner: Vec<Arg> =
                            delete_as.iter().map(|s| Arg::literal(s)).collect();
                        inner.push(start.clone());
                        self.command(inner, scope, wrapped + 1);
                    }
                }
                i += 1;
            }
        }
    }

    fn interpreter(&mut self, spec: &InterpreterSpec, name: &str, rest: &[Arg], scope: &Scope) {
        let value_flags: Vec<String> = if spec.code_flag_takes_value {
            spec.value_flags
                .iter()
                .chain(spec.code_flags.iter())
                .cloned()
                .collect()
        } else {
            spec.value_flags.clone()
        };
        let mut operands: Vec<Arg> = Vec::new();
        let mut code_flag_seen = false;
        let mut stdin_flag_seen = false;
        let mut i = 0;
        while i < rest.len() {
            let a = &rest[i];
            if a.text == "--" {
                operands.extend_from_slice(&rest[i + 1..]);
                break;
            }
            let optionish =
                (a.text.starts_with('-') || a.text.starts_with('+')) && a.text.len() > 1;
            if !optionish {
                if spec.permute {
                    operands.push(a.clone());
                    i += 1;
                    continue;
                }
                operands.extend_from_slice(&rest[i..]);
                break;
            }
            let (consumed, value) = option_value(&rest[i..], &value_flags, &[]);
            if let Some((flag, v)) = &value
                && spec.code_flag_takes_value
                && spec.code_flags.contains(flag)
            {
                self.code(v, spec.shell, &format!("`{name} {flag}` code"), scope);
                return;
            }
            if value.is_none() {
                let flags = flags_of(&a.text);
                if !spec.code_flag_takes_value && flags.iter().any(|f| spec.code_flags.contains(f))
                {
                    code_flag_seen = true;
                }
                if flags.iter().any(|f| spec.stdin_flags.contains(f)) {
                    stdin_flag_seen = true;
                }
            }
            i += consumed;
        }
        let operands = operands.as_slice();
        if stdin_flag_seen && !code_flag_seen {
            self.stdin_code(spec, name, scope);
            return;
        }
        if code_flag_seen {
            match operands.first() {
                Some(code) => self.code(code, spec.shell, &format!("`{name} -c` code"), scope),
                None => self.stdin_code(spec, name, scope),
            }
            return;
        }
        match spec.code_operands {
            CodeOperands::All if !operands.is_empty() => {
                let joined = join_args(operands);
                self.code(&joined, spec.shell, &format!("`{name}` code"), scope);
                return;
            }
            CodeOperands::First if !operands.is_empty() => {
                self.code(&operands[0], spec.shell, &format!("`{name}` code"), scope);
                return;
            }
            _ => {}
        }
        if spec.operands_are_scripts
            && let Some(script) = operands.first()
        {
            if script.procsub {
                let d = format!("`{name}` runs a script read from another command's output");
                self.check(|c| &c.piped_code, FindingKind::Shell, &d);
            } else if self.cfg.stdin_operands.is_match(&script.text) {
                self.stdin_code(spec, name, scope);
            }
            return;
        }
        if spec.reads_stdin {
            self.stdin_code(spec, name, scope);
        }
    }

    /// The interpreter reads its program from stdin.
    fn stdin_code(&mut self, spec: &InterpreterSpec, name: &str, scope: &Scope) {
        match &scope.stdin {
            Stdin::Pipe => {
                let d = format!("output of another command is run by `{name}`");
                self.check(|c| &c.piped_code, FindingKind::Shell, &d);
            }
            Stdin::Literal(code) => {
                let code = code.clone();
                self.code(&code, spec.shell, &format!("`{name}` here-document"), scope);
            }
            Stdin::Inherit | Stdin::File => {}
        }
    }

    /// Code run by an interpreter: parsed if static shell, flagged if it
    /// comes from an expansion.
    fn code(&mut self, code: &Arg, shell: bool, what: &str, scope: &Scope) {
        if code.procsub || code.dynamic {
            let d = format!("{what} `{}` is built at run time", excerpt(&code.text));
            self.check(|c| &c.dynamic_code, FindingKind::Shell, &d);
            if code.procsub {
                return;
            }
            // Best effort on the known part: expansions stay as `$NAME`,
            // which the rules read like the shell would.
        }
        if shell {
            self.parse_and_walk(&code.text, &scope.deeper());
        }
    }

    // ----- options and rules ---------------------------------------------

    fn parse_args(&self, name: &str, rest: &[Arg]) -> Parsed {
        let spec = self
            .cfg
            .index()
            .commands
            .get(name)
            .map(|i| &self.cfg.commands[*i]);
        let alias = |f: &str| -> String {
            spec.and_then(|s| s.flag_aliases.get(f))
                .cloned()
                .unwrap_or_else(|| f.to_owned())
        };
        let takes_value = |f: &str, canon: &str| -> bool {
            spec.is_some_and(|s| s.value_flags.iter().any(|v| v == f || v == canon))
        };
        let mut p = Parsed {
            flags: BTreeSet::new(),
            operands: Vec::new(),
            unknown_flags: false,
        };
        let mut i = 0;
        let mut only_operands = false;
        while i < rest.len() {
            let a = &rest[i];
            i += 1;
            if a.dynamic && !only_operands {
                p.unknown_flags = true;
            }
            if only_operands || a.text == "-" || !a.text.starts_with('-') {
                p.operands.push(a.clone());
                continue;
            }
            if a.text == "--" {
                only_operands = true;
                continue;
            }
            if let Some(long) = a.text.strip_prefix("--") {
                let (fname, attached) = match long.split_once('=') {
                    Some((n, _)) => (format!("--{n}"), true),
                    None => (a.text.clone(), false),
                };
                let canon = alias(&fname);
                if !attached && takes_value(&fname, &canon) {
                    i += 1;
                }
                p.flags.insert(canon);
                continue;
            }
            let chars: Vec<char> = a.text[1..].chars().collect();
            for (k, c) in chars.iter().enumerate() {
                let f = format!("-{c}");
                let canon = alias(&f);
                let needs = takes_value(&f, &canon);
                p.flags.insert(canon);
                if needs {
                    if k + 1 == chars.len() {
                        i += 1;
                    }
                    break;
                }
            }
        }
        p
    }

    fn rules(&mut self, name: &str, parsed: &Parsed, args: &[Arg]) {
        let mut hits = Vec::new();
        for rule in &self.cfg.rules {
            let named = rule.commands.iter().any(|c| c == name)
                || rule
                    .command_regex
                    .as_ref()
                    .is_some_and(|r| r.is_match(name));
            if !named {
                continue;
            }
            let flags_present = rule.flags_all.iter().all(|f| parsed.flags.contains(f))
                && (rule.flags_any.is_empty()
                    || rule.flags_any.iter().any(|f| parsed.flags.contains(f)));
            let n = parsed.operands.len();
            let selected: Vec<&Arg> = parsed
                .operands
                .iter()
                .enumerate()
                .filter(|(k, _)| match rule.operand_position {
                    OperandPosition::Any => true,
                    OperandPosition::First => *k == 0,
                    OperandPosition::Last => *k + 1 == n,
                    OperandPosition::NotLast => *k + 1 < n,
                })
                .map(|(_, a)| a)
                .collect();
            let needs_operand = rule.operand.is_some() || rule.operand_dynamic;
            let operand_hit = |a: &&Arg| {
                (!rule.operand_dynamic || a.dynamic)
                    && rule
                        .operand
                        .as_ref()
                        .is_none_or(|r| r.is_match(&normalize_operand(&a.text)))
            };
            let matched = if needs_operand {
                let hit = selected.iter().any(operand_hit);
                // An argument from an expansion may hold the required flags:
                // a dangerous static target is enough then.
                let static_hit = !rule.operand_dynamic
                    && selected.iter().filter(|a| !a.dynamic).any(operand_hit);
                hit && (flags_present || (parsed.unknown_flags && static_hit))
            } else {
                flags_present
            };
            if matched {
                hits.push(Finding {
                    rule_id: rule.id.clone(),
                    kind: FindingKind::Shell,
                    path: self.path.to_owned(),
                    severity: rule.severity,
                    action: rule.action,
                    message: fill(
                        &rule.message,
                        &format!("`{}`", display_normalized(name, parsed, args)),
                    ),
                });
            }
        }
        self.findings.extend(hits);
    }
}

// ----- helpers ---------------------------------------------------------------

/// Splits an option argument; returns how many arguments it used and, for a
/// flag in `value_flags`, the flag and its value.
fn option_value(
    args: &[Arg],
    value_flags: &[String],
    code_flags: &[String],
) -> (usize, Option<(String, Arg)>) {
    let a = &args[0];
    let takes = |f: &str| value_flags.iter().any(|v| v == f) || code_flags.iter().any(|v| v == f);
    if a.text.starts_with("--") {
        if let Some((n, v)) = a.text.split_once('=') {
            let value = Arg {
                text: v.to_owned(),
                ..a.clone()
            };
            return (1, takes(n).then(|| (n.to_owned(), value)));
        }
        if takes(&a.text) {
            return match args.get(1) {
                Some(v) => (2, Some((a.text.clone(), v.clone()))),
                None => (1, None),
            };
        }
        return (1, None);
    }
    // Whole-word option (`-o`, `+O`, or a single-dash long option).
    if takes(&a.text) {
        return match args.get(1) {
            Some(v) => (2, Some((a.text.clone(), v.clone()))),
            None => (1, None),
        };
    }
    let sign = &a.text[..1];
    let body: Vec<char> = a.text[1..].chars().collect();
    for (k, c) in body.iter().enumerate() {
        let f = format!("{sign}{c}");
        if takes(&f) {
            if k + 1 < body.len() {
                let value = Arg {
                    text: body[k + 1..].iter().collect(),
                    ..a.clone()
                };
                return (1, Some((f, value)));
            }
            return match args.get(1) {
                Some(v) => (2, Some((f, v.clone()))),
                None => (1, None),
            };
        }
    }
    (1, None)
}

/// The single-letter flags of a cluster (`-lc` -> `-l`, `-c`), or the
/// argument itself for a long option.
fn flags_of(arg: &str) -> Vec<String> {
    if arg.starts_with("--") || arg.len() < 2 {
        return vec![arg.to_owned()];
    }
    let sign = &arg[..1];
    arg[1..].chars().map(|c| format!("{sign}{c}")).collect()
}

/// brush-parser's tokens for a line in a conservative subset of the shell
/// syntax, computed over the bytes instead of brush's char-by-char reader
/// (its tokenizer is a third of a check's time); `None` for any other line,
/// which brush tokenizes itself.
///
/// The subset: one line of printable ASCII, blanks, words with `'...'` and
/// `"..."` quoting, `$NAME`-style expansions, `$(...)` holding only plain
/// words separated by single spaces, and the operators
/// `&&`, `||`, `|`, `;`, `&`, `<`, `>`, `>>`, `>&`, `<&`, `&>`, `&>>`, `|&`,
/// `>|`, `<>`. Anything else (backslashes, backquotes, comments, braces,
/// parentheses, `!`, here-documents, `$'...'`, arithmetic, case
/// terminators, newlines) falls back. The tokens must be identical to
/// brush's, positions included: the tests compare both tokenizers on known
/// lines and on random ones.
fn fast_tokens(line: &str) -> Option<Vec<brush_parser::Token>> {
    use brush_parser::{SourcePosition, Token, TokenLocation};
    use std::sync::Arc;
    let b = line.as_bytes();
    if b.iter().any(|&c| {
        !(c == b' ' || c == b'\t' || (0x21..0x7f).contains(&c))
            || matches!(c, b'\\' | b'`' | b'#' | b'{' | b'}' | b'!')
    }) || line.contains("<<")
        || line.contains("$'")
        || line.contains("$((")
    {
        return None;
    }
    let pos = |i: usize| {
        Arc::new(SourcePosition {
            index: i,
            line: 1,
            column: i + 1,
        })
    };
    let loc = |a: usize, z: usize| TokenLocation {
        start: pos(a),
        end: pos(z),
    };
    let is_op = |s: &str| {
        matches!(
            s,
            "&" | "&&"
                | ";"
                | "|"
                | "||"
                | "<"
                | ">"
                | ">|"
                | ">>"
                | "<&"
                | ">&"
                | "<>"
                | "&>"
                | "&>>"
                | "|&"
                | ";;"
                | ";&"
                | ";;&"
        )
    };
    // `$(` at `i`: the index after its `)`, for plain words separated by
    // single spaces only.
    let subst_end = |i: usize| -> Option<usize> {
        let start = i + 2;
        let close = start + line.get(start..)?.find(')')?;
        let inner = &line[start..close];
        let plain = |c: u8| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'_' | b'.' | b'/' | b',' | b':' | b'=' | b'+' | b'@' | b'%' | b'^' | b'-'
                )
        };
        let ok = !inner.is_empty()
            && !inner.starts_with(' ')
            && !inner.ends_with(' ')
            && !inner.contains("  ")
            && inner.bytes().all(|c| c == b' ' || plain(c));
        ok.then_some(close + 1)
    };
    let mut tokens = Vec::new();
    let n = b.len();
    let mut i = 0;
    while i < n {
        let c = b[i];
        if c == b' ' || c == b'\t' {
            i += 1;
            continue;
        }
        let start = i;
        if matches!(c, b'(' | b')') {
            return None;
        }
        if matches!(c, b'&' | b';' | b'|' | b'<' | b'>') {
            let mut j = i + 1;
            while j < n && is_op(&line[start..=j]) {
                j += 1;
            }
            let op = &line[start..j];
            if matches!(op, ";;" | ";&" | ";;&") {
                return None;
            }
            tokens.push(Token::Operator(op.to_string(), loc(start, j)));
            i = j;
            continue;
        }
        let mut j = i;
        while j < n {
            match b[j] {
                b' ' | b'\t' | b'&' | b';' | b'|' | b'<' | b'>' => break,
                b'(' | b')' => return None,
                b'\'' => j = j + 2 + line.get(j + 1..)?.find('\'')?,
                b'"' => {
                    j += 1;
                    loop {
                        match *b.get(j)? {
                            b'"' => {
                                j += 1;
                                break;
                            }
                            b'$' if b.get(j + 1) == Some(&b'(') => j = subst_end(j)?,
                            _ => j += 1,
                        }
                    }
                }
                b'$' if b.get(j + 1) == Some(&b'(') => j = subst_end(j)?,
                _ => j += 1,
            }
        }
        tokens.push(Token::Word(line[start..j].to_string(), loc(start, j)));
        i = j;
    }
    Some(tokens)
}

/// The text of a word that needs no word parsing: plain characters only
/// (a `~` not in tilde-prefix position), or one double-quoted string without
/// `$`, backquote, backslash or `!` inside. `None`: parse it.
fn plain_word(raw: &str) -> Option<&str> {
    let plain = |b: u8| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'_' | b'.' | b'/' | b',' | b':' | b'=' | b'+' | b'@' | b'%' | b'^'
            )
    };
    let bytes = raw.as_bytes();
    if bytes.is_empty() {
        return None;
    }
    let ok = bytes
        .iter()
        .enumerate()
        .all(|(i, &b)| plain(b) || (b == b'~' && i > 0 && !matches!(bytes[i - 1], b'=' | b':')));
    if ok {
        return Some(raw);
    }
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if inner
        .bytes()
        .all(|b| !matches!(b, b'"' | b'$' | b'`' | b'\\' | b'!'))
    {
        return Some(inner);
    }
    None
}

fn is_assignment(s: &str) -> bool {
    match s.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

fn basename(s: &str) -> &str {
    let t = s.trim_end_matches('/');
    match t.rsplit_once('/') {
        Some((_, b)) => b,
        None if t.is_empty() => s,
        None => t,
    }
}

fn join_args(args: &[Arg]) -> Arg {
    Arg {
        text: args
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        dynamic: args.iter().any(|a| a.dynamic),
        procsub: args.iter().any(|a| a.procsub),
    }
}

fn display(args: &[Arg]) -> String {
    excerpt(
        &args
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn display_normalized(name: &str, p: &Parsed, args: &[Arg]) -> String {
    let mut out = String::from(name);
    for f in &p.flags {
        out.push(' ');
        out.push_str(f);
    }
    for o in &p.operands {
        out.push(' ');
        out.push_str(&normalize_operand(&o.text));
    }
    if p.flags.is_empty() && p.operands.is_empty() && args.len() > 1 {
        return display(args);
    }
    excerpt(&out)
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

fn has_substitution(s: &str) -> bool {
    s.contains("$(") || s.contains('`') || s.contains("${") || s.contains("<(") || s.contains(">(")
}

/// Deepest nesting of brackets, counted without regard to quoting (an
/// over-estimate, which only makes the guard stricter).
fn bracket_nesting(s: &str) -> usize {
    let mut depth: usize = 0;
    let mut max = 0;
    let mut backquotes = 0usize;
    for c in s.chars() {
        match c {
            '(' | '{' | '[' => {
                depth += 1;
                max = max.max(depth + backquotes);
            }
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            '`' => {
                backquotes += 1;
                max = max.max(depth + backquotes / 2);
            }
            _ => {}
        }
    }
    max
}

/// Lexical normalisation of an operand that looks like a path: repeated
/// and trailing slashes, `.` components and `..` components are resolved.
/// A leading `~user` or `$VAR` component is kept and never popped. For
/// `key=/path` (as in `dd of=/dev/sda`) the value is normalised.
fn normalize_operand(s: &str) -> String {
    if let Some((k, v)) = s.split_once('=')
        && !k.is_empty()
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return format!("{k}={}", normalize_operand(v));
    }
    let looks_like_path =
        s.contains('/') || s.starts_with('~') || s.starts_with('$') || s.starts_with('.');
    if !looks_like_path {
        return s.to_owned();
    }
    let absolute = s.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    let mut anchored = false;
    for (i, comp) in s.split('/').enumerate() {
        match comp {
            "" | "." => {}
            ".." => {
                let top = parts.last().copied();
                match top {
                    Some("..") | None if !absolute => parts.push(".."),
                    None => {}
                    Some(_) if anchored && parts.len() == 1 => parts.push(".."),
                    Some(_) => {
                        parts.pop();
                    }
                }
            }
            c => {
                if i == 0 && (c.starts_with('~') || c.starts_with('$')) {
                    anchored = true;
                }
                parts.push(c);
            }
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
}

fn render_parameter(expr: &ParameterExpr, src: &str) -> String {
    let simple = match expr {
        ParameterExpr::Parameter {
            parameter,
            indirect: false,
        } => Some(parameter),
        _ => None,
    };
    match simple {
        Some(Parameter::Named(n)) => format!("${n}"),
        Some(Parameter::Positional(k)) => format!("${k}"),
        Some(Parameter::Special(sp)) => match sp {
            SpecialParameter::AllPositionalParameters { concatenate: true } => "$*".into(),
            SpecialParameter::AllPositionalParameters { concatenate: false } => "$@".into(),
            SpecialParameter::PositionalParameterCount => "$#".into(),
            SpecialParameter::LastExitStatus => "$?".into(),
            SpecialParameter::CurrentOptionFlags => "$-".into(),
            SpecialParameter::ProcessId => "$$".into(),
            SpecialParameter::LastBackgroundProcessId => "$!".into(),
            SpecialParameter::ShellName => "$0".into(),
        },
        _ => src.to_owned(),
    }
}

/// Removes the backslashes that backquote substitution removes.
fn unescape_backquoted(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && matches!(n, '\\' | '`' | '$')
        {
            out.push(n);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Decodes the body of a `$'...'` string.
fn ansi_c(body: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let hex =
        |s: &[char]| -> Option<u32> { u32::from_str_radix(&s.iter().collect::<String>(), 16).ok() };
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        let simple = match e {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let take = |i: &mut usize, max: usize, ok: fn(&char) -> bool| -> Vec<char> {
            let start = *i;
            while *i < chars.len() && *i - start < max && ok(&chars[*i]) {
                *i += 1;
            }
            chars[start..*i].to_vec()
        };
        match e {
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let digits = take(&mut i, max, char::is_ascii_hexdigit);
                match hex(&digits).and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => {
                        out.push('\\');
                        out.push(e);
                        out.extend(digits);
                    }
                }
            }
            '0'..='7' => {
                i -= 1;
                let digits = take(&mut i, 3, |c| ('0'..='7').contains(c));
                let v = u32::from_str_radix(&digits.iter().collect::<String>(), 8).unwrap_or(0);
                out.push(char::from_u32(v & 0xff).unwrap_or('\u{fffd}'));
            }
            'c' if i < chars.len() => {
                let ctl = (chars[i] as u32) & 0x1f;
                i += 1;
                out.push(char::from_u32(ctl).unwrap_or('\u{fffd}'));
            }
            _ => {
                out.push('\\');
                out.push(e);
            }
        }
    }
    out
}

/// Appends the expansions of brace `pieces` to every prefix in `out`;
/// returns false when more than `cap` words would result.
fn brace_product(pieces: &[BraceExpressionOrText], out: &mut Vec<String>, cap: usize) -> bool {
    for piece in pieces {
        match piece {
            BraceExpressionOrText::Text(t) => {
                for o in out.iter_mut() {
                    o.push_str(t);
                }
            }
            BraceExpressionOrText::Expr(members) => {
                let mut alternatives: Vec<String> = Vec::new();
                for m in members {
                    match m {
                        BraceExpressionMember::Child(children) => {
                            let mut sub = vec![String::new()];
                            if !brace_product(children, &mut sub, cap) {
                                return false;
                            }
                            alternatives.extend(sub);
                        }
                        // Sequences: the endpoints are enough to judge.
                        BraceExpressionMember::NumberSequence { start, end, .. } => {
                            alternatives.push(start.to_string());
                            alternatives.push(end.to_string());
                        }
                        BraceExpressionMember::CharSequence { start, end, .. } => {
                            alternatives.push(start.to_string());
                            alternatives.push(end.to_string());
                        }
                    }
                }
                if out.len().saturating_mul(alternatives.len()) > cap {
                    return false;
                }
                let mut next = Vec::with_capacity(out.len() * alternatives.len());
                for o in out.iter() {
                    for a in &alternatives {
                        next.push(format!("{o}{a}"));
                    }
                }
                *out = next;
            }
        }
    }
    true
}

#[cfg(test)]
mod plain_word_tests {
    use super::plain_word;

    #[test]
    fn only_words_without_shell_syntax_skip_the_word_parser() {
        assert_eq!(plain_word("build.log"), Some("build.log"));
        assert_eq!(plain_word("HEAD~1"), Some("HEAD~1"));
        assert_eq!(plain_word("\"warning: x\""), Some("warning: x"));
        for w in [
            "~",
            "~/x",
            "a=~/x",
            "PATH=a:~/b",
            "$HOME",
            "\"$x\"",
            "'a'",
            "a\\b",
            "\"a\\\"b\"",
            "`x`",
            "*{a,b}",
            "\"\"x",
            "",
            "\"!x\"",
            "é",
        ] {
            assert_eq!(plain_word(w), None, "{w}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_paths_lexically() {
        for (i, o) in [
            ("/", "/"),
            ("//", "/"),
            ("/./", "/"),
            ("/..", "/"),
            ("/tmp/../", "/"),
            ("/usr/local/..", "/usr"),
            ("/*", "/*"),
            ("~/", "~"),
            ("~/..", "~/.."),
            ("$HOME/.", "$HOME"),
            ("./", "."),
            ("./*", "*"),
            ("a/..", "."),
            ("../..", "../.."),
            ("of=/dev//sda", "of=/dev/sda"),
            ("build/out", "build/out"),
            ("build/../..", ".."),
            ("x", "x"),
        ] {
            assert_eq!(normalize_operand(i), o, "{i}");
        }
    }

    #[test]
    fn decodes_ansi_c() {
        assert_eq!(ansi_c(r"\x72m"), "rm");
        assert_eq!(ansi_c(r"\162\155"), "rm");
        assert_eq!(ansi_c(r"\u0072m\n"), "rm\n");
        assert_eq!(ansi_c(r"a\'b"), "a'b");
    }

    #[test]
    fn basenames() {
        assert_eq!(basename("/bin/rm"), "rm");
        assert_eq!(basename("rm"), "rm");
        assert_eq!(basename("/"), "/");
        assert_eq!(basename("./x/"), "x");
    }

    #[test]
    fn splits_flag_clusters() {
        assert_eq!(flags_of("-lc"), ["-l", "-c"]);
        assert_eq!(flags_of("--login"), ["--login"]);
    }
}

#[cfg(test)]
mod fast_tokens_tests {
    use super::fast_tokens;
    use proptest::prelude::*;

    fn brush(line: &str) -> Option<String> {
        let opts = brush_parser::ParserOptions::default();
        brush_parser::uncached_tokenize_str(line, &opts.tokenizer_options())
            .ok()
            .map(|t| format!("{t:?}"))
    }

    fn same(line: &str) -> bool {
        match fast_tokens(line) {
            None => true,
            Some(t) => Some(format!("{t:?}")) == brush(line),
        }
    }

    #[test]
    fn agrees_with_brush_on_known_lines() {
        let lines = [
            "cd target/tmp && cargo build --release 2>&1 | tee build.log && grep -n \"warning\" build.log | head -20 && echo \"built $(date +%s)\" >> times.txt && git diff --stat HEAD~1 -- src/",
            "ls -la",
            "git status",
            "  rm   -rf  /  ",
            "a&&b||c;d&e|f",
            "x >/dev/null 2>&1",
            "cat <in >out >>app 3<>rw 1>&2 2<&0 &>all &>>all2 >|clob",
            "a |& b",
            "echo 'a b' \"c d\" e'f'g\"h\"",
            "echo \"$(date)\" $(id -u) x$(a b)y",
            "FOO=1 BAR=~/x env",
            "echo $HOME ${HOME} $1 $? $$",
            "echo \"a ( b ) c\"",
            "grep -rn \"rm -rf\" docs/",
            "rm -rf $HOME",
            "echo \"unterminated",
            "echo 'x",
            "echo $(unterminated",
            "echo $( a)",
            "echo $(a  b)",
            "echo $(a|b)",
            "",
            "   ",
            "a;;",
            "echo \"$(a)$(b c)\"",
            "x=$(y)",
            "echo \"\"",
            "echo ''",
            "a\tb\t c",
        ];
        for l in lines {
            assert!(
                same(l),
                "{l:?}: fast {:?}\nbrush {:?}",
                fast_tokens(l),
                brush(l)
            );
        }
        assert!(
            fast_tokens(lines[0]).is_some(),
            "the common case takes the fast path"
        );
        for l in [
            "echo `x`",
            "a \\b",
            "f() { x; }",
            "(a)",
            "a # c",
            "cat <<EOF",
            "! a",
            "a\nb",
            "echo $'x'",
            "echo $((1+2))",
            "é",
        ] {
            assert!(fast_tokens(l).is_none(), "{l:?}");
        }
    }

    fn atoms() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "a", "b", "-", "/", ".", "=", "~", "*", "?", "[", "]", "1", "2", " ", "  ", "\t",
                "'", "\"", "$", "$(", "(", ")", "&", "|", ";", "<", ">", "!", "#", "{", "}", "\\",
                "`", "date +%s", "x y", ":", "%", "+", "@", ",", "^", "$(a)", "$(a b)",
            ]),
            0..24,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, .. ProptestConfig::default() })]
        #[test]
        fn agrees_with_brush_on_random_lines(line in atoms()) {
            prop_assert!(same(&line), "{:?}: fast {:?}\nbrush {:?}", line, fast_tokens(&line), brush(&line));
        }
    }
}
