//! The proxy's configuration: downstream servers (`--server NAME=COMMAND` or a
//! TOML file), the policy and tags to load, and timing knobs.
//!
//! ```toml
//! # toolgate-proxy.toml (every key optional except the servers' name and command)
//! policy = "policies/default.toml"   # relative paths: from this file's folder
//! tags = "tool-tags"
//! audit = "audit.jsonl"
//! pins = "audit.pins.json"            # tool-definition pins (default: beside the audit)
//! roots = ["/home/me/project"]        # the gate's project roots when the client sends no MCP roots
//! poll_ms = 1000                      # poll the policy/tags instead of file-system events
//! debounce_ms = 50                    # notifications/tools/list_changed debounce
//! list_changed = true                 # advertise and send tools/list_changed
//! startup_timeout_ms = 30000          # wait this long for the servers' first tools/list
//! restart_initial_ms = 500            # restart backoff of an exited server ...
//! restart_max_ms = 30000              # ... doubling up to this
//! name_format = "{server}__{tool}"    # client-safe names (see mcp::names)
//! name_max_length = 64
//! state_key_env = "TOOLGATE_STATE_KEY" # signs modern-era session handles and confirmations
//!                                     # (>= 32 bytes; replicas share it; default: random per start)
//! confirm_ttl_ms = 300000             # a modern client's confirmation expires after this
//! max_concurrent_calls = 256          # tools/call in progress, whole proxy
//! max_concurrent_calls_per_session = 16
//! call_queue_ms = 10000               # wait this long for a free slot, then refuse
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
//! era = "auto"                        # "auto" (server/discover, else initialize), "modern", "legacy"
//!
//! [[server]]
//! name = "memory"
//! command = "mcp-server-memory"
//! env = { MEMORY_FILE_PATH = "/tmp/memory.jsonl" }
//! cwd = "/tmp"
//!
//! [[server]]                          # a remote server over Streamable HTTP
//! name = "github"
//! url = "https://api.githubcopilot.com/mcp/"
//! headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }   # ${VAR}: from the environment
//!
//! [http]                              # serving clients over Streamable HTTP (--listen)
//! listen = "127.0.0.1:8765"
//! path = "/mcp"
//! bearer_token_env = "TOOLGATE_TOKEN" # clients must send Authorization: Bearer <its value>
//! allowed_origins = ["http://localhost:*"]   # default: loopback origins only
//! allowed_hosts = ["localhost", "127.0.0.1", "::1"]
//! shutdown_grace_ms = 30000           # on SIGTERM/SIGINT, calls in flight get this long to finish
//! session_idle_timeout_ms = 300000    # an HTTP session unused this long is closed
//! ```
//!
//! Header values may name environment variables as `${VAR}` (or
//! `${env:VAR}`; `$$` is a literal `$`): secrets stay out of the file, and
//! the proxy never writes a header value to its logs or the audit (values
//! are marked sensitive; a server is displayed by its URL without query or
//! user info).

mod check;
mod every;
mod startup;
mod toml_error;
mod values;

pub use startup::{local_server_problems, value_location};
pub use values::{MAX_MS, check_number_option};

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::names::NameFormat;

/// One downstream MCP server: a child process speaking MCP over stdio
/// (`command`), or a remote server over Streamable HTTP (`url`).
#[derive(Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Namespace of its tools (`NAME.tool`): letters, digits, `_` and `-`.
    pub name: String,
    /// Program to run (looked up in `PATH` when it has no `/`); empty for a
    /// server with a `url`.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory (default: the proxy's).
    pub cwd: Option<PathBuf>,
    /// The MCP endpoint of a remote server (`http://` or `https://`),
    /// spoken to with rmcp's Streamable HTTP client instead of a process.
    pub url: Option<String>,
    /// HTTP headers sent with every request to `url`: (name, value template),
    /// where the template may name environment variables (`${VAR}`,
    /// [`resolve_env_template`]). The values are secrets: never displayed.
    pub headers: Vec<(String, String)>,
    /// Which MCP era the proxy speaks to this server (`era`).
    pub era: ServerEra,
}

/// How the proxy opens a downstream server (`[[server]] era`): the MCP
/// revision 2026-07-28 "Versioning and Compatibility" page's eras.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerEra {
    /// Probe with `server/discover` and fall back to `initialize` when the
    /// server is legacy (rmcp's `ClientLifecycleMode::Auto`; the default).
    #[default]
    Auto,
    /// `server/discover` and per-request metadata only (2026-07-28).
    Modern,
    /// The `initialize` handshake only (2025-11-25 and earlier).
    Legacy,
}

