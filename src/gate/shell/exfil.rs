//! Side channels (stage 3, continued): data that leaves the machine
//! through a name that is resolved or a request that is sent.
//!
//! - a host name (`host` effect: `dig`, `nslookup`, `host`, `ping`,
//!   `traceroute`, `getent hosts`) or the host of a URL (`url` effect:
//!   `curl`, `wget`, `git clone`, ...) built at run time — by a command
//!   substitution, a variable, or a value the line reads from a file — is
//!   resolved, and its text reaches DNS servers whoever owns the domain:
//!   `effects.dynamic_host` (shipped: ask). A literal host is the
//!   `network` effect (allowed).
//! - the rest of a URL (path, query), request data (`data` effect: `curl
//!   -d`, `-F`, `wget --post-data`, `ping -p`) built from a command's
//!   output, from a variable the line set at run time, or from a variable
//!   whose name looks like a secret (`[gate.shell] secret_variables`);
//!   data that names a file (`data_files`: curl's `@FILE`); and a file
//!   uploaded (`upload` effect: `curl -T`, `wget --post-file`, `dig -f`):
//!   `effects.exfiltration` (shipped: ask). The file is also checked as a
//!   read.
//!
//! A literal value, or one built from variables the line assigned literal
//! text, is known and not judged here. Headers are not judged: a token in
//! `-H "Authorization: Bearer $TOKEN"` is how a token is meant to be sent.

use super::commands::Ctx;
use super::state::Var;
use super::{Arg, Walker, excerpt};
use crate::plan::gate::effect::Effect;

impl Walker<'_> {
    /// A host name or address that is resolved (`dig NAME`).
    pub(super) fn host_target(&mut self, a: &Arg, cmd: &str) {
        if a.dynamic {
            self.effect("host", &a.text, "dynamic");
            let d = format!("`{cmd} {}`", excerpt(&a.text));
            self.effect_check(|e| &e.dynamic_host, &d);
            return;
        }
        self.effect("network", &a.text, cmd);
    }

    /// The parts of a URL built at run time: its host (resolved, so its
    /// text reaches DNS servers) and the rest (path, query: sent). Returns
    /// whether a finding was added.
    pub(super) fn url_parts(&mut self, a: &Arg, cmd: &str) -> bool {
        if !a.dynamic {
            return false;
        }
        let t = a.text.as_str();
        let after_scheme = t.split_once("://").map_or(t, |(_, r)| r);
        let end = after_scheme
            .find(['/', '?', '#'])
            .unwrap_or(after_scheme.len());
        let authority = &after_scheme[..end];
        // `user:password@host`: the host is after the last `@`.
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        // The port is not resolved: `localhost:$PORT` is a literal host.
        let host = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(v6),
            None => host.split(':').next().unwrap_or(host),
        };
        if host.contains('$') || host.is_empty() {
            self.effect("host", t, "dynamic");
            let d = format!("`{cmd} {}`", excerpt(t));
            self.effect_check(|e| &e.dynamic_host, &d);
            return true;
        }
        let rest = Arg {
            text: after_scheme[end..].into(),
            ..a.clone()
        };
        if let Some(why) = self.sent_from(&rest) {
            let d = format!("`{cmd} {}` builds its address from {why}", excerpt(t));
            self.effect_check(|e| &e.exfiltration, &d);
            return true;
        }
        false
    }

    /// Data sent over the network (a request body, a form field, a ping
    /// pattern).
    pub(super) fn data_target(&mut self, a: &Arg, cmd: &str, ctx: &Ctx) {
        let t = a.text.as_str();
        let file = self
            .cfg
            .data_files
            .0
            .captures(t)
            .and_then(|c| c.iter().skip(1).flatten().next().map(|m| m.as_str()))
            .map(str::to_string);
        if let Some(f) = file {
            self.path_target(Effect::Read, &f, a.dynamic, ctx);
            self.effect("upload", &f, cmd);
            let d = format!("`{cmd}` reads `{}`", excerpt(&f));
            self.effect_check(|e| &e.exfiltration, &d);
            return;
        }
        self.effect("data", t, cmd);
        if let Some(why) = self.sent_from(a) {
            let d = format!("`{cmd}` builds request data `{}` from {why}", excerpt(t));
            self.effect_check(|e| &e.exfiltration, &d);
        }
    }

    /// A file whose content is sent over the network (`curl -T FILE`).
    pub(super) fn upload_target(&mut self, a: &Arg, cmd: &str, ctx: &Ctx) {
        self.path_target(Effect::Read, &a.text, a.dynamic, ctx);
        self.effect("upload", &a.text, cmd);
        let d = format!("`{cmd}` reads `{}`", excerpt(&a.text));
        self.effect_check(|e| &e.exfiltration, &d);
    }

    /// Where a value sent over the network comes from, when that is
    /// worth asking about: a command's output (a substitution), a
    /// variable the line set at run time (`read`, `X=$(...)`, a loop over
    /// a file's lines), or a variable whose name looks like a secret.
    /// `None` for a value known in full, or built from other variables.
    fn sent_from(&self, a: &Arg) -> Option<String> {
        if !a.dynamic {
            return None;
        }
        if a.procsub || a.text.contains("$(") {
            return Some("a command's output".into());
        }
        for name in variable_names(&a.text) {
            if self.cfg.secret_variables.is_match(name) {
                return Some(format!("the secret-looking variable `${name}`"));
            }
            if matches!(self.st.vars.get(name), Some(Var::Unknown)) {
                return Some(format!("`${name}`, which the line sets at run time"));
            }
        }
        None
    }
}

/// The names of the variables a rendered word expands (`$NAME`,
/// `${NAME...}`), in order.
fn variable_names(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' {
            i += 1;
            continue;
        }
        let start = if b.get(i + 1) == Some(&b'{') {
            i + 2
        } else {
            i + 1
        };
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
            end += 1;
        }
        if end > start && !b[start].is_ascii_digit() {
            out.push(&text[start..end]);
        }
        i = end.max(i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::variable_names;

    #[test]
    fn finds_the_variables_of_a_rendered_word() {
        assert_eq!(
            variable_names("https://x/?a=$A&b=${B_2:-x}&c=$1&$"),
            vec!["A", "B_2"]
        );
        assert!(variable_names("no variables, $(...) only").is_empty());
    }
}
