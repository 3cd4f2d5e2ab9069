//! The proxy's configuration: downstream servers (`--server NAME=COMMAND` or a
//! TOML file), the policy and tags to load, and timing knobs.
//!
//! ```toml
//! # toolgate-proxy.toml (every key optional except the servers' name and command)
//! policy = "policies/default.toml"   # relative paths: from this file's folder
//! tags = "tool-tags"
//! audit = "audit.jsonl"
//! pins = "audit.pins.json"            # tool-definition pins (default: beside the audit)
//! poll_ms = 1000                      # poll the policy/tags instead of file-system events
//! debounce_ms = 50                    # notifications/tools/list_changed debounce
//! list_changed = true                 # advertise and send tools/list_changed
//! startup_timeout_ms = 30000          # wait this long for the servers' first tools/list
//! restart_initial_ms = 500            # restart backoff of an exited server ...
//! restart_max_ms = 30000              # ... doubling up to this
//! name_format = "{server}__{tool}"    # client-safe names (see mcp::names)
//! name_max_length = 64
//!
//! [find_tools]                        # the search tool: enabled, name, description
//! enabled = true
//! name = "toolgate__find_tools"
//!
//! [call_tool]                         # the call-through tool
//! enabled = true
//!
//! [[server]]
//! name = "time"
//! command = "mcp-server-time"
//! args = ["--local-timezone", "UTC"]
//!
//! [[server]]
//! name = "memory"
//! command = "mcp-server-memory"
//! env = { MEMORY_FILE_PATH = "/tmp/memory.jsonl" }
//! cwd = "/tmp"
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::names::NameFormat;

/// One downstream MCP server, started as a child process speaking MCP over stdio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Namespace of its tools (`NAME.tool`): letters, digits, `_` and `-`.
    pub name: String,
    /// Program to run (looked up in `PATH` when it has no `/`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory (default: the proxy's).
    pub cwd: Option<PathBuf>,
}

impl ServerSpec {
    /// Parses the command-line form `NAME=COMMAND [ARG]...`, where the command
    /// line is split like a shell does (whitespace, `'...'`, `"..."`, `\`),
    /// without expansions. Leading `VAR=value` words after the `=` are not
    /// special: use `env VAR=value cmd` for environment variables.
    pub fn parse_cli(s: &str) -> Result<Self, String> {
        let (name, cmd) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}`: expected NAME=COMMAND, e.g. `time=mcp-server-time`"))?;
        let name = name.trim();
        validate_server_name(name)?;
        let mut words = split_command(cmd)?;
        if words.is_empty() {
            return Err(format!("server `{name}`: the command is empty"));
        }
        let command = words.remove(0);
        Ok(ServerSpec {
            name: name.to_string(),
            command,
            args: words,
            env: Vec::new(),
            cwd: None,
        })
    }

    /// The command line as one display string.
    pub fn display_command(&self) -> String {
        std::iter::once(&self.command)
            .chain(self.args.iter())
            .map(|w| {
                if w.is_empty() || w.contains(|c: char| c.is_whitespace() || c == '\'') {
                    format!("{w:?}")
                } else {
                    w.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Checks a server name: non-empty, ASCII letters, digits, `_` and `-` only
/// (no `.`: the name is the prefix of `server.tool`).
pub fn validate_server_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a server name must not be empty".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "server name `{name}` contains `{c}`: use letters, digits, `_` and `-` (tools are named `{name}.tool`)"
        ));
    }
    Ok(())
}

/// Splits a command line into words like a POSIX shell, without expansions:
/// whitespace separates words, `'...'` is literal, `"..."` allows `\"` and
/// `\\`, and `\` outside quotes escapes the next character.
pub fn split_command(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err(format!("unclosed ' in `{s}`")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err(format!("unclosed \" in `{s}`")),
                        },
                        Some(c) => cur.push(c),
                        None => return Err(format!("unclosed \" in `{s}`")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => cur.push(c),
                    None => return Err(format!("trailing \\ in `{s}`")),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// One of the proxy's own tools (`find_tools`, `call_tool`): whether it is
/// listed, its name and its description (what the model reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaToolConfig {
    /// Whether the tool is offered.
    pub enabled: bool,
    /// Its name (must match `^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// Its description.
    pub description: String,
}

/// The default description of `find_tools`.
pub const FIND_TOOLS_DESCRIPTION: &str = "Search the tools of every MCP server behind this proxy and make the best matches available. \
Call it first, whenever the task needs a tool you do not see in your list: describe the task in plain words (e.g. \
\"which tables are in my sqlite database\"). Returns each match's name, description and input schema; the matches \
join your tool list (a tools/list_changed notification follows), and you can call them directly or through \
toolgate__call_tool. A query that matches nothing well returns no tools: rephrase it with the words of the task.";

/// The default description of `call_tool`.
pub const CALL_TOOL_DESCRIPTION: &str = "Call any tool of the MCP servers behind this proxy by its name, \
also one that is not in your tool list (e.g. a tool that toolgate__find_tools returned, when your client does not \
refresh its list). `name` is the tool's name as find_tools gives it; `arguments` is the object of its arguments, \
following its input schema. The call is checked, confirmed and audited exactly like a direct call, and its result \
is returned as is.";

/// Everything `toolgate mcp-proxy` needs to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyConfig {
    /// Policy file (`None`: the embedded `policies/selection.toml`, whose
    /// `[gate]` is the default policy's; never reloaded).
    pub policy: Option<PathBuf>,
    /// Tool-tags directory (`None`: the embedded shipped tags).
    pub tags: Option<PathBuf>,
    /// JSON-lines audit file (`None`: no audit).
    pub audit: Option<PathBuf>,
    /// The tool-definition pin file (`None`: `<audit stem>.pins.json` next to
    /// the audit file, or in memory only when there is no audit file).
    pub pins: Option<PathBuf>,
    /// The downstream servers, in namespace order.
    pub servers: Vec<ServerSpec>,
    /// Poll the policy and tag files this often instead of watching
    /// file-system events (`None`: events, unless the policy's `[reload]
    /// poll_interval_ms` asks for polling).
    pub poll_interval: Option<Duration>,
    /// Delay that coalesces changes into one `notifications/tools/list_changed`.
    pub debounce: Duration,
    /// Whether `tools.listChanged` is advertised (and notifications sent).
    pub list_changed: bool,
    /// How long `tools/list` and `tools/call` wait for the servers' first listing.
    pub startup_timeout: Duration,
    /// First restart delay of an exited server.
    pub restart_initial: Duration,
    /// Longest restart delay (the delay doubles on each failed start).
    pub restart_max: Duration,
    /// How exposed (client-safe) tool names are made ([`super::names`]).
    pub name_format: NameFormat,
    /// The search tool.
    pub find_tools: MetaToolConfig,
    /// The call-through tool.
    pub call_tool: MetaToolConfig,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            policy: None,
            tags: None,
            audit: None,
            pins: None,
            servers: Vec::new(),
            poll_interval: None,
            debounce: Duration::from_millis(50),
            list_changed: true,
            startup_timeout: Duration::from_secs(30),
            restart_initial: Duration::from_millis(500),
            restart_max: Duration::from_secs(30),
            name_format: NameFormat::default(),
            find_tools: MetaToolConfig {
                enabled: true,
                name: "toolgate__find_tools".into(),
                description: FIND_TOOLS_DESCRIPTION.into(),
            },
            call_tool: MetaToolConfig {
                enabled: true,
                name: "toolgate__call_tool".into(),
                description: CALL_TOOL_DESCRIPTION.into(),
            },
        }
    }
}

