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
        // The token vector is kept per thread (its capacity, not its
        // tokens: the words are moved into the AST, the rest cleared).
        let fast = TOKENS.with(|cell| {
            let mut t = cell.take();
            let program = if fast_tokens_into(line, &mut t, false) {
                fast_parse(line, &mut t)
            } else {
                None
            };
            t.clear();
            if t.capacity() <= 4096 {
                cell.replace(t);
            }
            program
        });
        if let Some(program) = fast {
            return Ok(program);
        }
        // (The fast parser may have taken words out of its tokens.)
        let tokens = match fast_tokens(line) {
            Some(t) => t,
            None => brush_parser::uncached_tokenize_str(line, &self.opts.tokenizer_options())
                .map_err(|e| brush_parser::ParseError::Tokenizing {
                    inner: e,
                    position: None,
                })?,
        };
        // brush's parser unwraps an fd number's `i32` (`99999999999>f`
        // panicked the check): such a line does not parse.
        if let Some(t) = overflowing_fd(&tokens) {
            return Err(brush_parser::ParseError::ParsingNearToken(t.clone()));
        }
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
/// The bytes [`fast_tokens`] reads: blanks and printable ASCII but
/// backslash, backquote, `#`, braces and `!`.
const FAST_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0x21;
    while c < 0x7f {
        t[c] = !matches!(c as u8, b'\\' | b'`' | b'#' | b'{' | b'}' | b'!');
        c += 1;
    }
    t[b' ' as usize] = true;
    t[b'\t' as usize] = true;
    t
};

/// Positions (line 1) shared by the tokens of [`fast_tokens`], by index.
const SHARED_POSITIONS: usize = 1024;

type Positions = std::rc::Rc<Vec<std::sync::Arc<brush_parser::SourcePosition>>>;

thread_local! {
    static POSITIONS: std::cell::RefCell<Positions> = std::cell::RefCell::new(Positions::default());
}

fn fast_tokens(line: &str) -> Option<Vec<brush_parser::Token>> {
    let mut tokens = Vec::new();
    fast_tokens_into(line, &mut tokens, true).then_some(tokens)
}

thread_local! {
    static TOKENS: std::cell::Cell<Vec<brush_parser::Token>> = const { std::cell::Cell::new(Vec::new()) };
}

/// [`fast_tokens`] into `tokens` (cleared first); false for a line outside
/// the subset (`tokens` then holds a part). Without `op_text`, an
/// operator token's text is left empty (no allocation): [`fast_parse`]
/// reads it from the line at the token's location; brush's parser needs
/// it (`op_text`).
fn fast_tokens_into(line: &str, tokens: &mut Vec<brush_parser::Token>, op_text: bool) -> bool {
    tokens.clear();
    fast_tokens_in(line, tokens, op_text).is_some()
}

