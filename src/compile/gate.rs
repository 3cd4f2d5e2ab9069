//! Compiling the call gate's part of a plan (feature `gate`): reading a
//! policy's `[gate]` (serde, with the shipped value of every key left out),
//! compiling its danger patterns, each tool's input schema, the argument
//! roles its tags declare (checked against the schema) and those
//! `[[gate.infer]]` gives tools whose tags declare none, at any depth.

use std::sync::Arc;

use serde_json::Value;

use crate::diag::{Diagnostic, ErrorKind, LoadError, Sink};
use crate::parse::policy::PolicySource;
use crate::parse::roles::{facets, path_in_schema};
use crate::parse::tags::{ArgRole, RoleSeg, ToolSpec, parse_role_path, role_path_string};
use crate::plan::CompiledTool;
use crate::plan::gate::config::{GateConfig, InferRule, JsonType, shipped};
use crate::plan::gate::flow::CompiledFlow;
use crate::plan::gate::patterns::PatternSet;
use crate::plan::gate::schema::ToolSchema;
use crate::plan::gate::{CompiledGate, GateTool};

/// Reads the `[gate]` section of `policy` (the shipped gate when absent).
pub fn load_gate_config(policy: &PolicySource) -> Result<GateConfig, LoadError> {
    if policy.gate.is_none() {
        return Ok(shipped().clone());
    }
    // Every problem at once: each bad key (`gate_serde`), and the range
    // checks of the keys that read.
    let (cfg, mut problems) = super::gate_serde::read_gate(policy);
    // (a `{detial}` in a message: `gate_placeholders`)
    problems.extend(super::gate_placeholders::check(&policy.file));
    problems.sort_by_key(|d| d.span.as_ref().map_or(0, |s| s.start));
    if let Some(cfg) = &cfg
        && let Err(e) = validate(cfg, policy)
    {
        problems.extend(e.diagnostics);
    }
    match cfg {
        Some(cfg) if problems.is_empty() => Ok(cfg),
        _ => Err(LoadError {
            diagnostics: problems,
        }),
    }
}

fn validate(cfg: &GateConfig, policy: &PolicySource) -> Result<(), LoadError> {
    let span = policy.gate.as_ref().map(|g| g.span.clone()).unwrap_or(0..0);
    let text = &policy.file.text;
    let mut problems: Vec<(String, std::ops::Range<usize>)> = Vec::new();
    // A value out of range stands at its key's value, echoed as written
    // (at the `[gate]` table when the text does not hold it).
    let at_value =
        |problems: &mut Vec<(String, std::ops::Range<usize>)>, path: &[&str], rule: &str| {
            let key = format!("gate.{}", path.join("."));
            match value_span(text, path) {
                Some(sp) => {
                    let found = crate::diag::number_as_written(&text[sp.clone()]).into_owned();
                    problems.push((format!("`{key}` must be {rule}, found {found}"), sp));
                }
                None => problems.push((format!("`{key}` must be {rule}"), span.clone())),
            }
        };
    let e = &cfg.execution;
    // (at most what a time-out can hold: never silently the default)
    if !(e.timeout_seconds > 0.0
        && std::time::Duration::try_from_secs_f64(e.timeout_seconds).is_ok())
    {
        let rule = format!("a positive number of seconds (at most {})", u64::MAX);
        at_value(&mut problems, &["execution", "timeout_seconds"], &rule);
    }
    if !(e.backoff_factor.is_finite() && e.backoff_factor >= 1.0) {
        at_value(
            &mut problems,
            &["execution", "backoff_factor"],
            "at least 1",
        );
    }
    for (key, v) in [
        ("max_depth", cfg.limits.max_depth),
        ("max_argument_bytes", cfg.limits.max_argument_bytes),
    ] {
        if v == 0 {
            at_value(&mut problems, &["limits", key], "1 or more");
        }
    }
    let mut at_gate = |m: String| problems.push((m, span.clone()));
    let c = &cfg.coercion;
    for t in &c.true_values {
        if c.false_values
            .iter()
            .any(|f| f.trim().eq_ignore_ascii_case(t.trim()))
        {
            at_gate(format!(
                "`gate.coercion`: \"{t}\" is both a true and a false spelling"
            ));
        }
    }
    problems.extend(validate_shell(cfg, text, &span));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(LoadError {
            diagnostics: problems
                .into_iter()
                .map(|(m, sp)| Diagnostic::at(ErrorKind::InvalidValue, &policy.file, sp, m))
                .collect(),
        })
    }
}

