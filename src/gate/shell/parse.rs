//! Stage 1, tokenize and parse: a command line (or a piece of code found
//! inside one) becomes brush-parser's AST, within the configured limits
//! (input size, bracket nesting, code depth, number of parser runs), and the
//! AST is handed to the walk ([`super::effects`]). A line that does not parse
//! is a `Parse` finding (fail closed). Plain lines are tokenized by a
//! byte-level fast path that yields brush's own tokens.

use brush_parser::ast;

use super::{Scope, Walker, excerpt};
use crate::gate::types::FindingKind;

impl Walker<'_> {
    pub(super) fn parse_and_walk(&mut self, line: &str, scope: &Scope) {
        let limits = &self.cfg.limits;
        if scope.depth > limits.max_depth {
            let d = format!("code nested more than {} levels deep", limits.max_depth);
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
            return;
        }
        if line.len() > limits.max_input_bytes {
            let d = format!(
                "command line of {} bytes, over the limit of {}",
                line.len(),
                limits.max_input_bytes
            );
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
            return;
        }
        if bracket_nesting(line) > limits.max_nesting {
            let d = format!("brackets nested more than {} deep", limits.max_nesting);
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
            return;
        }
        if !self.spend_parse() {
            return;
        }
        match self.parse(line) {
            Ok(program) => {
                for cc in &program.complete_commands {
                    self.compound_list(cc, scope);
                }
            }
            Err(e) => {
                let d = format!("`{}`: {e}", excerpt(line));
                self.check(|c| &c.parse_error, FindingKind::Parse, &d);
            }
        }
    }

    /// Tokenizes and parses one line (no cache: brush's own caches take a
    /// global lock and clone their results).
    fn parse(&self, line: &str) -> Result<ast::Program, brush_parser::ParseError> {
        let tokens = match fast_tokens(line) {
            Some(t) => t,
            None => brush_parser::uncached_tokenize_str(line, &self.opts.tokenizer_options())
                .map_err(|e| brush_parser::ParseError::Tokenizing {
                    inner: e,
                    position: None,
                })?,
        };
        brush_parser::parse_tokens(&tokens, &self.opts, &brush_parser::SourceInfo::default())
    }

    /// Counts one parser run; false (and a finding, once) over the budget.
    fn spend_parse(&mut self) -> bool {
        self.parses += 1;
        let max = self.cfg.limits.max_parses;
        if self.parses == max + 1 {
            let d = format!("more than {max} pieces of code to parse");
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
        }
        self.parses <= max
    }

    /// Walks `line` if it parses and is within limits; reports nothing
    /// otherwise.
    pub(super) fn parse_quietly(&mut self, line: &str, scope: &Scope) {
        let limits = &self.cfg.limits;
        if scope.depth > limits.max_depth {
            let d = format!("code nested more than {} levels deep", limits.max_depth);
            self.check(|c| &c.too_complex, FindingKind::Shell, &d);
            return;
        }
        if line.len() > limits.max_input_bytes || bracket_nesting(line) > limits.max_nesting {
            return;
        }
        if !self.spend_parse() {
            return;
        }
        if let Ok(program) = self.parse(line) {
            let before = self.findings.len();
            for cc in &program.complete_commands {
                self.compound_list(cc, scope);
            }
            // Only rule hits count here: a parse problem of this reading is
            // not a problem of the line.
            let mut i = before;
            while i < self.findings.len() {
                if self.findings[i].kind == FindingKind::Parse {
                    self.findings.remove(i);
                } else {
                    i += 1;
                }
            }
        }
    }
}