impl ServerEra {
    /// Parses `auto`, `modern` or `legacy`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ServerEra::Auto),
            "modern" => Ok(ServerEra::Modern),
            "legacy" => Ok(ServerEra::Legacy),
            other => Err(format!(
                "era must be \"auto\", \"modern\" or \"legacy\", not {other:?}"
            )),
        }
    }
}

impl std::fmt::Debug for ServerSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSpec")
            .field("name", &self.name)
            .field("command", &self.display_command())
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Header names rmcp's HTTP client sets itself and will not take from the
/// configuration.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Expands `${VAR}` and `${env:VAR}` in `template` with `lookup` (the
/// environment); `$$` is a literal `$`, any other `$` stays as it is. The
/// error names the missing variable, never a value.
pub fn resolve_env_template(
    template: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(r) = after.strip_prefix('{') {
            let end = r
                .find('}')
                .ok_or_else(|| format!("unclosed `${{` in a header value (`{}`)", &rest[i..]))?;
            let var = r[..end].strip_prefix("env:").unwrap_or(&r[..end]);
            if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "`${{{}}}`: an environment variable name has letters, digits and `_` only",
                    &r[..end]
                ));
            }
            let v = lookup(var)
                .ok_or_else(|| format!("the environment variable `{var}` is not set"))?;
            out.push_str(&v);
            rest = &r[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `url` for display: scheme, host, port and path, without user info,
/// query or fragment (where tokens hide).
pub fn display_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let host = authority.rsplit('@').next().unwrap_or(authority);
    if scheme.is_empty() {
        format!("{host}{path}")
    } else {
        format!("{scheme}://{host}{path}")
    }
}

