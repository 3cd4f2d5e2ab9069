//! Stage 3, effects: what a command line runs, and where. The AST walk
//! (lists, pipelines, compound commands, function bodies, redirections,
//! process and command substitutions) goes in execution order with the
//! shell's [`super::state`]: each walk function starts from `self.st` and
//! returns the [`Flow`] it leaves (the state after success and after
//! failure), so `cd a && x` runs `x` in `a`, `cd a || x` runs `x` where the
//! line was, and after `if`/`||` the states merge. Subshells, pipeline
//! stages, background jobs and substitutions work on a copy. The walk also
//! tracks what each command's standard input is and what runs
//! concurrently. Each simple command then goes to [`super::commands`].

use std::rc::Rc;

use brush_parser::ast;

use super::normalize::has_substitution;
use super::state::{Cwd, St, Var, merge_opt, merge_shared};
use super::{Arg, RedirectMode, Scope, Stdin, Walker};
use crate::gate::types::FindingKind;

/// Where a command leaves the shell: the state after it succeeds and after
/// it fails; `None` where that cannot happen (`true` never fails, `exit`
/// never returns).
#[derive(Debug, Clone)]
pub(super) struct Flow {
    pub(super) ok: Option<St>,
    pub(super) fail: Option<St>,
}

impl Flow {
    /// Either outcome, in the same state.
    pub(super) fn both(s: St) -> Flow {
        Flow {
            ok: Some(s.clone()),
            fail: Some(s),
        }
    }

    /// Success only (`true`, an assignment, a definition).
    pub(super) fn ok(s: St) -> Flow {
        Flow {
            ok: Some(s),
            fail: None,
        }
    }

    fn swap(self) -> Flow {
        Flow {
            ok: self.fail,
            fail: self.ok,
        }
    }
}

