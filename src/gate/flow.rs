//! Data flow across a session (`[gate.flow]`, issue 25): the labels a call
//! carries, and the rules over a session's history that raise its decision.
//!
//! A call is labelled from what the gate already knows of it
//! ([`label_call`]): its tool (name globs, `category`, read-only and
//! open-world flags: MCP `readOnlyHint`, `openWorldHint`), the
//! effects the analysis found (paths read, matched against globs or
//! `sensitive_reads`; writes outside the project's roots; network effects
//! of shell lines) and the hosts its
//! arguments and effects name (outside `allowed_hosts` or not). A
//! [`FlowHistory`] remembers, per label, the last call of the session that
//! carried it; [`FlowHistory::check`] finds the rules a new call completes
//! (every `after` label seen within the window, the call labelled `then`),
//! naming the calls that armed each. Its size is bounded by the number of
//! declared labels, whatever the length of the session.
//!
//! Pure: time is an input (seconds since the Unix epoch), nothing is read
//! from the clock.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{EffectFound, Finding, FindingKind, Verdict};
use crate::plan::Plan;
use crate::plan::gate::config::GateConfig;
use crate::plan::gate::flow::{CompiledFlow, Destinations as Want, Writes, host_allowed};
use crate::plan::gate::path::PathConfig;
use crate::plan::gate::types::Action;

/// Longest tool name or reason kept in a history entry (characters); longer
/// ones are clipped, so an entry's size is bounded.
pub const MAX_ENTRY_CHARS: usize = 200;

/// One label a call carries, and why (the attach rule's `why`, filled).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallLabel {
    /// The label's name, as the policy declares it.
    pub label: String,
    /// What gave the call this label (`read the private file /p/.env`).
    pub why: String,
}

/// The last call of a session that carried a label: what a rule's chain
/// shows the person confirming.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Armed {
    /// The label.
    pub label: String,
    /// The call's number in the session (1 for the first call checked).
    pub call: u64,
    /// When it was checked, in seconds since the Unix epoch.
    pub at: f64,
    /// The tool called (canonical name, clipped to [`MAX_ENTRY_CHARS`]).
    pub tool: String,
    /// Why it carried the label (clipped to [`MAX_ENTRY_CHARS`]).
    pub why: String,
}

/// A flow rule the call completes: the rule, its action, and the earlier
/// calls that armed it (one per `after` label, in the rule's order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowMatch {
    /// The rule's id (`flow.trifecta`).
    pub rule: String,
    /// What the rule asks for.
    pub action: Action,
    /// The calls that armed it.
    pub armed_by: Vec<Armed>,
}

/// The data-flow part of an audit record (`mcp-proxy --audit` and
/// `guard --audit`, flattened into the record): the labels the call
/// carried and the rules it completed with the calls that armed them. Both
/// are left out of the JSON line when empty (a policy without flow rules
/// writes the records it wrote before).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowAudit {
    /// The call's labels and why it carries each ([`CallLabel`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<CallLabel>,
    /// The flow rules the call completed, each with its action and the
    /// earlier calls that armed it (label, call number, unix time, tool,
    /// why: [`Armed`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow: Vec<FlowMatch>,
}

impl FlowAudit {
    /// What `verdict` carries of the flow rules.
    pub fn of(verdict: &Verdict) -> FlowAudit {
        FlowAudit {
            labels: verdict.labels.clone(),
            flow: verdict.flow.clone(),
        }
    }
}

/// What one session remembers for the flow rules: how many calls were
/// recorded, and for each label the last call that carried it. Serializable
/// (the `toolgate guard --session` state file, the proxy's signed handle).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowHistory {
    /// Calls recorded so far.
    pub calls: u64,
    /// Per label seen, its last call (at most one entry per label name).
    pub last: Vec<Armed>,
}

/// `s`, or its first [`MAX_ENTRY_CHARS`] characters and `…`.
fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_ENTRY_CHARS) {
        None => s.to_string(),
        Some((i, _)) => {
            let mut out = String::with_capacity(i + '…'.len_utf8());
            out.push_str(&s[..i]);
            out.push('…');
            out
        }
    }
}

impl FlowHistory {
    /// An empty history.
    pub fn new() -> FlowHistory {
        FlowHistory::default()
    }

    fn last_of(&self, label: &str) -> Option<&Armed> {
        self.last.iter().find(|a| a.label == label)
    }

