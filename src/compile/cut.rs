//! The one sign of a policy file cut short that survives a valid parse: it
//! does not end with a newline (issue 29). Most cuts (a partial copy,
//! `head -c N`) leave invalid TOML or drop a required key, and the load
//! fails at the cut; a cut inside a comment, or after a complete value on
//! its line, still reads as a valid policy whose later sections are left
//! out. Nothing in such a file tells it from a complete one, except that
//! text files (and every file `toolgate` writes or ships) end with a
//! newline. A warning, not an error: some editors save without one.

use crate::diag::{Diagnostic, ErrorKind};
use crate::parse::policy::PolicySource;

/// The warning, at the end of the file, when the policy's text does not
/// end with a newline; `None` otherwise (and for the embedded defaults,
/// which do).
pub(super) fn no_final_newline(policy: &PolicySource) -> Option<String> {
    let text = &policy.file.text;
    if text.is_empty() || text.ends_with('\n') {
        return None;
    }
    let end = text.len();
    let d = Diagnostic::at(
        ErrorKind::Syntax,
        &policy.file,
        end..end,
        "the file does not end with a newline: if it was cut short, what followed the cut is missing (keys left out of [gate] take their shipped values, left-out [[examples]] are not run)",
    )
    .with_help("end the file with a newline once it is complete");
    Some(d.to_string())
}
