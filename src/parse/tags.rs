//! Reading tools and their tags: `tool-tags/*.toml`, inline JSON tools (the
//! seed-vector shape), MCP `tools/list` results and OpenAI `tools` arrays.
//!
//! A [`ToolSpec`] is one tool as declared: its MCP identity (name, description,
//! `inputSchema`), its semantic tags (seed 000 `ToolSemanticTags`: domains,
//! preferred stages, trigger keywords, base priority, parameter complexity) and
//! its call-gate fields (seed 002 `ToolDefinition`: risk level, confirmation,
//! timeout, retries, category). A tool without semantic tags is auto-tagged by
//! the policy's `[auto_tags]` when the plan is compiled.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::diag::{Diagnostic, ErrorKind, LoadError, SourceFile};
use crate::parse::policy::Sp;
use crate::parse::reader::{Reader, Table};
use crate::parse::schema_text::{SchemaInterner, SchemaText};

/// Seed 002 `risk_level`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum RiskLevel {
    /// Reads or computes; no lasting effect.
    Safe,
    /// Can change state or reach the outside (writes, network, shell).
    Dangerous,
    /// Deletes or overwrites irreversibly.
    Destructive,
}

/// What an argument holds, for the call gate's danger analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgRole {
    /// One shell command line (a string).
    Shell,
    /// An argv array, program first.
    ShellArgv,
    /// SQL text.
    Sql,
    /// A file-system path (or an array of paths).
    Path,
}

pub use super::roles::{
    MAX_ROLE_PATH_SEGMENTS, RoleSeg, parse_role_path, path_in_schema, role_path_string,
};

/// The call-gate fields of a tool (seed 002). Read now so the format need not
/// change when the gate lands.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GateTags {
    /// Risk level; `None` when the tag file does not say (the gate's default applies).
    pub risk_level: Option<RiskLevel>,
    /// The user must confirm every call.
    pub requires_confirmation: bool,
    /// Per-call time limit in seconds, overriding the policy's.
    pub timeout_seconds: Option<f64>,
    /// Retries after a retryable failure, overriding the policy's.
    pub max_retries: Option<u32>,
    /// Free grouping (`database`, `version_control`).
    pub category: Option<String>,
    /// The tool never changes anything (a read-only SQL tool accepts one read statement).
    pub read_only: bool,
    /// Whether the tool reaches an "open world" of external entities (a web
    /// fetch or search) or a closed one (a memory store): MCP's
    /// `annotations.openWorldHint`, or the tag `open_world`. `None` when
    /// neither says (MCP reads a missing hint as `true`; the gate's
    /// `[gate.flow]` conditions match only what a tool says).
    pub open_world: Option<bool>,
    /// Argument → role: a top-level parameter name or a path into the
    /// arguments (`/edits/*/file_path`, see [`parse_role_path`]).
    pub arguments: Vec<(String, ArgRole)>,
    /// Where each entry of `arguments` is written (its key), in the same
    /// order, when the tool comes from a tag file (empty otherwise).
    pub argument_spans: Vec<Range<usize>>,
    /// SQL dialect for `sql` arguments (`generic` when absent).
    pub sql_dialect: Option<String>,
}

/// Seed 000 `ToolSemanticTags`, as declared.
#[derive(Debug, Clone, PartialEq)]
pub struct SemanticTags {
    /// Functional domains (must be declared by the policy).
    pub domains: Vec<Sp<String>>,
    /// Conversation stages where the tool is useful (must be declared by the policy).
    pub preferred_stages: Vec<Sp<String>>,
    /// Words that, in the user's message, point at this tool.
    pub trigger_keywords: Vec<String>,
    /// Hand-set importance in \[0,1\].
    pub base_priority: Sp<f64>,
    /// How hard the parameters are to fill, within the policy's complexity range.
    pub parameter_complexity: Sp<i64>,
}

/// One tool as declared.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// Namespaced name (`server.tool`, seed 003) or a bare name.
    pub name: Sp<String>,
    /// Other names the tool answers to (the bare MCP name).
    pub aliases: Vec<Sp<String>>,
    /// Description shown to the model.
    pub description: String,
    /// The tool's JSON Schema (`inputSchema`) as canonical JSON text,
    /// shared: the compiled plan and its call gate hold the same text (a
    /// tree is parsed from it where one is read; see
    /// [`SchemaText`](crate::parse::schema_text)).
    pub input_schema: SchemaText,
    /// Semantic tags; `None` means "auto-tag from the policy".
    pub tags: Option<SemanticTags>,
    /// Call-gate fields.
    pub gate: GateTags,
    /// Tools this one often follows (`follows = ["auth.login"]`): when the
    /// last call was one of them, the `transition_match` feature of this tool
    /// is at least the policy's `[features.transition_match] declared`.
    pub follows: Vec<Sp<String>>,
    /// The file it was declared in (spans point into it), if any.
    pub file: Option<Arc<SourceFile>>,
    /// Where `input_schema` is written in `file` (its value), when it is:
    /// problems with the schema point there (else at the name).
    pub input_schema_span: Option<Range<usize>>,
}

