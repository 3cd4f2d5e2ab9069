//! Argument roles at run time: which values of a call hold a shell command
//! line, an argv, SQL or a path, and their analysis.
//!
//! A tool's roles ([`GateTool::role_paths`]) are paths into the arguments,
//! declared in its tags (`arguments = { "/edits/*/file_path" = "path" }`) or
//! inferred by `[[gate.infer]]`; a `*` segment matches every array index
//! and every object key. The arguments are walked once: every value found
//! at a role's path is analysed by that role's analyzer (every item of an
//! array, not only the first), and every other string is scanned by the
//! `text` regex rules. When two roles reach the same value, the one with
//! the shorter path (then the one listed first) applies, and nothing below
//! it is scanned as text. Findings carry the full JSON Pointer of the value
//! (`/edits/1/file_path`), and the message of a finding below the top level
//! names that argument.

use serde_json::Value;

use super::patterns::PatternScope;
use super::schema::{display_ptr, push_ptr};
use super::types::{EffectFound, Finding};
use super::{CompiledGate, GateTool, ShellInput, path, shell, sql};
use crate::parse::tags::{ArgRole, RoleSeg};

/// Analyses `args` (a JSON object) with `gt`'s roles; findings go to `out`,
/// the effects found (shell commands' effects, paths read or written) to
/// `effects`. Returns `paths`' roots when the analysis resolved them (a
/// `getcwd` and a cache look-up each time: resolved once per call).
pub(crate) fn analyze(
    g: &CompiledGate,
    paths: &super::path::PathConfig,
    gt: &GateTool,
    args: &Value,
    out: &mut Vec<Finding>,
    effects: &mut Vec<EffectFound>,
) -> Option<std::sync::Arc<path::Roots>> {
    let roles = &gt.role_paths[..];
    let alive: u64 = if roles.len() >= 64 {
        u64::MAX
    } else {
        (1u64 << roles.len()) - 1
    };
    // The directory command lines run in, when the tool takes one: a
    // top-level argument named in `[gate.shell] cwd_arguments` with the
    // path role.
    let start = args.as_object().and_then(|map| {
        g.config.shell.cwd_arguments.iter().find_map(|n| {
            map.get(n)
                .and_then(Value::as_str)
                .filter(|_| gt.role_of(n) == Some(ArgRole::Path))
        })
    });
    let mut w = Walk {
        g,
        paths,
        gt,
        roles,
        out,
        effects,
        start,
        roots: None,
    };
    let mut ptr = String::new();
    w.walk(args, &mut ptr, alive, 0);
    w.roots
}

struct Walk<'a> {
    g: &'a CompiledGate,
    /// `[gate.paths]` with the roots this call runs under ([`super::CallEnv`]).
    paths: &'a super::path::PathConfig,
    gt: &'a GateTool,
    roles: &'a [(Vec<RoleSeg>, ArgRole)],
    out: &'a mut Vec<Finding>,
    effects: &'a mut Vec<EffectFound>,
    start: Option<&'a str>,
    /// `paths`' roots, once resolved.
    roots: Option<std::sync::Arc<path::Roots>>,
}

