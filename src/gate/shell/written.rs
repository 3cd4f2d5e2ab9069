//! Code written now, run later (stage 3, continued): a command line that
//! writes a file which a later part of the same line runs.
//!
//! Every path the line writes is kept ([`Written`]: where it lands, and
//! its content when the line shows it: `echo`, `printf` or `cat` with a
//! here-document, redirected to the file). When a later command runs such
//! a file — as a script (`bash f`, `sh f`, `source f`, `python3 f`,
//! `./f`), or as one of the files a project command runs as code
//! (`[[gate.shell.written_code]]`: `package.json` for `npm test`, a
//! `Makefile` for `make`, `build.rs` for `cargo build`, `conftest.py` for
//! `pytest`, `.git/hooks/*` for `git commit`) — the content is judged as
//! code of its kind: shell walked like `bash -c` code, Python and
//! JavaScript against their harmless subsets, a `package.json`'s scripts
//! as shell lines. A content the line does not show (downloaded, copied,
//! appended to) or of a kind no reader checks asks
//! (`effects.written_code`). A file the line does not write is the
//! project's own, as before: `make` and `npm test` on an untouched
//! project stay allowed.
//!
//! A later call of the same session that runs a file written by an
//! earlier call is the session data-flow check's (`[gate.flow]`), not
//! this one's.

use std::path::PathBuf;

use super::commands::Ctx;
use super::model::Reading;
use super::normalize::option_value;
use super::{Arg, CommandSpec, Scope, Stdin, Walker, excerpt};
use crate::gate::path::starts_with;
use crate::plan::gate::effect::Effect;
use crate::plan::gate::written::WrittenContent;

/// A file the line writes.
#[derive(Debug, Clone)]
pub(super) struct Written {
    /// Where it lands (absolute, after the line's `cd`s and links).
    pub(super) abs: PathBuf,
    /// What it holds after the write.
    pub(super) content: Content,
    /// Written as a whole directory tree by this command (`git clone`,
    /// `tar`, `cp -r`: `[gate.shell] writes_trees`), whose files the line
    /// does not show; `None` for a file or a write of unknown shape.
    pub(super) tree: Option<String>,
}

/// The content of a written file, as far as the line shows it.
#[derive(Debug, Clone)]
pub(super) enum Content {
    /// Not known (a download, a copy, an append, an edit).
    Unknown,
    /// The output of the command whose redirection writes it; settled
    /// once that command is known ([`Walker::settle_written`]).
    Pending,
    /// Known text.
    Known(String),
}

/// How a file is run.
#[derive(Debug, Clone, Copy)]
pub(super) enum RunAs<'a> {
    /// By a shell (`bash f`, `source f`).
    Shell,
    /// By an interpreter of this language (`python3 f`: `python`); a
    /// language without rules asks.
    Language(&'a str),
    /// Executed (`./f`): its `#!` line names the interpreter.
    Executed,
}

