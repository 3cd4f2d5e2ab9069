//! `toolgate mcp-proxy`: put the engine in front of MCP servers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::path_options::{PathOption, Role, Want};
use clap::Args;
use toolgate::mcp::{
    BuildError, ProxyConfig, ServerSpec, build_proxy, serve_http, serve_stdio_until,
    shutdown_signal,
};

/// Options of `toolgate mcp-proxy`; each overrides the `--config` file's value.
#[derive(Args, Clone)]
pub struct McpProxyArgs {
    /// A downstream server, `NAME=COMMAND [ARGS]` or `NAME=URL` (Streamable HTTP) (repeatable); its tools are `NAME.tool` in policies and the audit, `NAME__tool` for clients.
    #[arg(long = "server", value_name = "NAME=COMMAND|URL")]
    pub servers: Vec<String>,
    /// The MCP era the proxy speaks to server NAME, as the `[[server]] era` key
    /// of a --config file: `auto` (the default: probe with server/discover, fall
    /// back to initialize), `modern` (2026-07-28 only) or `legacy` (the
    /// initialize handshake only, for a server that misreads the probe).
    /// Repeatable, e.g. `--era sqlite=legacy`; NAME is a --server or
    /// [[server]] name.
    #[arg(long = "era", value_name = "NAME=ERA")]
    pub eras: Vec<String>,
    /// A TOML file with `[[server]]` entries and the options below (see docs/mcp-proxy.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Policy file; reloaded when it changes. Default: the shipped
    /// policies/selection.toml (embedded), which finds the needed tool on real
    /// catalogs (BM25 over names, descriptions and parameters; docs/selection.md),
    /// with the call gate of policies/default.toml. The seed presets stay
    /// selectable: `--policy policies/default.toml` (seed 000 exactly).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The project folder the call gate keeps file access in when the client
    /// sends no MCP roots (repeatable; default: the working directory, which
    /// some clients set to `/`). Relative: from the working directory. A folder
    /// that does not exist, or a file, is a usage error (exit 2).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Tool-tags directory (default: the shipped tool-tags/, embedded); reloaded when a file changes.
    #[arg(long, value_name = "DIR")]
    pub tags: Option<PathBuf>,
    /// Append one JSON line per tools/call to FILE (in a folder that must exist; read it with `toolgate audit summary`).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Tool-definition pin file (default: <audit stem>.pins.json beside the audit file; in memory without one).
    #[arg(long, value_name = "FILE")]
    pub pins: Option<PathBuf>,
    /// Poll the policy and tags for changes every MS milliseconds instead of watching file-system events.
    #[arg(long, value_name = "MS")]
    pub poll_ms: Option<u64>,
    /// Debounce of notifications/tools/list_changed, in milliseconds (default 50).
    #[arg(long, value_name = "MS")]
    pub debounce_ms: Option<u64>,
    /// Neither advertise tools.listChanged nor send notifications/tools/list_changed.
    #[arg(long)]
    pub no_list_changed: bool,
    /// Format of the tool names clients see: {server} and {tool}, made safe
    /// (^[a-zA-Z0-9_-]{1,64}$). Default: {server}__{tool}.
    #[arg(long, value_name = "FORMAT")]
    pub name_format: Option<String>,
    /// Do not offer the search tool (toolgate__find_tools).
    #[arg(long)]
    pub no_find_tools: bool,
    /// Do not offer the call-through tool (toolgate__call_tool).
    #[arg(long)]
    pub no_call_tool: bool,
    /// Serve MCP over Streamable HTTP on ADDR (e.g. 127.0.0.1:8765; port 0
    /// picks a free one) at the path `[http] path` (default /mcp), to many
    /// clients at once, instead of stdio. The address is printed on stderr.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// With --listen: clients must send `Authorization: Bearer <token>`,
    /// where the token is the value of the environment variable VAR.
    #[arg(long, value_name = "VAR")]
    pub bearer_token_env: Option<String>,
    /// Sign modern (MCP 2026-07-28) session handles and confirmation states
    /// with the key in the environment variable VAR (at least 32 bytes).
    /// Replicas behind one load balancer must share it; without it each
    /// process draws its own random key.
    #[arg(long, value_name = "VAR")]
    pub state_key_env: Option<String>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g.
    /// 127.0.0.1:9464) while the proxy serves its client on stdio; with
    /// --listen they are at /metrics on the listen address already.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Make every decision also under this policy, never enforced: the
    /// differences (another active set, another verdict) are counted in the
    /// metrics and logged; reloaded like --policy (docs/operations.md).
    #[arg(long, value_name = "FILE")]
    pub shadow_policy: Option<PathBuf>,
    /// With a shadow policy: write the sessions and the differences to FILE
    /// in the trace format, for `toolgate compare`.
    #[arg(long, value_name = "FILE")]
    pub shadow_log: Option<PathBuf>,
}

