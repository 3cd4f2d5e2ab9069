//! Placeholders in the texts of a policy's `[gate]` that reach the model
//! (issue 29): a `message` of a check or rule, and a `why` of
//! `[[gate.flow.attach]]`, may hold `{detail}`, which the gate replaces
//! with what it found (`gate::types::fill`); a risk rule's `message`
//! (`[[gate.risk.rules]]`) is sent as written, with no placeholder. Any
//! other `{name}` would reach the model as written (`{detial}`), so it is
//! a load error at the value, naming the placeholders allowed there, with
//! a did-you-mean. Braces that do not enclose a name (`{}`, `{ x }`) are
//! text.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use crate::diag::{Diagnostic, ErrorKind, SourceFile};

/// The placeholders the gate fills in a `message` or `why`.
pub const PLACEHOLDERS: &[&str] = &["detail"];

/// Every unknown placeholder in the `message` and `why` texts under
/// `[gate]` of the policy text in `file`, each at its place in the value.
pub fn check(file: &std::sync::Arc<SourceFile>) -> Vec<Diagnostic> {
    let Ok(doc) = DeTable::parse(&file.text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some((_, gate)) = doc.get_ref().iter().find(|(k, _)| k.get_ref() == "gate") {
        walk(file, gate.get_ref(), "gate", &mut out);
    }
    out
}

fn walk(file: &std::sync::Arc<SourceFile>, v: &DeValue<'_>, path: &str, out: &mut Vec<Diagnostic>) {
    match v {
        DeValue::Table(t) => {
            for (k, v) in t.iter() {
                let key: &str = k.get_ref();
                let child = format!("{path}.{key}");
                if let DeValue::String(s) = v.get_ref()
                    && (key == "message" || key == "why")
                {
                    // a risk rule's message is sent as written
                    let allowed: &[&str] = if path.starts_with("gate.risk") {
                        &[]
                    } else {
                        PLACEHOLDERS
                    };
                    text(file, s, v.span(), &child, allowed, out);
                } else {
                    walk(file, v.get_ref(), &child, out);
                }
            }
        }
        DeValue::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk(file, x.get_ref(), &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The `{name}` groups of `s`: the name and its byte range in `s`
/// (braces included).
fn placeholders(s: &str) -> Vec<(&str, Range<usize>)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(open) = s[i..].find('{').map(|o| i + o) {
        let name_end = s[open + 1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(s.len(), |e| open + 1 + e);
        let name = &s[open + 1..name_end];
        if b.get(name_end) == Some(&b'}')
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        {
            out.push((name, open..name_end + 1));
        }
        i = open + 1;
    }
    out
}

fn text(
    file: &std::sync::Arc<SourceFile>,
    s: &str,
    span: Range<usize>,
    path: &str,
    allowed: &[&str],
    out: &mut Vec<Diagnostic>,
) {
    for (name, range) in placeholders(s) {
        if allowed.contains(&name) {
            continue;
        }
        // At the placeholder itself when the value is written plainly
        // (a basic or literal string without escapes), else at the value.
        let written = file.text.get(span.clone()).unwrap_or("");
        let at = match written.find(&s[range.clone()]) {
            Some(o) if !written.contains('\\') => span.start + o..span.start + o + range.len(),
            _ => span.clone(),
        };
        let (message, help) = if allowed.is_empty() {
            (
                format!(
                    "`{path}` holds the placeholder `{{{}}}`, but this text is sent as written: it has no placeholders, and the model would read `{{{}}}` as is",
                    crate::diag::echo(name),
                    crate::diag::echo(name)
                ),
                "write the text without braces".to_string(),
            )
        } else {
            let known = allowed
                .iter()
                .map(|p| format!("{{{p}}}"))
                .collect::<Vec<_>>()
                .join(", ");
            let help = match crate::diag::did_you_mean(name, allowed.iter().copied()) {
                Some(m) => format!("did you mean `{{{m}}}`?"),
                None => format!("the placeholders allowed here: {known}"),
            };
            (
                format!(
                    "`{path}` holds the unknown placeholder `{{{}}}`: the gate fills only {known} here, so the model would read `{{{}}}` as is",
                    crate::diag::echo(name),
                    crate::diag::echo(name)
                ),
                help,
            )
        };
        out.push(Diagnostic::at(ErrorKind::InvalidValue, file, at, message).with_help(help));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_placeholders_are_found_at_their_place() {
        let text = "[gate.checks]\nunknown_tool = { id = \"a\", severity = \"high\", action = \"deny\", message = \"No {detial} {detail} {} { x } {9}\" }\n[[gate.risk.rules]]\nname = \"r\"\nmessage = \"ask {detail}\"\ndecision = \"ask\"\n";
        let f = SourceFile::new("p.toml", text);
        let d = check(&f);
        assert_eq!(d.len(), 2, "{d:?}");
        let s = d[0].to_string();
        assert!(
            s.starts_with("p.toml:2:78: `gate.checks.unknown_tool.message` holds the unknown placeholder `{detial}`: the gate fills only {detail} here"),
            "{s}"
        );
        assert_eq!(d[0].help.as_deref(), Some("did you mean `{detail}`?"));
        assert!(
            d[1].to_string().contains("`gate.risk.rules[0].message` holds the placeholder `{detail}`, but this text is sent as written"),
            "{}",
            d[1]
        );
        assert!(
            check(&SourceFile::new(
                "p.toml",
                "[gate.checks]\nx = { message = \"{detail}\" }\n"
            ))
            .is_empty()
        );
    }
}