impl ProxyConfig {
    /// The pin file in use: [`ProxyConfig::pins`], else `<audit stem>.pins.json`
    /// beside the audit file, else none (pins in memory).
    pub fn pins_path(&self) -> Option<PathBuf> {
        if let Some(p) = &self.pins {
            return Some(p.clone());
        }
        let audit = self.audit.as_ref()?;
        let stem = audit
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "audit".into());
        Some(audit.with_file_name(format!("{stem}.pins.json")))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetaTool {
    enabled: Option<bool>,
    name: Option<String>,
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    policy: Option<PathBuf>,
    tags: Option<PathBuf>,
    audit: Option<PathBuf>,
    pins: Option<PathBuf>,
    poll_ms: Option<u64>,
    debounce_ms: Option<u64>,
    list_changed: Option<bool>,
    startup_timeout_ms: Option<u64>,
    restart_initial_ms: Option<u64>,
    restart_max_ms: Option<u64>,
    name_format: Option<String>,
    name_max_length: Option<usize>,
    find_tools: Option<RawMetaTool>,
    call_tool: Option<RawMetaTool>,
    #[serde(default)]
    server: Vec<RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    name: String,
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    cwd: Option<PathBuf>,
}

impl ProxyConfig {
    /// Reads a TOML configuration file (see the module docs). Relative paths
    /// (`policy`, `tags`, `audit`, `cwd`) are taken from the file's folder.
    pub fn from_toml_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::from_toml_str(&text, base).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses configuration text; relative paths are joined to `base`.
    pub fn from_toml_str(text: &str, base: &Path) -> Result<Self, String> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        let abs = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
        let d = ProxyConfig::default();
        let ms = |v: Option<u64>, dflt: Duration| v.map(Duration::from_millis).unwrap_or(dflt);
        let mut servers = Vec::new();
        for s in raw.server {
            validate_server_name(&s.name)?;
            if s.command.is_empty() {
                return Err(format!("server `{}`: the command is empty", s.name));
            }
            servers.push(ServerSpec {
                name: s.name,
                command: s.command,
                args: s.args,
                env: s.env.into_iter().collect(),
                cwd: s.cwd.map(abs),
            });
        }
        let meta = |raw: Option<RawMetaTool>, d: MetaToolConfig| match raw {
            None => d,
            Some(r) => MetaToolConfig {
                enabled: r.enabled.unwrap_or(d.enabled),
                name: r.name.unwrap_or(d.name),
                description: r.description.unwrap_or(d.description),
            },
        };
        let name_format = NameFormat::new(
            raw.name_format
                .as_deref()
                .unwrap_or(d.name_format.template()),
            raw.name_max_length.unwrap_or(d.name_format.max_len()),
        )?;
        let cfg = ProxyConfig {
            policy: raw.policy.map(abs),
            tags: raw.tags.map(abs),
            audit: raw.audit.map(abs),
            pins: raw.pins.map(abs),
            servers,
            poll_interval: raw.poll_ms.map(Duration::from_millis),
            debounce: ms(raw.debounce_ms, d.debounce),
            list_changed: raw.list_changed.unwrap_or(d.list_changed),
            startup_timeout: ms(raw.startup_timeout_ms, d.startup_timeout),
            restart_initial: ms(raw.restart_initial_ms, d.restart_initial),
            restart_max: ms(raw.restart_max_ms, d.restart_max),
            name_format,
            find_tools: meta(raw.find_tools, d.find_tools),
            call_tool: meta(raw.call_tool, d.call_tool),
        };
        cfg.check()?;
        Ok(cfg)
    }

