//! `[[gate.shell.written_code]]`: files a command runs as code, for the
//! "written now, run later" check (docs/gate.md, "Code written now, run
//! later"). When a part of a command line writes one of these files and a
//! later part runs a command that runs it, the file's content is judged
//! as code of its kind, or asked about when it cannot be.

use serde::Deserialize;

use super::types::ConfigRegex;

/// How the content of a written file is judged when it is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WrittenContent {
    /// A shell script: walked as shell code (as `bash -c` would run it).
    Shell,
    /// Python: checked against `[gate.shell.code.python]`.
    Python,
    /// JavaScript: checked against `[gate.shell.code.javascript]`.
    Javascript,
    /// A `package.json`: every string of its `scripts` object is a shell
    /// command line (npm, yarn, pnpm and bun run them, with their `pre`
    /// and `post` hooks); JSON that does not parse asks.
    PackageJson,
    /// A script whose language is named by its `#!` line (`sh`, `bash`,
    /// `python3`, `node`, through `/usr/bin/env` or not); without one, a
    /// shell script (the shell runs a file without `#!` itself).
    Shebang,
    /// No reader: the file always asks (Makefiles, `build.rs`, `.npmrc`,
    /// git configuration).
    Opaque,
}

/// One `[[gate.shell.written_code]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrittenCode {
    /// Commands that run the files (`npm`, `make`, `git commit`): the
    /// command's name or `NAME SUB`, as the effect model names it; a name
    /// matches that command whatever its subcommand (`npm` matches `npm
    /// test`).
    pub commands: Vec<String>,
    /// Regex on the written file's absolute path (after the line's `cd`s
    /// and links): the files those commands run as code.
    pub files: ConfigRegex,
    /// How the content is judged.
    pub content: WrittenContent,
}

/// One `[[gate.shell.written_runners]]` entry: where a command that runs
/// project files (a `[[gate.shell.written_code]]` command) works, read
/// from its own options, so that the "written now, run later" check
/// looks at the project it runs (`git clone URL && make -C repo`), not
/// only at the directory the line is in.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrittenRunner {
    /// The commands, named as in `[[gate.shell.written_code]]` (`make`,
    /// `npm`, `cargo`); a name matches that command whatever its
    /// subcommand.
    pub commands: Vec<String>,
    /// Options whose value is the directory the command works in (`make
    /// -C DIR`, `npm --prefix DIR`), relative to where it starts; several
    /// compose as make's do (`-C a -C b` is `a/b`). Spelled `-C DIR`,
    /// `-CDIR`, `--directory DIR` or `--directory=DIR`.
    #[serde(default)]
    pub directory_options: Vec<String>,
    /// Options whose value is a file the command reads as its project's
    /// code (`make -f`, `just --justfile`, `cargo --manifest-path`),
    /// relative to where it starts or to its directory option's value:
    /// the file is judged as code no reader checks when the line wrote
    /// it, and asks when the line wrote a directory that holds it.
    #[serde(default)]
    pub file_options: Vec<String>,
    /// The operands are paths inside the project the command runs
    /// (`pytest repo/`, `pip install ./repo`): each is checked like the
    /// directory.
    #[serde(default)]
    pub path_operands: bool,
    /// The command collects code from every directory under the ones it
    /// works in, at any depth (pytest without operands imports every
    /// `conftest.py` and test file under its directory; `make` reads only
    /// its own Makefile, `cargo test` only its own manifest): a path
    /// under one of them that the line writes before as a whole
    /// directory tree (`[gate.shell] writes_trees`: `git clone URL`,
    /// `tar x`, `cp -r`) asks, even though the command does not work in
    /// it. With `path_operands` and operands given, the operands are the
    /// directories it collects from.
    #[serde(default)]
    pub collects_recursively: bool,
    /// Directory options (also listed in `directory_options`) whose value
    /// is where a runner that collects recursively collects from, instead
    /// of the directory it starts in (`python -m unittest discover -s
    /// tests` imports test files under `tests/` only): given one, a tree
    /// written elsewhere below the start does not ask.
    #[serde(default)]
    pub collect_options: Vec<String>,
    /// Arguments any of which make the command collect from every
    /// directory under its own, as with `collects_recursively`, because
    /// the projects it then runs are named in a file the line does not
    /// show (`npm test --workspaces`, `cargo test --workspace`, `pnpm
    /// -r`: the workspace members of `package.json` or `Cargo.toml`). An
    /// option matches as written or with `=VALUE` (`--workspace=a`).
    #[serde(default)]
    pub recursive_when: Vec<String>,
    /// With `path_operands`, an operand ending in this suffix names every
    /// directory under the part before it (`go test ./...`: `.` and all
    /// below; `./pkg/...`: `pkg` and all below), collected as with
    /// `collects_recursively`.
    #[serde(default)]
    pub recursive_operands: Option<String>,
}
