//! Why inline code is not harmless; the rules themselves are policy data
//! ([`CodeRules`]).

pub use crate::plan::gate::code::CodeRules;

/// Why inline code is not harmless.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeProblem {
    /// The code does not parse.
    Parse(String),
    /// Over `max_bytes` or `max_depth`.
    TooComplex(String),
    /// Uses something outside the harmless subset (one entry per use,
    /// e.g. "`os.system`").
    Uses(Vec<String>),
    /// The policy names no parser this build has for the language.
    NoParser(String),
}

impl std::fmt::Display for CodeProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CodeProblem::Parse(e) => write!(f, "the code does not parse ({e})"),
            CodeProblem::TooComplex(e) => write!(f, "the code is too complex to check ({e})"),
            CodeProblem::Uses(u) => {
                let shown: Vec<&str> = u.iter().take(4).map(String::as_str).collect();
                write!(f, "the code uses {}", shown.join(", "))?;
                if u.len() > 4 {
                    write!(f, ", {}", crate::diag::more(u.len() - 4))?;
                }
                Ok(())
            }
            CodeProblem::NoParser(_) => f.write_str("no parser checks code in this language"),
        }
    }
}
