//! Following one command (stage 3, continued): a function defined in the
//! line, an alias, a builtin that changes the shell's state (`cd`,
//! `export`, `exit`...), a wrapper (`sudo`, `env`, `xargs`...), `find`, an
//! interpreter (`sh -c`, `eval`, `python3 -c`, a script), or a command the
//! policy describes (`[[gate.shell.commands]]`, read with
//! [`super::model`], its effects checked by [`super::targets`]). Anything
//! else is unknown: fail closed (`unknown_command`).

use std::borrow::Cow;

use brush_parser::ast;

use super::effects::Flow;
use super::excerpt;
use super::model::{Reading, Source, read_args};
use super::normalize::{flags_of, option_value};
use super::rules::display;
use super::state::{Cwd, Dir, Var};
use super::{Arg, CodeOperands, InterpreterSpec, Run, RunVia, Scope, Stdin, Walker, WrapperSpec};
use crate::gate::types::FindingKind;
use crate::plan::gate::effect::Effect;

/// Where a command runs and who starts it.
#[derive(Debug, Clone)]
pub(super) struct Ctx {
    /// The directory it runs in, when not the shell's (`env -C`, `git -C`).
    pub(super) cwd: Option<Cwd>,
    /// Who starts it.
    pub(super) via: RunVia,
}

