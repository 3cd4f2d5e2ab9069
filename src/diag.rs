//! Diagnostics: every problem found while loading a policy or a tool-tag file.
//!
//! A load never stops at the first problem: the reader, the validator and the
//! compiler push [`Diagnostic`]s into one list, and the load fails with a
//! [`LoadError`] holding all of them. Each diagnostic knows its file and the byte
//! span it points at, so it renders as `file:line:column: message` in plain text
//! ([`std::fmt::Display`]) and with a caret under the source line through
//! [`miette`] (the CLI uses the latter).

pub mod duplicate_keys;
pub mod json_path;

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// The kind of a load problem. Tests match on it; users read the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The file could not be read.
    Io,
    /// The file is not valid TOML (or JSON, for tool lists and inputs).
    Syntax,
    /// The file is empty or holds only comments: never read as "all defaults".
    Empty,
    /// A key that the format does not define (often a typo: see the help).
    UnknownKey,
    /// A key that must be present is missing.
    MissingKey,
    /// A value of the wrong TOML type (a string where a number belongs, ...).
    WrongType,
    /// A number that is NaN or infinite.
    NonFinite,
    /// A number outside its allowed range (a threshold outside \[0,1\], ...).
    OutOfRange,
    /// An evalexpr expression that does not parse or uses an unsupported operator.
    InvalidExpression,
    /// An expression names a variable or function that does not exist.
    UnknownName,
    /// A tool tag or rule names a domain the policy does not declare.
    UndeclaredDomain,
    /// A tool tag or context names a conversation stage the policy does not declare.
    UndeclaredStage,
    /// Two tools (or a tool and an alias) share a name.
    DuplicateTool,
    /// A value of the right type that is still not acceptable (an unknown method name, ...).
    InvalidValue,
    /// A policy example's expectation does not hold under the compiled plan.
    ExampleFailed,
}

impl ErrorKind {
    /// A short stable code, shown by the CLI beside each message (`toolgate::unknown_key`).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Io => "toolgate::io",
            ErrorKind::Syntax => "toolgate::syntax",
            ErrorKind::Empty => "toolgate::empty_file",
            ErrorKind::UnknownKey => "toolgate::unknown_key",
            ErrorKind::MissingKey => "toolgate::missing_key",
            ErrorKind::WrongType => "toolgate::wrong_type",
            ErrorKind::NonFinite => "toolgate::non_finite",
            ErrorKind::OutOfRange => "toolgate::out_of_range",
            ErrorKind::InvalidExpression => "toolgate::invalid_expression",
            ErrorKind::UnknownName => "toolgate::unknown_name",
            ErrorKind::UndeclaredDomain => "toolgate::undeclared_domain",
            ErrorKind::UndeclaredStage => "toolgate::undeclared_stage",
            ErrorKind::DuplicateTool => "toolgate::duplicate_tool",
            ErrorKind::InvalidValue => "toolgate::invalid_value",
            ErrorKind::ExampleFailed => "toolgate::example_failed",
        }
    }
}

/// A source file as loaded: its display name (the path given) and its full text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The name used in messages, usually the path as given on the command line.
    pub name: String,
    /// The whole text of the file.
    pub text: Arc<str>,
}

impl SourceFile {
    /// Wraps a name and a text.
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> Arc<Self> {
        Arc::new(SourceFile {
            name: name.into(),
            text: text.into(),
        })
    }

    /// 1-based line and column (in characters) of a byte offset; offsets past the
    /// end point at the end, offsets inside a UTF-8 sequence at its character.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let mut line = 1;
        let mut col = 1;
        for (i, ch) in self.text.char_indices() {
            if i >= offset {
                break;
            }
            if ch == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
        }
        (line, col)
    }

    /// The byte offset of a 1-based `line` and a `column` counted in bytes
    /// from the line's start, as `serde_json` reports them (0 is before the
    /// first byte); clamped to the text.
    pub fn offset_of(&self, line: usize, column: usize) -> usize {
        json_offset(&self.text, line, column)
    }

    /// Whether the line holding byte `offset` is longer than
    /// [`MAX_SNIPPET_LINE`] bytes (a minified JSON file, a long string): too
    /// long to echo under a message.
    pub fn long_line_at(&self, offset: usize) -> bool {
        let (start, end) = self.line_bounds(offset);
        end - start > MAX_SNIPPET_LINE
    }

    /// The byte range (without its `\n`) of the line holding byte
    /// `offset`, clamped to the text.
    fn line_bounds(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let t = self.text.as_bytes();
        let start = t[..offset]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let end = t[offset..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(t.len(), |i| offset + i);
        (start, end)
    }

    /// Whether the line holding byte `offset`, or the line before or after
    /// it (the context a rendered report shows around its label), is longer
    /// than [`MAX_SNIPPET_LINE`] bytes.
    pub fn long_line_near(&self, offset: usize) -> bool {
        let (start, end) = self.line_bounds(offset);
        let t = self.text.as_bytes();
        end - start > MAX_SNIPPET_LINE
            || (start > 0 && self.long_line_at(start - 1))
            || (end < t.len() && self.long_line_at(end + 1))
    }
}