/// brush-parser's tokens for a line in a conservative subset of the shell
/// syntax, computed over the bytes instead of brush's char-by-char reader
/// (its tokenizer is a third of a check's time); `None` for any other line,
/// which brush tokenizes itself.
///
/// The subset: one line of printable ASCII, blanks, words with `'...'` and
/// `"..."` quoting, `$NAME`-style expansions, `$(...)` holding only plain
/// words separated by single spaces, and the operators
/// `&&`, `||`, `|`, `;`, `&`, `<`, `>`, `>>`, `>&`, `<&`, `&>`, `&>>`, `|&`,
/// `>|`, `<>`. Anything else (backslashes, backquotes, comments, braces,
/// parentheses, `!`, here-documents, `$'...'`, arithmetic, case
/// terminators, newlines) falls back. The tokens must be identical to
/// brush's, positions included: the tests compare both tokenizers on known
/// lines and on random ones.
fn fast_tokens(line: &str) -> Option<Vec<brush_parser::Token>> {
    use brush_parser::{SourcePosition, Token, TokenLocation};
    use std::sync::Arc;
    let b = line.as_bytes();
    if b.iter().any(|&c| {
        !(c == b' ' || c == b'\t' || (0x21..0x7f).contains(&c))
            || matches!(c, b'\\' | b'`' | b'#' | b'{' | b'}' | b'!')
    }) || line.contains("<<")
        || line.contains("$'")
        || line.contains("$((")
    {
        return None;
    }
    let pos = |i: usize| {
        Arc::new(SourcePosition {
            index: i,
            line: 1,
            column: i + 1,
        })
    };
    let loc = |a: usize, z: usize| TokenLocation {
        start: pos(a),
        end: pos(z),
    };
    let is_op = |s: &str| {
        matches!(
            s,
            "&" | "&&"
                | ";"
                | "|"
                | "||"
                | "<"
                | ">"
                | ">|"
                | ">>"
                | "<&"
                | ">&"
                | "<>"
                | "&>"
                | "&>>"
                | "|&"
                | ";;"
                | ";&"
                | ";;&"
        )
    };
    // `$(` at `i`: the index after its `)`, for plain words separated by
    // single spaces only.
    let subst_end = |i: usize| -> Option<usize> {
        let start = i + 2;
        let close = start + line.get(start..)?.find(')')?;
        let inner = &line[start..close];
        let plain = |c: u8| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'_' | b'.' | b'/' | b',' | b':' | b'=' | b'+' | b'@' | b'%' | b'^' | b'-'
                )
        };
        let ok = !inner.is_empty()
            && !inner.starts_with(' ')
            && !inner.ends_with(' ')
            && !inner.contains("  ")
            && inner.bytes().all(|c| c == b' ' || plain(c));
        ok.then_some(close + 1)
    };
    let mut tokens = Vec::new();
    let n = b.len();
    let mut i = 0;
    while i < n {
        let c = b[i];
        if c == b' ' || c == b'\t' {
            i += 1;
            continue;
        }
        let start = i;
        if matches!(c, b'(' | b')') {
            return None;
        }
        if matches!(c, b'&' | b';' | b'|' | b'<' | b'>') {
            let mut j = i + 1;
            while j < n && is_op(&line[start..=j]) {
                j += 1;
            }
            let op = &line[start..j];
            if matches!(op, ";;" | ";&" | ";;&") {
                return None;
            }
            tokens.push(Token::Operator(op.to_string(), loc(start, j)));
            i = j;
            continue;
        }
        let mut j = i;
        while j < n {
            match b[j] {
                b' ' | b'\t' | b'&' | b';' | b'|' | b'<' | b'>' => break,
                b'(' | b')' => return None,
                b'\'' => j = j + 2 + line.get(j + 1..)?.find('\'')?,
                b'"' => {
                    j += 1;
                    loop {
                        match *b.get(j)? {
                            b'"' => {
                                j += 1;
                                break;
                            }
                            b'$' if b.get(j + 1) == Some(&b'(') => j = subst_end(j)?,
                            _ => j += 1,
                        }
                    }
                }
                b'$' if b.get(j + 1) == Some(&b'(') => j = subst_end(j)?,
                _ => j += 1,
            }
        }
        tokens.push(Token::Word(line[start..j].to_string(), loc(start, j)));
        i = j;
    }
    Some(tokens)
}