/// Why the proxy stopped with an error.
pub enum ProxyFail {
    /// Bad configuration (exit 2).
    Usage(String),
    /// The policy or tags do not load (exit 1).
    Load(toolgate::LoadError),
    /// Runtime failure (exit 1).
    Runtime(String),
    /// The `--config` file cannot be read (exit 3, as every unreadable file).
    Unreadable(String),
}

fn config(args: &McpProxyArgs) -> Result<ProxyConfig, ProxyFail> {
    if let Some(p) = &args.config
        && let Err(e) = std::fs::File::open(p).and_then(|f| {
            if f.metadata()?.is_dir() {
                Err(std::io::Error::other("it is a directory, not a file"))
            } else {
                Ok(())
            }
        })
    {
        return Err(ProxyFail::Unreadable(format!(
            "cannot read the --config file {}: {e}",
            p.display()
        )));
    }
    let c = config_of(args).map_err(ProxyFail::Usage)?;
    // The files the proxy writes stand in folders that exist (`cli::paths`),
    // named by the option that gave them, or at their key in the file.
    let text = args
        .config
        .as_ref()
        .and_then(|f| toolgate::datafile::read_text_file(f).ok());
    let outputs: Vec<(&str, &Path)> = [
        ("--audit", &c.audit),
        ("--pins", &c.pins),
        ("--shadow-log", &c.shadow_log),
    ]
    .into_iter()
    .filter_map(|(o, p)| p.as_deref().map(|p| (o, p)))
    .collect();
    for (option, key, given, path) in [
        ("--audit", "audit", args.audit.is_some(), &c.audit),
        ("--pins", "pins", args.pins.is_some(), &c.pins),
        (
            "--shadow-log",
            "shadow_log",
            args.shadow_log.is_some(),
            &c.shadow_log,
        ),
    ] {
        let Some(p) = path else { continue };
        let named = match (&args.config, &text) {
            (Some(file), Some(text)) if !given => {
                let at = toolgate::mcp::config::value_location(text, None, key)
                    .map(|(l, col)| format!(":{l}:{col}"))
                    .unwrap_or_default();
                format!("{}{at}: {key}", file.display())
            }
            _ => option.to_string(),
        };
        super::paths::existing_folder(&named, p).map_err(ProxyFail::Unreadable)?;
        // never one of the files the proxy reads, nor a second output
        // the other outputs: this one is labelled `named` (a config key's
        // place when the file gave it), not by its option
        let others: Vec<(&str, &Path)> = outputs
            .iter()
            .copied()
            .filter(|(o, _)| *o != option)
            .collect();
        super::paths::not_an_input(&named, p, &read_files(args, &c), &others)
            .map_err(ProxyFail::Unreadable)?;
        if key == "audit" {
            super::paths::audit_target(&named, p).map_err(ProxyFail::Unreadable)?;
        }
    }
    // The files the file names for reading exist, each at its key (an
    // option's own path is checked where it is loaded, named by the option).
    if let (Some(file), Some(text)) = (&args.config, &text) {
        for (key, given, path, folder) in [
            ("policy", args.policy.is_some(), &c.policy, false),
            ("tags", args.tags.is_some(), &c.tags, true),
            (
                "shadow_policy",
                args.shadow_policy.is_some(),
                &c.shadow_policy,
                false,
            ),
        ] {
            let Some(p) = path.as_ref().filter(|_| !given) else {
                continue;
            };
            let why = match std::fs::metadata(p) {
                Ok(m) if m.is_dir() == folder => continue,
                Ok(_) if folder => "is a file, not a folder",
                Ok(_) => "is a folder, not a file",
                Err(_) if folder => "the folder does not exist",
                Err(_) => "the file does not exist",
            };
            let at = toolgate::mcp::config::value_location(text, None, key)
                .map(|(l, col)| format!(":{l}:{col}"))
                .unwrap_or_default();
            return Err(ProxyFail::Usage(format!(
                "{}{at}: {key} {}: {why} (relative paths are taken from the --config file's folder)",
                file.display(),
                p.display()
            )));
        }
    }
    Ok(c)
}

