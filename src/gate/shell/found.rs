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
use super::{Arg, RunVia, Walker, excerpt};

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
        let mut globs: Vec<(String, bool)> = Vec::new();
        let mut i = 0;
        while i < tests.len() {
            let t = tests[i].text.as_str();
            let negated = i > 0 && matches!(tests[i - 1].text.as_str(), "!" | "-not");
            if let Some(&(_, whole)) = NAME_TESTS.iter().find(|(n, _)| *n == t) {
                if let Some(v) = tests.get(i + 1)
                    && !negated
                {
                    if v.dynamic {
                        return Some(format!(
                            "each file `find {start}` lists by a name only known at run time"
                        ));
                    }
                    globs.push((v.text.to_lowercase(), whole));
                }
                i += 2;
                continue;
            }
            if REGEX_TESTS.contains(&t) && !negated {
                return Some(format!(
                    "each file `find {start} {t}` lists (a regex is not compared with credential names)"
                ));
            }
            i += 1;
        }
        if globs.is_empty() {
            return Some(format!("each file `find {start}` lists (no name test)"));
        }
        globs.iter().find_map(|(g, whole)| {
            self.credential_glob(&start, g, *whole).map(|hit| {
                format!(
                    "each file `find {start}` lists by `{}` (a name of credentials: {hit})",
                    excerpt(g)
                )
            })
        })
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

    /// A path a command reads: when the command runs for what a `find`
    /// that may list credentials lists (`find -exec`, `| xargs`), a
    /// sensitive read.
    pub(super) fn found_read(&mut self, text: &str, ctx: &Ctx) {
        if ctx.via != RunVia::Derived {
            return;
        }
        let Some(found) = &self.found else { return };
        let d = found.clone();
        self.effect("read", text, "found");
        self.effect_check(|c| &c.read_sensitive, &d);
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
    fn shortest_examples_of_globs() {
        assert_eq!(shortest_example("id_*"), "id_");
        assert_eq!(shortest_example("*.p?m"), ".pxm");
        assert_eq!(shortest_example("id_[rd]sa"), "id_rsa");
        assert_eq!(shortest_example("a\\*b"), "a*b");
        assert_eq!(shortest_example("*/.ssh/*"), "/.ssh/");
    }
}