impl ToolSpec {
    /// A diagnostic about this tool, located at `span` when the tool comes from a file.
    pub fn diag(&self, kind: ErrorKind, span: Range<usize>, msg: impl Into<String>) -> Diagnostic {
        match &self.file {
            Some(f) if span.end > 0 => Diagnostic::at(kind, f, span, msg),
            Some(f) => {
                let mut d = Diagnostic::bare(kind, msg);
                d.file = Some(f.clone());
                d
            }
            None => Diagnostic::bare(kind, msg),
        }
    }
}

fn read_gate(t: &Table<'_, '_>) -> GateTags {
    let r = t.reader();
    let risk_level = t.str("risk_level").and_then(|(s, span)| match s.as_str() {
        "safe" => Some(RiskLevel::Safe),
        "dangerous" => Some(RiskLevel::Dangerous),
        "destructive" => Some(RiskLevel::Destructive),
        _ => {
            r.push(
                Diagnostic::at(
                    ErrorKind::InvalidValue,
                    &r.file,
                    span,
                    format!("risk_level \"{s}\" is not one of: safe, dangerous, destructive"),
                )
                .with_suggestion(&s, ["safe", "dangerous", "destructive"]),
            );
            None
        }
    });
    let timeout_seconds = t.f64("timeout_seconds").and_then(|(x, span)| {
        // (at most what a time-out can hold: never silently the default)
        if x <= 0.0 || std::time::Duration::try_from_secs_f64(x).is_err() {
            r.error(
                ErrorKind::OutOfRange,
                span.clone(),
                format!(
                    "timeout_seconds must be a positive number of seconds (at most {}), found {}",
                    u64::MAX,
                    r.written(&span)
                ),
            );
            None
        } else {
            Some(x)
        }
    });
    let max_retries = t.int("max_retries").and_then(|(x, span)| {
        if !(0..=100).contains(&x) {
            r.error(
                ErrorKind::OutOfRange,
                span,
                format!("max_retries must be within [0, 100], found {x}"),
            );
            None
        } else {
            Some(x as u32)
        }
    });
    let mut arguments = Vec::new();
    let mut argument_spans = Vec::new();
    if let Some(mut a) = t.table("arguments") {
        for (k, kspan, v) in a.entries() {
            if let Err(msg) = parse_role_path(&k) {
                r.error(ErrorKind::InvalidValue, kspan, msg);
                continue;
            }
            if let Some(s) = v.string() {
                let role = match s.as_str() {
                    "shell" => Some(ArgRole::Shell),
                    "shell_argv" => Some(ArgRole::ShellArgv),
                    "sql" => Some(ArgRole::Sql),
                    "path" => Some(ArgRole::Path),
                    _ => None,
                };
                match role {
                    Some(role) => {
                        arguments.push((k, role));
                        argument_spans.push(kspan);
                    }
                    None => r.push(
                        Diagnostic::at(
                            ErrorKind::InvalidValue,
                            &r.file,
                            v.span.clone(),
                            format!(
                                "argument role \"{s}\" is not one of: shell, shell_argv, sql, path"
                            ),
                        )
                        .with_suggestion(&s, ["shell", "shell_argv", "sql", "path"]),
                    ),
                }
            }
        }
    }
    GateTags {
        risk_level,
        requires_confirmation: t.bool("requires_confirmation").unwrap_or(false),
        timeout_seconds,
        max_retries,
        category: t.str("category").map(|x| x.0),
        read_only: t.bool("read_only").unwrap_or(false),
        open_world: t.bool("open_world"),
        arguments,
        argument_spans,
        sql_dialect: t.str("sql_dialect").map(|x| x.0),
    }
}

/// A declared role whose path names nothing the tool's own input schema
/// describes (a typo such as `/edits/*/file_pth`) would leave the argument
/// it was meant for unchecked: an error at the key, with a did-you-mean
/// among the schema's parameters.
fn check_role_paths(r: &Reader, gate: &GateTags, schema: &Value) {
    for (i, (key, _)) in gate.arguments.iter().enumerate() {
        let Ok(segs) = parse_role_path(key) else {
            continue;
        };
        if path_in_schema(schema, schema, &segs, 0) != Some(false) {
            continue;
        }
        let params: Vec<&str> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let first = match segs.first() {
            Some(RoleSeg::Key(k)) => k.as_str(),
            _ => "",
        };
        let span = gate.argument_spans.get(i).cloned().unwrap_or(0..0);
        r.push(
            Diagnostic::at(
                ErrorKind::UnknownKey,
                &r.file,
                span,
                format!(
                    "argument `{}` names no parameter of the tool's input_schema, so its role would never be checked (parameters: {})",
                    crate::diag::echo(key),
                    crate::diag::echo_list(&params, ", ", crate::diag::MAX_ECHOED_ITEMS)
                ),
            )
            .with_suggestion(first, params.iter().copied()),
        );
    }
}

