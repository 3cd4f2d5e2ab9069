//! Finding credentials with `find` (stage 3, continued): `find ~ -name
//! id_rsa | xargs cat`, `find ~/.ssh -name 'id_*' -exec cat {} \;` read
//! keys without naming one.
//!
//! A `find` lists credentials when one of its start paths is broad
//! (`[gate.shell.find] broad_starts`: `/`, `/etc`, `/root`, a home
//! directory, as the line resolves the start; or an ancestor of `$HOME`)
//! and its name tests (`-name`, `-iname`, `-path`, `-ipath`,
//! `-wholename`) may select a credential: a test and one of
//! `sensitive_names` (globs, compared case-insensitively) each match the
//! other's shortest example (`id_rsa` and `id_*`; `*.p*` and `*.pem`), or
//! the test's shortest example under the start matches `[gate.shell]
//! sensitive_reads` (`-name .ssh` under `~`). No positive name test at
//! all (`find ~ -type f`), a name only known at run time, or a `-regex`
//! test list everything. A start that `sensitive_reads` matches itself
//! (`~/.ssh`) lists credentials whatever the names.
//!
//! Such a listing is harmless on its own (`find ~ -name '*.pem'` prints
//! names); a command that then reads what it lists is a sensitive read
//! (`effects.read_sensitive`): one that `find -exec`/`-execdir`/`-ok`
//! runs, and one that `xargs` (or another wrapper that appends its input)
//! runs in the next stage of a pipeline after a `find` that prints.

use std::path::PathBuf;

use super::commands::Ctx;
use super::state::{Cwd, Dir};
use super::{Arg, RunVia, Scope, Walker, excerpt};

/// The path a process substitution's pipe is read through (`<(...)`):
/// where its listing of credentials is kept.
pub(super) const PIPE: &str = "/dev/fd/63";

/// The listings of the command around, kept while a simple command is
/// read ([`Walker::found_enter`]).
pub(super) struct FoundSaved {
    found: Option<String>,
    out: Option<String>,
    subst: Option<String>,
    stdin: Option<String>,
}

/// `find` tests that select by a glob, and whether the glob is matched
/// against the whole path (`-path`) rather than the name.
const NAME_TESTS: &[(&str, bool)] = &[
    ("-name", false),
    ("-iname", false),
    ("-path", true),
    ("-ipath", true),
    ("-wholename", true),
    ("-iwholename", true),
];

/// `find` tests that select by a regex (not compared: fail closed).
const REGEX_TESTS: &[&str] = &["-regex", "-iregex"];

/// `find` actions that write what is found to standard output.
const PRINT_ACTIONS: &[&str] = &["-print", "-print0", "-printf", "-ls"];

/// How far a start path reaches.
enum Start {
    /// Credentials are all it holds (`~/.ssh`).
    Sensitive(String),
    /// A home directory, `/`, `/etc`...: it may hold credentials.
    Broad(String),
    /// Anything else (the project).
    Narrow,
}

