//! Code that a shell command line hands to another language: inline
//! interpreter code (`python3 -c`, `node -e`), sed scripts and awk
//! programs. Each is read with a parser for its language and reduced to
//! what the shell analysis needs: whether the code stays within the
//! policy's harmless subset ([`CodeRules`], `[gate.shell.code.<language>]`),
//! or which programs it runs and which files it writes or reads
//! ([`ScriptEffect`]).
//!
//! Parsers: Python with Ruff's `ruff_python_parser`, JavaScript with
//! `oxc_parser` (both maintained, MIT; docs/gate.md explains the choice);
//! sed and awk with small readers of their own here (their languages are
//! small, and no maintained crate reads them).

pub mod awk;
pub mod javascript;
pub mod python;
pub mod rules;
pub mod sed;

pub use rules::{CodeProblem, CodeRules};
pub use sed::ScriptEffect;

/// Checks `code` with the parser `rules.parser` names (`python`,
/// `javascript`); any other parser is [`CodeProblem::NoParser`].
pub fn check(rules: &CodeRules, code: &str) -> Result<(), CodeProblem> {
    // The parsers recurse on nested code: grow the stack rather than
    // overflow it (the code is bounded by `max_bytes`).
    stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || match rules.parser.as_str() {
        "python" => python::check(rules, code),
        "javascript" => javascript::check(rules, code),
        other => Err(CodeProblem::NoParser(other.to_string())),
    })
}
