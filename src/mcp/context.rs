//! Where the proxy's session context comes from: the `toolgate/context` key of
//! a request's `_meta`, and the client's roots.
//!
//! # `_meta["toolgate/context"]`
//!
//! Any request the proxy handles (`tools/list`, `tools/call`, `ping`) may carry
//! an object under `_meta["toolgate/context"]`. Its keys are seed 000's
//! `SessionContext` fields plus a raw message; each key present replaces the
//! current value, absent keys keep theirs, `null` clears an optional field:
//!
//! | key | type | effect |
//! | --- | --- | --- |
//! | `message` | string | raw user text; its keywords (the policy's `[keywords]`) become `user_intent_keywords` (after any given explicitly), and the text itself `user_message` (embedded by `[features.semantic_match] input = "message"`; keywords given without a message clear it) |
//! | `user_intent_keywords` | string array | the intent keywords |
//! | `user_intent_entities` | string array | entities of the message |
//! | `conversation_stage` | string or null | must be a stage the policy declares |
//! | `active_files` | string array | open files |
//! | `active_language` | string or null | overrides the language detected from the roots |
//! | `project_type` | string or null | overrides the project type detected from the roots |
//! | `reset` | bool | clear the client-given context first |
//! | `recent_tool_calls`, `session_duration_seconds` | any | ignored: the proxy keeps them from the calls it forwards and its own clock |
//!
//! Any other key, or a value of the wrong type, makes the request fail with
//! JSON-RPC error -32602 (invalid params).
//!
//! # Roots
//!
//! From each `file://` root (in the client's order), [`detect_project`] reads
//! marker files: `Cargo.toml` (rust; `cli` with `src/main.rs` or `[[bin]]`, else
//! `library`), `package.json` (typescript with `tsconfig.json` or a typescript
//! dependency, else javascript; `web` with a web framework or bundler
//! dependency, `cli` with `bin`, else `library`), `pyproject.toml` /
//! `setup.py` / `setup.cfg` / `requirements.txt` (python; `web` with
//! django/flask/fastapi, `data` with pandas/numpy/jupyter/polars, `cli` with
//! `[project.scripts]`, else `library`), `go.mod` (go; `cli` with a `main.go`
//! or `cmd/`, else `library`). The first root with a marker decides.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::context::SessionContext;
use crate::plan::Plan;

/// The `_meta` key holding a context update.
pub const CONTEXT_META_KEY: &str = "toolgate/context";

/// A parsed `_meta["toolgate/context"]` object (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextUpdate {
    /// Clear the client-given context first.
    pub reset: bool,
    /// Raw user message.
    pub message: Option<String>,
    /// Intent keywords.
    pub user_intent_keywords: Option<Vec<String>>,
    /// Entities.
    pub user_intent_entities: Option<Vec<String>>,
    /// Stage (`Some(None)` clears).
    pub conversation_stage: Option<Option<String>>,
    /// Open files.
    pub active_files: Option<Vec<String>>,
    /// Language (`Some(None)` clears).
    pub active_language: Option<Option<String>>,
    /// Project type (`Some(None)` clears).
    pub project_type: Option<Option<String>>,
}

fn str_list(key: &str, v: &Value) -> Result<Vec<String>, String> {
    let err = || format!("`{CONTEXT_META_KEY}.{key}` must be an array of strings");
    v.as_array()
        .ok_or_else(err)?
        .iter()
        .map(|x| x.as_str().map(String::from).ok_or_else(err))
        .collect()
}

fn opt_str(key: &str, v: &Value) -> Result<Option<String>, String> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(format!(
            "`{CONTEXT_META_KEY}.{key}` must be a string or null"
        )),
    }
}

impl ContextUpdate {
    /// Finds and parses the update in a request's `_meta` map; `Ok(None)` when
    /// the key is absent.
    pub fn from_meta(meta: &Map<String, Value>) -> Result<Option<Self>, String> {
        meta.get(CONTEXT_META_KEY).map(Self::parse).transpose()
    }