fn read_tool(file: &Arc<SourceFile>, t: &Table<'_, '_>) -> Option<ToolSpec> {
    let r = t.reader();
    let name = t
        .require("name")
        .and_then(|v| v.string().map(|s| Sp::new(s, v.span.clone())));
    let aliases: Vec<Sp<String>> = t
        .str_list("aliases")
        .unwrap_or_default()
        .into_iter()
        .map(|(s, sp)| Sp::new(s, sp))
        .collect();
    let description = t.str("description").map(|x| x.0).unwrap_or_default();
    let mut input_schema_span = None;
    let input_schema = match t.get("input_schema") {
        Some(v) => {
            input_schema_span = Some(v.span.clone());
            match v.raw() {
                toml::de::DeValue::String(s) => match serde_json::from_str::<Value>(s) {
                    Ok(j) => j,
                    Err(e) => {
                        // Located inside the string when the file holds it
                        // as written (a literal string), else at the string.
                        let at = string_offset(&file.text, v.span.clone(), s)
                            .map(|start| start + crate::diag::json_offset(s, e.line(), e.column()));
                        let span = at.map_or(v.span.clone(), |a| a..(a + 1).min(v.span.end));
                        r.error(
                            ErrorKind::Syntax,
                            span,
                            format!(
                                "input_schema is not valid JSON: {} (at line {}, column {} of the string)",
                                crate::diag::json_message(&e),
                                e.line(),
                                e.column()
                            ),
                        );
                        Value::Null
                    }
                },
                toml::de::DeValue::Table(_) => v.to_json().unwrap_or(Value::Null),
                _ => {
                    r.error(
                        ErrorKind::WrongType,
                        v.span.clone(),
                        "input_schema must be a JSON Schema, as a JSON string or a TOML table",
                    );
                    Value::Null
                }
            }
        }
        None => serde_json::json!({"type": "object", "properties": {}}),
    };
    if !input_schema.is_object() && !input_schema.is_null() {
        r.error(
            ErrorKind::InvalidValue,
            input_schema_span.clone().unwrap_or(t.span.clone()),
            format!(
                "input_schema must be a JSON object (a JSON Schema for the arguments), found {}",
                crate::diag::json_kind(&input_schema)
            ),
        );
    }
    let semantic_keys = [
        "domains",
        "preferred_stages",
        "trigger_keywords",
        "base_priority",
        "parameter_complexity",
    ];
    let has_tags = semantic_keys.iter().any(|k| t.key_span(k).is_some());
    let tags = if has_tags {
        let domains = t
            .str_list("domains")
            .unwrap_or_default()
            .into_iter()
            .map(|(s, sp)| Sp::new(s, sp))
            .collect();
        let preferred_stages = t
            .str_list("preferred_stages")
            .unwrap_or_default()
            .into_iter()
            .map(|(s, sp)| Sp::new(s, sp))
            .collect();
        let trigger_keywords = t
            .str_list("trigger_keywords")
            .unwrap_or_default()
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        let bp = t.req_f64("base_priority");
        let base_priority = match bp {
            Some((x, span)) if !(0.0..=1.0).contains(&x) => {
                r.error(
                    ErrorKind::OutOfRange,
                    span.clone(),
                    format!(
                        "base_priority must be within [0, 1], found {}",
                        r.written(&span)
                    ),
                );
                None
            }
            Some((x, span)) => Some(Sp::new(x, span)),
            None => None,
        };
        let pc = t
            .require("parameter_complexity")
            .and_then(|v| v.int().map(|x| Sp::new(x, v.span.clone())));
        match (base_priority, pc) {
            (Some(bp), Some(pc)) => Some(SemanticTags {
                domains,
                preferred_stages,
                trigger_keywords,
                base_priority: bp,
                parameter_complexity: pc,
            }),
            _ => None,
        }
    } else {
        None
    };
    let gate = read_gate(t);
    check_role_paths(r, &gate, &input_schema);
    let follows = t
        .str_list("follows")
        .unwrap_or_default()
        .into_iter()
        .map(|(s, sp)| Sp::new(s, sp))
        .collect();
    let name = name?;
    for (n, what) in std::iter::once((&name, "name")).chain(aliases.iter().map(|a| (a, "alias"))) {
        crate::parse::names::check_length(r, n, what);
    }
    if has_tags && tags.is_none() {
        return None;
    }
    Some(ToolSpec {
        name,
        aliases,
        description,
        input_schema: if input_schema.is_null() {
            SchemaText::new(&serde_json::json!({}))
        } else {
            SchemaText::new(&input_schema)
        },
        tags,
        gate,
        follows,
        file: Some(file.clone()),
        input_schema_span,
    })
}

