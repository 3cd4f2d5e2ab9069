//! `[gate.flow]`: data-flow labels on calls and rules over a session's
//! history (issue 25, the "lethal trifecta": untrusted content, private
//! data, external communication).
//!
//! The section is deserialized with the rest of `[gate]` (serde, spans kept
//! where compile checks names across entries); [`CompiledFlow`] is what the
//! gate reads at run time (`compile::flow` builds it, `gate::flow` runs it).
//!
//! ```toml
//! [gate.flow]
//! labels = ["private", "untrusted", "exfiltration"]
//! max_history = 1000
//! allowed_hosts = ["docs.rs", "*.github.com"]
//!
//! [[gate.flow.attach]]           # a call gets `label` when every condition given holds
//! label = "untrusted"
//! tools = ["fetch.*"]
//! why = "fetched web content"
//!
//! [[gate.flow.rules]]            # after these labels, a call with `then` gets `action`
//! id = "flow.trifecta"
//! after = ["untrusted", "private"]
//! then = "exfiltration"
//! action = "ask"
//! window_calls = 50              # optional; window_seconds too
//! ```

use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use super::types::{Action, Severity};

/// `[gate.flow]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// The labels a call can carry (at most 64), by the policy's names.
    #[serde(default = "flow_labels")]
    pub labels: Vec<Spanned<String>>,
    /// How many calls a label is remembered for in a session (calls, counting
    /// every call checked in the session); older labels are forgotten. Also
    /// the implicit window of a rule without `window_calls`.
    #[serde(default = "flow_max_history")]
    pub max_history: u64,
    /// Hosts a call may send to without being "outside": exact names
    /// (`docs.rs`, `127.0.0.1`) or `*.` suffixes (`*.github.com`, which
    /// also matches `github.com`), compared case-insensitively.
    #[serde(default = "flow_allowed_hosts")]
    pub allowed_hosts: Vec<String>,
    /// `[[gate.flow.attach]]`: what gives a call a label.
    #[serde(default = "flow_attach")]
    pub attach: Vec<AttachRule>,
    /// `[[gate.flow.rules]]`: what a labelled call may do after others.
    #[serde(default = "flow_rules")]
    pub rules: Vec<FlowRule>,
}

fn shipped_flow() -> &'static FlowConfig {
    &super::config::shipped().flow
}
fn flow_labels() -> Vec<Spanned<String>> {
    shipped_flow().labels.clone()
}
fn flow_max_history() -> u64 {
    shipped_flow().max_history
}
fn flow_allowed_hosts() -> Vec<String> {
    shipped_flow().allowed_hosts.clone()
}
fn flow_attach() -> Vec<AttachRule> {
    shipped_flow().attach.clone()
}
fn flow_rules() -> Vec<FlowRule> {
    shipped_flow().rules.clone()
}

/// Which network destinations an attach rule asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Destinations {
    /// The call names at least one destination (URL host, network effect).
    Any,
    /// The call names a destination not on `allowed_hosts`.
    Outside,
}

/// Which writes an attach rule asks for (`writes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Writes {
    /// The call writes or deletes a file (a `write` or `delete` effect).
    Any,
    /// The call writes or deletes a file outside the project: outside every
    /// root of `[gate.paths]` (an MCP client's roots, or the proxy's
    /// `--root`), through a symlink that leads outside, or at a path only
    /// known at run time (fail closed).
    Outside,
}

