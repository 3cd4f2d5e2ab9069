//! Stage 2, normalise: words and options as the shell and the command will
//! read them. Brace expansion, quote and escape removal (ANSI-C quoting
//! decoded), expansions rendered as `$NAME`/`$(...)` and marked dynamic
//! (the code inside a substitution goes back to [`super::parse`]); option
//! clusters split and long aliases mapped to canonical flags
//! (`[[gate.shell.commands]]`); operands that look like paths normalised
//! lexically; command names by basename.

use std::collections::BTreeSet;

use brush_parser::word::{
    self, BraceExpressionMember, BraceExpressionOrText, Parameter, ParameterExpr, SpecialParameter,
    WordPiece, WordPieceWithSource,
};

use super::state::Var;
use super::{Arg, Parsed, Scope, Walker, excerpt};
use crate::gate::types::FindingKind;

impl Walker<'_> {
    /// Expands a raw word as the shell does in the current state: brace
    /// expansion, then quote removal, known variables substituted (an
    /// unquoted value split into fields on blanks, as bash does with the
    /// default IFS), unknown expansions rendered `$NAME`/`$(...)` and
    /// marked dynamic. One word may give several arguments, or none.
    pub(super) fn expand_word(&mut self, raw: &str, scope: &Scope) -> Vec<Arg> {
        let mut out = Vec::new();
        self.expand_word_into(raw, scope, &mut out);
        out
    }

    /// [`Self::expand_word`], appending to `out`.
    pub(super) fn expand_word_into(&mut self, raw: &str, scope: &Scope, out: &mut Vec<Arg>) {
        // A word holding code is not multiplied: its code is walked once.
        if raw.contains('{')
            && !has_substitution(raw)
            && let Ok(Some(pieces)) = word::parse_brace_expansions(raw, &self.opts)
        {
            let mut words = vec![String::new()];
            let cap = self.cfg.limits.max_brace_expansion;
            if brace_product(&pieces, &mut words, cap) {
                for w in &words {
                    self.fields_into(w, scope, true, out);
                }
                return;
            }
            let d = format!(
                "brace expansion of `{}` gives over {cap} words",
                excerpt(raw)
            );
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
        }
        self.fields_into(raw, scope, true, out);
    }

    /// A word as one argument, without field splitting (assignment values,
    /// redirection targets, here-strings, `case` words), walking any
    /// command substitution inside it.
    pub(super) fn word(&mut self, raw: &str, scope: &Scope) -> Arg {
        if let Some(text) = plain_word(raw) {
            return plain_arg(raw, text);
        }
        let mut f = self.fields(raw, scope, false);
        match f.len() {
            1 => f.remove(0),
            0 => Arg::literal(""),
            _ => {
                let mut a = f.remove(0);
                for x in f {
                    a.text.push(' ');
                    a.text.push_str(&x.text);
                    a.dynamic |= x.dynamic;
                    a.glob |= x.glob;
                }
                a
            }
        }
    }

    fn fields(&mut self, raw: &str, scope: &Scope, split: bool) -> Vec<Arg> {
        let mut out = Vec::new();
        self.fields_into(raw, scope, split, &mut out);
        out
    }

    /// The fields of `raw`, appended to `out`.
    fn fields_into(&mut self, raw: &str, scope: &Scope, split: bool, out: &mut Vec<Arg>) {
        // A word of plain characters (or one simple double-quoted string) is
        // its own text: no quoting, escape, expansion or tilde to resolve.
        if let Some(text) = plain_word(raw) {
            out.push(plain_arg(raw, text));
            return;
        }
        let mut f = Fields::new(split);
        match word::parse(raw, &self.opts) {
            Ok(pieces) => {
                let mut unquoted = String::new();
                self.pieces(&pieces, raw, scope, &mut f, &mut unquoted, false);
                if unquoted.contains("$[") || unquoted.contains("$(") || unquoted.contains("${") {
                    let d = format!("unsupported expansion syntax in `{}`", excerpt(raw));
                    self.check(|c| &c.parse_error, FindingKind::Parse, &d);
                }
            }
            Err(e) => {
                let d = format!("`{}`: {e}", excerpt(raw));
                self.check(|c| &c.parse_error, FindingKind::Parse, &d);
                f.dynamic(raw);
            }
        }
        out.extend(f.finish());
    }

    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        raw: &str,
        scope: &Scope,
        f: &mut Fields,
        unquoted: &mut String,
        quoted: bool,
    ) {
        for p in pieces {
            match &p.piece {
                WordPiece::Text(t) => {
                    f.lit(t, !quoted);
                    if !quoted {
                        unquoted.push_str(t);
                    }
                }
                WordPiece::SingleQuotedText(t) => f.lit(t, false),
                WordPiece::AnsiCQuotedText(t) => f.lit(&ansi_c(t), false),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    f.touch();
                    self.pieces(inner, raw, scope, f, unquoted, true);
                }
                WordPiece::TildePrefix(user) => {
                    f.lit("~", false);
                    f.lit(user, false);
                }
                WordPiece::EscapeSequence(e) => {
                    let rest = e.strip_prefix('\\').unwrap_or(e);
                    if rest != "\n" {
                        f.lit(rest, false);
                    }
                }
                WordPiece::ParameterExpansion(expr) => {
                    let src = raw.get(p.start_index..p.end_index).unwrap_or("${?}");
                    // Operands of `${x:-...}` etc. may hold substitutions.
                    if let Some(inner) = src.strip_prefix("${").and_then(|s| s.strip_suffix('}'))
                        && has_substitution(inner)
                    {
                        self.word(&format!("\"{inner}\""), scope);
                        f.dynamic(&render_parameter(expr, src));
                        continue;
                    }
                    match self.parameter_value(expr, scope) {
                        Some(Value::Text(v)) => f.value(&v, quoted),
                        Some(Value::Pattern(v)) => {
                            f.value(&v, quoted);
                            f.cur.glob = true;
                        }
                        Some(Value::Word(w)) => {
                            // A default or alternative word, expanded in the
                            // same quoting.
                            match word::parse(&w, &self.opts) {
                                Ok(inner) => {
                                    let mut ignored = String::new();
                                    self.pieces(&inner, &w, scope, f, &mut ignored, quoted)
                                }
                                Err(_) => f.dynamic(&render_parameter(expr, src)),
                            }
                        }
                        None => f.dynamic(&render_parameter(expr, src)),
                    }
                }
                WordPiece::CommandSubstitution(code) => {
                    f.dynamic("$(...)");
                    self.found_substitution(code, &scope.deeper());
                }
                WordPiece::BackquotedCommandSubstitution(code) => {
                    f.dynamic("$(...)");
                    self.found_substitution(&unescape_backquoted(code), &scope.deeper());
                }
                WordPiece::ArithmeticExpression(e) => {
                    f.dynamic("$((...))");
                    self.arithmetic(&e.value, &scope.deeper());
                }
            }
        }
    }

    /// The value of a parameter expansion when the state knows it: the
    /// variable's text, or the default/alternative word to expand.
    fn parameter_value(&self, expr: &ParameterExpr, _scope: &Scope) -> Option<Value> {
        use brush_parser::word::ParameterTestType as T;
        // `$HOME` that the line does not set is the home directory, which
        // the path checks resolve as `~` (attack report 2, item 4:
        // `cat $HOME/.ssh/id_rsa` was a dynamic path, unchecked for reads).
        static HOME: std::sync::LazyLock<Var> = std::sync::LazyLock::new(|| Var::Known {
            value: "~".into(),
            exported: true,
        });
        let var = |p: &Parameter| match p {
            Parameter::Named(n) => match self.st.vars.get(n.as_str()) {
                None if n == "HOME" => Some(&*HOME),
                v => v,
            },
            _ => None,
        };
        match expr {
            ParameterExpr::Parameter {
                parameter,
                indirect: false,
            } => match var(parameter)? {
                Var::Known { value, .. } => Some(Value::Text(value.clone())),
                Var::Pattern(p) => Some(Value::Pattern(p.clone())),
                Var::Unset => Some(Value::Text(String::new())),
                Var::Unknown => None,
            },
            ParameterExpr::UseDefaultValues {
                parameter,
                indirect: false,
                test_type,
                default_value,
            } => {
                let use_default = match (var(parameter)?, test_type) {
                    (Var::Unknown | Var::Pattern(_), _) => return None,
                    (Var::Unset, _) => true,
                    (Var::Known { value, .. }, T::UnsetOrNull) => value.is_empty(),
                    (Var::Known { .. }, T::Unset) => false,
                };
                if use_default {
                    Some(Value::Word(default_value.clone().unwrap_or_default()))
                } else {
                    match var(parameter)? {
                        Var::Known { value, .. } => Some(Value::Text(value.clone())),
                        _ => None,
                    }
                }
            }
            ParameterExpr::UseAlternativeValue {
                parameter,
                indirect: false,
                test_type,
                alternative_value,
            } => {
                let set = match (var(parameter)?, test_type) {
                    (Var::Unknown | Var::Pattern(_), _) => return None,
                    (Var::Unset, _) => false,
                    (Var::Known { value, .. }, T::UnsetOrNull) => !value.is_empty(),
                    (Var::Known { .. }, T::Unset) => true,
                };
                if set {
                    Some(Value::Word(alternative_value.clone().unwrap_or_default()))
                } else {
                    Some(Value::Text(String::new()))
                }
            }
            _ => None,
        }
    }

    pub(super) fn parse_args<'a>(&self, name: &str, rest: &'a [Arg]) -> Parsed<'a> {
        let spec = self.cfg.command(name);
        let alias = |f: &str| -> String {
            spec.and_then(|s| s.flag_aliases.get(f))
                .cloned()
                .unwrap_or_else(|| f.to_owned())
        };
        let takes_value = |f: &str, canon: &str| -> bool {
            spec.is_some_and(|s| {
                s.value_flags.iter().any(|v| v == f || v == canon)
                    || s.options.contains_key(f)
                    || s.options.contains_key(canon)
            })
        };
        let mut p = Parsed {
            flags: BTreeSet::new(),
            operands: Vec::new(),
            unknown_flags: false,
            values: Vec::new(),
        };
        let mut i = 0;
        let mut only_operands = false;
        while i < rest.len() {
            let a = &rest[i];
            i += 1;
            if a.dynamic && !only_operands {
                p.unknown_flags = true;
            }
            if only_operands || a.text == "-" || !a.text.starts_with('-') {
                p.operands.push(a);
                continue;
            }
            if a.text == "--" {
                only_operands = true;
                continue;
            }
            if let Some(long) = a.text.strip_prefix("--") {
                let (fname, attached) = match long.split_once('=') {
                    Some((n, v)) => (format!("--{n}"), Some(v)),
                    None => (a.text.to_string(), None),
                };
                let canon = alias(&fname);
                if let Some(v) = attached {
                    p.values.push((
                        canon.clone(),
                        Arg {
                            text: v.into(),
                            ..a.clone()
                        },
                    ));
                } else if takes_value(&fname, &canon) {
                    if let Some(v) = rest.get(i) {
                        p.values.push((canon.clone(), v.clone()));
                    }
                    i += 1;
                }
                p.flags.insert(canon);
                continue;
            }
            let chars: Vec<char> = a.text[1..].chars().collect();
            for (k, c) in chars.iter().enumerate() {
                let f = format!("-{c}");
                let canon = alias(&f);
                let needs = takes_value(&f, &canon);
                if needs {
                    if k + 1 == chars.len() {
                        if let Some(v) = rest.get(i) {
                            p.values.push((canon.clone(), v.clone()));
                        }
                        i += 1;
                    } else {
                        let off: usize =
                            1 + chars[..=k].iter().map(|c| c.len_utf8()).sum::<usize>();
                        p.values.push((
                            canon.clone(),
                            Arg {
                                text: a.text[off..].into(),
                                ..a.clone()
                            },
                        ));
                    }
                    p.flags.insert(canon);
                    break;
                }
                p.flags.insert(canon);
            }
        }
        p
    }
}