/// The byte span of the value at `path` under the document's `[gate]`
/// table (`["limits", "max_depth"]`), when the text writes it.
fn value_span(text: &str, path: &[&str]) -> Option<std::ops::Range<usize>> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let mut v = doc.get_ref().get("gate")?;
    for key in path {
        match v.get_ref() {
            DeValue::Table(t) => v = t.get(*key)?,
            _ => return None,
        }
    }
    Some(v.span())
}

/// The span of the `n`-th (0-based) occurrence of `needle` in a line of
/// `text` that starts with `key` (after blanks); `None` when not found.
fn find_in_lines(text: &str, key: &str, needle: &str, n: usize) -> Option<std::ops::Range<usize>> {
    let mut seen = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with(key) {
            let mut from = 0;
            while let Some(i) = line[from..].find(needle) {
                if seen == n {
                    let start = offset + from + i;
                    return Some(start..start + needle.len());
                }
                seen += 1;
                from += i + needle.len();
            }
        }
        offset += line.len();
    }
    None
}

/// The effect model's data: each command named once in `commands` (and
/// once in `extra_commands`), every `config:NAME` effect names a
/// `[gate.shell.config.NAME]`. Errors point at the offending text.
fn validate_shell(
    cfg: &GateConfig,
    text: &str,
    gate_span: &std::ops::Range<usize>,
) -> Vec<(String, std::ops::Range<usize>)> {
    use crate::plan::gate::effect::Effect;
    let mut out = Vec::new();
    let sh = &cfg.shell;
    for (list, label) in [
        (&sh.commands, "commands"),
        (&sh.extra_commands, "extra_commands"),
    ] {
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for c in list.iter() {
            for n in &c.names {
                let count = seen.entry(n.as_str()).or_insert(0);
                *count += 1;
                if *count == 2 {
                    let sp = find_in_lines(text, "names", &format!("\"{n}\""), 1)
                        .unwrap_or_else(|| gate_span.clone());
                    out.push((
                        format!("`gate.shell.{label}`: `{n}` is described twice; give each command one entry"),
                        sp,
                    ));
                }
            }
        }
    }
    let mut configs: Vec<String> = Vec::new();
    fn note(e: &Effect, configs: &mut Vec<String>) {
        let e = match e {
            Effect::Operands(inner) => inner,
            other => other,
        };
        if let Effect::Config(n) = e {
            configs.push(n.clone());
        }
    }
    for c in sh.commands.iter().chain(&sh.extra_commands) {
        for e in c
            .options
            .values()
            .chain(c.effects.iter())
            .chain(c.operand_keys.values())
        {
            note(e, &mut configs);
        }
        for e in [
            &c.first_operand,
            &c.last_operand,
            &c.program_operand,
            &c.plus_operands,
            &c.after_dashdash,
        ]
        .into_iter()
        .flatten()
        {
            note(e, &mut configs);
        }
        note(&c.operands, &mut configs);
        for effs in c.flags.values() {
            for e in &effs.0 {
                note(e, &mut configs);
            }
        }
        if let Some(n) = &c.config_operands {
            configs.push(n.clone());
        }
    }
    // A rule's `option_values` must be options its commands take a value
    // for, or the rule could never see a value.
    for r in &sh.rules {
        for o in &r.option_values {
            let takes = !r.commands.is_empty()
                && r.commands.iter().all(|c| {
                    cfg.shell.command(c).is_some_and(|e| {
                        e.value_flags.iter().any(|v| v == o) || e.options.contains_key(o)
                    })
                });
            if !takes {
                let sp = find_in_lines(text, "option_values", &format!("\"{o}\""), 0)
                    .unwrap_or_else(|| gate_span.clone());
                out.push((
                    format!(
                        "`gate.shell.rules` `{}`: option `{o}` of `option_values` takes no value in the `[[gate.shell.commands]]` entry of {}; list it in that entry's `value_flags`",
                        r.id,
                        r.commands.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
                    ),
                    sp,
                ));
            }
        }
    }
    configs.sort();
    configs.dedup();
    for n in configs {
        if !sh.config.contains_key(&n) {
            let sp = find_in_lines(text, "", &format!("config:{n}"), 0)
                .or_else(|| find_in_lines(text, "config_operands", &format!("\"{n}\""), 0))
                .unwrap_or_else(|| gate_span.clone());
            out.push((
                format!("`config:{n}` names no `[gate.shell.config.{n}]` table"),
                sp,
            ));
        }
    }
    out
}