/// Where the decoded TOML string `s` starts in `text`, when its span `span`
/// holds it as written (a literal string `'...'` or `'''...'''`, or a basic
/// string without escapes), so that offsets into `s` are offsets into the
/// file.
fn string_offset(text: &str, span: Range<usize>, s: &str) -> Option<usize> {
    let raw = text.get(span.clone())?;
    [3, 4, 5, 1]
        .into_iter()
        .find(|&k| raw.get(k..k + s.len()) == Some(s))
        .map(|k| span.start + k)
}

/// Reads one tool-tag file (`[[tool]]` entries).
pub fn parse_tag_file(file: Arc<SourceFile>) -> Result<Vec<ToolSpec>, LoadError> {
    let f2 = file.clone();
    Reader::parse_document(file, |root| {
        let tools = root.tables("tool");
        if tools.is_empty() && root.key_span("tool").is_none() {
            root.reader().error(
                ErrorKind::MissingKey,
                root.span.clone(),
                "a tool-tag file must declare at least one [[tool]]",
            );
        }
        tools.iter().filter_map(|t| read_tool(&f2, t)).collect()
    })
}

/// The domains and the stages that the tools of a tag file name
/// (`domains`, `preferred_stages`), each with its place, read even when the
/// file has other problems (its own problems are not repeated here), so
/// that a load can report an undeclared stage beside a misspelt key (issue
/// 29: every problem at once). Empty when the file is not TOML.
pub fn tag_file_references(file: Arc<SourceFile>) -> (Vec<Sp<String>>, Vec<Sp<String>>) {
    let read = |root: &Table<'_, '_>| {
        let (mut domains, mut stages) = (Vec::new(), Vec::new());
        for t in root.tables("tool") {
            let list = |k: &str| t.get(k).and_then(|v| v.str_list()).unwrap_or_default();
            domains.extend(list("domains").into_iter().map(|(s, sp)| Sp::new(s, sp)));
            stages.extend(
                list("preferred_stages")
                    .into_iter()
                    .map(|(s, sp)| Sp::new(s, sp)),
            );
        }
        (domains, stages)
    };
    Reader::parse_document_partial(file, read).map_or_else(|_| Default::default(), |(r, _)| r)
}

/// The error for a tool-tags directory that holds no `*.toml` file.
pub fn no_tag_files(dir: &Path) -> LoadError {
    LoadError::single(Diagnostic::bare(
        ErrorKind::Io,
        format!(
            "the tool-tags directory {} holds no tag file (*.toml): --tags names a folder of tag files such as the shipped tool-tags/; to use only the tools of --tools files, leave --tags out",
            dir.display()
        ),
    ))
}

/// Whether `path` ends in `.toml`, in any case (`time.TOML` too: a tag
/// folder's file is read whatever the case of its extension, issue 29).
pub fn has_toml_extension(path: &Path) -> bool {
    path.extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("toml"))
}

/// Reads every `*.toml` file of a directory (sorted by file name; the
/// extension in any case, [`has_toml_extension`]) as tool tags.
/// All files are read and all problems reported together. A directory with
/// no `*.toml` file (empty, or the wrong folder) is an error.
pub fn load_tag_dir(dir: &Path) -> Result<Vec<ToolSpec>, LoadError> {
    let (tools, diags) = load_tag_dir_partial(dir)?;
    if diags.is_empty() {
        Ok(tools)
    } else {
        Err(LoadError { diagnostics: diags })
    }
}

/// [`load_tag_dir`], keeping the tools of the files that parsed beside the
/// problems of those that did not. Errors only when the directory cannot be
/// read or holds no `*.toml` file.
pub fn load_tag_dir_partial(dir: &Path) -> Result<(Vec<ToolSpec>, Vec<Diagnostic>), LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        LoadError::single(Diagnostic::bare(
            ErrorKind::Io,
            format!("cannot read the tool-tags directory {}: {e}", dir.display()),
        ))
    })?;
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| has_toml_extension(p) && !p.is_dir()) // (a broken link is read, and named)
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(no_tag_files(dir));
    }
    let mut tools = Vec::new();
    let mut diags = Vec::new();
    for p in paths {
        match read_source(&p).and_then(parse_tag_file) {
            Ok(t) => tools.extend(t),
            Err(e) => diags.extend(e.diagnostics),
        }
    }
    Ok((tools, diags))
}

