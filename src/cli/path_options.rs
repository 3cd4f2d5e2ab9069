//! The files and folders a command line names for reading, checked before
//! anything is loaded, so that every unreadable path is reported with the
//! option that named it (issue 29): `--policy-b nosuch: the file does not
//! exist`, `--tags must be a folder; policies/default.toml is a file`.
//!
//! When a load fails, [`swapped`] looks at the contents of the files named
//! by `--policy` (and `--policy-a`, `--policy-b`, `--shadow-policy`) and
//! `--tags`: a policy has `[score]`, `[activation]` or `[gate]` tables and
//! no `[[tool]]`; a tool-tag file has `[[tool]]` tables and none of those. A
//! tag file given as a policy, or a folder of policies given as `--tags`,
//! is then reported as one problem saying that the options look swapped,
//! instead of every key of the file read in the wrong format.

use std::path::{Path, PathBuf};

use toolgate::LoadError;
use toolgate::diag::{Diagnostic, ErrorKind};

use super::Fail;

/// What an option must name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A file (a symlink to one is followed).
    File,
    /// A folder.
    Folder,
}

/// What the named file is read as, for [`swapped`] and for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A policy file: part of the plan (exit 1 when unreadable).
    Policy,
    /// The tool-tags folder: part of the plan (exit 1).
    Tags,
    /// Another part of the plan (`--tools`): exit 1.
    Plan,
    /// An input (`--input`, `--trace`, `--args @F`, an audit log): exit 3.
    Input,
}

/// One path the command line names for reading.
#[derive(Debug, Clone)]
pub struct PathOption {
    /// The option as written (`--policy-b`), or what a positional argument
    /// is (`the audit log`).
    pub option: &'static str,
    /// The path as given.
    pub path: PathBuf,
    /// A file or a folder.
    pub want: Want,
    /// How it is read.
    pub role: Role,
}

impl PathOption {
    /// A path named by `option`, for `role`.
    pub fn new(option: &'static str, path: impl Into<PathBuf>, want: Want, role: Role) -> Self {
        PathOption {
            option,
            path: path.into(),
            want,
            role,
        }
    }
}

