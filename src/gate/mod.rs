//! The call gate: for a tool call (tool name, JSON arguments, session), a
//! [`Verdict`]: `allow` (with the arguments after coercion), `ask` (the user
//! must confirm) or `deny`, with findings and a message written for the model.
//!
//! The layers, in the order a call meets them (seed 002's three layers):
//!
//! 1. **Input** — the tool must be registered ([`Verdict`] names the closest
//!    tools otherwise); the arguments must be a JSON object within
//!    `[gate.limits]`; they are coerced toward the declared types, through
//!    `$ref`s, `anyOf`/`oneOf` branches and `type` lists ([`coerce`]), and
//!    validated against the tool's JSON Schema ([`schema`]). Every coercion
//!    is listed in the verdict.
//! 2. **Danger analysis** — arguments whose role is declared in the tool's
//!    tags (or inferred by `[[gate.infer]]`), at any depth (`/edits/*/file_path`),
//!    are parsed: shell command lines and argv ([`shell`], brush-parser), SQL
//!    ([`sql`], sqlparser), paths ([`path`]); every other string argument is
//!    scanned by the regex rules ([`patterns`], one `RegexSet`). [`roles`]
//!    walks the arguments.
//! 3. **Risk gates** — the `[gate.risk]` table turns the tool's risk level,
//!    its confirmation flag and the findings into the decision ([`risk`]).
//!
//! Around it: [`exec`] runs an allowed call under the policy's timeout and
//! retries, and [`audit`] writes one JSON Lines record and one `tracing`
//! event per verdict and per execution.
//!
//! Everything is compiled into the [`Plan`] (`plan.gate`) when the policy
//! loads: the configuration, the pattern set and each tool's schema. Their
//! types live with the plan ([`crate::plan::gate`]) and are re-exported here
//! under their usual names ([`config`], [`GateConfig`], [`PatternSet`], ...);
//! this module is the runtime that reads them.
//!
//! ```
//! use std::sync::Arc;
//! use toolgate::gate::{Action, Gate};
//! use toolgate::load::{load_plan, Sources};
//!
//! let gate = Gate::new(Arc::new(load_plan(&Sources::default()).unwrap()));
//! let v = gate.check("shell.run_command", serde_json::json!({"command": "rm -rf /"}));
//! assert_eq!(v.decision, Action::Deny);
//! let v = gate.check("shell.run_command", serde_json::json!({"command": "git status"}));
//! assert_eq!(v.decision, Action::Allow);
//! ```

pub mod audit;
pub mod code;
pub mod coerce;
pub mod exec;
pub mod flow;
pub mod numbers;
pub mod path;
pub mod patterns;
pub mod risk;
pub mod roles;
pub mod schema;
pub mod shell;
pub mod sql;
pub mod types;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

pub use crate::plan::gate::config;
pub use crate::plan::gate::{CompiledGate, GateTool};
pub use audit::{AuditRecord, AuditSink, JsonlSink};
pub use config::GateConfig;
pub use exec::{ExecError, ExecSettings, Execution, ToolError};
pub use path::{PathConfig, analyze_path};
pub use patterns::{PatternRule, PatternScope, PatternSet};
pub use schema::SchemaCheck;
pub use shell::{ShellAnalysis, ShellConfig, ShellInput, analyze_shell, analyze_shell_full};
pub use sql::{SqlConfig, analyze_sql};
pub use types::{Action, Check, Coerced, EffectFound, Finding, FindingKind, Severity, decide};

use crate::parse::tags::RoleSeg;
use crate::plan::Plan;

/// The gate's answer for one call.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// `allow`, `ask` or `deny`.
    pub decision: Action,
    /// The arguments after coercion (as received when they could not be read).
    pub arguments: Value,
    /// Everything found, most decisive first.
    pub findings: Vec<Finding>,
    /// Every coercion made to the arguments (path, type sent, type passed
    /// on), in the order of the schema walk.
    pub coercions: Vec<Coerced>,
    /// For the model: what was found, which parameter, what to do instead.
    pub message: String,
    /// The effects the analysis found (shell commands: paths read, written
    /// and deleted where they land, code run, network, system changes;
    /// path arguments: read or written), in order.
    pub effects: Vec<EffectFound>,
    /// The data-flow labels `[gate.flow]` gives the call (see [`flow`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<flow::CallLabel>,
    /// The flow rules the call completes in its session, with the earlier
    /// calls that armed each (empty outside a session).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flow: Vec<flow::FlowMatch>,
    /// The tool's canonical name (the name as called when it is unknown).
    #[serde(skip)]
    pub tool: String,
    /// The risk rule that decided, if one did.
    #[serde(skip)]
    pub risk_rule: Option<String>,
    /// Time spent in the gate.
    #[serde(skip)]
    pub latency: Duration,
    /// Audit call id, set when the first audit record of the call is written.
    #[serde(skip)]
    pub call_id: std::sync::OnceLock<String>,
}