impl ServerSpec {
    /// Parses the command-line form `NAME=COMMAND [ARG]...`, where the command
    /// line is split like a shell does (whitespace, `'...'`, `"..."`, `\`),
    /// without expansions. Leading `VAR=value` words after the `=` are not
    /// special: use `env VAR=value cmd` for environment variables.
    /// `NAME=http://...` or `NAME=https://...` is a remote server (headers
    /// need a configuration file).
    pub fn parse_cli(s: &str) -> Result<Self, String> {
        let (name, cmd) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}`: expected NAME=COMMAND, e.g. `time=mcp-server-time`"))?;
        let name = name.trim();
        validate_server_name(name)?;
        let trimmed = cmd.trim();
        if trimmed.starts_with("http://") || trimmed.starts_with("https://") {
            values::check_url(trimmed).map_err(|e| format!("server `{name}`: {e}"))?;
            return Ok(ServerSpec {
                name: name.to_string(),
                command: String::new(),
                args: Vec::new(),
                env: Vec::new(),
                cwd: None,
                url: Some(trimmed.to_string()),
                headers: Vec::new(),
                era: ServerEra::default(),
            });
        }
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
            url: None,
            headers: Vec::new(),
            era: ServerEra::default(),
        })
    }

    /// The command line as one display string; for a remote server its URL
    /// without user info, query or fragment.
    pub fn display_command(&self) -> String {
        if let Some(u) = &self.url {
            return display_url(u);
        }
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
    /// The project's directories for the call gate when a client sends no
    /// MCP roots (`roots`, `--root`; absolute; see [`crate::gate::CallEnv`]):
    /// a client such as Claude Desktop starts the proxy in `/` and sends
    /// none. Empty: the process's working directory.
    pub roots: Vec<PathBuf>,
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
    /// `tools/call`s in progress at once, whole proxy (all sessions).
    pub max_concurrent_calls: usize,
    /// `tools/call`s in progress at once in one session.
    pub max_concurrent_calls_per_session: usize,
    /// How long a call waits for a free slot before it is refused (zero:
    /// refused at once).
    pub call_queue_timeout: Duration,
    /// Serving clients over Streamable HTTP (`--listen`).
    pub http: HttpConfig,
    /// Name of the environment variable holding the key (at least 32
    /// bytes) that signs the modern era's session handles and confirmation
    /// states (`state_key_env`, `--state-key-env`; see
    /// [`super::stateless`]). `None`: a random key drawn at start, so a
    /// handle is good on this process only. Replicas behind one load
    /// balancer must name the same key.
    pub state_key_env: Option<String>,
    /// How long a modern client has to answer a confirmation
    /// (`confirm_ttl_ms`; the `requestState`'s expiry, SEP-2322).
    pub confirm_ttl: Duration,
    /// A shadow policy (`shadow_policy`, `--shadow-policy`): every decision
    /// is also made under it, never enforced, and the differences are
    /// counted and logged ([`super::shadow`]). Reloaded like the policy.
    pub shadow_policy: Option<PathBuf>,
    /// Where the shadow log goes (`shadow_log`, `--shadow-log`): the
    /// sessions in the trace format, with the differences as `shadow`
    /// events (`None`: counted in the metrics and logged only).
    pub shadow_log: Option<PathBuf>,
}

/// The Streamable HTTP endpoint toward clients (`[http]`, `--listen`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// Address to listen on (`None`: serve stdio).
    pub listen: Option<SocketAddr>,
    /// The MCP endpoint's path.
    pub path: String,
    /// Name of the environment variable holding the bearer token clients
    /// must send (`Authorization: Bearer <token>`); `None`: no token check.
    pub bearer_token_env: Option<String>,
    /// Browser origins accepted in an `Origin` header (rmcp's syntax:
    /// `scheme://host[:port|:*]`, `null`); a request with another `Origin`
    /// gets 403 (the spec's DNS-rebinding defence). Requests without
    /// `Origin` (non-browser clients) pass.
    pub allowed_origins: Vec<String>,
    /// Accepted `Host` header values (`host` or `host:port`); 403 otherwise.
    pub allowed_hosts: Vec<String>,
    /// On SIGTERM or SIGINT, calls in flight get this long to finish.
    pub shutdown_grace: Duration,
    /// An HTTP session with no request for this long is closed.
    pub session_idle_timeout: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: None,
            path: "/mcp".into(),
            bearer_token_env: None,
            allowed_origins: [
                "http://localhost:*",
                "https://localhost:*",
                "http://127.0.0.1:*",
                "https://127.0.0.1:*",
                "http://[::1]:*",
                "https://[::1]:*",
            ]
            .map(String::from)
            .to_vec(),
            allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
            shutdown_grace: Duration::from_secs(30),
            session_idle_timeout: Duration::from_secs(300),
        }
    }
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            policy: None,
            tags: None,
            audit: None,
            pins: None,
            roots: Vec::new(),
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
            max_concurrent_calls: 256,
            max_concurrent_calls_per_session: 16,
            call_queue_timeout: Duration::from_secs(10),
            http: HttpConfig::default(),
            state_key_env: None,
            confirm_ttl: Duration::from_secs(300),
            shadow_policy: None,
            shadow_log: None,
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
    #[serde(default)]
    roots: Vec<PathBuf>,
    tags: Option<PathBuf>,
    audit: Option<PathBuf>,
    pins: Option<PathBuf>,
    shadow_policy: Option<PathBuf>,
    shadow_log: Option<PathBuf>,
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
    max_concurrent_calls: Option<usize>,
    max_concurrent_calls_per_session: Option<usize>,
    call_queue_ms: Option<u64>,
    http: Option<RawHttp>,
    state_key_env: Option<String>,
    confirm_ttl_ms: Option<u64>,
    #[serde(default)]
    server: Vec<RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    listen: Option<String>,
    path: Option<String>,
    bearer_token_env: Option<String>,
    allowed_origins: Option<Vec<String>>,
    allowed_hosts: Option<Vec<String>>,
    shutdown_grace_ms: Option<u64>,
    session_idle_timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    name: String,
    command: Option<String>,
    url: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    era: Option<String>,
}

/// Parses a `--listen` / `[http] listen` address (`127.0.0.1:8765`,
/// `[::1]:8765`, `localhost:8765`; port 0 picks a free port).
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    let s2 = s
        .strip_prefix("localhost:")
        .map(|p| format!("127.0.0.1:{p}"));
    s2.as_deref()
        .unwrap_or(s)
        .parse()
        .map_err(|e| format!("listen address `{s}`: {e} (expected e.g. 127.0.0.1:8765)"))
}