/// The paths of the plan options: `--policy` (or `policy_option`, for
/// `compare`'s two), `--tags`, each `--tools`.
pub fn plan_paths(
    policy: Option<(&'static str, &Path)>,
    tags: Option<&Path>,
    tools: &[PathBuf],
) -> Vec<PathOption> {
    let mut v = Vec::new();
    if let Some((option, p)) = policy {
        v.push(PathOption::new(option, p, Want::File, Role::Policy));
    }
    if let Some(t) = tags {
        v.push(PathOption::new("--tags", t, Want::Folder, Role::Tags));
    }
    v.extend(
        tools
            .iter()
            .map(|t| PathOption::new("--tools", t, Want::File, Role::Plan)),
    );
    v
}

/// [`plan_paths`] of a [`super::PlanArgs`].
pub fn of_plan(plan: &super::PlanArgs) -> Vec<PathOption> {
    plan_paths(
        plan.policy.as_deref().map(|p| ("--policy", p)),
        plan.tags.as_deref(),
        &plan.tools,
    )
}

/// Where `path` points when it is a symbolic link (`read_link` fails on
/// anything else). Asked after `metadata`, which follows links, said "not
/// found": the link is there and its target is missing (a dangling link).
fn dangling_link(path: &Path) -> Option<PathBuf> {
    std::fs::read_link(path).ok()
}

/// Whether `e` is the OS's "too many levels of symbolic links" (`ELOOP`:
/// a link that leads back to itself).
fn is_link_loop(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    return e.raw_os_error() == Some(libc::ELOOP);
    #[cfg(not(unix))]
    return false;
}

/// The problem with `p`, if any: missing, unreadable, or a file where a
/// folder belongs (or the reverse). `-` (stdin) is not checked for an
/// input; for a part of the plan it is the problem: the policy, the tags
/// and the tools are read from files only (issue 29: `--tools -` looked for
/// a file named `-`).
fn problem(p: &PathOption) -> Option<String> {
    if p.path.as_os_str() == "-" {
        let (what, give) = match p.role {
            Role::Input => return None,
            Role::Policy => ("the policy", "a policy file (TOML)"),
            Role::Tags => ("tool tags", "a folder of tag files (TOML)"),
            Role::Plan => (
                "tools",
                "a tools file (JSON); to pass tools with a session, put a `tools` array in the `--input -` object",
            ),
        };
        return Some(format!(
            "{} -: {what} cannot be read from standard input; give {give}",
            p.option
        ));
    }
    let (opt, shown) = (p.option, p.path.display());
    let noun = match p.want {
        Want::File => "file",
        Want::Folder => "folder",
    };
    match (std::fs::metadata(&p.path), p.want) {
        (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => {
            Some(match dangling_link(&p.path) {
                Some(target) => format!(
                    "{opt} {shown}: it is a symbolic link to {}, which does not exist; point the link at the {noun} or name the {noun} itself",
                    super::bounded::name(&target.display().to_string())
                ),
                None => format!("{opt} {shown}: the {noun} does not exist"),
            })
        }
        (Err(e), _) if is_link_loop(&e) => Some(format!(
            "{opt} {shown}: it is a symbolic link that loops (a link leads back to itself); name the {noun} itself"
        )),
        (Err(e), _) => Some(format!("{opt} {shown}: cannot read it: {e}")),
        (Ok(m), Want::File) if m.is_dir() => {
            Some(format!("{opt} must be a file; {shown} is a folder"))
        }
        (Ok(m), Want::Folder) if !m.is_dir() => {
            Some(format!("{opt} must be a folder; {shown} is a file"))
        }
        // The plan's files are read as regular files only (`datafile`):
        // `--policy /dev/null` is named with its option. (Inputs may be
        // pipes: `--input <(…)`.)
        (Ok(m), Want::File) if p.role != Role::Input => {
            toolgate::datafile::not_regular(&m).map(|why| {
                let give = match p.role {
                    Role::Policy => "a policy file (TOML)",
                    _ => "a tools file (JSON)",
                };
                format!("{opt} {shown}: {why}; give {give}")
            })
        }
        _ => None,
    }
}

/// Checks every path of `paths`; the first problem is the error: a load
/// failure (exit 1) for the parts of the plan, an input error (exit 3)
/// for inputs, as README's exit-code table says.
///
/// # Errors
/// [`Fail::Load`] with one [`ErrorKind::Io`] diagnostic, or [`Fail::Input`];
/// the message starts with the option and the path.
pub fn check(paths: &[PathOption]) -> Result<(), Fail> {
    for p in paths {
        if let Some(m) = problem(p) {
            return Err(match p.role {
                Role::Input => Fail::Input(m),
                _ => Fail::Load(LoadError::single(Diagnostic::bare(ErrorKind::Io, m))),
            });
        }
    }
    Ok(())
}

/// Top-level tables only a policy has.
const POLICY_TABLES: [&str; 4] = ["score", "activation", "gate", "features"];

/// What a TOML file looks like by its top-level keys.
#[derive(Debug, PartialEq, Eq)]
pub enum Looks {
    /// `[score]`, `[activation]`, `[gate]` or `[features]`, and no `[[tool]]`.
    Policy,
    /// `[[tool]]` and none of the policy's tables.
    Tags,
    /// Other TOML.
    Neither,
}

fn looks(path: &Path) -> Looks {
    let Ok(text) = toolgate::datafile::read_text_file(path) else {
        return Looks::Neither;
    };
    looks_text(&text).unwrap_or(Looks::Neither)
}

/// What `text` looks like as TOML; `None` when it is not TOML or holds
/// no key (an empty file).
pub fn looks_text(text: &str) -> Option<Looks> {
    let table = text.parse::<toml::Table>().ok().filter(|t| !t.is_empty())?;
    let policy = POLICY_TABLES.iter().any(|k| table.contains_key(*k));
    Some(match (policy, table.contains_key("tool")) {
        (true, false) => Looks::Policy,
        (false, true) => Looks::Tags,
        _ => Looks::Neither,
    })
}

/// The `*.toml` files directly in `dir`, sorted.
fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| toolgate::parse::tags::has_toml_extension(p) && p.is_file())
        .collect();
    v.sort();
    v
}

