//! Output paths: one rule for every file the CLI writes where the user
//! says (issue 29). The folder of a file you name must exist; toolgate
//! creates no folder for it, and a missing one is an input error (exit 3)
//! naming the option, the folder and how to make it. The only folders
//! toolgate creates are the one `import bfcl --out DIR` names (its parent
//! must exist) and the default place of `guard --session`'s state files
//! (`$XDG_STATE_HOME/toolgate/sessions`), which is toolgate's own; a
//! `$TOOLGATE_STATE_DIR` you set names a folder, which must exist.

//!
//! A file written is never one the command reads (issue 29): `fit --trace
//! t.jsonl --out t.jsonl` and `guard --audit my-policy.toml` are refused
//! before any work, told by same device and inode ([`same_file`]), and so
//! is a file written into the `--tags` folder as a tag file. An audit log
//! named to append to that exists and is not an audit log (its first line
//! is not an audit record) is refused too ([`audit_target`]).

use std::path::{Path, PathBuf};

use super::path_options::{PathOption, Want};

/// A path as echoed in a message (clipped: `toolgate::diag::echo`).
fn shown(path: &Path) -> String {
    toolgate::diag::echo(&path.to_string_lossy()).into_owned()
}

/// Whether `a` and `b` name the same existing file: the same device and
/// inode (hard links and symlinks included), else the same canonical path.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
    }
}

/// The canonical path `path` would have once written: its folder's
/// canonical path and its file name (`None` when the folder is missing).
fn canonical_target(path: &Path) -> Option<PathBuf> {
    if let Ok(c) = std::fs::canonicalize(path) {
        return Some(c);
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = std::fs::canonicalize(dir.unwrap_or(Path::new("."))).ok()?;
    Some(dir.join(path.file_name()?))
}

/// `Ok` unless the output `path` (named by `option`) is one of the files
/// the command reads (`inputs`: `cli::path_options`), a tag file of its
/// `--tags` folder, or the output of an earlier option of `outputs`
/// (`fit --out x --transitions-out x`); the error names both options.
pub fn not_an_input(
    option: &str,
    path: &Path,
    inputs: &[PathOption],
    outputs: &[(&str, &Path)],
) -> Result<(), String> {
    let name = shown(path);
    // the option alone, without a configuration file's place
    let short = option.rsplit(": ").next().unwrap_or(option);
    let verb = if option.ends_with("audit") || option.ends_with("audit_log") {
        "append its records to"
    } else {
        "overwrite"
    };
    for p in inputs {
        if p.path.as_os_str() == "-" {
            continue;
        }
        let clash = match p.want {
            Want::File => same_file(path, &p.path),
            // a `*.toml` file directly in the tags folder is a tag file
            Want::Folder => {
                path.extension().is_some_and(|x| x == "toml")
                    && canonical_target(path)
                        .and_then(|t| t.parent().map(Path::to_path_buf))
                        .is_some_and(|d| std::fs::canonicalize(&p.path).ok() == Some(d))
            }
        };
        if clash {
            let what = match p.want {
                Want::File => format!("is the file given as {} {}", p.option, shown(&p.path)),
                Want::Folder => format!(
                    "is a tag file of the {} folder {}",
                    p.option,
                    shown(&p.path)
                ),
            };
            return Err(format!(
                "{option} {name} {what}: toolgate would {verb} a file this command reads; name another file for {short}"
            ));
        }
    }
    for (other, o) in outputs {
        if *other != option
            && canonical_target(path).is_some_and(|t| canonical_target(o) == Some(t))
        {
            return Err(format!(
                "{option} {name} is also given as {other}: both would be written to one file; name another file for one of them"
            ));
        }
    }
    Ok(())
}

/// `Ok` unless the folder `out` (named by `option`, created when missing)
/// is the folder `input` (named by `input_option`) or inside it: `import
/// bfcl --out DIR` would write its catalog and traces among the files it
/// reads (`--data`).
pub fn outside_folder(
    option: &str,
    out: &Path,
    input_option: &str,
    input: &Path,
) -> Result<(), String> {
    let (Some(target), Ok(within)) = (canonical_target(out), std::fs::canonicalize(input)) else {
        return Ok(());
    };
    if !target.starts_with(&within) {
        return Ok(());
    }
    let place = if target == within {
        format!("is the {input_option} folder")
    } else {
        format!("is inside the {input_option} folder {}", shown(input))
    };
    Err(format!(
        "{option} {} {place}: the files written would land among the files this command reads; name a folder outside {}",
        shown(out),
        shown(input)
    ))
}

/// Largest first line read to tell an audit log, in bytes.
const FIRST_LINE_CAP: u64 = 1 << 20;

/// `Ok` when records may be appended to `path`: it does not exist, is
/// empty (blank), or its first line that is not blank is an audit record
/// (`toolgate::gate::audit::check_record`); else the error for `option`,
/// saying what the file starts with and what was expected.
pub fn audit_target(option: &str, path: &Path) -> Result<(), String> {
    use std::io::{BufRead, Read};
    let Ok(f) = std::fs::File::open(path) else {
        return Ok(()); // created (or its error reported) where it is opened
    };
    if f.metadata().is_ok_and(|m| !m.is_file()) {
        return Ok(()); // a pipe or a device: reported where it is opened, if at all
    }
    let mut r = std::io::BufReader::new(f.take(FIRST_LINE_CAP));
    let mut buf = Vec::new();
    let first = loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return Ok(()),
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim_start_matches('\u{feff}').trim();
        if !line.is_empty() {
            break line.to_string();
        }
    };
    let Err(why) = toolgate::gate::audit::check_record(&first) else {
        return Ok(());
    };
    let short = option.rsplit(": ").next().unwrap_or(option);
    Err(format!(
        "{option} {}: the file exists and is not an audit log: its first line `{}` is not an audit record ({}); {short} appends one JSON line per call to an audit log (a new file, or one written by `guard --audit` or `mcp-proxy --audit`): name another file",
        shown(path),
        toolgate::diag::clip_chars(&first, 60),
        toolgate::diag::clip_chars(&why, 120)
    ))
}

