//! A small reader over `toml`'s spanned document tree ([`toml::de::DeTable`]).
//!
//! serde stops at the first problem; a policy author wants all of them at once.
//! This reader walks the spanned tree, converts values by hand and pushes every
//! problem (wrong type, non-finite number, missing or unknown key with
//! did-you-mean) into one [`Sink`], each with its byte span.

use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::diag::{Diagnostic, ErrorKind, LoadError, Sink, SourceFile};

/// The reading state of one file: the file and the problems found so far.
pub struct Reader {
    /// The file being read.
    pub file: Arc<SourceFile>,
    sink: RefCell<Sink>,
}

impl Reader {
    /// A reader for `file`.
    pub fn new(file: Arc<SourceFile>) -> Self {
        Reader {
            file,
            sink: RefCell::new(Sink::default()),
        }
    }

    /// Records a problem at `span`.
    pub fn error(&self, kind: ErrorKind, span: Range<usize>, msg: impl Into<String>) {
        self.push(Diagnostic::at(kind, &self.file, span, msg));
    }

    /// The text of the value at `span` as written in the file, clipped: how
    /// a range error echoes a number (`1e308`, not 309 digits;
    /// [`crate::diag::number_as_written`]).
    pub fn written(&self, span: &Range<usize>) -> String {
        let text = self.file.text.get(span.clone()).unwrap_or_default();
        crate::diag::number_as_written(text).into_owned()
    }

    /// Records a prepared diagnostic.
    pub fn push(&self, d: Diagnostic) {
        self.sink.borrow_mut().push(d);
    }

    /// Whether no problem was recorded.
    pub fn ok(&self) -> bool {
        self.sink.borrow().is_empty()
    }

    /// The recorded problems.
    pub fn into_diagnostics(self) -> Vec<Diagnostic> {
        self.sink.into_inner().diagnostics
    }

    /// Parses the file as a TOML document. An empty (or comment-only) file and a
    /// syntax error are errors; the callback reads the root table.
    pub fn parse_document<T>(
        file: Arc<SourceFile>,
        read: impl FnOnce(&Table<'_, '_>) -> T,
    ) -> Result<T, LoadError> {
        let (value, diagnostics) = Self::parse_document_partial(file, read)?;
        if diagnostics.is_empty() {
            Ok(value)
        } else {
            Err(LoadError { diagnostics })
        }
    }

    /// [`Reader::parse_document`], also giving back what was read when the
    /// document has problems past its syntax: the value (placeholders where
    /// a value was wrong) with the problems found. A check that reads only
    /// values that were right (a data file a valid key names) can then run
    /// in the same load, so its problems are reported with these (issue 29).
    /// `Err`: a syntax error or an empty file, when nothing could be read.
    pub fn parse_document_partial<T>(
        file: Arc<SourceFile>,
        read: impl FnOnce(&Table<'_, '_>) -> T,
    ) -> Result<(T, Vec<Diagnostic>), LoadError> {
        let reader = Reader::new(file.clone());
        let text: &str = &file.text;
        let doc = match DeTable::parse(text) {
            Ok(doc) => doc,
            Err(e) => {
                let span = e.span().unwrap_or(0..0);
                let msg = e.message().trim().to_string();
                return Err(Diagnostic::at(
                    ErrorKind::Syntax,
                    &file,
                    span,
                    format!("TOML syntax error: {msg}"),
                )
                .into());
            }
        };
        if doc.get_ref().is_empty() {
            return Err(Diagnostic::at(
                ErrorKind::Empty,
                &file,
                0..text.len(),
                "the file is empty (or holds only comments); an empty file is an error, never \"all defaults\"",
            )
            .into());
        }
        let span = doc.span();
        let root = Table::new(&reader, doc.get_ref(), span, String::new());
        let value = read(&root);
        drop(root);
        // In the order of the file (the readers of the tables push them in
        // the order they read).
        let mut diagnostics = reader.into_diagnostics();
        diagnostics.sort_by_key(|d| d.span.as_ref().map_or(0, |s| s.start));
        Ok((value, diagnostics))
    }
}

/// A TOML table being read; remembers which keys were asked for so that
/// [`Table::finish`] can report the others as unknown.
pub struct Table<'r, 'a> {
    r: &'r Reader,
    table: &'a DeTable<'a>,
    /// Span of the whole table.
    pub span: Range<usize>,
    path: String,
    known: RefCell<Vec<String>>,
    /// The required keys found missing ([`Table::require`]), each with the
    /// message of its diagnostic.
    missing: RefCell<Vec<(String, String)>>,
    open: bool,
    finished: std::cell::Cell<bool>,
}

fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

