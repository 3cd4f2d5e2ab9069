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

#[cfg(test)]
mod tests {
    use super::existing_folder;
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