/// `[[gate.flow.attach]]`: the call gets `label` when every condition given
/// holds (a rule with no condition labels every call).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachRule {
    /// The label given; one of `labels`.
    pub label: Spanned<String>,
    /// Why, for the person confirming: `{detail}` is replaced by what matched
    /// (the path, the host, the tool).
    pub why: String,
    /// Tool-name globs (`*` any run of characters, `?` one), any of which
    /// must match the canonical name.
    #[serde(default)]
    pub tools: Vec<NameGlob>,
    /// The tool's `category` tag must be one of these.
    #[serde(default)]
    pub categories: Vec<String>,
    /// The tool's read-only flag (tags, or MCP `readOnlyHint`) must be this.
    #[serde(default)]
    pub read_only: Option<bool>,
    /// The tool's open-world flag must be this: `true` for a tool that says
    /// it reaches an open world of external entities (MCP
    /// `annotations.openWorldHint: true`, or the tag `open_world = true`),
    /// `false` for one that says its world is closed. A tool that says
    /// neither matches neither (MCP reads a missing hint as `true`; a rule
    /// meant for such tools names them by `tools` or `categories`).
    #[serde(default)]
    pub open_world: Option<bool>,
    /// Effect kinds the gate found (`read`, `write`, `url`, `network`,
    /// `remote`, ...), any of which the call must have.
    #[serde(default)]
    pub effects: Vec<Spanned<String>>,
    /// Path globs (`**` crosses `/`, `*` does not): a path of an effect of
    /// the kinds in `effects` (`read` when empty) must match one.
    #[serde(default)]
    pub paths: Vec<PathGlob>,
    /// A path read must match `[gate.shell] sensitive_reads`.
    #[serde(default)]
    pub sensitive_reads: bool,
    /// The call's destinations: URL hosts in its string arguments and the
    /// operands of its `url`, `network` and `remote` effects.
    #[serde(default)]
    pub destinations: Option<Destinations>,
    /// The call's writes (`write` and `delete` effects): `"any"`, or
    /// `"outside"` the project's roots ([`Writes`]).
    #[serde(default)]
    pub writes: Option<Writes>,
}

/// `[[gate.flow.rules]]`: once every label of `after` is in the session's
/// history (within the window), a call labelled `then` gets `action`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowRule {
    /// Rule id, in findings and audit records (`flow.trifecta`).
    pub id: String,
    /// Labels earlier calls must have carried (all of them, any order).
    pub after: Vec<Spanned<String>>,
    /// The label of the call the rule judges.
    pub then: Spanned<String>,
    /// `ask` or `deny` (`allow` never raises a decision).
    pub action: Action,
    /// Severity of the finding.
    #[serde(default = "high")]
    pub severity: Severity,
    /// Only calls this many calls back arm the rule (1: the call just before).
    #[serde(default)]
    pub window_calls: Option<Spanned<u64>>,
    /// Only calls this many seconds back arm the rule.
    #[serde(default)]
    pub window_seconds: Option<Spanned<f64>>,
    /// For the model and the person confirming; `{detail}` is replaced by
    /// the chain of earlier calls.
    pub message: String,
}

fn high() -> Severity {
    Severity::High
}

/// A tool-name glob: `*` is any run of characters, `?` one character,
/// everything else literal; matched against the whole name.
#[derive(Debug, Clone)]
pub struct NameGlob(pub regex::Regex);

/// A path glob: `**` is any run of characters (`/` included), `*` any run
/// without `/`, `?` one character other than `/`; matched against the whole
/// path (`**/.env` matches `.env` at any depth, `/a/.env` included).
#[derive(Debug, Clone)]
pub struct PathGlob(pub regex::Regex);

/// The regex of a glob (`paths`: `*` stops at `/`).
fn glob_regex(glob: &str, paths: bool) -> Result<regex::Regex, String> {
    if glob.is_empty() {
        return Err("an empty glob matches nothing".into());
    }
    let mut re = String::from("^");
    let chars: Vec<char> = glob.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if paths && chars.get(i + 1) == Some(&'*') => {
                i += 1;
                if chars.get(i + 1) == Some(&'/') {
                    // `**/`: zero or more whole directories
                    i += 1;
                    re.push_str("(?:.*/)?");
                } else {
                    re.push_str(".*");
                }
            }
            '*' if paths => re.push_str("[^/]*"),
            '*' => re.push_str(".*"),
            '?' if paths => re.push_str("[^/]"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push('$');
    regex::RegexBuilder::new(&re)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("invalid glob {glob:?}: {e}"))
}

