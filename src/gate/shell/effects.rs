//! Stage 3, effects: what a command line runs. The AST walk (lists,
//! pipelines, compound commands, function bodies, redirections, process and
//! command substitutions) tracks what each command's standard input is and
//! what runs concurrently; each simple command is then followed through
//! wrappers (`sudo`, `env`, `xargs`...), `find -exec`/`-delete` and
//! interpreters (`sh -c`, `eval`, `python -c`, code piped to a shell), and
//! the structural checks fire (dynamic command or code, piped code, fork
//! bombs). Commands a rule names go to [`super::rules`].

use brush_parser::ast;

use super::normalize::{basename, flags_of, has_substitution, option_value};
use super::rules::display;
use super::{
    Arg, CodeOperands, InterpreterSpec, RedirectMode, Scope, Stdin, Walker, WrapperSpec, excerpt,
};
use crate::gate::types::FindingKind;

impl Walker<'_> {
    pub(super) fn compound_list(&mut self, list: &ast::CompoundList, scope: &Scope) {
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
    pub(super) fn arithmetic(&mut self, text: &str, scope: &Scope) {
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

    /// Analyzes one command given as argv: unwraps wrappers, follows
    /// interpreters and `find`, applies rules.
    pub(super) fn command(&mut self, mut args: Vec<Arg>, scope: &Scope, mut wrapped: usize) {
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