/// `Ok` when the folder that would hold `path` exists (the working
/// directory for a bare file name); else the error for `option`:
/// `--audit a/b/log.jsonl: the folder a/b does not exist; create it first
/// (mkdir -p a/b) or name a file in an existing folder (toolgate creates no
/// folder for a file you name)`.
pub fn existing_folder(option: &str, path: &Path) -> Result<(), String> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "{option} {}: {} is not a folder; name a file in an existing folder",
            path.display(),
            dir.display()
        )),
        Err(_) => Err(format!(
            "{option} {}: the folder {} does not exist; create it first (mkdir -p {}) or name a file in an existing folder (toolgate creates no folder for a file you name)",
            path.display(),
            dir.display(),
            dir.display()
        )),
    }
}

/// [`existing_folder`], and `path` can be written: it is not a folder, and
/// it opens for writing (an existing file is opened to append, which
/// changes nothing; a new one is created and removed again). For an output
/// that is written after a long run (`fit --out`): checked before the run,
/// not after it (issue 29).
pub fn writable_file(option: &str, path: &Path) -> Result<(), String> {
    existing_folder(option, path)?;
    if path.is_dir() {
        return Err(format!(
            "{option} {}: this is a folder; name the file to write (such as {})",
            path.display(),
            path.join("fitted.toml").display()
        ));
    }
    let cannot = |e: std::io::Error| format!("{option} {}: cannot write it: {e}", path.display());
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(cannot)
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(cannot)?;
        // (made only to learn that it can be; the run writes it later)
        let _ = std::fs::remove_file(path);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{existing_folder, writable_file};

    #[test]
    fn an_output_that_cannot_be_written_is_named_before_the_run() {
        let d = tempfile::tempdir().unwrap();
        let e = writable_file("--out", d.path()).unwrap_err();
        assert!(e.contains("this is a folder"), "{e}");
        let new = d.path().join("p.toml");
        assert!(writable_file("--out", &new).is_ok());
        assert!(!new.exists(), "the probe leaves no file");
        std::fs::write(&new, "kept").unwrap();
        assert!(writable_file("--out", &new).is_ok());
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "kept");
    }
    use std::path::Path;

    #[test]
    fn a_missing_folder_is_named_with_the_option() {
        let d = tempfile::tempdir().unwrap();
        assert!(existing_folder("--out", &d.path().join("p.toml")).is_ok());
        assert!(existing_folder("--out", Path::new("p.toml")).is_ok());
        let e = existing_folder("--out", &d.path().join("a/b/p.toml")).unwrap_err();
        let dir = d.path().join("a/b");
        assert!(
            e.contains(&format!("the folder {} does not exist", dir.display())),
            "{e}"
        );
        assert!(e.starts_with("--out "), "{e}");
        std::fs::write(d.path().join("f"), "").unwrap();
        let e = existing_folder("--out", &d.path().join("f/p.toml")).unwrap_err();
        assert!(e.contains("is not a folder"), "{e}");
    }
}