impl<'de> Deserialize<'de> for NameGlob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        glob_regex(&text, false)
            .map(NameGlob)
            .map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for PathGlob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        glob_regex(&text, true)
            .map(PathGlob)
            .map_err(serde::de::Error::custom)
    }
}

impl NameGlob {
    /// Whether the glob matches the whole of `name`.
    pub fn is_match(&self, name: &str) -> bool {
        self.0.is_match(name)
    }
}

impl PathGlob {
    /// Whether the glob matches the whole of `path`.
    pub fn is_match(&self, path: &str) -> bool {
        self.0.is_match(path)
    }
}

/// Whether `host` is on `allowed` (exact, or under a `*.` suffix entry);
/// case-insensitive, a trailing dot and IPv6 brackets ignored.
pub fn host_allowed(allowed: &[String], host: &str) -> bool {
    let h = host
        .trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']');
    allowed.iter().any(|a| {
        let a = a.trim_start_matches('[').trim_end_matches(']');
        match a.strip_prefix("*.") {
            Some(suffix) => {
                h.eq_ignore_ascii_case(suffix)
                    || (h.len() > suffix.len()
                        && h.is_char_boundary(h.len() - suffix.len() - 1)
                        && h[h.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
                        && h.as_bytes()[h.len() - suffix.len() - 1] == b'.')
            }
            None => h.eq_ignore_ascii_case(a),
        }
    })
}

/// One attach rule, compiled: its label's index in [`CompiledFlow::labels`].
#[derive(Debug, Clone)]
pub struct CompiledAttach {
    /// Index of the label given.
    pub label: usize,
    /// The rule as written.
    pub rule: AttachRule,
    /// The effect kinds `paths` look at (`effects`, or `read`).
    pub path_kinds: Vec<String>,
    /// `paths` as one set: whether any glob matches a path is one search
    /// instead of one per glob (`None` when `paths` is empty, or too large
    /// for one set: each glob is then searched alone).
    pub paths_any: Option<GlobSet>,
    /// `tools` as one set, the same way.
    pub tools_any: Option<GlobSet>,
}

/// Globs searched together (an attach rule's `paths` or `tools`, compiled
/// once): one search tells whether any of them matches.
#[derive(Debug, Clone)]
pub struct GlobSet(regex::RegexSet);

impl GlobSet {
    /// The glob regexes as one set; `None` for no glob, or when the set
    /// would pass the regex size limit (1 MiB per glob, as each glob has
    /// alone: `glob_regex`).
    pub fn new<'a>(globs: impl ExactSizeIterator<Item = &'a regex::Regex>) -> Option<GlobSet> {
        let n = globs.len();
        if n == 0 {
            return None;
        }
        regex::RegexSetBuilder::new(globs.map(regex::Regex::as_str))
            .size_limit(n.saturating_mul(1 << 20))
            .build()
            .ok()
            .map(GlobSet)
    }

    /// Whether any of the globs matches the whole of `text`.
    pub fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

/// One history rule, compiled: label indices.
#[derive(Debug, Clone)]
pub struct CompiledRule {
    /// Indices of the `after` labels.
    pub after: Vec<usize>,
    /// Index of the `then` label.
    pub then: usize,
    /// The window in calls: the policy's, else `max_history`.
    pub window_calls: u64,
    /// The window in seconds (`None`: no time limit).
    pub window_seconds: Option<f64>,
    /// The rule as written.
    pub rule: FlowRule,
}

