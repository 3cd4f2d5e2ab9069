//! What parsing cannot check in a [`ProxyConfig`] (unique server names,
//! remote servers' headers and the environment variables they name, the
//! state key, the proxy's own tool names, the restart delays), each
//! problem with the key at fault ([`Place`]), so that a `--config` file's
//! problem stands at its value's `FILE:LINE:COLUMN` (issue 29: these had
//! no line).

use toml::de::{DeTable, DeValue};

use super::{
    ProxyConfig, RESERVED_HEADERS, ServerSpec, resolve_env_template, validate_server_name,
};

/// The key of a configuration file whose value a problem is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// No one key (a combination, or a value from the command line).
    Nowhere,
    /// A top-level key.
    Root(&'static str),
    /// A key of a top-level table: (`http`, `bearer_token_env`).
    Table(&'static str, &'static str),
    /// A key of the `i`-th (0-based) `[[server]]`.
    Server(usize, &'static str),
}

/// The 1-based line and column of the value at `place` in the
/// configuration `text` (of the `[[server]]` header when the key is
/// missing there); `None` when the text does not parse or has no such
/// value.
pub(super) fn location(text: &str, place: &Place) -> Option<(usize, usize)> {
    let doc = DeTable::parse(text).ok()?;
    let root = doc.get_ref();
    let table = |t: &'static str| match root.get(t)?.get_ref() {
        DeValue::Table(t) => Some(t),
        _ => None,
    };
    let start = match *place {
        Place::Nowhere => return None,
        Place::Root(k) => root.get(k)?.span().start,
        Place::Table(t, k) => table(t)?.get(k)?.span().start,
        Place::Server(i, k) => {
            let DeValue::Array(items) = root.get("server")?.get_ref() else {
                return None;
            };
            let item = items.get(i)?;
            let DeValue::Table(t) = item.get_ref() else {
                return None;
            };
            t.get(k).map_or(item.span().start, |v| v.span().start)
        }
    };
    Some(crate::diag::SourceFile::new("", text).line_col(start))
}

impl ProxyConfig {
    /// Checks what parsing cannot: unique server names, remote servers'
    /// URLs and headers (every environment variable a header names is set),
    /// call limits, the HTTP endpoint, sane durations. The error holds every
    /// problem, one a line.
    pub fn check(&self) -> Result<(), String> {
        let all = self.check_placed();
        if all.is_empty() {
            return Ok(());
        }
        Err(all
            .into_iter()
            .map(|(_, m)| m)
            .collect::<Vec<_>>()
            .join("\n"))
    }