fn fast_tokens_in(line: &str, tokens: &mut Vec<brush_parser::Token>, op_text: bool) -> Option<()> {
    use brush_parser::{SourcePosition, Token, TokenLocation};
    use std::sync::Arc;
    let b = line.as_bytes();
    // One pass: a byte outside the subset, or `<<`, `$'`, `$((` (the
    // bytes before are looked at only after a `<`, `'` or `(`).
    for (i, &c) in b.iter().enumerate() {
        if !FAST_BYTES[c as usize] {
            return None;
        }
        if matches!(c, b'<' | b'\'' | b'(') {
            let p1 = if i >= 1 { b[i - 1] } else { 0 };
            let p0 = if i >= 2 { b[i - 2] } else { 0 };
            if (c == b'<' && p1 == b'<')
                || (c == b'\'' && p1 == b'$')
                || (c == b'(' && p0 == b'$' && p1 == b'(')
            {
                return None;
            }
        }
    }
    // Positions are shared (`Arc`) from a per-thread table of the first
    // `SHARED_POSITIONS`: two allocations per token otherwise.
    let shared = POSITIONS.with_borrow_mut(|t| {
        let want = (b.len() + 1).min(SHARED_POSITIONS);
        if t.len() < want {
            let v = std::rc::Rc::make_mut(t);
            while v.len() < want {
                let i = v.len();
                v.push(Arc::new(SourcePosition {
                    index: i,
                    line: 1,
                    column: i + 1,
                }));
            }
        }
        t.clone()
    });
    let pos = |i: usize| match shared.get(i) {
        Some(p) => p.clone(),
        None => Arc::new(SourcePosition {
            index: i,
            line: 1,
            column: i + 1,
        }),
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
            let text = if op_text {
                op.to_string()
            } else {
                String::new()
            };
            tokens.push(Token::Operator(text, loc(start, j)));
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
    Some(())
}

/// brush-parser's AST for the tokens of [`fast_tokens`] in a conservative
/// subset of the grammar, built directly instead of by brush's PEG parser
/// (which tries every word of a command as an assignment and, when that
/// fails, parses the word again to report the error: half of a check's
/// parse); `None` for anything else, which brush parses.
///
/// The subset: one list of and-or lists separated by `;` or `&`, of
/// pipelines (`|`, `|&`) of simple commands: assignments and redirections
/// before the command word, words, assignments and redirections after it
/// (`N>`, `N>&M`, `&>`, `&>>` and the other file redirections). A reserved
/// word (or `time`) where a command word goes, a misplaced operator, or an
/// fd number that does not fit falls back. The AST must be identical to
/// brush's, locations included: the tests compare both parsers on known
/// lines and on random ones.
/// The words of `tokens` are moved into the AST (whatever the outcome).
/// An operator's text is read from `line`, the text `tokens` were cut
/// from, at the token's location (the token's own text may be empty).
fn fast_parse(line: &str, tokens: &mut [brush_parser::Token]) -> Option<ast::Program> {
    if tokens.is_empty() {
        return None;
    }
    let mut p = FastParser {
        line,
        t: tokens,
        i: 0,
    };
    let list = p.complete_command()?;
    (p.i == tokens.len()).then(|| ast::Program {
        complete_commands: vec![list],
    })
}

/// The position of [`fast_parse`] in its tokens.
struct FastParser<'a> {
    /// The line the tokens were cut from.
    line: &'a str,
    t: &'a mut [brush_parser::Token],
    i: usize,
}

impl<'a> FastParser<'a> {
    /// The word at `i`, moved out of its token.
    fn take_word(&mut self, i: usize) -> ast::Word {
        match &mut self.t[i] {
            brush_parser::Token::Word(w, l) | brush_parser::Token::Operator(w, l) => ast::Word {
                value: std::mem::take(w),
                loc: Some(l.clone()),
            },
        }
    }