impl Walker<'_> {
    /// Records a path the line writes (from [`Walker::path_target`]).
    pub(super) fn record_written(&mut self, abs: PathBuf) {
        if self.content_kept || self.written.len() >= 256 {
            return;
        }
        self.written.push(Written {
            abs: lexical(abs),
            content: Content::Unknown,
            tree: self.tree_writer.clone(),
        });
    }

    /// The absolute places `text` names where the command runs, as the
    /// line's writes are kept: normalised (`/c/../x` is `/c`'s sibling,
    /// not a path under it).
    fn written_places(&self, text: &str, ctx: &Ctx) -> Option<Vec<PathBuf>> {
        let places = self.absolute_places(text, ctx)?;
        Some(places.into_iter().map(lexical).collect())
    }

    /// A command whose entry has `url_directory` (`git clone URL`), given
    /// its single operand only: the directory it derives from the URL is
    /// written, as `git clone URL dir` writes `dir` (`--bare` and
    /// `--mirror` add `.git`, as git does). A URL whose last component is
    /// only known at run time names no directory the line can follow.
    pub(super) fn url_directory(
        &mut self,
        spec: &CommandSpec,
        rest: &[Arg],
        reading: &Reading,
        ctx: &Ctx,
    ) {
        if !spec.url_directory || reading.operands.len() != 1 {
            return;
        }
        let Some(url) = rest.get(reading.operands[0]) else {
            return;
        };
        let Some(mut dir) = url_directory_name(&url.text) else {
            return;
        };
        if url.dynamic && dir.contains('$') {
            return;
        }
        if rest
            .iter()
            .any(|a| a.text == "--bare" || a.text == "--mirror")
        {
            dir.push_str(".git");
        }
        let writer = spec.names.first().cloned();
        let saved = std::mem::replace(&mut self.tree_writer, writer);
        self.path_target(Effect::Write, &dir, false, ctx);
        self.tree_writer = saved;
    }

    /// Standard input redirected from the file `arg` names (`< q.sql`):
    /// the text the line wrote to it before (`echo ... > q.sql`), as a
    /// here-document would give it, when the line's latest write of that
    /// file shows its content; [`Stdin::Written`] when it does not (a
    /// download, a copy); any other file is [`Stdin::File`].
    pub(super) fn written_stdin(&self, arg: &Arg) -> Stdin {
        if self.written.is_empty() || arg.dynamic || arg.glob {
            return Stdin::File;
        }
        let ctx = Ctx {
            cwd: None,
            via: super::RunVia::Shell,
        };
        match self.written_at(&arg.text, &ctx) {
            Some((i, true)) => match &self.written[i].content {
                Content::Known(t) => Stdin::Literal(Arg::literal(t)),
                Content::Unknown | Content::Pending => Stdin::Written(i),
            },
            _ => Stdin::File,
        }
    }

    /// An interpreter (`spec`, run as `name`) that reads its program from
    /// standard input redirected from written file `i` whose content the
    /// line does not show (`curl -o f URL && bash < f`): run as `bash f`
    /// would be, so it asks.
    pub(super) fn run_written_stdin(
        &mut self,
        i: usize,
        spec: &super::InterpreterSpec,
        name: &str,
        scope: &Scope,
    ) {
        let kind = if spec.shell {
            WrittenContent::Shell
        } else {
            match spec.language.as_deref() {
                Some("python") => WrittenContent::Python,
                Some("javascript") => WrittenContent::Javascript,
                _ => WrittenContent::Opaque,
            }
        };
        self.judge_written(i, kind, &format!("`{name} <`"), scope);
    }

    /// Marks the files written since `mark` as holding the output of the
    /// command their redirection belongs to.
    pub(super) fn written_pending(&mut self, mark: usize) {
        for w in self.written.iter_mut().skip(mark) {
            w.content = Content::Pending;
        }
    }

    /// Settles the files written since `mark` whose content is the output
    /// of the command just read: `args` with standard input `stdin`
    /// (`None`: a compound command, whose output is not followed).
    pub(super) fn settle_written(&mut self, mark: usize, out: Option<(&[Arg], &Stdin)>) {
        if self.written.len() <= mark {
            return;
        }
        let text = out.and_then(|(args, stdin)| command_output(args, stdin));
        for w in self.written.iter_mut().skip(mark) {
            if matches!(w.content, Content::Pending) {
                w.content = match &text {
                    Some(t) => Content::Known(t.clone()),
                    None => Content::Unknown,
                };
            }
        }
    }

    /// The files written since `mark` hold `text` (`tee f <<EOF`).
    pub(super) fn written_known(&mut self, mark: usize, text: String) {
        for w in self.written.iter_mut().skip(mark) {
            w.content = Content::Known(text.clone());
        }
    }

    /// The latest write of the file `text` names, or of a directory that
    /// holds it (a path the line wrote before this point and that the
    /// file is under: `tar x`, `git clone URL d`, `cp -r src d`), when the
    /// line wrote one; and whether it is the file itself.
    fn written_at(&self, text: &str, ctx: &Ctx) -> Option<(usize, bool)> {
        let places = self.written_places(text, ctx)?;
        let i = self
            .written
            .iter()
            .rposition(|w| places.iter().any(|p| starts_with(p, &w.abs)))?;
        let exact = places.contains(&self.written[i].abs);
        Some((i, exact))
    }

    /// A file run from under directory `i` (`None`: the project files of
    /// the directory a command runs in), which the line writes before as
    /// a whole: its content is not shown (asks).
    fn run_under_written(&mut self, i: usize, file: Option<&str>, run: &str) {
        let dir = excerpt(&self.written[i].abs.display().to_string());
        let what = match file {
            Some(f) => format!("`{}`", excerpt(f)),
            None => "its project files".to_string(),
        };
        let d = format!(
            "{run} runs {what} from `{dir}`, a directory the line writes before it as a whole (extracted, cloned or copied), whose content it does not show"
        );
        self.effect("written", run.trim_matches('`'), "unknown");
        self.effect_check(|e| &e.written_code, &d);
    }

    /// A file run as a script (`bash f`, `./f`): when the line wrote it
    /// before, its content is judged. `run` shows the run in messages
    /// (`bash f.sh`, `./f`).
    pub(super) fn run_written_script(
        &mut self,
        text: &str,
        dynamic: bool,
        how: RunAs,
        run: &str,
        scope: &Scope,
        ctx: &Ctx,
    ) {
        if self.written.is_empty() || dynamic {
            return;
        }
        let Some((i, exact)) = self.written_at(text, ctx) else {
            return;
        };
        if !exact {
            self.run_under_written(i, Some(text), &format!("`{}`", excerpt(run)));
            return;
        }
        let kind = match how {
            RunAs::Shell => WrittenContent::Shell,
            RunAs::Language("python") => WrittenContent::Python,
            RunAs::Language("javascript") => WrittenContent::Javascript,
            RunAs::Language(_) => WrittenContent::Opaque,
            RunAs::Executed => WrittenContent::Shebang,
        };
        self.judge_written(i, kind, &format!("`{}`", excerpt(run)), scope);
    }

    /// A command that runs project files as code (`npm test`, `make`,
    /// `git commit`): each file of its `[[gate.shell.written_code]]`
    /// entries that the line wrote before is judged; and when it works in
    /// (or under) a directory the line wrote before as a whole (`git
    /// clone URL x && cd x && make`, `make -C x`), it asks. Where it works
    /// is read from its `[[gate.shell.written_runners]]` entry: its
    /// directory options, the project files its file options name, and
    /// with `path_operands` its operands (`rest[operands[k]]`); without
    /// an entry, the directory it starts in. `rest`: the arguments after
    /// `full`.
    pub(super) fn run_written_project(
        &mut self,
        full: &str,
        rest: &[Arg],
        operands: &[usize],
        scope: &Scope,
        ctx: &Ctx,
    ) {
        if self.written.is_empty() {
            return;
        }
        let cfg = self.cfg;
        let mut rules = cfg
            .written_code
            .iter()
            .filter(|r| r.commands.iter().any(|c| c == full))
            .peekable();
        if rules.peek().is_none() {
            return;
        }
        let run = format!("`{full}`");
        if !self.runner_places(full, rest, operands, &run, scope, ctx) {
            return;
        }
        for rule in rules {
            // The latest write of each file the rule names.
            let mut hits: Vec<usize> = Vec::new();
            for (i, w) in self.written.iter().enumerate().rev() {
                let matches = w.abs.to_str().is_some_and(|p| rule.files.is_match(p));
                if matches && !hits.iter().any(|&j| self.written[j].abs == w.abs) {
                    hits.push(i);
                }
            }
            for i in hits.into_iter().rev() {
                self.judge_written(i, rule.content, &run, scope);
            }
        }
    }

    /// The places a runner works in and the project files it names (see
    /// [`Walker::run_written_project`]), checked against what the line
    /// wrote: a place at or under a directory written as a whole asks, a
    /// file of a file option the line wrote is judged as code no reader
    /// checks, and a value only known at run time asks. False when it
    /// asked (the rest of the check adds nothing).
    fn runner_places(
        &mut self,
        full: &str,
        rest: &[Arg],
        operands: &[usize],
        run: &str,
        scope: &Scope,
        ctx: &Ctx,
    ) -> bool {
        let cfg = self.cfg;
        let runner = cfg
            .written_runners
            .iter()
            .find(|r| r.commands.iter().any(|c| c == full));
        // Directories, relative to where the command starts: "." first.
        let mut dirs: Vec<String> = vec![".".to_string()];
        let mut operand_dirs: Vec<String> = Vec::new();
        // Where it collects from, when an option says (`unittest -s`).
        let mut collect_dirs: Vec<String> = Vec::new();
        // Operands that name a whole tree (`go test ./...`): its root.
        let mut tree_operands: Vec<String> = Vec::new();
        let mut files: Vec<String> = Vec::new();
        let mut dynamic: Option<String> = None;
        if let Some(runner) = runner {
            let mut here = ".".to_string();
            let mut i = 0;
            while i < rest.len() {
                let a = &rest[i];
                if a.text == "--" {
                    break;
                }
                if !a.text.starts_with('-') || a.text.len() < 2 {
                    i += 1;
                    continue;
                }
                let (used, value) =
                    option_value(&rest[i..], &runner.directory_options, &runner.file_options);
                i += used;
                let Some((flag, v)) = value else { continue };
                if v.dynamic || v.procsub {
                    dynamic.get_or_insert_with(|| format!("{flag} {}", v.text));
                    continue;
                }
                if runner.directory_options.contains(&flag) {
                    here = join_dir(&here, &v.text);
                    for d in [v.text.to_string(), here.clone()] {
                        if !dirs.contains(&d) {
                            dirs.push(d);
                        }
                    }
                    if runner.collect_options.contains(&flag) {
                        collect_dirs.push(here.clone());
                    }
                } else {
                    files.push(v.text.to_string());
                }
            }
            if runner.path_operands {
                for &k in operands {
                    let Some(a) = rest.get(k) else { continue };
                    if a.dynamic || a.procsub {
                        dynamic.get_or_insert_with(|| a.text.to_string());
                        continue;
                    }
                    let tree_root = runner
                        .recursive_operands
                        .as_deref()
                        .and_then(|suffix| tree_operand(&a.text, suffix));
                    let d = tree_root.clone().unwrap_or_else(|| a.text.to_string());
                    if !dirs.contains(&d) {
                        dirs.push(d.clone());
                    }
                    match tree_root {
                        Some(root) => tree_operands.push(root),
                        None => operand_dirs.push(d),
                    }
                }
            }
        }
        if let Some(v) = dynamic {
            let d = format!(
                "{run} works on `{}`, only known at run time, in a line that writes files before it",
                excerpt(&v)
            );
            self.effect("written", full, "unknown");
            self.effect_check(|e| &e.written_code, &d);
            return false;
        }
        for d in &dirs {
            let Some(places) = self.written_places(d, ctx) else {
                continue;
            };
            if let Some(i) = self
                .written
                .iter()
                .rposition(|w| places.iter().any(|p| starts_with(p, &w.abs)))
            {
                self.run_under_written(i, None, run);
                return false;
            }
        }
        // A file option's value, from where the command starts or from
        // the directory it changes to.
        for f in &files {
            for d in &dirs {
                let path = join_dir(d, f);
                let Some((i, exact)) = self.written_at(&path, ctx) else {
                    continue;
                };
                if exact {
                    self.judge_written(i, WrittenContent::Opaque, run, scope);
                } else {
                    self.run_under_written(i, Some(f), run);
                }
                return false;
            }
        }
        // A runner that collects from every directory under its own: a
        // tree the line wrote anywhere below (`git clone URL && pytest`).
        // Where it collects: its operands, else the directory its collect
        // option names, else every directory it works in; and each
        // operand that names a whole tree (`go test ./...`).
        let Some(runner) = runner else {
            return true;
        };
        let by_flag = recursive_flag(rest, &runner.recursive_when);
        let mut roots: Vec<(&str, Collects)> = Vec::new();
        if runner.collects_recursively || by_flag.is_some() {
            let why = match by_flag {
                Some(f) if !runner.collects_recursively => Collects::Flag(f),
                _ => Collects::Always,
            };
            let from = if !operand_dirs.is_empty() {
                &operand_dirs
            } else if !collect_dirs.is_empty() {
                &collect_dirs
            } else {
                &dirs
            };
            roots.extend(from.iter().map(|d| (d.as_str(), why)));
        }
        let suffix = runner.recursive_operands.as_deref().unwrap_or_default();
        roots.extend(
            tree_operands
                .iter()
                .map(|d| (d.as_str(), Collects::Operand(suffix))),
        );
        for (d, why) in roots {
            if self.tree_below(d, run, why, ctx) {
                return false;
            }
        }
        true
    }

    /// For a runner (`run`) that collects code from every directory under
    /// `dir` (`why`: what makes it do so): asks, naming the writer, when
    /// the line wrote a directory tree below `dir` before it. True when it
    /// asked.
    fn tree_below(&mut self, dir: &str, run: &str, why: Collects, ctx: &Ctx) -> bool {
        let Some(places) = self.written_places(dir, ctx) else {
            return false;
        };
        let Some((w, place)) = self.written.iter().rev().find_map(|w| {
            w.tree.as_ref()?;
            let p = places
                .iter()
                .find(|p| w.abs.starts_with(p) && w.abs != **p)?;
            Some((w, p))
        }) else {
            return false;
        };
        let by = w.tree.as_deref().unwrap_or_default();
        let what = match why {
            Collects::Always => "conftest and test files, at any depth".to_string(),
            Collects::Flag(f) => format!(
                "with `{}`: the workspace members or packages its project file names, which the line does not show",
                excerpt(f)
            ),
            Collects::Operand(s) => format!("`{}`: every package at any depth", excerpt(s)),
        };
        let d = format!(
            "{run} collects code from every directory under `{}` ({what}), and `{}` under it is written before it as a whole by `{}` (cloned, extracted or copied), whose content the line does not show",
            excerpt(&place.display().to_string()),
            excerpt(&w.abs.display().to_string()),
            excerpt(by),
        );
        self.effect("written", run.trim_matches('`'), "unknown");
        self.effect_check(|e| &e.written_code, &d);
        true
    }

    /// Judges the content of written file `i`, run as `kind`; `run`
    /// shows the run for messages (`` `bash f.sh` ``, `` `make` ``).
    fn judge_written(&mut self, i: usize, kind: WrittenContent, run: &str, scope: &Scope) {
        if self.judging.contains(&i) {
            return;
        }
        let file = excerpt(&self.written[i].abs.display().to_string());
        let content = match &self.written[i].content {
            Content::Known(t) => t.clone(),
            Content::Unknown | Content::Pending => {
                let d = format!(
                    "{run} runs `{file}`, which the line writes before it with content the line does not show (downloaded, copied, appended or edited)"
                );
                self.effect("written", run.trim_matches('`'), "unknown");
                self.effect_check(|e| &e.written_code, &d);
                return;
            }
        };
        self.effect("written", run.trim_matches('`'), "judged");
        let kind = match kind {
            WrittenContent::Shebang => shebang_kind(&content),
            k => k,
        };
        let what = format!("{run} runs `{file}`, written earlier in the line");
        self.judging.push(i);
        match kind {
            WrittenContent::Shell => self.written_shell(&content, &what, scope),
            WrittenContent::Python => self.foreign_code("python", &Arg::literal(&content), &what),
            WrittenContent::Javascript => {
                self.foreign_code("javascript", &Arg::literal(&content), &what)
            }
            WrittenContent::PackageJson => match package_scripts(&content) {
                Some(scripts) => {
                    for s in scripts {
                        self.written_shell(&s, &what, scope);
                    }
                }
                None => {
                    let d = format!(
                        "{run} runs `{file}`, which the line writes before it and which is not a JSON object whose `scripts` are strings, so the scripts it runs cannot be checked"
                    );
                    self.effect_check(|e| &e.written_code, &d);
                }
            },
            WrittenContent::Shebang | WrittenContent::Opaque => {
                let d = format!(
                    "{run} runs `{file}`, which the line writes before it, as code that no reader here checks"
                );
                self.effect_check(|e| &e.written_code, &d);
            }
        }
        self.judging.pop();
    }

    /// Shell code from a written file: walked like `bash -c` code, in a
    /// child of this shell, its runs not recorded (they happen inside
    /// the program that runs the file).
    fn written_shell(&mut self, code: &str, what: &str, scope: &Scope) {
        let saved = self.st.clone();
        self.st = std::rc::Rc::new(saved.child());
        let rec = std::mem::replace(&mut self.record, false);
        self.code(&Arg::literal(code), true, what, scope);
        self.record = rec;
        self.st = saved;
    }
}