    /// Every problem of [`ProxyConfig::check`], each with the key at fault,
    /// in the order of the checks.
    pub(super) fn check_placed(&self) -> Vec<(Place, String)> {
        let mut out: Vec<(Place, String)> = Vec::new();
        let mut add = |p: Place, r: Result<(), String>| {
            if let Err(m) = r {
                out.push((p, m));
            }
        };
        for (i, s) in self.servers.iter().enumerate() {
            add(Place::Server(i, "name"), validate_server_name(&s.name));
            if self.servers[..i].iter().any(|o| o.name == s.name) {
                add(
                    Place::Server(i, "name"),
                    Err(format!("server `{}` is configured twice", s.name)),
                );
            }
            add(Place::Server(i, "headers"), check_remote(s));
        }
        if self.max_concurrent_calls == 0 || self.max_concurrent_calls_per_session == 0 {
            add(
                Place::Nowhere,
                Err(
                    "max_concurrent_calls and max_concurrent_calls_per_session must be >= 1".into(),
                ),
            );
        }
        if !self.http.path.starts_with('/') {
            add(
                Place::Table("http", "path"),
                Err(format!(
                    "[http] path `{}` must start with `/`",
                    self.http.path
                )),
            );
        }
        if let Some(v) = &self.http.bearer_token_env {
            match std::env::var(v) {
                Ok(t) if !t.trim().is_empty() => {}
                _ => add(
                    Place::Table("http", "bearer_token_env"),
                    Err(format!(
                        "[http] bearer_token_env: the environment variable `{v}` is not set (or empty)"
                    )),
                ),
            }
        }
        if let Some(v) = &self.state_key_env {
            add(
                Place::Root("state_key_env"),
                super::super::stateless::Stateless::from_config(Some(v), self.confirm_ttl)
                    .map(|_| ()),
            );
        }
        if self.confirm_ttl.is_zero() {
            add(
                Place::Root("confirm_ttl_ms"),
                Err("confirm_ttl_ms must be > 0".into()),
            );
        }
        if self.http.session_idle_timeout.is_zero() {
            add(
                Place::Table("http", "session_idle_timeout_ms"),
                Err("[http] session_idle_timeout_ms must be > 0".into()),
            );
        }
        if self.poll_interval.is_some_and(|p| p.is_zero()) {
            add(Place::Root("poll_ms"), Err("poll_ms must be > 0".into()));
        }
        for (table, m) in [
            ("find_tools", &self.find_tools),
            ("call_tool", &self.call_tool),
        ] {
            if m.enabled && !super::super::names::is_client_safe(&m.name) {
                add(
                    Place::Table(table, "name"),
                    Err(format!(
                        "meta-tool name `{}` must match ^[a-zA-Z0-9_-]{{1,64}}$",
                        crate::diag::echo(&m.name)
                    )),
                );
            }
        }
        if self.find_tools.enabled
            && self.call_tool.enabled
            && self.find_tools.name == self.call_tool.name
        {
            add(
                Place::Table("call_tool", "name"),
                Err(format!(
                    "find_tools and call_tool are both named `{}`",
                    self.find_tools.name
                )),
            );
        }
        if self.restart_initial.is_zero() || self.restart_max < self.restart_initial {
            add(
                Place::Root("restart_max_ms"),
                Err("restart delays: need 0 < restart_initial_ms <= restart_max_ms".into()),
            );
        }
        out
    }
}

/// Checks a remote server's URL and headers; every variable the header
/// templates name must be set (the values are not kept).
fn check_remote(s: &ServerSpec) -> Result<(), String> {
    let Some(url) = &s.url else {
        return Ok(());
    };
    super::values::check_url(url).map_err(|e| format!("server `{}`: {e}", s.name))?;
    for (k, v) in &s.headers {
        if k.is_empty()
            || !k
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        {
            return Err(format!(
                "server `{}`: `{k}` is not an HTTP header name",
                s.name
            ));
        }
        if RESERVED_HEADERS.contains(&k.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "server `{}`: the header `{k}` is set by the MCP client itself and cannot be configured",
                s.name
            ));
        }
        resolve_env_template(v, |n| std::env::var(n).ok())
            .map_err(|e| format!("server `{}`: header `{k}`: {e}", s.name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Place, location};

    #[test]
    fn problems_stand_at_the_value_at_fault() {
        let text = "restart_max_ms = 100\n[http]\nbearer_token_env = \"X\"\n[[server]]\nname = \"a\"\nurl = \"https://a.example/mcp\"\nheaders = { A = \"${UNSET}\" }\n";
        assert_eq!(
            location(text, &Place::Root("restart_max_ms")),
            Some((1, 18))
        );
        assert_eq!(
            location(text, &Place::Table("http", "bearer_token_env")),
            Some((3, 20))
        );
        assert_eq!(location(text, &Place::Server(0, "headers")), Some((7, 11)));
        // a key that is not there: the [[server]] header
        assert_eq!(location(text, &Place::Server(0, "cwd")), Some((4, 1)));
        assert_eq!(location(text, &Place::Nowhere), None);
    }

    #[test]
    fn a_file_problem_of_the_check_has_its_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.toml");
        std::fs::write(
            &p,
            "[http]\nbearer_token_env = \"TOOLGATE_I29L_UNSET_VAR\"\n[[server]]\nname = \"a\"\ncommand = \"true\"\n",
        )
        .unwrap();
        let e = super::ProxyConfig::from_toml_file(&p).unwrap_err();
        assert!(
            e.starts_with(&format!("{}:2:20: [http] bearer_token_env", p.display())),
            "{e}"
        );
    }
}