    /// The operator at the position, if any.
    fn op(&self) -> Option<&'a str> {
        self.op_at(self.i)
    }

    /// The operator at `i`, if any, as the line spells it.
    fn op_at(&self, i: usize) -> Option<&'a str> {
        let line: &'a str = self.line;
        match self.t.get(i) {
            Some(brush_parser::Token::Operator(_, l)) => line.get(l.start.index..l.end.index),
            _ => None,
        }
    }

    fn complete_command(&mut self) -> Option<ast::CompoundList> {
        let mut items = Vec::new();
        loop {
            let ao = self.and_or()?;
            if self.i == self.t.len() {
                items.push(ast::CompoundListItem(ao, ast::SeparatorOperator::Sequence));
                return Some(ast::CompoundList(items));
            }
            let sep = match self.op() {
                Some(";") => ast::SeparatorOperator::Sequence,
                Some("&") => ast::SeparatorOperator::Async,
                _ => return None,
            };
            self.i += 1;
            items.push(ast::CompoundListItem(ao, sep));
            if self.i == self.t.len() {
                return Some(ast::CompoundList(items));
            }
        }
    }

    fn and_or(&mut self) -> Option<ast::AndOrList> {
        let first = self.pipeline()?;
        let mut additional = Vec::new();
        loop {
            match self.op() {
                Some("&&") => {
                    self.i += 1;
                    additional.push(ast::AndOr::And(self.pipeline()?));
                }
                Some("||") => {
                    self.i += 1;
                    additional.push(ast::AndOr::Or(self.pipeline()?));
                }
                _ => return Some(ast::AndOrList { first, additional }),
            }
        }
    }

    fn pipeline(&mut self) -> Option<ast::Pipeline> {
        let mut seq = Vec::new();
        loop {
            let mut c = self.simple_command()?;
            match self.op() {
                Some("|") => self.i += 1,
                Some("|&") => {
                    // brush adds `2>&1` to the command before `|&`.
                    self.i += 1;
                    let r = ast::CommandPrefixOrSuffixItem::IoRedirect(ast::IoRedirect::File(
                        Some(2),
                        ast::IoFileRedirectKind::DuplicateOutput,
                        ast::IoFileRedirectTarget::Fd(1),
                    ));
                    match &mut c.suffix {
                        Some(s) => s.0.push(r),
                        None => c.suffix = Some(ast::CommandSuffix(vec![r])),
                    }
                }
                _ => {
                    seq.push(ast::Command::Simple(c));
                    return Some(ast::Pipeline {
                        timed: None,
                        bang: false,
                        seq,
                    });
                }
            }
            seq.push(ast::Command::Simple(c));
        }
    }

    /// The number of tokens from the position to the next operator that
    /// ends a command (a bound on its words and redirections).
    fn command_len(&self) -> usize {
        (self.i..self.t.len())
            .position(|i| matches!(self.op_at(i), Some("&&" | "||" | "|" | "|&" | ";" | "&")))
            .unwrap_or(self.t.len() - self.i)
    }

    fn simple_command(&mut self) -> Option<ast::SimpleCommand> {
        use ast::CommandPrefixOrSuffixItem as I;
        use brush_parser::Token;
        // Sized once: the items are large, and growing moves them.
        let len = self.command_len();
        let mut prefix = Vec::new();
        loop {
            if let Some(r) = self.io_redirect()? {
                prefix.push(I::IoRedirect(r));
                continue;
            }
            if let Some(Token::Word(w, l)) = self.t.get(self.i)
                && let Some(a) = assignment(w, l)
            {
                let word = self.take_word(self.i);
                prefix.push(I::AssignmentWord(a, word));
                self.i += 1;
                continue;
            }
            break;
        }
        let name = match self.t.get(self.i) {
            Some(Token::Word(w, _)) => {
                if is_reserved(w) {
                    return None;
                }
                self.i += 1;
                self.take_word(self.i - 1)
            }
            _ if prefix.is_empty() => return None,
            _ => {
                return Some(ast::SimpleCommand {
                    prefix: Some(ast::CommandPrefix(prefix)),
                    word_or_name: None,
                    suffix: None,
                });
            }
        };
        let mut suffix = Vec::with_capacity(len.saturating_sub(prefix.len() + 1));
        loop {
            if let Some(r) = self.io_redirect()? {
                suffix.push(I::IoRedirect(r));
                continue;
            }
            match self.t.get(self.i) {
                Some(Token::Word(w, l)) => {
                    let a = assignment(w, l);
                    let word = self.take_word(self.i);
                    self.i += 1;
                    suffix.push(match a {
                        Some(a) => I::AssignmentWord(a, word),
                        None => I::Word(word),
                    });
                }
                _ => break,
            }
        }
        Some(ast::SimpleCommand {
            prefix: (!prefix.is_empty()).then_some(ast::CommandPrefix(prefix)),
            word_or_name: Some(name),
            suffix: (!suffix.is_empty()).then_some(ast::CommandSuffix(suffix)),
        })
    }

    /// A redirection at the position: `Some(None)` when there is none,
    /// `None` when it is malformed (brush reports it).
    fn io_redirect(&mut self) -> Option<Option<ast::IoRedirect>> {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T};
        use brush_parser::Token;
        let mut at = self.i;
        let mut fd = None;
        if let Some(Token::Word(w, wl)) = self.t.get(at)
            && w.bytes().all(|c| c.is_ascii_digit())
            && let Some(Token::Operator(_, ol)) = self.t.get(at + 1)
            && self
                .op_at(at + 1)
                .is_some_and(|o| o.starts_with(['<', '>']))
            && wl.end.index == ol.start.index
        {
            fd = Some(w.parse().ok()?);
            at += 1;
        }
        let Some(o) = self.op_at(at) else {
            return Some(None);
        };
        let kind = match o {
            "<" => Some(K::Read),
            "<&" => Some(K::DuplicateInput),
            ">" => Some(K::Write),
            ">&" => Some(K::DuplicateOutput),
            ">>" => Some(K::Append),
            "<>" => Some(K::ReadAndWrite),
            ">|" => Some(K::Clobber),
            "&>" | "&>>" => None,
            _ => return Some(None),
        };
        let append = o == "&>>";
        let target = match self.t.get(at + 1) {
            Some(Token::Word(..)) => self.take_word(at + 1),
            _ => return None,
        };
        self.i = at + 2;
        Some(Some(match kind {
            Some(k @ (K::DuplicateInput | K::DuplicateOutput)) => {
                ast::IoRedirect::File(fd, k, T::Duplicate(target))
            }
            Some(k) => ast::IoRedirect::File(fd, k, T::Filename(target)),
            None => ast::IoRedirect::OutputAndError(target, append),
        }))
    }
}