    /// Parses the update object.
    pub fn parse(v: &Value) -> Result<Self, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| format!("`{CONTEXT_META_KEY}` must be an object"))?;
        let mut u = ContextUpdate::default();
        for (k, v) in obj {
            match k.as_str() {
                "reset" => {
                    u.reset = v.as_bool().ok_or_else(|| {
                        format!("`{CONTEXT_META_KEY}.reset` must be true or false")
                    })?
                }
                "message" => {
                    u.message = match v {
                        Value::Null => None,
                        Value::String(s) => Some(s.clone()),
                        _ => {
                            return Err(format!("`{CONTEXT_META_KEY}.message` must be a string"));
                        }
                    }
                }
                "user_intent_keywords" => u.user_intent_keywords = Some(str_list(k, v)?),
                "user_intent_entities" => u.user_intent_entities = Some(str_list(k, v)?),
                "active_files" => u.active_files = Some(str_list(k, v)?),
                "conversation_stage" => u.conversation_stage = Some(opt_str(k, v)?),
                "active_language" => u.active_language = Some(opt_str(k, v)?),
                "project_type" => u.project_type = Some(opt_str(k, v)?),
                "recent_tool_calls" | "session_duration_seconds" => {
                    tracing::debug!(key = %k, "context key kept by the proxy; ignored");
                }
                other => {
                    let known = [
                        "message",
                        "user_intent_keywords",
                        "user_intent_entities",
                        "conversation_stage",
                        "active_files",
                        "active_language",
                        "project_type",
                        "reset",
                    ];
                    let hint = crate::diag::did_you_mean(other, known)
                        .map(|s| format!(" (did you mean `{s}`?)"))
                        .unwrap_or_default();
                    return Err(format!(
                        "unknown key `{other}` in `{CONTEXT_META_KEY}`{hint}; known: {}",
                        known.join(", ")
                    ));
                }
            }
        }
        Ok(u)
    }

    /// Applies the update to `ctx`, checking the stage against `plan`.
    /// Returns whether `ctx` changed. On error `ctx` is left as it was.
    pub fn apply(&self, ctx: &mut SessionContext, plan: &Plan) -> Result<bool, String> {
        if let Some(Some(stage)) = &self.conversation_stage
            && plan.stage_index(stage).is_none()
        {
            let hint = crate::diag::did_you_mean(stage, plan.stages.iter().map(|s| s.as_str()))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "conversation stage `{stage}` is not declared by the policy; declared: {}{hint}",
                plan.stages.join(", ")
            ));
        }
        let before = ctx.clone();
        if self.reset {
            *ctx = SessionContext::default();
        }
        if self.user_intent_keywords.is_some() || self.message.is_some() {
            let mut kws = self.user_intent_keywords.clone().unwrap_or_default();
            if let Some(m) = &self.message {
                kws.extend(plan.analyzer.extract(m));
            }
            ctx.user_intent_keywords = kws;
            ctx.user_message = self.message.clone();
        }
        if let Some(v) = &self.user_intent_entities {
            ctx.user_intent_entities = v.clone();
        }
        if let Some(v) = &self.active_files {
            ctx.active_files = v.clone();
        }
        if let Some(v) = &self.conversation_stage {
            ctx.conversation_stage = v.clone();
        }
        if let Some(v) = &self.active_language {
            ctx.active_language = v.clone();
        }
        if let Some(v) = &self.project_type {
            ctx.project_type = v.clone();
        }
        Ok(*ctx != before)
    }
}

/// What the roots tell about the project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectInfo {
    /// Detected language (`rust`, `python`, `javascript`, `typescript`, `go`).
    pub language: Option<String>,
    /// Detected project type (`cli`, `library`, `web`, `data`).
    pub project_type: Option<String>,
    /// The marker file that decided, for logs.
    pub evidence: Option<PathBuf>,
}