    /// The rules of `flow` that a call carrying `labels`, checked at `now`
    /// (seconds since the epoch), completes after this history: for each,
    /// every `after` label was carried by a call within the window (calls
    /// back, counting this one as 0; seconds back from `now`).
    pub fn check(&self, flow: &CompiledFlow, labels: &[CallLabel], now: f64) -> Vec<FlowMatch> {
        let mut out = Vec::new();
        if labels.is_empty() {
            return out;
        }
        let this = self.calls + 1;
        'rules: for r in &flow.rules {
            let then = &*flow.labels[r.then];
            if !labels.iter().any(|l| l.label == then) {
                continue;
            }
            let mut armed_by = Vec::with_capacity(r.after.len());
            for &i in &r.after {
                let Some(a) = self.last_of(&flow.labels[i]) else {
                    continue 'rules;
                };
                if this - a.call > r.window_calls {
                    continue 'rules;
                }
                if let Some(w) = r.window_seconds
                    && now - a.at > w
                {
                    continue 'rules;
                }
                armed_by.push(a.clone());
            }
            out.push(FlowMatch {
                rule: r.rule.id.clone(),
                action: r.rule.action,
                armed_by,
            });
        }
        out
    }

    /// Records a call that ran (allowed, or confirmed by the user) with its
    /// labels, at `now`. Labels not among `flow`'s (a reload renamed them)
    /// are kept under their name; entries older than `max_history` calls
    /// are dropped.
    pub fn record(&mut self, flow: &CompiledFlow, tool: &str, labels: &[CallLabel], now: f64) {
        self.calls += 1;
        let this = self.calls;
        for l in labels {
            let entry = Armed {
                label: l.label.clone(),
                call: this,
                at: now,
                tool: clip(tool),
                why: clip(&l.why),
            };
            match self.last.iter_mut().find(|a| a.label == l.label) {
                Some(a) => *a = entry,
                None => self.last.push(entry),
            }
        }
        let keep = flow.max_history;
        self.last.retain(|a| this - a.call < keep.max(1));
        // a label no longer declared cannot arm a rule: bounded by the
        // declared labels plus those of this call
        let declared = |a: &Armed| flow.labels.iter().any(|l| **l == *a.label);
        if self.last.iter().any(|a| !declared(a)) {
            self.last
                .retain(|a| declared(a) || labels.iter().any(|l| l.label == a.label));
        }
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.calls == 0 && self.last.is_empty()
    }

    /// Bytes this history holds on the heap (its entries and their strings).
    pub fn heap_bytes(&self) -> usize {
        self.last.capacity() * std::mem::size_of::<Armed>()
            + self
                .last
                .iter()
                .map(|a| a.label.capacity() + a.tool.capacity() + a.why.capacity())
                .sum::<usize>()
    }
}

/// The hosts a string names: each whitespace-separated word that parses as
/// a URL with a host.
fn hosts_in_text(s: &str, out: &mut Vec<String>) {
    if !s.contains("://") {
        return;
    }
    for word in s.split_whitespace() {
        let word = word.trim_matches(|c: char| matches!(c, '"' | '\'' | '<' | '>' | '(' | ')'));
        if let Some(pos) = word.find("://")
            && let Ok(u) = url::Url::parse(
                &word[word[..pos]
                    .rfind(|c: char| !c.is_ascii_alphanumeric() && c != '+' && c != '-' && c != '.')
                    .map(|i| i + 1)
                    .unwrap_or(0)..],
            )
            && let Some(h) = u.host_str()
        {
            out.push(h.to_ascii_lowercase());
        }
    }
}

/// The host an effect operand names, when it names one: a URL's host, or
/// `user@host[:path]`'s host.
fn host_of_operand(op: &str, out: &mut Vec<String>) -> bool {
    if op.contains("://") {
        let before = out.len();
        hosts_in_text(op, out);
        return out.len() > before;
    }
    let Some((_, rest)) = op.rsplit_once('@') else {
        return false;
    };
    let host = rest.split([':', '/']).next().unwrap_or(rest);
    if !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']'))
    {
        out.push(host.to_ascii_lowercase());
        true
    } else {
        false
    }
}

/// Where a call sends: the hosts it names, and the programs that contact
/// the network without naming a host the gate can read (`git push origin`,
/// `ssh box`, `dig name`), whose destination is unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Destinations {
    /// Hosts of URLs in the string arguments and of the `url`, `network`
    /// and `remote` effects, lowercase, sorted, deduplicated.
    pub hosts: Vec<String>,
    /// Programs with a network effect and no host found for them.
    pub unknown: Vec<String>,
}

