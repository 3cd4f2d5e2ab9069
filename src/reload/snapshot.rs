//! Reading the inputs of a reload: every file read until two reads agree
//! ([`Snapshot`]), then parsed and compiled. Unchanged files keep their
//! parsed tools ([`UnitCache`]), so the compiler
//! ([`CompileCache`](crate::compile::CompileCache)) reuses their compiled
//! part: a policy-only edit recompiles the policy part only.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::diag::{Diagnostic, ErrorKind, LoadError, SourceFile};
use crate::load::{DEFAULT_TAGS, Sources};
use crate::parse::policy::ReloadParams;
use crate::parse::tags::{ToolSpec, import_tools, parse_tag_file};
use crate::plan::Plan;

use super::Inputs;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Content {
    Bytes(Vec<u8>),
    Missing,
    Error(String),
}

impl Content {
    fn read(path: &Path) -> Content {
        match crate::datafile::read_data_file(path, crate::datafile::TEXT_FILE_LIMIT) {
            Ok(b) => Content::Bytes(b),
            // a symbolic link to nothing is named, as `check` names it
            // (issue 29), not waited for as a file being written
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) =>
            {
                Content::Error(e.to_string())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Content::Missing,
            Err(e) => Content::Error(e.to_string()),
        }
    }

    /// Missing, or empty / whitespace only: maybe caught between a truncate
    /// (or a delete) and the write that follows.
    fn incomplete(&self) -> bool {
        match self {
            Content::Bytes(b) => b.iter().all(u8::is_ascii_whitespace),
            Content::Missing => true,
            Content::Error(_) => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Listing {
    Files(Vec<(PathBuf, Content)>),
    Missing,
    Error(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Snapshot {
    policy: Option<(PathBuf, Content)>,
    tags: Option<(PathBuf, Listing)>,
    tools: Vec<(PathBuf, Content)>,
}

/// Whether a file name is an editor's temporary or backup file.
pub fn is_editor_dropping(name: &str) -> bool {
    name.starts_with(".#")
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swo")
        || name.ends_with(".swx")
}

pub(super) fn is_tag_file_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    crate::parse::tags::has_toml_extension(path) && !is_editor_dropping(name)
}

/// The `*.toml` entries of a tags directory that are not folders, sorted
/// (as `load_tag_dir` does, minus editor droppings): a broken symbolic
/// link is listed, to be named when it is read.
pub(super) fn list_tag_dir(dir: &Path) -> Result<Vec<PathBuf>, std::io::Error> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| is_tag_file_name(p) && !p.is_dir())
        .collect();
    paths.sort();
    Ok(paths)
}

impl Snapshot {
    fn read(sources: &Sources) -> Snapshot {
        let policy = sources
            .policy
            .as_ref()
            .map(|p| (p.clone(), Content::read(p)));
        let tags = sources.tags.as_ref().map(|dir| {
            let listing = match list_tag_dir(dir) {
                Ok(paths) => Listing::Files(
                    paths
                        .into_iter()
                        .map(|p| {
                            let c = Content::read(&p);
                            (p, c)
                        })
                        .collect(),
                ),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Listing::Missing,
                Err(e) => Listing::Error(e.to_string()),
            };
            (dir.clone(), listing)
        });
        let tools = sources
            .tools
            .iter()
            .map(|p| (p.clone(), Content::read(p)))
            .collect();
        Snapshot {
            policy,
            tags,
            tools,
        }
    }

    pub(super) fn incomplete(&self) -> bool {
        self.policy.iter().any(|(_, c)| c.incomplete())
            || self.tools.iter().any(|(_, c)| c.incomplete())
            || self.tags.iter().any(|(_, l)| match l {
                Listing::Files(fs) => fs.iter().any(|(_, c)| c.incomplete()),
                Listing::Missing => true,
                Listing::Error(_) => false,
            })
    }
}

/// Reads the inputs until two reads `settle` apart agree and none is empty
/// or missing, at most `max_reads` times. Returns the last read and whether
/// it settled.
pub(super) fn stable_snapshot(
    sources: &Sources,
    settle: Duration,
    max_reads: u32,
) -> (Snapshot, bool) {
    let mut prev = Snapshot::read(sources);
    for _ in 1..max_reads.max(2) {
        if !settle.is_zero() {
            std::thread::sleep(settle);
        }
        let next = Snapshot::read(sources);
        if next == prev && !next.incomplete() {
            return (next, true);
        }
        prev = next;
    }
    (prev, false)
}

fn to_source(path: &Path, content: &Content) -> Result<Arc<SourceFile>, LoadError> {
    let bare = |kind, msg: String| Err(LoadError::single(Diagnostic::bare(kind, msg)));
    match content {
        // as `parse::tags::read_source`: a byte-order mark is dropped
        Content::Bytes(b) => match crate::datafile::decode_text(b.clone()) {
            Ok(text) => Ok(SourceFile::new(path.display().to_string(), text)),
            Err(e) => bare(ErrorKind::Syntax, format!("{}: {e}", path.display())),
        },
        Content::Missing => bare(
            ErrorKind::Io,
            format!("cannot read {}: the file does not exist", path.display()),
        ),
        Content::Error(e) => bare(
            ErrorKind::Io,
            format!("cannot read {}: {e}", path.display()),
        ),
    }
}

/// A file's path, its bytes and the tools parsed from them.
type ParsedFile = (PathBuf, Vec<u8>, Arc<Vec<ToolSpec>>);

/// The parsed tools of each input file, by path and bytes: a file whose
/// bytes did not change keeps its `Arc`, which is how the compiler knows
/// its compiled tools can be reused. Holds the files of the last build.
#[derive(Debug, Default)]
pub(super) struct UnitCache {
    units: Vec<ParsedFile>,
    /// The compiler, with the compiled parts of the last build.
    pub(super) compiler: crate::compile::CompileCache,
}

impl UnitCache {
    /// The tools of the file at `path` with bytes `content`, parsed by
    /// `parse` unless these bytes were parsed last time.
    fn unit(
        &self,
        next: &mut Vec<ParsedFile>,
        path: &Path,
        content: &Content,
        parse: impl FnOnce() -> Result<Vec<ToolSpec>, LoadError>,
    ) -> Result<Arc<Vec<ToolSpec>>, LoadError> {
        if let Content::Bytes(b) = content
            && let Some((_, _, u)) = self
                .units
                .iter()
                .find(|(p, bytes, _)| p == path && bytes == b)
        {
            next.push((path.to_path_buf(), b.clone(), u.clone()));
            return Ok(u.clone());
        }
        let u = Arc::new(parse()?);
        if let Content::Bytes(b) = content {
            next.push((path.to_path_buf(), b.clone(), u.clone()));
        }
        Ok(u)
    }
}

/// Parses and compiles exactly the bytes of `snap` (as
/// [`crate::load::load_plan`] would the files), reporting policy and catalog
/// problems together. Files unchanged since the last build in `cache` are
/// not parsed again, and their compiled tools are reused.
pub(super) fn build(
    snap: &Snapshot,
    default_policy: (&'static str, &'static str),
    cache: &mut UnitCache,
) -> Result<(Plan, ReloadParams, Inputs), LoadError> {
    let policy = match &snap.policy {
        None => crate::load::parse_with_data(crate::load::embedded_source(default_policy)),
        // A referenced data file (transitions) is read as it is now; it is
        // not watched: save the policy again to reload after editing it.
        Some((p, c)) => to_source(p, c).and_then(crate::load::parse_with_data),
    };
    let mut units: Vec<Arc<Vec<ToolSpec>>> = Vec::new();
    let mut next = Vec::new();
    let mut diags = Vec::new();
    let mut add = |r: Result<Arc<Vec<ToolSpec>>, LoadError>| match r {
        Ok(t) => units.push(t),
        Err(e) => diags.extend(e.diagnostics),
    };
    // The catalog rule of `load::load_catalog`: tools without tags are the
    // tools alone; a tags folder without tag files is an error.
    match &snap.tags {
        None if !snap.tools.is_empty() => {}
        Some((dir, Listing::Files(files))) if files.is_empty() => {
            add(Err(crate::parse::tags::no_tag_files(dir)))
        }
        None => {
            for (name, text) in DEFAULT_TAGS {
                let content = Content::Bytes(text.as_bytes().to_vec());
                add(cache.unit(&mut next, Path::new(name), &content, || {
                    parse_tag_file(crate::load::embedded_source((name, text)))
                }));
            }
        }
        Some((_, Listing::Files(files))) => {
            for (p, c) in files {
                add(cache.unit(&mut next, p, c, || to_source(p, c).and_then(parse_tag_file)));
            }
        }
        Some((dir, Listing::Missing)) => add(Err(LoadError::single(Diagnostic::bare(
            ErrorKind::Io,
            format!(
                "cannot read the tool-tags directory {}: it does not exist",
                dir.display()
            ),
        )))),
        Some((dir, Listing::Error(e))) => add(Err(LoadError::single(Diagnostic::bare(
            ErrorKind::Io,
            format!("cannot read the tool-tags directory {}: {e}", dir.display()),
        )))),
    }
    for (p, c) in &snap.tools {
        add(cache.unit(&mut next, p, c, || to_source(p, c).and_then(import_tools)));
    }
    cache.units = next;
    match policy {
        Ok(p) if diags.is_empty() => cache.compiler.compile(&p, &units).map(|plan| {
            let reload = p.reload;
            (plan, reload, Inputs { policy: p, units })
        }),
        Ok(p) => {
            // The files that parsed are compiled too (apart from the live
            // cache), so that their problems are reported with the broken
            // files' at once.
            if let Err(e) = crate::compile::CompileCache::default().compile(&p, &units) {
                let tools = units.iter().flat_map(|u| u.iter());
                diags.extend(crate::load::compile_problems_of_good_files(tools, e));
            }
            Err(LoadError { diagnostics: diags })
        }
        Err(mut e) => {
            e.diagnostics.extend(diags);
            Err(e)
        }
    }
}
