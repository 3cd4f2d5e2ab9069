//! File path analysis (`[gate.paths]`): containment in configured roots.
//!
//! A path is checked twice: lexically (`..` resolved on the text) and on the
//! file system, with symlinks followed component by component the way the
//! kernel does (a path that does not exist yet resolves its nearest existing
//! ancestor and appends the rest). Containment compares whole components,
//! so `/srv/share` does not contain `/srv/share-secret`.
//!
//! Neither check can see a hard link: a file inside a root may be another
//! name of a file outside it. A write to an existing regular file whose link
//! count is above one is therefore reported (`hard_link_write`; reads only
//! when the policy sets `hard_link_read`). The link count is read with
//! `lstat` on the resolved path, after the containment checks; a file that
//! does not exist yet is not affected.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::types::{Finding, FindingKind};

pub use crate::plan::gate::path::{PathChecks, PathConfig};

/// Analyzes a path argument at JSON pointer `path_ptr`; `write` tells
/// whether the tool writes to it. Relative paths resolve against the first
/// root. The roots are resolved through [`roots`] (once per roots and
/// working directory, then cached).
pub fn analyze_path(cfg: &PathConfig, path_ptr: &str, value: &str, write: bool) -> Vec<Finding> {
    analyze_path_in(cfg, None, path_ptr, value, write)
}

/// [`analyze_path`] with `cfg`'s roots as [`roots`] gives them, when the
/// caller has them already (`None`: looked up here, only when the path
/// gets that far). The roots' own components are not looked at again:
/// the real path of a root is known, so a path under it is resolved from
/// there, each component below the root `lstat`ed and each symlink
/// followed (a path that names no root as written is resolved from `/`).
pub fn analyze_path_in(
    cfg: &PathConfig,
    resolved: Option<&Roots>,
    path_ptr: &str,
    value: &str,
    write: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let c = &cfg.checks;
    let shown = value.escape_debug().to_string();
    if value.contains('\0') {
        let d = format!("`{shown}` contains a NUL byte");
        out.push(c.nul_byte.finding(FindingKind::Path, path_ptr, &d));
        return out;
    }
    let odd: Vec<String> = cfg
        .suspicious_chars
        .0
        .find_iter(value)
        .flat_map(|m| m.as_str().chars())
        .map(|ch| format!("U+{:04X}", ch as u32))
        .collect();
    if !odd.is_empty() {
        let d = format!(
            "`{shown}` contains invisible or control characters {}",
            odd.join(", ")
        );
        out.push(c.suspicious_chars.finding(FindingKind::Path, path_ptr, &d));
    }
    let mut text = value.to_owned();
    if cfg.windows_syntax.is_match(value) {
        let d = format!("`{shown}` uses Windows path syntax");
        out.push(c.windows_syntax.finding(FindingKind::Path, path_ptr, &d));
        text = text.replace('\\', "/");
    }
    if cfg.tilde.is_match(&text) {
        let d = format!("`{shown}` starts with `~`, which is not expanded here");
        out.push(c.tilde.finding(FindingKind::Path, path_ptr, &d));
    }
    if cfg.roots.is_empty() {
        let d = format!("`{shown}`: no root directory is configured");
        out.push(c.no_roots.finding(FindingKind::Path, path_ptr, &d));
        return out;
    }
    let cached;
    let resolved = match resolved {
        Some(r) => r,
        None => {
            cached = roots(cfg);
            &cached
        }
    };
    let lexical_roots = &resolved.lexical;
    let mut real_roots: Vec<PathBuf> = Vec::with_capacity(lexical_roots.len());
    for (r, real) in lexical_roots.iter().zip(&resolved.real) {
        match real {
            Some(p) => real_roots.push(p.clone()),
            None => {
                let d = format!("root `{}` cannot be resolved", r.display());
                out.push(c.unresolvable.finding(FindingKind::Path, path_ptr, &d));
                return out;
            }
        }
    }
    let joined = lexical_roots[0].join(&text);
    let abs = lexical(&joined);
    let roots_list = cfg.roots.join(", ");
    let inside = |p: &Path, roots: &[PathBuf]| roots.iter().any(|r| p.starts_with(r));
    let lexically_inside = inside(&abs, lexical_roots) || inside(&abs, &real_roots);
    if !lexically_inside {
        let via = if Path::new(&text)
            .components()
            .any(|c| c == Component::ParentDir)
        {
            " through `..`"
        } else {
            ""
        };
        let d = format!(
            "`{shown}` resolves{via} to `{}`, outside the allowed roots ({roots_list})",
            abs.display()
        );
        let check = if write {
            &c.outside_write
        } else {
            &c.outside_read
        };
        out.push(check.finding(FindingKind::Path, path_ptr, &d));
        return out;
    }
    // From the real root the path names as written (`..` included, taken
    // after the symlinks before it as the kernel does), else from `/`.
    let from_root = lexical_roots
        .iter()
        .zip(&real_roots)
        .find_map(|(lex, real)| Some((real, joined.strip_prefix(lex).ok()?)))
        .or_else(|| {
            real_roots
                .iter()
                .find_map(|real| Some((real, joined.strip_prefix(real).ok()?)))
        });
    let real = match from_root {
        Some((root, rest)) => {
            resolve_under(root.clone(), rest, cfg.max_symlinks, &mut Lstats::default())
        }
        None => resolve(&joined, cfg.max_symlinks),
    };
    match real {
        None => {
            let d = format!(
                "`{shown}`: more than {} symlinks to follow",
                cfg.max_symlinks
            );
            out.push(c.unresolvable.finding(FindingKind::Path, path_ptr, &d));
        }
        Some(real) if !inside(&real, &real_roots) => {
            let d = format!(
                "`{shown}` goes through a symlink to `{}`, outside the allowed roots ({roots_list})",
                real.display()
            );
            out.push(c.symlink_escape.finding(FindingKind::Path, path_ptr, &d));
        }
        Some(real) => {
            let check = if write {
                Some(&c.hard_link_write)
            } else {
                c.hard_link_read.as_ref()
            };
            if let Some(check) = check
                && let Some(links) = hard_links(&real)
            {
                let d = format!(
                    "`{shown}` is an existing file with {links} hard links: the same data has {} other name{}, which may be outside the allowed roots ({roots_list}), and {} changes it under every name",
                    links - 1,
                    if links == 2 { "" } else { "s" },
                    if write { "a write" } else { "a later write" },
                );
                out.push(check.finding(FindingKind::Path, path_ptr, &d));
            }
        }
    }
    out
}