/// Most schema nodes visited when inferring the roles of one tool.
const MAX_INFER_NODES: usize = 10_000;
/// Deepest property nesting where a role is inferred or a declared path is
/// looked up.
const MAX_SCHEMA_PATH_DEPTH: usize = 32;
/// Most roles of one tool (the gate walks them as a 64-bit set).
const MAX_ROLES: usize = 64;
/// The types a value described by `schema` may have, `null` left out.
fn value_types<'a>(root: &'a Value, schema: &'a Value) -> Vec<&'a str> {
    let mut out = Vec::new();
    for f in facets(root, schema) {
        let types: Vec<&str> = match f.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for t in types {
            if t != "null" && !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

struct Infer<'a> {
    root: &'a Value,
    rules: Vec<&'a InferRule>,
    /// Whether a rule's `tool_words` admit the tool.
    words_ok: &'a dyn Fn(&InferRule) -> bool,
    out: Vec<(Vec<RoleSeg>, ArgRole)>,
    budget: usize,
}

impl<'a> Infer<'a> {
    /// An array item or map value that is an object without declared
    /// properties (`edits: {type: array, items: {type: object}}`) may hold
    /// a path under any name (issue 30, item 6): the names of the `path`
    /// rules for strings get their role below it (`/edits/*/path`).
    fn open_object(&mut self, schema: &'a Value, path: &mut Vec<RoleSeg>) {
        let fs = facets(self.root, schema);
        let object = fs
            .iter()
            .any(|f| f.get("type").and_then(Value::as_str) == Some("object"));
        if !object || fs.iter().any(|f| f.get("properties").is_some()) {
            return;
        }
        for r in self.rules.iter().filter(|r| {
            r.role == ArgRole::Path && r.json_type == JsonType::String && (self.words_ok)(r)
        }) {
            for n in &r.names {
                path.push(RoleSeg::Key(n.clone()));
                if self.out.len() < MAX_ROLES && !self.out.iter().any(|(p, _)| p == path) {
                    self.out.push((path.clone(), r.role));
                }
                path.pop();
            }
        }
    }

    fn walk(&mut self, schema: &'a Value, path: &mut Vec<RoleSeg>) {
        if path.len() >= MAX_SCHEMA_PATH_DEPTH || self.budget == 0 || self.out.len() >= MAX_ROLES {
            return;
        }
        self.budget -= 1;
        for f in facets(self.root, schema) {
            if let Some(props) = f.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    // A property that declares no type (`{}`, a `$ref` cycle,
                    // `enum` alone) admits every type, the rule's among them:
                    // the gate fails closed rather than leave it unanalysed.
                    // The name first: the declared types (which may follow
                    // `$ref`s) only for a property some rule names.
                    let mut types = None;
                    let rule = self.rules.iter().find(|r| {
                        if !r.names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                            return false;
                        }
                        let want = match r.json_type {
                            JsonType::String => "string",
                            JsonType::Array => "array",
                        };
                        let types = types.get_or_insert_with(|| value_types(self.root, prop));
                        (types.is_empty() || types.contains(&want)) && (self.words_ok)(r)
                    });
                    path.push(RoleSeg::Key(name.clone()));
                    match rule {
                        Some(r) => {
                            if !self.out.iter().any(|(p, _)| p == path)
                                && self.out.len() < MAX_ROLES
                            {
                                self.out.push((path.clone(), r.role));
                            }
                        }
                        None => self.walk(prop, path),
                    }
                    path.pop();
                }
            }
            let mut children: Vec<(RoleSeg, &'a Value)> = Vec::new();
            match f.get("items") {
                Some(Value::Array(tuple)) => {
                    for (i, s) in tuple.iter().enumerate() {
                        children.push((RoleSeg::Key(i.to_string()), s));
                    }
                }
                Some(s @ Value::Object(_)) => children.push((RoleSeg::Any, s)),
                _ => {}
            }
            if let Some(Value::Array(prefix)) = f.get("prefixItems") {
                for (i, s) in prefix.iter().enumerate() {
                    children.push((RoleSeg::Key(i.to_string()), s));
                }
            }
            if let Some(s @ Value::Object(_)) = f.get("additionalProperties") {
                children.push((RoleSeg::Any, s));
            }
            for (seg, s) in children {
                path.push(seg);
                self.open_object(s, path);
                self.walk(s, path);
                path.pop();
            }
        }
    }
}

