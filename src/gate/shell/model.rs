//! A command's arguments read with its `[[gate.shell.commands]]` entry:
//! which argument is an option and which option takes a value, which
//! operand is the program (sed's script), a subcommand, a setting, a path,
//! and the effect on each ([`Target`]), with the effects of the run itself.
//! Pure: what the targets mean is [`super::targets`]'s business.

use crate::plan::gate::effect::Effect;
use crate::plan::gate::shell::{CommandSpec, OptInfo};

/// An argument as the shell passes it.
pub trait ArgText {
    /// Text after quote removal.
    fn text(&self) -> &str;
}

impl ArgText for String {
    fn text(&self) -> &str {
        self
    }
}

impl ArgText for &str {
    fn text(&self) -> &str {
        self
    }
}

/// Where a target's text comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Argument `i`, whole.
    Arg(usize),
    /// Argument `i` from byte `offset` (an attached value, `KEY=VALUE`).
    Part(usize, usize),
    /// A fixed path from the policy.
    Fixed(String),
    /// Arguments `k` and `v` as one setting `K=V` (`git config K V`).
    Pair(usize, usize),
}

/// One effect on one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The effect.
    pub effect: Effect,
    /// Where its text is.
    pub source: Source,
}

/// The arguments of one command read with its entry.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// Effects with a target, in argument order.
    pub targets: Vec<Target>,
    /// Effects without a target (`network`, `system`, ...).
    pub effects: Vec<Effect>,
    /// Indices of the operands (for the rules).
    pub operands: Vec<usize>,
    /// The subcommand: its argument index (the rest is read with the
    /// `NAME SUB` entry).
    pub subcommand: Option<usize>,
    /// Options the entry does not know, with `strict_options`.
    pub unknown_options: Vec<String>,
}

/// The canonical spelling of `f` from its index entry.
fn canon_of<'a>(o: Option<&'a OptInfo>, f: &'a str) -> &'a str {
    o.and_then(|o| o.alias.as_deref()).unwrap_or(f)
}

/// A single-letter option `{sign}{c}` as text, without allocating.
fn short_flag(buf: &mut [u8; 8], sign: u8, c: char) -> &str {
    buf[0] = sign;
    let n = c.encode_utf8(&mut buf[1..]).len();
    std::str::from_utf8(&buf[..1 + n]).unwrap_or("")
}

/// What a reading notes while it goes: the options and canonical flags
/// seen, kept only when the entry's `program_unless` or `fixed_unless`
/// needs them.
struct Seen {
    on: bool,
    names: Vec<String>,
}

impl Seen {
    fn note(&mut self, name: &str) {
        if self.on {
            self.names.push(name.to_string());
        }
    }
}

/// Applies flag `f`'s effects (`o`: its index entry); false when the
/// entry does not list it.
fn flag_of(
    o: Option<&OptInfo>,
    f: &str,
    r: &mut Reading,
    operand_effect: &mut Effect,
    clear: &mut bool,
    seen: &mut Seen,
) -> bool {
    seen.note(canon_of(o, f));
    let Some(effs) = o.and_then(|o| o.flag.as_ref()) else {
        return false;
    };
    for e in &effs.0 {
        match e {
            Effect::Operands(x) => *operand_effect = (**x).clone(),
            Effect::Clear => *clear = true,
            Effect::Fixed(k, p) => r.targets.push(Target {
                effect: (**k).clone(),
                source: Source::Fixed(p.clone()),
            }),
            Effect::None => {}
            other => r.effects.push(other.clone()),
        }
    }
    true
}