/// What a parameter expansion gives, when known.
enum Value {
    /// This text.
    Text(String),
    /// A file name this glob pattern matches.
    Pattern(String),
    /// This word, to be expanded (a `${x:-default}` default).
    Word(String),
}

/// Builds the fields (arguments) one word expands to.
struct Fields {
    out: Vec<Arg>,
    cur: Arg,
    /// The current field exists even if empty (quotes were seen).
    started: bool,
    /// Unquoted expansions are split into fields.
    split: bool,
}

impl Fields {
    fn new(split: bool) -> Fields {
        Fields {
            out: Vec::new(),
            cur: Arg::literal(""),
            started: false,
            split,
        }
    }

    /// Marks the field as present (an empty quoted string is one field).
    fn touch(&mut self) {
        self.started = true;
    }

    /// Literal text; `unquoted` text may hold glob characters.
    fn lit(&mut self, t: &str, unquoted: bool) {
        self.cur.text.push_str(t);
        if unquoted && has_glob(t) {
            self.cur.glob = true;
        }
        self.started = true;
    }

    /// A variable's value: kept whole in quotes, split on blanks outside.
    fn value(&mut self, v: &str, quoted: bool) {
        if quoted || !self.split {
            self.cur.text.push_str(v);
            self.started = true;
            return;
        }
        for c in v.chars() {
            if matches!(c, ' ' | '\t' | '\n') {
                if self.started {
                    let done = std::mem::replace(&mut self.cur, Arg::literal(""));
                    self.out.push(done);
                    self.started = false;
                }
            } else {
                self.cur.text.push(c);
                if matches!(c, '*' | '?') || (c == ']' && self.cur.text.contains('[')) {
                    self.cur.glob = true;
                }
                self.started = true;
            }
        }
    }