/// A word brush's parser reads as an fd number (digits right before a
/// `<` or `>` operator) that does not fit its `i32`.
fn overflowing_fd(tokens: &[brush_parser::Token]) -> Option<&brush_parser::Token> {
    use brush_parser::Token;
    tokens.windows(2).find_map(|w| match w {
        [t @ Token::Word(d, dl), Token::Operator(o, ol)]
            if d.bytes().all(|c| c.is_ascii_digit())
                && o.starts_with(['<', '>'])
                && dl.end.index == ol.start.index
                && d.parse::<i32>().is_err() =>
        {
            Some(t)
        }
        _ => None,
    })
}

/// A reserved word of brush's grammar, or `time` (a timed pipeline).
fn is_reserved(w: &str) -> bool {
    matches!(
        w,
        "!" | "{"
            | "}"
            | "case"
            | "do"
            | "done"
            | "elif"
            | "else"
            | "esac"
            | "fi"
            | "for"
            | "if"
            | "in"
            | "then"
            | "until"
            | "while"
            | "[["
            | "]]"
            | "function"
            | "select"
            | "time"
    )
}

/// An assignment word as brush reads it (`NAME=value`, `NAME+=value`,
/// `NAME[index]=value`).
fn assignment(w: &str, loc: &brush_parser::TokenLocation) -> Option<ast::Assignment> {
    let b = w.as_bytes();
    if !(b.first()?.is_ascii_alphabetic() || b[0] == b'_') {
        return None;
    }
    let mut i = 1;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    let scalar = &w[..i];
    let index = if b.get(i) == Some(&b'[') {
        let close = i + 1 + w[i + 1..].find(']')?;
        let index = &w[i + 1..close];
        i = close + 1;
        Some(index)
    } else {
        None
    };
    let append = b.get(i) == Some(&b'+');
    if append {
        i += 1;
    }
    if b.get(i) != Some(&b'=') {
        return None;
    }
    // Names are built only for an assignment (most words are not).
    let name = match index {
        Some(index) => ast::AssignmentName::ArrayElementName(scalar.to_owned(), index.to_owned()),
        None => ast::AssignmentName::VariableName(scalar.to_owned()),
    };
    Some(ast::Assignment {
        name,
        value: ast::AssignmentValue::Scalar(ast::Word::from(w[i + 1..].to_owned())),
        append,
        loc: loc.clone(),
    })
}