/// The link count of `p` when it is an existing regular file with more
/// than one hard link (`p` is resolved: no symlink left in it).
#[cfg(unix)]
fn hard_links(p: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(p).ok()?;
    (m.file_type().is_file() && m.nlink() > 1).then_some(m.nlink())
}

/// Link counts are not read on this platform.
#[cfg(not(unix))]
fn hard_links(_p: &Path) -> Option<u64> {
    None
}

/// [`Path::starts_with`] (whole components), on the text when both
/// paths are UTF-8 and spelled plainly (no `.` component, repeated `/` or
/// trailing `/`, a non-empty prefix): the same answer without walking
/// both paths' components (a per-command cost on the shell's hot path).
/// Any other spelling goes to [`Path::starts_with`].
pub fn starts_with(p: &Path, prefix: &Path) -> bool {
    fn plain(t: &str) -> bool {
        let b = t.as_bytes();
        !b.is_empty()
            && (b.len() == 1 || b[b.len() - 1] != b'/')
            && t != "."
            && !t.starts_with("./")
            && !t.ends_with("/.")
            && !t.contains("//")
            && !t.contains("/./")
    }
    match (p.to_str(), prefix.to_str()) {
        (Some(t), Some(r)) if plain(t) && plain(r) => match t.strip_prefix(r) {
            Some(rest) => rest.is_empty() || r.ends_with('/') || rest.starts_with('/'),
            None => false,
        },
        _ => p.starts_with(prefix),
    }
}

/// Whether `p` has a `..` component, read from its bytes (what
/// `p.components().any(|c| c == Component::ParentDir)` says).
pub fn has_parent_component(p: &Path) -> bool {
    p.as_os_str()
        .as_encoded_bytes()
        .split(|&b| b == b'/')
        .any(|c| c == b"..")
}

/// Lexical normalisation: `.` dropped, `..` pops (never above `/`), made
/// absolute against the current directory if relative.
fn lexical(p: &Path) -> PathBuf {
    let mut out = if p.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
    };
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Resolves an absolute path the way the kernel would, following symlinks
/// one component at a time; the part that does not exist is appended
/// lexically. `None` after `max_links` symlinks.
fn resolve(p: &Path, max_links: usize) -> Option<PathBuf> {
    resolve_under(PathBuf::from("/"), p, max_links, &mut Lstats::default())
}