/// Deepest nesting of brackets, counted without regard to quoting (an
/// over-estimate, which only makes the guard stricter).
fn bracket_nesting(s: &str) -> usize {
    let mut depth: usize = 0;
    let mut max = 0;
    let mut backquotes = 0usize;
    for c in s.chars() {
        match c {
            '(' | '{' | '[' => {
                depth += 1;
                max = max.max(depth + backquotes);
            }
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            '`' => {
                backquotes += 1;
                max = max.max(depth + backquotes / 2);
            }
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod fast_tokens_tests {
    use super::fast_tokens;
    use proptest::prelude::*;

    fn brush(line: &str) -> Option<String> {
        let opts = brush_parser::ParserOptions::default();
        brush_parser::uncached_tokenize_str(line, &opts.tokenizer_options())
            .ok()
            .map(|t| format!("{t:?}"))
    }

    fn same(line: &str) -> bool {
        match fast_tokens(line) {
            None => true,
            Some(t) => Some(format!("{t:?}")) == brush(line),
        }
    }

    #[test]
    fn agrees_with_brush_on_known_lines() {
        let lines = [
            "cd target/tmp && cargo build --release 2>&1 | tee build.log && grep -n \"warning\" build.log | head -20 && echo \"built $(date +%s)\" >> times.txt && git diff --stat HEAD~1 -- src/",
            "ls -la",
            "git status",
            "  rm   -rf  /  ",
            "a&&b||c;d&e|f",
            "x >/dev/null 2>&1",
            "cat <in >out >>app 3<>rw 1>&2 2<&0 &>all &>>all2 >|clob",
            "a |& b",
            "echo 'a b' \"c d\" e'f'g\"h\"",
            "echo \"$(date)\" $(id -u) x$(a b)y",
            "FOO=1 BAR=~/x env",
            "echo $HOME ${HOME} $1 $? $$",
            "echo \"a ( b ) c\"",
            "grep -rn \"rm -rf\" docs/",
            "rm -rf $HOME",
            "echo \"unterminated",
            "echo 'x",
            "echo $(unterminated",
            "echo $( a)",
            "echo $(a  b)",
            "echo $(a|b)",
            "",
            "   ",
            "a;;",
            "echo \"$(a)$(b c)\"",
            "x=$(y)",
            "echo \"\"",
            "echo ''",
            "a\tb\t c",
        ];
        for l in lines {
            assert!(
                same(l),
                "{l:?}: fast {:?}\nbrush {:?}",
                fast_tokens(l),
                brush(l)
            );
        }
        assert!(
            fast_tokens(lines[0]).is_some(),
            "the common case takes the fast path"
        );
        for l in [
            "echo `x`",
            "a \\b",
            "f() { x; }",
            "(a)",
            "a # c",
            "cat <<EOF",
            "! a",
            "a\nb",
            "echo $'x'",
            "echo $((1+2))",
            "é",
        ] {
            assert!(fast_tokens(l).is_none(), "{l:?}");
        }
    }

    fn atoms() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "a", "b", "-", "/", ".", "=", "~", "*", "?", "[", "]", "1", "2", " ", "  ", "\t",
                "'", "\"", "$", "$(", "(", ")", "&", "|", ";", "<", ">", "!", "#", "{", "}", "\\",
                "`", "date +%s", "x y", ":", "%", "+", "@", ",", "^", "$(a)", "$(a b)",
            ]),
            0..24,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, .. ProptestConfig::default() })]
        #[test]
        fn agrees_with_brush_on_random_lines(line in atoms()) {
            prop_assert!(same(&line), "{:?}: fast {:?}\nbrush {:?}", line, fast_tokens(&line), brush(&line));
        }
    }
}
