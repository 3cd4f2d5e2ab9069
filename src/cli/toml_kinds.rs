//! A file given to a TOML option that takes another kind of file (issue
//! 29): an mcp-proxy config as `--policy` (16 problems, "missing the
//! required key `features`" six times), a policy as `mcp-proxy --config`
//! (14 "unknown key" lines), a JSON catalog as either ("TOML syntax
//! error"). Each kind is told by its shape: JSON starts with `{` or `[`
//! and parses; a proxy config has `[[server]]` tables, an `[http]` table
//! or a `policy` path; a policy and a tag file as `path_options` tells
//! them. The message says what the file looks like and which option
//! takes it; the exit code stays that of the option's load error.

use std::path::Path;

use super::json_kinds;
use super::path_options::{Looks, looks_text};

/// Whether `text` is JSON: it starts with `{` or `[` and parses, whole
/// or (JSON Lines) its first line. (`[[server]]` starts with `[` too.)
fn is_json(text: &str) -> bool {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if !t.starts_with(['{', '[']) {
        return false;
    }
    serde_json::from_str::<serde_json::Value>(t).is_ok()
        || t.lines()
            .next()
            .is_some_and(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
}

/// Why `text` looks like an mcp-proxy config ("it has [[server]] tables"),
/// when it does: no policy table, no `[[tool]]`, and `[[server]]`, `[http]`
/// or a `policy` string.
fn proxy_config_sign(text: &str) -> Option<&'static str> {
    if looks_text(text)? != Looks::Neither {
        return None;
    }
    let t = text.parse::<toml::Table>().ok()?;
    if t.contains_key("tool") {
        return None;
    }
    if t.get("server").is_some_and(toml::Value::is_array) {
        Some("it has [[server]] tables")
    } else if t.get("http").is_some_and(toml::Value::is_table) {
        Some("it has an [http] table")
    } else if t.get("policy").is_some_and(toml::Value::is_str) {
        Some("its `policy` key names a policy file")
    } else {
        None
    }
}

/// "is JSON, not TOML: it looks like …", for a JSON file given to the TOML
/// option `option` (named `shown`).
fn json_given(option: &str, shown: &str, text: &str) -> String {
    let what = match json_kinds::kind_of(text) {
        Some(k) => format!("; it {}", k.looks()),
        None => String::new(),
    };
    format!("{option} {shown} is JSON, not TOML{what}")
}

/// The message for a policy option (`--policy`, `--policy-a`, ...) naming
/// `path` when the file is JSON or an mcp-proxy config; `None` otherwise
/// (a tag file is told by `path_options::swapped`).
pub fn as_policy(option: &str, path: &Path) -> Option<String> {
    let text = toolgate::datafile::read_text_file(path).ok()?;
    let shown = toolgate::diag::echo(&path.to_string_lossy()).into_owned();
    let takes = format!(
        "{option} takes a policy file (TOML with [score] and [activation] tables, such as policies/default.toml)"
    );
    if is_json(&text) {
        return Some(format!(
            "{}. {takes}. Are the options swapped?",
            json_given(option, &shown, &text)
        ));
    }
    let sign = proxy_config_sign(&text)?;
    Some(format!(
        "{option} {shown} looks like an mcp-proxy config ({sign}), not a policy: pass it as `mcp-proxy --config {shown}`. {takes}. Are the options swapped?"
    ))
}

/// The message for `mcp-proxy --config` naming `path` when the file is
/// JSON, a policy or a tool-tag file; `None` otherwise.
pub fn as_proxy_config(path: &Path) -> Option<String> {
    let text = toolgate::datafile::read_text_file(path).ok()?;
    let shown = toolgate::diag::echo(&path.to_string_lossy()).into_owned();
    let takes = "--config takes the proxy's configuration (TOML with [[server]] tables and limits: docs/mcp-proxy.md)";
    let what = if is_json(&text) {
        json_given("--config", &shown, &text)
    } else {
        match looks_text(&text)? {
            Looks::Policy => format!(
                "--config {shown} looks like a policy (it has [score], [activation] or [gate] tables), not an mcp-proxy config: pass it as `mcp-proxy --policy {shown}`"
            ),
            Looks::Tags => format!(
                "--config {shown} looks like a tool-tag file (it has [[tool]] tables), not an mcp-proxy config: pass the folder that holds it as `mcp-proxy --tags DIR`"
            ),
            Looks::Neither => return None,
        }
    };
    Some(format!("{what}. {takes}. Are the options swapped?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_told_by_its_shape() {
        assert!(is_json("{\"tools\": []}"));
        assert!(is_json("[1, 2]\n"));
        assert!(!is_json("[[server]]\nname = \"a\"\n"));
        assert!(!is_json("[score]\n"));
        let proxy = "[[server]]\nname = \"a\"\ncommand = [\"x\"]\n";
        assert_eq!(proxy_config_sign(proxy), Some("it has [[server]] tables"));
        assert_eq!(
            proxy_config_sign("[http]\nlisten = \"127.0.0.1:1\"\n"),
            Some("it has an [http] table")
        );
        assert_eq!(proxy_config_sign("[score]\nformula = \"1\"\n"), None);
        assert_eq!(proxy_config_sign("[[tool]]\nname = \"a\"\n"), None);
        assert_eq!(proxy_config_sign("x = 1\n"), None);
    }
}
