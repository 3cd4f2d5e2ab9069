//! Client-safe tool names.
//!
//! The catalog names a downstream tool `server.tool` (policies, tags, traces
//! and the audit use that name). MCP allows the dot (SEP-986), but several
//! clients hand tool names to model APIs that accept only
//! `^[a-zA-Z0-9_-]{1,64}$`, and fail on it. So the name a client sees, the
//! *exposed* name, is made by a configurable format (default
//! [`DEFAULT_FORMAT`], `{server}__{tool}`) and then made safe:
//!
//! 1. every character outside `[a-zA-Z0-9_-]` becomes `_`;
//! 2. a name longer than the limit (at most 64) is cut and ends with `_` and
//!    8 hexadecimal digits of a hash (FNV-1a, 32 low bits) of the catalog
//!    name, so the shortened name is stable across runs;
//! 3. names that still collide (two servers, or `a.b_c` vs `a_b.c` under a
//!    format that joins with `_`), or that take a reserved name (the
//!    proxy's own tools), are resolved deterministically: among the
//!    colliding tools, sorted by catalog name, the first keeps the name and
//!    each other one gets the hash suffix; each resolution is reported as a
//!    warning.
//!
//! The result depends only on the set of catalog names, never on the order
//! in which servers answered.

use std::collections::{BTreeMap, HashSet};

/// The default format of exposed names.
pub const DEFAULT_FORMAT: &str = "{server}__{tool}";

/// The longest name the `^[a-zA-Z0-9_-]{1,64}$` rule allows.
pub const MAX_NAME_LEN: usize = 64;

/// Length of the hash suffix, `_` included (`_` + 8 hex digits).
const SUFFIX_LEN: usize = 9;

/// A parsed name format: a template with `{server}` and `{tool}`, and the
/// longest name to produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameFormat {
    template: String,
    max_len: usize,
}

impl Default for NameFormat {
    fn default() -> Self {
        NameFormat {
            template: DEFAULT_FORMAT.into(),
            max_len: MAX_NAME_LEN,
        }
    }
}

impl NameFormat {
    /// Checks a template: it must contain `{tool}` (names must differ per
    /// tool), may contain `{server}`, and no other `{...}`; `max_len` must
    /// be within [16, 64] (room for a hash suffix).
    pub fn new(template: &str, max_len: usize) -> Result<Self, String> {
        if !template.contains("{tool}") {
            return Err(format!(
                "name format `{template}` must contain `{{tool}}` (e.g. `{DEFAULT_FORMAT}`)"
            ));
        }
        let rest = template.replace("{server}", "").replace("{tool}", "");
        if rest.contains('{') || rest.contains('}') {
            return Err(format!(
                "name format `{template}`: only `{{server}}` and `{{tool}}` may appear in braces"
            ));
        }
        if !(16..=MAX_NAME_LEN).contains(&max_len) {
            return Err(format!(
                "name_max_length must be within [16, {MAX_NAME_LEN}], found {max_len}"
            ));
        }
        Ok(NameFormat {
            template: template.into(),
            max_len,
        })
    }

    /// The template.
    pub fn template(&self) -> &str {
        &self.template
    }