/// Reads a file into a [`SourceFile`] named by its path: a regular file of at
/// most [`TEXT_FILE_LIMIT`](crate::datafile::TEXT_FILE_LIMIT) bytes
/// ([`crate::datafile::read_data_file`]), UTF-8 with an optional byte-order
/// mark ([`crate::datafile::decode_text`]).
pub fn read_source(path: &Path) -> Result<Arc<SourceFile>, LoadError> {
    let bytes =
        crate::datafile::read_data_file(path, crate::datafile::TEXT_FILE_LIMIT).map_err(|e| {
            LoadError::single(Diagnostic::bare(
                ErrorKind::Io,
                format!("cannot read {}: {e}", path.display()),
            ))
        })?;
    let text = crate::datafile::decode_text(bytes).map_err(|e| {
        LoadError::single(Diagnostic::bare(
            ErrorKind::Syntax,
            format!("{}: {e}", path.display()),
        ))
    })?;
    Ok(SourceFile::new(path.display().to_string(), text))
}

/// A tool with inline tags, as in the seed vectors and in eval inputs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InlineTool {
    /// Tool name.
    pub name: String,
    /// Optional description.
    #[serde(default)]
    pub description: String,
    /// Optional JSON Schema (`inputSchema` or `input_schema`).
    #[serde(default, alias = "inputSchema")]
    pub input_schema: Option<Value>,
    /// Domains.
    #[serde(default)]
    pub domains: Vec<String>,
    /// Preferred stages.
    #[serde(default)]
    pub preferred_stages: Vec<String>,
    /// Trigger keywords.
    #[serde(default)]
    pub trigger_keywords: Vec<String>,
    /// Base priority in \[0,1\]; absent means "auto-tag".
    #[serde(default)]
    pub base_priority: Option<f64>,
    /// Parameter complexity; absent means "auto-tag".
    #[serde(default)]
    pub parameter_complexity: Option<i64>,
    /// Risk level.
    #[serde(default)]
    pub risk_level: Option<RiskLevel>,
    /// Confirmation required.
    #[serde(default)]
    pub requires_confirmation: bool,
    /// Read-only.
    #[serde(default)]
    pub read_only: bool,
    /// Argument roles: a top-level parameter name or a path into the
    /// arguments (`/edits/*/file_path`) → role.
    #[serde(default)]
    pub arguments: std::collections::BTreeMap<String, ArgRole>,
    /// Tools this one often follows (see [`ToolSpec::follows`]).
    #[serde(default)]
    pub follows: Vec<String>,
}

impl InlineTool {
    /// A tool either carries semantic tags (then `base_priority` and
    /// `parameter_complexity` are required) or none at all (then it is
    /// auto-tagged); half a set of tags is an error, never silently dropped.
    pub fn check(&self) -> Result<(), String> {
        let any = !self.domains.is_empty()
            || !self.preferred_stages.is_empty()
            || !self.trigger_keywords.is_empty()
            || self.base_priority.is_some()
            || self.parameter_complexity.is_some();
        let complete = self.base_priority.is_some() && self.parameter_complexity.is_some();
        if any && !complete {
            return Err(format!(
                "tool `{}`: base_priority and parameter_complexity are required when semantic tags are given (omit all tags to auto-tag the tool)",
                self.name
            ));
        }
        for k in self.arguments.keys() {
            parse_role_path(k).map_err(|e| format!("tool `{}`: {e}", self.name))?;
        }
        Ok(())
    }

    /// Converts to a [`ToolSpec`]; tags are present when both base_priority and
    /// parameter_complexity are given.
    pub fn into_spec(self) -> ToolSpec {
        let sp = |v: Vec<String>| v.into_iter().map(|s| Sp::new(s, 0..0)).collect::<Vec<_>>();
        let tags = match (self.base_priority, self.parameter_complexity) {
            (Some(bp), Some(pc)) => Some(SemanticTags {
                domains: sp(self.domains),
                preferred_stages: sp(self.preferred_stages),
                trigger_keywords: self.trigger_keywords,
                base_priority: Sp::new(bp, 0..0),
                parameter_complexity: Sp::new(pc, 0..0),
            }),
            _ => None,
        };
        ToolSpec {
            name: Sp::new(self.name, 0..0),
            aliases: vec![],
            description: self.description,
            input_schema: self
                .input_schema
                .map_or_else(SchemaText::empty_object, SchemaText::from),
            tags,
            gate: GateTags {
                risk_level: self.risk_level,
                requires_confirmation: self.requires_confirmation,
                read_only: self.read_only,
                arguments: self.arguments.into_iter().collect(),
                ..GateTags::default()
            },
            follows: self.follows.into_iter().map(|s| Sp::new(s, 0..0)).collect(),
            file: None,
            input_schema_span: None,
        }
    }
}