/// Deepest nesting of brackets, counted without regard to quoting (an
/// over-estimate, which only makes the guard stricter).
fn bracket_nesting(s: &str) -> usize {
    let mut depth: usize = 0;
    let mut max = 0;
    let mut backquotes = 0usize;
    // Over bytes: the brackets are ASCII, and no byte of a multi-byte
    // character is.
    for c in s.bytes() {
        match c {
            b'(' | b'{' | b'[' => {
                depth += 1;
                max = max.max(depth + backquotes);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            b'`' => {
                backquotes += 1;
                max = max.max(depth + backquotes / 2);
            }
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod fd_number_tests {
    use crate::gate::types::FindingKind;
    use crate::gate::{ShellInput, analyze_shell};

    #[test]
    fn an_fd_number_over_i32_is_a_parse_finding_not_a_panic() {
        let cfg = crate::plan::gate::config::shipped();
        let parse = |line: &str| {
            let f = analyze_shell(&cfg.shell, &cfg.paths, "/command", ShellInput::Line(line));
            f.iter().any(|f| f.kind == FindingKind::Parse)
        };
        assert!(parse("99999999999>f x"));
        assert!(parse("echo a && 4294967296<in cat"));
        // Fitting fd numbers, and digits apart from the operator, parse.
        assert!(!parse("x 2147483647>/dev/null"));
        assert!(!parse("echo 99999999999 > f"));
        assert!(!parse("echo 2>&1"));
    }
}

#[cfg(test)]
mod fast_tokens_tests {
    use super::{fast_parse, fast_tokens};
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

    fn brush_ast(line: &str) -> String {
        let opts = brush_parser::ParserOptions::default();
        let tokens = fast_tokens(line).expect("fast tokens");
        format!(
            "{:?}",
            brush_parser::parse_tokens(&tokens, &opts, &brush_parser::SourceInfo::default()).ok()
        )
    }

    /// The fast parser's AST of `line`, from tokens as the gate makes them
    /// (operators without their own text).
    fn fast_ast(line: &str) -> Option<brush_parser::ast::Program> {
        let mut t = Vec::new();
        if !super::fast_tokens_into(line, &mut t, false) {
            return None;
        }
        fast_parse(line, &mut t)
    }

    /// Where the fast parser answers, its AST is brush's.
    fn same_ast(line: &str) -> bool {
        match fast_ast(line) {
            None => true,
            Some(p) => format!("{:?}", Some(p)) == brush_ast(line),
        }
    }

    #[test]
    fn parses_like_brush_on_known_lines() {
        let lines = [
            "cd target/tmp && cargo build --release 2>&1 | tee build.log && grep -n \"warning\" build.log | head -20 && echo \"built $(date +%s)\" >> times.txt && git diff --stat HEAD~1 -- src/",
            "ls -la",
            "git status",
            "a&&b||c;d&e|f",
            "x >/dev/null 2>&1",
            "cat <in >out >>app 3<>rw 1>&2 2<&0 &>all &>>all2 >|clob",
            "a |& b",
            "a 2>&1 |& b | c",
            "FOO=1 BAR=~/x env",
            "FOO=1",
            "A=1 B+=2 c[1]=3 >f",
            "x=1 y",
            "echo a=b c[x]=y d+=e",
            "echo 2 >f 2>g 3 > h",
            ">f",
            ">f echo x",
            "2>/dev/null git status",
            "a; b; c;",
            "a & b &",
            "time ls",
            "if x",
            "a | if",
            "echo if then fi",
            "x=1 if",
            "a;;",
            "; a",
            "a && ",
            "a |",
            "a >",
            "a 2>",
            "99999999999>f x",
            "a[=1 b",
            "a[1=2",
            "_x=1 9a=2",
        ];
        for l in lines {
            if fast_tokens(l).is_some() {
                assert!(same_ast(l), "{l:?}: fast {:?}", fast_ast(l));
            }
        }
        // These take the fast path (so the comparison above compared).
        for l in lines[..19].iter().chain(&lines[22..23]) {
            assert!(fast_tokens(l).is_some(), "{l:?} takes the fast tokenizer");
            assert!(fast_ast(l).is_some(), "{l:?} takes the fast path");
        }
        for l in ["time ls", "if x", "a;;", "a && ", "a >", "99999999999>f x"] {
            if fast_tokens(l).is_some() {
                assert!(fast_ast(l).is_none(), "{l:?}");
            }
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

    #[test]
    fn random_lines_take_the_fast_path() {
        // A deterministic sample of the proptest's lines: enough of them
        // take the fast path for the comparison to mean something.
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut fast = 0;
        for _ in 0..2000 {
            let line = proptest::strategy::ValueTree::current(
                &command_atoms().new_tree(&mut runner).unwrap(),
            );
            if let Some(p) = fast_ast(&line) {
                fast += 1;
                assert_eq!(format!("{:?}", Some(p)), brush_ast(&line), "{line:?}");
            }
        }
        assert!(
            fast >= 200,
            "only {fast} of 2000 random lines took the fast path"
        );
    }

    /// Words and operators of the fast parser's subset, and the words and
    /// operators next to it.
    fn command_atoms() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "a",
                "b",
                "ls",
                " ",
                " ",
                " ",
                "-x",
                "2",
                "10",
                "x=1",
                "y+=2",
                "z[1]=3",
                "z[=",
                "a=",
                "=",
                "_",
                "&&",
                "||",
                "|",
                "|&",
                ";",
                "&",
                "<",
                ">",
                ">>",
                ">&",
                "<&",
                "<>",
                ">|",
                "&>",
                "&>>",
                "if",
                "then",
                "fi",
                "time",
                "do",
                "in",
                "]]",
                "select",
                "\"q\"",
                "'s'",
                "$V",
                "$(a b)",
                "f.txt",
                "/dev/null",
            ]),
            0..16,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, .. ProptestConfig::default() })]
        #[test]
        fn agrees_with_brush_on_random_lines(line in atoms()) {
            prop_assert!(same(&line), "{:?}: fast {:?}\nbrush {:?}", line, fast_tokens(&line), brush(&line));
        }

        #[test]
        fn parses_like_brush_on_random_lines(line in command_atoms()) {
            prop_assert!(same_ast(&line), "{:?}: fast {:?}", line, fast_ast(&line));
        }
    }
}