/// The entry of `writes_trees` (`[gate.shell] writes_trees`) that makes
/// command `cmd` with arguments `rest` a writer of whole directory trees:
/// its name, with the flag that made it one (`cp -r`), or `None`. An
/// entry's words that start with `-` are flags of which one must be given
/// before `--`: a long one as written (or with `=VALUE`), a short one
/// alone or inside a cluster (`-rf`).
pub(super) fn tree_writer(entries: &[String], cmd: &str, rest: &[Arg]) -> Option<String> {
    for e in entries {
        // (`name` below is `cmd` only for an entry that starts with it.)
        if !e
            .strip_prefix(cmd)
            .is_some_and(|r| r.is_empty() || r.starts_with(' '))
        {
            continue;
        }
        let flags_at = e.find(" -").unwrap_or(e.len());
        let (name, flags) = e.split_at(flags_at);
        if name != cmd {
            continue;
        }
        let mut flags = flags.split_whitespace().peekable();
        if flags.peek().is_none() {
            return Some(name.to_string());
        }
        let flags: Vec<&str> = flags.collect();
        for a in rest {
            let t = a.text.as_str();
            if t == "--" {
                break;
            }
            let hit = if let Some(long) = t.strip_prefix("--") {
                let long = long.split('=').next().unwrap_or(long);
                flags.iter().any(|f| f.strip_prefix("--") == Some(long))
            } else if let Some(cluster) = t.strip_prefix('-') {
                flags.iter().any(|f| {
                    f.len() == 2
                        && !f.starts_with("--")
                        && f[1..].chars().all(|c| cluster.contains(c))
                })
            } else {
                false
            };
            if hit {
                return Some(format!("{name} {t}"));
            }
        }
    }
    None
}