impl Walker<'_> {
    /// Whether `find STARTS TESTS` may list credentials: the reason, shown
    /// in messages (`the files `find ~ -name 'id_*'` lists ...`).
    /// `tests` are the arguments after the start paths.
    pub(super) fn find_lists_sensitive(
        &self,
        starts: &[Arg],
        tests: &[Arg],
        ctx: &Ctx,
    ) -> Option<String> {
        let mut broad: Option<String> = None;
        for s in starts {
            match self.find_start(s, ctx) {
                Start::Sensitive(shown) => {
                    return Some(format!("each file `find` lists under `{shown}`"));
                }
                Start::Broad(shown) => {
                    broad.get_or_insert(shown);
                }
                Start::Narrow => {}
            }
        }
        let start = broad?;
        let mut p = ExprParser {
            w: self,
            tests,
            at: 0,
            start: &start,
            branches: false,
        };
        let sel = p.or();
        let branches = p.branches;
        match sel? {
            Sel::Named(why) => Some(why),
            Sel::Everything if branches => Some(format!(
                "each file `find {start}` lists (a `-o` branch with no name test, which matches any file)"
            )),
            Sel::Everything => Some(format!("each file `find {start}` lists (no name test)")),
        }
    }

    /// Whether a `find` with `tests` writes what it finds to standard
    /// output: no action at all (the default `-print`), or a print action.
    pub(super) fn find_prints(&self, tests: &[Arg]) -> bool {
        let spec = &self.cfg.find;
        let acts = |t: &str| {
            spec.exec_actions.iter().any(|e| e == t) || spec.delete_actions.iter().any(|d| d == t)
        };
        tests
            .iter()
            .any(|a| PRINT_ACTIONS.contains(&a.text.as_str()))
            || !tests.iter().any(|a| acts(&a.text))
    }

    /// Whether the line has any listing of credentials to follow (a
    /// read then needs [`Walker::found_read`]).
    pub(super) fn found_any(&self) -> bool {
        self.found.is_some()
            || self.found_subst.is_some()
            || !self.found_vars.is_empty()
            || !self.found_files.is_empty()
    }

    /// A path `text` a command reads, when the line lists credentials: a
    /// sensitive read when the command runs for what is listed (`find
    /// -exec`, `| xargs`, `xargs < list`, `xargs -a list`), when the path
    /// is built from a command substitution that prints the listing (`cat
    /// $(find ~ -name id_rsa)`, backquotes alike) or from a variable read
    /// from it (`while read f; do cat "$f"; done`); and when the path is a
    /// file the listing was written to (`cat list`), the command prints
    /// the listing in turn (`cat list | xargs cat`).
    pub(super) fn found_read(&mut self, text: &str, dynamic: bool, ctx: &Ctx) {
        let why = if ctx.via == RunVia::Derived
            && let Some(f) = &self.found
        {
            Some(f.clone())
        } else if !dynamic {
            if let Some(r) = self.found_file(text) {
                self.found_out = Some(r);
            }
            None
        } else if let Some(r) = self.found_subst.as_ref().filter(|_| text.contains("$(")) {
            Some(r.clone())
        } else {
            self.found_vars
                .iter()
                .find(|(v, _)| mentions_var(text, v))
                .map(|(_, r)| r.clone())
        };
        if let Some(d) = why {
            self.effect("read", text, "found");
            self.effect_check(|c| &c.read_sensitive, &d);
        }
    }

    /// Before a simple command: what the walk keeps of the listings for
    /// the command before it, restored by [`Walker::found_leave`]. The
    /// command starts with no listing printed and none in its words.
    pub(super) fn found_enter(&mut self) -> FoundSaved {
        FoundSaved {
            found: self.found.clone(),
            out: self.found_out.take(),
            subst: self.found_subst.take(),
            stdin: self.found_stdin.take(),
        }
    }

    /// After a simple command: the saved state back; a listing it printed
    /// stays printed (for the next stage or the substitution around it).
    pub(super) fn found_leave(&mut self, s: FoundSaved) {
        self.found = s.found;
        if self.found_out.is_none() {
            self.found_out = s.out;
        }
        self.found_subst = s.subst;
        self.found_stdin = s.stdin;
    }

    /// A command substitution (`$(...)`, backquotes): walked as a
    /// subshell; when it prints a listing of credentials, the command
    /// whose words hold it gets it ([`Walker::found_read`]).
    pub(super) fn found_substitution(&mut self, code: &str, scope: &Scope) {
        let out = self.found_out.take();
        self.subshell_code(code, scope);
        if let Some(r) = self.found_out.take() {
            self.found_subst = Some(r);
        }
        self.found_out = out;
    }

    /// After a process substitution's code: when it printed a listing of
    /// credentials, its pipe ([`PIPE`]) holds it. `out`: what was printed
    /// before.
    pub(super) fn found_pipe(&mut self, out: Option<String>) {
        if let Some(r) = self.found_out.take() {
            self.keep_found_file(PathBuf::from(PIPE), r);
        }
        self.found_out = out;
    }

    /// Before a simple command `args` whose standard input is a listing
    /// of credentials (`| python3 -c ...`, `< list`): what its output
    /// holds when it prints nothing the walk follows. A program may print
    /// what it reads in another form (Python, awk, sed, `tr`, a program
    /// the policy does not know), so it is assumed to pass the listing
    /// on (fail closed); the reason names a program outside
    /// `[gate.shell.find] passes_listing`. `None` without a listing.
    pub(super) fn found_passed(&self, args: &[Arg]) -> Option<String> {
        let r = self.found.as_ref()?;
        let name = args
            .first()
            .map_or("", |a| super::normalize::basename(&a.text));
        if self.cfg.find.passes_listing.iter().any(|p| p == name) {
            return Some(r.clone());
        }
        Some(format!(
            "{r}, passed on by `{}` (a program that may print what it reads in another form)",
            excerpt(name)
        ))
    }

    /// After a simple command: when it printed nothing the walk follows
    /// and read a listing of credentials (`passed`, from
    /// [`Walker::found_passed`]), it printed the listing; when it printed
    /// one, the files it wrote (`written[mark..]`: its redirections,
    /// `tee list`, `sort -o list`) hold it.
    pub(super) fn found_to_files(&mut self, mark: usize, passed: Option<String>) {
        if self.found_out.is_none() {
            self.found_out = passed;
        }
        let Some(r) = &self.found_out else { return };
        let r = r.clone();
        let end = self.written.len();
        for i in mark..end {
            let abs = self.written[i].abs.clone();
            self.keep_found_file(abs, r.clone());
        }
    }

    /// A redirection of standard input from `text`: when it holds a
    /// listing of credentials, the command (or compound command) reads it.
    pub(super) fn found_stdin_from(&mut self, text: &str) {
        if let Some(r) = self.found_file(text) {
            self.found_stdin = Some(r);
        }
    }

    /// The value of a wrapper's input option (`xargs -a FILE`): when the
    /// file holds a listing of credentials, the wrapped command runs for
    /// what it lists.
    pub(super) fn found_input(&mut self, v: &Arg) {
        let file = if v.procsub { PIPE } else { v.text.as_str() };
        if let Some(r) = self.found_file(file) {
            self.found = Some(r);
        }
    }

    /// A command named `name` that prints what it reads
    /// (`[gate.shell.find] passes_listing`), run for a listing of
    /// credentials (`| sort`): it prints the listing on.
    pub(super) fn found_passes(&mut self, name: &str) {
        if let Some(r) = &self.found
            && self.cfg.find.passes_listing.iter().any(|p| p == name)
        {
            self.found_out = Some(r.clone());
        }
    }

    /// `read NAME` while the input is a listing of credentials (`find ~
    /// -name 'id_*' | while read f`): NAME holds what it lists.
    pub(super) fn found_read_var(&mut self, name: &str) {
        if let Some(r) = &self.found {
            let r = r.clone();
            self.keep_found_var(name, r);
        }
    }

    /// A variable assigned from the words just read (`f=$(find ...)`, `for
    /// f in $(find ...)`): when a substitution in them printed a listing of
    /// credentials, it holds what is listed.
    pub(super) fn found_subst_var(&mut self, name: &str) {
        if let Some(r) = &self.found_subst {
            let r = r.clone();
            self.keep_found_var(name, r);
        }
    }

    fn keep_found_var(&mut self, name: &str, why: String) {
        if self.found_vars.len() < 64 && !self.found_vars.iter().any(|(v, _)| v == name) {
            self.found_vars.push((name.to_string(), why));
        }
    }

    fn keep_found_file(&mut self, abs: PathBuf, why: String) {
        if self.found_files.len() < 64 {
            self.found_files.push((abs, why));
        }
    }

    /// Why the file `text` (where the line is) holds a listing of
    /// credentials, if it does.
    fn found_file(&self, text: &str) -> Option<String> {
        if self.found_files.is_empty() {
            return None;
        }
        let ctx = Ctx {
            cwd: None,
            via: RunVia::Shell,
        };
        let places = self.absolute_places(text, &ctx)?;
        self.found_files
            .iter()
            .rev()
            .find(|(p, _)| places.contains(p))
            .map(|(_, r)| r.clone())
    }

    /// How far the start path `s` of a `find` reaches.
    fn find_start(&self, s: &Arg, ctx: &Ctx) -> Start {
        if s.dynamic {
            return Start::Broad(excerpt(&s.text));
        }
        let dirs: Vec<Dir> = if s.text.starts_with('/') || s.text.starts_with('~') {
            vec![Dir::start().join(&s.text)]
        } else {
            match self.cwd_of(ctx) {
                Cwd::Known(v) => v.iter().map(|d| d.join(&s.text)).collect(),
                Cwd::Unknown => return Start::Broad(excerpt(&s.text)),
            }
        };
        let spec = &self.cfg.find;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut kind = Start::Narrow;
        for d in dirs {
            let shown = match &d {
                Dir::Rel(c) => {
                    let mut p = self.roots.lexical.first().cloned().unwrap_or_default();
                    for x in c {
                        if x == ".." {
                            p.pop();
                        } else {
                            p.push(x);
                        }
                    }
                    p.display().to_string()
                }
                other => other.render(),
            };
            if self.cfg.sensitive_reads.is_match(&shown) {
                return Start::Sensitive(shown);
            }
            let above_home = shown.starts_with('/')
                && home
                    .as_deref()
                    .is_some_and(|h| h.starts_with(std::path::Path::new(&shown)));
            if spec.broad_starts.is_match(&shown) || above_home {
                kind = Start::Broad(shown);
            }
        }
        kind
    }

    /// The credential name (or path) that the lower-cased glob `g` of a
    /// `find` under `start` may select; `whole`: `g` is matched against
    /// the whole path (`-path`).
    fn credential_glob(&self, start: &str, g: &str, whole: bool) -> Option<String> {
        let example = shortest_example(g);
        if whole && self.cfg.sensitive_reads.is_match(&example) {
            return Some(format!("`{}`", excerpt(&example)));
        }
        let name = g.rsplit('/').next().unwrap_or(g);
        let name_example = shortest_example(name);
        let under = format!("{}/{name_example}", start.trim_end_matches('/'));
        if self.cfg.sensitive_reads.is_match(&under) {
            return Some(format!("`{}`", excerpt(&under)));
        }
        let re = super::globs::component_regex(name);
        for s in &self.cfg.find.sensitive_names {
            let s = s.to_lowercase();
            let ours = re
                .as_ref()
                .is_none_or(|r| r.is_match(&shortest_example(&s)));
            let theirs =
                super::globs::component_regex(&s).is_some_and(|r| r.is_match(&name_example));
            if ours || theirs {
                return Some(format!("`{s}`"));
            }
        }
        None
    }
}