/// Lines longer than this many bytes are not echoed under a message (its
/// `file:line:column` still locates the problem).
pub const MAX_SNIPPET_LINE: usize = 400;

/// The byte offset in `text` of `serde_json`'s 1-based `line` and byte
/// `column` (0: before the line's first byte), clamped to the text.
pub fn json_offset(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line.max(1) {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let mut at = (start + column.saturating_sub(1)).min(end);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// "null", "a boolean", "a number", "a string", "an array", "an object":
/// a JSON value's kind, as messages name it.
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `serde_json`'s message without its trailing ` at line L column C`, for
/// messages that give the location their own way.
pub fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    s.strip_suffix(&suffix).unwrap_or(&s).to_string()
}

/// One problem, with where it is and, when we can guess, how to fix it.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    /// What kind of problem it is.
    pub kind: ErrorKind,
    /// One sentence saying what is wrong.
    pub message: String,
    /// The file it is in, if it comes from a file.
    pub file: Option<Arc<SourceFile>>,
    /// Byte range in the file's text.
    pub span: Option<Range<usize>>,
    /// A hint: did-you-mean, the accepted values, the allowed range.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A problem located in `file` at byte range `span`.
    pub fn at(
        kind: ErrorKind,
        file: &Arc<SourceFile>,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            kind,
            message: message.into(),
            file: Some(file.clone()),
            span: Some(span),
            help: None,
        }
    }

    /// A problem with no source location (an I/O error, an input given inline).
    pub fn bare(kind: ErrorKind, message: impl Into<String>) -> Self {
        Diagnostic {
            kind,
            message: message.into(),
            file: None,
            span: None,
            help: None,
        }
    }

    /// Adds a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a did-you-mean help when `candidates` hold a close match for `got`.
    pub fn with_suggestion<'a>(
        mut self,
        got: &str,
        candidates: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        if let Some(s) = did_you_mean(got, candidates) {
            self.help = Some(format!("did you mean `{}`?", echo(s)));
        }
        self
    }

    /// `file:line:column` of the start of the span, when known.
    pub fn location(&self) -> Option<String> {
        let file = self.file.as_ref()?;
        match &self.span {
            Some(span) => {
                let (l, c) = file.line_col(span.start);
                Some(format!("{}:{}:{}", file.name, l, c))
            }
            None => Some(file.name.clone()),
        }
    }

    /// 1-based line and column of the start of the span, when known.
    pub fn line_col(&self) -> Option<(usize, usize)> {
        Some(self.file.as_ref()?.line_col(self.span.as_ref()?.start))
    }

    /// Whether the rendered report echoes the source lines: not when the
    /// span's lines, or the context lines around them, are longer than
    /// [`MAX_SNIPPET_LINE`] (the message still starts with
    /// `file:line:column`).
    fn snippet(&self) -> bool {
        match (&self.file, &self.span) {
            (Some(f), Some(s)) => !f.long_line_near(s.start) && !f.long_line_near(s.end),
            _ => true,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(loc) = self.location() {
            write!(f, "{loc}: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.help {
            write!(f, " ({h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.kind.code()))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display + 'a>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.file
            .as_ref()
            .filter(|_| self.snippet())
            .map(|f| &f.text as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        if !self.snippet() {
            return None;
        }
        let span = self.span.clone()?;
        let len = span.end.saturating_sub(span.start);
        let label = self.location().unwrap_or_else(|| String::from("here"));
        Some(Box::new(std::iter::once(miette::LabeledSpan::new(
            Some(label),
            span.start,
            len,
        ))))
    }
}

/// All problems of one failed load. Never empty.
#[derive(Debug, Clone)]
pub struct LoadError {
    /// The problems, in the order they were found (file order, then position).
    pub diagnostics: Vec<Diagnostic>,
}

impl LoadError {
    /// Wraps a single diagnostic.
    pub fn single(d: Diagnostic) -> Self {
        LoadError {
            diagnostics: vec![d],
        }
    }

    /// Whether any diagnostic is of `kind`.
    pub fn has(&self, kind: ErrorKind) -> bool {
        self.diagnostics.iter().any(|d| d.kind == kind)
    }
}

/// At most this many problems are written out by [`LoadError`]'s `Display`
/// (the rest are counted): locating each costs a scan of its file.
pub const MAX_SHOWN: usize = 50;

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.diagnostics.len();
        for (i, d) in self.diagnostics.iter().take(MAX_SHOWN).enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        if n > MAX_SHOWN {
            write!(f, "\n{} problems", more(n - MAX_SHOWN))?;
        }
        if n > 1 {
            write!(f, "\n({n} problems)")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

impl From<Diagnostic> for LoadError {
    fn from(d: Diagnostic) -> Self {
        LoadError::single(d)
    }
}

/// At most this many leading characters of two names are compared by
/// [`did_you_mean`] and [`close_matches`] (the longest name a tag file
/// admits): their measures take time in the product of the lengths, and
/// a 120,000-character near miss of a 120,000-character name took minutes.
pub const MAX_COMPARED_CHARS: usize = 256;

/// The first [`MAX_COMPARED_CHARS`] characters of `s`.
fn compared(s: &str) -> &str {
    match s.char_indices().nth(MAX_COMPARED_CHARS) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The closest candidate to `got` by Jaro-Winkler similarity (case-insensitive),
/// if it is close enough (≥ 0.8) to be worth suggesting.
pub fn did_you_mean<'a>(
    got: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let g = compared(got).to_lowercase();
    let glen = g.chars().count();
    // Jaro is at most (m/|a| + m/|b| + 1) / 3 with m <= the shorter length:
    // at most 0.7 when one string is 10 times the other, and Winkler's
    // prefix boost applies only above 0.7, so such pairs never reach 0.8.
    // Skipping them keeps a huge name (a model's 120 KB "tool") cheap.
    candidates
        .into_iter()
        .filter(|c| {
            let clen = compared(c).chars().count();
            glen <= 10 * clen && clen <= 10 * glen
        })
        .map(|c| (c, strsim::jaro_winkler(&g, &compared(c).to_lowercase())))
        .filter(|(_, s)| *s >= 0.8)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// Up to `max` candidates close to `got`, closest first: those within
/// a quarter of their length in edits (normalised Damerau-Levenshtein
/// similarity ≥ 0.75, case-insensitive; Jaro-Winkler would rank every
/// name with the same `server.` prefix close), and
/// those that hold it whole (`read_query` in `sqlite.read_query`, for a
/// `got` of 3 characters or more). For "unknown name" messages that list
/// what might have been meant, where [`did_you_mean`] gives one.
pub fn close_matches<'a>(
    got: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<&'a str> {
    let g = compared(got).to_lowercase();
    let glen = g.chars().count();
    let mut scored: Vec<(f64, &'a str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let cl = compared(c).to_lowercase();
            if glen >= 3 && cl.contains(&g) {
                return Some((1.0 + glen as f64 / cl.chars().count().max(1) as f64, c));
            }
            // (as in did_you_mean: pairs 10 times apart in length never pass)
            let clen = cl.chars().count();
            if glen > 10 * clen || clen > 10 * glen {
                return None;
            }
            let s = strsim::normalized_damerau_levenshtein(&g, &cl);
            (s >= 0.75).then_some((s, c))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(max).map(|(_, c)| c).collect()
}

/// Accumulates diagnostics during a load.
#[derive(Debug, Default)]
pub struct Sink {
    /// What was found so far.
    pub diagnostics: Vec<Diagnostic>,
}

impl Sink {
    /// Records a problem.
    pub fn push(&mut self, d: Diagnostic) {
        self.diagnostics.push(d);
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.diagnostics.is_empty()
    }

    /// `Ok(value)` when nothing was recorded, else all problems.
    pub fn finish<T>(self, value: T) -> Result<T, LoadError> {
        if self.diagnostics.is_empty() {
            Ok(value)
        } else {
            Err(LoadError {
                diagnostics: self.diagnostics,
            })
        }
    }
}

/// The marker that closes a list cut at a cap, `… N more` (`n` items left
/// out), as every capped list of the CLI and of messages to a model ends
/// (issue 29 item 5).
pub fn more(n: usize) -> String {
    format!("… {n} more")
}

/// At most this many items of a list of names are echoed in one message
/// ([`echo_list`]); the rest are counted ([`more`]).
pub const MAX_ECHOED_ITEMS: usize = 50;

/// The first `cap` of `items`, each clipped ([`echo`]), joined by `sep`,
/// then `… N more` for the rest; `none` when there are none (a cap of 0
/// gives only `… N more`).
pub fn echo_list<S: AsRef<str>>(items: &[S], sep: &str, cap: usize) -> String {
    if items.is_empty() {
        return "none".to_string();
    }
    let mut parts: Vec<std::borrow::Cow<'_, str>> =
        items.iter().take(cap).map(|s| echo(s.as_ref())).collect();
    if items.len() > cap {
        parts.push(std::borrow::Cow::Owned(more(items.len() - cap)));
    }
    parts.join(sep)
}

/// At most this many characters of a name or value given by a user or a
/// model (a tool name, a session key) are echoed back in messages, CLI
/// output and audit lines ([`clip_chars`] marks the cut).
pub const MAX_ECHOED_CHARS: usize = 200;

/// Writes spaces over the byte `range` of `text`, keeping its newlines, so
/// every line, column and byte offset of the rest stays where it was (a
/// part already reported is blanked before the rest is read again). A
/// range that is not on character boundaries or past the end is left alone.
pub fn blank(text: &mut String, range: std::ops::Range<usize>) {
    let Some(part) = text.get(range.clone()) else {
        return;
    };
    let blanked: String = part
        .chars()
        .map(|c| match c {
            '\n' | '\r' => c.to_string(),
            c => " ".repeat(c.len_utf8()),
        })
        .collect();
    text.replace_range(range, &blanked);
}

/// `text` as it may be echoed back: [`clip_chars`] at [`MAX_ECHOED_CHARS`].
/// For names and values that come from a user, a model or a file (a tool
/// name, a session id, an unknown key) quoted in an error or a message.
pub fn echo(text: &str) -> std::borrow::Cow<'_, str> {
    clip_chars(text, MAX_ECHOED_CHARS)
}

/// `text` cut after its first `max` characters (Unicode scalar values),
/// with " … N more characters" appended when something was cut: bounds what a
/// message quotes of untrusted text (a query, a call's arguments, a token of
/// a model file). Text of at most `max` characters comes back borrowed, and
/// so does text this function already clipped at `max` (its first `max`
/// characters, then only the marker): clipping twice keeps the true count
/// of what was left out, not the marker's length.
pub fn clip_chars(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(text),
        Some((i, _)) if is_clip_marker(&text[i..]) => std::borrow::Cow::Borrowed(text),
        Some((i, _)) => {
            let more = text[i..].chars().count();
            std::borrow::Cow::Owned(format!("{} … {more} more characters", &text[..i]))
        }
    }
}

/// Whether `tail` is exactly the marker [`clip_chars`] appends,
/// ` … N more characters`.
fn is_clip_marker(tail: &str) -> bool {
    tail.strip_prefix(" … ")
        .and_then(|t| t.strip_suffix(" more characters"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// At most this many characters of a number are echoed back: a number is
/// quoted as written in its file ([`number_as_written`]) or, with no text to
/// quote, in the shortest of Rust's plain and exponent forms
/// ([`short_number`]); `1e300` never comes back as 301 digits.
pub const MAX_ECHOED_NUMBER: usize = 32;

/// A number's source text (a TOML or JSON value's span), trimmed and
/// clipped at [`MAX_ECHOED_NUMBER`] characters ([`clip_chars`]).
pub fn number_as_written(text: &str) -> std::borrow::Cow<'_, str> {
    clip_chars(text.trim(), MAX_ECHOED_NUMBER)
}

/// `x` as messages print a number that has no source text: Rust's plain
/// form (`0.4`, `-3`) when it is at most [`MAX_ECHOED_NUMBER`] characters,
/// else the exponent form (`1e300`, `1.5e-300`).
pub fn short_number(x: f64) -> String {
    let plain = x.to_string();
    if plain.len() <= MAX_ECHOED_NUMBER {
        plain
    } else {
        format!("{x:e}")
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn clip_chars_counts_what_it_cuts() {
        assert_eq!(clip_chars("abc", 3), "abc");
        assert_eq!(clip_chars("abcdé", 3), "abc … 2 more characters");
        assert_eq!(clip_chars("", 0), "");
        assert!(matches!(clip_chars("ab", 5), std::borrow::Cow::Borrowed(_)));
        // clipping a clipped text keeps the true count (issue 29 item 5)
        let once = clip_chars("abcdefgh", 3).into_owned();
        assert_eq!(once, "abc … 5 more characters");
        assert_eq!(clip_chars(&once, 3), once);
        assert_eq!(
            clip_chars("abc … x more characters", 3),
            "abc … 20 more characters"
        );
    }

    #[test]
    fn close_matches_rank_similar_and_containing_names() {
        let names = [
            "sqlite.read_query",
            "sqlite.write_query",
            "time.get_current_time",
            "git.status",
        ];
        assert_eq!(
            close_matches("read_query", names, 5),
            vec!["sqlite.read_query"]
        );
        assert_eq!(close_matches("query", names, 1), vec!["sqlite.read_query"]);
        assert_eq!(
            close_matches("sqlite.red_query", names, 5)[0],
            "sqlite.read_query"
        );
        assert!(close_matches("nosuch", names, 5).is_empty());
        assert!(close_matches("x", names, 5).is_empty());
    }

    #[test]
    fn numbers_are_echoed_short() {
        assert_eq!(short_number(0.4), "0.4");
        assert_eq!(short_number(-3.0), "-3");
        assert_eq!(short_number(1e300), "1e300");
        assert_eq!(short_number(-1.5e-300), "-1.5e-300");
        assert_eq!(number_as_written(" 1e308 "), "1e308");
        let long = "1".repeat(40);
        assert_eq!(
            number_as_written(&long),
            format!("{} … 8 more characters", "1".repeat(32))
        );
    }

    use super::*;

    #[test]
    fn json_offsets_are_byte_offsets_clamped_to_the_text() {
        let t = "ab\nçd\n";
        assert_eq!(json_offset(t, 1, 1), 0);
        assert_eq!(json_offset(t, 1, 0), 0);
        assert_eq!(json_offset(t, 2, 1), 3);
        // inside `ç` (2 bytes): back to its start
        assert_eq!(json_offset(t, 2, 2), 3);
        assert_eq!(json_offset(t, 2, 3), 5);
        // past the line's end: its end; past the last line: the text's end
        assert_eq!(json_offset(t, 1, 99), 2);
        assert_eq!(json_offset(t, 9, 1), t.len());
        let f = SourceFile::new("f", t);
        assert_eq!(f.line_col(f.offset_of(2, 3)), (2, 2));
    }

    #[test]
    fn long_lines_are_located_but_not_echoed() {
        use miette::Diagnostic as _;
        let long = format!("a = 1\nb = {}\n", "x".repeat(MAX_SNIPPET_LINE + 1));
        let f = SourceFile::new("f.toml", long.clone());
        let d = super::Diagnostic::at(ErrorKind::Syntax, &f, 10..11, "bad");
        assert_eq!(d.to_string(), "f.toml:2:5: bad");
        assert!(d.source_code().is_none() && d.labels().is_none());
        let d = super::Diagnostic::at(ErrorKind::Syntax, &f, 0..1, "bad");
        // line 1 is short, but its context line 2 is long
        assert!(d.source_code().is_none() && d.labels().is_none());
        let f = SourceFile::new("f.toml", format!("a = 1\nc = 2\n{}", &long[6..]));
        let d = super::Diagnostic::at(ErrorKind::Syntax, &f, 0..1, "bad");
        assert!(d.source_code().is_some() && d.labels().is_some());
    }
}