/// Why a runner collects code from every directory under one of its own
/// (for the message).
#[derive(Debug, Clone, Copy)]
enum Collects<'a> {
    /// It always does (`collects_recursively`: pytest, jest).
    Always,
    /// This argument of its `recursive_when` makes it (`--workspaces`).
    Flag(&'a str),
    /// An operand ending in this `recursive_operands` suffix (`/...`).
    Operand(&'a str),
}

/// The first argument of `rest` (before `--`) that `words` names: a word
/// as written, an option with `=VALUE` (`--workspace=a`), or a short
/// option with its value attached (`-pfoo`).
fn recursive_flag<'a>(rest: &[Arg], words: &'a [String]) -> Option<&'a str> {
    if words.is_empty() {
        return None;
    }
    rest.iter()
        .take_while(|a| a.text != "--")
        .find_map(|a| {
            let t = a.text.as_str();
            words.iter().find(|w| {
                let Some(v) = t.strip_prefix(w.as_str()) else {
                    return false;
                };
                let short = w.len() == 2 && w.starts_with('-') && w.as_str() != "--";
                v.is_empty()
                    || (w.starts_with('-') && v.starts_with('='))
                    || (short && !t.starts_with("--"))
            })
        })
        .map(String::as_str)
}

/// The root of an operand that names a whole tree by ending in `suffix`
/// (`./...` with `/...`: `.`; `pkg/...`: `pkg`; `...` alone: `.`), or
/// `None` when it does not end so.
fn tree_operand(text: &str, suffix: &str) -> Option<String> {
    if suffix.is_empty() {
        return None;
    }
    let bare = suffix.trim_start_matches('/');
    let root = text
        .strip_suffix(suffix)
        .or_else(|| (text == bare).then_some(""))?;
    let root = root.trim_end_matches('/');
    Some(
        match root {
            "" if text.starts_with('/') => "/",
            "" => ".",
            r => r,
        }
        .to_string(),
    )
}

