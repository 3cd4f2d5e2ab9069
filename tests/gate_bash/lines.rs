//! Generator of compound bash command lines for the differential test: `cd`,
//! `pushd`/`popd`, subshells, brace groups, `&&`/`||`/`;`/newlines, pipes,
//! wrappers (`env`, `nice`, `timeout`, `nohup`, `stdbuf`, `command`, `exec`),
//! `bash -c`, functions, variables (assignment, `export`, prefix
//! assignments, `$V`, `"$V"`, `${V}`, `${V:-x}`, `${V-x}`), quoting (single,
//! double, backslash, `$'...'`) and brace expansion.
//!
//! Every command of a generated line runs: the generator knows the exit
//! status of what it writes (a stub fails only when given `--fail`), puts
//! `&&` only after a success and `||` only after a failure, and `cd`s only
//! into directories it created. Alongside each line it computes the runs it
//! expects (program, arguments, working directory) — a check of the harness
//! itself against bash, before the gate is compared with bash.

use std::collections::{BTreeMap, BTreeSet};

/// xorshift64*: deterministic, dependency-free.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `pct`/100.
    pub fn pct(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }

    /// One element of `xs`.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// One program run: what a logging stub records.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Run {
    /// Program name (basename).
    pub prog: String,
    /// Arguments after the name.
    pub argv: Vec<String>,
    /// Working directory relative to the throwaway root (`.` for the root).
    pub cwd: String,
}

/// Directories created under the root before the lines run.
pub const DIRS: &[&str] = &["a", "a/x", "a/y", "b", "b/z", "d e", "d e/f", "c"];

/// Programs replaced by logging stubs that do nothing.
pub const STUBS: &[&str] = &[
    "ls", "cat", "grep", "rm", "cp", "mv", "mkdir", "touch", "git", "cargo", "make", "sort",
    "head", "wc", "diff", "sed", "awk", "jq", "npm", "python3", "pytest", "tar", "chmod", "frob",
    "my-tool",
];

/// Real wrapper programs replaced by stubs that log, then run the real one.
pub const WRAPPERS: &[(&str, &str)] = &[
    ("env", "/usr/bin/env"),
    ("nice", "/usr/bin/nice"),
    ("timeout", "/usr/bin/timeout"),
    ("nohup", "/usr/bin/nohup"),
    ("stdbuf", "/usr/bin/stdbuf"),
];

const VAR_NAMES: &[&str] = &["V", "W", "DIR", "name", "OUT", "x1"];
const VALUES: &[&str] = &[
    "src",
    "a.txt",
    "hello world",
    "x y  z",
    "",
    "--flag",
    "a/x",
    "3",
    "it's",
    "tab\there",
];
const PLAIN: &[&str] = &[
    "-l",
    "-n",
    "5",
    "src",
    "README.md",
    "--all",
    "--name=x",
    "a.txt",
    "x=1",
    "HEAD~1",
    "foo,bar",
    "%s",
    "a:b",
    "-rf",
    "build/out",
    "./x",
    "..",
    "@",
    "+x",
    "-",
];

#[derive(Clone, Default)]
struct St {
    cwd: Vec<String>,
    oldpwd: Option<Vec<String>>,
    vars: BTreeMap<String, String>,
    exported: BTreeSet<String>,
    stack: Vec<Vec<String>>,
    /// Functions defined so far: name -> (body text, body generator seed).
    funcs: BTreeMap<String, u64>,
}

impl St {
    fn cwd_text(&self) -> String {
        if self.cwd.is_empty() {
            ".".into()
        } else {
            self.cwd.join("/")
        }
    }

    fn children(&self) -> Vec<String> {
        let here = self.cwd.join("/");
        DIRS.iter()
            .filter_map(|d| {
                let (parent, name) = match d.rsplit_once('/') {
                    Some((p, n)) => (p, n),
                    None => ("", *d),
                };
                (parent == here).then(|| name.to_string())
            })
            .collect()
    }
}