/// Reads tools from JSON: an MCP `tools/list` result (`{"tools": [...]}`, a
/// JSON-RPC response holding one, or a captured catalog with a `server` field,
/// whose name then prefixes each tool as `server.tool`), or an OpenAI `tools`
/// array (`[{"type": "function", "function": {...}}]`). The tools come without
/// semantic tags and are auto-tagged; MCP annotations `readOnlyHint` and
/// `destructiveHint` set `read_only` and the destructive risk level,
/// `openWorldHint` sets `open_world`. A key of a tool that is neither the
/// MCP `Tool`'s nor an OpenAI tool's, or a `type` other than `"function"`,
/// is an error at that key ([`super::tool_file::tool_problems`]).
/// `name` names the file in messages; see [`import_tools`].
pub fn import_tools_json(name: &str, text: &str) -> Result<Vec<ToolSpec>, LoadError> {
    import_tools(SourceFile::new(name.to_string(), text))
}

/// Takes `key` out of a JSON object (`None` when absent or not an object).
fn take(v: &mut Value, key: &str) -> Option<Value> {
    match v {
        Value::Object(o) => o.remove(key),
        _ => None,
    }
}

/// A present field read as it is, `null` included (serde's `Option` would
/// read `null` as absent; the generic path keeps it).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// One tool of a tool file as the fast path reads it: only the fields
/// import uses, the wrappers never built as JSON trees.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastTool {
    #[serde(rename = "type", default, deserialize_with = "present")]
    kind: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    function: Option<FastFunction>,
    #[serde(default, deserialize_with = "present")]
    name: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    description: Option<Value>,
    #[serde(rename = "inputSchema", default, deserialize_with = "present")]
    input_schema: Option<SchemaText>,
    #[serde(default, deserialize_with = "present")]
    annotations: Option<Value>,
    // Keys of the MCP `Tool` that import does not read (accepted).
    #[serde(default, deserialize_with = "present")]
    title: Option<IgnoredAny>,
    #[serde(rename = "outputSchema", default, deserialize_with = "present")]
    output_schema: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    execution: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    icons: Option<IgnoredAny>,
    #[serde(rename = "_meta", default, deserialize_with = "present")]
    meta: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastFunction {
    #[serde(default, deserialize_with = "present")]
    name: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    description: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    parameters: Option<SchemaText>,
    /// (accepted, not read)
    #[serde(rename = "strict", default, deserialize_with = "present")]
    _strict: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct FastResult {
    #[serde(default, deserialize_with = "present")]
    tools: Option<Vec<FastTool>>,
}

#[derive(Deserialize)]
struct FastListing {
    #[serde(default, deserialize_with = "present")]
    server: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    tools: Option<Vec<FastTool>>,
    #[serde(default, deserialize_with = "present")]
    result: Option<FastResult>,
}

/// The fields of one tool that import reads: `(OpenAI tool, its
/// "function" present, name, description, schema, annotations)`; the
/// schema is read straight into its text (its tree is transient).
type RawTool = (
    bool,
    bool,
    Option<Value>,
    Option<Value>,
    Option<SchemaText>,
    Option<Value>,
);

impl FastTool {
    /// `None` for a tool whose keys mix the two shapes or whose `type` is
    /// not `"function"`: the generic path reports it.
    fn raw(self) -> Option<RawTool> {
        let openai = match &self.kind {
            None => false,
            Some(Value::String(t)) if t == "function" => true,
            Some(_) => return None,
        };
        let mcp_keys = self.name.is_some()
            || self.description.is_some()
            || self.input_schema.is_some()
            || self.annotations.is_some()
            || self.title.is_some()
            || self.output_schema.is_some()
            || self.execution.is_some()
            || self.icons.is_some()
            || self.meta.is_some();
        // (an OpenAI tool with an MCP key, an MCP tool with `function`)
        if (openai && mcp_keys) || (!openai && self.function.is_some()) {
            return None;
        }
        Some(self.raw_checked(openai))
    }

    fn raw_checked(self, openai: bool) -> RawTool {
        if openai {
            match self.function {
                Some(f) => (true, true, f.name, f.description, f.parameters, None),
                None => (true, false, None, None, None, None),
            }
        } else {
            (
                false,
                false,
                self.name,
                self.description,
                self.input_schema,
                self.annotations,
            )
        }
    }
}

/// The fast path of [`import_tools`]: the usual shapes (an array of tools,
/// or an object with a `tools` array or `result.tools`), read into typed
/// structures. `None` for anything else (another shape, a duplicate key, a
/// field of an unexpected type), which the generic path then reads (and
/// reports) exactly as before.
fn fast_listing(text: &str) -> Option<(Option<String>, Vec<RawTool>)> {
    let raw = |list: Vec<FastTool>| {
        list.into_iter()
            .map(FastTool::raw)
            .collect::<Option<Vec<_>>>()
    };
    match text.trim_start().as_bytes().first()? {
        b'[' => Some((
            None,
            raw(serde_json::from_str::<Vec<FastTool>>(text).ok()?)?,
        )),
        b'{' => {
            let l: FastListing = serde_json::from_str(text).ok()?;
            let prefix = match l.server {
                Some(Value::String(s)) => Some(s),
                _ => None,
            };
            let tools = match (l.tools, l.result) {
                (Some(t), _) => t,
                (None, Some(FastResult { tools: Some(t) })) => t,
                _ => return None,
            };
            Some((prefix, raw(tools)?))
        }
        _ => None,
    }
}

/// The generic path of [`import_tools`]: the parsed JSON tree is taken
/// apart, never copied.
///
/// The unknown keys of every tool are pushed to `problems` (the tools are
/// still read, so that their other problems are found in the same run).
fn generic_listing(
    text: &str,
    bad: &dyn Fn(String) -> LoadError,
    bad_at: &dyn Fn(usize, String) -> LoadError,
    problems: &mut Vec<Diagnostic>,
) -> Result<(Option<String>, Vec<RawTool>), LoadError> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        bad_at(
            crate::diag::json_offset(text, e.line(), e.column()),
            format!("not valid JSON: {}", crate::diag::json_message(&e)),
        )
    })?;
    let (prefix, list) = match v {
        Value::Array(a) => (None, a),
        Value::Object(mut o) => {
            let prefix = match o.get("server") {
                Some(Value::String(s)) => Some(s.clone()),
                _ => None,
            };
            let tools = match o.remove("tools") {
                Some(t) => Some(t),
                None => o.get_mut("result").and_then(|r| take(r, "tools")),
            };
            match tools {
                Some(Value::Array(a)) => (prefix, a),
                _ => {
                    // (the error path: the text is read again to locate it)
                    let whole = serde_json::from_str::<Value>(text).unwrap_or_default();
                    return Err(match super::tool_file::listing_problem(text, &whole) {
                        Some((span, msg)) => bad_at(span.start, msg),
                        None => bad("expected an MCP tools/list result (an object with a \"tools\" array) or an OpenAI tools array".into()),
                    });
                }
            }
        }
        _ => return Err(bad("expected a JSON object or array".into())),
    };
    // An unknown key of a tool is an error at that key (issue 29), each
    // one of every tool.
    for (i, item) in list.iter().enumerate() {
        for (span, msg) in super::tool_file::tool_problems(text, i, item) {
            let path = super::tool_file::tool_span(text, i)
                .map(|(_, p)| p)
                .unwrap_or_else(|| format!("[{i}]"));
            let e = bad_at(span.start, format!("tool {i} (`{path}`): {msg}"));
            problems.extend(e.diagnostics.into_iter().map(|mut d| {
                d.kind = ErrorKind::UnknownKey;
                d
            }));
        }
    }
    let raw = list
        .into_iter()
        .map(|mut item| {
            let openai = item.get("type").and_then(|t| t.as_str()) == Some("function");
            if openai {
                match take(&mut item, "function") {
                    Some(mut f) => (
                        true,
                        true,
                        take(&mut f, "name"),
                        take(&mut f, "description"),
                        take(&mut f, "parameters").map(SchemaText::from),
                        None,
                    ),
                    None => (true, false, None, None, None, None),
                }
            } else {
                (
                    false,
                    false,
                    take(&mut item, "name"),
                    take(&mut item, "description"),
                    take(&mut item, "inputSchema").map(SchemaText::from),
                    take(&mut item, "annotations"),
                )
            }
        })
        .collect();
    Ok((prefix, raw))
}

