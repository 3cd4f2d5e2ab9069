//! A TOML file given to an option that reads JSON (issue 29): `--tools
//! tool-tags/time.toml` said "not valid JSON" and `eval --input
//! my-policy.toml` "invalid JSON". When such an option's file failed and
//! does not read as JSON but as TOML (or is a `.toml` file), the error says
//! what the file looks like (a policy, a tool-tag file, other TOML) and
//! which option takes it, beside what the option takes.
//!
//! This extends `path_options::swapped` (a tag file as `--policy`, a folder
//! of policies as `--tags`) to the JSON options: `--tools` (a load failure,
//! exit 1) and `--input`, `--trace`, `--args @FILE` and the audit log of
//! `audit summary` (input errors, exit 3). The exit code stays that of the
//! failure.

use std::path::Path;

use toolgate::LoadError;
use toolgate::diag::{Diagnostic, ErrorKind};

use super::path_options::{Looks, PathOption, Role, looks_text};

/// What the JSON option `option` takes, for the message; `None` for an
/// option that does not read JSON.
fn takes(option: &str) -> Option<&'static str> {
    Some(match option {
        "--tools" => "a JSON catalog (an MCP tools/list result or an OpenAI tools array)",
        "--input" => "a JSON input object (context, message, usage, tools)",
        "--trace" => "a JSON Lines trace (docs/trace-format.md)",
        "--args" => "the call's arguments as a JSON object",
        "audit summary" => {
            "a JSON Lines audit log (written by `guard --audit` or `mcp-proxy --audit`)"
        }
        _ => return None,
    })
}

/// Whether `text` reads as JSON: the whole text, or (for JSON Lines) its
/// first line that is not blank.
fn reads_as_json(text: &str) -> bool {
    let text = text.trim_start_matches('\u{feff}');
    serde_json::from_str::<serde_json::Value>(text).is_ok()
        || text
            .lines()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
}

/// The message for `p` when it names a file that is TOML rather than the
/// JSON its option takes; `None` when the file reads as JSON, cannot be
/// read, or shows no sign of TOML.
pub fn describe(p: &PathOption) -> Option<String> {
    let takes = takes(p.option)?;
    if p.path.as_os_str() == "-" {
        return None;
    }
    let text = toolgate::datafile::read_text_file(&p.path).ok()?;
    let shown = toolgate::diag::echo(&p.path.to_string_lossy()).into_owned();
    if reads_as_json(&text) {
        // JSON of another kind: a trace as --input, an input as --trace, ...
        return super::json_kinds::swapped(p.option, &shown, &text, takes);
    }
    let opt = p.option;
    let folder = p
        .path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .display()
        .to_string();
    let what = match looks_text(&text) {
        Some(Looks::Tags) => format!(
            "{shown} is a tool-tag file (TOML, with [[tool]] tables): --tags takes the folder that holds it ({}), {opt} takes {takes}",
            toolgate::diag::echo(&folder)
        ),
        Some(Looks::Policy) => format!(
            "{shown} is a policy (TOML, with [score], [activation] or [gate] tables): --policy takes it, {opt} takes {takes}"
        ),
        Some(Looks::Neither) => format!("{shown} is a TOML file, not JSON: {opt} takes {takes}"),
        None if p.path.extension().is_some_and(|x| x == "toml") => {
            format!("{shown} is named .toml and is not JSON: {opt} takes {takes}")
        }
        None => return None,
    };
    Some(format!("{opt} {what}. Are the options swapped?"))
}

/// After a failed command: when a JSON option's file is TOML
/// ([`describe`]), its problem is said that way. For `--tools` (a load
/// failure, `load`), the file's own diagnostics ("not valid JSON") are
/// replaced by that one problem and the others kept; for an input (`msg`,
/// exit 3), the message is replaced.
pub fn toml_given_for_json(
    paths: &[PathOption],
    load: Option<LoadError>,
    msg: Option<String>,
    input_failed: bool,
) -> (Option<LoadError>, Option<String>) {
    let (mut load, mut msg) = (load, msg);
    for p in paths {
        match (p.role, &mut load) {
            (Role::Plan, Some(e)) => {
                let name = p.path.to_string_lossy();
                // (a problem of the whole file is bare, named in its message)
                let from_file = |d: &Diagnostic| {
                    d.file.as_ref().is_some_and(|f| f.name == name.as_ref())
                        || (d.file.is_none() && d.message.starts_with(&format!("{name}: ")))
                };
                if !e.diagnostics.iter().any(from_file) {
                    continue;
                }
                let Some(m) = describe(p) else { continue };
                e.diagnostics.retain(|d| !from_file(d));
                e.diagnostics
                    .insert(0, Diagnostic::bare(ErrorKind::InvalidValue, m));
            }
            (Role::Input, _) if input_failed && msg.is_some() => {
                if let Some(m) = describe(p) {
                    msg = Some(m);
                    break;
                }
            }
            _ => {}
        }
    }
    (load, msg)
}

#[cfg(test)]
mod tests {
    use super::super::path_options::Want;
    use super::*;

    #[test]
    fn a_toml_file_for_a_json_option_is_named_with_the_option_that_takes_it() {
        let d = tempfile::tempdir().unwrap();
        let w = |name: &str, text: &str| {
            let p = d.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let tags = w("time.toml", "[[tool]]\nname = \"x\"\n");
        let m = describe(&PathOption::new("--tools", &tags, Want::File, Role::Plan)).unwrap();
        assert!(
            m.contains("is a tool-tag file (TOML") && m.contains("--tags takes"),
            "{m}"
        );
        let policy = w("p.toml", "[score]\nformula = \"1\"\n");
        let m = describe(&PathOption::new(
            "--input",
            &policy,
            Want::File,
            Role::Input,
        ))
        .unwrap();
        assert!(
            m.contains("is a policy") && m.contains("--policy takes it"),
            "{m}"
        );
        let json = w("in.toml", "{\"context\": {}}");
        assert_eq!(
            describe(&PathOption::new("--input", &json, Want::File, Role::Input)),
            None
        );
        let trace = w("t.jsonl", "{\"session\": \"a\"}\n{\"session\": \"b\"}\n");
        assert_eq!(
            describe(&PathOption::new("--trace", &trace, Want::File, Role::Input)),
            None
        );
        let broken = w("b.toml", "[[tool]\n");
        let m = describe(&PathOption::new("--tools", &broken, Want::File, Role::Plan)).unwrap();
        assert!(m.contains("named .toml"), "{m}");
        let garbage = w("b.json", "{\"a\": ");
        assert_eq!(
            describe(&PathOption::new(
                "--tools",
                &garbage,
                Want::File,
                Role::Plan
            )),
            None
        );
        assert_eq!(
            describe(&PathOption::new(
                "--policy",
                &tags,
                Want::File,
                Role::Policy
            )),
            None
        );
    }
}