impl Verdict {
    /// Ids of the rules that fired.
    pub fn rule_ids(&self) -> Vec<&str> {
        self.findings.iter().map(|f| f.rule_id.as_str()).collect()
    }

    /// What kind of failure a non-allow verdict is, for audit summaries:
    /// `unknown_tool`, `invalid_input`, `validation_error`,
    /// `dangerous_blocked` or `confirmation_required`.
    pub fn error_kind(&self) -> Option<&'static str> {
        let has = |k: FindingKind| self.findings.iter().any(|f| f.kind == k);
        match self.decision {
            Action::Allow => None,
            Action::Ask => Some("confirmation_required"),
            Action::Deny if has(FindingKind::Tool) => Some("unknown_tool"),
            Action::Deny if has(FindingKind::Input) => Some("invalid_input"),
            Action::Deny if has(FindingKind::Schema) => Some("validation_error"),
            Action::Deny => Some("dangerous_blocked"),
        }
    }
}

/// Size of a JSON value, bounded: stops counting at the limits.
fn over_limits(v: &Value, limits: &config::Limits) -> Option<String> {
    let mut stack: Vec<(&Value, usize)> = vec![(v, 1)];
    let mut values = 0usize;
    let mut bytes = 0usize;
    while let Some((v, depth)) = stack.pop() {
        values += 1;
        if depth > limits.max_depth {
            return Some(format!("nested more than {} levels deep", limits.max_depth));
        }
        if values > limits.max_values {
            return Some(format!("more than {} values", limits.max_values));
        }
        match v {
            Value::String(s) => bytes += s.len() + 2,
            Value::Array(a) => {
                bytes += 2 + a.len();
                stack.extend(a.iter().map(|x| (x, depth + 1)));
            }
            Value::Object(o) => {
                bytes += 2 + o.len();
                for (k, x) in o {
                    bytes += k.len() + 3;
                    stack.push((x, depth + 1));
                }
            }
            _ => bytes += 8,
        }
        if bytes > limits.max_argument_bytes {
            return Some(format!("more than {} bytes", limits.max_argument_bytes));
        }
    }
    None
}

/// Checks a call against `plan`'s gate. Pure: no audit, no tracing (see
/// [`Gate`] for those).
pub fn check_call(plan: &Plan, tool: &str, arguments: Value) -> Verdict {
    check_call_in(plan, tool, arguments, &CallEnv::default())
}

/// Where a call runs, as the caller knows it beyond the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallEnv {
    /// The project's directories (absolute), e.g. an MCP client's roots
    /// (`roots/list`, `file://` URIs). When not empty and every `[gate.paths]
    /// roots` entry of the policy is relative (the shipped `["."]`), the
    /// policy's roots are taken relative to each of these instead of the
    /// process's working directory, which an MCP client chooses for its own
    /// reasons (`/` for some). Absolute policy roots (a deployment's) win.
    pub roots: Vec<std::path::PathBuf>,
}

/// [`check_call`] for a call running in `env`.
pub fn check_call_in(plan: &Plan, tool: &str, arguments: Value, env: &CallEnv) -> Verdict {
    let started = Instant::now();
    let mut v = check_inner(plan, tool, arguments, &[], env);
    v.latency = started.elapsed();
    v
}

/// The `[gate.paths]` a call in `env` runs under: `cfg`, or a copy whose
/// relative roots are taken relative to `env`'s roots (see [`CallEnv`]).
fn paths_in<'a>(cfg: &'a PathConfig, env: &CallEnv) -> std::borrow::Cow<'a, PathConfig> {
    use std::path::Path;
    if env.roots.is_empty()
        || cfg.roots.is_empty()
        || cfg.roots.iter().any(|r| Path::new(r).is_absolute())
        || env.roots.iter().any(|r| !r.is_absolute())
    {
        return std::borrow::Cow::Borrowed(cfg);
    }
    let mut c = cfg.clone();
    c.roots = env
        .roots
        .iter()
        .flat_map(|base| {
            cfg.roots.iter().map(move |r| {
                path::normalize(&base.join(r))
                    .to_string_lossy()
                    .into_owned()
            })
        })
        .collect();
    std::borrow::Cow::Owned(c)
}