/// What `lstat` said of the paths one check looked at: a command line
/// often places several paths below the same directories (`tee a/log`,
/// `>> a/times`). Only directories and files are remembered (a symlink is
/// read again each time) and only for one check.
#[derive(Debug, Default)]
pub struct Lstats {
    /// Paths that are not symlinks (their bytes in `names`, one after the
    /// other: one buffer instead of a `PathBuf` each), and what they are.
    seen: Vec<(std::ops::Range<usize>, Lstat)>,
    /// The bytes of the paths in `seen`.
    names: Vec<u8>,
    /// A buffer for the paths [`place_normal`] resolves (reused: one
    /// allocation per check, not per path).
    scratch: PathBuf,
}

/// One `lstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lstat {
    Symlink,
    Dir,
    File,
    Missing,
}

impl Lstats {
    fn lstat(&mut self, p: &Path) -> Lstat {
        // Paths compared as text (`Path`'s `==` walks components when the
        // texts differ); a miss only costs an `lstat`.
        let bytes = p.as_os_str().as_encoded_bytes();
        if let Some((_, l)) = self
            .seen
            .iter()
            .find(|(q, _)| self.names[q.clone()] == *bytes)
        {
            return *l;
        }
        let out = match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => return Lstat::Symlink,
            Ok(m) if m.is_dir() => Lstat::Dir,
            Ok(_) => Lstat::File,
            Err(_) => Lstat::Missing,
        };
        if self.seen.len() < 64 {
            let at = self.names.len();
            self.names.extend_from_slice(bytes);
            self.seen.push((at..self.names.len(), out));
        }
        out
    }

    /// Whether `p` is a directory, through symlinks ([`Path::is_dir`]).
    pub fn is_dir(&mut self, p: &Path) -> bool {
        match self.lstat(p) {
            // `lstat` follows every component but the last, as `stat` does.
            Lstat::Dir => true,
            Lstat::File | Lstat::Missing => false,
            Lstat::Symlink => p.is_dir(),
        }
    }
}

/// [`resolve`] of `rest` under `base`, a path already resolved (no symlink
/// in it): only the components of `rest` are looked at.
fn resolve_under(
    base: PathBuf,
    rest: &Path,
    max_links: usize,
    lstats: &mut Lstats,
) -> Option<PathBuf> {
    let mut out = base;
    out.reserve(rest.as_os_str().len() + 1);
    // Components still to walk: those of symlink targets met on the way
    // (`pending`, first), then the rest of `rest`'s.
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let mut comps = rest.components();
    let mut links = 0;
    let mut exists = true;
    loop {
        let from_pending = pending.pop_front();
        let c: &std::ffi::OsStr = match &from_pending {
            Some(c) => c,
            None => match comps.next() {
                None => break,
                Some(Component::ParentDir) => std::ffi::OsStr::new(".."),
                Some(Component::Normal(n)) => n,
                Some(_) => continue,
            },
        };
        if c == ".." {
            out.pop();
            continue;
        }
        out.push(c);
        if exists {
            match lstats.lstat(&out) {
                Lstat::Symlink => {
                    links += 1;
                    if links > max_links {
                        return None;
                    }
                    let Ok(target) = std::fs::read_link(&out) else {
                        return None;
                    };
                    out.pop();
                    if target.is_absolute() {
                        out = PathBuf::from("/");
                    }
                    push_components(&mut pending, &target, true);
                    continue;
                }
                Lstat::Dir | Lstat::File => {}
                Lstat::Missing => exists = false,
            }
        }
    }
    Some(out)
}

/// Pushes the components of `p` onto `pending` (at the front when
/// `front`), keeping `..` and dropping `.` and the root.
fn push_components(pending: &mut VecDeque<OsString>, p: &Path, front: bool) {
    let comps: Vec<OsString> = p
        .components()
        .filter_map(|c| match c {
            Component::ParentDir => Some(OsString::from("..")),
            Component::Normal(n) => Some(n.to_owned()),
            _ => None,
        })
        .collect();
    if front {
        for c in comps.into_iter().rev() {
            pending.push_front(c);
        }
    } else {
        pending.extend(comps);
    }
}

