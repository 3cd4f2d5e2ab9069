//! sed scripts: which commands run programs, write or read files.
//!
//! A small reader for GNU sed's script syntax (addresses, `{}` blocks,
//! labels, `a`/`i`/`c` text, `s///` and `y///` with any delimiter and
//! escapes, flags). It reports the effects: `e COMMAND` and the `s///e`
//! flag run a program; `w FILE`, `W FILE` and the `s///w FILE` flag write a
//! file; `r FILE` and `R FILE` read one. A script it cannot read is
//! reported as such (the caller asks).

/// One effect found in a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptEffect {
    /// Runs a shell command; `None` when the command is the data being
    /// edited (`e` alone, `s///e`).
    Exec(Option<String>),
    /// Writes this file.
    Write(String),
    /// Reads this file.
    Read(String),
    /// Loads code from this file (awk `@include`, `-f` is the caller's).
    Script(String),
    /// Something the reader does not know (with a reason).
    Unknown(String),
}

/// The effects of sed `script`.
pub fn effects(script: &str) -> Vec<ScriptEffect> {
    let mut p = Reader {
        s: script.as_bytes(),
        i: 0,
        out: Vec::new(),
    };
    if let Err(e) = p.script() {
        p.out.push(ScriptEffect::Unknown(e));
    }
    p.out
}

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
    out: Vec<ScriptEffect>,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_blank(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn skip_separators(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b';')) {
            self.i += 1;
        }
    }

    /// The rest of the line (a file name or command), trimmed at the start.
    fn rest_of_line(&mut self) -> String {
        self.skip_blank();
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == b'\n' {
                break;
            }
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    /// A regex or replacement up to the delimiter `d` (escapes honoured).
    fn delimited(&mut self, d: u8) -> Result<(), String> {
        loop {
            match self.peek() {
                None => return Err("unterminated `s`, `y` or address".into()),
                Some(b'\\') => self.i += 2,
                Some(b'\n') if d != b'\n' => {
                    return Err("newline inside a regex".into());
                }
                Some(c) if c == d => {
                    self.i += 1;
                    return Ok(());
                }
                Some(_) => self.i += 1,
            }
        }
    }

    fn address(&mut self) -> Result<(), String> {
        match self.peek() {
            Some(b'0'..=b'9') => {
                while matches!(self.peek(), Some(b'0'..=b'9' | b'~')) {
                    self.i += 1;
                }
            }
            Some(b'$') => self.i += 1,
            Some(b'/') => {
                self.i += 1;
                self.delimited(b'/')?;
                while matches!(self.peek(), Some(b'I' | b'M')) {
                    self.i += 1;
                }
            }
            Some(b'\\') => {
                self.i += 1;
                let d = self.peek().ok_or("address delimiter missing")?;
                self.i += 1;
                self.delimited(d)?;
                while matches!(self.peek(), Some(b'I' | b'M')) {
                    self.i += 1;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn script(&mut self) -> Result<(), String> {
        loop {
            self.skip_separators();
            let Some(_) = self.peek() else { return Ok(()) };
            // Addresses: addr1[,addr2][!]
            self.address()?;
            self.skip_blank();
            if self.peek() == Some(b',') {
                self.i += 1;
                self.skip_blank();
                if matches!(self.peek(), Some(b'+' | b'~')) {
                    self.i += 1;
                }
                self.address()?;
            }
            self.skip_blank();
            while self.peek() == Some(b'!') {
                self.i += 1;
                self.skip_blank();
            }
            let Some(cmd) = self.peek() else {
                return Err("address without a command".into());
            };
            self.i += 1;
            match cmd {
                b'{' | b'}' | b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'n' | b'N'
                | b'p' | b'P' | b'x' | b'z' | b'F' => {}
                b'#' | b':' | b'b' | b't' | b'T' | b'v' => {
                    // Comment, label, branch: to the end of the line (a
                    // `;` also ends a branch label in GNU sed).
                    while let Some(c) = self.peek() {
                        if c == b'\n' || (cmd != b'#' && cmd != b':' && c == b';') {
                            break;
                        }
                        self.i += 1;
                    }
                }
                b'q' | b'Q' | b'l' | b'L' => {
                    self.skip_blank();
                    while matches!(self.peek(), Some(b'0'..=b'9')) {
                        self.i += 1;
                    }
                }
                b'a' | b'i' | b'c' => {
                    // Text to the end of the line; `\` continues it.
                    loop {
                        match self.peek() {
                            None => break,
                            Some(b'\\') => self.i += 2,
                            Some(b'\n') => break,
                            Some(_) => self.i += 1,
                        }
                    }
                }
                b'r' | b'R' => {
                    let f = self.rest_of_line();
                    self.out.push(ScriptEffect::Read(f));
                }
                b'w' | b'W' => {
                    let f = self.rest_of_line();
                    self.write(f);
                }
                b'e' => {
                    let c = self.rest_of_line();
                    let c = if c.trim().is_empty() { None } else { Some(c) };
                    self.out.push(ScriptEffect::Exec(c));
                }
                b's' => {
                    let d = self.peek().ok_or("`s` without a delimiter")?;
                    if d == b'\n' || d == b'\\' {
                        return Err("bad `s` delimiter".into());
                    }
                    self.i += 1;
                    self.delimited(d)?;
                    self.delimited(d)?;
                    // Flags.
                    loop {
                        match self.peek() {
                            Some(b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9') => {
                                self.i += 1
                            }
                            Some(b'e') => {
                                self.i += 1;
                                self.out.push(ScriptEffect::Exec(None));
                            }
                            Some(b'w') => {
                                self.i += 1;
                                let f = self.rest_of_line();
                                self.write(f);
                                break;
                            }
                            _ => break,
                        }
                    }
                }
                b'y' => {
                    let d = self.peek().ok_or("`y` without a delimiter")?;
                    self.i += 1;
                    self.delimited(d)?;
                    self.delimited(d)?;
                }
                other => {
                    return Err(format!("unknown sed command `{}`", other as char));
                }
            }
        }
    }

    fn write(&mut self, f: String) {
        if !matches!(f.as_str(), "/dev/stdout" | "/dev/stderr") {
            self.out.push(ScriptEffect::Write(f));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScriptEffect::*;

    #[test]
    fn harmless_scripts_have_no_effects() {
        for s in [
            "s/foo/bar/g",
            "1,20p",
            "/fn main/,/^}/p",
            "s/e/E/g",
            "s|/usr|/opt|",
            "/^$/d",
            "s/^ *//; s/ *$//",
            "10q",
            "$!N;s/\\n/ /",
            ":a;N;$!ba;s/\\n/ /g",
            "y/abc/xyz/",
            "/start/,+3d",
            "0~2p",
            "s/x/\\/w/",
            "/w/d",
            "a hello world",
            "1i\\\nheader",
            "s/a/b/2",
            "\\,foo,d",
        ] {
            assert_eq!(effects(s), vec![], "{s}");
        }
    }

    #[test]
    fn commands_that_run_write_or_read() {
        assert_eq!(effects("1e id"), vec![Exec(Some("id".into()))]);
        assert_eq!(effects("e"), vec![Exec(None)]);
        assert_eq!(effects("s/.*/date/e"), vec![Exec(None)]);
        assert_eq!(effects("s/x/y/w out.txt"), vec![Write("out.txt".into())]);
        assert_eq!(effects("w /etc/passwd"), vec![Write("/etc/passwd".into())]);
        assert_eq!(effects("1r /etc/shadow"), vec![Read("/etc/shadow".into())]);
        assert_eq!(
            effects("/x/{e touch y\n}"),
            vec![Exec(Some("touch y".into()))]
        );
        assert_eq!(
            effects("$!{s/a/b/;e rm -rf /\n}"),
            vec![Exec(Some("rm -rf /".into()))]
        );
        assert_eq!(effects("s/a/b/gew x"), vec![Exec(None), Write("x".into())]);
        assert!(matches!(effects("s/a/b")[..], [Unknown(_)]));
        assert!(matches!(effects("k")[..], [Unknown(_)]));
        assert_eq!(effects("s/x/y/w /dev/stdout"), vec![]);
    }
}
