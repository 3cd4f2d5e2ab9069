//! awk programs: which constructs run programs, write or read files.
//!
//! A tokenizer for awk (strings, regex literals told from division by the
//! token before them, comments, `\` line continuations) and a scan of the
//! tokens: `system(...)`, `cmd | getline`, `print | cmd` and `|&` run
//! programs; `print > file`, `print >> file` (outside parentheses) write;
//! `getline < file` reads; gawk's `@load` loads a library and `@include` a
//! source file. A string literal operand is reported with its text; a
//! computed one as unknown (`None`).

use super::sed::ScriptEffect;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Str(String),
    Num,
    Regex,
    Op(&'static str),
    Other(char),
    Newline,
    At(String),
}

fn tokens(src: &str) -> Result<Vec<Tok>, String> {
    let c: Vec<char> = src.chars().collect();
    let mut out: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        match ch {
            ' ' | '\t' | '\r' => i += 1,
            '\\' if c.get(i + 1) == Some(&'\n') => i += 2,
            '\n' => {
                out.push(Tok::Newline);
                i += 1;
            }
            '#' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '"' => {
                let mut s = String::new();
                i += 1;
                loop {
                    match c.get(i) {
                        None => return Err("unterminated string".into()),
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') => {
                            let e = *c.get(i + 1).ok_or("unterminated string")?;
                            match e {
                                'n' => s.push('\n'),
                                't' => s.push('\t'),
                                '\\' | '"' | '/' => s.push(e),
                                other => {
                                    s.push('\\');
                                    s.push(other);
                                }
                            }
                            i += 2;
                        }
                        Some(&x) => {
                            s.push(x);
                            i += 1;
                        }
                    }
                }
                out.push(Tok::Str(s));
            }
            '/' if regex_allowed(out.last()) => {
                i += 1;
                let mut in_class = false;
                loop {
                    match c.get(i) {
                        None | Some('\n') => return Err("unterminated regex".into()),
                        Some('\\') => i += 2,
                        Some('[') => {
                            in_class = true;
                            i += 1;
                        }
                        Some(']') => {
                            in_class = false;
                            i += 1;
                        }
                        Some('/') if !in_class => {
                            i += 1;
                            break;
                        }
                        Some(_) => i += 1,
                    }
                }
                out.push(Tok::Regex);
            }
            '@' => {
                let start = i + 1;
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                out.push(Tok::At(c[start..i].iter().collect()));
            }
            _ if ch.is_ascii_digit()
                || (ch == '.' && c.get(i + 1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '.') {
                    i += 1;
                }
                out.push(Tok::Num);
            }
            _ if ch.is_alphabetic() || ch == '_' => {
                let start = i;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                out.push(Tok::Ident(c[start..i].iter().collect()));
            }
            _ => {
                let two: String = c[i..(i + 2).min(c.len())].iter().collect();
                let op = match two.as_str() {
                    "||" => Some("||"),
                    "|&" => Some("|&"),
                    ">>" => Some(">>"),
                    ">=" => Some(">="),
                    "<=" => Some("<="),
                    "==" => Some("=="),
                    "!=" => Some("!="),
                    "&&" => Some("&&"),
                    "++" => Some("++"),
                    "--" => Some("--"),
                    _ => None,
                };
                if let Some(op) = op {
                    out.push(Tok::Op(op));
                    i += 2;
                } else {
                    out.push(match ch {
                        '|' => Tok::Op("|"),
                        '>' => Tok::Op(">"),
                        '<' => Tok::Op("<"),
                        other => Tok::Other(other),
                    });
                    i += 1;
                }
            }
        }
    }
    Ok(out)
}

/// A `/` starts a regex unless the token before it ends an operand.
fn regex_allowed(prev: Option<&Tok>) -> bool {
    !matches!(
        prev,
        Some(Tok::Ident(_) | Tok::Str(_) | Tok::Num | Tok::Regex | Tok::Other(')' | ']' | '$'))
            | Some(Tok::Op("++" | "--"))
    )
}