/// The files and folders the proxy reads: the `--config` file, the
/// policy, the shadow policy and the tags folder (named by their options,
/// or by their keys when the configuration gives them).
fn read_files(args: &McpProxyArgs, c: &ProxyConfig) -> Vec<PathOption> {
    let mut v: Vec<PathOption> = args
        .config
        .iter()
        .map(|f| PathOption::new("--config", f, Want::File, Role::Plan))
        .collect();
    for (option, key, given, path, want) in [
        (
            "--policy",
            "policy",
            args.policy.is_some(),
            &c.policy,
            Want::File,
        ),
        (
            "--shadow-policy",
            "shadow_policy",
            args.shadow_policy.is_some(),
            &c.shadow_policy,
            Want::File,
        ),
        ("--tags", "tags", args.tags.is_some(), &c.tags, Want::Folder),
    ] {
        if let Some(p) = path {
            let named = if given { option } else { key };
            v.push(PathOption::new(named, p, want, Role::Policy));
        }
    }
    v
}

/// Checks the values given as options before they are merged, so that an
/// error names the option the user typed, not the configuration key it
/// sets (issue 29); every problem found, one message each.
fn check_options(args: &McpProxyArgs) -> Vec<String> {
    use toolgate::mcp::config::check_number_option;
    let mut out = Vec::new();
    let mut add = |r: Result<(), String>| {
        if let Err(m) = r {
            out.push(m);
        }
    };
    if let Some(ms) = args.poll_ms {
        add(check_number_option("--poll-ms", "poll_ms", ms));
    }
    if let Some(ms) = args.debounce_ms {
        add(check_number_option("--debounce-ms", "debounce_ms", ms));
    }
    for (option, var) in [
        ("--bearer-token-env", &args.bearer_token_env),
        ("--state-key-env", &args.state_key_env),
    ] {
        let Some(v) = var else { continue };
        match std::env::var(v) {
            Ok(t) if !t.trim().is_empty() => {
                if option == "--state-key-env" {
                    add(toolgate::mcp::stateless::Stateless::from_config(
                        Some(v),
                        Duration::from_secs(1),
                    )
                    .map(|_| ())
                    .map_err(|e| {
                        format!(
                            "--state-key-env {}: {}",
                            toolgate::diag::echo(v),
                            e.strip_prefix("state_key_env: ").unwrap_or(&e)
                        )
                    }));
                }
            }
            _ => add(Err(format!(
                "{option} {}: the environment variable `{}` is not set (or empty)",
                toolgate::diag::echo(v),
                toolgate::diag::echo(v)
            ))),
        }
    }
    if let Some(l) = &args.listen {
        add(toolgate::mcp::config::parse_listen(l)
            .map(|_| ())
            .map_err(|e| format!("--listen: {e}")));
    }
    out
}

/// Applies `--era NAME=ERA` to the servers of `c`.
fn apply_eras(args: &McpProxyArgs, c: &mut ProxyConfig) -> Vec<String> {
    let mut out = Vec::new();
    for e in &args.eras {
        if let Err(m) = apply_era(e, c) {
            out.push(m);
        }
    }
    out
}

/// Applies one `--era NAME=ERA`.
fn apply_era(e: &str, c: &mut ProxyConfig) -> Result<(), String> {
    {
        let shown = toolgate::diag::echo(e);
        let Some((name, era)) = e.split_once('=') else {
            return Err(format!(
                "--era {shown}: expected NAME=ERA, e.g. `--era sqlite=legacy` (ERA: auto, modern or legacy)"
            ));
        };
        let era = toolgate::mcp::config::ServerEra::parse(era.trim()).map_err(|_| {
            let hint = toolgate::diag::did_you_mean(era.trim(), ["auto", "modern", "legacy"])
                .map(|m| format!(" (did you mean `{m}`?)"))
                .unwrap_or_default();
            format!(
                "--era {shown}: unknown era `{}`{hint}; the eras are auto, modern and legacy",
                toolgate::diag::echo(era.trim())
            )
        })?;
        let name = name.trim();
        if c.servers.is_empty() {
            return Err(format!(
                "--era {shown}: there are no servers to apply --era to; give them with --server NAME=COMMAND|URL or a [[server]] table of --config, then --era NAME=ERA for one of them"
            ));
        }
        match c.servers.iter_mut().find(|s| s.name == name) {
            Some(s) => s.era = era,
            None => {
                let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
                let hint = toolgate::diag::did_you_mean(name, names.iter().copied())
                    .map(|m| format!(" (did you mean `{}`?)", toolgate::diag::echo(m)))
                    .unwrap_or_default();
                return Err(format!(
                    "--era {shown}: no server is named `{}`{hint}; the servers are: {}",
                    toolgate::diag::echo(name),
                    toolgate::diag::echo_list(&names, ", ", toolgate::diag::MAX_ECHOED_ITEMS)
                ));
            }
        }
    }
    Ok(())
}