impl<'r, 'a> Table<'r, 'a> {
    fn new(r: &'r Reader, table: &'a DeTable<'a>, span: Range<usize>, path: String) -> Self {
        Table {
            r,
            table,
            span,
            path,
            known: RefCell::new(Vec::new()),
            missing: RefCell::new(Vec::new()),
            open: false,
            finished: std::cell::Cell::new(false),
        }
    }

    /// The reader (for errors).
    pub fn reader(&self) -> &'r Reader {
        self.r
    }

    /// The dotted path of this table (`activation.cold_start`), empty for the root.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn entry(&self, key: &str) -> Option<&'a Spanned<DeValue<'a>>> {
        // (each key once: `known keys here` lists no key twice)
        let mut known = self.known.borrow_mut();
        if !known.iter().any(|k| k == key) {
            known.push(key.to_string());
        }
        drop(known);
        self.table
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == key)
            .map(|(_, v)| v)
    }

    /// Every key of the table with its span, in order, without marking
    /// any as known (to look for a misspelling among them).
    pub fn keys(&self) -> Vec<(String, Range<usize>)> {
        self.table
            .iter()
            .map(|(k, _)| (k.get_ref().to_string(), k.span()))
            .collect()
    }

    /// Span of the key `key` itself, if present.
    pub fn key_span(&self, key: &str) -> Option<Range<usize>> {
        self.table
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == key)
            .map(|(k, _)| k.span())
    }

    /// The value of `key`, if present (marks the key as known).
    pub fn get(&self, key: &str) -> Option<ValOwned<'r, 'a>> {
        let e = self.entry(key)?;
        Some(ValOwned {
            r: self.r,
            v: e.get_ref(),
            span: e.span(),
            path: self.child_path(key),
        })
    }

    /// Like [`Table::get`] but records a missing-key error when absent.
    pub fn require(&self, key: &str) -> Option<ValOwned<'r, 'a>> {
        let v = self.get(key);
        if v.is_none() {
            let what = if self.path.is_empty() {
                "the file".to_string()
            } else {
                format!("[{}]", crate::diag::echo(&self.path))
            };
            let report = format!("{what} is missing the required key `{key}`");
            self.missing
                .borrow_mut()
                .push((key.to_string(), report.clone()));
            // a key required twice (read by two passes) is missing once
            let said = self.r.sink.borrow().diagnostics.iter().any(|d| {
                d.kind == ErrorKind::MissingKey
                    && d.span == Some(self.span.clone())
                    && d.message == report
            });
            if !said {
                self.r
                    .error(ErrorKind::MissingKey, self.span.clone(), report);
            }
        }
        v
    }

    /// A float (integers accepted) at `key`, if present and valid.
    pub fn f64(&self, key: &str) -> Option<(f64, Range<usize>)> {
        self.get(key)
            .and_then(|v| v.f64().map(|x| (x, v.span.clone())))
    }

    /// A required float.
    pub fn req_f64(&self, key: &str) -> Option<(f64, Range<usize>)> {
        self.require(key)
            .and_then(|v| v.f64().map(|x| (x, v.span.clone())))
    }

    /// A string at `key`.
    pub fn str(&self, key: &str) -> Option<(String, Range<usize>)> {
        self.get(key)
            .and_then(|v| v.string().map(|s| (s, v.span.clone())))
    }

    /// A boolean at `key`.
    pub fn bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(|v| v.bool())
    }

    /// An integer at `key`.
    pub fn int(&self, key: &str) -> Option<(i64, Range<usize>)> {
        self.get(key)
            .and_then(|v| v.int().map(|x| (x, v.span.clone())))
    }

    /// A list of strings at `key` (each with its span).
    pub fn str_list(&self, key: &str) -> Option<Vec<(String, Range<usize>)>> {
        self.get(key).and_then(|v| v.str_list())
    }

    /// A sub-table at `key`.
    pub fn table(&self, key: &str) -> Option<Table<'r, 'a>> {
        let e = self.entry(key)?;
        match e.get_ref() {
            DeValue::Table(t) => Some(Table::new(self.r, t, e.span(), self.child_path(key))),
            other => {
                self.r.error(
                    ErrorKind::WrongType,
                    e.span(),
                    format!(
                        "`{}` must be a table, found {}",
                        self.child_path(key),
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    /// An array of tables (`[[key]]`) at `key`; empty when absent.
    pub fn tables(&self, key: &str) -> Vec<Table<'r, 'a>> {
        let Some(e) = self.entry(key) else {
            return Vec::new();
        };
        let path = self.child_path(key);
        match e.get_ref() {
            DeValue::Array(items) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item.get_ref() {
                        DeValue::Table(t) => {
                            out.push(Table::new(self.r, t, item.span(), format!("{path}[{i}]")))
                        }
                        other => self.r.error(
                            ErrorKind::WrongType,
                            item.span(),
                            format!("`{path}[{i}]` must be a table, found {}", type_name(other)),
                        ),
                    }
                }
                out
            }
            other => {
                self.r.error(
                    ErrorKind::WrongType,
                    e.span(),
                    format!(
                        "`{path}` must be an array of tables ([[{path}]]), found {}",
                        type_name(other)
                    ),
                );
                Vec::new()
            }
        }
    }

    /// Every entry of a table whose keys are free (weights, domains): marks the
    /// table as open so no key is reported unknown.
    pub fn entries(&mut self) -> Vec<(String, Range<usize>, ValOwned<'r, 'a>)> {
        self.open = true;
        self.table
            .iter()
            .map(|(k, v)| {
                let key = k.get_ref().to_string();
                (
                    key.clone(),
                    k.span(),
                    ValOwned {
                        r: self.r,
                        v: v.get_ref(),
                        span: v.span(),
                        path: self.child_path(&key),
                    },
                )
            })
            .collect()
    }

    /// Reports every key that was never asked for, with a did-you-mean among the
    /// keys that were. An unknown key that is the misspelling of a required
    /// key found missing is one problem, not two: it stands at the
    /// misspelt key, and the missing-key report of the table is dropped
    /// (issue 29: the count of problems is the count of mistakes).
    pub fn finish(&self) {
        if self.open || self.finished.replace(true) {
            return;
        }
        let known = self.known.borrow();
        let where_ = if self.path.is_empty() {
            "at the top level".to_string()
        } else {
            format!("in [{}]", crate::diag::echo(&self.path))
        };
        let mut missing = std::mem::take(&mut *self.missing.borrow_mut());
        let mut folded_keys: Vec<&str> = Vec::new();
        for (k, _) in self.table.iter() {
            let key: &str = k.get_ref().as_ref();
            if known.iter().any(|x| x == key) {
                continue;
            }
            let Some(meant) = crate::diag::did_you_mean(key, known.iter().map(|s| s.as_str()))
            else {
                continue;
            };
            let Some(i) = missing.iter().position(|(m, _)| m == meant) else {
                continue;
            };
            let (meant, report) = missing.swap_remove(i);
            let mut sink = self.r.sink.borrow_mut();
            if let Some(at) = sink.diagnostics.iter().position(|d| {
                d.kind == ErrorKind::MissingKey
                    && d.span == Some(self.span.clone())
                    && d.message == report
            }) {
                sink.diagnostics.remove(at);
            }
            drop(sink);
            folded_keys.push(key);
            self.r.push(
                Diagnostic::at(
                    ErrorKind::UnknownKey,
                    &self.r.file,
                    k.span(),
                    format!(
                        "unknown key `{}` {where_}, and the required key `{meant}` is missing",
                        crate::diag::echo(key)
                    ),
                )
                .with_help(format!("did you mean `{meant}`?")),
            );
        }
        for (k, _) in self.table.iter() {
            let key: &str = k.get_ref().as_ref();
            if !known.iter().any(|x| x == key) && !folded_keys.contains(&key) {
                let where_ = if self.path.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("in [{}]", crate::diag::echo(&self.path))
                };
                let mut d = Diagnostic::at(
                    ErrorKind::UnknownKey,
                    &self.r.file,
                    k.span(),
                    format!("unknown key `{}` {where_}", crate::diag::echo(key)),
                )
                .with_suggestion(key, known.iter().map(|s| s.as_str()));
                if d.help.is_none() {
                    d = d.with_help(format!("known keys here: {}", known.join(", ")));
                }
                self.r.push(d);
            }
        }
    }
}

impl Drop for Table<'_, '_> {
    /// Unknown keys are reported when the reading code is done with a table.
    fn drop(&mut self) {
        self.finish();
    }
}

/// A value of the document with its span and dotted key path.
pub struct ValOwned<'r, 'a> {
    r: &'r Reader,
    v: &'a DeValue<'a>,
    /// Span of the value.
    pub span: Range<usize>,
    /// Dotted key path, for messages.
    pub path: String,
}

impl<'r, 'a> ValOwned<'r, 'a> {
    fn wrong(&self, want: &str) {
        self.r.error(
            ErrorKind::WrongType,
            self.span.clone(),
            format!(
                "`{}` must be {want}, found {}",
                crate::diag::echo(&self.path),
                type_name(self.v)
            ),
        );
    }

    /// The raw value.
    pub fn raw(&self) -> &'a DeValue<'a> {
        self.v
    }

    /// A finite float; integers are accepted and converted.
    pub fn f64(&self) -> Option<f64> {
        let x = match self.v {
            DeValue::Float(f) => {
                let s = f.as_str().replace('_', "");
                match s.parse::<f64>() {
                    Ok(x) => x,
                    Err(_) => {
                        self.wrong("a number");
                        return None;
                    }
                }
            }
            DeValue::Integer(i) => {
                let s = i.as_str().replace('_', "");
                match i64::from_str_radix(&s, i.radix()) {
                    Ok(x) => x as f64,
                    Err(_) => {
                        self.r.error(
                            ErrorKind::OutOfRange,
                            self.span.clone(),
                            format!("`{}` is too large", crate::diag::echo(&self.path)),
                        );
                        return None;
                    }
                }
            }
            _ => {
                self.wrong("a number");
                return None;
            }
        };
        if !x.is_finite() {
            self.r.error(
                ErrorKind::NonFinite,
                self.span.clone(),
                format!(
                    "`{}` must be a finite number, found {x}",
                    crate::diag::echo(&self.path)
                ),
            );
            return None;
        }
        Some(x)
    }

    /// An integer.
    pub fn int(&self) -> Option<i64> {
        match self.v {
            DeValue::Integer(i) => {
                let s = i.as_str().replace('_', "");
                match i64::from_str_radix(&s, i.radix()) {
                    Ok(x) => Some(x),
                    Err(_) => {
                        self.r.error(
                            ErrorKind::OutOfRange,
                            self.span.clone(),
                            format!("`{}` is too large", crate::diag::echo(&self.path)),
                        );
                        None
                    }
                }
            }
            _ => {
                self.wrong("an integer");
                None
            }
        }
    }

    /// A string.
    pub fn string(&self) -> Option<String> {
        match self.v {
            DeValue::String(s) => Some(s.to_string()),
            _ => {
                self.wrong("a string");
                None
            }
        }
    }

    /// A boolean.
    pub fn bool(&self) -> Option<bool> {
        match self.v {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.wrong("a boolean (true or false)");
                None
            }
        }
    }

    /// A list of strings, each with its span.
    pub fn str_list(&self) -> Option<Vec<(String, Range<usize>)>> {
        match self.v {
            DeValue::Array(items) => {
                let mut out = Vec::new();
                let mut ok = true;
                for (i, it) in items.iter().enumerate() {
                    match it.get_ref() {
                        DeValue::String(s) => out.push((s.to_string(), it.span())),
                        other => {
                            ok = false;
                            self.r.error(
                                ErrorKind::WrongType,
                                it.span(),
                                format!(
                                    "`{}[{i}]` must be a string, found {}",
                                    crate::diag::echo(&self.path),
                                    type_name(other)
                                ),
                            );
                        }
                    }
                }
                ok.then_some(out)
            }
            _ => {
                self.wrong("an array of strings");
                None
            }
        }
    }

    /// A table view of this value.
    pub fn table(&self) -> Option<Table<'r, 'a>> {
        match self.v {
            DeValue::Table(t) => Some(Table::new(self.r, t, self.span.clone(), self.path.clone())),
            _ => {
                self.wrong("a table");
                None
            }
        }
    }

    /// Converts the value to JSON (for inline JSON Schemas and example inputs).
    pub fn to_json(&self) -> Option<serde_json::Value> {
        de_to_json(self.v).or_else(|| {
            self.r.error(
                ErrorKind::InvalidValue,
                self.span.clone(),
                format!(
                    "`{}` holds a value JSON cannot represent (a datetime or a non-finite float)",
                    crate::diag::echo(&self.path)
                ),
            );
            None
        })
    }
}

/// Converts a TOML value to JSON; `None` for datetimes and non-finite floats.
pub fn de_to_json(v: &DeValue<'_>) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    Some(match v {
        DeValue::String(s) => J::String(s.to_string()),
        DeValue::Integer(i) => {
            let s = i.as_str().replace('_', "");
            J::from(i64::from_str_radix(&s, i.radix()).ok()?)
        }
        DeValue::Float(f) => {
            let x: f64 = f.as_str().replace('_', "").parse().ok()?;
            J::from(serde_json::Number::from_f64(x)?)
        }
        DeValue::Boolean(b) => J::Bool(*b),
        DeValue::Datetime(_) => return None,
        DeValue::Array(a) => J::Array(
            a.iter()
                .map(|x| de_to_json(x.get_ref()))
                .collect::<Option<Vec<_>>>()?,
        ),
        DeValue::Table(t) => {
            let mut m = serde_json::Map::new();
            for (k, v) in t.iter() {
                m.insert(k.get_ref().to_string(), de_to_json(v.get_ref())?);
            }
            J::Object(m)
        }
    })
}
