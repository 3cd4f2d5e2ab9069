//! The shell's state along a command line, as far as the analysis can
//! know it: the working directory (a few alternatives, or unknown), the
//! directory stack, variables (known text, or unknown), the functions and
//! aliases defined in the line. Each command runs in the state the
//! commands before it leave; subshells, pipeline stages and background
//! jobs work on a copy; where control flow joins (`a || b`, `if`), the
//! states are merged.

use std::collections::HashMap;
use std::rc::Rc;

use brush_parser::ast;

/// A directory, relative to where the line starts (`Rel`), absolute
/// (`Abs`), or under the home directory (`Home`). Components are
/// normalised lexically; `Rel` may start with `..`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    /// Relative to the start directory.
    Rel(Vec<String>),
    /// Absolute.
    Abs(Vec<String>),
    /// Under `~` (or `~user`: the first component is `~user`).
    Home(String, Vec<String>),
}

impl Dir {
    /// The start directory.
    pub fn start() -> Dir {
        Dir::Rel(Vec::new())
    }

    /// The directory or file `path` names from this one (lexically: `..`
    /// pops; `~` and `~user` start under the home directory).
    pub fn join(&self, path: &str) -> Dir {
        let (mut base, rest) = if let Some(r) = path.strip_prefix('/') {
            (Dir::Abs(Vec::new()), r)
        } else if path == "~" || path.starts_with("~/") {
            (
                Dir::Home(String::new(), Vec::new()),
                path.get(2..).unwrap_or(""),
            )
        } else if let Some(t) = path.strip_prefix('~') {
            let (user, r) = t.split_once('/').unwrap_or((t, ""));
            (Dir::Home(user.to_string(), Vec::new()), r)
        } else {
            (self.clone(), path)
        };
        for c in rest.split('/') {
            match c {
                "" | "." => {}
                ".." => base.pop(),
                c => base.push(c),
            }
        }
        base
    }

    /// The directory `comps` name from this one, component by component
    /// (`..` pops; no component starts over at `/` or `~`).
    pub fn join_comps(&self, comps: &[String]) -> Dir {
        let mut d = self.clone();
        for c in comps {
            match c.as_str() {
                "" | "." => {}
                ".." => d.pop(),
                c => d.push(c),
            }
        }
        d
    }

    fn comps(&mut self) -> &mut Vec<String> {
        match self {
            Dir::Rel(c) | Dir::Abs(c) | Dir::Home(_, c) => c,
        }
    }

    fn push(&mut self, c: &str) {
        self.comps().push(c.to_string());
    }

    fn pop(&mut self) {
        match self {
            Dir::Rel(c) => {
                if c.last().is_none_or(|l| l == "..") {
                    c.push("..".into());
                } else {
                    c.pop();
                }
            }
            Dir::Abs(c) => {
                c.pop();
            }
            Dir::Home(_, c) => {
                // Above the home directory stays recorded as `~/..`.
                if c.last().is_none_or(|l| l == "..") {
                    c.push("..".into());
                } else {
                    c.pop();
                }
            }
        }
    }

    /// The path as text: `.`, `a/b`, `../x`, `/etc`, `~`, `~/x`, `~root/x`.
    pub fn render(&self) -> String {
        match self {
            Dir::Rel(c) if c.is_empty() => ".".into(),
            Dir::Rel(c) => c.join("/"),
            Dir::Abs(c) => format!("/{}", c.join("/")),
            Dir::Home(u, c) if c.is_empty() => format!("~{u}"),
            Dir::Home(u, c) => format!("~{u}/{}", c.join("/")),
        }
    }
}

/// Where the shell is: one of a few directories, or unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cwd {
    /// One of these (sorted, deduplicated).
    Known(Vec<Dir>),
    /// Set from something only known at run time.
    Unknown,
}

impl Cwd {
    /// The start directory.
    pub fn start() -> Cwd {
        Cwd::Known(vec![Dir::start()])
    }

    /// Whether merging with itself gives itself: the alternatives are
    /// sorted, distinct and at most `max`.
    pub(super) fn is_merged(&self, max: usize) -> bool {
        match self {
            Cwd::Known(v) => v.len() <= max && v.windows(2).all(|w| w[0] < w[1]),
            Cwd::Unknown => true,
        }
    }

    /// Union, with at most `max` alternatives (more is unknown).
    pub fn merge(&self, other: &Cwd, max: usize) -> Cwd {
        match (self, other) {
            (Cwd::Known(a), Cwd::Known(b)) => {
                let mut v: Vec<Dir> = a.iter().chain(b).cloned().collect();
                v.sort();
                v.dedup();
                if v.len() > max {
                    Cwd::Unknown
                } else {
                    Cwd::Known(v)
                }
            }
            _ => Cwd::Unknown,
        }
    }
}

/// A variable's value as far as known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Var {
    /// Assigned in the line to this text; `exported` when marked for
    /// export in the line.
    Known {
        /// The text.
        value: String,
        /// Exported to the commands the shell runs.
        exported: bool,
    },
    /// One of the file names a glob matches (`for d in crates/*`): the
    /// pattern stands for it (where it lands, but not its exact text).
    Pattern(String),
    /// Unset in the line (`unset X`): expands to nothing.
    Unset,
    /// Anything (assigned from a substitution, read, changed in a loop).
    Unknown,
}