/// The generator's settings for one piece of code.
#[derive(Clone, Copy)]
struct Ctx {
    depth: usize,
    /// Inside `bash -c '...'`: no single quotes may be written.
    no_single_quotes: bool,
    /// Runs only when something before it succeeded or failed (after `&&`,
    /// `||`, in an `if` body): no `cd`, assignment or function definition
    /// here, because the analysis cannot know the exit status of a
    /// program and must merge the state of both outcomes.
    pure: bool,
}

/// Generates lines and the runs each must produce.
pub struct Gen {
    rng: Rng,
    async_ok: bool,
    used_async: bool,
}

/// A generated line.
pub struct Line {
    /// The command line.
    pub text: String,
    /// The runs the generator expects, sorted (pipelines run concurrently).
    pub runs: Vec<Run>,
}

fn sh_single(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn sh_double(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Quotes a literal word for bash, choosing a style; never single quotes
/// when `no_single` (the text goes inside a single-quoted `bash -c`).
fn quote_word(rng: &mut Rng, s: &str, no_single: bool) -> String {
    let plain = !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | ',' | ':' | '=' | '+' | '@' | '%')
        })
        && !s.starts_with('=');
    match rng.below(4) {
        0 if plain => s.to_string(),
        1 if !no_single && !s.contains('\'') => sh_single(s),
        2 if !s.contains('\n') && !s.contains('\t') => {
            // Backslash-escape every special character.
            let mut out = String::new();
            for c in s.chars() {
                if !(c.is_ascii_alphanumeric()
                    || matches!(c, '-' | '_' | '.' | '/' | ',' | ':' | '+' | '@' | '%'))
                {
                    out.push('\\');
                }
                out.push(c);
            }
            if out.is_empty() { sh_double(s) } else { out }
        }
        _ => sh_double(s),
    }
}

fn split_fields(s: &str) -> Vec<String> {
    s.split([' ', '\t', '\n'])
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect()
}

impl Gen {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Gen {
        Gen {
            rng: Rng::new(seed),
            async_ok: true,
            used_async: false,
        }
    }

    /// The next line.
    pub fn line(&mut self) -> Line {
        let mut st = St::default();
        let mut runs = Vec::new();
        let ctx = Ctx {
            depth: 0,
            no_single_quotes: false,
            pure: false,
        };
        self.used_async = false;
        let n = 1 + self.rng.below(5);
        let (mut text, _) = self.list(&mut st, &mut runs, ctx, n);
        if self.used_async && !text.ends_with("wait") {
            text.push_str("; wait");
        }
        runs.sort();
        Line { text, runs }
    }

    /// A list of `n` items joined by connectors chosen by the status so far.
    fn list(&mut self, st: &mut St, runs: &mut Vec<Run>, ctx: Ctx, n: usize) -> (String, bool) {
        let mut text = String::new();
        let mut ok = true;
        // Whether the next item starts an and-or list (`&` applies to a
        // whole and-or list, not to its last command).
        let mut list_start = true;
        let mut after_async = false;
        for i in 0..n {
            let mut item_ctx = ctx;
            if after_async {
                text.push(' ');
            } else if i > 0 {
                let conn = match (ok, self.rng.below(4)) {
                    (true, 0 | 1) => " && ",
                    (false, 0 | 1) => " || ",
                    (_, 2) => "; ",
                    _ => "\n",
                };
                list_start = matches!(conn, "; " | "\n");
                if !list_start {
                    item_ctx.pure = true;
                }
                text.push_str(conn);
            }
            // At the top level, now and then an and-or list of one item runs
            // in the background (in a subshell: its state changes stay
            // there); the next item then starts a new list.
            let last = i + 1 == n;
            if ctx.depth == 0 && list_start && self.async_ok && self.rng.pct(6) {
                let mut sub = st.clone();
                let (t, _) = self.item(&mut sub, runs, ctx);
                // An item that is itself a list runs whole in the background.
                if t.contains(';') || t.contains('\n') {
                    text.push_str(&format!("{{ {t}; }} &"));
                } else {
                    text.push_str(&t);
                    text.push_str(" &");
                }
                self.used_async = true;
                after_async = true;
                list_start = true;
                ok = true;
                let _ = last;
                continue;
            }
            after_async = false;
            let (t, o) = self.item(st, runs, item_ctx);
            text.push_str(&t);
            ok = o;
        }
        if after_async {
            text.push_str(" wait");
            ok = true;
        }
        (text, ok)
    }