/// The destinations of a call ([`Destinations`]).
pub fn destinations(arguments: &Value, effects: &[EffectFound]) -> Destinations {
    let mut out = Vec::new();
    let mut stack = vec![arguments];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => hosts_in_text(s, &mut out),
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    let mut named: Vec<&str> = Vec::new();
    let mut programs: Vec<&str> = Vec::new();
    for e in effects {
        if matches!(&*e.kind, "url" | "network" | "remote") {
            if host_of_operand(&e.operand, &mut out) {
                named.push(&e.resolved);
            } else {
                programs.push(&e.resolved);
            }
        }
    }
    let mut unknown: Vec<String> = programs
        .into_iter()
        .filter(|p| !named.contains(p))
        .map(str::to_string)
        .collect();
    unknown.sort();
    unknown.dedup();
    out.sort();
    out.dedup();
    Destinations {
        hosts: out,
        unknown,
    }
}

/// The first write of `effects` (a `write` or `delete` effect) that lands
/// outside the roots of `paths`, as the path it names: outside every root,
/// through a symlink that leads outside, past `max_symlinks`, with no root
/// configured, or at a path only known at run time (`dynamic`: fail
/// closed). `~/` is the home directory (`$HOME`; outside when unset).
pub fn write_outside(paths: &PathConfig, effects: &[EffectFound]) -> Option<String> {
    use super::path::{Placement, place};
    use std::path::{Path, PathBuf};
    let roots = super::path::roots(paths);
    effects
        .iter()
        .filter(|e| matches!(&*e.kind, "write" | "delete"))
        .find_map(|e| {
            let at = if e.resolved.is_empty() {
                e.operand.as_str()
            } else {
                e.resolved.as_str()
            };
            if at == "dynamic" {
                return Some(format!("{} (a path only known at run time)", e.operand));
            }
            let abs: Option<PathBuf> = match at.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .filter(|h| h.is_absolute())
                    .map(|h| h.join(rest)),
                None if Path::new(at).is_absolute() => Some(PathBuf::from(at)),
                None => roots.lexical.first().map(|r| r.join(at)),
            };
            let outside = match abs {
                None => true,
                Some(p) => place(&roots, &p, true) != Placement::Inside,
            };
            outside.then(|| at.to_string())
        })
}

/// The labels `[gate.flow]` gives the call `verdict` judged (tool `idx` of
/// `plan`, its paths judged against `paths`, the `[gate.paths]` the call
/// ran under): every attach rule whose conditions all hold, once per label
/// (the first rule's reason). Empty when the policy has no flow rule; the
/// gate does not label a call it denies (it never runs).
pub fn label_call(
    plan: &Plan,
    cfg: &GateConfig,
    paths: &PathConfig,
    flow: &CompiledFlow,
    idx: usize,
    verdict: &Verdict,
) -> Vec<CallLabel> {
    let mut out: Vec<CallLabel> = Vec::new();
    if !flow.is_active() {
        return out;
    }
    let tool = &plan.tools[idx];
    let name = tool.name.as_str();
    let mut dests: Option<Destinations> = None;
    for a in &flow.attach {
        let label = &*flow.labels[a.label];
        if out.iter().any(|l| l.label == label) {
            continue;
        }
        let r = &a.rule;
        let mut detail = String::new();
        if !r.tools.is_empty() {
            let hit = match &a.tools_any {
                Some(set) => set.is_match(name),
                None => r.tools.iter().any(|g| g.is_match(name)),
            };
            if !hit {
                continue;
            }
            detail = name.to_string();
        }
        if !r.categories.is_empty()
            && !tool
                .gate
                .category
                .as_ref()
                .is_some_and(|c| r.categories.iter().any(|x| x == c))
        {
            continue;
        }
        if let Some(ro) = r.read_only
            && tool.gate.read_only != ro
        {
            continue;
        }
        if let Some(ow) = r.open_world
            && tool.gate.open_world != Some(ow)
        {
            continue;
        }
        if !r.effects.is_empty()
            && !verdict
                .effects
                .iter()
                .any(|e| r.effects.iter().any(|k| *k.get_ref() == e.kind))
        {
            continue;
        }
        if !r.paths.is_empty() {
            let any = |p: &str| match &a.paths_any {
                Some(set) => set.is_match(p),
                None => r.paths.iter().any(|g| g.is_match(p)),
            };
            let hit = verdict.effects.iter().find(|e| {
                a.path_kinds.iter().any(|k| *k == e.kind) && {
                    let at = path_of(e);
                    any(at) || (at != e.operand && any(&e.operand))
                }
            });
            match hit {
                Some(e) => detail = path_of(e).to_string(),
                None => continue,
            }
        }
        if r.sensitive_reads {
            let sensitive = &cfg.shell.sensitive_reads;
            let hit = verdict.effects.iter().find(|e| {
                e.kind == "read" && {
                    let at = path_of(e);
                    sensitive.is_match(at) || (at != e.operand && sensitive.is_match(&e.operand))
                }
            });
            match hit {
                Some(e) => detail = path_of(e).to_string(),
                None => continue,
            }
        }
        if let Some(want) = r.writes {
            let hit = match want {
                Writes::Any => verdict
                    .effects
                    .iter()
                    .find(|e| matches!(&*e.kind, "write" | "delete"))
                    .map(|e| path_of(e).to_string()),
                Writes::Outside => write_outside(paths, &verdict.effects),
            };
            match hit {
                Some(p) => detail = p,
                None => continue,
            }
        }
        if let Some(want) = r.destinations {
            let d = dests.get_or_insert_with(|| destinations(&verdict.arguments, &verdict.effects));
            let unknown = || {
                d.unknown
                    .first()
                    .map(|p| format!("a host the gate cannot read ({p})"))
            };
            let hit = match want {
                Want::Any => d.hosts.first().cloned().or_else(unknown),
                Want::Outside => d
                    .hosts
                    .iter()
                    .find(|h| !host_allowed(&flow.allowed_hosts, h))
                    .cloned()
                    .or_else(unknown),
            };
            match hit {
                Some(h) => detail = h,
                None => continue,
            }
        }
        if detail.is_empty() {
            detail = name.to_string();
        }
        out.push(CallLabel {
            label: label.to_string(),
            why: super::types::fill(&r.why, &detail),
        });
    }
    out
}

