//! The policy and the tool tags shipped with the crate, embedded as text.
//!
//! The loader reads them when no file is given (and re-exports them as
//! `load::DEFAULT_POLICY` and `load::DEFAULT_TAGS`). The call gate's shipped
//! configuration is the `[gate]` of [`DEFAULT_POLICY`]: a policy that
//! leaves a `[gate]` key out gets its shipped value.

/// The name a loaded embedded file goes by (in `check`, in diagnostics):
/// its path in the repository followed by ` (embedded)`, so nobody takes it
/// for a file of the current folder.
pub fn embedded_name(path: &str) -> String {
    format!("{path} (embedded)")
}

/// The shipped default policy (`policies/default.toml`), embedded.
pub const DEFAULT_POLICY: (&str, &str) = (
    "policies/default.toml",
    include_str!("../policies/default.toml"),
);

/// The shipped selection policy (`policies/selection.toml`), embedded: the
/// MCP proxy's default (BM25 keyword match relative to the best tool; its
/// `[gate]` is the default policy's, see `docs/selection.md`).
pub const SELECTION_POLICY: (&str, &str) = (
    "policies/selection.toml",
    include_str!("../policies/selection.toml"),
);

/// Data files the embedded policies reference (`[features.transition_match]
/// file`), embedded under their repository paths, so an embedded policy
/// loads the same from any folder.
pub const DEFAULT_DATA: &[(&str, &str)] = &[(
    "policies/transitions/bfcl-multi-turn.toml",
    include_str!("../policies/transitions/bfcl-multi-turn.toml"),
)];

/// Binary data files the embedded policies reference (`[features.semantic_match]
/// model`: the static MiniLM model of `policies/models/minilm-static-128`,
/// 4.5 MB), embedded under their repository paths; empty without the cargo
/// feature `semantic`.
#[cfg(feature = "semantic")]
pub const DEFAULT_BINARY_DATA: &[(&str, &[u8])] = &[
    (
        "policies/models/minilm-static-128/tokenizer.json",
        include_bytes!("../policies/models/minilm-static-128/tokenizer.json"),
    ),
    (
        "policies/models/minilm-static-128/model.safetensors",
        include_bytes!("../policies/models/minilm-static-128/model.safetensors"),
    ),
    (
        "policies/models/minilm-static-128/config.json",
        include_bytes!("../policies/models/minilm-static-128/config.json"),
    ),
];

/// Binary data files the embedded policies reference: none without the
/// cargo feature `semantic`.
#[cfg(not(feature = "semantic"))]
pub const DEFAULT_BINARY_DATA: &[(&str, &[u8])] = &[];

/// The shipped tool tags (`tool-tags/*.toml`), embedded, sorted by file name.
pub const DEFAULT_TAGS: &[(&str, &str)] = &[
    (
        "tool-tags/custom.toml",
        include_str!("../tool-tags/custom.toml"),
    ),
    (
        "tool-tags/demo.toml",
        include_str!("../tool-tags/demo.toml"),
    ),
    (
        "tool-tags/everything.toml",
        include_str!("../tool-tags/everything.toml"),
    ),
    (
        "tool-tags/fetch.toml",
        include_str!("../tool-tags/fetch.toml"),
    ),
    (
        "tool-tags/filesystem.toml",
        include_str!("../tool-tags/filesystem.toml"),
    ),
    ("tool-tags/git.toml", include_str!("../tool-tags/git.toml")),
    (
        "tool-tags/memory.toml",
        include_str!("../tool-tags/memory.toml"),
    ),
    (
        "tool-tags/shell.toml",
        include_str!("../tool-tags/shell.toml"),
    ),
    (
        "tool-tags/sqlite.toml",
        include_str!("../tool-tags/sqlite.toml"),
    ),
    (
        "tool-tags/time.toml",
        include_str!("../tool-tags/time.toml"),
    ),
];