/// The configuration `args` give; every problem of the options and of the
/// `--config` file found in one run, one a line (issue 29: they stopped
/// at the first).
fn config_of(args: &McpProxyArgs) -> Result<ProxyConfig, String> {
    let mut problems = check_options(args);
    let mut file_failed = false;
    let mut c = match &args.config {
        Some(p) => ProxyConfig::from_toml_file(p).unwrap_or_else(|e| {
            // a policy, a tag file or JSON: one problem (`toml_kinds`)
            problems.push(super::toml_kinds::as_proxy_config(p).unwrap_or(e));
            file_failed = true;
            ProxyConfig::default()
        }),
        None => ProxyConfig::default(),
    };
    for s in &args.servers {
        let shown = toolgate::diag::echo(s);
        let spec = match ServerSpec::parse_cli(s) {
            Ok(spec) => spec,
            Err(e) => {
                problems.push(format!("--server {shown}: {e}"));
                continue;
            }
        };
        if c.servers.iter().any(|o| o.name == spec.name) {
            problems.push(format!(
                "--server {shown}: a server named `{}` is already configured (in --config or an earlier --server); give each server its own name",
                spec.name
            ));
            continue;
        }
        // its command and working directory, before any server starts
        let why: Vec<String> = toolgate::mcp::config::local_server_problems(&spec)
            .into_iter()
            .map(|(_, m)| m)
            .collect();
        if !why.is_empty() {
            problems.push(format!("--server {shown}: {}", why.join("; ")));
        }
        c.servers.push(spec);
    }
    // (the file's servers are unknown when it did not read)
    if !file_failed {
        problems.extend(apply_eras(args, &mut c));
    }
    if args.policy.is_some() {
        c.policy = args.policy.clone();
    }
    if args.tags.is_some() {
        c.tags = args.tags.clone();
    }
    if !args.roots.is_empty() {
        let cwd =
            std::env::current_dir().map_err(|e| format!("--root: no working directory: {e}"))?;
        for r in &args.roots {
            if let Err(why) = root_folder(&cwd.join(r)) {
                problems.push(format!("--root {}: {why}", r.display()));
            }
        }
        c.roots = args.roots.iter().map(|r| cwd.join(r)).collect();
    } else if let Some(file) = &args.config {
        // Every root that is not a folder, each at its place.
        let bad: Vec<String> = c
            .roots
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let why = root_folder(r).err()?;
                let at = config_root_at(file, i)
                    .map(|(l, col)| format!(":{l}:{col}"))
                    .unwrap_or_default();
                Some(format!(
                    "{}{at}: roots: {}: {why}",
                    file.display(),
                    r.display()
                ))
            })
            .collect();
        problems.extend(bad);
    }
    if args.audit.is_some() {
        c.audit = args.audit.clone();
    }
    if args.pins.is_some() {
        c.pins = args.pins.clone();
    }
    if args.shadow_policy.is_some() {
        c.shadow_policy = args.shadow_policy.clone();
    }
    if args.shadow_log.is_some() {
        c.shadow_log = args.shadow_log.clone();
    }
    if c.shadow_log.is_some() && c.shadow_policy.is_none() {
        problems.push(
            "--shadow-log (shadow_log) needs a shadow policy: give --shadow-policy FILE".into(),
        );
    }
    if let Some(ms) = args.poll_ms {
        c.poll_interval = Some(Duration::from_millis(ms));
    }
    if let Some(f) = &args.name_format {
        match toolgate::mcp::NameFormat::new(f, c.name_format.max_len()) {
            Ok(n) => c.name_format = n,
            Err(e) => problems.push(format!("--name-format: {e}")),
        }
    }
    if args.no_find_tools {
        c.find_tools.enabled = false;
    }
    if args.no_call_tool {
        c.call_tool.enabled = false;
    }
    if let Some(ms) = args.debounce_ms {
        c.debounce = Duration::from_millis(ms);
    }
    if args.no_list_changed {
        c.list_changed = false;
    }
    if let Some(l) = &args.listen {
        // (a bad address is among the option problems already)
        c.http.listen = toolgate::mcp::config::parse_listen(l).ok();
    }
    if args.bearer_token_env.is_some() {
        c.http.bearer_token_env = args.bearer_token_env.clone();
    }
    if args.state_key_env.is_some() {
        c.state_key_env = args.state_key_env.clone();
    }
    if c.servers.is_empty() && !file_failed && args.servers.is_empty() {
        problems.push(
            "no downstream server: give --server NAME=COMMAND or a --config file with [[server]] entries"
                .into(),
        );
    }
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    c.check()?;
    Ok(c)
}