/// Reads `args` (the arguments after the command name) with `spec`.
pub fn read_args<A: ArgText>(spec: &CommandSpec, args: &[A]) -> Reading {
    let mut r = Reading::default();
    let mut operand_effect = spec.operands.clone();
    // (index, after --), inline up to a usual command's operands.
    let mut operands: smallvec::SmallVec<[(usize, bool); 16]> = smallvec::SmallVec::new();
    let mut clear = false;
    // Options (as given) and canonical flags seen, for `program_unless`
    // and `fixed_unless`.
    let mut seen = Seen {
        on: (spec.program_operand.is_some() && !spec.program_unless.is_empty())
            || !spec.fixed_unless.is_empty(),
        names: Vec::new(),
    };
    let mut buf = [0u8; 8];
    let mut i = 0;
    let mut after_dashdash = false;
    // Targets from option values, and the option (for `option:NAME=...`).
    let mut from_options: Vec<(usize, &str)> = Vec::new();
    // Old-style first argument: `tar xzf archive.tar`.
    if spec.old_style_flags
        && let Some(first) = args.first()
        && !first.text().starts_with('-')
        && !first.text().is_empty()
    {
        i = 1;
        for c in first.text().chars() {
            let f = short_flag(&mut buf, b'-', c);
            let o = spec.opt(f);
            if let Some(e) = o.and_then(|o| o.option.as_ref()) {
                if i < args.len() {
                    note_option(&mut from_options, spec, f, r.targets.len());
                    r.targets.push(Target {
                        effect: e.clone(),
                        source: Source::Arg(i),
                    });
                    i += 1;
                }
                seen.note(f);
                seen.note(canon_of(o, f));
            } else if o.is_some_and(|o| o.takes_value) {
                i += 1;
                seen.note(canon_of(o, f));
            } else {
                flag_of(o, f, &mut r, &mut operand_effect, &mut clear, &mut seen);
            }
        }
    }
    while i < args.len() {
        let t = args[i].text();
        if after_dashdash || t == "-" || !t.starts_with('-') || t.len() == 1 {
            if !after_dashdash
                && let Some(e) = &spec.plus_operands
                && t.starts_with('+')
                && t.len() > 1
            {
                if *e != Effect::None {
                    r.targets.push(Target {
                        effect: e.clone(),
                        source: Source::Part(i, 1),
                    });
                }
                i += 1;
                continue;
            }
            if spec.subcommands && r.subcommand.is_none() && !after_dashdash {
                r.subcommand = Some(i);
                break;
            }
            operands.push((i, after_dashdash));
            i += 1;
            continue;
        }
        if t == "--" {
            after_dashdash = true;
            i += 1;
            continue;
        }
        // `--name=value` and `--name value`.
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, _)) => (&t[..n.len() + 2], Some(n.len() + 3)),
                None => (t, None),
            };
            let o = spec.opt(name);
            if let Some(e) = o.and_then(|o| o.option.as_ref()) {
                seen.note(name);
                seen.note(canon_of(o, name));
                let src = match attached {
                    Some(off) => Some(Source::Part(i, off)),
                    None if i + 1 < args.len() => {
                        i += 1;
                        Some(Source::Arg(i))
                    }
                    None => None,
                };
                if let Some(source) = src {
                    note_option(&mut from_options, spec, name, r.targets.len());
                    r.targets.push(Target {
                        effect: e.clone(),
                        source,
                    });
                }
            } else if o.is_some_and(|o| o.takes_value) {
                seen.note(canon_of(o, name));
                if attached.is_none() {
                    i += 1;
                }
            } else if o.is_some_and(|o| o.optional_value) {
                flag_of(o, name, &mut r, &mut operand_effect, &mut clear, &mut seen);
            } else if !flag_of(o, name, &mut r, &mut operand_effect, &mut clear, &mut seen)
                && spec.strict_options
                && o.is_none_or(|o| o.alias.is_none())
            {
                r.unknown_options.push(name.to_string());
            }
            i += 1;
            continue;
        }
        // A whole-word option: `-exec`, `-name`, `-jar`, `-fprint`.
        if t.len() > 2 {
            let o = spec.opt(t);
            if let Some(e) = o.and_then(|o| o.option.as_ref()) {
                seen.note(t);
                seen.note(canon_of(o, t));
                if i + 1 < args.len() {
                    i += 1;
                    note_option(&mut from_options, spec, t, r.targets.len());
                    r.targets.push(Target {
                        effect: e.clone(),
                        source: Source::Arg(i),
                    });
                }
                i += 1;
                continue;
            }
            if o.is_some_and(|o| o.takes_value) {
                seen.note(canon_of(o, t));
                i += 2;
                continue;
            }
            if o.is_some_and(|o| o.flag_direct) {
                flag_of(o, t, &mut r, &mut operand_effect, &mut clear, &mut seen);
                i += 1;
                continue;
            }
        }
        // A cluster of single-letter options: `-rf`, `-n5`, `-ofile`.
        let sign = t.as_bytes()[0];
        let body = &t[1..];
        let mut consumed_next = false;
        for (off, c) in body.char_indices() {
            let f = short_flag(&mut buf, sign, c);
            let rest_off = 1 + off + c.len_utf8();
            let has_rest = off + c.len_utf8() < body.len();
            let o = spec.opt(f);
            if let Some(e) = o.and_then(|o| o.option.as_ref()) {
                seen.note(f);
                seen.note(canon_of(o, f));
                let src = if has_rest {
                    Some(Source::Part(i, rest_off))
                } else if i + 1 < args.len() {
                    consumed_next = true;
                    Some(Source::Arg(i + 1))
                } else {
                    None
                };
                if let Some(source) = src {
                    note_option(&mut from_options, spec, f, r.targets.len());
                    r.targets.push(Target {
                        effect: e.clone(),
                        source,
                    });
                }
                break;
            }
            if o.is_some_and(|o| o.takes_value) {
                seen.note(canon_of(o, f));
                if !has_rest {
                    consumed_next = true;
                }
                break;
            }
            if o.is_some_and(|o| o.optional_value) {
                flag_of(o, f, &mut r, &mut operand_effect, &mut clear, &mut seen);
                break;
            }
            if !flag_of(o, f, &mut r, &mut operand_effect, &mut clear, &mut seen)
                && spec.strict_options
                && o.is_none_or(|o| o.alias.is_none())
            {
                r.unknown_options.push(f.to_string());
            }
        }
        i += if consumed_next { 2 } else { 1 };
    }
    let fixed_elsewhere = spec
        .fixed_unless
        .iter()
        .any(|o| seen.names.iter().any(|n| n == o));
    if !clear {
        r.effects
            .extend(spec.effects.iter().filter_map(|e| match e {
                Effect::Fixed(..) if fixed_elsewhere => None,
                Effect::Fixed(k, p) => {
                    r.targets.push(Target {
                        effect: (**k).clone(),
                        source: Source::Fixed(p.clone()),
                    });
                    None
                }
                other => Some(other.clone()),
            }));
    }
    // `option:NAME=EFFECT` flags: the values of NAME take EFFECT.
    if r.effects
        .iter()
        .any(|e| matches!(e, Effect::OptionValue(..)))
    {
        let mut overrides: Vec<(String, Effect)> = Vec::new();
        r.effects.retain(|e| match e {
            Effect::OptionValue(n, x) => {
                overrides.push((n.clone(), (**x).clone()));
                false
            }
            _ => true,
        });
        for (t, name) in &from_options {
            if let Some((_, e)) = overrides.iter().rev().find(|(n, _)| n == name) {
                r.targets[*t].effect = e.clone();
            }
        }
    }
    // The program operand (sed's script, grep's pattern).
    let mut rest = operands;
    if let Some(pe) = &spec.program_operand
        && !spec
            .program_unless
            .iter()
            .any(|u| seen.names.iter().any(|s| s == u))
        && let Some(pos) = rest.iter().position(|(_, dd)| !dd)
    {
        let (idx, _) = rest.remove(pos);
        r.targets.push(Target {
            effect: pe.clone(),
            source: Source::Arg(idx),
        });
    }
    // A setting given as two operands (`git config KEY VALUE`).
    if let Some(name) = &spec.config_operands
        && rest.len() >= 2
    {
        let (k, _) = rest.remove(0);
        let (v, _) = rest.remove(0);
        r.targets.push(Target {
            effect: Effect::Config(name.clone()),
            source: Source::Pair(k, v),
        });
    }
    // With its own effect after `--`, the last operand is the last one
    // before `--` (`gh repo clone R DIR -- GITFLAGS`).
    let n = if spec.after_dashdash.is_some() {
        rest.iter().filter(|(_, dd)| !dd).count()
    } else {
        rest.len()
    };
    for (pos, (idx, dd)) in rest.iter().enumerate() {
        r.operands.push(*idx);
        let text = args[*idx].text();
        let mut effect = if *dd {
            spec.after_dashdash
                .clone()
                .unwrap_or_else(|| operand_effect.clone())
        } else {
            operand_effect.clone()
        };
        if pos == 0
            && let Some(f) = &spec.first_operand
            && !*dd
        {
            effect = f.clone();
        }
        if n >= 2
            && pos + 1 == n
            && !(*dd && spec.after_dashdash.is_some())
            && let Some(l) = &spec.last_operand
        {
            effect = l.clone();
        }
        if let Some((k, _)) = text.split_once('=')
            && let Some(e) = spec.operand_keys.get(k)
        {
            r.targets.push(Target {
                effect: e.clone(),
                source: Source::Part(*idx, k.len() + 1),
            });
            continue;
        }
        if spec.remote_operands && is_remote(text) {
            r.targets.push(Target {
                effect: Effect::Url,
                source: Source::Arg(*idx),
            });
            continue;
        }
        if effect != Effect::None {
            r.targets.push(Target {
                effect,
                source: Source::Arg(*idx),
            });
        }
    }
    r
}

