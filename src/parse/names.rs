//! Limits on the names a tag file gives its tools.
//!
//! MCP (specification 2025-11-25, "Tool names") says a tool's name SHOULD be
//! 1 to 128 characters. A tag file's name is the server's name, a dot and
//! the server's tool name (`sqlite.read_query`), so it may be up to twice
//! that: [`MAX_TAG_NAME_CHARS`]. A longer name is a mistake (a pasted
//! description, a generated file gone wrong) and would be echoed whole by
//! every command that lists tools.

use crate::parse::policy::Sp;
use crate::parse::reader::Reader;

/// The longest tool name or alias a tag file may give, in characters
/// (Unicode scalar values): twice MCP's 128, for the server prefix.
pub const MAX_TAG_NAME_CHARS: usize = 256;

/// Records an error at `name`'s span when it is longer than
/// [`MAX_TAG_NAME_CHARS`]; `what` is `name` or `alias`. The name is echoed
/// clipped ([`crate::diag::echo`]).
pub fn check_length(r: &Reader, name: &Sp<String>, what: &str) {
    let n = name.value.chars().count();
    if n > MAX_TAG_NAME_CHARS {
        r.error(
            crate::diag::ErrorKind::OutOfRange,
            name.span.clone(),
            format!(
                "tool {what} `{}` is {n} characters long; a tag file's names are at most {MAX_TAG_NAME_CHARS} (MCP: a tool name SHOULD be 1 to 128 characters, plus the server prefix)",
                crate::diag::echo(&name.value)
            ),
        );
    }
}