/// The roles `[[gate.infer]]` gives a tool whose tags declare none: every
/// property, at any depth of the input schema, whose name and declared type
/// a rule in scope lists. The outermost match wins (nothing is inferred
/// below a property that got a role). `fallback` rules are tried only when
/// the others give no role (on an open schema, their names at the top
/// level).
fn infer_roles(
    cfg: &GateConfig,
    tool: &CompiledTool,
    schema: &Value,
    domains: &[String],
) -> Vec<(Vec<RoleSeg>, ArgRole)> {
    infer_roles_with(cfg, tool, schema, domains, true)
}

/// [`infer_roles`], with the `fallback` rules or without them.
fn infer_roles_with<'t>(
    cfg: &GateConfig,
    tool: &'t CompiledTool,
    schema: &Value,
    domains: &[String],
    with_fallback: bool,
) -> Vec<(Vec<RoleSeg>, ArgRole)> {
    let tool_domains: Vec<&str> = tool
        .domains
        .iter()
        .filter_map(|d| domains.get(*d as usize).map(String::as_str))
        .collect();
    let category = tool
        .gate
        .category
        .clone()
        .or_else(|| tool.name.split_once('.').map(|(ns, _)| ns.to_string()));
    let scoped = |rule: &InferRule| {
        (rule.domains.is_empty() && rule.categories.is_empty())
            || rule
                .domains
                .iter()
                .any(|d| tool_domains.contains(&d.as_str()))
            || category
                .as_deref()
                .is_some_and(|c| rule.categories.iter().any(|x| x.eq_ignore_ascii_case(c)))
    };
    // `tool_words`, asked only of a rule that names a property of the
    // schema (the tool's words are split once, when first needed).
    let words: std::cell::OnceCell<Vec<&'t str>> = std::cell::OnceCell::new();
    let words_ok = |rule: &InferRule| {
        rule.tool_words.is_empty() || {
            let w = words.get_or_init(|| words_of(&tool.name, &tool.description));
            rule.tool_words
                .iter()
                .any(|t| w.iter().any(|x| x.eq_ignore_ascii_case(t)))
        }
    };
    let rules: Vec<&InferRule> = cfg
        .infer
        .iter()
        .filter(|rule| !rule.fallback && scoped(rule))
        .collect();
    // An open schema (`true`, `{}`, an object without `properties`) names no
    // parameter, so any argument may hold a command, a query or a path: the
    // rules' names get their roles at the top level, and the gate analyses
    // those arguments (and refuses the others as undeclared) instead of
    // letting them through unseen.
    let open = facets(schema, schema)
        .iter()
        .all(|f| f.get("properties").is_none());
    if open {
        let top = |rules: &[&InferRule]| {
            let mut out: Vec<(Vec<RoleSeg>, ArgRole)> = Vec::new();
            for r in rules.iter().filter(|r| words_ok(r)) {
                for n in &r.names {
                    let p = vec![RoleSeg::Key(n.clone())];
                    if out.len() < MAX_ROLES && !out.iter().any(|(q, _)| *q == p) {
                        out.push((p, r.role));
                    }
                }
            }
            out
        };
        let out = top(&rules);
        if !out.is_empty() || !with_fallback {
            return out;
        }
        // A tool the scoped rules say nothing of, with an open schema
        // (issue 30, item 5): the fallback names get their roles at the
        // top level too, so a `command` or `path` it is sent is analysed.
        let fallback: Vec<&InferRule> = cfg
            .infer
            .iter()
            .filter(|rule| rule.fallback && scoped(rule))
            .collect();
        return top(&fallback);
    }
    let walk = |rules: Vec<&InferRule>| {
        if rules.is_empty() {
            return Vec::new();
        }
        let mut w = Infer {
            root: schema,
            rules,
            words_ok: &words_ok,
            out: Vec::new(),
            budget: MAX_INFER_NODES,
        };
        w.walk(schema, &mut Vec::new());
        w.out
    };
    let out = walk(rules);
    if !out.is_empty() || !with_fallback {
        return out;
    }
    let fallback: Vec<&InferRule> = cfg
        .infer
        .iter()
        .filter(|rule| rule.fallback && scoped(rule))
        .collect();
    walk(fallback)
}