/// The allowed roots of a [`PathConfig`], made absolute against the
/// process's working directory: lexically, and with symlinks resolved.
#[derive(Debug, Clone)]
pub struct Roots {
    /// Roots as written, made absolute and normalised lexically; relative
    /// paths start at the first.
    pub lexical: Vec<PathBuf>,
    /// The same through symlinks (`None` for a root that cannot be
    /// resolved).
    pub real: Vec<Option<PathBuf>>,
    /// `max_symlinks` of the configuration.
    pub max_symlinks: usize,
    /// The first root (lexical or real) that holds every file (`/`) or
    /// every file of the user (the home directory, `$HOME` when these roots
    /// were first resolved, or one of its ancestors): containment in it
    /// protects nothing (`broad_root`).
    pub broad: Option<PathBuf>,
}

/// The roots of `cfg`, cached by roots and working directory: resolving a
/// root costs a system call per component, and one command line may place
/// many paths. The working directory (a `getcwd` per call) is read only
/// when some root is relative: absolute roots (as an MCP client's roots
/// are) do not depend on it, so a change of the process's directory cannot
/// change them.
pub fn roots(cfg: &PathConfig) -> std::sync::Arc<Roots> {
    type Entry = (Vec<String>, usize, PathBuf, std::sync::Arc<Roots>);
    static CACHE: std::sync::Mutex<Vec<Entry>> = std::sync::Mutex::new(Vec::new());
    let cwd = if cfg.roots.iter().all(|r| Path::new(r).is_absolute()) {
        PathBuf::new()
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
    };
    if let Ok(c) = CACHE.lock()
        && let Some((.., hit)) = c
            .iter()
            .find(|(r, m, d, _)| *r == cfg.roots && *m == cfg.max_symlinks && *d == cwd)
    {
        return hit.clone();
    }
    let lexical: Vec<PathBuf> = cfg.roots.iter().map(|r| lexical(Path::new(r))).collect();
    let real: Vec<Option<PathBuf>> = lexical
        .iter()
        .map(|r| resolve(r, cfg.max_symlinks))
        .collect();
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .map(|h| normalize(&h));
    let broad = lexical
        .iter()
        .chain(real.iter().flatten())
        .find(|r| r.parent().is_none() || home.as_ref().is_some_and(|h| h.starts_with(r.as_path())))
        .cloned();
    let out = std::sync::Arc::new(Roots {
        lexical,
        real,
        max_symlinks: cfg.max_symlinks,
        broad,
    });
    if let Ok(mut c) = CACHE.lock() {
        if c.len() >= 8 {
            c.remove(0);
        }
        c.push((cfg.roots.clone(), cfg.max_symlinks, cwd, out.clone()));
    }
    out
}

/// Where a path lands relative to the roots ([`place`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Inside a root.
    Inside,
    /// Outside every root.
    Outside,
    /// Inside a root by name, but a symlink leads outside, to this path.
    SymlinkEscape(PathBuf),
    /// More symlinks than `max_symlinks`.
    Unresolvable,
    /// No root is configured.
    NoRoots,
}

/// Places the absolute path `abs` against `roots`. Containment compares
/// whole components, lexically; with `follow`, a path inside is also
/// resolved through symlinks (below the root only: the root's own real
/// path is known), so a symlink inside a root that leads outside is found —
/// for writes and deletes.
pub fn place(roots: &Roots, abs: &Path, follow: bool) -> Placement {
    place_with(roots, abs, follow, &mut Lstats::default())
}

/// [`place`], remembering what `lstat` says in `lstats` (for the paths of
/// one check).
pub fn place_with(roots: &Roots, abs: &Path, follow: bool, lstats: &mut Lstats) -> Placement {
    if roots.lexical.is_empty() {
        return Placement::NoRoots;
    }
    place_normal(roots, &lexical(abs), follow, lstats)
}

