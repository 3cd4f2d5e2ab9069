//! Every problem of a `mcp-proxy --config` file in one run (issue 29:
//! they came in stages, the value problems first, then the first
//! whole-config problem, then the paths). The values and keys are checked
//! on the spanned tree ([`super::values`]); the entries at fault are then
//! blanked out of the text (their bytes become spaces, newlines kept, so
//! every line and column of the rest holds), and the rest is read and
//! checked as a whole ([`ProxyConfig::check_placed`]) and for its paths
//! ([`super::startup`]). When the rest cannot be read so (a problem that
//! is a whole table, a blanked entry that leaves an inline table broken),
//! the value problems are all there is to report.

use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};

use super::{ProxyConfig, check, startup, toml_error, values};

/// A problem: where (1-based line and column) and what.
type Located = (Option<(usize, usize)>, String);

/// The configuration of `text` (the file `file`, relative paths from
/// `base`), or every problem found, one `FILE:LINE:COLUMN: message` a
/// line, in the file's order.
pub(super) fn read(text: &str, base: &Path, file: &Path) -> Result<ProxyConfig, String> {
    let lc = |at: usize| crate::diag::SourceFile::new("", text).line_col(at);
    let found = values::problems(text);
    let mut problems: Vec<Located> = found
        .iter()
        .map(|(span, m)| (Some(lc(span.start)), m.clone()))
        .collect();
    let rest = if found.is_empty() {
        // a syntax error, or one the tree walk does not see: serde's
        if let Err(e) = toml::from_str::<super::RawConfig>(text) {
            let (at, m) = toml_error::describe(text, &e);
            return Err(render(file, vec![(at, m)]));
        }
        Some(text.to_string())
    } else {
        without(text, &found)
    };
    // (the rest keeps every offset: places found in it hold in `text`)
    let cfg = rest.and_then(|t| Some((ProxyConfig::parse_unchecked(&t, base).ok()?, t)));
    if let Some((cfg, rest)) = &cfg {
        for (place, m) in cfg.check_placed() {
            problems.push((check::location(rest, &place), m));
        }
        problems.extend(startup::server_problems(cfg, rest));
    }
    let cfg = cfg.map(|(c, _)| c);
    match cfg {
        Some(cfg) if problems.is_empty() => Ok(cfg),
        _ => Err(render(file, problems)),
    }
}

/// The problems as the CLI prints them, in the file's order (those
/// without a place last), each once, then `N problems found` when there
/// are several.
fn render(file: &Path, mut problems: Vec<Located>) -> String {
    problems.sort_by_key(|(at, _)| at.unwrap_or((usize::MAX, usize::MAX)));
    problems.dedup();
    let n = problems.len();
    let mut lines: Vec<String> = problems
        .into_iter()
        .map(|(at, m)| match at {
            Some((l, c)) => format!("{}:{l}:{c}: {m}", file.display()),
            None => format!("{}: {m}", file.display()),
        })
        .collect();
    if n > 1 {
        lines.push(format!("{n} problems found"));
    }
    lines.join("\n")
}

/// `text` without what holds each problem: the whole `[[server]]` it
/// stands in (its header and keys: a server with a bad value is left out,
/// rather than read without the value), else its entry (`key = value`);
/// `None` when a problem is in no entry that can go (it is a whole table),
/// or the rest does not read cleanly.
fn without(text: &str, problems: &[(Range<usize>, String)]) -> Option<String> {
    let doc = DeTable::parse(text).ok()?;
    let servers: Vec<Range<usize>> = match doc.get_ref().get("server").map(|v| v.get_ref()) {
        Some(DeValue::Array(items)) => items
            .iter()
            .filter_map(|it| {
                let DeValue::Table(t) = it.get_ref() else {
                    return None;
                };
                let end = t
                    .iter()
                    .map(|(k, v)| k.span().end.max(v.span().end))
                    .fold(it.span().end, usize::max);
                Some(it.span().start..end)
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut out = text.to_string();
    for (span, _) in problems {
        let at = span.start;
        let range = match servers
            .iter()
            .find(|r| r.start <= at && at < r.end.max(r.start + 1))
        {
            Some(r) => r.clone(),
            None => innermost(doc.get_ref(), at)?,
        };
        crate::diag::blank(&mut out, range);
    }
    (values::problems(&out).is_empty() && toml::from_str::<super::RawConfig>(&out).is_ok())
        .then_some(out)
}

/// The span, key to value, of the entry of `t` (at any depth) that is not
/// a table and whose key starts at `at` or whose value holds `at`; `None`
/// when there is none (the problem is a whole table or array of tables,
/// which cannot go without dropping a section).
fn innermost(t: &DeTable<'_>, at: usize) -> Option<Range<usize>> {
    for (k, v) in t.iter() {
        match v.get_ref() {
            DeValue::Table(inner) => {
                if let Some(r) = innermost(inner, at) {
                    return Some(r);
                }
            }
            DeValue::Array(items)
                if items
                    .iter()
                    .any(|i| matches!(i.get_ref(), DeValue::Table(_))) =>
            {
                for it in items {
                    if let DeValue::Table(inner) = it.get_ref()
                        && let Some(r) = innermost(inner, at)
                    {
                        return Some(r);
                    }
                }
            }
            _ => {
                let (ks, vs) = (k.span(), v.span());
                if ks.start == at || (vs.start <= at && at < vs.end) {
                    return Some(ks.start.min(vs.start)..vs.end.max(ks.end));
                }
            }
        }
    }
    None
}