/// The state one command runs in, shared: copies (a subshell, the two
/// outcomes of a command) share it until one of them changes it
/// (`Rc::make_mut`).
pub(super) type St = Rc<State<ast::FunctionBody>>;

/// The state one command runs in, generic over what a function is.
#[derive(Debug, Clone)]
pub struct State<F> {
    /// Working directory.
    pub cwd: Cwd,
    /// `cd -` target.
    pub oldpwd: Option<Cwd>,
    /// `pushd` stack.
    pub stack: Vec<Cwd>,
    /// Variables assigned in the line (others are unknown, from the
    /// environment).
    pub vars: HashMap<String, Var>,
    /// Functions defined in the line.
    pub functions: HashMap<String, Rc<F>>,
    /// Aliases defined in the line.
    pub aliases: Vec<String>,
}

impl<F> State<F> {
    /// The state at the start of a line.
    pub fn new(cwd: Cwd) -> State<F> {
        State {
            cwd,
            oldpwd: None,
            stack: Vec::new(),
            vars: HashMap::new(),
            functions: HashMap::new(),
            aliases: Vec::new(),
        }
    }

    /// Where control flow joins.
    pub fn merge(&self, other: &State<F>, max_cwds: usize) -> State<F> {
        let mut vars = HashMap::new();
        for (k, v) in self.vars.iter().chain(other.vars.iter()) {
            let a = self.vars.get(k);
            let b = other.vars.get(k);
            let merged = if a == b { v.clone() } else { Var::Unknown };
            vars.insert(k.clone(), merged);
        }
        // Unset on one side: `cd -` fails there and the directory stays.
        let oldpwd = match (&self.oldpwd, &other.oldpwd) {
            (Some(a), Some(b)) => Some(a.merge(b, max_cwds)),
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            (None, None) => None,
        };
        let stack = if self.stack == other.stack {
            self.stack.clone()
        } else {
            vec![Cwd::Unknown; self.stack.len().max(other.stack.len())]
        };
        let mut functions = self.functions.clone();
        for (k, f) in &other.functions {
            functions.entry(k.clone()).or_insert_with(|| f.clone());
        }
        let mut aliases = self.aliases.clone();
        for a in &other.aliases {
            if !aliases.contains(a) {
                aliases.push(a.clone());
            }
        }
        State {
            cwd: self.cwd.merge(&other.cwd, max_cwds),
            oldpwd,
            stack,
            vars,
            functions,
            aliases,
        }
    }

    /// The state a child shell starts in (`bash -c`): same directory, only
    /// the variables exported in the line (assigned but not exported ones
    /// come from the environment: unknown), no functions or aliases.
    pub fn child(&self) -> State<F> {
        let vars = self
            .vars
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Var::Known { exported: true, .. } => v.clone(),
                    _ => Var::Unknown,
                };
                (k.clone(), v)
            })
            .collect();
        State {
            cwd: self.cwd.clone(),
            oldpwd: None,
            stack: Vec::new(),
            vars,
            functions: HashMap::new(),
            aliases: Vec::new(),
        }
    }
}

/// Merges two shared states; a state merged with itself is itself (no
/// copy) when [`State::merge`] would give the same.
pub fn merge_shared<F: Clone>(a: &Rc<State<F>>, b: &Rc<State<F>>, max: usize) -> Rc<State<F>> {
    if Rc::ptr_eq(a, b)
        && a.cwd.is_merged(max)
        && a.oldpwd.as_ref().is_none_or(|o| o.is_merged(max))
    {
        return a.clone();
    }
    Rc::new(a.merge(b, max))
}

/// Merges two optional states (a path that cannot be taken is `None`).
pub fn merge_opt<F: Clone>(
    a: Option<Rc<State<F>>>,
    b: Option<Rc<State<F>>>,
    max: usize,
) -> Option<Rc<State<F>>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(merge_shared(&a, &b, max)),
        (a, None) => a,
        (None, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_lexically() {
        let s = Dir::start();
        assert_eq!(s.join("a/b/../c").render(), "a/c");
        assert_eq!(s.join("..").render(), "..");
        assert_eq!(s.join("../..").join("x").render(), "../../x");
        assert_eq!(s.join("/etc").render(), "/etc");
        assert_eq!(s.join("/").render(), "/");
        assert_eq!(s.join("/..").render(), "/");
        assert_eq!(s.join("~").render(), "~");
        assert_eq!(s.join("~/x/..").render(), "~");
        assert_eq!(s.join("~root/x").render(), "~root/x");
        assert_eq!(Dir::Abs(vec!["etc".into()]).join("*").render(), "/etc/*");
        assert_eq!(s.join("a").join("..").render(), ".");
    }

    #[test]
    fn merges() {
        let a = Cwd::Known(vec![Dir::start()]);
        let b = Cwd::Known(vec![Dir::start().join("x")]);
        assert_eq!(
            a.merge(&b, 4),
            Cwd::Known(vec![Dir::start(), Dir::start().join("x")])
        );
        assert_eq!(a.merge(&a, 4), a);
        assert_eq!(a.merge(&b, 1), Cwd::Unknown);
    }
}