/// `p` without `..` components (popped lexically, as the shell's `cd ..`
/// does); unchanged, without allocating, when it has none.
fn lexical(p: PathBuf) -> PathBuf {
    if crate::gate::path::has_parent_component(&p) {
        crate::gate::path::normalize(&p)
    } else {
        p
    }
}

/// `rel` joined to directory `base` as a command resolves it (`.` and
/// an absolute or `~` path replace the base).
fn join_dir(base: &str, rel: &str) -> String {
    if base == "." || rel.starts_with('/') || rel.starts_with('~') {
        rel.to_string()
    } else if rel == "." {
        base.to_string()
    } else {
        format!("{}/{rel}", base.trim_end_matches('/'))
    }
}

/// The directory `git clone` derives from a repository URL (git's
/// `git_url_basename`, builtin/clone.c): trailing `/` and `/.git`
/// stripped, the part after the last `/` or `:`, without a `.git` or
/// `.bundle` suffix (`https://host/` gives `host`, as git's does). `None`
/// when nothing is left.
fn url_directory_name(url: &str) -> Option<String> {
    let mut s = url.trim_end_matches(|c: char| c == '/' || c.is_whitespace());
    if let Some(t) = s.strip_suffix("/.git") {
        s = t.trim_end_matches('/');
    }
    let name = s.rsplit(['/', ':']).next().unwrap_or(s);
    let name = name
        .strip_suffix(".git")
        .or_else(|| name.strip_suffix(".bundle"))
        .unwrap_or(name);
    (!name.is_empty()).then(|| name.to_string())
}