impl Walk<'_> {
    /// `alive`: bit `i` set when role `i`'s path matches the value's path so
    /// far (the first `depth` segments).
    fn walk(&mut self, v: &Value, ptr: &mut String, alive: u64, depth: usize) {
        if alive != 0 && depth > 0 {
            let mut bits = alive;
            while bits != 0 {
                let i = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if self.roles.get(i).is_some_and(|(p, _)| p.len() == depth) {
                    let role = self.roles[i].1;
                    self.apply(role, v, ptr, depth);
                    return;
                }
            }
        }
        if alive == 0 {
            scan_text(self.g, v, ptr, self.out);
            return;
        }
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    let next = self.narrow(alive, depth, |s| s.matches_key(k));
                    let len = ptr.len();
                    push_ptr(ptr, k);
                    self.walk(x, ptr, next, depth + 1);
                    ptr.truncate(len);
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    let next = self.narrow(alive, depth, |s| s.matches_index(i));
                    let len = ptr.len();
                    ptr.push('/');
                    ptr.push_str(&i.to_string());
                    self.walk(x, ptr, next, depth + 1);
                    ptr.truncate(len);
                }
            }
            other => scan_text(self.g, other, ptr, self.out),
        }
    }

    /// The roles of `alive` whose segment `depth` matches.
    fn narrow(&self, alive: u64, depth: usize, f: impl Fn(&RoleSeg) -> bool) -> u64 {
        let mut next = 0u64;
        let mut bits = alive;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if self
                .roles
                .get(i)
                .and_then(|(p, _)| p.get(depth))
                .is_some_and(&f)
            {
                next |= 1 << i;
            }
        }
        next
    }

    /// The shell analysis of one command line or argv, findings and effects.
    fn shell(&mut self, input: ShellInput, ptr: &str) {
        let g = self.g;
        // The programs run are not part of a verdict.
        let want = shell::Want {
            effects: true,
            runs: false,
        };
        let roots = self
            .roots
            .get_or_insert_with(|| path::roots(self.paths))
            .clone();
        let a = shell::analyze(
            &g.config.shell,
            &g.config.sql,
            self.paths,
            Some(roots),
            ptr,
            input,
            self.start,
            want,
        );
        self.out.extend(a.findings);
        self.effects.extend(a.effects);
    }

    /// A path argument: its checks, patterns and effect.
    fn path(&mut self, s: &str, ptr: &str) {
        let (g, gt) = (self.g, self.gt);
        let roots = self
            .roots
            .get_or_insert_with(|| path::roots(self.paths))
            .clone();
        self.out.extend(path::analyze_path_in(
            self.paths,
            Some(&roots),
            ptr,
            s,
            !gt.read_only,
        ));
        // Credentials, inside the roots or not (`[gate.shell]
        // sensitive_reads`, matched on the path as written and made
        // absolute against the first root).
        let sensitive = &g.config.shell.sensitive_reads;
        let abs = roots
            .lexical
            .first()
            .map(|r| path::normalize(&r.join(s)).to_string_lossy().into_owned());
        if sensitive.is_match(s) || abs.as_deref().is_some_and(|a| sensitive.is_match(a)) {
            let d = format!("`{}`", abs.as_deref().unwrap_or(s));
            self.out.push(
                self.paths
                    .checks
                    .sensitive
                    .finding(super::FindingKind::Path, ptr, &d),
            );
        }
        self.out
            .extend(g.patterns.scan_as(PatternScope::Path, ptr, s));
        self.effects.push(path_effect(gt, s));
    }

    /// Runs `role`'s analysis on the value at `ptr`.
    fn apply(&mut self, role: ArgRole, v: &Value, ptr: &mut String, depth: usize) {
        let before = self.out.len();
        let (g, gt) = (self.g, self.gt);
        let cfg = &g.config;
        let patterns = &g.patterns;
        match (role, v) {
            (ArgRole::Shell | ArgRole::ShellArgv, Value::String(s)) => {
                self.shell(ShellInput::Line(s), ptr);
                self.out
                    .extend(patterns.scan_as(PatternScope::Shell, ptr, s));
            }
            (ArgRole::Shell | ArgRole::ShellArgv, Value::Array(items))
                if items.iter().all(Value::is_string) =>
            {
                let argv: Vec<String> = items
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect();
                if !argv.is_empty() {
                    self.shell(ShellInput::Argv(&argv), ptr);
                    for (i, a) in argv.iter().enumerate() {
                        self.out.extend(patterns.scan_as(
                            PatternScope::Shell,
                            &format!("{ptr}/{i}"),
                            a,
                        ));
                    }
                }
            }
            (ArgRole::Sql, Value::String(s)) => {
                self.out.extend(sql::analyze_sql(
                    &cfg.sql,
                    ptr,
                    s,
                    &gt.sql_dialect,
                    gt.read_only,
                ));
                self.out.extend(patterns.scan_as(PatternScope::Sql, ptr, s));
            }
            (ArgRole::Path, Value::String(s)) => self.path(s, ptr),
            (ArgRole::Path, Value::Array(items)) => {
                for (i, x) in items.iter().enumerate() {
                    let len = ptr.len();
                    ptr.push('/');
                    ptr.push_str(&i.to_string());
                    match x {
                        Value::String(s) => self.path(s, ptr),
                        other => scan_text(g, other, ptr, self.out),
                    }
                    ptr.truncate(len);
                }
            }
            (_, other) => scan_text(g, other, ptr, self.out),
        }
        if depth > 1 {
            let at = display_ptr(ptr);
            for f in &mut self.out[before..] {
                f.message.push_str(&format!(" (argument `{at}`)"));
            }
        }
    }
}

/// The effect of a path argument: read by a read-only tool, written
/// otherwise.
fn path_effect(gt: &GateTool, s: &str) -> EffectFound {
    EffectFound {
        kind: if gt.read_only { "read" } else { "write" }.into(),
        operand: s.to_string(),
        resolved: path::normalize(std::path::Path::new(s))
            .display()
            .to_string(),
    }
}

/// Regex rules of scope `text` over every string leaf of `v`.
pub(crate) fn scan_text(g: &CompiledGate, v: &Value, ptr: &mut String, out: &mut Vec<Finding>) {
    match v {
        Value::String(s) => out.extend(g.patterns.scan_as(PatternScope::Text, ptr, s)),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let len = ptr.len();
                ptr.push('/');
                ptr.push_str(&i.to_string());
                scan_text(g, x, ptr, out);
                ptr.truncate(len);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let len = ptr.len();
                push_ptr(ptr, k);
                scan_text(g, x, ptr, out);
                ptr.truncate(len);
            }
        }
        _ => {}
    }
}