/// After a failed load: one problem saying that the options look swapped,
/// when a policy option names a tool-tag file or `--tags` names a folder
/// of policies (see the module); `None` otherwise. The problem counts how
/// many problems of the load it replaces.
pub fn swapped(paths: &[PathOption], failed: &LoadError) -> Option<LoadError> {
    let n = failed.diagnostics.len();
    let replaced = format!(
        " ({n} problem{} of reading it in the wrong format not shown)",
        if n == 1 { "" } else { "s" }
    );
    for p in paths {
        let message = match p.role {
            // an mcp-proxy config or a JSON file (`toml_kinds`)
            Role::Policy
                if p.want == Want::File
                    && let Some(m) = super::toml_kinds::as_policy(p.option, &p.path) =>
            {
                format!("{m}{replaced}")
            }
            Role::Policy if p.want == Want::File && looks(&p.path) == Looks::Tags => format!(
                "{} {} looks like a tool-tag file, not a policy: it has [[tool]] tables and no [score], [activation] or [gate] table. Are the options swapped? {} takes a policy file (such as policies/default.toml), --tags the folder of tool-tag files (such as tool-tags/){replaced}",
                p.option,
                p.path.display(),
                p.option
            ),
            Role::Tags => {
                let files = toml_files(&p.path);
                let Some(policy) = files.iter().find(|f| looks(f) == Looks::Policy) else {
                    continue;
                };
                if files.iter().any(|f| looks(f) == Looks::Tags) {
                    continue;
                }
                format!(
                    "--tags {} holds policies, not tool-tag files: {} has [score] or [gate] tables and no [[tool]]. Are the options swapped? --tags takes the folder of tool-tag files (such as tool-tags/), --policy a policy file (such as policies/default.toml){replaced}",
                    p.path.display(),
                    policy.display()
                )
            }
            _ => continue,
        };
        return Some(LoadError::single(Diagnostic::bare(
            ErrorKind::InvalidValue,
            message,
        )));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_problem_names_the_option_and_the_path() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("a.toml");
        std::fs::write(&file, "x = 1\n").unwrap();
        let gone = d.path().join("gone");
        let cases = [
            (
                PathOption::new("--policy-b", &gone, Want::File, Role::Policy),
                format!("--policy-b {}: the file does not exist", gone.display()),
            ),
            (
                PathOption::new("--tags", &file, Want::Folder, Role::Tags),
                format!("--tags must be a folder; {} is a file", file.display()),
            ),
            (
                PathOption::new("--trace", d.path(), Want::File, Role::Input),
                format!("--trace must be a file; {} is a folder", d.path().display()),
            ),
        ];
        for (p, want) in cases {
            assert_eq!(problem(&p).as_deref(), Some(want.as_str()));
        }
        assert_eq!(
            problem(&PathOption::new("--input", "-", Want::File, Role::Input)),
            None
        );
        assert_eq!(
            problem(&PathOption::new(
                "--policy",
                &file,
                Want::File,
                Role::Policy
            )),
            None
        );
    }

    #[test]
    fn a_file_is_told_by_its_tables() {
        let d = tempfile::tempdir().unwrap();
        let w = |name: &str, text: &str| {
            let p = d.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        assert_eq!(looks(&w("t.toml", "[[tool]]\nname = \"x\"\n")), Looks::Tags);
        assert_eq!(
            looks(&w("p.toml", "[score]\nformula = \"1\"\n")),
            Looks::Policy
        );
        assert_eq!(looks(&w("bad.toml", "[[tool]\n")), Looks::Neither);
        assert_eq!(
            looks(&w("both.toml", "[score]\n[[tool]]\n")),
            Looks::Neither
        );
    }
}