/// What a command writes to its standard output, when the line shows it
/// in full: `echo` (with `-n` at most), `printf` with a format of plain
/// text and `\n`/`\t`/`\\` escapes and no arguments, `cat` reading a
/// here-document or here-string. `None` for anything else.
fn command_output(args: &[Arg], stdin: &Stdin) -> Option<String> {
    if args.iter().any(|a| a.dynamic || a.glob || a.procsub) {
        return None;
    }
    let name = super::normalize::basename(&args.first()?.text);
    match name {
        "echo" => {
            let mut rest = &args[1..];
            let mut newline = true;
            while let Some(a) = rest.first() {
                match a.text.as_str() {
                    "-n" => newline = false,
                    t if t.starts_with('-') && t.len() > 1 => return None,
                    _ => break,
                }
                rest = &rest[1..];
            }
            let mut out = rest
                .iter()
                .map(|a| a.text.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            if newline {
                out.push('\n');
            }
            Some(out)
        }
        "printf" if args.len() == 2 => {
            let f = &args[1].text;
            if f.contains('%') {
                return None;
            }
            let mut out = String::with_capacity(f.len());
            let mut chars = f.chars();
            while let Some(c) = chars.next() {
                if c != '\\' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('\\') => out.push('\\'),
                    _ => return None,
                }
            }
            Some(out)
        }
        "cat" if args.len() == 1 => match stdin {
            Stdin::Literal(a) if !a.dynamic => Some(a.text.to_string()),
            _ => None,
        },
        _ => None,
    }
}