    /// An expansion only known at run time, rendered.
    fn dynamic(&mut self, render: &str) {
        self.cur.text.push_str(render);
        self.cur.dynamic = true;
        self.started = true;
    }

    fn finish(mut self) -> Vec<Arg> {
        if self.started {
            self.out.push(self.cur);
        }
        self.out
    }
}

/// Splits an option argument; returns how many arguments it used and, for a
/// flag in `value_flags`, the flag and its value.
pub(super) fn option_value(
    args: &[Arg],
    value_flags: &[String],
    code_flags: &[String],
) -> (usize, Option<(String, Arg)>) {
    let a = &args[0];
    let takes = |f: &str| value_flags.iter().any(|v| v == f) || code_flags.iter().any(|v| v == f);
    if a.text.starts_with("--") {
        if let Some((n, v)) = a.text.split_once('=') {
            let value = Arg {
                text: v.into(),
                ..a.clone()
            };
            return (1, takes(n).then(|| (n.to_owned(), value)));
        }
        if takes(&a.text) {
            return match args.get(1) {
                Some(v) => (2, Some((a.text.to_string(), v.clone()))),
                None => (1, None),
            };
        }
        return (1, None);
    }
    // Whole-word option (`-o`, `+O`, or a single-dash long option).
    if takes(&a.text) {
        return match args.get(1) {
            Some(v) => (2, Some((a.text.to_string(), v.clone()))),
            None => (1, None),
        };
    }
    let sign = &a.text[..1];
    let body: Vec<char> = a.text[1..].chars().collect();
    for (k, c) in body.iter().enumerate() {
        let f = format!("{sign}{c}");
        if takes(&f) {
            if k + 1 < body.len() {
                let value = Arg {
                    text: body[k + 1..].iter().collect(),
                    ..a.clone()
                };
                return (1, Some((f, value)));
            }
            return match args.get(1) {
                Some(v) => (2, Some((f, v.clone()))),
                None => (1, None),
            };
        }
    }
    (1, None)
}