/// Whether `schema` is open and the roles [`infer_roles`] gives the tool
/// come from the `fallback` rules only (no scoped rule names it).
fn open_schema_fallback(
    cfg: &GateConfig,
    tool: &CompiledTool,
    schema: &Value,
    domains: &[String],
) -> bool {
    let open = facets(schema, schema)
        .iter()
        .all(|f| f.get("properties").is_none());
    if !open {
        return false;
    }
    infer_roles_with(cfg, tool, schema, domains, false).is_empty()
}

/// The words of a tool's name and description, for `tool_words`: split at
/// every character that is not a letter or digit, and at a lower-to-upper
/// case change (`executeSql` is `execute`, `Sql`).
fn words_of<'t>(name: &'t str, description: &'t str) -> Vec<&'t str> {
    let mut out: Vec<&'t str> = Vec::new();
    for text in [name, description] {
        // the current word: its start, and whether its last letter was lowercase
        let mut start: Option<usize> = None;
        let mut prev_lower = false;
        for (i, c) in text.char_indices() {
            let alnum = c.is_alphanumeric();
            if let Some(s) = start
                && (!alnum || (prev_lower && c.is_uppercase()))
            {
                out.push(&text[s..i]);
                start = None;
            }
            if alnum && start.is_none() {
                start = Some(i);
            }
            prev_lower = c.is_lowercase();
        }
        if let Some(s) = start {
            out.push(&text[s..]);
        }
    }
    out
}

/// The declared role paths of `tool` that name nothing its input schema
/// describes (see [`path_in_schema`]).
fn dead_roles<'a>(args: &'a [(String, ArgRole)], schema: &Value) -> Vec<&'a str> {
    args.iter()
        .filter(|(k, _)| {
            parse_role_path(k)
                .is_ok_and(|segs| path_in_schema(schema, schema, &segs, 0) == Some(false))
        })
        .map(|(k, _)| k.as_str())
        .collect()
}

/// Checks the argument roles declared for `spec`: each key must be a
/// parameter name or a path ([`parse_role_path`]; an error otherwise, for
/// tools that did not come from a tag file, whose reader reports it at the
/// key), and a tool has at most 64 roles. A role whose path names nothing
/// the tool's input schema describes is a warning (returned): a tag file
/// whose own schema lacks it is already an error at the key, so this is a
/// tool whose schema comes from elsewhere (the MCP proxy serves the live
/// server's schema with the shipped tags), and the gate then also infers
/// roles from that schema.
pub fn check_role_paths(spec: &ToolSpec, sink: &mut Sink) -> Vec<String> {
    if spec.gate.arguments.is_empty() {
        return Vec::new();
    }
    check_role_paths_in(spec, &spec.input_schema.value(), sink)
}