/// What `tee` writes to its file operands, when the line shows it: the
/// text of a here-document or here-string on its standard input (not
/// expanded at run time), with no option but `-i`/`-p` (`-a` appends:
/// the file's earlier content is not known). `None` for anything else,
/// including every other program (checked first, by name).
pub(super) fn tee_content(args: &[Arg], stdin: &Stdin) -> Option<String> {
    let Stdin::Literal(doc) = stdin else {
        return None;
    };
    if super::normalize::basename(&args.first()?.text) != "tee" {
        return None;
    }
    let options_known = args[1..].iter().all(|a| {
        !a.dynamic
            && !a.glob
            && (!a.text.starts_with('-')
                || matches!(
                    a.text.as_str(),
                    "-i" | "-p" | "--ignore-interrupts" | "--output-error"
                ))
    });
    (options_known && !doc.dynamic).then(|| doc.text.to_string())
}

/// The kind of a script executed directly, by its `#!` line: a shell,
/// Python or JavaScript interpreter (named directly or through `env`,
/// with or without a version suffix); none: a shell script (the shell
/// runs a file without `#!` itself); any other interpreter: opaque.
fn shebang_kind(content: &str) -> WrittenContent {
    let Some(line) = content.lines().next().and_then(|l| l.strip_prefix("#!")) else {
        return WrittenContent::Shell;
    };
    let mut words = line.split_whitespace();
    let mut prog = words.next().map(super::normalize::basename).unwrap_or("");
    if prog == "env" {
        prog = words
            .find(|w| !w.starts_with('-'))
            .map(super::normalize::basename)
            .unwrap_or("");
    }
    let base = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    match base {
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" => WrittenContent::Shell,
        "python" => WrittenContent::Python,
        "node" | "nodejs" => WrittenContent::Javascript,
        _ => WrittenContent::Opaque,
    }
}

