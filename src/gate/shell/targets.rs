//! Checking effects (stage 3, continued): each target a command's entry
//! gives ([`super::model`]) and each effect of the run, against the policy.
//!
//! - paths read, written, deleted or run as scripts are resolved against
//!   the directory the command runs in and placed against the
//!   `[gate.paths]` roots (writes and deletes through symlinks too);
//! - a command line run through an option, script or variable (`exec`) is
//!   walked as shell code and, unless it only names a harmless program,
//!   asks (`effects.exec`);
//! - code in another language: sed scripts and awk programs are read for
//!   the programs they run and the files they touch, inline Python and
//!   JavaScript are checked against their harmless subset
//!   ([`crate::gate::code`]);
//! - settings (`git -c KEY=VALUE`), packages to install, network
//!   addresses, environment variables that load code, and the effects of
//!   the run itself (network, system, remote, project).
//!
//! Each outcome comes from `[gate.shell.effects]`; every effect is also
//! recorded for `toolgate guard`.

use std::path::{Path, PathBuf};

use super::commands::{Ctx, source_arg};
use super::model::Reading;
use super::normalize::basename;
use super::state::{Cwd, Dir};
use super::{Arg, EffectChecks, RedirectMode, RunVia, Scope, Walker, excerpt};
use crate::gate::code::{self, ScriptEffect};
use crate::gate::path::{Placement, place, place_normal, place_with};
use crate::gate::types::{Action, Check, FindingKind};
use crate::plan::gate::effect::Effect;
use crate::plan::gate::shell::EnvValue;

/// [`place`] without symlinks of a path already absolute and normalised
/// (a [`Spot::normal`] one): the lexical pass is skipped.
fn placed_lexically(roots: &crate::gate::path::Roots, p: &Path) -> Placement {
    place_normal(roots, p, false, &mut crate::gate::path::Lstats::default())
}

/// Where a path operand lands.
enum Place {
    /// Only known at run time.
    Dynamic,
    /// One place per working directory the command may run in (usually
    /// one: kept inline).
    At(smallvec::SmallVec<[Spot; 1]>),
}

/// One place of a path operand: as shown (absolute, or `~/...`) and, when
/// known, absolute.
struct Spot {
    /// As shown; `None` when it is the absolute path's own text (the
    /// usual case: one string instead of a copy).
    shown: Option<String>,
    /// The absolute path, when known.
    abs: Option<PathBuf>,
}

impl Spot {
    /// A place shown as its absolute path `abs` (UTF-8, normalised).
    fn same(abs: String) -> Spot {
        Spot {
            shown: None,
            abs: Some(PathBuf::from(abs)),
        }
    }

    /// A place shown as `shown`, at `abs`.
    fn new(shown: String, abs: Option<PathBuf>) -> Spot {
        Spot {
            shown: Some(shown),
            abs,
        }
    }

    /// The place as shown.
    fn shown(&self) -> &str {
        match (&self.shown, &self.abs) {
            (Some(s), _) => s,
            (None, Some(p)) => p.to_str().unwrap_or_default(),
            (None, None) => "",
        }
    }

    /// The absolute path, when shown as it is (normalised already: no
    /// second lexical pass needed to place it).
    fn normal(&self) -> Option<&Path> {
        let p = self.abs.as_deref()?;
        match &self.shown {
            None => Some(p),
            Some(s) => (p.as_os_str() == s.as_str()).then_some(p),
        }
    }
}