impl ProxyConfig {
    /// Reads a TOML configuration file (see the module docs). Relative paths
    /// (`policy`, `tags`, `audit`, `cwd`) are taken from the file's folder.
    /// Each server's `cwd` must be a folder and its `command` a program
    /// that can be run ([`local_server_problems`]): checked here, each at
    /// `FILE:LINE:COLUMN` of its value, before any server starts. The
    /// error lists every problem found (values and keys, whole-config
    /// checks, paths), one a line, in the file's order.
    pub fn from_toml_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
            .and_then(|b| {
                crate::datafile::decode_text(b).map_err(|e| format!("{}: {e}", path.display()))
            })?;
        let base = path.parent().unwrap_or(Path::new("."));
        // Every problem of the file at once, each at `FILE:LINE:COLUMN`
        // (`every`): values and keys, whole-config checks, paths.
        let cfg = every::read(&text, base, path)?;
        Ok(cfg)
    }

    /// Parses configuration text; relative paths are joined to `base`. A
    /// TOML, key or value error reads `line L, column C: message`, with a
    /// did-you-mean for a misspelt key or era (every value problem at once,
    /// one a line: `values`).
    pub fn from_toml_str(text: &str, base: &Path) -> Result<Self, String> {
        let cfg = Self::parse_unchecked(text, base)?;
        cfg.check()?;
        Ok(cfg)
    }

    /// [`ProxyConfig::from_toml_str`] without [`ProxyConfig::check`].
    fn parse_unchecked(text: &str, base: &Path) -> Result<Self, String> {
        values::check(text, |l, c| format!("line {l}, column {c}: "))?;
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| match toml_error::describe(text, &e) {
                (Some((l, c)), m) => format!("line {l}, column {c}: {m}"),
                (None, m) => m,
            })?;
        let abs = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
        let d = ProxyConfig::default();
        let ms = |v: Option<u64>, dflt: Duration| v.map(Duration::from_millis).unwrap_or(dflt);
        let mut servers = Vec::new();
        for s in raw.server {
            validate_server_name(&s.name)?;
            let command = match (s.command, &s.url) {
                (Some(c), None) if c.is_empty() => {
                    return Err(format!("server `{}`: the command is empty", s.name));
                }
                (Some(c), None) => c,
                (None, Some(_)) => String::new(),
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "server `{}`: give `command` (a local server) or `url` (a remote one), not both",
                        s.name
                    ));
                }
                (None, None) => {
                    return Err(format!(
                        "server `{}`: needs `command` (a local server) or `url` (a remote one)",
                        s.name
                    ));
                }
            };
            if s.url.is_some() && (!s.args.is_empty() || !s.env.is_empty() || s.cwd.is_some()) {
                return Err(format!(
                    "server `{}`: `args`, `env` and `cwd` are for a local server, not one with a `url`",
                    s.name
                ));
            }
            if s.url.is_none() && !s.headers.is_empty() {
                return Err(format!(
                    "server `{}`: `headers` are for a remote server (`url`)",
                    s.name
                ));
            }
            let era = match s.era.as_deref() {
                None => ServerEra::default(),
                Some(e) => ServerEra::parse(e).map_err(|e| format!("server `{}`: {e}", s.name))?,
            };
            servers.push(ServerSpec {
                name: s.name,
                command,
                args: s.args,
                env: s.env.into_iter().collect(),
                cwd: s.cwd.map(abs),
                url: s.url,
                headers: s.headers.into_iter().collect(),
                era,
            });
        }
        let dh = HttpConfig::default();
        let http = match raw.http {
            None => dh,
            Some(h) => HttpConfig {
                listen: h.listen.as_deref().map(parse_listen).transpose()?,
                path: h.path.unwrap_or(dh.path),
                bearer_token_env: h.bearer_token_env,
                allowed_origins: h.allowed_origins.unwrap_or(dh.allowed_origins),
                allowed_hosts: h.allowed_hosts.unwrap_or(dh.allowed_hosts),
                shutdown_grace: ms(h.shutdown_grace_ms, dh.shutdown_grace),
                session_idle_timeout: ms(h.session_idle_timeout_ms, dh.session_idle_timeout),
            },
        };
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
            roots: raw.roots.into_iter().map(abs).collect(),
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
            max_concurrent_calls: raw.max_concurrent_calls.unwrap_or(d.max_concurrent_calls),
            max_concurrent_calls_per_session: raw
                .max_concurrent_calls_per_session
                .unwrap_or(d.max_concurrent_calls_per_session),
            call_queue_timeout: ms(raw.call_queue_ms, d.call_queue_timeout),
            http,
            state_key_env: raw.state_key_env,
            confirm_ttl: ms(raw.confirm_ttl_ms, d.confirm_ttl),
            shadow_policy: raw.shadow_policy.map(abs),
            shadow_log: raw.shadow_log.map(abs),
        };
        Ok(cfg)
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

    #[test]
    fn header_templates_take_variables_from_the_environment() {
        let env = |n: &str| (n == "TOKEN").then(|| "s3cr3t".to_string());
        assert_eq!(
            resolve_env_template("Bearer ${TOKEN}", env).unwrap(),
            "Bearer s3cr3t"
        );
        assert_eq!(resolve_env_template("${env:TOKEN}", env).unwrap(), "s3cr3t");
        assert_eq!(resolve_env_template("a$$b $x", env).unwrap(), "a$b $x");
        let e = resolve_env_template("Bearer ${MISSING}", env).unwrap_err();
        assert!(e.contains("`MISSING`") && !e.contains("s3cr3t"), "{e}");
        assert!(resolve_env_template("${TOKEN", env).is_err());
        assert!(resolve_env_template("${BAD-NAME}", env).is_err());
    }

    #[test]
    fn urls_are_displayed_without_secrets() {
        assert_eq!(
            display_url("https://user:pw@api.example.com:8443/mcp?key=abc#f"),
            "https://api.example.com:8443/mcp"
        );
        assert_eq!(
            display_url("http://127.0.0.1:9/mcp"),
            "http://127.0.0.1:9/mcp"
        );
        let s = ServerSpec::parse_cli("gh=https://t:secret@api.example.com/mcp?token=x").unwrap();
        assert!(s.url.is_some() && s.command.is_empty());
        assert_eq!(s.display_command(), "https://api.example.com/mcp");
        assert!(!format!("{s:?}").contains("secret"));
    }

    #[test]
    fn remote_servers_in_toml() {
        // SAFETY: a variable of this test's own name
        unsafe { std::env::set_var("TOOLGATE_TEST_CONFIG_TOKEN", "tok-123") };
        let c = ProxyConfig::from_toml_str(
            r#"
max_concurrent_calls = 4
max_concurrent_calls_per_session = 2
call_queue_ms = 0
[http]
listen = "127.0.0.1:0"
allowed_origins = ["http://localhost:*"]
shutdown_grace_ms = 1500
[[server]]
name = "remote"
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${TOOLGATE_TEST_CONFIG_TOKEN}", "X-Team" = "tools" }
"#,
            Path::new("/base"),
        )
        .unwrap();
        let s = &c.servers[0];
        assert_eq!(s.url.as_deref(), Some("https://mcp.example.com/mcp"));
        assert_eq!(s.headers.len(), 2);
        assert!(
            !format!("{c:?}").contains("tok-123"),
            "header values never displayed"
        );
        assert_eq!(c.max_concurrent_calls, 4);
        assert_eq!(c.max_concurrent_calls_per_session, 2);
        assert_eq!(c.call_queue_timeout, Duration::ZERO);
        assert_eq!(c.http.listen, Some("127.0.0.1:0".parse().unwrap()));
        assert_eq!(c.http.shutdown_grace, Duration::from_millis(1500));
        let bad = [
            (
                "[[server]]\nname='r'\nurl='https://x.example/mcp'\ncommand='x'\n",
                "not both",
            ),
            ("[[server]]\nname='r'\n", "needs `command`"),
            (
                "[[server]]\nname='r'\nurl='ftp://x.example/mcp'\n",
                "http:// or https://",
            ),
            (
                "[[server]]\nname='r'\nurl='https://x.example/mcp'\nheaders={A='${TOOLGATE_TEST_UNSET_VAR}'}\n",
                "`TOOLGATE_TEST_UNSET_VAR` is not set",
            ),
            (
                "[[server]]\nname='r'\nurl='https://x.example/mcp'\nheaders={Accept='x'}\n",
                "set by the MCP client",
            ),
            (
                "[[server]]\nname='r'\ncommand='x'\nheaders={A='b'}\n",
                "remote server",
            ),
            (
                "max_concurrent_calls = 0\n",
                "within [1, 2305843009213693951], found 0",
            ),
            (
                "[http]\nbearer_token_env = 'TOOLGATE_TEST_UNSET_VAR'\n",
                "not set",
            ),
            ("[http]\nlisten = 'nowhere'\n", "listen address"),
        ];
        for (text, want) in bad {
            let e = ProxyConfig::from_toml_str(text, Path::new(".")).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