/// What a part of a `find` expression may be true for, among credential
/// files.
enum Sel {
    /// Any file: no name test restricts it (`-type f`, `! -name x`).
    Everything,
    /// Credential names, by a name test: why (for messages).
    Named(String),
}

/// Reads a `find` expression (find(1), "EXPRESSION": `( )`, `!`/`-not`,
/// `-a`/`-and` or juxtaposition, `-o`/`-or`, `,`) for whether it may be
/// true for a credential file: `None` when it cannot (every branch has a
/// name test that names no credential). An `-o` is true when either side
/// is, an and only when both are; a negated test and every test but the
/// name tests restrict nothing; how many arguments a test takes is the
/// `find` entry's (`value_flags`, `options`), an exec action's runs to
/// its `;` or `+`.
struct ExprParser<'a, 'w> {
    w: &'a Walker<'w>,
    tests: &'a [Arg],
    at: usize,
    /// The start path, as shown.
    start: &'a str,
    /// An `-o` (or `,`) was read.
    branches: bool,
}

impl<'a> ExprParser<'a, '_> {
    fn peek(&self) -> Option<&'a str> {
        self.tests.get(self.at).map(|a| a.text.as_str())
    }

    fn or(&mut self) -> Option<Sel> {
        let mut sel = self.and();
        while matches!(self.peek(), Some("-o" | "-or" | ",")) {
            self.at += 1;
            self.branches = true;
            let next = self.and();
            sel = match (sel, next) {
                (Some(Sel::Named(w)), _) | (_, Some(Sel::Named(w))) => Some(Sel::Named(w)),
                (Some(Sel::Everything), _) | (_, Some(Sel::Everything)) => Some(Sel::Everything),
                (None, None) => None,
            };
        }
        sel
    }

    fn and(&mut self) -> Option<Sel> {
        let mut sel = Some(Sel::Everything);
        let mut any = false;
        loop {
            match self.peek() {
                None | Some("-o" | "-or" | "," | ")") => break,
                Some("-a" | "-and") => {
                    self.at += 1;
                    continue;
                }
                _ => {}
            }
            let before = self.at;
            let next = self.unary();
            if self.at == before {
                self.at += 1;
            }
            any = true;
            sel = match (sel, next) {
                (None, _) | (_, None) => None,
                (Some(Sel::Named(w)), _) | (_, Some(Sel::Named(w))) => Some(Sel::Named(w)),
                _ => Some(Sel::Everything),
            };
        }
        if any { sel } else { Some(Sel::Everything) }
    }

    fn unary(&mut self) -> Option<Sel> {
        match self.peek() {
            Some("!" | "-not") => {
                self.at += 1;
                // A negated test may be true for any file.
                self.unary();
                Some(Sel::Everything)
            }
            Some("(") => {
                self.at += 1;
                let sel = self.or();
                if self.peek() == Some(")") {
                    self.at += 1;
                }
                sel
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Option<Sel> {
        let w = self.w;
        let a = &self.tests[self.at];
        let t = a.text.as_str();
        self.at += 1;
        let start = self.start;
        if let Some(&(_, whole)) = NAME_TESTS.iter().find(|(n, _)| *n == t) {
            let v = self.tests.get(self.at)?;
            self.at += 1;
            if v.dynamic {
                return Some(Sel::Named(format!(
                    "each file `find {start}` lists by a name only known at run time"
                )));
            }
            let g = v.text.to_lowercase();
            return w.credential_glob(start, &g, whole).map(|hit| {
                Sel::Named(format!(
                    "each file `find {start}` lists by `{}` (a name of credentials: {hit})",
                    excerpt(&g)
                ))
            });
        }
        if REGEX_TESTS.contains(&t) {
            self.at += 1;
            return Some(Sel::Named(format!(
                "each file `find {start} {t}` lists (a regex is not compared with credential names)"
            )));
        }
        let spec = &w.cfg.find;
        if spec.exec_actions.iter().any(|e| e == t) {
            while let Some(x) = self.peek() {
                self.at += 1;
                if x == ";" || x == "+" {
                    break;
                }
            }
        } else if w
            .cfg
            .command(spec.names.first().map_or("find", String::as_str))
            .and_then(|c| c.opt(t))
            .is_some_and(|o| o.takes_value || o.option.is_some())
        {
            self.at += 1;
        }
        Some(Sel::Everything)
    }
}

/// Whether `text` expands variable `name` (`$f`, `${f}`, `${f%.pub}`), as
/// the walk renders what it does not know.
fn mentions_var(text: &str, name: &str) -> bool {
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        rest = &rest[i + 1..];
        let body = rest.strip_prefix('{').unwrap_or(rest);
        if let Some(after) = body.strip_prefix(name)
            && !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            return true;
        }
    }
    false
}

