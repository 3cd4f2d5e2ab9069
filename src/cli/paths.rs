//! Output paths: one rule for every file the CLI writes where the user
//! says (issue 29). The folder of a file you name must exist; toolgate
//! creates no folder for it, and a missing one is an input error (exit 3)
//! naming the option, the folder and how to make it. The only folders
//! toolgate creates are the one `import bfcl --out DIR` names (its parent
//! must exist) and the default place of `guard --session`'s state files
//! (`$XDG_STATE_HOME/toolgate/sessions`), which is toolgate's own; a
//! `$TOOLGATE_STATE_DIR` you set names a folder, which must exist.

use std::path::Path;

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