/// Local directories of `file://` root URIs (others are skipped), with
/// percent-escapes decoded.
pub fn root_dirs<'a>(uris: impl IntoIterator<Item = &'a str>) -> Vec<PathBuf> {
    uris.into_iter()
        .filter_map(|u| {
            let rest = u.strip_prefix("file://")?;
            // file:///path or file://localhost/path
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            if !path.starts_with('/') {
                return None;
            }
            Some(PathBuf::from(percent_decode(path)))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn read_small(p: &Path) -> Option<String> {
    let meta = std::fs::metadata(p).ok()?;
    if !meta.is_file() || meta.len() > 1 << 20 {
        return None;
    }
    std::fs::read_to_string(p).ok()
}

fn has_any(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| {
        text.match_indices(w).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + w.len()..].chars().next();
            let sep = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            sep(before) && sep(after)
        })
    })
}

/// Detects the language and project type of one directory from its marker
/// files; `None` when it has none.
pub fn detect_dir(dir: &Path) -> Option<ProjectInfo> {
    let info = |lang: &str, kind: &str, marker: PathBuf| {
        Some(ProjectInfo {
            language: Some(lang.into()),
            project_type: Some(kind.into()),
            evidence: Some(marker),
        })
    };
    let cargo = dir.join("Cargo.toml");
    if let Some(text) = read_small(&cargo) {
        let cli = dir.join("src/main.rs").is_file() || text.contains("[[bin]]");
        return info("rust", if cli { "cli" } else { "library" }, cargo);
    }
    let pkg = dir.join("package.json");
    if let Some(text) = read_small(&pkg) {
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let mut deps = Vec::new();
        for k in ["dependencies", "devDependencies", "peerDependencies"] {
            if let Some(o) = v.get(k).and_then(|d| d.as_object()) {
                deps.extend(o.keys().cloned());
            }
        }
        let ts = dir.join("tsconfig.json").is_file() || deps.iter().any(|d| d == "typescript");
        let web_deps = [
            "react",
            "react-dom",
            "vue",
            "svelte",
            "next",
            "nuxt",
            "@angular/core",
            "vite",
            "webpack",
            "express",
            "koa",
            "fastify",
            "astro",
        ];
        let kind = if deps.iter().any(|d| web_deps.contains(&d.as_str())) {
            "web"
        } else if v.get("bin").is_some() {
            "cli"
        } else {
            "library"
        };
        return info(if ts { "typescript" } else { "javascript" }, kind, pkg);
    }
    for marker in [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
    ] {
        let p = dir.join(marker);
        if let Some(text) = read_small(&p) {
            let lower = text.to_lowercase();
            let kind = if has_any(&lower, &["django", "flask", "fastapi", "starlette"]) {
                "web"
            } else if has_any(
                &lower,
                &[
                    "pandas",
                    "numpy",
                    "jupyter",
                    "polars",
                    "scipy",
                    "matplotlib",
                ],
            ) {
                "data"
            } else if lower.contains("[project.scripts]") || lower.contains("console_scripts") {
                "cli"
            } else {
                "library"
            };
            return info("python", kind, p);
        }
    }
    let gomod = dir.join("go.mod");
    if read_small(&gomod).is_some() {
        let cli = dir.join("main.go").is_file() || dir.join("cmd").is_dir();
        return info("go", if cli { "cli" } else { "library" }, gomod);
    }
    None
}

