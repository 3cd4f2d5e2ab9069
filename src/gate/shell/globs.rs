//! A read whose path is a glob (`cat ~/.s*/id_*`, issue 30, item 5): the
//! shell expands it before the program runs, so the text alone does not
//! say which files are read. The glob is expanded here against the file
//! system (as the shell would, dotfiles only for a component that starts
//! with `.`), within a budget of directory entries; and, failing closed
//! where this machine has no such file yet, a glob component that names
//! hidden entries in a home directory may name credentials.

use std::path::{Path, PathBuf};

/// Most directory entries read to expand one glob.
const MAX_ENTRIES: usize = 4096;
/// Most paths kept while expanding one glob.
const MAX_PATHS: usize = 256;

/// Whether `text` has an unquoted-looking glob character.
pub(super) fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// A glob component (`.s*`, `id_[rd]sa`) as an anchored regex.
pub(super) fn component_regex(pat: &str) -> Option<regex::Regex> {
    let mut re = String::from("^");
    let mut chars = pat.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let mut class = String::from("[");
                if matches!(chars.peek(), Some('!') | Some('^')) {
                    chars.next();
                    class.push('^');
                }
                let mut closed = false;
                for d in chars.by_ref() {
                    if d == ']' {
                        closed = true;
                        break;
                    }
                    if d == '\\' || d == '[' {
                        class.push('\\');
                    }
                    class.push(d);
                }
                if !closed {
                    return None;
                }
                class.push(']');
                re.push_str(&class);
            }
            other => re.push_str(&regex::escape(&other.to_string())),
        }
    }
    re.push('$');
    regex::Regex::new(&re).ok()
}

/// The existing paths absolute glob `path` names, within the budget.
fn expand(path: &str) -> Vec<PathBuf> {
    let mut paths = vec![PathBuf::from("/")];
    let mut entries = 0;
    for comp in path.split('/').filter(|c| !c.is_empty()) {
        if !has_glob(comp) {
            for p in &mut paths {
                p.push(comp);
            }
            continue;
        }
        let Some(re) = component_regex(comp) else {
            return Vec::new();
        };
        let hidden = comp.starts_with('.');
        let mut next = Vec::new();
        for dir in &paths {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in rd.flatten() {
                entries += 1;
                if entries > MAX_ENTRIES || next.len() >= MAX_PATHS {
                    break;
                }
                let name = e.file_name();
                let Some(name) = name.to_str() else { continue };
                if (hidden || !name.starts_with('.')) && re.is_match(name) {
                    next.push(dir.join(name));
                }
            }
        }
        paths = next;
        if paths.is_empty() {
            break;
        }
    }
    paths
}

/// Whether `home` (`/root`, `/home/alice`) holds `path`.
fn in_a_home(path: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if home
        .as_deref()
        .is_some_and(|h| h != Path::new("/") && path.starts_with(h))
    {
        return true;
    }
    let mut c = path.components().skip(1);
    match c.next().and_then(|x| x.as_os_str().to_str()) {
        Some("root") => true,
        Some("home") | Some("Users") => c.next().is_some(),
        _ => false,
    }
}

/// Whether the absolute glob `shown` may read a path `sensitive` matches:
/// one of its expansions does, or a glob component for hidden entries
/// (`.s*`, `.[a-z]*`) sits in a home directory.
pub(super) fn glob_reads_sensitive(sensitive: &regex::Regex, shown: &str) -> bool {
    if !shown.starts_with('/') {
        return false;
    }
    if expand(shown)
        .iter()
        .any(|p| p.to_str().is_some_and(|s| sensitive.is_match(s)))
    {
        return true;
    }
    let mut prefix = PathBuf::from("/");
    for comp in shown.split('/').filter(|c| !c.is_empty()) {
        if has_glob(comp) {
            let dotted = comp.starts_with('.') || comp.starts_with("[.");
            return dotted && in_a_home(&prefix);
        }
        prefix.push(comp);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_match_as_the_shell_does() {
        let r = component_regex(".s*").unwrap();
        assert!(r.is_match(".ssh") && !r.is_match("ssh"));
        let r = component_regex("id_[rd]sa?").unwrap();
        assert!(r.is_match("id_rsa1") && !r.is_match("id_esa1"));
        let r = component_regex("[!a]*").unwrap();
        assert!(r.is_match("b") && !r.is_match("a"));
        assert!(component_regex("[abc").is_none());
    }

    #[test]
    fn expands_against_the_file_system() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".ssh")).unwrap();
        std::fs::write(d.path().join(".ssh/id_rsa"), "k").unwrap();
        std::fs::write(d.path().join("notes.txt"), "n").unwrap();
        let base = d.path().to_str().unwrap();
        let got = expand(&format!("{base}/.s*/id_*"));
        assert_eq!(got, vec![d.path().join(".ssh/id_rsa")]);
        // `*` does not match dotfiles, as in the shell.
        assert!(expand(&format!("{base}/*/id_*")).is_empty());
        let re = regex::Regex::new(r"(^|/)\.ssh(/|$)").unwrap();
        assert!(glob_reads_sensitive(&re, &format!("{base}/.s*/id_*")));
        assert!(!glob_reads_sensitive(&re, &format!("{base}/*.txt")));
    }

    #[test]
    fn hidden_globs_in_a_home_fail_closed() {
        let re = regex::Regex::new(r"(^|/)\.aws(/|$)").unwrap();
        assert!(glob_reads_sensitive(&re, "/root/.a*/credentials-none-here"));
        assert!(glob_reads_sensitive(&re, "/home/nobody-xyz/.[a-z]*/x"));
        assert!(!glob_reads_sensitive(&re, "/srv/app/.a*/x"));
        assert!(!glob_reads_sensitive(&re, "/root/*.log"));
    }
}