/// `[gate.flow]` ready for the gate: labels by index, rules by label index.
#[derive(Debug, Clone, Default)]
pub struct CompiledFlow {
    /// The declared labels, in order (an index is a bit of a label set).
    pub labels: Vec<Arc<str>>,
    /// Calls a label is remembered for.
    pub max_history: u64,
    /// `allowed_hosts`.
    pub allowed_hosts: Vec<String>,
    /// The attach rules.
    pub attach: Vec<CompiledAttach>,
    /// The history rules.
    pub rules: Vec<CompiledRule>,
}

impl CompiledFlow {
    /// Whether the policy has any rule to check (no rule: the gate skips
    /// the flow check and keeps no history).
    pub fn is_active(&self) -> bool {
        !self.rules.is_empty()
    }
}

/// The effect kinds the gate reports (`gate::EffectFound`).
pub const EFFECT_KINDS: &[&str] = &[
    "read", "write", "delete", "chdir", "script", "exec", "code", "install", "url", "network",
    "system", "remote", "project", "env",
];

/// Most labels a policy may declare (a label set is a 64-bit set).
pub const MAX_LABELS: usize = 64;

impl CompiledFlow {
    /// Lowers `cfg`: label names to indices, windows to numbers. Every
    /// problem is returned with the byte span of the offending value in the
    /// policy text (a label not declared, a label declared twice, an unknown
    /// effect kind, a window of zero, an `allow` rule).
    pub fn build(cfg: &FlowConfig) -> Result<CompiledFlow, Vec<(String, std::ops::Range<usize>)>> {
        let mut problems = Vec::new();
        let mut labels: Vec<Arc<str>> = Vec::new();
        for l in &cfg.labels {
            if labels.iter().any(|x| **x == *l.get_ref()) {
                problems.push((
                    format!("`gate.flow.labels`: `{}` is declared twice", l.get_ref()),
                    l.span(),
                ));
            } else if l.get_ref().is_empty() {
                problems.push(("`gate.flow.labels`: a label needs a name".into(), l.span()));
            } else {
                labels.push(Arc::from(l.get_ref().as_str()));
            }
        }
        if labels.len() > MAX_LABELS {
            let span = cfg.labels[MAX_LABELS].span();
            problems.push((
                format!("`gate.flow.labels`: at most {MAX_LABELS} labels"),
                span,
            ));
        }
        let index = |name: &Spanned<String>, what: &str, problems: &mut Vec<_>| {
            let i = labels.iter().position(|x| **x == *name.get_ref());
            if i.is_none() {
                problems.push((
                    format!(
                        "`{what}` names the label `{}`, which `gate.flow.labels` does not declare (declared: {})",
                        name.get_ref(),
                        labels.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ")
                    ),
                    name.span(),
                ));
            }
            i
        };
        let mut attach = Vec::new();
        for a in &cfg.attach {
            let label = index(&a.label, "gate.flow.attach.label", &mut problems);
            for e in &a.effects {
                if !EFFECT_KINDS.contains(&e.get_ref().as_str()) {
                    problems.push((
                        format!(
                            "`gate.flow.attach.effects`: unknown effect kind `{}` (known: {})",
                            e.get_ref(),
                            EFFECT_KINDS.join(", ")
                        ),
                        e.span(),
                    ));
                }
            }
            let path_kinds = if a.effects.is_empty() {
                vec!["read".to_string()]
            } else {
                a.effects.iter().map(|e| e.get_ref().clone()).collect()
            };
            if let Some(label) = label {
                attach.push(CompiledAttach {
                    label,
                    rule: a.clone(),
                    path_kinds,
                    paths_any: GlobSet::new(a.paths.iter().map(|g| &g.0)),
                    tools_any: GlobSet::new(a.tools.iter().map(|g| &g.0)),
                });
            }
        }
        let mut rules = Vec::new();
        for r in &cfg.rules {
            let after: Vec<Option<usize>> = r
                .after
                .iter()
                .map(|l| index(l, "gate.flow.rules.after", &mut problems))
                .collect();
            let then = index(&r.then, "gate.flow.rules.then", &mut problems);
            if r.action == Action::Allow {
                problems.push((
                    format!(
                        "`gate.flow.rules` `{}`: `action` must be `ask` or `deny` (a flow rule only raises a decision)",
                        r.id
                    ),
                    r.then.span(),
                ));
            }
            if let Some(w) = &r.window_calls
                && *w.get_ref() == 0
            {
                problems.push((
                    "`gate.flow.rules.window_calls` must be at least 1".into(),
                    w.span(),
                ));
            }
            if let Some(w) = &r.window_seconds
                && !(w.get_ref().is_finite() && *w.get_ref() > 0.0)
            {
                problems.push((
                    "`gate.flow.rules.window_seconds` must be a positive number".into(),
                    w.span(),
                ));
            }
            if let (Some(then), Some(after)) =
                (then, after.into_iter().collect::<Option<Vec<usize>>>())
            {
                rules.push(CompiledRule {
                    after,
                    then,
                    window_calls: r
                        .window_calls
                        .as_ref()
                        .map(|w| *w.get_ref())
                        .unwrap_or(cfg.max_history)
                        .min(cfg.max_history),
                    window_seconds: r.window_seconds.as_ref().map(|w| *w.get_ref()),
                    rule: r.clone(),
                });
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(CompiledFlow {
            labels,
            max_history: cfg.max_history,
            allowed_hosts: cfg.allowed_hosts.clone(),
            attach,
            rules,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names_and_paths() {
        let g = glob_regex("filesystem.read_*", false).unwrap();
        assert!(g.is_match("filesystem.read_text_file"));
        assert!(!g.is_match("x.filesystem.read_file"));
        let p = glob_regex("**/.env", true).unwrap();
        assert!(p.is_match("/home/u/proj/.env"));
        assert!(p.is_match(".env"));
        assert!(!p.is_match("/home/u/proj/.env.bak"));
        let p = glob_regex("/srv/*/secret.txt", true).unwrap();
        assert!(p.is_match("/srv/a/secret.txt"));
        assert!(!p.is_match("/srv/a/b/secret.txt"));
        assert!(glob_regex("", true).is_err());
    }

    #[test]
    fn a_glob_set_matches_where_one_of_its_globs_does() {
        let globs: Vec<PathGlob> = ["**/.env", "**/*.pem", "/srv/*/secret.txt"]
            .iter()
            .map(|g| PathGlob(glob_regex(g, true).unwrap()))
            .collect();
        let set = GlobSet::new(globs.iter().map(|g| &g.0)).unwrap();
        for p in [
            "/home/u/proj/.env",
            ".env",
            "a/b/key.pem",
            "/srv/a/secret.txt",
            "/home/u/proj/.env.bak",
            "/srv/a/b/secret.txt",
            "key.pem.txt",
            "",
        ] {
            assert_eq!(
                set.is_match(p),
                globs.iter().any(|g| g.is_match(p)),
                "{p:?}"
            );
        }
        assert!(GlobSet::new(std::iter::empty()).is_none());
        let names = NameGlob(glob_regex("fetch.*", false).unwrap());
        let set = GlobSet::new(std::iter::once(&names.0)).unwrap();
        assert!(set.is_match("fetch.fetch") && !set.is_match("x.fetch"));
    }

    #[test]
    fn hosts_match_exactly_or_by_suffix() {
        let allowed = vec!["docs.rs".to_string(), "*.github.com".to_string()];
        assert!(host_allowed(&allowed, "docs.rs"));
        assert!(host_allowed(&allowed, "DOCS.RS."));
        assert!(host_allowed(&allowed, "api.github.com"));
        assert!(host_allowed(&allowed, "github.com"));
        assert!(!host_allowed(&allowed, "evilgithub.com"));
        assert!(!host_allowed(&allowed, "docs.rs.evil.net"));
        assert!(host_allowed(&["::1".to_string()], "[::1]"));
    }
}