impl Walker<'_> {
    /// The directory a command runs in.
    pub(super) fn cwd_of<'a>(&'a self, ctx: &'a Ctx) -> &'a Cwd {
        ctx.cwd.as_ref().unwrap_or(&self.st.cwd)
    }

    /// Analyzes one command given as argv (after expansion): follows it
    /// through functions, builtins, wrappers, `find` and interpreters,
    /// applies the rules and checks its effects. Returns where it leaves
    /// the shell.
    pub(super) fn command(
        &mut self,
        args: Vec<Arg>,
        scope: &Scope,
        wrapped: usize,
        cwd: Option<Cwd>,
    ) -> Flow {
        let via = if wrapped == 0 {
            RunVia::Shell
        } else {
            RunVia::Wrapper
        };
        self.follow(args, scope, wrapped, Ctx { cwd, via })
    }

    fn record_run(&mut self, args: &[Arg], ctx: &Ctx) {
        if !self.want_runs || !self.record || self.runs.len() >= 4096 {
            return;
        }
        let cwd = match self.cwd_of(ctx) {
            Cwd::Known(v) => v.iter().map(Dir::render).collect(),
            Cwd::Unknown => Vec::new(),
        };
        self.runs.push(Run {
            argv: args.iter().map(|a| a.text.to_string()).collect(),
            dynamic: args.iter().any(|a| a.dynamic || a.glob),
            cwd,
            via: ctx.via,
        });
    }

    pub(super) fn follow(
        &mut self,
        mut args: Vec<Arg>,
        scope: &Scope,
        mut wrapped: usize,
        mut ctx: Ctx,
    ) -> Flow {
        let here = self.st.clone();
        loop {
            let Some(first) = args.first() else {
                return Flow::both(here);
            };
            self.record_run(&args, &ctx);
            if first.dynamic {
                let d = format!("`{}`", display(&args));
                self.check(|c| &c.dynamic_command, FindingKind::Shell, &d);
                return Flow::both(here);
            }
            let Some(name) = self.program_name(&args, scope, &ctx) else {
                return Flow::both(here);
            };
            if scope.concurrent && scope.functions.iter().any(|f| f == name) {
                let d = format!("function `{name}` starts itself concurrently");
                self.check(|c| &c.fork_bomb, FindingKind::Shell, &d);
            }
            // A function defined in the line runs its body, here.
            if ctx.via != RunVia::Derived
                && let Some(body) = self.st.functions.get(name).cloned()
            {
                return self.call(name, &body, scope);
            }
            if self.st.aliases.iter().any(|a| a == name) && wrapped == 0 {
                let d = format!("`{name}`");
                self.check(|c| &c.alias, FindingKind::Shell, &d);
                return Flow::both(here);
            }
            let cfg = self.cfg;
            // Rules, with the operands resolved where the line moved.
            let index = cfg.index();
            // The entry's reading of the arguments, when the rule view made
            // one (the effects below read them the same way).
            let mut reading = None;
            if index.rule_names_command(cfg, name) {
                let view = self.rule_view(name, &args, &ctx, &mut reading);
                let parsed = self.parse_args(name, &view[1..]);
                self.rules(name, &parsed, &view);
            }
            if let Some(flow) = self.builtin(name, &args, scope, &ctx) {
                return flow;
            }
            if let Some(spec) = index.wrappers.get(name).map(|i| &cfg.wrappers[*i]) {
                // A wrapper's own effects (sudo: system), then what it runs.
                if let Some(entry) = cfg.command(name) {
                    for e in &entry.effects {
                        self.effect_of_run(e, name, &args, &ctx);
                    }
                }
                if wrapped >= cfg.limits.max_wrappers {
                    let d = format!("more than {} nested wrappers", cfg.limits.max_wrappers);
                    self.check(|c| &c.too_complex, FindingKind::Shell, &d);
                    return Flow::both(here);
                }
                wrapped += 1;
                match self.unwrap(spec, &args[1..], scope, &mut ctx) {
                    Some(inner) => {
                        args = inner;
                        if ctx.via == RunVia::Shell {
                            ctx.via = RunVia::Wrapper;
                        }
                        continue;
                    }
                    None => return Flow::both(self.st.clone()),
                }
            }
            if cfg.find.names.iter().any(|n| n == name) {
                if let Some(entry) = cfg.command(name) {
                    let reading = read_args(entry, &args[1..]);
                    self.check_targets(name, &args[1..], &reading, &ctx, scope);
                }
                self.find(&args[1..], scope, wrapped, &ctx);
                return Flow::both(self.st.clone());
            }
            if let Some(spec) = index.interpreters.get(name).map(|i| &cfg.interpreters[*i]) {
                return self.interpreter(spec, name, &args[1..], scope, wrapped, &ctx);
            }
            self.known(name, &args, scope, &ctx, reading);
            return Flow::both(self.st.clone());
        }
    }

    /// Calls a function defined in the line: its body runs here, in the
    /// current state (at most `max_function_calls` calls, no recursion).
    fn call(&mut self, name: &str, body: &ast::FunctionBody, scope: &Scope) -> Flow {
        if self.call_stack.iter().any(|n| n == name)
            || self.calls >= self.cfg.limits.max_function_calls
        {
            return Flow::both(self.st.clone());
        }
        self.calls += 1;
        self.call_stack.push(name.to_string());
        let mut s = scope.clone();
        if let Some(r) = &body.1 {
            self.redirects(&r.0, &mut s);
        }
        let f = self.compound(&body.0, &s);
        self.call_stack.pop();
        // `return` ends the function, not the line.
        match (f.ok.is_none(), f.fail.is_none()) {
            (true, true) => Flow::both(self.st.clone()),
            _ => f,
        }
    }

    /// The arguments as the rules see them: a path operand is shown where it
    /// lands when the line changed directory (`cd / && rm -rf *` is
    /// `rm -rf /*`).
    /// The entry's reading of `args[1..]`, when one is made, is left in
    /// `reading`.
    pub(super) fn rule_view<'a>(
        &self,
        name: &str,
        args: &'a [Arg],
        ctx: &Ctx,
        reading: &mut Option<Reading>,
    ) -> Cow<'a, [Arg]> {
        let cwd = self.cwd_of(ctx);
        let start = matches!(&cwd, Cwd::Known(v) if v.len() == 1 && v[0] == Dir::start());
        if start {
            return Cow::Borrowed(args);
        }
        let Some(entry) = self.cfg.command(name) else {
            return Cow::Borrowed(args);
        };
        let reading = reading.insert(read_args(entry, &args[1..]));
        // Copied at the first operand shown elsewhere.
        let mut view = Cow::Borrowed(args);
        for t in &reading.targets {
            if !matches!(t.effect, Effect::Read | Effect::Write | Effect::Delete) {
                continue;
            }
            let Source::Arg(i) = t.source else { continue };
            if view[i + 1].text.starts_with('/') || view[i + 1].text.starts_with('~') {
                continue;
            }
            let a = &mut view.to_mut()[i + 1];
            match &cwd {
                Cwd::Known(dirs) => {
                    // The first alternative that is not the start shows
                    // the change; every alternative is checked by targets.
                    let d = dirs
                        .iter()
                        .find(|d| **d != Dir::start())
                        .unwrap_or(&dirs[0]);
                    a.text = d.join(&a.text).render().into();
                }
                Cwd::Unknown => a.dynamic = true,
            }
        }
        view
    }

    /// Builtins that change the shell's state, and the ones that cannot
    /// fail or never return. `None`: not one of them.
    fn builtin(&mut self, name: &str, args: &[Arg], scope: &Scope, ctx: &Ctx) -> Option<Flow> {
        use crate::plan::gate::shell::BuiltinRole as B;
        let role = *self.cfg.builtins.get(name)?;
        let max = self.cfg.limits.max_cwds.max(1);
        let before = self.st.clone();
        let rest = &args[1..];
        let operands: Vec<&Arg> = rest
            .iter()
            .filter(|a| !(a.text.starts_with('-') && a.text.len() > 1) || a.dynamic)
            .collect();
        match role {
            B::Chdir | B::Pushd | B::Popd => {
                if ctx.via != RunVia::Shell {
                    return Some(Flow::both(before));
                }
                let new = match (role, operands.first()) {
                    (B::Popd, _) => match self.st_mut().stack.pop() {
                        Some(c) => c,
                        None => return Some(Flow::both(before)),
                    },
                    (_, None) => Cwd::Known(vec![Dir::start().join("~")]),
                    (_, Some(a)) if a.dynamic => Cwd::Unknown,
                    (_, Some(a)) if a.text == "-" => self.st.oldpwd.clone().unwrap_or(Cwd::Unknown),
                    (_, Some(a)) => match &self.st.cwd {
                        Cwd::Known(dirs) => {
                            let mut v: Vec<Dir> = dirs.iter().map(|d| d.join(&a.text)).collect();
                            v.sort();
                            v.dedup();
                            Cwd::Known(v)
                        }
                        Cwd::Unknown if a.text.starts_with('/') || a.text.starts_with('~') => {
                            Cwd::Known(vec![Dir::start().join(&a.text)])
                        }
                        Cwd::Unknown => Cwd::Unknown,
                    },
                };
                if role == B::Pushd {
                    let c = self.st.cwd.clone();
                    self.st_mut().stack.push(c);
                }
                // At most `max` alternatives (merging a set with itself
                // changes it only above that).
                let new = if new.is_merged(max) {
                    new
                } else {
                    new.merge(&new, max)
                };
                let st = self.st_mut();
                st.oldpwd = Some(std::mem::replace(&mut st.cwd, new));
                if self.want_effects {
                    let shown = rest
                        .iter()
                        .map(|a| a.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" ");
                    let resolved = self.cwd_texts().join(" | ");
                    self.effect("chdir", &shown, &resolved);
                }
                // Into a directory that exists, `cd` does not fail.
                let fail = if self.dirs_exist() {
                    None
                } else {
                    Some(before)
                };
                Some(Flow {
                    ok: Some(self.st.clone()),
                    fail,
                })
            }
            B::Succeed => Some(Flow::ok(before)),
            B::Fail => Some(Flow {
                ok: None,
                fail: Some(before),
            }),
            B::Exit if ctx.via == RunVia::Shell => Some(Flow {
                ok: None,
                fail: None,
            }),
            B::Export | B::Assign => {
                let export = role == B::Export
                    || rest.iter().any(|a| {
                        a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains('x')
                    });
                let array = rest.iter().any(|a| {
                    a.text.starts_with('-') && (a.text.contains('a') || a.text.contains('A'))
                });
                let functions = rest.iter().any(|a| a.text == "-f" || a.text == "-F");
                for a in operands {
                    if functions {
                        continue;
                    }
                    match a.text.split_once('=') {
                        Some((n, v)) if is_name(n) => {
                            let mut value = Arg::literal(v);
                            value.dynamic = a.dynamic || array;
                            self.env_assignment(n, &value);
                            self.set_var(n, &value, false, Some(export));
                        }
                        Some(_) => {}
                        None if is_name(&a.text) => {
                            // `export X`: marks X for export.
                            if export
                                && let Some(Var::Known { value, .. }) =
                                    self.st.vars.get(a.text.as_str()).cloned()
                            {
                                let v = Arg::literal(&value);
                                self.env_assignment(&a.text, &v);
                                self.set_var(&a.text, &v, false, Some(true));
                            }
                        }
                        None => {}
                    }
                }
                Some(Flow::ok(self.st.clone()))
            }
            B::Unset => {
                let functions = rest.iter().any(|a| a.text == "-f");
                for a in operands {
                    if functions {
                        self.st_mut().functions.remove(a.text.as_str());
                    } else if a.dynamic {
                        // Unknown names: nothing known about any variable.
                        for v in self.st_mut().vars.values_mut() {
                            *v = Var::Unknown;
                        }
                    } else {
                        self.st_mut().vars.insert(a.text.to_string(), Var::Unset);
                    }
                }
                Some(Flow::both(self.st.clone()))
            }
            B::ReadVars => {
                for a in operands {
                    let n = a.text.split_once('=').map(|(n, _)| n).unwrap_or(&a.text);
                    if is_name(n) {
                        self.st_mut().vars.insert(n.to_string(), Var::Unknown);
                        self.found_read_var(n);
                    }
                }
                Some(Flow::both(self.st.clone()))
            }
            B::PrintfVar => {
                // `printf -v VAR ...` assigns.
                if let Some(k) = rest.iter().position(|a| a.text == "-v")
                    && let Some(v) = rest.get(k + 1)
                {
                    self.st_mut().vars.insert(v.text.to_string(), Var::Unknown);
                }
                None
            }
            B::Alias => {
                for a in operands {
                    if let Some((n, v)) = a.text.split_once('=') {
                        if !self.st.aliases.iter().any(|x| x == n) {
                            self.st_mut().aliases.push(n.to_string());
                        }
                        // What the alias would run is checked here.
                        let code = Arg {
                            text: v.into(),
                            ..(*a).clone()
                        };
                        let from = self.st.clone();
                        let rec = std::mem::replace(&mut self.record, false);
                        self.code(&code, true, "alias", scope);
                        self.record = rec;
                        self.st = from;
                    }
                }
                Some(Flow::ok(self.st.clone()))
            }
            _ => None,
        }
    }

    /// Strips a wrapper's own options; returns the wrapped argv. The
    /// wrapper's assignments (`env VAR=x`) and working directory (`env -C`)
    /// apply to the wrapped command.
    pub(super) fn unwrap(
        &mut self,
        spec: &WrapperSpec,
        rest: &[Arg],
        scope: &Scope,
        ctx: &mut Ctx,
    ) -> Option<Vec<Arg>> {
        let mut i = 0;
        let mut positional_left = spec.positional;
        let value_flags: Vec<String> = spec
            .value_flags
            .iter()
            .chain(&spec.chdir_flags)
            .cloned()
            .collect();
        while i < rest.len() {
            let a = &rest[i];
            if a.text == "--" {
                i += 1 + positional_left;
                break;
            }
            if spec.skip_assignments && is_assignment(&a.text) {
                if let Some((n, v)) = a.text.split_once('=') {
                    let mut value = Arg::literal(v);
                    value.dynamic = a.dynamic;
                    self.env_assignment(n, &value);
                }
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
            if spec.no_exec_flags.iter().any(|f| *f == a.text) {
                return None;
            }
            let (consumed, value) = option_value(&rest[i..], &value_flags, &spec.code_flags);
            if let Some((flag, v)) = &value {
                if spec.code_flags.contains(flag) {
                    self.code(v, true, &format!("`{flag}` code"), scope);
                }
                if spec.input_flags.contains(flag) {
                    self.found_input(v);
                }
                if spec.chdir_flags.contains(flag) {
                    let base = self.cwd_of(ctx).clone();
                    ctx.cwd = Some(if v.dynamic {
                        Cwd::Unknown
                    } else {
                        match base {
                            Cwd::Known(d) => {
                                Cwd::Known(d.iter().map(|d| d.join(&v.text)).collect())
                            }
                            Cwd::Unknown => Cwd::Unknown,
                        }
                    });
                }
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
                text: extra.clone().into(),
                dynamic: true,
                procsub: false,
                glob: false,
            });
            ctx.via = RunVia::Derived;
        }
        Some(inner)
    }

    fn find(&mut self, rest: &[Arg], scope: &Scope, wrapped: usize, ctx: &Ctx) {
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
        let sensitive = self.find_lists_sensitive(&starts, &rest[i..], ctx);
        if sensitive.is_some() && self.find_prints(&rest[i..]) {
            self.found_out = sensitive.clone();
        }
        let placeholder = &spec.placeholder;
        let exec_actions = &spec.exec_actions;
        let delete_actions = &spec.delete_actions;
        let delete_as = &spec.delete_as;
        let derived = Ctx {
            cwd: ctx.cwd.clone(),
            via: RunVia::Derived,
        };
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
                                    text: a.text.replace(placeholder.as_str(), &start.text).into(),
                                    dynamic: true,
                                    procsub: false,
                                    glob: false,
                                }
                            } else {
                                a.clone()
                            }
                        })
                        .collect();
                    let outer = std::mem::replace(&mut self.found, sensitive.clone());
                    self.follow(inner, scope, wrapped + 1, derived.clone());
                    self.found = outer;
                }
                i = end + 1;
            } else {
                if delete_actions.iter().any(|d| d == t) {
                    for start in &starts {
                        let mut inner: Vec<Arg> =
                            delete_as.iter().map(|s| Arg::literal(s)).collect();
                        inner.push(start.clone());
                        self.follow(inner, scope, wrapped + 1, derived.clone());
                    }
                }
                i += 1;
            }
        }
    }

    fn interpreter(
        &mut self,
        spec: &InterpreterSpec,
        name: &str,
        rest: &[Arg],
        scope: &Scope,
        wrapped: usize,
        ctx: &Ctx,
    ) -> Flow {
        let value_flags: Vec<String> = if spec.code_flag_takes_value {
            spec.value_flags
                .iter()
                .chain(spec.code_flags.iter())
                .chain(spec.module_flags.iter())
                .cloned()
                .collect()
        } else {
            spec.value_flags
                .iter()
                .chain(spec.module_flags.iter())
                .cloned()
                .collect()
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
            if let Some((flag, v)) = &value {
                if spec.code_flag_takes_value && spec.code_flags.contains(flag) {
                    return self.run_code(spec, v, &format!("`{name} {flag}` code"), scope);
                }
                if spec.module_flags.contains(flag) {
                    // `python -m MOD ARGS`: the module's command.
                    let rest_args = rest.get(i + consumed..).unwrap_or_default();
                    if !v.dynamic && spec.modules.iter().any(|m| *m == v.text) {
                        let mut inner = vec![Arg::literal(&v.text)];
                        inner.extend_from_slice(rest_args);
                        let sub = Ctx {
                            cwd: ctx.cwd.clone(),
                            via: RunVia::Wrapper,
                        };
                        return self.follow(inner, scope, wrapped + 1, sub);
                    }
                    let d = format!("`{name} {flag} {}`", excerpt(&v.text));
                    self.unknown(&d);
                    return Flow::both(self.st.clone());
                }
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
            return Flow::both(self.st.clone());
        }
        if code_flag_seen {
            match operands.first() {
                Some(code) => {
                    return self.run_code(spec, code, &format!("`{name} -c` code"), scope);
                }
                None => self.stdin_code(spec, name, scope),
            }
            return Flow::both(self.st.clone());
        }
        match spec.code_operands {
            CodeOperands::All if !operands.is_empty() => {
                let joined = join_args(operands);
                return self.run_code(spec, &joined, &format!("`{name}` code"), scope);
            }
            CodeOperands::First if !operands.is_empty() => {
                let code = operands[0].clone();
                // `trap - SIG` and `trap 2 ...` reset: no code.
                if !code.dynamic
                    && (code.text == "-" || code.text.bytes().all(|b| b.is_ascii_digit()))
                {
                    return Flow::both(self.st.clone());
                }
                // `trap CODE SIGNAL`: runs later, in this shell.
                self.run_code_later(&code, &format!("`{name}` code"), scope);
                return Flow::both(self.st.clone());
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
            } else {
                self.path_target(Effect::Script, &script.text, script.dynamic, ctx);
                let how = if spec.shell {
                    super::written::RunAs::Shell
                } else {
                    super::written::RunAs::Language(spec.language.as_deref().unwrap_or(""))
                };
                let run = format!("{name} {}", script.text);
                self.run_written_script(&script.text, script.dynamic, how, &run, scope, ctx);
                if spec.in_shell {
                    // A sourced script may set any variable.
                    for v in self.st_mut().vars.values_mut() {
                        *v = Var::Unknown;
                    }
                }
            }
            return Flow::both(self.st.clone());
        }
        if spec.reads_stdin {
            self.stdin_code(spec, name, scope);
        }
        Flow::both(self.st.clone())
    }

    /// Inline code of an interpreter: shell code is walked (in this shell
    /// for `eval`, in a child otherwise); other languages are checked
    /// against their rules.
    fn run_code(&mut self, spec: &InterpreterSpec, code: &Arg, what: &str, scope: &Scope) -> Flow {
        if spec.shell {
            if spec.in_shell {
                self.code(code, true, what, scope);
                if code.dynamic {
                    self.st_mut().cwd = Cwd::Unknown;
                    for v in self.st_mut().vars.values_mut() {
                        *v = Var::Unknown;
                    }
                }
                return Flow::both(self.st.clone());
            }
            let saved = self.st.clone();
            self.st = std::rc::Rc::new(saved.child());
            self.code(code, true, what, scope);
            self.st = saved;
            return Flow::both(self.st.clone());
        }
        self.foreign_code(spec.language.as_deref().unwrap_or(""), code, what);
        Flow::both(self.st.clone())
    }

    /// `trap CODE`: shell code run later in this shell; checked now, without
    /// changing the state.
    fn run_code_later(&mut self, code: &Arg, what: &str, scope: &Scope) {
        let saved = self.st.clone();
        self.code(code, true, what, scope);
        self.st = saved;
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
                let what = format!("`{name}` here-document");
                if spec.shell {
                    let saved = self.st.clone();
                    self.st = std::rc::Rc::new(saved.child());
                    self.code(&code, true, &what, scope);
                    self.st = saved;
                } else {
                    self.foreign_code(spec.language.as_deref().unwrap_or(""), &code, &what);
                }
            }
            Stdin::Written(i) => self.run_written_stdin(*i, spec, name, scope),
            Stdin::Inherit | Stdin::File => {}
        }
    }

    /// Code run by an interpreter: parsed if static shell, flagged if it
    /// comes from an expansion. Walked in the current state.
    pub(super) fn code(&mut self, code: &Arg, shell: bool, what: &str, scope: &Scope) {
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

    /// A command the policy describes, a trusted project command, or an
    /// unknown one.
    /// `first`: the reading of `args[1..]` with `name`'s entry, if made.
    fn known(
        &mut self,
        name: &str,
        args: &[Arg],
        scope: &Scope,
        ctx: &Ctx,
        mut first: Option<Reading>,
    ) {
        let cfg = self.cfg;
        self.found_passes(name);
        // `git`, then `git diff` (a copy only for a subcommand).
        let mut full = Cow::Borrowed(name);
        let mut start = 1;
        let mut ctx = ctx.clone();
        let mut depth = 0;
        loop {
            let Some((entry, by_pattern)) = cfg.command_match(&full) else {
                // A file this command runs as code, written earlier in the line.
                self.run_written_project(&full, &args[start..], &[], scope, &ctx);
                if cfg.trusted(&full) {
                    return;
                }
                self.unknown(&format!("`{full}`"));
                return;
            };
            let rest = &args[start..];
            let reading = match first.take() {
                Some(r) if depth == 0 => r,
                _ => read_args(entry, rest),
            };
            // A file this command runs as code, written earlier in the line
            // (where it works: its own options, before they apply below).
            self.run_written_project(&full, rest, &reading.operands, scope, &ctx);
            // The directory this command works in (`git -C`, `make -C`).
            for t in &reading.targets {
                if t.effect == Effect::Chdir
                    && let Some(a) = source_arg(rest, &t.source)
                {
                    let base = self.cwd_of(&ctx).clone();
                    ctx.cwd = Some(if a.dynamic {
                        Cwd::Unknown
                    } else {
                        match base {
                            Cwd::Known(d) => {
                                Cwd::Known(d.iter().map(|d| d.join(&a.text)).collect())
                            }
                            Cwd::Unknown if a.text.starts_with('/') => {
                                Cwd::Known(vec![Dir::start().join(&a.text)])
                            }
                            Cwd::Unknown => Cwd::Unknown,
                        }
                    });
                }
            }
            for o in &reading.unknown_options {
                self.unknown(&format!(
                    "`{full} {o}` (an option the policy does not list)"
                ));
            }
            self.check_targets(&full, rest, &reading, &ctx, scope);
            self.url_directory(entry, rest, &reading, &ctx);
            if let Some(lang) = &entry.stdin_code
                && !reading.operands.iter().any(|&i| {
                    reading
                        .targets
                        .iter()
                        .any(|t| t.source == Source::Arg(i) && matches!(t.effect, Effect::Code(_)))
                })
            {
                let lang = super::sqlite::stdin_language(entry, rest, lang);
                self.stdin_code_of(lang, &full, scope);
            }
            if let Some(kind) = super::links::link_kind(&reading) {
                self.record_links(kind, rest, &reading, &ctx);
            }
            for e in &reading.effects {
                self.effect_of_run(e, &full, args, &ctx);
            }
            let Some(sub) = reading.subcommand else {
                // A group named by a pattern (`gcloud * *`) says nothing of
                // what its own run does: only a named verb below it is known.
                if by_pattern && entry.subcommands {
                    self.unknown(&format!("`{full}`"));
                }
                return;
            };
            depth += 1;
            let sub_arg = &rest[sub];
            if sub_arg.dynamic || depth > 4 {
                self.unknown(&format!("`{full} {}`", excerpt(&sub_arg.text)));
                return;
            }
            full = Cow::Owned(format!("{full} {}", sub_arg.text));
            start += sub + 1;
        }
    }

    /// A finding for a program (or subcommand) the policy does not know.
    pub(super) fn unknown(&mut self, detail: &str) {
        let mut f = self
            .cfg
            .checks
            .unknown_command
            .finding(FindingKind::Shell, self.path, detail);
        f.action = self.cfg.unknown_command;
        if f.action != crate::gate::types::Action::Allow {
            self.findings.push(f);
        }
        self.effect("unknown", detail.trim_matches('`'), "");
    }
}