impl Walker<'_> {
    /// Adds the finding of an effect check, unless it allows.
    pub(super) fn effect_check(&mut self, pick: impl Fn(&EffectChecks) -> &Check, detail: &str) {
        let c = pick(&self.cfg.effects);
        if c.action != Action::Allow {
            let f = c.finding(FindingKind::Shell, self.path, detail);
            self.findings.push(f);
        }
    }

    /// [`Self::effect_check`] with the detail built only when the check
    /// adds a finding.
    fn effect_check_with(
        &mut self,
        pick: impl Fn(&EffectChecks) -> &Check,
        detail: impl FnOnce() -> String,
    ) {
        if pick(&self.cfg.effects).action != Action::Allow {
            let d = detail();
            self.effect_check(pick, &d);
        }
    }

    /// Checks every target and effect of one command's reading.
    pub(super) fn check_targets(
        &mut self,
        cmd: &str,
        rest: &[Arg],
        reading: &Reading,
        ctx: &Ctx,
        scope: &Scope,
    ) {
        let kept = std::mem::replace(
            &mut self.content_kept,
            self.cfg.keeps_content.iter().any(|c| c == cmd),
        );
        // Only a command that writes can write a tree.
        let tree = if reading.targets.iter().any(|t| t.effect == Effect::Write) {
            super::written::tree_writer(&self.cfg.writes_trees, cmd, rest)
        } else {
            None
        };
        let tree = std::mem::replace(&mut self.tree_writer, tree);
        self.check_targets_inner(cmd, rest, reading, ctx, scope);
        self.content_kept = kept;
        self.tree_writer = tree;
    }

    fn check_targets_inner(
        &mut self,
        cmd: &str,
        rest: &[Arg],
        reading: &Reading,
        ctx: &Ctx,
        scope: &Scope,
    ) {
        for t in &reading.targets {
            let Some(a) = source_arg(rest, &t.source) else {
                continue;
            };
            match &t.effect {
                Effect::Read | Effect::Write | Effect::Delete | Effect::Script => {
                    self.path_target(t.effect.clone(), &a.text, a.dynamic, ctx)
                }
                Effect::Chdir => {
                    let shown = self.cwd_of(ctx);
                    let resolved = match &shown {
                        Cwd::Known(v) => v.iter().map(Dir::render).collect::<Vec<_>>().join(" | "),
                        Cwd::Unknown => "dynamic".into(),
                    };
                    self.effect("chdir", &a.text, &resolved);
                }
                Effect::Exec => {
                    let what = format!("`{cmd}`");
                    self.exec_target(&a.text, a.dynamic, &what, scope, ctx);
                }
                Effect::Code(lang) => self.script_code(lang, &a, cmd, ctx, scope),
                Effect::Config(name) => self.config_target(name, &a, cmd, ctx, scope),
                Effect::Install => {
                    if self.cfg.package_files.is_match(&a.text) {
                        self.path_target(Effect::Script, &a.text, a.dynamic, ctx);
                    } else {
                        self.effect("install", &a.text, cmd);
                        let d = format!("`{cmd} {}`", excerpt(&a.text));
                        self.effect_check(|e| &e.install, &d);
                    }
                }
                Effect::Url => self.url_target(&a, cmd, ctx),
                Effect::Host => self.host_target(&a, cmd),
                Effect::Data => self.data_target(&a, cmd, ctx),
                Effect::Upload => self.upload_target(&a, cmd, ctx),
                Effect::None
                | Effect::Network
                | Effect::System
                | Effect::Remote
                | Effect::Project
                | Effect::Clear
                | Effect::Operands(_)
                | Effect::OptionValue(..)
                | Effect::Link(_)
                | Effect::Fixed(..) => {}
            }
        }
    }

    /// An effect of the run itself (`effects = [...]` of an entry).
    pub(super) fn effect_of_run(&mut self, e: &Effect, cmd: &str, args: &[Arg], ctx: &Ctx) {
        let shown = || format!("`{}`", excerpt(&super::rules::display(args)));
        match e {
            Effect::Network => {
                self.effect("network", cmd, cmd);
                self.effect_check_with(|c| &c.network, shown);
            }
            Effect::System => {
                self.effect("system", cmd, cmd);
                self.effect_check_with(|c| &c.system, shown);
            }
            Effect::Remote => {
                self.effect("remote", cmd, cmd);
                self.effect_check_with(|c| &c.remote, shown);
            }
            Effect::Install => {
                self.effect("install", cmd, cmd);
                self.effect_check_with(|c| &c.install, shown);
            }
            Effect::Project => {
                self.effect("project", cmd, cmd);
                // `bundle exec`, `mix test`: the first operand may name the
                // trusted subcommand of an entry without subcommands.
                let sub = || {
                    args.iter()
                        .skip(cmd.split(' ').count())
                        .find(|a| !a.text.starts_with('-'))
                        .map(|a| format!("{cmd} {}", a.text))
                };
                let trusted = (self.cfg.trusted(cmd)
                    || sub().as_deref().is_some_and(|s| self.cfg.trusted(s)))
                    && self.in_project(ctx);
                if !trusted {
                    self.effect_check_with(|c| &c.project, shown);
                }
            }
            Effect::Exec => {
                self.effect("exec", cmd, cmd);
                self.effect_check_with(
                    |c| &c.exec,
                    || {
                        format!(
                            "{} runs programs its configuration or arguments name",
                            shown()
                        )
                    },
                );
            }
            _ => {}
        }
    }

    /// Whether a command runs inside the roots (the project's code is
    /// there): a trusted command moved elsewhere (`make -C /etc`) is not
    /// running the project's code.
    fn in_project(&self, ctx: &Ctx) -> bool {
        match self.place_of(".", false, ctx, true) {
            Place::Dynamic => false,
            Place::At(v) => v.iter().all(|s| match (s.normal(), &s.abs) {
                (Some(p), _) => placed_lexically(&self.roots, p) == Placement::Inside,
                (None, Some(p)) => place(&self.roots, p, false) == Placement::Inside,
                (None, None) => false,
            }),
        }
    }

    /// Whether every alternative of the shell's working directory is an
    /// existing directory.
    pub(super) fn dirs_exist(&mut self) -> bool {
        if !matches!(self.st.cwd, Cwd::Known(_)) {
            return false;
        }
        // The shell's own directory: no copy of its alternatives.
        let ctx = Ctx {
            cwd: None,
            via: RunVia::Shell,
        };
        match self.place_of(".", false, &ctx, true) {
            Place::Dynamic => false,
            Place::At(v) => v
                .iter()
                .all(|s| s.abs.as_ref().is_some_and(|p| self.lstats.is_dir(p))),
        }
    }

    /// Resolves a path operand against the directories the command may run
    /// in, and through the links the line made before it
    /// ([`super::links`]; `follow_last`: a link the whole path names too).
    fn place_of(&self, text: &str, dynamic: bool, ctx: &Ctx, follow_last: bool) -> Place {
        if dynamic {
            return Place::Dynamic;
        }
        let linked = !self.links.is_empty();
        let base = self.roots.lexical.first();
        let dirs: Vec<Dir> = if text.starts_with('/') || text.starts_with('~') {
            vec![Dir::start().join(text)]
        } else {
            match self.cwd_of(ctx) {
                Cwd::Known(v) => {
                    // The usual case, a relative path below directories
                    // below the start: the text is built directly (what
                    // the general case below gives, without the joins).
                    if let Some(root) = base.and_then(|b| b.to_str())
                        && !linked
                        && !text.split('/').any(|c| c == "..")
                        && v.iter().all(
                            |d| matches!(d, Dir::Rel(c) if c.first().is_none_or(|x| x != "..")),
                        )
                    {
                        return Place::At(
                            v.iter()
                                .map(|d| Spot::same(rel_path(root, d, text)))
                                .collect(),
                        );
                    }
                    v.iter().map(|d| d.join(text)).collect()
                }
                Cwd::Unknown => return Place::Dynamic,
            }
        };
        let dirs = if linked {
            let mut through = Vec::with_capacity(dirs.len());
            for d in dirs {
                match self.through_links(d, follow_last) {
                    Some(d) => through.push(d),
                    None => return Place::Dynamic,
                }
            }
            through
        } else {
            dirs
        };
        // The root is normalised and so are the components (no `.`, `..`
        // only leading): a path without `..` is normalised as joined, and
        // shown as it is.
        Place::At(
            dirs.into_iter()
                .map(|d| match &d {
                    Dir::Rel(c) => match base {
                        Some(b) if c.first().is_none_or(|x| x != "..") => match b.to_str() {
                            // The text first, then the path from it (no
                            // `Display` round trip, one allocation each).
                            Some(root) => {
                                let mut shown = String::with_capacity(
                                    root.len() + c.iter().map(|x| x.len() + 1).sum::<usize>(),
                                );
                                shown.push_str(root);
                                for x in c {
                                    if !shown.ends_with('/') {
                                        shown.push('/');
                                    }
                                    shown.push_str(x);
                                }
                                Spot::same(shown)
                            }
                            None => {
                                let mut p = b.clone();
                                for x in c {
                                    p.push(x);
                                }
                                Spot::new(p.display().to_string(), Some(p))
                            }
                        },
                        Some(b) => {
                            let mut p = b.clone();
                            for x in c {
                                p.push(x);
                            }
                            // Shown normalised; the path as joined (`cd ..`
                            // is looked at through the root's own name).
                            let shown = crate::gate::path::normalize(&p).display().to_string();
                            Spot::new(shown, Some(p))
                        }
                        None => Spot::new(d.render(), None),
                    },
                    Dir::Abs(_) => Spot::same(d.render()),
                    Dir::Home(user, c) => {
                        let home = if user.is_empty() {
                            std::env::var_os("HOME").map(PathBuf::from)
                        } else {
                            None
                        };
                        match home {
                            Some(h) => {
                                let abs = c.iter().fold(h, |p, x| p.join(x));
                                let abs = crate::gate::path::normalize(&abs);
                                Spot::new(abs.display().to_string(), Some(abs))
                            }
                            None => Spot::new(d.render(), None),
                        }
                    }
                })
                .collect(),
        )
    }

    /// The absolute places `text` names where the command runs (one per
    /// working directory it may have); `None` when only known at run time
    /// or not absolute.
    pub(super) fn absolute_places(&self, text: &str, ctx: &Ctx) -> Option<Vec<PathBuf>> {
        match self.place_of(text, false, ctx, true) {
            Place::Dynamic => None,
            Place::At(v) => v.into_iter().map(|s| s.abs).collect(),
        }
    }

    /// Checks a path that a command reads, writes, deletes or runs as a
    /// script.
    pub(super) fn path_target(&mut self, effect: Effect, text: &str, dynamic: bool, ctx: &Ctx) {
        let kind = effect.kind();
        if matches!(effect, Effect::Read) && self.found_any() {
            self.found_read(text, dynamic, ctx);
        }
        // `rm h` removes a link `h` itself; `rm -r h/` what it leads to.
        let follow_last = !matches!(effect, Effect::Delete) || text.ends_with('/');
        match self.place_of(text, dynamic, ctx, follow_last) {
            Place::Dynamic => {
                self.effect(kind, text, "dynamic");
                let d = format!("`{}`", excerpt(text));
                match effect {
                    Effect::Write | Effect::Delete => self.effect_check(|c| &c.dynamic_path, &d),
                    Effect::Script => self.effect_check(|c| &c.script_outside, &d),
                    // A read only known at run time whose known part names
                    // credentials (`cat "$D/.ssh/id_rsa"`).
                    Effect::Read if self.cfg.sensitive_reads.is_match(text) => {
                        self.effect_check(|c| &c.read_sensitive, &d)
                    }
                    _ => {}
                }
            }
            Place::At(places) => {
                for spot in places {
                    let shown = spot.shown();
                    let abs = &spot.abs;
                    self.effect(kind, text, shown);
                    let writes = matches!(effect, Effect::Write | Effect::Delete);
                    if writes && self.cfg.harmless_redirects.is_match(shown) {
                        continue;
                    }
                    if matches!(effect, Effect::Write)
                        && let Some(p) = &abs
                    {
                        self.record_written(p.clone());
                    }
                    if matches!(effect, Effect::Read)
                        && (self.cfg.sensitive_reads.is_match(shown)
                            || self.cfg.sensitive_reads.is_match(text)
                            || (super::globs::has_glob(text)
                                && super::globs::glob_reads_sensitive(
                                    &self.cfg.sensitive_reads.0,
                                    shown,
                                )))
                    {
                        let d = format!("`{shown}`");
                        self.effect_check(|c| &c.read_sensitive, &d);
                        continue;
                    }
                    let placement = match (spot.normal(), abs) {
                        // Shown as it is: normalised already.
                        (Some(p), _) => place_normal(&self.roots, p, writes, &mut self.lstats),
                        (None, Some(p)) => place_with(&self.roots, p, writes, &mut self.lstats),
                        (None, None) => Placement::Outside,
                    };
                    let d = || {
                        if shown == text {
                            format!("`{shown}`")
                        } else {
                            format!("`{}` (`{shown}`)", excerpt(text))
                        }
                    };
                    match (placement, &effect) {
                        (Placement::Inside, _) => {}
                        (Placement::SymlinkEscape(real), Effect::Write | Effect::Delete) => {
                            let d = format!("{}, which leads to `{}`", d(), real.display());
                            self.effect_check(|c| &c.symlink_escape, &d);
                        }
                        (Placement::Unresolvable, Effect::Write | Effect::Delete) => {
                            let d = format!("{}, through too many symlinks", d());
                            self.effect_check(|c| &c.symlink_escape, &d);
                        }
                        (_, Effect::Write) => self.effect_check_with(|c| &c.write_outside, d),
                        (_, Effect::Delete) => self.effect_check_with(|c| &c.delete_outside, d),
                        (_, Effect::Script) => self.effect_check_with(|c| &c.script_outside, d),
                        (_, _) => self.effect_check_with(|c| &c.read_outside, d),
                    }
                }
            }
        }
    }

    /// A redirection's file: read or written where the shell is.
    pub(super) fn redirect_target(&mut self, mode: RedirectMode, arg: &Arg) {
        let norm = super::normalize::normalize_operand(&arg.text);
        if arg.procsub || self.cfg.harmless_redirects.is_match(&norm) {
            return;
        }
        let effect = match mode {
            RedirectMode::Read => Effect::Read,
            _ => Effect::Write,
        };
        let ctx = Ctx {
            cwd: None,
            via: RunVia::Shell,
        };
        self.path_target(effect, &arg.text, arg.dynamic, &ctx);
    }

    /// Whether a command line only runs a harmless program with options
    /// (`cat`, `less -R`): nothing hidden runs.
    fn harmless_program(&self, text: &str) -> bool {
        if text.contains([';', '|', '&', '<', '>', '$', '`', '(', ')', '\n']) {
            return false;
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        let Some(first) = words.first() else {
            return true;
        };
        let prog = basename(first);
        self.cfg.harmless_programs.iter().any(|h| h == prog)
            && words[1..].iter().all(|w| w.starts_with('-'))
    }

    /// A command line some program runs (an option's value, a setting, a
    /// sed `e` command, an environment variable): walked as shell code in a
    /// child of this shell, and an `exec` finding unless it only names a
    /// harmless program.
    pub(super) fn exec_target(
        &mut self,
        text: &str,
        dynamic: bool,
        what: &str,
        scope: &Scope,
        ctx: &Ctx,
    ) {
        let prog = text.split_whitespace().next().unwrap_or("");
        self.effect("exec", text, basename(prog));
        let code = Arg {
            text: text.into(),
            dynamic,
            procsub: false,
            glob: false,
        };
        let saved = self.st.clone();
        self.st = std::rc::Rc::new(saved.child());
        if let Some(c) = &ctx.cwd {
            self.st_mut().cwd = c.clone();
        }
        let rec = std::mem::replace(&mut self.record, false);
        self.code(&code, true, what, scope);
        self.record = rec;
        self.st = saved;
        if dynamic || !self.harmless_program(text) {
            let d = format!("{what} runs `{}`", excerpt(text));
            self.effect_check(|c| &c.exec, &d);
        }
    }

    /// Code in another language given to a command: sed and awk are read
    /// for what they run and touch; shell is walked; other languages are
    /// checked against `[gate.shell.code.<language>]`.
    fn script_code(&mut self, lang: &str, a: &Arg, cmd: &str, ctx: &Ctx, scope: &Scope) {
        let what = format!("`{cmd}` {lang} code");
        if a.dynamic {
            self.effect("code", &a.text, lang);
            let d = format!("{what} `{}` is built at run time", excerpt(&a.text));
            self.check(|c| &c.dynamic_code, FindingKind::Shell, &d);
            return;
        }
        let effects = match lang {
            "sed" => code::sed::effects(&a.text),
            "awk" => code::awk::effects(&a.text),
            "shell" => {
                let saved = self.st.clone();
                self.st = std::rc::Rc::new(saved.child());
                self.code(a, true, &what, scope);
                self.st = saved;
                return;
            }
            "shell-words" => {
                // A word list the program expands as the shell would
                // (`compgen -W`): substitutions in it run. Walked as the
                // arguments of `:`, which runs nothing else.
                let words = Arg {
                    text: format!(": {}", a.text).into(),
                    ..a.clone()
                };
                let saved = self.st.clone();
                self.st = std::rc::Rc::new(saved.child());
                self.code(&words, true, &what, scope);
                self.st = saved;
                return;
            }
            "sqlite" | "sqlite-readonly" => {
                self.sqlite_code(a, cmd, lang == "sqlite-readonly");
                return;
            }
            "sqlite-file" => {
                self.sqlite_file(a, cmd);
                return;
            }
            other => {
                self.foreign_code(other, a, &what);
                return;
            }
        };
        self.effect("code", &a.text, lang);
        for e in effects {
            match e {
                ScriptEffect::Exec(Some(c)) => self.exec_target(&c, false, &what, scope, ctx),
                ScriptEffect::Exec(None) => {
                    self.effect("exec", &a.text, lang);
                    let d = format!("{what} runs the text it edits as a command");
                    self.effect_check(|c| &c.exec, &d);
                }
                ScriptEffect::Write(p) => self.path_target(Effect::Write, &p, false, ctx),
                ScriptEffect::Read(p) => self.path_target(Effect::Read, &p, false, ctx),
                ScriptEffect::Script(p) => self.path_target(Effect::Script, &p, false, ctx),
                ScriptEffect::Unknown(r) => {
                    let d = format!("{what}: {r}");
                    self.effect_check(|c| &c.code, &d);
                }
            }
        }
    }

    /// Inline code for an interpreter, checked against its language's
    /// harmless subset.
    pub(super) fn foreign_code(&mut self, lang: &str, code: &Arg, what: &str) {
        self.effect("code", &code.text, lang);
        if code.procsub || code.dynamic {
            let d = format!("{what} `{}` is built at run time", excerpt(&code.text));
            self.check(|c| &c.dynamic_code, FindingKind::Shell, &d);
            return;
        }
        let problem = match self.cfg.code.get(lang) {
            Some(rules) => code::check(rules, &code.text).err(),
            None => Some(code::CodeProblem::NoParser(lang.to_string())),
        };
        if let Some(p) = problem {
            let lang_shown = if lang.is_empty() {
                "this language"
            } else {
                lang
            };
            let d = match &p {
                code::CodeProblem::NoParser(_) => {
                    format!("{what}: no parser checks {lang_shown} code")
                }
                other => format!("{what}: {other}"),
            };
            self.effect_check(|c| &c.code, &d);
        }
    }

    /// A `KEY=VALUE` setting (`git -c`, `ssh -o`, `tar --checkpoint-action`).
    fn config_target(&mut self, name: &str, a: &Arg, cmd: &str, ctx: &Ctx, scope: &Scope) {
        self.effect("config", &a.text, name);
        let Some(rules) = self.cfg.config.get(name) else {
            return;
        };
        let text = a.text.as_str();
        let split = match &rules.separator {
            Some(sep) => split_after_quoted_key(text, sep),
            None => text.split_once('=').or_else(|| {
                // `ssh -o 'ProxyCommand sh -c x'`
                text.split_once(char::is_whitespace)
            }),
        };
        let what = format!(
            "`{cmd}` setting `{}`",
            excerpt(split.map(|(k, _)| k).unwrap_or(text))
        );
        match split {
            Some((key, value)) => {
                let key = key.trim();
                if rules.exec_keys.as_ref().is_some_and(|r| r.is_match(key)) {
                    self.exec_target(value, a.dynamic, &what, scope, ctx);
                } else if let Some(v) = value.strip_prefix('!')
                    && rules
                        .shell_alias_keys
                        .as_ref()
                        .is_some_and(|r| r.is_match(key))
                {
                    self.exec_target(v, a.dynamic, &what, scope, ctx);
                }
            }
            None => {
                if let Some(e) = rules.bare_values.clone() {
                    match e {
                        Effect::Read | Effect::Write | Effect::Delete | Effect::Script => {
                            self.path_target(e, text, a.dynamic, ctx)
                        }
                        Effect::Exec => self.exec_target(text, a.dynamic, &what, scope, ctx),
                        _ => {}
                    }
                }
            }
        }
        if let Some(r) = &rules.read_values
            && let Some(c) = r.0.captures(text)
            && let Some(p) = c.get(1)
        {
            let p = p.as_str().to_string();
            self.path_target(Effect::Read, &p, a.dynamic, ctx);
        }
    }

    /// A network address: one matching `command_urls` (git's `ext::`) runs
    /// a command, `file://` reads a path; any other contacts the network.
    fn url_target(&mut self, a: &Arg, cmd: &str, ctx: &Ctx) {
        let t = a.text.as_str();
        if self.cfg.command_urls.is_match(t) {
            let d = format!("`{cmd}` address `{}` runs a command", excerpt(t));
            self.effect("exec", t, cmd);
            self.effect_check(|e| &e.exec, &d);
            return;
        }
        if let Some(p) = t.strip_prefix("file://") {
            self.path_target(Effect::Read, p, a.dynamic, ctx);
            return;
        }
        self.effect("network", t, cmd);
        if self.url_parts(a, cmd) {
            return;
        }
        let d = format!("`{cmd} {}`", excerpt(t));
        self.effect_check(|e| &e.network, &d);
    }

    /// An environment assignment (`VAR=value cmd`, `export`, `env VAR=`):
    /// variables that load or run code are checked by how their value is
    /// read.
    pub(super) fn env_assignment(&mut self, name: &str, value: &Arg) {
        let Some(spec) = self.cfg.env_spec(name) else {
            return;
        };
        let spec = spec.clone();
        let shown = format!("{name}={}", value.text);
        self.effect("env", &shown, name);
        let reason = spec.reason.clone().unwrap_or_default();
        let detail = |extra: &str| {
            let mut d = format!("`{}`", excerpt(&shown));
            if !reason.is_empty() {
                d.push_str(&format!(" ({reason})"));
            }
            d.push_str(extra);
            d
        };
        let ctx = Ctx {
            cwd: None,
            via: RunVia::Shell,
        };
        match spec.value {
            EnvValue::Code => {
                let d = detail("");
                self.effect_check(|c| &c.env_code, &d);
            }
            EnvValue::Command => {
                if value.text.trim().is_empty() {
                    return;
                }
                let what = format!("`{name}`");
                let scope = Scope::default();
                self.exec_target(&value.text, value.dynamic, &what, &scope, &ctx);
            }
            EnvValue::Files | EnvValue::Dirs => {
                let inherited = [format!("${name}"), format!("${{{name}}}")];
                let sep: &[char] = if spec.value == EnvValue::Files {
                    &[':', ' ', '\t']
                } else {
                    &[':']
                };
                for part in value.text.split(sep).filter(|p| !p.is_empty()) {
                    if inherited.iter().any(|i| i == part) {
                        continue;
                    }
                    let outside = if part.contains('$') || part.contains('`') {
                        true
                    } else {
                        match self.place_of(part, false, &ctx, true) {
                            Place::Dynamic => true,
                            Place::At(v) => v.iter().any(|s| match (s.normal(), &s.abs) {
                                (Some(p), _) => {
                                    placed_lexically(&self.roots, p) != Placement::Inside
                                }
                                (None, Some(p)) => {
                                    place(&self.roots, p, false) != Placement::Inside
                                }
                                (None, None) => true,
                            }),
                        }
                    };
                    if outside {
                        let d = detail(&format!(": `{}` is not project code", excerpt(part)));
                        self.effect_check(|c| &c.env_code, &d);
                        break;
                    }
                }
            }
            EnvValue::Options => {
                let loads = value.dynamic
                    || value.text.split_whitespace().any(|t| {
                        spec.code_options.iter().any(|o| {
                            t == o
                                || t.strip_prefix(o.as_str())
                                    .is_some_and(|r| r.starts_with('=') || r.starts_with(':'))
                                || (o.len() == 2
                                    && !o.starts_with("--")
                                    && t.len() > 2
                                    && t.starts_with(o.as_str()))
                        })
                    });
                if loads {
                    let d = detail("");
                    self.effect_check(|c| &c.env_code, &d);
                }
            }
        }
    }
}