/// Notes that target `at` is the value of option `name`, as the entry's
/// `options` spells it (for `option:NAME=EFFECT` flags).
fn note_option<'s>(v: &mut Vec<(usize, &'s str)>, spec: &'s CommandSpec, name: &str, at: usize) {
    if let Some((k, _)) = spec.options.get_key_value(name) {
        v.push((at, k.as_str()));
    }
}

/// `host:path` or `user@host:path` (a `:` before any `/`), not `./a:b`.
fn is_remote(s: &str) -> bool {
    match (s.find(':'), s.find('/')) {
        (Some(c), Some(sl)) => c < sl && c > 0,
        (Some(c), None) => c > 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(t: &str) -> CommandSpec {
        #[derive(serde::Deserialize)]
        struct W {
            c: CommandSpec,
        }
        toml::from_str::<W>(&format!("[c]\n{t}")).unwrap().c
    }

    fn texts(r: &Reading, args: &[&str]) -> Vec<String> {
        r.targets
            .iter()
            .map(|t| {
                let v = match &t.source {
                    Source::Arg(i) => args[*i].to_string(),
                    Source::Part(i, o) => args[*i][*o..].to_string(),
                    Source::Fixed(p) => p.clone(),
                    Source::Pair(k, v) => format!("{}={}", args[*k], args[*v]),
                };
                format!("{}={v}", t.effect)
            })
            .collect()
    }

    #[test]
    fn reads_sed() {
        let s = spec(
            r#"names = ["sed"]
operands = "read"
program_operand = "code:sed"
program_unless = ["-e", "--expression", "-f", "--file"]
value_flags = ["-l"]
optional_value_flags = ["-i", "--in-place"]
options = { "-e" = "code:sed", "--expression" = "code:sed", "-f" = "script" }
flags = { "-i" = "operands:write", "--in-place" = "operands:write" }"#,
        );
        let a = ["-n", "1e id", "notes.txt"];
        assert_eq!(
            texts(&read_args(&s, &a), &a),
            ["code:sed=1e id", "read=notes.txt"]
        );
        let a = ["-i.bak", "s/a/b/", "f1", "f2"];
        assert_eq!(
            texts(&read_args(&s, &a), &a),
            ["code:sed=s/a/b/", "write=f1", "write=f2"]
        );
        let a = ["-e", "s/a/b/", "-e", "p", "f"];
        assert_eq!(
            texts(&read_args(&s, &a), &a),
            ["code:sed=s/a/b/", "code:sed=p", "read=f"]
        );
        let a = ["-es/a/b/", "--in-place", "f"];
        assert_eq!(
            texts(&read_args(&s, &a), &a),
            ["code:sed=s/a/b/", "write=f"]
        );
    }

    #[test]
    fn an_option_of_fixed_unless_drops_the_fixed_writes() {
        let s = spec(
            r#"names = ["pip download"]
operands = "none"
effects = ["network", "write:."]
fixed_unless = ["-d", "--dest"]
options = { "-d" = "write", "--dest" = "write" }"#,
        );
        for (a, want) in [
            (&["x"][..], &["write=."][..]),
            (&["-d", "dl", "x"], &["write=dl"]),
            (&["-ddl", "x"], &["write=dl"]),
            (&["--dest=dl", "x"], &["write=dl"]),
            (&["x", "--dest", "dl"], &["write=dl"]),
        ] {
            let r = read_args(&s, a);
            assert_eq!(texts(&r, a), want, "{a:?}");
            assert_eq!(r.effects, [Effect::Network], "{a:?}");
        }
    }

    #[test]
    fn with_after_dashdash_the_last_operand_is_the_last_before_it() {
        let s = spec(
            r#"names = ["gh repo clone"]
operands = "url"
last_operand = "write"
after_dashdash = "exec"
value_flags = ["-u"]"#,
        );
        let a = ["o/r", "dir", "--", "--depth", "1"];
        assert_eq!(
            texts(&read_args(&s, &a), &a),
            ["url=o/r", "write=dir", "exec=--depth", "exec=1"]
        );
        let a = ["o/r", "--", "--upload-pack=x"];
        assert_eq!(
            texts(&read_args(&s, &a), &a),
            ["url=o/r", "exec=--upload-pack=x"]
        );
        // without after_dashdash, as before: the last operand of all
        let s = spec(
            r#"names = ["git clone"]
operands = "url"
last_operand = "write""#,
        );
        let a = ["--", "https://h/r", "dir"];
        assert_eq!(
            texts(&read_args(&s, &a), &a),
            ["url=https://h/r", "write=dir"]
        );
    }

    #[test]
    fn reads_tar_old_style_and_subcommands() {
        let s = spec(
            r#"names = ["tar"]
old_style_flags = true
options = { "-f" = "write", "-C" = "chdir", "--to-command" = "exec", "-I" = "exec" }
flags = { "-x" = ["operands:none", "write:."] }"#,
        );
        let a = ["xzf", "a.tgz", "-C", "vendor"];
        assert_eq!(
            texts(&read_args(&s, &a), &a),
            ["write=.", "write=a.tgz", "chdir=vendor"]
        );
        let a = ["-cf", "out.tar", "--to-command=sh x", "src"];
        assert_eq!(
            texts(&read_args(&s, &a), &a),
            ["write=out.tar", "exec=sh x", "read=src"]
        );
        // `option:NAME=EFFECT`: listing and extracting read the archive,
        // whichever comes first; creating still writes it.
        let t = spec(
            r#"names = ["tar"]
old_style_flags = true
options = { "-f" = "write", "--file" = "write", "--index-file" = "write" }
flags = { "-x" = ["operands:none", "write:.", "option:-f=read", "option:--file=read"], "-t" = ["operands:none", "option:-f=read", "option:--file=read"] }"#,
        );
        for (a, want) in [
            (&["xzf", "a.tgz"][..], &["write=.", "read=a.tgz"][..]),
            (&["tzf", "a.tgz"], &["read=a.tgz"]),
            (&["-f", "a.tar", "-t"], &["read=a.tar"]),
            (&["--file=a.tar", "-x"], &["read=a.tar", "write=."]),
            (
                &["-t", "--index-file", "out.txt", "-f", "a.tar"],
                &["write=out.txt", "read=a.tar"],
            ),
            (&["cf", "a.tar", "src"], &["write=a.tar", "read=src"]),
        ] {
            let r = read_args(&t, a);
            assert_eq!(texts(&r, a), want, "{a:?}");
            assert!(r.effects.is_empty(), "{a:?}: {:?}", r.effects);
        }
        let g = spec(
            r#"names = ["git"]
subcommands = true
operands = "none"
options = { "-C" = "chdir", "-c" = "config:git" }
flags = { "-p" = "exec" }"#,
        );
        let a = ["-C", "repo", "-c", "core.pager=less", "log", "-p"];
        let r = read_args(&g, &a);
        assert_eq!(r.subcommand, Some(4));
        assert_eq!(texts(&r, &a), ["chdir=repo", "config:git=core.pager=less"]);
        let a = ["-ccore.fsmonitor=x", "status"];
        assert_eq!(
            texts(&read_args(&g, &a), &a),
            ["config:git=core.fsmonitor=x"]
        );
    }

    #[test]
    fn reads_cp_dd_scp() {
        let s = spec(
            r#"names = ["cp"]
operands = "read"
last_operand = "write"
options = { "-t" = "write" }"#,
        );
        let a = ["-r", "a", "b", "dest/"];
        assert_eq!(
            texts(&read_args(&s, &a), &a),
            ["read=a", "read=b", "write=dest/"]
        );
        let a = ["one"];
        assert_eq!(texts(&read_args(&s, &a), &a), ["read=one"]);
        let d = spec(
            r#"names = ["dd"]
operands = "none"
operand_keys = { if = "read", of = "write" }"#,
        );
        let a = ["if=/dev/zero", "of=disk.img", "bs=1M"];
        assert_eq!(
            texts(&read_args(&d, &a), &a),
            ["read=/dev/zero", "write=disk.img"]
        );
        let c = spec(
            r#"names = ["scp"]
operands = "read"
last_operand = "write"
remote_operands = true"#,
        );
        let a = ["-r", "build/", "user@host:/srv/app"];
        assert_eq!(
            texts(&read_args(&c, &a), &a),
            ["read=build/", "url=user@host:/srv/app"]
        );
    }
}