    fn item(&mut self, st: &mut St, runs: &mut Vec<Run>, ctx: Ctx) -> (String, bool) {
        let deep = ctx.depth >= 2;
        let inner = Ctx {
            depth: ctx.depth + 1,
            ..ctx
        };
        // An isolated piece (subshell, child shell) may change its own state.
        let isolated = Ctx {
            pure: false,
            ..inner
        };
        let pick = self.rng.below(if deep { 7 } else { 13 });
        let pick = match pick {
            3 | 4 | 12 if ctx.pure => 0,
            other => other,
        };
        match pick {
            0..=2 => self.simple(st, runs, ctx),
            3 => self.cd(st),
            4 => self.assign(st, ctx),
            5 => self.wrapped(st, runs, ctx),
            6 => {
                let (t, ok) = self.simple(st, runs, ctx);
                if self.rng.pct(50) {
                    (format!("! {t}"), !ok)
                } else {
                    (t, ok)
                }
            }
            7 => {
                // Subshell: state changes stay inside.
                let mut sub = st.clone();
                let n = 1 + self.rng.below(3);
                let (t, ok) = self.list(&mut sub, runs, isolated, n);
                // Spaces keep `( (` from reading as arithmetic `((`.
                (format!("( {t} )"), ok)
            }
            8 => {
                let n = 1 + self.rng.below(3);
                let (t, ok) = self.list(st, runs, inner, n);
                (format!("{{ {t}; }}"), ok)
            }
            9 => self.pipeline(st, runs, inner),
            10 if !ctx.no_single_quotes => self.bash_c(st, runs, isolated),
            11 => {
                // if with a condition that succeeds; the body is conditional.
                let (c, _) = self.simple_with(st, runs, ctx, Some(false), true);
                let n = 1 + self.rng.below(2);
                let body = Ctx {
                    pure: true,
                    ..inner
                };
                let (t, ok) = self.list(st, runs, body, n);
                (format!("if {c}; then {t}; fi"), ok)
            }
            12 => self.function(st, runs, inner),
            _ => self.simple(st, runs, ctx),
        }
    }

    fn pipeline(&mut self, st: &mut St, runs: &mut Vec<Run>, ctx: Ctx) -> (String, bool) {
        let n = 2 + self.rng.below(2);
        let mut parts = Vec::new();
        let mut ok = true;
        for _ in 0..n {
            // Each stage runs in a subshell.
            let mut sub = st.clone();
            let (t, o) = match self.rng.below(5) {
                0 => {
                    let (c, _) = self.cd(&mut sub);
                    let (s, o) = self.simple_with(&mut sub, runs, ctx, Some(false), true);
                    (format!("{{ {c} && {s}; }}"), o)
                }
                1 => self.wrapped(&mut sub, runs, ctx),
                _ => self.simple(&mut sub, runs, ctx),
            };
            parts.push(t);
            ok = o;
        }
        (parts.join(" | "), ok)
    }