/// [`check_role_paths`] with the tree of `spec`'s input schema, `schema`,
/// already parsed.
pub(crate) fn check_role_paths_in(spec: &ToolSpec, schema: &Value, sink: &mut Sink) -> Vec<String> {
    let args = &spec.gate.arguments;
    let span_of = |i: usize| spec.gate.argument_spans.get(i).cloned().unwrap_or(0..0);
    if args.len() > MAX_ROLES {
        sink.push(spec.diag(
            ErrorKind::OutOfRange,
            span_of(MAX_ROLES),
            format!(
                "tool `{}` declares {} argument roles; at most {MAX_ROLES} are supported",
                crate::diag::echo(&spec.name.value),
                args.len()
            ),
        ));
    }
    for (i, (key, _)) in args.iter().enumerate() {
        if let Err(e) = parse_role_path(key) {
            sink.push(spec.diag(
                ErrorKind::InvalidValue,
                span_of(i),
                format!("tool `{}`: {e}", crate::diag::echo(&spec.name.value)),
            ));
        }
    }
    dead_roles(args, schema)
        .into_iter()
        .map(|k| {
            format!(
                "tool `{}`: argument role `{k}` names no parameter of the tool's input schema; roles are also inferred from the schema by [[gate.infer]]",
                crate::diag::echo(&spec.name.value)
            )
        })
        .collect()
}

/// `[gate]` read and its patterns compiled, for the `[gate]` sections seen
/// last: reading a policy's `[gate]` (TOML, some fifty regexes) costs more
/// than the rest of a compile, and the configuration depends on that section
/// only, so reloads and repeated compiles of one policy (any of its other
/// sections edited) reuse it. Problems are not cached: a bad section is read
/// again, and reported at its place in the text.
pub(crate) fn cached_config(policy: &PolicySource) -> Result<GateParts, LoadError> {
    type Entry = (Option<Value>, Arc<GateParts>);
    static CACHE: std::sync::Mutex<Vec<Entry>> = std::sync::Mutex::new(Vec::new());
    const KEEP: usize = 8;
    let section = policy.gate.as_ref().map(|g| &g.value);
    if let Ok(cache) = CACHE.lock()
        && let Some((_, hit)) = cache.iter().find(|(t, _)| t.as_ref() == section)
    {
        return Ok((hit.0.clone(), hit.1.clone(), hit.2.clone()));
    }
    let config = load_gate_config(policy)?;
    // (both built, so that a bad flow rule and a bad pattern are reported
    // together)
    let flow = CompiledFlow::build(&config.flow).map_err(|problems| {
        problems
            .into_iter()
            .map(|(m, sp)| Diagnostic::at(ErrorKind::InvalidValue, &policy.file, sp, m))
            .collect::<Vec<_>>()
    });
    let patterns = PatternSet::compile(&config.patterns).map_err(|e| {
        Diagnostic::at(
            ErrorKind::InvalidValue,
            &policy.file,
            policy.gate.as_ref().map(|g| g.span.clone()).unwrap_or(0..0),
            e.to_string(),
        )
    });
    let (flow, patterns) = match (flow, patterns) {
        (Ok(f), Ok(p)) => (Arc::new(f), p),
        (f, p) => {
            let mut diagnostics = f.err().unwrap_or_default();
            diagnostics.extend(p.err());
            return Err(LoadError { diagnostics });
        }
    };
    if let Ok(mut cache) = CACHE.lock() {
        if cache.len() >= KEEP {
            cache.remove(0);
        }
        cache.push((
            section.cloned(),
            Arc::new((config.clone(), patterns.clone(), flow.clone())),
        ));
    }
    Ok((config, patterns, flow))
}

/// What [`cached_config`] gives: `[gate]` read, its patterns and its
/// compiled `[gate.flow]`.
pub(crate) type GateParts = (GateConfig, PatternSet, Arc<CompiledFlow>);

/// A tool's argument roles for the call gate (paths and roles), and whether
/// some were inferred ([`tool_roles`]).
pub(crate) type ToolRoles = (Vec<(Vec<RoleSeg>, ArgRole)>, bool);