/// Like [`check_call`], with the arguments as JSON text (invalid JSON is a
/// deny verdict, not an error).
pub fn check_call_json(plan: &Plan, tool: &str, arguments: &str) -> Verdict {
    check_call_json_in(plan, tool, arguments, &CallEnv::default())
}

/// [`check_call_json`] for a call running in `env`.
pub fn check_call_json_in(plan: &Plan, tool: &str, arguments: &str, env: &CallEnv) -> Verdict {
    let started = Instant::now();
    let mut v = match parse_arguments(plan, tool, arguments) {
        Ok(args) => check_inner(plan, tool, args, &numbers::inexact_integers(arguments), env),
        Err(v) => *v,
    };
    v.latency = started.elapsed();
    v
}

/// The compiled gate of `plan` (the shipped gate, with no per-tool data,
/// for a plan built without one).
pub fn compiled(plan: &Plan) -> Arc<CompiledGate> {
    gate_of(plan)
}

fn gate_of(plan: &Plan) -> Arc<CompiledGate> {
    match &plan.gate {
        Some(g) => g.clone(),
        None => Arc::new(CompiledGate {
            config: config::shipped().clone(),
            patterns: PatternSet::compile(&config::shipped().patterns)
                .unwrap_or_else(|_| PatternSet::empty()),
            tools: Default::default(),
            flow: Arc::new(
                crate::plan::gate::flow::CompiledFlow::build(&config::shipped().flow)
                    .unwrap_or_default(),
            ),
        }),
    }
}

/// The nesting depth of arrays and objects past which serde_json stops
/// parsing (its recursion limit): deeper arguments are `call.too-large`.
const JSON_PARSER_DEPTH: usize = 128;

fn parse_arguments(plan: &Plan, tool: &str, text: &str) -> Result<Value, Box<Verdict>> {
    let g = gate_of(plan);
    let cfg = &g.config;
    let fail = |check: &Check, detail: String, kind: FindingKind| {
        let f = check.finding(kind, "", &detail);
        Box::new(finish(tool, Value::Null, vec![f], Action::Deny, None))
    };
    if text.len() > cfg.limits.max_argument_bytes {
        return Err(fail(
            &cfg.checks.too_large,
            format!(
                "{} bytes of arguments, over the limit of {}",
                text.len(),
                cfg.limits.max_argument_bytes
            ),
            FindingKind::Input,
        ));
    }
    match serde_json::from_str::<Value>(text) {
        // A repeated key is read differently by different parsers (RFC 8259
        // §4): refused, so the gate never checks a value other than the
        // one a first-key-wins consumer runs (newcomer pass 4).
        Ok(_) if let Some(d) = crate::diag::duplicate_keys::first_duplicate(text) => Err(fail(
            &cfg.checks.invalid_json,
            format!(
                "{d}: the same key twice is read differently by different JSON parsers; send each key once"
            ),
            FindingKind::Input,
        )),
        Ok(v) => Ok(v),
        // Valid JSON nested past serde_json's recursion limit (128) is too
        // deep to check, not malformed: `call.too-large`, as past
        // `[gate.limits] max_depth` (issue 29).
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => Err(fail(
            &cfg.checks.too_large,
            format!(
                "nested more than {JSON_PARSER_DEPTH} levels deep (the JSON parser's limit; [gate.limits] max_depth is {})",
                cfg.limits.max_depth
            ),
            FindingKind::Input,
        )),
        Err(e) => Err(fail(
            &cfg.checks.invalid_json,
            format!("{e}"),
            FindingKind::Input,
        )),
    }
}