/// `KEY SEP VALUE` split at the first `sep` after the key; a key that
/// starts with `"` runs to its closing quote (backslash escapes skipped),
/// so a separator inside it does not count (`"\C-x:": cmd`).
fn split_after_quoted_key<'t>(text: &'t str, sep: &str) -> Option<(&'t str, &'t str)> {
    let from = if text.starts_with('"') {
        let b = text.as_bytes();
        let mut i = 1;
        while i < b.len() && b[i] != b'"' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        (i + 1).min(text.len())
    } else {
        0
    };
    let at = text.get(from..)?.find(sep)? + from;
    Some((&text[..at], &text[at + sep.len()..]))
}

/// `root/dir/text` as text, for a directory below the start and a relative
/// `text` without `..`: `.` and empty components dropped, as
/// [`Dir::join`] drops them.
fn rel_path(root: &str, dir: &Dir, text: &str) -> String {
    let comps: &[String] = match dir {
        Dir::Rel(c) | Dir::Abs(c) | Dir::Home(_, c) => c,
    };
    let mut out = String::with_capacity(
        root.len() + comps.iter().map(|c| c.len() + 1).sum::<usize>() + text.len() + 1,
    );
    out.push_str(root);
    let parts = comps
        .iter()
        .map(String::as_str)
        .chain(text.split('/').filter(|c| !c.is_empty() && *c != "."));
    for c in parts {
        if !out.ends_with('/') {
            out.push('/');
        }
        out.push_str(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Dir, rel_path};

    #[test]
    fn rel_path_is_the_join() {
        for (dir, text) in [
            ("", "a"),
            ("target/tmp", "build.log"),
            ("a", "./b//c/."),
            ("a/b", ""),
            ("x", "."),
        ] {
            let d = Dir::start().join(dir);
            let joined = match d.join(text) {
                Dir::Rel(c) if c.is_empty() => "/r".to_string(),
                Dir::Rel(c) => format!("/r/{}", c.join("/")),
                other => panic!("{other:?}"),
            };
            assert_eq!(rel_path("/r", &d, text), joined, "{dir} {text}");
            assert_eq!(
                rel_path("/", &d, text),
                joined
                    .strip_prefix("/r")
                    .filter(|s| !s.is_empty())
                    .unwrap_or("/"),
            );
        }
    }
}