/// The argument a target's source names: borrowed from `rest` when it is
/// a whole argument (the usual case), built otherwise.
pub(super) fn source_arg<'a>(rest: &'a [Arg], src: &Source) -> Option<Cow<'a, Arg>> {
    match src {
        Source::Arg(i) => rest.get(*i).map(Cow::Borrowed),
        Source::Part(i, off) => rest.get(*i).map(|a| {
            Cow::Owned(Arg {
                text: a.text.get(*off..).unwrap_or("").into(),
                dynamic: a.dynamic,
                procsub: a.procsub,
                glob: a.glob,
            })
        }),
        Source::Fixed(p) => Some(Cow::Owned(Arg::literal(p))),
        Source::Pair(k, v) => {
            let (k, v) = (rest.get(*k)?, rest.get(*v)?);
            Some(Cow::Owned(Arg {
                text: compact_str::format_compact!("{}={}", k.text, v.text),
                dynamic: k.dynamic || v.dynamic,
                procsub: false,
                glob: false,
            }))
        }
    }
}

pub(super) fn is_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_assignment(s: &str) -> bool {
    match s.split_once('=') {
        Some((name, _)) => is_name(name),
        None => false,
    }
}

pub(super) fn join_args(args: &[Arg]) -> Arg {
    Arg {
        text: args
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
            .into(),
        dynamic: args.iter().any(|a| a.dynamic),
        procsub: args.iter().any(|a| a.procsub),
        glob: false,
    }
}