/// Detects the project of a list of roots: the first root with a marker decides.
pub fn detect_project(dirs: &[PathBuf]) -> ProjectInfo {
    dirs.iter().find_map(|d| detect_dir(d)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{Sources, load_plan};
    use serde_json::json;

    #[test]
    fn parses_and_applies_updates() {
        let plan = load_plan(&Sources::default()).unwrap();
        let mut ctx = SessionContext::default();
        let u = ContextUpdate::parse(&json!({
            "message": "select all rows from the users table",
            "conversation_stage": "exploration",
            "active_language": "sql",
        }))
        .unwrap();
        assert!(u.apply(&mut ctx, &plan).unwrap());
        assert!(ctx.user_intent_keywords.contains(&"select".to_string()));
        assert_eq!(ctx.conversation_stage.as_deref(), Some("exploration"));
        // same update again: no change
        assert!(!u.apply(&mut ctx, &plan).unwrap());
        // null clears, absent keeps
        let u = ContextUpdate::parse(&json!({"active_language": null})).unwrap();
        assert!(u.apply(&mut ctx, &plan).unwrap());
        assert_eq!(ctx.active_language, None);
        assert_eq!(ctx.conversation_stage.as_deref(), Some("exploration"));
        // reset
        let u = ContextUpdate::parse(&json!({"reset": true})).unwrap();
        u.apply(&mut ctx, &plan).unwrap();
        assert_eq!(ctx, SessionContext::default());
    }

    #[test]
    fn rejects_bad_updates() {
        let plan = load_plan(&Sources::default()).unwrap();
        let e = ContextUpdate::parse(&json!({"conversation_stag": "x"})).unwrap_err();
        assert!(e.contains("did you mean `conversation_stage`"), "{e}");
        assert!(ContextUpdate::parse(&json!("x")).is_err());
        assert!(ContextUpdate::parse(&json!({"active_files": "a.rs"})).is_err());
        assert!(ContextUpdate::parse(&json!({"reset": 1})).is_err());
        let u = ContextUpdate::parse(&json!({"conversation_stage": "debuging"})).unwrap();
        let mut ctx = SessionContext::default();
        let e = u.apply(&mut ctx, &plan).unwrap_err();
        assert!(e.contains("did you mean `debugging`"), "{e}");
        assert_eq!(ctx, SessionContext::default());
        // proxy-owned keys are accepted and ignored
        let u = ContextUpdate::parse(&json!({"recent_tool_calls": ["a"]})).unwrap();
        assert_eq!(u, ContextUpdate::default());
        let mut m = Map::new();
        assert_eq!(ContextUpdate::from_meta(&m).unwrap(), None);
        m.insert(CONTEXT_META_KEY.into(), json!({"project_type": "cli"}));
        assert!(ContextUpdate::from_meta(&m).unwrap().is_some());
    }

    #[test]
    fn detects_projects_from_marker_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        let sub = |n: &str| {
            let x = p.join(n);
            std::fs::create_dir_all(&x).unwrap();
            x
        };
        let rust = sub("rust");
        std::fs::write(rust.join("Cargo.toml"), "[package]\nname='x'\n").unwrap();
        assert_eq!(
            detect_dir(&rust).unwrap().project_type.as_deref(),
            Some("library")
        );
        std::fs::create_dir_all(rust.join("src")).unwrap();
        std::fs::write(rust.join("src/main.rs"), "fn main(){}").unwrap();
        let i = detect_dir(&rust).unwrap();
        assert_eq!(
            (i.language.as_deref(), i.project_type.as_deref()),
            (Some("rust"), Some("cli"))
        );
        let web = sub("web");
        std::fs::write(
            web.join("package.json"),
            r#"{"dependencies":{"react":"1"},"devDependencies":{"typescript":"5"}}"#,
        )
        .unwrap();
        let i = detect_dir(&web).unwrap();
        assert_eq!(
            (i.language.as_deref(), i.project_type.as_deref()),
            (Some("typescript"), Some("web"))
        );
        let py = sub("py");
        std::fs::write(
            py.join("pyproject.toml"),
            "[project]\ndependencies = [\"pandas>=2\"]\n",
        )
        .unwrap();
        let i = detect_dir(&py).unwrap();
        assert_eq!(
            (i.language.as_deref(), i.project_type.as_deref()),
            (Some("python"), Some("data"))
        );
        let go = sub("go");
        std::fs::write(go.join("go.mod"), "module x\n").unwrap();
        std::fs::write(go.join("main.go"), "package main\n").unwrap();
        assert_eq!(
            detect_dir(&go).unwrap().project_type.as_deref(),
            Some("cli")
        );
        let empty = sub("empty");
        assert_eq!(detect_dir(&empty), None);
        // first root with a marker decides
        let info = detect_project(&[empty.clone(), py.clone(), rust.clone()]);
        assert_eq!(info.language.as_deref(), Some("python"));
        assert_eq!(detect_project(&[empty]), ProjectInfo::default());
    }

    #[test]
    fn reads_file_uris() {
        assert_eq!(
            root_dirs([
                "file:///home/a%20b/p",
                "https://x/y",
                "file://localhost/srv",
                "file://host/x"
            ]),
            [PathBuf::from("/home/a b/p"), PathBuf::from("/srv")]
        );
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