/// `inexact`: the integer literals of the arguments' text that no 64-bit
/// integer holds (empty when the arguments came parsed).
fn check_inner(
    plan: &Plan,
    tool: &str,
    mut args: Value,
    inexact: &[numbers::InexactInteger],
    env: &CallEnv,
) -> Verdict {
    let g = gate_of(plan);
    let cfg = &g.config;
    if let Some(why) = over_limits(&args, &cfg.limits) {
        let f = cfg.checks.too_large.finding(FindingKind::Input, "", &why);
        return finish(tool, Value::Null, vec![f], Action::Deny, None);
    }
    let Some(idx) = plan.tool_index(tool) else {
        // the name is echoed (verdict, message, audit) clipped, and the
        // closest tools are those of the clipped name (a huge name is cheap)
        let tool = crate::diag::echo(tool);
        let tool = tool.as_ref();
        // the list `explain` gives too (`Plan::close_tool_names`)
        let near = plan.close_tool_names(tool, 3);
        let detail = if plan.tools.is_empty() {
            format!("Unknown tool `{tool}`: no tool is registered.")
        } else if near.is_empty() {
            format!(
                "Unknown tool `{tool}`: no registered tool has a close name. List the tools (tools/list) and call one by its exact name."
            )
        } else {
            format!(
                "Unknown tool `{tool}`. The closest registered tools are: {}. Call one of them by its exact name.",
                near.iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let f = cfg
            .checks
            .unknown_tool
            .finding(FindingKind::Tool, "", &detail);
        return finish(tool, args, vec![f], Action::Deny, None);
    };
    let name = plan.tools[idx].name.as_str();
    let Some(gt) = g.tools.get(idx) else {
        let f = cfg.checks.unknown_tool.finding(
            FindingKind::Tool,
            "",
            &format!("Tool `{name}` has no compiled gate data."),
        );
        return finish(name, args, vec![f], Action::Deny, None);
    };
    if !args.is_object() {
        if args.is_null() {
            args = Value::Object(Default::default());
        } else {
            let f = cfg.checks.invalid_json.finding(
                FindingKind::Input,
                "",
                &format!("got {}, not an object", kind_name(&args)),
            );
            return finish(name, args, vec![f], Action::Deny, None);
        }
    }
    // Layer 1: schema, with coercion.
    let mut checked = gt.schema.check(name, &mut args, &cfg.coercion, &cfg.checks);
    numbers::add_literal_findings(&mut checked.findings, inexact, &cfg.checks);
    let coercions = checked.coerced;
    if checked.findings.iter().any(|f| f.action == Action::Deny) {
        let mut v = finish(name, args, checked.findings, Action::Deny, None);
        v.coercions = coercions;
        return v;
    }
    let mut findings = checked.findings;
    // Arguments no rule can see: on a tool with a shell, SQL or path role,
    // an argument the schema does not declare is refused.
    if let Some(f) = undeclared(&cfg.checks.undeclared_argument, gt, &args) {
        let mut v = finish(name, args, vec![f], Action::Deny, None);
        v.coercions = coercions;
        return v;
    }
    // Layer 2: danger analysis.
    let mut effects = Vec::new();
    let paths = paths_in(&cfg.paths, env);
    let roots = roles::analyze(&g, &paths, gt, &args, &mut findings, &mut effects);
    // Files touched under a root that holds everything (the proxy started
    // in `/` or in the home directory, with no MCP roots): containment
    // proves nothing there, so the user is asked.
    if effects
        .iter()
        .any(|e| matches!(&*e.kind, "read" | "write" | "delete"))
        && let Some(root) = roots.unwrap_or_else(|| path::roots(&paths)).broad.clone()
    {
        findings.push(cfg.paths.checks.broad_root.finding(
            FindingKind::Path,
            "",
            &format!(
                "the allowed root `{}` holds every file{}",
                root.display(),
                if root.parent().is_none() {
                    ""
                } else {
                    " of the user"
                }
            ),
        ));
    }
    // Layer 3: risk gates.
    let tr = risk::ToolRisk {
        risk_level: gt.risk_level,
        requires_confirmation: gt.requires_confirmation,
    };
    let (decision, rule) = risk::decide_risk(&cfg.risk, tr, &findings);
    if let Some(r) = rule
        && decision > decide(&findings)
    {
        let msg = r.message.clone().unwrap_or_else(|| {
            format!(
                "The policy's risk rule \"{}\" applies to this tool.",
                r.name
            )
        });
        findings.push(Finding {
            rule_id: format!("risk.{}", slug(&r.name)),
            kind: FindingKind::Risk,
            path: String::new(),
            severity: findings
                .iter()
                .map(|f| f.severity)
                .max()
                .unwrap_or(Severity::Info),
            action: decision,
            message: msg,
        });
    }
    findings.truncate(cfg.limits.max_findings.max(1));
    let mut v = finish(name, args, findings, decision, rule.map(|r| r.name.clone()));
    v.effects = effects;
    v.coercions = coercions;
    if v.decision != Action::Deny {
        v.labels = flow::label_call(plan, cfg, &paths, &g.flow, idx, &v);
    }
    if let Some(r) = rule
        && decision < decide(&v.findings)
    {
        v.message.push_str(&format!(
            " (The policy's risk rule \"{}\" lowers this to {decision}.)",
            r.name
        ));
    }
    v
}

fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// A JSON value's kind, for messages ([`crate::diag::json_kind`]).
pub(crate) use crate::diag::json_kind as kind_name;

/// An argument the schema does not declare, on a tool whose arguments are
/// analysed by role: the finding, naming the declared ones.
fn undeclared(check: &Check, gt: &GateTool, args: &Value) -> Option<Finding> {
    if gt.roles.is_empty() || gt.open_fallback {
        return None;
    }
    let Value::Object(map) = args else {
        return None;
    };
    let declared: Vec<&str> = gt
        .schema
        .declared_params()
        .iter()
        .map(String::as_str)
        .collect();
    // An argument a top-level role covers is analysed by that role (an open
    // schema declares no parameter, and its roles come from the rules' names).
    let by_role = |k: &str| {
        gt.role_paths
            .iter()
            .any(|(p, _)| matches!(p.as_slice(), [RoleSeg::Key(x)] if x == k))
    };
    let extra: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !declared.contains(k) && !by_role(k))
        .collect();
    if extra.is_empty() {
        return None;
    }
    // Names from the call (any number, any length) are echoed clipped and
    // cut at MAX_LISTED_ARGS, as every value echoed to the model is.
    let list = |v: &[&str]| {
        let mut parts: Vec<String> = v
            .iter()
            .take(MAX_LISTED_ARGS)
            .map(|k| format!("`{}`", crate::diag::echo(k)))
            .collect();
        if v.len() > MAX_LISTED_ARGS {
            parts.push(crate::diag::more(v.len() - MAX_LISTED_ARGS));
        }
        parts.join(", ")
    };
    // A misspelt name (`taill` for `tail`) gets the declared one it was
    // meant as, when that one is not in the call already (issue 29).
    let meant: Vec<(&str, &str)> = extra
        .iter()
        .take(MAX_LISTED_ARGS)
        .filter_map(|k| {
            let m = crate::diag::did_you_mean(k, declared.iter().copied())?;
            (!map.contains_key(m)).then_some((*k, m))
        })
        .collect();
    let hint = match meant.as_slice() {
        [] => String::new(),
        [(_, m)] if extra.len() == 1 => format!(" (did you mean `{m}`? rename it)"),
        _ => format!(
            " (did you mean {}? rename them)",
            meant
                .iter()
                .map(|(k, m)| format!("`{m}` for `{}`", crate::diag::echo(k)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let detail = format!(
        "{} {} not declared by the tool's schema{hint}; the declared parameters are: {}",
        list(&extra),
        if extra.len() == 1 { "is" } else { "are" },
        if declared.is_empty() {
            "none".to_string()
        } else {
            list(&declared)
        }
    );
    let mut ptr = String::new();
    schema::push_ptr(&mut ptr, &crate::diag::echo(extra[0]));
    Some(check.finding(FindingKind::Schema, &ptr, &detail))
}

/// At most this many undeclared argument names are listed in one finding.
const MAX_LISTED_ARGS: usize = 20;

fn finish(
    tool: &str,
    arguments: Value,
    mut findings: Vec<Finding>,
    decision: Action,
    risk_rule: Option<String>,
) -> Verdict {
    // Most decisive first, then by severity; stable otherwise.
    findings.sort_by(|a, b| b.action.cmp(&a.action).then(b.severity.cmp(&a.severity)));
    // The same finding twice (one rule, one argument, one message: two layers
    // that saw the same thing) is listed once.
    let mut seen = std::collections::HashSet::new();
    findings.retain(|f| seen.insert((f.rule_id.clone(), f.path.clone(), f.message.clone())));
    // (the name as echoed to the model: clipped, issue 29 item 5)
    let shown = crate::diag::echo(tool);
    let message = match decision {
        Action::Allow => format!("The call to `{shown}` is allowed."),
        Action::Ask => format!(
            "The call to `{shown}` needs the user's confirmation before it runs. {}",
            reasons(&findings, Action::Ask)
        ),
        Action::Deny => format!(
            "The call to `{shown}` was blocked. {}",
            reasons(&findings, Action::Deny)
        ),
    };
    Verdict {
        decision,
        arguments,
        findings,
        coercions: Vec::new(),
        message: message.trim_end().to_string(),
        effects: Vec::new(),
        labels: Vec::new(),
        flow: Vec::new(),
        tool: tool.to_string(),
        risk_rule,
        latency: Duration::ZERO,
        call_id: std::sync::OnceLock::new(),
    }
}

fn reasons(findings: &[Finding], at_least: Action) -> String {
    let mut parts: Vec<&str> = findings
        .iter()
        .filter(|f| f.action >= at_least || f.kind == FindingKind::Risk)
        .map(|f| f.message.as_str())
        .collect();
    if parts.is_empty() {
        parts = findings.iter().map(|f| f.message.as_str()).collect();
    }
    parts.dedup();
    parts.truncate(5);
    parts.join(" ")
}

/// The gate of a plan, with an optional audit sink: checks calls and runs
/// allowed ones under the policy's execution settings.
#[derive(Clone)]
pub struct Gate {
    plan: Arc<Plan>,
    sink: Option<Arc<dyn AuditSink>>,
    /// Per session id, what the `[gate.flow]` rules remember (see [`flow`]).
    flows: Arc<std::sync::Mutex<std::collections::HashMap<String, flow::FlowHistory>>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("policy", &self.plan.policy_name)
            .field("audit", &self.sink.is_some())
            .finish()
    }
}

impl Gate {
    /// A gate over `plan`, without audit sink.
    pub fn new(plan: Arc<Plan>) -> Gate {
        Gate {
            plan,
            sink: None,
            flows: Default::default(),
        }
    }

    /// Adds an audit sink: every verdict and execution writes one record.
    pub fn with_audit(mut self, sink: Arc<dyn AuditSink>) -> Gate {
        self.sink = Some(sink);
        self
    }

    /// The plan.
    pub fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }

    /// The gate configuration in force.
    pub fn config(&self) -> Arc<CompiledGate> {
        gate_of(&self.plan)
    }

    /// Checks a call with no session id.
    pub fn check(&self, tool: &str, arguments: Value) -> Verdict {
        self.check_in(None, tool, arguments)
    }

    /// Checks a call made in `session`. With a session, the `[gate.flow]`
    /// rules judge the call after the session's earlier calls, and an
    /// allowed call is recorded in its history (an `ask` is recorded when
    /// [`Gate::confirm_in`] says the user confirmed it).
    pub fn check_in(&self, session: Option<&str>, tool: &str, arguments: Value) -> Verdict {
        let mut v = check_call(&self.plan, tool, arguments);
        self.session_flow(session, &mut v);
        self.record_verdict(session, &v);
        v
    }

    /// [`Gate::check_in`] for a call running in `env` (the project's roots,
    /// as [`check_call_in`] takes them); audited like every check.
    pub fn check_in_env(
        &self,
        session: Option<&str>,
        tool: &str,
        arguments: Value,
        env: &CallEnv,
    ) -> Verdict {
        let mut v = check_call_in(&self.plan, tool, arguments, env);
        self.session_flow(session, &mut v);
        self.record_verdict(session, &v);
        v
    }

    /// [`Gate::check_json`] for a call running in `env`.
    pub fn check_json_in_env(
        &self,
        session: Option<&str>,
        tool: &str,
        arguments: &str,
        env: &CallEnv,
    ) -> Verdict {
        let mut v = check_call_json_in(&self.plan, tool, arguments, env);
        self.session_flow(session, &mut v);
        self.record_verdict(session, &v);
        v
    }

    /// Checks a call whose arguments are JSON text (in `session`, as
    /// [`Gate::check_in`]).
    pub fn check_json(&self, session: Option<&str>, tool: &str, arguments: &str) -> Verdict {
        let mut v = check_call_json(&self.plan, tool, arguments);
        self.session_flow(session, &mut v);
        self.record_verdict(session, &v);
        v
    }

    fn session_flow(&self, session: Option<&str>, v: &mut Verdict) {
        let Some(id) = session else { return };
        let now = flow::now_seconds();
        let Ok(mut flows) = self.flows.lock() else {
            return;
        };
        let h = flows.entry(id.to_string()).or_default();
        flow::judge(&self.plan, h, v, now);
        if v.decision == Action::Allow {
            flow::record(&self.plan, h, v, now);
        }
    }

    /// Records in `session`'s history a call the user confirmed (a verdict
    /// `ask` that then ran), so later flow rules see its labels.
    pub fn confirm_in(&self, session: &str, verdict: &Verdict) {
        if let Ok(mut flows) = self.flows.lock() {
            let h = flows.entry(session.to_string()).or_default();
            flow::record(&self.plan, h, verdict, flow::now_seconds());
        }
    }

    /// A copy of `session`'s flow history (`None` for a session never seen).
    pub fn flow_history(&self, session: &str) -> Option<flow::FlowHistory> {
        self.flows.lock().ok()?.get(session).cloned()
    }

    /// Sets `session`'s flow history (one kept elsewhere between processes:
    /// `toolgate guard --session`'s state file).
    pub fn set_flow_history(&self, session: &str, history: flow::FlowHistory) {
        if let Ok(mut flows) = self.flows.lock() {
            flows.insert(session.to_string(), history);
        }
    }

    /// Forgets `session`'s flow history (the session ended).
    pub fn end_session(&self, session: &str) {
        if let Ok(mut flows) = self.flows.lock() {
            flows.remove(session);
        }
    }

    fn record_verdict(&self, session: Option<&str>, v: &Verdict) {
        tracing::info!(
            target: "toolgate::gate",
            session = session.unwrap_or(""),
            tool = %v.tool,
            decision = %v.decision,
            rules = ?v.rule_ids(),
            micros = v.latency.as_micros() as u64,
            "gate verdict"
        );
        if let Some(sink) = &self.sink {
            let g = gate_of(&self.plan);
            let rec = AuditRecord::verdict(&g.config.audit, session, v);
            sink.record(&rec);
        }
    }

    /// The execution settings of `tool` (policy defaults, tag overrides).
    pub fn exec_settings(&self, tool: &str) -> ExecSettings {
        let g = gate_of(&self.plan);
        ExecSettings::for_tool(&g.config.execution, self.plan.tool(tool).map(|t| &t.gate))
    }

    /// Runs `handler` for an allowed verdict under the tool's timeout and
    /// retry settings; a verdict that is not `allow` is not run. The
    /// handler gets the coerced arguments and the attempt number (0-based).
    pub fn execute<T, F>(
        &self,
        session: Option<&str>,
        verdict: &Verdict,
        handler: F,
    ) -> Execution<T>
    where
        T: Send + 'static,
        F: Fn(&Value, u32) -> Result<T, ToolError> + Send + Sync + 'static,
    {
        let ex = if verdict.decision != Action::Allow {
            Execution::not_run(verdict.decision)
        } else {
            let settings = self.exec_settings(&verdict.tool);
            let args = Arc::new(verdict.arguments.clone());
            exec::run(&settings, move |attempt| handler(&args, attempt))
        };
        tracing::info!(
            target: "toolgate::gate",
            session = session.unwrap_or(""),
            tool = %verdict.tool,
            attempts = ex.attempts,
            micros = ex.latency.as_micros() as u64,
            ok = ex.outcome.is_ok(),
            "tool execution"
        );
        if let Some(sink) = &self.sink {
            let g = gate_of(&self.plan);
            let rec = AuditRecord::execution(&g.config.audit, session, verdict, &ex);
            sink.record(&rec);
        }
        ex
    }
}

/// Where example calls run: a project in the system's temporary directory
/// (for a policy with relative roots), so that whether a policy's examples
/// hold does not depend on the directory a command runs in (`/` and the
/// home directory would make every file access ask).
fn example_env() -> CallEnv {
    let tmp = path::normalize(&std::env::temp_dir());
    CallEnv {
        roots: if tmp.is_absolute() && tmp.parent().is_some() {
            vec![tmp.join("toolgate-example-project")]
        } else {
            vec![]
        },
    }
}

/// Load-time check of one policy example call: `Err` with a message when
/// the decision differs. The call runs in a project under the system's
/// temporary directory, wherever the command runs (see `example_env`).
pub fn check_example_call(
    plan: &Plan,
    tool: &str,
    arguments: &Value,
    expected: Action,
) -> Result<(), String> {
    let v = check_call_in(plan, tool, arguments.clone(), &example_env());
    if v.decision == expected {
        Ok(())
    } else {
        Err(format!(
            "the call to `{tool}` must get `{expected}` but gets `{}`: {}",
            v.decision, v.message
        ))
    }
}