/// [`place_with`] of a path already absolute and normalised lexically (no
/// `.` or `..` component, as [`normalize`] gives): the normalisation is
/// skipped.
pub fn place_normal(roots: &Roots, abs: &Path, follow: bool, lstats: &mut Lstats) -> Placement {
    debug_assert!(abs.is_absolute());
    debug_assert!(
        abs.components()
            .all(|c| !matches!(c, Component::ParentDir | Component::CurDir))
    );
    if roots.lexical.is_empty() {
        return Placement::NoRoots;
    }
    let mut base: Option<(&PathBuf, &Path)> = None;
    for (lex, real) in roots.lexical.iter().zip(&roots.real) {
        let Some(real) = real else { continue };
        if let Some(rest) = strip_normal(abs, lex) {
            base = Some((real, rest));
            break;
        }
        if let Some(rest) = strip_normal(abs, real) {
            base = Some((real, rest));
            break;
        }
    }
    let Some((real_root, rest)) = base else {
        return Placement::Outside;
    };
    if !follow {
        return Placement::Inside;
    }
    let mut base = std::mem::take(&mut lstats.scratch);
    base.as_mut_os_string().clear();
    base.push(real_root);
    match resolve_under(base, rest, roots.max_symlinks, lstats) {
        None => Placement::Unresolvable,
        Some(real) => {
            if roots
                .real
                .iter()
                .flatten()
                .any(|r| strip_normal(&real, r).is_some())
            {
                // The buffer is kept for the next path.
                lstats.scratch = real;
                Placement::Inside
            } else {
                Placement::SymlinkEscape(real)
            }
        }
    }
}

/// [`Path::strip_prefix`] for normalised absolute paths (no `.`, `..`,
/// repeated or trailing `/`), on the text when both are UTF-8: the same
/// whole-component containment without walking components.
fn strip_normal<'a>(p: &'a Path, root: &Path) -> Option<&'a Path> {
    let (Some(t), Some(r)) = (p.to_str(), root.to_str()) else {
        return p.strip_prefix(root).ok();
    };
    let rest = t.strip_prefix(r)?;
    let rest = if r.ends_with('/') || rest.is_empty() {
        rest
    } else {
        rest.strip_prefix('/')?
    };
    Some(Path::new(rest))
}

/// Lexical normalisation: `.` dropped, `..` pops (never above `/`), made
/// absolute against the process's working directory if relative.
pub fn normalize(p: &Path) -> PathBuf {
    lexical(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_with_says_what_path_starts_with_says() {
        let parts = ["", "/", "a", "ab", ".", "..", "/a", "a/", "//", "b/."];
        let mut spellings = Vec::new();
        for x in parts {
            for y in parts {
                for z in ["", "a", "/b", "/", "/."] {
                    spellings.push(format!("{x}{y}{z}"));
                }
            }
        }
        let mut fast = 0;
        for p in &spellings {
            for r in &spellings {
                let (pp, rr) = (Path::new(p), Path::new(r));
                assert_eq!(starts_with(pp, rr), pp.starts_with(rr), "{p:?} {r:?}");
                fast += usize::from(!p.contains("//") && !r.contains("//"));
            }
        }
        assert!(fast > 1000);
        for (p, hit) in [
            ("/c/../x", true),
            ("..", true),
            ("a/..", true),
            ("../a", true),
            ("/a/..b", false),
            ("/a/b..", false),
            ("/a/./b", false),
            ("", false),
        ] {
            let want = Path::new(p)
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir));
            assert_eq!(want, hit, "{p}");
            assert_eq!(has_parent_component(Path::new(p)), hit, "{p}");
        }
    }

    #[test]
    fn strips_normal_paths_by_whole_components() {
        fn s<'a>(p: &'a str, r: &str) -> Option<&'a Path> {
            strip_normal(Path::new(p), Path::new(r))
        }
        assert_eq!(s("/a/b", "/a"), Some(Path::new("b")));
        assert_eq!(s("/a", "/a"), Some(Path::new("")));
        assert_eq!(s("/ab", "/a"), None);
        assert_eq!(s("/a/b", "/"), Some(Path::new("a/b")));
        assert_eq!(s("/", "/"), Some(Path::new("")));
        assert_eq!(s("/b", "/a"), None);
        for (p, r) in [("/a/b", "/a"), ("/a", "/a"), ("/ab", "/a"), ("/x/y", "/")] {
            assert_eq!(s(p, r), Path::new(p).strip_prefix(r).ok(), "{p} {r}");
        }
    }

    #[test]
    fn lexical_normalisation() {
        assert_eq!(lexical(Path::new("/a/./b/../c/")), PathBuf::from("/a/c"));
        assert_eq!(lexical(Path::new("/../../x")), PathBuf::from("/x"));
    }

    #[test]
    fn resolve_appends_missing_tail() {
        let r = resolve(Path::new("/definitely-missing-xyz/a/../b"), 8).unwrap();
        assert_eq!(r, PathBuf::from("/definitely-missing-xyz/b"));
    }
}