/// `Ok` when `root` is a folder that exists; else why it cannot be a
/// project root of the call gate (a root that does not exist or is a file
/// would leave every file access to ask, or name the wrong project).
fn root_folder(root: &std::path::Path) -> Result<(), String> {
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err("not a folder (a project root is a folder)".into()),
        Err(e) => Err(format!("no such folder ({e})")),
    }
}

/// Where the `--config` file writes its `i`-th (0-based) root: the
/// 1-based line and column of that element of `roots`, from the TOML
/// document's spans; `None` when the file no longer reads or has no such
/// element.
fn config_root_at(file: &std::path::Path, i: usize) -> Option<(usize, usize)> {
    let text = toolgate::datafile::read_text_file(file).ok()?;
    let doc = toml::de::DeTable::parse(&text).ok()?;
    let toml::de::DeValue::Array(roots) = doc.get_ref().get("roots")?.get_ref() else {
        return None;
    };
    let start = roots.get(i)?.span().start;
    Some(toolgate::diag::SourceFile::new("", text.as_str()).line_col(start))
}

/// Runs the proxy on stdin/stdout until the client disconnects or SIGTERM
/// or SIGINT (writing nothing to stdout but MCP messages), or, with `--listen`, over
/// Streamable HTTP until SIGINT or SIGTERM (then it finishes the calls in
/// flight first).
pub fn run(args: &McpProxyArgs) -> Result<(), ProxyFail> {
    let cfg = config(args)?;
    if cfg.roots.is_empty()
        && let Ok(cwd) = std::env::current_dir()
    {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        if cwd.parent().is_none() || home.is_some_and(|h| h.starts_with(&cwd)) {
            tracing::warn!(
                cwd = %cwd.display(),
                "the working directory holds every file (or every file of the user): unless the client sends MCP roots, the call gate asks before any file access; give --root PROJECT_DIR"
            );
        }
    }
    let listen = cfg.http.listen;
    let path = cfg.http.path.clone();
    let metrics_addr = match &args.metrics {
        Some(a) => Some(
            toolgate::mcp::config::parse_listen(a)
                .map_err(|e| ProxyFail::Usage(format!("--metrics: {e}")))?,
        ),
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| ProxyFail::Runtime(format!("cannot start the async runtime: {e}")))?;
    rt.block_on(async move {
        let proxy = build_proxy(cfg).map_err(|e| match e {
            BuildError::Load(l) => ProxyFail::Load(l),
            BuildError::Other(s) => ProxyFail::Runtime(s),
        })?;
        if let Some(addr) = metrics_addr {
            let l = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
                ProxyFail::Runtime(format!("--metrics: cannot listen on {addr}: {e}"))
            })?;
            let bound = l
                .local_addr()
                .map_err(|e| ProxyFail::Runtime(e.to_string()))?;
            eprintln!("toolgate mcp-proxy: serving metrics at http://{bound}/metrics");
            let m = proxy.metrics();
            tokio::spawn(async move {
                if let Err(e) = toolgate::mcp::http::serve_metrics(m, l).await {
                    tracing::error!("the metrics server stopped: {e}");
                }
            });
        }
        let Some(addr) = listen else {
            return serve_stdio_until(proxy, shutdown_signal())
                .await
                .map_err(|e| ProxyFail::Runtime(e.to_string()));
        };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| ProxyFail::Runtime(format!("cannot listen on {addr}: {e}")))?;
        let bound = listener
            .local_addr()
            .map_err(|e| ProxyFail::Runtime(e.to_string()))?;
        eprintln!("toolgate mcp-proxy: serving MCP (Streamable HTTP) at http://{bound}{path}");
        serve_http(proxy, listener, shutdown_signal())
            .await
            .map_err(|e| ProxyFail::Runtime(e.to_string()))
    })?;
    // Do not wait for blocked stdin reads: the client is gone.
    rt.shutdown_timeout(Duration::from_millis(500));
    Ok(())
}