    fn bash_c(&mut self, st: &mut St, runs: &mut Vec<Run>, ctx: Ctx) -> (String, bool) {
        // A child shell: only exported variables, its own state.
        let mut child = St {
            cwd: st.cwd.clone(),
            oldpwd: None,
            vars: st
                .vars
                .iter()
                .filter(|(k, _)| st.exported.contains(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            exported: st.exported.clone(),
            ..St::default()
        };
        let inner_ctx = Ctx {
            depth: ctx.depth,
            no_single_quotes: true,
            pure: false,
        };
        let n = 1 + self.rng.below(3);
        let (code, ok) = self.list(&mut child, runs, inner_ctx, n);
        let code = code.replace('\n', "; ");
        // `sh` is dash here: only POSIX code goes to it.
        let posix = !["$'", "pushd", "popd", "{", "&>", "-dflt}"]
            .iter()
            .any(|x| code.contains(x));
        let sh = if posix && self.rng.pct(50) {
            "sh"
        } else {
            "bash"
        };
        (format!("{sh} -c '{code}'"), ok)
    }

    fn function(&mut self, st: &mut St, runs: &mut Vec<Run>, ctx: Ctx) -> (String, bool) {
        let name = format!("f{}", st.funcs.len());
        // The body is generated afresh at each call from the same seed, in
        // the caller's state; its text must not depend on the state, so it
        // uses only literal arguments.
        let body_seed = self.rng.next();
        st.funcs.insert(name.clone(), body_seed);
        let body_text = {
            let mut g = Gen::new(body_seed);
            let mut scratch = st.clone();
            let mut sink = Vec::new();
            g.body(&mut scratch, &mut sink, ctx).0
        };
        let calls = 1 + self.rng.below(2);
        let mut text = format!("{name}() {{ {body_text}; }}");
        let mut ok = true;
        for _ in 0..calls {
            if self.rng.pct(40) {
                let (c, _) = self.cd(st);
                text.push_str("; ");
                text.push_str(&c);
            }
            let mut g = Gen::new(body_seed);
            let (_, o) = g.body(st, runs, ctx);
            ok = o;
            text.push_str("; ");
            text.push_str(&name);
        }
        (text, ok)
    }

    /// A function body: stubs with literal arguments and `cd`s, whose text
    /// does not depend on the state it runs in.
    fn body(&mut self, st: &mut St, runs: &mut Vec<Run>, _ctx: Ctx) -> (String, bool) {
        let n = 1 + self.rng.below(2);
        let mut parts = Vec::new();
        let mut ok = true;
        for _ in 0..n {
            let prog = self.rng.pick(STUBS).to_string();
            let mut argv = Vec::new();
            let mut words = vec![prog.clone()];
            for _ in 0..self.rng.below(3) {
                let a = self.rng.pick(PLAIN).to_string();
                words.push(a.clone());
                argv.push(a);
            }
            runs.push(Run {
                prog,
                argv,
                cwd: st.cwd_text(),
            });
            parts.push(words.join(" "));
            ok = true;
        }
        (parts.join("; "), ok)
    }

    fn cd(&mut self, st: &mut St) -> (String, bool) {
        let kids = st.children();
        let old = st.cwd.clone();
        let text = match self.rng.below(9) {
            0 | 1 if !kids.is_empty() => {
                let k = self.rng.pick(&kids).clone();
                st.cwd.push(k.clone());
                format!(
                    "cd {}",
                    quote_word(&mut self.rng, &k, false).replace('\'', "\"")
                )
            }
            2 if !st.cwd.is_empty() => {
                st.cwd.pop();
                "cd ..".into()
            }
            3 if !kids.is_empty() => {
                let k = self.rng.pick(&kids).clone();
                st.cwd.push(k.clone());
                format!("cd ./{}", sh_double(&k))
            }
            4 if kids.len() >= 2 => {
                let a = kids[0].clone();
                let b = kids[1].clone();
                st.cwd.push(b.clone());
                format!("cd {}/../{}", sh_double(&a), sh_double(&b))
            }
            5 if !kids.is_empty() => {
                let k = self.rng.pick(&kids).clone();
                st.stack.push(old.clone());
                st.cwd.push(k.clone());
                format!("pushd {} >/dev/null", sh_double(&k))
            }
            6 if !st.stack.is_empty() => {
                st.cwd = st.stack.pop().unwrap_or_default();
                "popd >/dev/null".into()
            }
            7 if st.oldpwd.is_some() => {
                st.cwd = st.oldpwd.clone().unwrap_or_default();
                "cd - >/dev/null".into()
            }
            8 if !kids.is_empty() => {
                let k = self.rng.pick(&kids).clone();
                let var = *self.rng.pick(VAR_NAMES);
                st.vars.insert(var.into(), k.clone());
                st.cwd.push(k.clone());
                format!("{var}={} && cd \"${var}\"", sh_double(&k))
            }
            _ if !kids.is_empty() => {
                let k = self.rng.pick(&kids).clone();
                st.cwd.push(k.clone());
                format!("cd {}", sh_double(&k))
            }
            _ if !st.cwd.is_empty() => {
                st.cwd.pop();
                "cd ..".into()
            }
            _ => {
                // Nowhere to go: stay.
                "cd .".into()
            }
        };
        st.oldpwd = Some(old);
        (text, true)
    }

    fn assign(&mut self, st: &mut St, ctx: Ctx) -> (String, bool) {
        let var = self.rng.pick(VAR_NAMES).to_string();
        let (text_value, value) = match self.rng.below(4) {
            0 => {
                let v = self.value(ctx);
                (quote_word(&mut self.rng, &v, ctx.no_single_quotes), v)
            }
            1 if !st.vars.is_empty() => {
                let keys: Vec<String> = st.vars.keys().cloned().collect();
                let k = self.rng.pick(&keys).clone();
                let v = format!("{}/x", st.vars[&k]);
                (format!("\"${{{k}}}/x\""), v)
            }
            _ => {
                let v = self.rng.pick(PLAIN).to_string();
                (sh_double(&v), v)
            }
        };
        st.vars.insert(var.clone(), value);
        if self.rng.pct(30) {
            st.exported.insert(var.clone());
            (format!("export {var}={text_value}"), true)
        } else {
            (format!("{var}={text_value}"), true)
        }
    }

    /// One argument: its text and the fields it expands to.
    fn word(&mut self, st: &St, ctx: Ctx) -> (String, Vec<String>) {
        let ns = ctx.no_single_quotes;
        let vars: Vec<(String, String)> = st
            .vars
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match self.rng.below(12) {
            0..=2 => {
                let w = self.rng.pick(PLAIN).to_string();
                (quote_word(&mut self.rng, &w, ns), vec![w])
            }
            3 => {
                let w = self.value(ctx);
                if w.is_empty() {
                    ("\"\"".into(), vec![String::new()])
                } else {
                    (quote_word(&mut self.rng, &w, ns), vec![w])
                }
            }
            4 if !vars.is_empty() => {
                let (k, v) = self.rng.pick(&vars).clone();
                (format!("${k}"), split_fields(&v))
            }
            5 if !vars.is_empty() => {
                let (k, v) = self.rng.pick(&vars).clone();
                (
                    format!("\"pre ${{{k}}} post\""),
                    vec![format!("pre {v} post")],
                )
            }
            6 if !vars.is_empty() => {
                let (k, v) = self.rng.pick(&vars).clone();
                (format!("\"${k}\""), vec![v])
            }
            7 if !vars.is_empty() => {
                let (k, v) = self.rng.pick(&vars).clone();
                if self.rng.pct(50) {
                    let f = if v.is_empty() {
                        vec!["dflt".to_string()]
                    } else {
                        split_fields(&v)
                    };
                    (format!("${{{k}:-dflt}}"), f)
                } else {
                    (format!("\"${{{k}-dflt}}\""), vec![v])
                }
            }
            8 if !ns => {
                // ANSI-C quoting.
                match self.rng.below(3) {
                    0 => ("$'a\\tb'".into(), vec!["a\tb".into()]),
                    1 => ("$'\\x41\\x42'".into(), vec!["AB".into()]),
                    _ => ("$'it\\'s'".into(), vec!["it's".into()]),
                }
            }
            9 => {
                let a = self.rng.pick(&["x", "src", "a"]).to_string();
                let b = self.rng.pick(&["1", "2", "b"]).to_string();
                (
                    format!("pre{{{a},{b}}}.txt"),
                    vec![format!("pre{a}.txt"), format!("pre{b}.txt")],
                )
            }
            10 => {
                // Concatenated quoting styles.
                if ns {
                    ("ab\"c d\"e".into(), vec!["abc de".into()])
                } else {
                    ("ab'c d'\"e\"f".into(), vec!["abc def".into()])
                }
            }
            _ => {
                let w = self.rng.pick(PLAIN).to_string();
                (w.clone(), vec![w])
            }
        }
    }

    /// A variable value; none with a single quote inside `bash -c '...'`.
    fn value(&mut self, ctx: Ctx) -> String {
        loop {
            let v = self.rng.pick(VALUES).to_string();
            if !(ctx.no_single_quotes && v.contains('\'')) {
                return v;
            }
        }
    }

    fn simple(&mut self, st: &mut St, runs: &mut Vec<Run>, ctx: Ctx) -> (String, bool) {
        self.simple_with(st, runs, ctx, None, true)
    }

    /// A stub command; `fail` forces (`Some(true)`) or forbids
    /// (`Some(false)`) a failing status.
    fn simple_with(
        &mut self,
        st: &mut St,
        runs: &mut Vec<Run>,
        ctx: Ctx,
        fail: Option<bool>,
        prefix_ok: bool,
    ) -> (String, bool) {
        let prog = self.rng.pick(STUBS).to_string();
        let mut words = Vec::new();
        let mut argv = Vec::new();
        // A prefix assignment: in the command's environment only; its own
        // arguments still see the old value.
        if prefix_ok && self.rng.pct(12) {
            let var = self.rng.pick(VAR_NAMES).to_string();
            let v = self.rng.pick(PLAIN).to_string();
            words.push(format!("{var}={}", sh_double(&v)));
        }
        words.push(prog.clone());
        for _ in 0..self.rng.below(4) {
            let (t, f) = self.word(st, ctx);
            words.push(t);
            argv.extend(f);
        }
        let failing = match fail {
            Some(f) => f,
            None => self.rng.pct(20),
        };
        if failing {
            words.push("--fail".into());
            argv.push("--fail".into());
        }
        if self.rng.pct(15) {
            words.push(
                self.rng
                    .pick(&[
                        "> out.txt",
                        "2>/dev/null",
                        ">> log.txt",
                        "< /dev/null",
                        "&>/dev/null",
                    ])
                    .to_string(),
            );
        }
        runs.push(Run {
            prog,
            argv,
            cwd: st.cwd_text(),
        });
        (words.join(" "), !failing)
    }

    fn wrapped(&mut self, st: &mut St, runs: &mut Vec<Run>, ctx: Ctx) -> (String, bool) {
        // Wrappers, outermost first, each with its arguments.
        let mut prefix: Vec<String> = Vec::new();
        let mut logged: Vec<(String, Vec<String>)> = Vec::new();
        for k in 0..1 + self.rng.below(2) {
            // `command` is a builtin: only the shell itself can run it.
            let n = if k == 0 { 8 } else { 7 };
            let (name, args): (&str, Vec<String>) = match self.rng.below(n) {
                0 => ("env", vec![]),
                1 => ("env", vec!["A=1".into(), "B=x y".into()]),
                2 => ("env", vec!["-u".into(), "HOME".into()]),
                3 => ("nice", vec!["-n".into(), "5".into()]),
                4 => ("timeout", vec!["10".into()]),
                5 => ("nohup", vec![]),
                6 => ("stdbuf", vec!["-oL".into()]),
                _ => ("command", vec![]),
            };
            let mut t = vec![name.to_string()];
            t.extend(
                args.iter()
                    .map(|a| quote_word(&mut self.rng, a, ctx.no_single_quotes)),
            );
            prefix.push(t.join(" "));
            logged.push((name.to_string(), args));
        }
        let mut inner_runs = Vec::new();
        let (cmd, ok) = self.simple_with(st, &mut inner_runs, ctx, None, false);
        let inner = inner_runs.pop().expect("one run");
        // Each real wrapper runs with everything after it as arguments.
        let mut rest: Vec<String> = std::iter::once(inner.prog.clone())
            .chain(inner.argv.iter().cloned())
            .collect();
        for (name, args) in logged.iter().rev() {
            if name != "command" {
                let mut argv = args.clone();
                argv.extend(rest.iter().cloned());
                runs.push(Run {
                    prog: name.clone(),
                    argv: argv.clone(),
                    cwd: st.cwd_text(),
                });
            }
            let mut r = vec![name.clone()];
            r.extend(args.iter().cloned());
            r.extend(rest);
            rest = r;
        }
        runs.push(inner);
        (format!("{} {cmd}", prefix.join(" ")), ok)
    }
}
