//! Program spellings (stage 3, continued): how the first word of a
//! command names the program. A bare name is looked up as it is; a path
//! in a system directory (after lexical normalisation) is its basename; a
//! path elsewhere runs as a script and is still the program its basename
//! names for the danger rules (`../../bin/rm -rf /` is denied as `rm -rf
//! /`); a glob, or a word holding blanks (`'git status'`), names no known
//! program.

use super::commands::Ctx;
use super::normalize::basename;
use super::{Arg, RunVia, Scope, Walker, excerpt};
use crate::plan::gate::effect::Effect;

impl Walker<'_> {
    /// The command name to look up: the basename of a program in a system
    /// directory (after lexical normalisation: `/usr/bin/../../bin/rm` is
    /// in `/bin`); a program named by any other path runs as a script
    /// (checked, `None` returned) and is also the program its basename
    /// names for the rules (`../../bin/rm -rf /` is denied as `rm -rf /`,
    /// [`Self::path_program`]); a glob, or a word holding blanks (a whole
    /// command quoted as one word, `'git status'`), is unknown.
    pub(super) fn program_name<'a>(
        &mut self,
        args: &'a [Arg],
        scope: &Scope,
        ctx: &Ctx,
    ) -> Option<&'a str> {
        let first = &args[0];
        let text = first.text.as_str();
        if first.glob {
            let d = format!("`{}` (a program named by a glob)", excerpt(text));
            self.unknown(&d);
            return None;
        }
        if text.contains(char::is_whitespace) {
            let d = format!(
                "`{}` (a whole command quoted as one program name)",
                excerpt(text)
            );
            self.unknown(&d);
            return None;
        }
        if !text.contains('/') {
            return Some(text);
        }
        let base = basename(text);
        let norm = super::normalize::normalize_operand(text);
        let dir = norm.trim_end_matches('/');
        let dir = dir.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        let dir = if dir.is_empty() && norm.starts_with('/') {
            "/"
        } else {
            dir
        };
        let system = self.cfg.system_bin_dirs.iter().any(|d| {
            d.trim_end_matches('/') == dir.trim_end_matches('/') || (d == "/" && dir == "/")
        });
        if system {
            return Some(base);
        }
        // A program from a path: project code when inside the roots.
        self.path_target(Effect::Script, text, first.dynamic, ctx);
        let how = super::written::RunAs::Executed;
        self.run_written_script(text, first.dynamic, how, text, scope, ctx);
        self.path_program(base, args, scope, ctx);
        None
    }

    /// A program named by a path outside the system directories is still
    /// the program its basename names, as far as the danger rules go:
    /// `../../bin/rm -rf /` gets `rm -rf /`'s rules (deny, not only the
    /// script's ask), and a wrapper (`../../usr/bin/env rm -rf /`) runs
    /// the command it wraps, which is followed. Other effects of the
    /// basename's entry are not applied: a project script that shares a
    /// known command's name (`bin/rails`, `./build`) is project code.
    fn path_program(&mut self, base: &str, args: &[Arg], scope: &Scope, ctx: &Ctx) {
        if args[0].dynamic || base.is_empty() {
            return;
        }
        let cfg = self.cfg;
        let index = cfg.index();
        if index.rule_names_command(cfg, base) {
            let mut reading = None;
            let view = self.rule_view(base, args, ctx, &mut reading);
            let parsed = self.parse_args(base, &view[1..]);
            self.rules(base, &parsed, &view);
        }
        if let Some(spec) = index.wrappers.get(base).map(|i| &cfg.wrappers[*i]) {
            let mut inner_ctx = ctx.clone();
            if let Some(inner) = self.unwrap(spec, &args[1..], scope, &mut inner_ctx) {
                if inner_ctx.via == RunVia::Shell {
                    inner_ctx.via = RunVia::Wrapper;
                }
                let saved = self.st.clone();
                self.follow(inner, scope, 1, inner_ctx);
                self.st = saved;
            }
        }
    }
}