/// [`import_tools_json`] of a file already read: names and descriptions
/// move from the parsed text into the [`ToolSpec`]s, each schema becomes
/// its canonical text (equal schemas share one [`SchemaText`]; in the usual
/// shapes each schema's tree lives only while its text is written, and no
/// tree is built for the wrappers), and every tool shares `file`.
pub fn import_tools(file: Arc<SourceFile>) -> Result<Vec<ToolSpec>, LoadError> {
    let name = file.name.as_str();
    let bad = |msg: String| {
        LoadError::single(Diagnostic::bare(
            ErrorKind::Syntax,
            format!("{name}: {msg}"),
        ))
    };
    // A syntax error is located (file:line:column), like a TOML file's.
    let bad_at = |at: usize, msg: String| {
        let end = (at + 1..=file.text.len())
            .find(|&e| file.text.is_char_boundary(e))
            .unwrap_or(at);
        LoadError::single(Diagnostic::at(ErrorKind::Syntax, &file, at..end, msg))
    };
    // Every problem of every tool is collected, and reported together.
    let mut problems: Vec<Diagnostic> = Vec::new();
    if let Some(d) = super::tool_file::duplicate_key(&file) {
        return Err(LoadError::single(d));
    }
    let (prefix, list) = match fast_listing(&file.text) {
        Some(l) => l,
        None => generic_listing(&file.text, &bad, &bad_at, &mut problems)?,
    };
    let mut out = Vec::with_capacity(list.len());
    let mut interner = SchemaInterner::default();
    // Where each tool's name stands in the text (tools come in file order):
    // problems with a tool are then located at file:line:column.
    let mut cursor = 0;
    for (i, (openai, has_function, fname, desc, schema, ann)) in list.into_iter().enumerate() {
        // A tool refused is located at its object, with its index.
        let at_tool = |msg: &str| match super::tool_file::tool_span(&file.text, i) {
            Some((span, path)) => bad_at(span.start, format!("tool {i} (`{path}`): {msg}")),
            None => bad(format!("tool {i}: {msg}")),
        };
        // A tool whose keys are wrong is not read further: its missing
        // name may only be a misspelt `name` or a wrong `type`.
        if !problems.is_empty()
            && let Some((span, _)) = super::tool_file::tool_span(&file.text, i)
            && problems
                .iter()
                .any(|d| d.span.as_ref().is_some_and(|s| span.contains(&s.start)))
        {
            continue;
        }
        if openai && !has_function {
            problems.extend(at_tool("an OpenAI tool needs a \"function\" object").diagnostics);
            continue;
        }
        let Some(Value::String(tool_name)) = fname else {
            let found = match &fname {
                Some(v) => format!(", found {}", crate::diag::json_kind(v)),
                None => String::new(),
            };
            let whose = if openai {
                "its \"function\" object has"
            } else {
                "it has"
            };
            problems.extend(at_tool(&format!("{whose} no \"name\" string{found}")).diagnostics);
            continue;
        };
        let hint = |k: &str| {
            ann.as_ref()
                .and_then(|a| a.get(k))
                .and_then(|b| b.as_bool())
                .unwrap_or(false)
        };
        let (read_only, destructive) = (hint("readOnlyHint"), hint("destructiveHint"));
        let open_world = ann
            .as_ref()
            .and_then(|a| a.get("openWorldHint"))
            .and_then(|b| b.as_bool());
        let span = locate_name(&file.text, cursor, &tool_name).unwrap_or(0..0);
        cursor = cursor.max(span.end);
        let (full, aliases) = match &prefix {
            Some(p) => (
                format!("{p}.{tool_name}"),
                vec![Sp::new(tool_name, span.clone())],
            ),
            None => (tool_name, vec![]),
        };
        out.push(ToolSpec {
            name: Sp::new(full, span),
            aliases,
            description: match desc {
                Some(Value::String(s)) => s,
                _ => String::new(),
            },
            input_schema: schema.map_or_else(SchemaText::empty_object, |s| interner.intern(s)),
            tags: None,
            gate: GateTags {
                read_only,
                open_world,
                risk_level: if destructive && !read_only {
                    Some(RiskLevel::Destructive)
                } else {
                    None
                },
                ..GateTags::default()
            },
            follows: Vec::new(),
            file: Some(file.clone()),
            input_schema_span: None,
        });
    }
    if !problems.is_empty() {
        // (in file order: a tool's key problems and its name problem)
        problems.sort_by_key(|d| d.span.as_ref().map_or(usize::MAX, |s| s.start));
        return Err(LoadError {
            diagnostics: problems,
        });
    }
    Ok(out)
}

/// Where a JSON tool file's `text` declares the tool named `name`, from
/// byte `from` on: the span of the first string, written as `serde_json`
/// writes `name`, that is the value of a `"name"` key (`None` for a name
/// written with other escapes; the tool is then reported without a
/// location).
fn locate_name(text: &str, from: usize, name: &str) -> Option<Range<usize>> {
    // as serde_json writes it; most names need no escape
    let needle = if name.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        format!("\"{name}\"")
    } else {
        serde_json::to_string(name).ok()?
    };
    let mut start = from;
    while let Some(i) = text.get(start..)?.find(&needle) {
        let at = start + i;
        if let Some(key) = text[..at].trim_end().strip_suffix(':')
            && key.trim_end().ends_with("\"name\"")
        {
            return Some(at..at + needle.len());
        }
        start = at + needle.len();
    }
    None
}

#[cfg(test)]
mod tests;