/// The argument roles of `tool`, whose input schema's tree is `schema`:
/// declared, or inferred by `[[gate.infer]]`; and whether some were
/// inferred.
pub(crate) fn tool_roles(
    config: &GateConfig,
    t: &CompiledTool,
    schema: &Value,
    domains: &[String],
) -> ToolRoles {
    if t.gate.arguments.is_empty() {
        (infer_roles(config, t, schema, domains), true)
    } else {
        let mut declared: Vec<(Vec<RoleSeg>, ArgRole)> = t
            .gate
            .arguments
            .iter()
            .filter_map(|(k, r)| parse_role_path(k).ok().map(|p| (p, *r)))
            .take(MAX_ROLES)
            .collect();
        // A declared role the schema does not have: the schema changed
        // under the tags (a live server's), so what the tags meant may
        // sit under another name; infer from the schema too.
        let dead = !dead_roles(&t.gate.arguments, schema).is_empty();
        if dead {
            for (p, r) in infer_roles(config, t, schema, domains) {
                if declared.len() < MAX_ROLES && !declared.iter().any(|(q, _)| *q == p) {
                    declared.push((p, r));
                }
            }
        }
        (declared, dead)
    }
}

/// The call gate's data for each compiled tool: its schema, its argument
/// roles ([`tool_roles`], found when the tool was compiled; else from its
/// schema's tree, parsed again), risk level and flags. `None` when a schema
/// is missing (it did not compile; that is reported).
pub(crate) fn gate_tools(
    config: &GateConfig,
    tools: &[CompiledTool],
    schemas: Vec<Option<(ToolSchema, Option<ToolRoles>)>>,
    domains: &[String],
) -> Option<Vec<GateTool>> {
    let mut out = Vec::with_capacity(tools.len());
    for (t, s) in tools.iter().zip(schemas) {
        let (schema, roles) = s?;
        let (role_paths, inferred) = match roles {
            Some(r) => r,
            None => tool_roles(config, t, &t.input_schema.value(), domains),
        };
        let roles = role_paths
            .iter()
            .map(|(p, r)| (role_path_string(p), *r))
            .collect();
        // An open schema whose roles only the fallback rules gave: its
        // other arguments stay accepted, as the schema says.
        let open_fallback = inferred
            && !role_paths.is_empty()
            && schema.declared_params().is_empty()
            && t.gate.arguments.is_empty()
            && open_schema_fallback(config, t, &t.input_schema.value(), domains);
        out.push(GateTool {
            schema,
            roles,
            role_paths,
            roles_inferred: inferred,
            open_fallback,
            risk_level: t.gate.risk_level.unwrap_or(config.risk.default_risk_level),
            requires_confirmation: t.gate.requires_confirmation,
            read_only: t.gate.read_only,
            open_world: t.gate.open_world,
            sql_dialect: t.gate.sql_dialect.clone().unwrap_or_default(),
        });
    }
    Some(out)
}

/// The gate of a plan: `[gate]` read (problems go to `sink`) with its
/// patterns, and the per-tool data of the compiled catalog.
pub(crate) fn build_gate(
    config: Result<GateParts, LoadError>,
    tools: Option<Arc<Vec<GateTool>>>,
    sink: &mut Sink,
) -> Option<Arc<CompiledGate>> {
    let (config, patterns, flow) = match config {
        Ok(c) => c,
        Err(e) => {
            for d in e.diagnostics {
                sink.push(d);
            }
            return None;
        }
    };
    Some(Arc::new(CompiledGate {
        config,
        patterns,
        tools: tools?,
        flow,
    }))
}

#[cfg(test)]
mod tests {
    use super::words_of;

    #[test]
    fn tool_words_split_names_and_descriptions() {
        assert_eq!(
            words_of("db.executeSql", "Run SQL (sqlite3) on the_db."),
            [
                "db", "execute", "Sql", "Run", "SQL", "sqlite3", "on", "the", "db"
            ]
        );
        assert_eq!(words_of("query_docs", ""), ["query", "docs"]);
        // A word inside another is not a match: `mysqlx` is not `mysql`.
        assert!(!words_of("mysqlx", "").contains(&"mysql"));
    }
}
