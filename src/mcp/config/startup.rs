//! The paths inside a proxy configuration, checked at start-up before any
//! server starts (issue 29): a `[[server]] cwd = "/nonexistent"` with
//! `command = "true"` was reported at run time as "cannot start `true`:
//! No such file or directory" (the error of the `chdir`, blamed on the
//! program), and a command missing from `PATH` only as a server that keeps
//! restarting. Here each local server's working directory must be a
//! folder and its command a program that can be run, and each problem
//! stands at `FILE:LINE:COLUMN` of its value in the `--config` file.
//!
//! The program is looked up as the child's `exec` does (Rust's `Command`
//! on Unix): a name with a `/` as a path (a relative one from the server's
//! `cwd` when it has one), any other name in the `PATH` of the server's
//! `env` when it sets one, else the proxy's.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

use super::{ProxyConfig, ServerSpec};

/// Why the local server `spec` cannot start as configured, as
/// `(key, message)` pairs (`key`: `cwd` or `command`, the `[[server]]`
/// key at fault): its working directory is missing or not a folder, its
/// command is not found (on `PATH`, or at its path) or not executable.
/// Empty for a remote server (`url`) and for one that can start. The
/// messages name the server and the path; the caller adds where the value
/// was given (a file's `FILE:LINE:COLUMN`, or `--server`).
pub fn local_server_problems(spec: &ServerSpec) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if spec.url.is_some() {
        return out;
    }
    let name = crate::diag::echo(&spec.name);
    let mut cwd_ok = true;
    if let Some(d) = &spec.cwd {
        match std::fs::metadata(d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                cwd_ok = false;
                out.push((
                    "cwd",
                    format!(
                        "server `{name}`: the working directory {} is a file, not a folder",
                        d.display()
                    ),
                ));
            }
            Err(_) => {
                cwd_ok = false;
                out.push((
                    "cwd",
                    format!(
                        "server `{name}`: the working directory {} does not exist; create it or fix `cwd`",
                        d.display()
                    ),
                ));
            }
        }
    }
    let path_var = spec
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .or_else(|| std::env::var_os("PATH"));
    let cwd = spec.cwd.as_deref().filter(|_| cwd_ok);
    if let Err(why) = find_program(&spec.command, cwd, path_var.as_deref()) {
        out.push(("command", format!("server `{name}`: {why}")));
    }
    out
}

/// Where `program` would be run from; else why it cannot be.
fn find_program(
    program: &str,
    cwd: Option<&Path>,
    path_var: Option<&std::ffi::OsStr>,
) -> Result<PathBuf, String> {
    let shown = crate::diag::echo(program);
    if program.contains('/') {
        let p = match cwd {
            // `./x` from `/d` is shown as `/d/x`
            Some(d) if Path::new(program).is_relative() => d.join(
                Path::new(program)
                    .components()
                    .filter(|c| *c != std::path::Component::CurDir)
                    .collect::<PathBuf>(),
            ),
            _ => PathBuf::from(program),
        };
        return match std::fs::metadata(&p) {
            Ok(m) if m.is_dir() => Err(format!(
                "the command {} is a folder, not a program",
                p.display()
            )),
            Ok(m) if !executable(&m) => Err(format!(
                "the command {} is not executable (chmod +x {}, or run it through its interpreter)",
                p.display(),
                p.display()
            )),
            Ok(_) => Ok(p),
            Err(_) => Err(format!("the command {} does not exist", p.display())),
        };
    }
    let dirs: Vec<PathBuf> = path_var
        .map(|v| std::env::split_paths(v).collect())
        .unwrap_or_default();
    let mut not_executable = None;
    for d in &dirs {
        let p = d.join(program);
        if let Ok(m) = std::fs::metadata(&p)
            && m.is_file()
        {
            if executable(&m) {
                return Ok(p);
            }
            not_executable.get_or_insert(p);
        }
    }
    Err(match not_executable {
        Some(p) => format!(
            "the command `{shown}` is on PATH as {}, which is not executable",
            p.display()
        ),
        None => format!(
            "the command `{shown}` is not found on PATH ({} folders searched); install it or give its full path",
            dirs.len()
        ),
    })
}

#[cfg(unix)]
fn executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.is_file() && m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(m: &std::fs::Metadata) -> bool {
    m.is_file()
}

/// The 1-based line and column of a value of the configuration `text`:
/// the top-level `key` (`server`: `None`), or `key` of the
/// `server`-th `[[server]]` (0-based); `None` when the text does not
/// parse or has no such value.
pub fn value_location(text: &str, server: Option<usize>, key: &str) -> Option<(usize, usize)> {
    let doc = DeTable::parse(text).ok()?;
    let table = match server {
        None => doc.get_ref(),
        Some(i) => {
            let DeValue::Array(items) = doc.get_ref().get("server")?.get_ref() else {
                return None;
            };
            let DeValue::Table(t) = items.get(i)?.get_ref() else {
                return None;
            };
            t
        }
    };
    let start = table.get(key)?.span().start;
    Some(crate::diag::SourceFile::new("", text).line_col(start))
}

/// [`local_server_problems`] of every server of `cfg` (read from the
/// configuration `text`), each at its value's line and column when it is
/// found there.
pub(super) fn server_problems(
    cfg: &ProxyConfig,
    text: &str,
) -> Vec<(Option<(usize, usize)>, String)> {
    let mut out = Vec::new();
    for (i, s) in cfg.servers.iter().enumerate() {
        for (key, m) in local_server_problems(s) {
            out.push((value_location(text, Some(i), key), m));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str, cwd: Option<&Path>) -> ServerSpec {
        let mut s = ServerSpec::parse_cli("t=x").unwrap();
        s.command = command.into();
        s.cwd = cwd.map(Path::to_path_buf);
        s
    }

    #[test]
    fn a_missing_cwd_is_named_as_such_not_as_the_command() {
        let p = local_server_problems(&spec("true", Some(Path::new("/nonexistent-i29"))));
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].0, "cwd");
        assert!(
            p[0].1
                .contains("the working directory /nonexistent-i29 does not exist")
        );
        assert!(local_server_problems(&spec("true", Some(Path::new("/")))).is_empty());
    }

    #[test]
    fn commands_are_found_on_path_or_at_their_path() {
        let d = tempfile::tempdir().unwrap();
        let p = local_server_problems(&spec("no-such-program-i29", None));
        assert_eq!(p[0].0, "command");
        assert!(
            p[0].1
                .contains("`no-such-program-i29` is not found on PATH"),
            "{p:?}"
        );
        let f = d.path().join("script");
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        let p = local_server_problems(&spec(f.to_str().unwrap(), None));
        assert!(p[0].1.contains("is not executable"), "{p:?}");
        // a relative path is taken from the server's cwd
        let p = local_server_problems(&spec("./script", Some(d.path())));
        assert!(p[0].1.contains(&format!("{}", f.display())), "{p:?}");
        // the server's own PATH is searched
        let mut s = spec("script", None);
        s.env.push(("PATH".into(), d.path().display().to_string()));
        assert!(local_server_problems(&s)[0].1.contains("not executable"));
    }

    #[test]
    fn values_are_located() {
        let text = "audit = \"a\"\n[[server]]\nname = \"a\"\ncommand = \"x\"\n[[server]]\nname = \"b\"\n  cwd = \"/n\"\n";
        assert_eq!(value_location(text, None, "audit"), Some((1, 9)));
        assert_eq!(value_location(text, Some(1), "cwd"), Some((7, 9)));
        assert_eq!(value_location(text, Some(2), "cwd"), None);
    }
}