/// The `scripts` of a `package.json` text: every value of its `scripts`
/// object (a missing object: none). `None` when the text is not a JSON
/// object or a script is not a string.
fn package_scripts(text: &str) -> Option<Vec<String>> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object()?;
    let Some(scripts) = obj.get("scripts") else {
        return Some(Vec::new());
    };
    scripts
        .as_object()?
        .values()
        .map(|s| s.as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tee_writes_a_literal_here_document() {
        let a = |v: &[&str]| v.iter().map(|t| Arg::literal(t)).collect::<Vec<_>>();
        let doc = Stdin::Literal(Arg::literal("ls\n"));
        assert_eq!(tee_content(&a(&["tee", "f"]), &doc).unwrap(), "ls\n");
        assert_eq!(
            tee_content(&a(&["/usr/bin/tee", "-p", "f", "g"]), &doc).unwrap(),
            "ls\n"
        );
        assert!(tee_content(&a(&["tee", "-a", "f"]), &doc).is_none());
        assert!(tee_content(&a(&["tee", "f"]), &Stdin::Pipe).is_none());
        assert!(tee_content(&a(&["cat", "f"]), &doc).is_none());
        let mut built = Arg::literal("echo $X\n");
        built.dynamic = true;
        assert!(tee_content(&a(&["tee", "f"]), &Stdin::Literal(built)).is_none());
    }

    #[test]
    fn operands_ending_in_the_suffix_name_a_tree() {
        for (text, root) in [
            ("./...", Some(".")),
            ("...", Some(".")),
            ("./pkg/...", Some("./pkg")),
            ("pkg/...", Some("pkg")),
            ("/...", Some("/")),
            ("/src/x/...", Some("/src/x")),
            ("./pkg", None),
            ("a...", None),
            (".", None),
        ] {
            assert_eq!(tree_operand(text, "/...").as_deref(), root, "{text}");
        }
        assert_eq!(tree_operand("./...", ""), None);
    }

    #[test]
    fn recursive_words_match_as_written_with_a_value_or_attached() {
        let a = |v: &[&str]| v.iter().map(|t| Arg::literal(t)).collect::<Vec<_>>();
        let words: Vec<String> = ["--workspace", "-p", "workspaces"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for (args, hit) in [
            (&["test", "--workspace"][..], Some("--workspace")),
            (&["test", "--workspace=a"], Some("--workspace")),
            (&["test", "-p", "foo"], Some("-p")),
            (&["test", "-pfoo"], Some("-p")),
            (&["workspaces", "foreach"], Some("workspaces")),
            (&["test", "--workspaces-x"], None),
            (&["test", "--package"], None),
            (&["test", "--", "--workspace"], None),
            (&["test"], None),
        ] {
            assert_eq!(recursive_flag(&a(args), &words), hit, "{args:?}");
        }
        assert_eq!(recursive_flag(&a(&["--workspace"]), &[]), None);
    }

    #[test]
    fn written_paths_are_kept_without_parent_components() {
        assert_eq!(lexical(PathBuf::from("/c/../x")), PathBuf::from("/x"));
        assert_eq!(lexical(PathBuf::from("/c/a/../b")), PathBuf::from("/c/b"));
        assert_eq!(lexical(PathBuf::from("/c/x")), PathBuf::from("/c/x"));
    }

    #[test]
    fn directory_options_compose_as_make_reads_them() {
        assert_eq!(join_dir(".", "repo"), "repo");
        assert_eq!(join_dir("repo", "sub"), "repo/sub");
        assert_eq!(join_dir("repo/", "sub"), "repo/sub");
        assert_eq!(join_dir("repo", "/abs"), "/abs");
        assert_eq!(join_dir("repo", "~/x"), "~/x");
        assert_eq!(join_dir("repo", "."), "repo");
        assert_eq!(join_dir(".", "Makefile"), "Makefile");
    }

    #[test]
    fn clone_directories_are_derived_from_the_url() {
        for (url, dir) in [
            ("https://github.com/org/repo.git", Some("repo")),
            ("https://github.com/org/repo", Some("repo")),
            ("https://github.com/org/repo/", Some("repo")),
            ("https://github.com/org/repo.git/", Some("repo")),
            ("https://host/org/repo/.git", Some("repo")),
            ("git@github.com:org/repo.git", Some("repo")),
            ("git@github.com:repo", Some("repo")),
            ("ssh://git@host:22/srv/tools.git", Some("tools")),
            ("../local/proj", Some("proj")),
            ("/srv/git/x.bundle", Some("x")),
            ("https://host/", Some("host")),
            ("", None),
        ] {
            assert_eq!(url_directory_name(url).as_deref(), dir, "{url}");
        }
    }

    #[test]
    fn shebang_lines_name_the_language() {
        assert_eq!(shebang_kind("echo hi\n"), WrittenContent::Shell);
        assert_eq!(shebang_kind("#!/bin/bash\nls"), WrittenContent::Shell);
        assert_eq!(
            shebang_kind("#!/usr/bin/env -S python3.12\n"),
            WrittenContent::Python
        );
        assert_eq!(
            shebang_kind("#!/usr/bin/env node\n"),
            WrittenContent::Javascript
        );
        assert_eq!(shebang_kind("#!/usr/bin/perl\n"), WrittenContent::Opaque);
    }

    #[test]
    fn package_scripts_are_read_or_refused() {
        let mut scripts =
            package_scripts(r#"{"scripts": {"test": "jest", "pretest": "tsc"}}"#).unwrap();
        scripts.sort();
        assert_eq!(scripts, vec!["jest".to_string(), "tsc".to_string()]);
        assert_eq!(package_scripts(r#"{"name": "x"}"#).unwrap().len(), 0);
        assert!(package_scripts(r#"{"scripts": {"test": 1}}"#).is_none());
        assert!(package_scripts("not json").is_none());
        assert!(package_scripts("[1]").is_none());
    }

    #[test]
    fn the_output_of_echo_printf_and_cat_is_known() {
        let a = |v: &[&str]| v.iter().map(|t| Arg::literal(t)).collect::<Vec<_>>();
        let none = Stdin::Inherit;
        assert_eq!(
            command_output(&a(&["echo", "rm", "-rf", "~"]), &none).unwrap(),
            "rm -rf ~\n"
        );
        assert_eq!(
            command_output(&a(&["echo", "-n", "x"]), &none).unwrap(),
            "x"
        );
        assert!(command_output(&a(&["echo", "-e", "x\\n"]), &none).is_none());
        assert_eq!(
            command_output(&a(&["printf", "a\\nb\\t\\\\"]), &none).unwrap(),
            "a\nb\t\\"
        );
        assert!(command_output(&a(&["printf", "%s", "x"]), &none).is_none());
        assert!(command_output(&a(&["printf", "\\x41"]), &none).is_none());
        let doc = Stdin::Literal(Arg::literal("ls\n"));
        assert_eq!(command_output(&a(&["cat"]), &doc).unwrap(), "ls\n");
        assert!(command_output(&a(&["cat", "x"]), &doc).is_none());
        assert!(command_output(&a(&["curl", "x"]), &none).is_none());
    }
}