/// The path an effect names: where it resolved, else as written.
fn path_of(e: &EffectFound) -> &str {
    if e.resolved.is_empty() || e.resolved == "dynamic" {
        &e.operand
    } else {
        &e.resolved
    }
}

/// Raises `verdict` by the rules it completes: one finding per rule (kind
/// `flow`, the chain in its message), the decision raised to the strictest
/// action, the message rewritten. `matches` from [`FlowHistory::check`].
pub fn apply(verdict: &mut Verdict, flow: &CompiledFlow, matches: Vec<FlowMatch>) {
    if matches.is_empty() {
        return;
    }
    for m in &matches {
        let Some(r) = flow.rules.iter().find(|r| r.rule.id == m.rule) else {
            continue;
        };
        let chain = m
            .armed_by
            .iter()
            .map(|a| format!("call {} `{}` ({}: {})", a.call, a.tool, a.label, a.why))
            .collect::<Vec<_>>()
            .join(" and ");
        verdict.findings.push(Finding {
            rule_id: m.rule.clone(),
            kind: FindingKind::Flow,
            path: String::new(),
            severity: r.rule.severity,
            action: m.action,
            message: super::types::fill(&r.rule.message, &chain),
        });
    }
    let decision = matches
        .iter()
        .map(|m| m.action)
        .max()
        .unwrap_or(Action::Allow)
        .max(verdict.decision);
    verdict.flow = matches;
    if decision != verdict.decision || decision != Action::Allow {
        let rebuilt = super::finish(
            &verdict.tool,
            Value::Null,
            std::mem::take(&mut verdict.findings),
            decision,
            verdict.risk_rule.clone(),
        );
        verdict.findings = rebuilt.findings;
        verdict.message = rebuilt.message;
        verdict.decision = decision;
    }
}

/// The verdict of a call of `tool` that the gate gave `decision` (with no
/// finding of its own), raised by `matches` ([`apply`]): for callers that
/// keep the gate's decision apart from its verdict (the MCP proxy).
pub fn raised(
    flow: &CompiledFlow,
    tool: &str,
    decision: Action,
    matches: Vec<FlowMatch>,
) -> Verdict {
    let mut v = super::finish(tool, Value::Null, Vec::new(), decision, None);
    apply(&mut v, flow, matches);
    v
}

/// Judges `verdict` by the flow rules of `plan` after `history`, at `now`
/// (seconds since the epoch): [`FlowHistory::check`] then [`apply`]. A
/// verdict that is already `deny`, or that carries no label, is left as is.
pub fn judge(plan: &Plan, history: &FlowHistory, verdict: &mut Verdict, now: f64) {
    if verdict.decision == Action::Deny || verdict.labels.is_empty() {
        return;
    }
    let g = super::gate_of(plan);
    let matches = history.check(&g.flow, &verdict.labels, now);
    apply(verdict, &g.flow, matches);
}

/// Records the call `verdict` judged (one that ran) in `history`, at `now`.
pub fn record(plan: &Plan, history: &mut FlowHistory, verdict: &Verdict, now: f64) {
    let g = super::gate_of(plan);
    if g.flow.is_active() {
        history.record(&g.flow, &verdict.tool, &verdict.labels, now);
    }
}

/// Seconds since the Unix epoch, now (the clock the library's sessions and
/// `toolgate guard --session` use).
pub fn now_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