impl Walker<'_> {
    fn max_cwds(&self) -> usize {
        self.cfg.limits.max_cwds.max(1)
    }

    /// The state after `f`, whatever the outcome; the current state when
    /// neither outcome can happen (the code after is unreachable, but still
    /// checked).
    fn settle(&mut self, f: &Flow) {
        let max = self.max_cwds();
        if let Some(s) = merge_opt(f.ok.clone(), f.fail.clone(), max) {
            self.st = s;
        }
    }

    /// Walks code that cannot run in this state (after `exit`, the branch
    /// of `if false`): its findings count, its runs are not recorded, and
    /// the state is left as it was.
    fn unreachable(&mut self, from: St, walk: impl FnOnce(&mut Self)) {
        let saved = std::mem::replace(&mut self.st, from);
        let rec = std::mem::replace(&mut self.record, false);
        walk(self);
        self.record = rec;
        self.st = saved;
    }

    pub(super) fn compound_list(&mut self, list: &ast::CompoundList, scope: &Scope) -> Flow {
        // Deep nesting (within `max_nesting`) recurses through several
        // frames per level: grow the stack instead of overflowing it.
        stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || {
            self.compound_list_inner(list, scope)
        })
    }

    fn compound_list_inner(&mut self, list: &ast::CompoundList, scope: &Scope) -> Flow {
        let mut last = Flow::both(self.st.clone());
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            if matches!(sep, ast::SeparatorOperator::Async) {
                // A background job: a subshell, status 0.
                let mut s = scope.clone();
                s.concurrent = true;
                let saved = self.st.clone();
                self.and_or(and_or, &s);
                self.st = saved;
                last = Flow::ok(self.st.clone());
                continue;
            }
            last = self.and_or(and_or, scope);
            self.settle(&last);
        }
        last
    }

    fn and_or(&mut self, ao: &ast::AndOrList, scope: &Scope) -> Flow {
        let max = self.max_cwds();
        let mut f = self.pipeline(&ao.first, scope);
        for next in &ao.additional {
            match next {
                ast::AndOr::And(p) => match f.ok.take() {
                    Some(s) => {
                        self.st = s;
                        let g = self.pipeline(p, scope);
                        f = Flow {
                            ok: g.ok,
                            fail: merge_opt(f.fail.take(), g.fail, max),
                        };
                    }
                    None => {
                        let from = f.fail.clone().unwrap_or_else(|| self.st.clone());
                        self.unreachable(from, |w| {
                            w.pipeline(p, scope);
                        });
                    }
                },
                ast::AndOr::Or(p) => match f.fail.take() {
                    Some(s) => {
                        self.st = s;
                        let g = self.pipeline(p, scope);
                        f = Flow {
                            ok: merge_opt(f.ok.take(), g.ok, max),
                            fail: g.fail,
                        };
                    }
                    None => {
                        let from = f.ok.clone().unwrap_or_else(|| self.st.clone());
                        self.unreachable(from, |w| {
                            w.pipeline(p, scope);
                        });
                    }
                },
            }
        }
        f
    }

    fn pipeline(&mut self, p: &ast::Pipeline, scope: &Scope) -> Flow {
        let f = if p.seq.len() == 1 {
            self.command_node(&p.seq[0], scope)
        } else {
            // Every stage runs in a subshell (bash without `lastpipe`).
            let saved = self.st.clone();
            // What a `find` in the stage before lists (for `| xargs cat`).
            let outer = self.found.take();
            let mut listed = None;
            for (i, cmd) in p.seq.iter().enumerate() {
                let mut s = scope.clone();
                s.concurrent = true;
                if i > 0 {
                    s.stdin = Stdin::Pipe;
                }
                self.st = saved.clone();
                self.found = listed.take();
                self.found_out = None;
                self.command_node(cmd, &s);
                listed = self.found_out.take();
            }
            // What the last stage prints is the pipeline's output.
            self.found_out = listed;
            self.found = outer;
            self.st = saved.clone();
            Flow::both(saved)
        };
        if p.bang { f.swap() } else { f }
    }

    fn command_node(&mut self, cmd: &ast::Command, scope: &Scope) -> Flow {
        match cmd {
            ast::Command::Simple(sc) => {
                let saved = self.found_enter();
                let f = self.simple(sc, scope);
                self.found_leave(saved);
                f
            }
            ast::Command::Compound(cc, redirects) => {
                let mut s = scope.clone();
                let mark = self.written.len();
                if let Some(r) = redirects {
                    self.redirects(&r.0, &mut s);
                }
                // The output of a compound command is not followed.
                self.settle_written(mark, None);
                // `while read f; do ...; done < list`.
                let outer = self.found_stdin.take().map(|r| self.found.replace(r));
                let f = self.compound(cc, &s);
                if let Some(o) = outer {
                    self.found = o;
                }
                f
            }
            ast::Command::Function(def) => {
                let name = self.word(&def.fname.value, scope).text.to_string();
                self.st_mut()
                    .functions
                    .insert(name.clone(), Rc::new(def.body.clone()));
                // The body is checked where it is defined too (a function
                // never called in the line still shows what it would do,
                // and a fork bomb is found here); its runs are recorded
                // where it is called.
                let mut s = scope.clone();
                s.functions.push(name);
                s.concurrent = false;
                let from = self.st.clone();
                self.unreachable(from, |w| {
                    let mut s = s;
                    if let Some(r) = &def.body.1 {
                        w.redirects(&r.0, &mut s);
                    }
                    w.compound(&def.body.0, &s);
                });
                Flow::ok(self.st.clone())
            }
            ast::Command::ExtendedTest(t) => {
                self.test_expr(&t.expr, scope);
                Flow::both(self.st.clone())
            }
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

    /// A loop body that may run any number of times: walked once, and once
    /// more from the merged state when the first pass changed the state
    /// (a `cd` in a loop); the loop leaves the merge of all.
    fn loop_body(&mut self, body: &ast::CompoundList, scope: &Scope) -> Flow {
        let max = self.max_cwds();
        let start = self.st.clone();
        let f = self.compound_list(body, scope);
        self.settle(&f);
        let once = self.st.clone();
        let mut merged = merge_shared(&start, &once, max);
        if merged.cwd != start.cwd || merged.vars != start.vars {
            self.st = merged.clone();
            let g = self.compound_list(body, scope);
            self.settle(&g);
            merged = merge_shared(&merged, &self.st, max);
        }
        Flow::both(merged)
    }

    pub(super) fn compound(&mut self, cc: &ast::CompoundCommand, scope: &Scope) -> Flow {
        use ast::CompoundCommand as C;
        let max = self.max_cwds();
        match cc {
            C::Arithmetic(a) => {
                self.arithmetic(&a.expr.value, scope);
                // `( (cmd) )` reaches here too (the parser drops the blank
                // that makes bash read nested subshells), and shells
                // without `((` read `((cmd))` so: walk that reading as a
                // subshell when it parses.
                let saved = self.st.clone();
                self.parse_quietly(&format!("({})", a.expr.value), &scope.deeper());
                self.st = saved;
                Flow::both(self.st.clone())
            }
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value, scope);
                }
                self.loop_body(&f.body.list, scope)
            }
            C::BraceGroup(b) => self.compound_list(&b.list, scope),
            C::Subshell(s) => {
                let saved = self.st.clone();
                let f = self.compound_list(&s.list, scope);
                self.st = saved.clone();
                Flow {
                    ok: f.ok.map(|_| saved.clone()),
                    fail: f.fail.map(|_| saved),
                }
            }
            C::ForClause(f) => {
                let mut values: Vec<Arg> = Vec::new();
                let mut known = f.values.is_some();
                let subst = self.found_subst.take();
                for w in f.values.iter().flatten() {
                    for a in self.expand_word(&w.value, scope) {
                        known &= !a.dynamic;
                        values.push(a);
                    }
                }
                let name = f.variable_name.clone();
                // `for f in $(find ~ -name 'id_*')`: f holds what it lists.
                self.found_subst_var(&name);
                self.found_subst = subst;
                if known && values.len() <= 4 {
                    // Each value in turn, in order; a glob stands for the
                    // names it matches (maybe none).
                    let start = self.st.clone();
                    let globbed = values.iter().any(|v| v.glob);
                    for v in &values {
                        let var = if v.glob {
                            Var::Pattern(v.text.to_string())
                        } else {
                            Var::Known {
                                value: v.text.to_string(),
                                exported: false,
                            }
                        };
                        self.st_mut().vars.insert(name.clone(), var);
                        let g = self.compound_list(&f.body.list, scope);
                        self.settle(&g);
                    }
                    if values.is_empty() {
                        self.st = start;
                    } else if globbed {
                        self.st = merge_shared(&self.st, &start, max);
                    }
                    Flow::both(self.st.clone())
                } else {
                    self.st_mut().vars.insert(name, Var::Unknown);
                    self.loop_body(&f.body.list, scope)
                }
            }
            C::CaseClause(c) => {
                self.word(&c.value.value, scope);
                let start = self.st.clone();
                // No pattern may match: the state stays.
                let mut out = Flow::ok(start.clone());
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value, scope);
                    }
                    if let Some(cmd) = &item.cmd {
                        self.st = start.clone();
                        let g = self.compound_list(cmd, scope);
                        out = Flow {
                            ok: merge_opt(out.ok, g.ok, max),
                            fail: merge_opt(out.fail, g.fail, max),
                        };
                    }
                }
                self.settle(&out);
                out
            }
            C::IfClause(i) => {
                let c = self.compound_list(&i.condition, scope);
                let mut results: Vec<Flow> = Vec::new();
                match c.ok.clone() {
                    Some(ok) => {
                        self.st = ok;
                        results.push(self.compound_list(&i.then, scope));
                    }
                    None => {
                        let from = self.st.clone();
                        self.unreachable(from, |w| {
                            w.compound_list(&i.then, scope);
                        });
                    }
                }
                let mut pending = c.fail;
                for e in i.elses.iter().flatten() {
                    let Some(st) = pending.take() else {
                        let from = self.st.clone();
                        self.unreachable(from, |w| {
                            if let Some(cond) = &e.condition {
                                w.compound_list(cond, scope);
                            }
                            w.compound_list(&e.body, scope);
                        });
                        continue;
                    };
                    self.st = st;
                    match &e.condition {
                        Some(cond) => {
                            let c2 = self.compound_list(cond, scope);
                            if let Some(ok) = c2.ok {
                                self.st = ok;
                                results.push(self.compound_list(&e.body, scope));
                            }
                            pending = c2.fail;
                        }
                        None => results.push(self.compound_list(&e.body, scope)),
                    }
                }
                // No branch taken: status 0.
                if let Some(st) = pending {
                    results.push(Flow::ok(st));
                }
                let mut out = Flow {
                    ok: None,
                    fail: None,
                };
                for r in results {
                    out = Flow {
                        ok: merge_opt(out.ok, r.ok, max),
                        fail: merge_opt(out.fail, r.fail, max),
                    };
                }
                self.settle(&out);
                out
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                let start = self.st.clone();
                let c = self.compound_list(&w.0, scope);
                self.settle(&c);
                let f = self.loop_body(&w.1.list, scope);
                let after = merge_opt(Some(start), f.ok, max).unwrap_or_else(|| self.st.clone());
                self.st = after.clone();
                Flow::both(after)
            }
        }
    }

    /// Arithmetic text can hold command substitutions: find and walk them.
    pub(super) fn arithmetic(&mut self, text: &str, scope: &Scope) {
        if has_substitution(text) {
            self.word(&format!("\"{text}\""), scope);
        }
    }

    /// Code in a command substitution: a subshell, walked from the current
    /// state and leaving it unchanged.
    pub(super) fn subshell_code(&mut self, code: &str, scope: &Scope) {
        let saved = self.st.clone();
        self.parse_and_walk(code, scope);
        self.st = saved;
    }

    fn simple(&mut self, sc: &ast::SimpleCommand, scope: &Scope) -> Flow {
        use ast::CommandPrefixOrSuffixItem as I;
        let mut s = scope.clone();
        // Inline up to a usual command's size (no allocation per command).
        let mut words: smallvec::SmallVec<[&str; 16]> = smallvec::SmallVec::new();
        let mut procsubs: smallvec::SmallVec<
            [(usize, &ast::ProcessSubstitutionKind, &ast::SubshellCommand); 2],
        > = smallvec::SmallVec::new();
        let mut redirects: smallvec::SmallVec<[&ast::IoRedirect; 4]> = smallvec::SmallVec::new();
        // Assignments before the command: name, value.
        let mut assigns: Vec<(String, Arg, bool)> = Vec::new();
        for item in sc.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                I::IoRedirect(r) => redirects.push(r),
                I::AssignmentWord(a, w) => {
                    let (name, value) = self.assignment(a, w, scope);
                    if let Some(name) = name {
                        assigns.push((name, value, a.append));
                    }
                }
                I::Word(w) => {
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
        let mark = self.written.len();
        self.redirects(redirects.iter().copied(), &mut s);

        // The arguments see the variables as they were before this
        // command's own prefix assignments.
        let mut args: Vec<Arg> = Vec::with_capacity(words.len());
        let mut pending = procsubs.into_iter().peekable();
        for (i, raw) in words.iter().enumerate() {
            while let Some((_, kind, sub)) = pending.next_if(|(at, _, _)| *at <= i) {
                args.push(self.process_substitution(kind, sub, scope));
            }
            self.expand_word_into(raw, scope, &mut args);
        }
        for (_, kind, sub) in pending {
            args.push(self.process_substitution(kind, sub, scope));
        }
        for a in &args {
            self.suspicious(&a.text);
        }
        // Files this command's redirections write hold its output.
        self.settle_written(mark, Some((&args, &s.stdin)));
        for (name, value, _) in &assigns {
            self.suspicious(&value.text);
            self.env_assignment(name, value);
        }
        if sc.word_or_name.is_none() || args.is_empty() {
            // Assignments alone set shell variables.
            for (name, _, _) in &assigns {
                self.found_subst_var(name);
            }
            for (name, value, append) in assigns {
                self.set_var(&name, &value, append, None);
            }
            return Flow::ok(self.st.clone());
        }
        // `tee f <<EOF`: the files tee writes hold the here-document.
        let tee = super::written::tee_content(&args, &s.stdin);
        let before = self.written.len();
        if let Some(r) = self.found_stdin.take() {
            self.found = Some(r);
        }
        let passed = self.found_passed(&args);
        let flow = self.command(args, &s, 0, None);
        self.found_to_files(mark, passed);
        if let Some(text) = tee {
            self.written_known(before, text);
        }
        flow
    }

    /// The name and value of an assignment word (`NAME=value`), the value
    /// expanded without field splitting.
    pub(super) fn assignment(
        &mut self,
        a: &ast::Assignment,
        w: &ast::Word,
        scope: &Scope,
    ) -> (Option<String>, Arg) {
        let name = match &a.name {
            ast::AssignmentName::VariableName(n) => Some(n.clone()),
            ast::AssignmentName::ArrayElementName(n, _) => Some(n.clone()),
        };
        let value = match &a.value {
            ast::AssignmentValue::Scalar(v) => self.word(&v.value, scope),
            ast::AssignmentValue::Array(items) => {
                let mut out = Arg::literal("");
                out.dynamic = true;
                for (_, v) in items {
                    let x = self.word(&v.value, scope);
                    out.text.push_str(&x.text);
                    out.text.push(' ');
                }
                out
            }
        };
        let _ = w;
        (name, value)
    }

    /// Sets a shell variable from an assignment; `exported` when the line
    /// marks it (`export`, `declare -x`); `None` keeps what it was.
    pub(super) fn set_var(
        &mut self,
        name: &str,
        value: &Arg,
        append: bool,
        exported: Option<bool>,
    ) {
        let was_exported = matches!(
            self.st.vars.get(name),
            Some(Var::Known { exported: true, .. })
        );
        let exported = exported.unwrap_or(was_exported);
        let v = if value.dynamic {
            Var::Unknown
        } else if append {
            match self.st.vars.get(name) {
                Some(Var::Known { value: old, .. }) => Var::Known {
                    value: format!("{old}{}", value.text),
                    exported,
                },
                Some(Var::Unset) => Var::Known {
                    value: value.text.to_string(),
                    exported,
                },
                _ => Var::Unknown,
            }
        } else {
            Var::Known {
                value: value.text.to_string(),
                exported,
            }
        };
        if name == "PWD" || name == "OLDPWD" {
            // Assigning PWD does not move the shell.
        }
        self.st_mut().vars.insert(name.to_string(), v);
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
            let saved = self.st.clone();
            let out = self.found_out.take();
            self.compound_list(&sub.list, &s);
            self.found_pipe(out);
            self.st = saved;
        }
        Arg {
            text: "/dev/fd/63".into(),
            dynamic: true,
            procsub: true,
            glob: false,
        }
    }

    /// Walks redirections: applies redirect rules, checks the files read
    /// and written, walks substitutions, and records what stdin becomes.
    pub(super) fn redirects<'a>(
        &mut self,
        list: impl IntoIterator<Item = &'a ast::IoRedirect>,
        scope: &mut Scope,
    ) {
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
                                let arg = self.word(&w.value, scope);
                                // `>&WORD` where WORD is no descriptor
                                // (digits, `-`) sends stdout and stderr
                                // to the file WORD, as `&>WORD` does.
                                if matches!(kind, K::DuplicateOutput)
                                    && fd.is_none()
                                    && !is_descriptor(&arg.text)
                                {
                                    self.suspicious(&arg.text);
                                    self.redirect_rules(RedirectMode::Write, &arg);
                                    self.redirect_target(RedirectMode::Write, &arg);
                                }
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
                            self.suspicious(&arg.text);
                            self.redirect_rules(mode, &arg);
                            let mark = self.written.len();
                            self.redirect_target(mode, &arg);
                            // `> f`, `>| f`: f holds the command's output.
                            if matches!(mode, RedirectMode::Write | RedirectMode::Clobber)
                                && fd.unwrap_or(1) == 1
                            {
                                self.written_pending(mark);
                            }
                            if is_stdin && !matches!(mode, RedirectMode::ReadWrite) {
                                self.found_stdin_from(&arg.text);
                                scope.stdin = if arg.procsub {
                                    Stdin::Pipe
                                } else {
                                    self.written_stdin(&arg)
                                };
                            }
                        }
                        T::ProcessSubstitution(pkind, sub) => {
                            self.process_substitution(pkind, sub, scope);
                            if is_stdin {
                                self.found_stdin_from(super::found::PIPE);
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
                    self.suspicious(&arg.text);
                    let mode = if *append {
                        RedirectMode::Append
                    } else {
                        RedirectMode::Write
                    };
                    self.redirect_rules(mode, &arg);
                    let mark = self.written.len();
                    self.redirect_target(mode, &arg);
                    if !*append {
                        self.written_pending(mark);
                    }
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

    /// The working directories of the current state, as text (empty when
    /// unknown).
    pub(super) fn cwd_texts(&self) -> Vec<String> {
        match &self.st.cwd {
            Cwd::Known(v) => v.iter().map(|d| d.render()).collect(),
            Cwd::Unknown => Vec::new(),
        }
    }
}

/// Whether a `>&WORD` target names a file descriptor (`1`, `2-`) or
/// closes one (`-`), rather than a file.
fn is_descriptor(word: &str) -> bool {
    let digits = word.strip_suffix('-').unwrap_or(word);
    word == "-" || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}