/// The effects of awk `program`.
pub fn effects(program: &str) -> Vec<ScriptEffect> {
    let toks = match tokens(program) {
        Ok(t) => t,
        Err(e) => return vec![ScriptEffect::Unknown(e)],
    };
    let mut out = Vec::new();
    let literal = |t: Option<&Tok>| match t {
        Some(Tok::Str(s)) => Some(s.clone()),
        _ => None,
    };
    // Inside a print/printf statement: the parenthesis depth at its start.
    let mut print_depth: Option<usize> = None;
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate() {
        match t {
            Tok::Other('(') => depth += 1,
            Tok::Other(')') => depth = depth.saturating_sub(1),
            Tok::Other(';' | '{' | '}') | Tok::Newline => print_depth = None,
            Tok::Ident(w) if w == "print" || w == "printf" => print_depth = Some(depth),
            Tok::Ident(w) if w == "system" && toks.get(k + 1) == Some(&Tok::Other('(')) => {
                // system("literal") with nothing else inside.
                let code = match (toks.get(k + 2), toks.get(k + 3)) {
                    (Some(Tok::Str(s)), Some(Tok::Other(')'))) => Some(s.clone()),
                    _ => None,
                };
                out.push(match code {
                    Some(c) => ScriptEffect::Exec(Some(c)),
                    None => ScriptEffect::Unknown("`system()` of a computed command".into()),
                });
            }
            Tok::Op("|") | Tok::Op("|&") => {
                if toks.get(k + 1) == Some(&Tok::Ident("getline".into())) {
                    // "cmd" | getline
                    out.push(match literal(k.checked_sub(1).and_then(|j| toks.get(j))) {
                        Some(c) => ScriptEffect::Exec(Some(c)),
                        None => ScriptEffect::Unknown(
                            "a command piped into `getline` is computed".into(),
                        ),
                    });
                } else {
                    out.push(match literal(toks.get(k + 1)) {
                        Some(c) => ScriptEffect::Exec(Some(c)),
                        None => ScriptEffect::Unknown("output piped to a computed command".into()),
                    });
                }
            }
            Tok::Op(">") | Tok::Op(">>") if print_depth == Some(depth) => {
                match literal(toks.get(k + 1)) {
                    Some(f) if f == "/dev/stdout" || f == "/dev/stderr" || f == "-" => {}
                    Some(f) => out.push(ScriptEffect::Write(f)),
                    None => out.push(ScriptEffect::Unknown(
                        "output to a file named at run time".into(),
                    )),
                }
            }
            Tok::Op("<")
                if (k >= 1 && toks[k - 1] == Tok::Ident("getline".into()))
                    || (k >= 2
                        && toks[k - 2] == Tok::Ident("getline".into())
                        && matches!(toks[k - 1], Tok::Ident(_))) =>
            {
                if let Some(f) = literal(toks.get(k + 1)) {
                    out.push(ScriptEffect::Read(f));
                }
            }
            Tok::At(w) if w == "include" => match literal(toks.get(k + 1)) {
                Some(f) => out.push(ScriptEffect::Script(f)),
                None => out.push(ScriptEffect::Unknown(
                    "`@include` of a computed file".into(),
                )),
            },
            Tok::At(w) if w == "load" => out.push(ScriptEffect::Unknown(
                "`@load` loads a compiled extension".into(),
            )),
            Tok::At(w) if w == "namespace" => {}
            Tok::At(w) => out.push(ScriptEffect::Unknown(format!("`@{w}`"))),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScriptEffect::*;

    #[test]
    fn harmless_programs_have_no_effects() {
        for p in [
            "{print $1}",
            "{ print $1 }",
            "NR > 1 { sum += $3 } END { print sum }",
            "/ERROR/ {count++} END {print count}",
            "length > 100",
            "/error|warn/ {print}",
            "{ if ($1 > 5) print $2 }",
            "{ print ($1 > 5) }",
            "BEGIN { FS = \",\" } { print $2 }",
            "{ a = $1 / 2; print a }",
            "$1 ~ /^#/ { next } { print }",
            "{ printf \"%s\\n\", $1 }",
            "{ print $1 > \"/dev/stderr\" }",
            "{ x = $2 || $3; print x }",
            "{ gsub(/a|b/, \"c\"); print }",
            "# comment with system(\"x\")\n{print}",
            "{ print \"a | b > c\" }",
        ] {
            assert_eq!(effects(p), vec![], "{p}");
        }
    }

    #[test]
    fn programs_that_run_write_or_read() {
        assert_eq!(
            effects("BEGIN{system(\"rm -rf ~\")}"),
            vec![Exec(Some("rm -rf ~".into()))]
        );
        assert!(matches!(effects("{system($0)}")[..], [Unknown(_)]));
        assert_eq!(
            effects("BEGIN { \"date\" | getline d; print d }"),
            vec![Exec(Some("date".into()))]
        );
        assert_eq!(effects("{ print | \"sh\" }"), vec![Exec(Some("sh".into()))]);
        assert_eq!(
            effects("{ print $1 > \"out.txt\" }"),
            vec![Write("out.txt".into())]
        );
        assert_eq!(
            effects("{ print >> \"/etc/passwd\" }"),
            vec![Write("/etc/passwd".into())]
        );
        assert!(matches!(effects("{ print > $2 }")[..], [Unknown(_)]));
        assert_eq!(
            effects("BEGIN { while ((getline l < \"/etc/shadow\") > 0) print l }"),
            vec![Read("/etc/shadow".into())]
        );
        assert_eq!(
            effects("@include \"lib.awk\"\n{print}"),
            vec![Script("lib.awk".into())]
        );
        assert!(matches!(effects("@load \"filefuncs\"")[..], [Unknown(_)]));
        assert_eq!(
            effects("{ print |& \"cat\" }"),
            vec![Exec(Some("cat".into()))]
        );
        assert!(matches!(effects("{ print \"x")[..], [Unknown(_)]));
    }
}