/// The shortest text a glob matches: `*` empty, `?` and a bracket class
/// one character (the class's first), `\c` the character `c`.
fn shortest_example(glob: &str) -> String {
    let mut out = String::with_capacity(glob.len());
    let mut chars = glob.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' => {}
            '?' => out.push('x'),
            '\\' => out.extend(chars.next()),
            '[' => {
                let mut first = None;
                for d in chars.by_ref() {
                    if d == ']' && first.is_some() {
                        break;
                    }
                    if first.is_none() && d != '!' && d != '^' {
                        first = Some(d);
                    }
                }
                out.extend(first);
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_found_in_rendered_words() {
        assert!(mentions_var("$f", "f"));
        assert!(mentions_var("dir/$f", "f"));
        assert!(mentions_var("${f}.bak", "f"));
        assert!(mentions_var("${f%.pub}", "f"));
        assert!(!mentions_var("$file", "f"));
        assert!(!mentions_var("f", "f"));
        assert!(mentions_var("$a/$f", "f"));
    }

    #[test]
    fn shortest_examples_of_globs() {
        assert_eq!(shortest_example("id_*"), "id_");
        assert_eq!(shortest_example("*.p?m"), ".pxm");
        assert_eq!(shortest_example("id_[rd]sa"), "id_rsa");
        assert_eq!(shortest_example("a\\*b"), "a*b");
        assert_eq!(shortest_example("*/.ssh/*"), "/.ssh/");
    }
}
