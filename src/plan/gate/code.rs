//! `[gate.shell.code.<language>]`: what inline interpreter code may use.

use serde::Deserialize;

/// The harmless subset of one language, as policy data: code that uses
/// only these is allowed; anything else asks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeRules {
    /// Parser used: `python` or `javascript`; any other value means no
    /// parser (the code always asks).
    #[serde(default)]
    pub parser: String,
    /// Functions callable by bare name (`print`, `len`, `parseInt`).
    #[serde(default)]
    pub functions: Vec<String>,
    /// Names usable as namespaces without an import (`console`, `JSON`,
    /// `Math`, `process` in JavaScript).
    #[serde(default)]
    pub globals: Vec<String>,
    /// Modules that may be imported (`import json`, `require("path")`).
    #[serde(default)]
    pub modules: Vec<String>,
    /// Members of modules and globals that may be used, qualified
    /// (`json.dumps`, `sys.stdin.read`, `math.*` for every member).
    #[serde(default)]
    pub attributes: Vec<String>,
    /// Methods callable on values (`split`, `join`, `map`).
    #[serde(default)]
    pub methods: Vec<String>,
    /// Special names allowed although they look like internals
    /// (`__name__`).
    #[serde(default)]
    pub names: Vec<String>,
    /// Attributes never allowed, even on values (`constructor`,
    /// `gi_frame`): they reach the interpreter's internals.
    #[serde(default)]
    pub forbidden_attributes: Vec<String>,
    /// Functions that call the functions given to them (`map`, `sorted`'s
    /// `key`): those arguments must be harmless callables too.
    #[serde(default)]
    pub callable_arguments: Vec<String>,
    /// Commands of the language's own program that only read or format,
    /// allowed where the code is judged (`sqlite`: the CLI's dot commands
    /// such as `tables` for `.tables`; src/gate/shell/sqlite.rs).
    #[serde(default)]
    pub commands: Vec<String>,
    /// `sqlite`: the statement kinds (`sqlparser::ast::Statement` variant
    /// names: `Insert`, `Drop`...) that only change the database, which a
    /// connection opened with the CLI's `-readonly` (`SQLITE_OPEN_READONLY`)
    /// refuses ("attempt to write a readonly database"): with `-readonly`
    /// they are harmless (src/gate/shell/sqlite.rs). Kinds that reach past
    /// the database on a read-only connection too (`VACUUM INTO` writes a
    /// new file, `ATTACH` opens another) are not listed.
    #[serde(default)]
    pub readonly_statements: Vec<String>,
    /// Longest code analysed, in bytes; longer code asks.
    #[serde(default = "default_max_bytes")]
    pub max_bytes: usize,
    /// Deepest expression nesting analysed; deeper code asks.
    #[serde(default = "default_max_depth")]
    pub max_depth: usize,
}

fn default_max_bytes() -> usize {
    8192
}

fn default_max_depth() -> usize {
    64
}

impl CodeRules {
    /// Whether the qualified name `q` (`os.path.join`) may be used: listed,
    /// a direct member of a listed `prefix.*` (one level only: `platform.*`
    /// allows `platform.system` but not `platform.os.system`), or a prefix
    /// of a listed name (`sys.stdin` when `sys.stdin.read` is listed).
    pub fn attribute_allowed(&self, q: &str) -> bool {
        self.attributes.iter().any(|a| {
            if let Some(prefix) = a.strip_suffix(".*") {
                q == prefix
                    || q.strip_prefix(prefix)
                        .and_then(|rest| rest.strip_prefix('.'))
                        .is_some_and(|member| !member.is_empty() && !member.contains('.'))
            } else {
                a == q || (a.len() > q.len() && a.starts_with(q) && a.as_bytes()[q.len()] == b'.')
            }
        })
    }

    /// Whether module `m` may be imported.
    pub fn module_allowed(&self, m: &str) -> bool {
        self.modules.iter().any(|x| x == m)
    }

    /// Whether `name` looks internal (`__x__`) without being listed.
    pub fn internal_name(&self, name: &str) -> bool {
        name.len() > 4
            && name.starts_with("__")
            && name.ends_with("__")
            && !self.names.iter().any(|n| n == name)
    }
}