/// The single-letter flags of a cluster (`-lc` -> `-l`, `-c`), or the
/// argument itself for a long option.
pub(super) fn flags_of(arg: &str) -> Vec<String> {
    if arg.starts_with("--") || arg.len() < 2 {
        return vec![arg.to_owned()];
    }
    let sign = &arg[..1];
    arg[1..].chars().map(|c| format!("{sign}{c}")).collect()
}

/// The text of a word that needs no word parsing: plain characters only
/// (a `~` not in tilde-prefix position), or one double-quoted string without
/// `$`, backquote, backslash or `!` inside. `None`: parse it.
/// The argument a [`plain_word`] gives.
fn plain_arg(raw: &str, text: &str) -> Arg {
    let mut a = Arg::literal(text);
    a.glob = !raw.starts_with('"') && has_glob(text);
    a
}

/// The bytes a [`plain_word`] is made of (a `~` aside).
const PLAIN_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'_' | b'.' | b'/' | b',' | b':' | b'=' | b'+' | b'@' | b'%' | b'^'
            );
        c += 1;
    }
    t
};

fn plain_word(raw: &str) -> Option<&str> {
    let plain = |b: u8| PLAIN_BYTES[b as usize];
    let bytes = raw.as_bytes();
    if bytes.is_empty() {
        return None;
    }
    let ok = bytes
        .iter()
        .enumerate()
        .all(|(i, &b)| plain(b) || (b == b'~' && i > 0 && !matches!(bytes[i - 1], b'=' | b':')));
    if ok {
        return Some(raw);
    }
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if inner
        .bytes()
        .all(|b| !matches!(b, b'"' | b'$' | b'`' | b'\\' | b'!'))
    {
        return Some(inner);
    }
    None
}