    /// The longest name produced.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The safe name of `server`'s tool `tool`, before collisions are
    /// resolved (steps 1 and 2 of the module docs).
    pub fn base_name(&self, server: &str, tool: &str) -> String {
        let raw = self
            .template
            .replace("{server}", server)
            .replace("{tool}", tool);
        let safe = sanitize(&raw);
        let catalog = format!("{server}.{tool}");
        if safe.is_empty() {
            return with_suffix("", &catalog, self.max_len);
        }
        if safe.len() > self.max_len {
            return with_suffix(&safe, &catalog, self.max_len);
        }
        safe
    }
}

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_`.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_client_safe(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// 32 low bits of FNV-1a 64 of `s`, as 8 hexadecimal digits.
fn hash8(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:08x}", h as u32)
}

/// `base` cut so that `_` + hash of `key` fits in `max_len`.
fn with_suffix(base: &str, key: &str, max_len: usize) -> String {
    let keep = max_len - SUFFIX_LEN;
    let cut = if base.len() > keep {
        &base[..keep]
    } else {
        base
    };
    format!("{cut}_{}", hash8(key))
}

/// Exposed names for `tools`, each `(server, tool)`, in the same order,
/// unique and distinct from every name in `reserved`; plus one warning per
/// collision resolved (see the module docs).
pub fn assign(
    format: &NameFormat,
    tools: &[(&str, &str)],
    reserved: &[&str],
) -> (Vec<String>, Vec<String>) {
    let catalog: Vec<String> = tools.iter().map(|(s, t)| format!("{s}.{t}")).collect();
    let mut names: Vec<String> = tools.iter().map(|(s, t)| format.base_name(s, t)).collect();
    let mut warnings = Vec::new();
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, n) in names.iter().enumerate() {
        groups.entry(n.as_str()).or_default().push(i);
    }
    let reserved_set: HashSet<&str> = reserved.iter().copied().collect();
    let mut renames: Vec<(usize, String)> = Vec::new();
    for (name, mut members) in groups {
        let taken = reserved_set.contains(name);
        if members.len() == 1 && !taken {
            continue;
        }
        members.sort_by(|a, b| catalog[*a].cmp(&catalog[*b]));
        let skip = usize::from(!taken);
        for &i in &members[skip..] {
            renames.push((i, with_suffix(name, &catalog[i], format.max_len)));
        }
        let who: Vec<&str> = members.iter().map(|&i| catalog[i].as_str()).collect();
        warnings.push(if taken {
            format!(
                "tool name `{name}` of {} is reserved by the proxy; renamed with a hash suffix",
                who.join(", ")
            )
        } else {
            format!(
                "tools {} all map to the client name `{name}`; `{}` keeps it, the others get a hash suffix",
                who.join(", "),
                who[0]
            )
        });
    }
    for (i, n) in renames {
        names[i] = n;
    }
    // A suffixed name may, in theory, meet another name: rehash with a counter.
    let mut seen: HashSet<String> = reserved.iter().map(|s| s.to_string()).collect();
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|a, b| catalog[*a].cmp(&catalog[*b]));
    for i in order {
        let mut n = 0u32;
        while seen.contains(&names[i]) {
            n += 1;
            names[i] = with_suffix(&names[i], &format!("{}#{n}", catalog[i]), format.max_len);
        }
        seen.insert(names[i].clone());
    }
    (names, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_format_and_sanitising() {
        let f = NameFormat::default();
        assert_eq!(f.base_name("sqlite", "read_query"), "sqlite__read_query");
        assert_eq!(f.base_name("fs", "read file/v2.1"), "fs__read_file_v2_1");
        assert_eq!(f.base_name("x", "日本"), "x____");
        let long = "a".repeat(80);
        let n = f.base_name("srv", &long);
        assert_eq!(n.len(), 64);
        assert!(is_client_safe(&n));
        assert_eq!(n, f.base_name("srv", &long), "stable");
        assert_ne!(n, f.base_name("srv", &format!("{long}b")));
    }

    #[test]
    fn rejects_bad_formats() {
        assert!(NameFormat::new("{server}", 64).is_err());
        assert!(NameFormat::new("{server}.{tool}{x}", 64).is_err());
        assert!(NameFormat::new("{tool}", 65).is_err());
        assert!(NameFormat::new("{tool}", 8).is_err());
        assert!(NameFormat::new("mcp_{server}_{tool}", 48).is_ok());
    }

    #[test]
    fn collisions_are_resolved_deterministically() {
        let f = NameFormat::new("{server}_{tool}", 64).unwrap();
        let tools = [("a", "b_c"), ("a_b", "c"), ("t", "x")];
        let (names, warnings) = assign(&f, &tools, &["t_x"]);
        assert_eq!(names[0], "a_b_c", "a.b_c sorts first and keeps the name");
        assert!(names[1].starts_with("a_b_c_") && names[1].len() == 5 + 9);
        assert!(names[2].starts_with("t_x_"), "{names:?}");
        assert_eq!(warnings.len(), 2);
        // order of the input does not matter
        let rev = [("t", "x"), ("a_b", "c"), ("a", "b_c")];
        let (names2, _) = assign(&f, &rev, &["t_x"]);
        assert_eq!(
            names2,
            [names[2].clone(), names[1].clone(), names[0].clone()]
        );
        let all: HashSet<_> = names.iter().collect();
        assert_eq!(all.len(), 3);
        assert!(names.iter().all(|n| is_client_safe(n)));
    }
}