    /// Checks what parsing cannot: unique server names, sane durations.
    pub fn check(&self) -> Result<(), String> {
        for (i, s) in self.servers.iter().enumerate() {
            validate_server_name(&s.name)?;
            if self.servers[..i].iter().any(|o| o.name == s.name) {
                return Err(format!("server `{}` is configured twice", s.name));
            }
        }
        if self.poll_interval.is_some_and(|p| p.is_zero()) {
            return Err("poll_ms must be > 0".into());
        }
        let metas = [&self.find_tools, &self.call_tool];
        for m in metas.iter().filter(|m| m.enabled) {
            if !super::names::is_client_safe(&m.name) {
                return Err(format!(
                    "meta-tool name `{}` must match ^[a-zA-Z0-9_-]{{1,64}}$",
                    m.name
                ));
            }
        }
        if self.find_tools.enabled
            && self.call_tool.enabled
            && self.find_tools.name == self.call_tool.name
        {
            return Err(format!(
                "find_tools and call_tool are both named `{}`",
                self.find_tools.name
            ));
        }
        if self.restart_initial.is_zero() || self.restart_max < self.restart_initial {
            return Err("restart delays: need 0 < restart_initial_ms <= restart_max_ms".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split_command(r#"mcp-server-time --local-timezone "America/New York" 'a b' c\ d"#)
                .unwrap(),
            [
                "mcp-server-time",
                "--local-timezone",
                "America/New York",
                "a b",
                "c d"
            ]
        );
        assert_eq!(split_command("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split_command(r#""" x"#).unwrap(), ["", "x"]);
        assert!(split_command("'open").is_err());
        assert!(split_command("\"open").is_err());
    }

    #[test]
    fn parses_cli_servers() {
        let s = ServerSpec::parse_cli("git=mcp-server-git --repository /tmp/r").unwrap();
        assert_eq!(s.name, "git");
        assert_eq!(s.command, "mcp-server-git");
        assert_eq!(s.args, ["--repository", "/tmp/r"]);
        assert!(ServerSpec::parse_cli("no-equals").is_err());
        assert!(ServerSpec::parse_cli("a.b=cmd").is_err());
        assert!(ServerSpec::parse_cli("x=").is_err());
        assert!(ServerSpec::parse_cli("=cmd").is_err());
    }

    #[test]
    fn parses_toml_config_with_relative_paths() {
        let c = ProxyConfig::from_toml_str(
            r#"
policy = "p.toml"
audit = "/abs/audit.jsonl"
poll_ms = 200
[[server]]
name = "time"
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "UTC" }
cwd = "work"
"#,
            Path::new("/base"),
        )
        .unwrap();
        assert_eq!(c.policy.as_deref(), Some(Path::new("/base/p.toml")));
        assert_eq!(c.audit.as_deref(), Some(Path::new("/abs/audit.jsonl")));
        assert_eq!(c.poll_interval, Some(Duration::from_millis(200)));
        assert_eq!(c.servers[0].env, [("TZ".to_string(), "UTC".to_string())]);
        assert_eq!(c.servers[0].cwd.as_deref(), Some(Path::new("/base/work")));
        assert!(ProxyConfig::from_toml_str("bogus = 1", Path::new(".")).is_err());
        let dup = "[[server]]\nname='a'\ncommand='x'\n[[server]]\nname='a'\ncommand='y'\n";
        assert!(
            ProxyConfig::from_toml_str(dup, Path::new("."))
                .unwrap_err()
                .contains("twice")
        );
    }
}
