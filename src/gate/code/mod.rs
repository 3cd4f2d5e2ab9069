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
    if code.len() > rules.max_bytes {
        return Err(CodeProblem::TooComplex(format!(
            "{} bytes of code, over the limit of {}",
            code.len(),
            rules.max_bytes
        )));
    }
    // The parsers recurse once per nesting level (`not not ... x`), and
    // code within `max_bytes` may nest that deep: they run on a stack sized
    // for the worst case of this input (reserved, touched only as used).
    let stack = 1024 * 1024 + code.len() * 8 * 1024;
    stacker::grow(stack, || match rules.parser.as_str() {
        "python" => python::check(rules, code),
        "javascript" => javascript::check(rules, code),
        other => Err(CodeProblem::NoParser(other.to_string())),
    })
}