/// Whether text holds a glob pattern: `*`, `?`, or a `[...]` class.
pub(super) fn has_glob(t: &str) -> bool {
    // Over bytes: the characters are ASCII, and no byte of a multi-byte
    // character is.
    let b = t.as_bytes();
    b.iter().any(|&c| c == b'*' || c == b'?')
        || b.iter()
            .position(|&c| c == b'[')
            .is_some_and(|i| b[i + 1..].contains(&b']'))
}

pub(super) fn basename(s: &str) -> &str {
    let t = s.trim_end_matches('/');
    // Over bytes: `/` is ASCII, and no byte of a multi-byte character is.
    match t.bytes().rposition(|c| c == b'/') {
        Some(i) => &t[i + 1..],
        None if t.is_empty() => s,
        None => t,
    }
}

pub(super) fn has_substitution(s: &str) -> bool {
    s.contains("$(") || s.contains('`') || s.contains("${") || s.contains("<(") || s.contains(">(")
}

/// Lexical normalisation of an operand that looks like a path: repeated
/// and trailing slashes, `.` components and `..` components are resolved.
/// A leading `~user` or `$VAR` component is kept and never popped. For
/// `key=/path` (as in `dd of=/dev/sda`) the value is normalised.
pub(super) fn normalize_operand(s: &str) -> String {
    if let Some((k, v)) = s.split_once('=')
        && !k.is_empty()
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return format!("{k}={}", normalize_operand(v));
    }
    let looks_like_path =
        s.contains('/') || s.starts_with('~') || s.starts_with('$') || s.starts_with('.');
    if !looks_like_path {
        return s.to_owned();
    }
    let absolute = s.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    let mut anchored = false;
    for (i, comp) in s.split('/').enumerate() {
        match comp {
            "" | "." => {}
            ".." => {
                let top = parts.last().copied();
                match top {
                    Some("..") | None if !absolute => parts.push(".."),
                    None => {}
                    Some(_) if anchored && parts.len() == 1 => parts.push(".."),
                    Some(_) => {
                        parts.pop();
                    }
                }
            }
            c => {
                if i == 0 && (c.starts_with('~') || c.starts_with('$')) {
                    anchored = true;
                }
                parts.push(c);
            }
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
}

fn render_parameter(expr: &ParameterExpr, src: &str) -> String {
    let simple = match expr {
        ParameterExpr::Parameter {
            parameter,
            indirect: false,
        } => Some(parameter),
        _ => None,
    };
    match simple {
        Some(Parameter::Named(n)) => format!("${n}"),
        Some(Parameter::Positional(k)) => format!("${k}"),
        Some(Parameter::Special(sp)) => match sp {
            SpecialParameter::AllPositionalParameters { concatenate: true } => "$*".into(),
            SpecialParameter::AllPositionalParameters { concatenate: false } => "$@".into(),
            SpecialParameter::PositionalParameterCount => "$#".into(),
            SpecialParameter::LastExitStatus => "$?".into(),
            SpecialParameter::CurrentOptionFlags => "$-".into(),
            SpecialParameter::ProcessId => "$$".into(),
            SpecialParameter::LastBackgroundProcessId => "$!".into(),
            SpecialParameter::ShellName => "$0".into(),
        },
        _ => src.to_owned(),
    }
}

/// Removes the backslashes that backquote substitution removes.
fn unescape_backquoted(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && matches!(n, '\\' | '`' | '$')
        {
            out.push(n);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Decodes the body of a `$'...'` string.
fn ansi_c(body: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let hex =
        |s: &[char]| -> Option<u32> { u32::from_str_radix(&s.iter().collect::<String>(), 16).ok() };
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        let simple = match e {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let take = |i: &mut usize, max: usize, ok: fn(&char) -> bool| -> Vec<char> {
            let start = *i;
            while *i < chars.len() && *i - start < max && ok(&chars[*i]) {
                *i += 1;
            }
            chars[start..*i].to_vec()
        };
        match e {
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let digits = take(&mut i, max, char::is_ascii_hexdigit);
                match hex(&digits).and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => {
                        out.push('\\');
                        out.push(e);
                        out.extend(digits);
                    }
                }
            }
            '0'..='7' => {
                i -= 1;
                let digits = take(&mut i, 3, |c| ('0'..='7').contains(c));
                let v = u32::from_str_radix(&digits.iter().collect::<String>(), 8).unwrap_or(0);
                out.push(char::from_u32(v & 0xff).unwrap_or('\u{fffd}'));
            }
            'c' if i < chars.len() => {
                let ctl = (chars[i] as u32) & 0x1f;
                i += 1;
                out.push(char::from_u32(ctl).unwrap_or('\u{fffd}'));
            }
            _ => {
                out.push('\\');
                out.push(e);
            }
        }
    }
    out
}

/// Appends the expansions of brace `pieces` to every prefix in `out`;
/// returns false when more than `cap` words would result.
fn brace_product(pieces: &[BraceExpressionOrText], out: &mut Vec<String>, cap: usize) -> bool {
    for piece in pieces {
        match piece {
            BraceExpressionOrText::Text(t) => {
                for o in out.iter_mut() {
                    o.push_str(t);
                }
            }
            BraceExpressionOrText::Expr(members) => {
                let mut alternatives: Vec<String> = Vec::new();
                for m in members {
                    match m {
                        BraceExpressionMember::Child(children) => {
                            let mut sub = vec![String::new()];
                            if !brace_product(children, &mut sub, cap) {
                                return false;
                            }
                            alternatives.extend(sub);
                        }
                        // Sequences: the endpoints are enough to judge.
                        BraceExpressionMember::NumberSequence { start, end, .. } => {
                            alternatives.push(start.to_string());
                            alternatives.push(end.to_string());
                        }
                        BraceExpressionMember::CharSequence { start, end, .. } => {
                            alternatives.push(start.to_string());
                            alternatives.push(end.to_string());
                        }
                    }
                }
                if out.len().saturating_mul(alternatives.len()) > cap {
                    return false;
                }
                let mut next = Vec::with_capacity(out.len() * alternatives.len());
                for o in out.iter() {
                    for a in &alternatives {
                        next.push(format!("{o}{a}"));
                    }
                }
                *out = next;
            }
        }
    }
    true
}

#[cfg(test)]
mod plain_word_tests {
    use super::plain_word;

    #[test]
    fn only_words_without_shell_syntax_skip_the_word_parser() {
        assert_eq!(plain_word("build.log"), Some("build.log"));
        assert_eq!(plain_word("HEAD~1"), Some("HEAD~1"));
        assert_eq!(plain_word("\"warning: x\""), Some("warning: x"));
        for w in [
            "~",
            "~/x",
            "a=~/x",
            "PATH=a:~/b",
            "$HOME",
            "\"$x\"",
            "'a'",
            "a\\b",
            "\"a\\\"b\"",
            "`x`",
            "*{a,b}",
            "\"\"x",
            "",
            "\"!x\"",
            "é",
        ] {
            assert_eq!(plain_word(w), None, "{w}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_paths_lexically() {
        for (i, o) in [
            ("/", "/"),
            ("//", "/"),
            ("/./", "/"),
            ("/..", "/"),
            ("/tmp/../", "/"),
            ("/usr/local/..", "/usr"),
            ("/*", "/*"),
            ("~/", "~"),
            ("~/..", "~/.."),
            ("$HOME/.", "$HOME"),
            ("./", "."),
            ("./*", "*"),
            ("a/..", "."),
            ("../..", "../.."),
            ("of=/dev//sda", "of=/dev/sda"),
            ("build/out", "build/out"),
            ("build/../..", ".."),
            ("x", "x"),
        ] {
            assert_eq!(normalize_operand(i), o, "{i}");
        }
    }

    #[test]
    fn decodes_ansi_c() {
        assert_eq!(ansi_c(r"\x72m"), "rm");
        assert_eq!(ansi_c(r"\162\155"), "rm");
        assert_eq!(ansi_c(r"\u0072m\n"), "rm\n");
        assert_eq!(ansi_c(r"a\'b"), "a'b");
    }

    #[test]
    fn basenames() {
        assert_eq!(basename("/bin/rm"), "rm");
        assert_eq!(basename("rm"), "rm");
        assert_eq!(basename("/"), "/");
        assert_eq!(basename("./x/"), "x");
    }

    #[test]
    fn splits_flag_clusters() {
        assert_eq!(flags_of("-lc"), ["-l", "-c"]);
        assert_eq!(flags_of("--login"), ["--login"]);
    }
}
