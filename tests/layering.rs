//! The layering of `src/`: dependencies between top-level modules point one
//! way, from policy text to the edges (docs/architecture.md draws the graph).
//!
//! A module's references are every textual `crate::<name>` in its files,
//! comments and doc links included (a doc link to a module above is a
//! dependency of the reader), and every name of a grouped `crate::{a, b}`.
//! `src/lib.rs` and `src/main.rs` only declare and re-export, and are not
//! scanned. A module may reference itself and the modules below it; a
//! reference to a module above it, or to a name that is not a top-level
//! module (a root re-export such as `crate::Plan` hides the real module), is a
//! failure reported as file:line. No file of `src/`, `tests/` or `benches/`
//! may be longer than [`MAX_LINES`].

use std::path::{Path, PathBuf};

/// The top-level modules of `src/`, bottom first. A module may reference
/// only the modules listed before it.
const LAYERS: &[&str] = &[
    "diag",     // diagnostics, spans, LoadError
    "defaults", // the shipped policy and tool tags, embedded text
    "datafile", // reading a file a policy names: regular files only, capped
    "context",  // SessionContext, UsageStats, Session: plain data
    "embed",    // the transformer bi-encoder and its on-disk embedding cache
    "parse",    // policy and tag text -> PolicySource, ToolSpec
    "text",     // keyword analyzer, BM25 index
    "plan",     // the compiled, immutable plan (formula, conditions, gate data)
    "input",    // JSON input of eval/explain and of policy examples
    "eval",     // activation: Plan::evaluate
    "gate",     // the call gate runtime
    "compile",  // sources -> plan, then the policy's examples run on it
    "fuzz",     // proptest strategies and the bound checker
    "load",     // files and embedded defaults -> plan
    "reload",   // watching files, swapping plans
    "replay",   // traces, A/B comparison, weight fit
    "mcp",      // the MCP proxy
    "cli",      // the command-line tool (binary only)
];

/// Longest source file accepted, in lines.
const MAX_LINES: usize = 1200;

/// A `.rs` file: its path relative to the directory scanned, and its text.
struct File {
    path: String,
    text: String,
}

fn rust_files(dir: &Path) -> Vec<File> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<File>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).unwrap();
                let path = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                let text =
                    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                out.push(File { path, text });
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The top-level module a file of `src/` belongs to (`plan/gate/mod.rs` ->
/// `plan`, `load.rs` -> `load`); `None` for the crate roots.
fn top_module(path: &str) -> Option<&str> {
    match path.split_once('/') {
        Some((dir, _)) => Some(dir),
        None if path == "lib.rs" || path == "main.rs" => None,
        None => path.strip_suffix(".rs"),
    }
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Every `crate::<name>` of `text` as (1-based line, name); a grouped
/// `crate::{a::x, b}` gives `a` and `b`.
fn references(text: &str) -> Vec<(usize, String)> {
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level items of the group, across lines.
            let mut depth = 1;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if item_start && depth == 1 && !c.is_whitespace() => {
                        item_start = false;
                        let name = ident_at(&group[i..]);
                        if !name.is_empty() && name != "self" {
                            out.push((line_of(at), name.to_string()));
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident_at(rest);
            if !name.is_empty() {
                out.push((line_of(at), name.to_string()));
            }
        }
    }
    out
}

/// Layering failures of `files` (paths relative to `src/`), as
/// `src/<file>:<line>: <why>`.
fn layering_failures(files: &[File], layers: &[&str]) -> Vec<String> {
    let rank = |m: &str| layers.iter().position(|l| *l == m);
    let mut out = Vec::new();
    for f in files {
        let Some(module) = top_module(&f.path) else {
            continue;
        };
        let Some(own) = rank(module) else {
            out.push(format!(
                "src/{}: top-level module `{module}` is not in the layer order (tests/layering.rs LAYERS)",
                f.path
            ));
            continue;
        };
        for (line, name) in references(&f.text) {
            match rank(&name) {
                Some(r) if r <= own => {}
                Some(_) => out.push(format!(
                    "src/{}:{line}: `{module}` references `crate::{name}`, which is above it in the layer order",
                    f.path
                )),
                None => out.push(format!(
                    "src/{}:{line}: `{module}` references `crate::{name}`, which is not a top-level module (name the module that defines it)",
                    f.path
                )),
            }
        }
    }
    out
}

/// Files of `files` longer than `max` lines, as `<dir>/<file>: N lines`.
fn long_files(dir: &str, files: &[File], max: usize) -> Vec<String> {
    files
        .iter()
        .filter_map(|f| {
            let n = f.text.lines().count();
            (n > max).then(|| format!("{dir}/{}: {n} lines (at most {max})", f.path))
        })
        .collect()
}

#[test]
fn no_module_references_one_above_it() {
    let files = rust_files(&repo().join("src"));
    assert!(files.len() > 50, "src/ was not found");
    let failures = layering_failures(&files, LAYERS);
    assert!(
        failures.is_empty(),
        "layering broken (order, bottom first: {}):\n{}",
        LAYERS.join(" < "),
        failures.join("\n")
    );
}

#[test]
fn every_layer_is_a_module_of_src() {
    let files = rust_files(&repo().join("src"));
    for layer in LAYERS {
        assert!(
            files.iter().any(|f| top_module(&f.path) == Some(*layer)),
            "LAYERS names `{layer}`, which is not a module of src/"
        );
    }
}

#[test]
fn no_source_file_is_too_long() {
    let mut failures = Vec::new();
    for dir in ["src", "tests", "benches"] {
        failures.extend(long_files(dir, &rust_files(&repo().join(dir)), MAX_LINES));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn file(path: &str, text: &str) -> File {
    File {
        path: path.to_string(),
        text: text.to_string(),
    }
}

#[test]
fn the_check_finds_references_however_written() {
    let text = "use crate::plan::Plan;\n/// See [`x`](crate::eval::x).\nuse crate::{\n    diag::Sink,\n    parse::{a, b},\n    self,\n};\nlet g = $crate::gate::check;\n";
    let refs: Vec<(usize, String)> = references(text);
    let names: Vec<(usize, &str)> = refs.iter().map(|(l, n)| (*l, n.as_str())).collect();
    assert_eq!(
        names,
        [
            (1, "plan"),
            (2, "eval"),
            (3, "diag"),
            (3, "parse"),
            (8, "gate")
        ]
    );
}

#[test]
fn the_check_fails_on_an_upward_reference_with_its_location() {
    let layers = ["low", "mid", "high"];
    let files = [
        file("mid/mod.rs", "use crate::low::X;\nuse crate::mid::Y;\n"),
        file(
            "low.rs",
            "//! Built by [`crate::high::build`].\n\nuse crate::mid::Z;\n",
        ),
        file("high.rs", "use crate::{low::X, mid::Y};\n"),
        file("lib.rs", "pub use crate::high::build;\n"),
    ];
    let failures = layering_failures(&files, &layers);
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(failures[0].starts_with("src/low.rs:1: `low` references `crate::high`"));
    assert!(failures[1].starts_with("src/low.rs:3: `low` references `crate::mid`"));
}

#[test]
fn the_check_fails_on_unknown_modules() {
    let layers = ["low", "high"];
    let files = [
        file("high.rs", "use crate::Plan;\n"),
        file("stray/mod.rs", "fn f() {}\n"),
    ];
    let failures = layering_failures(&files, &layers);
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(failures[0].contains(
        "src/high.rs:1: `high` references `crate::Plan`, which is not a top-level module"
    ));
    assert!(
        failures[1]
            .contains("src/stray/mod.rs: top-level module `stray` is not in the layer order")
    );
}

#[test]
fn the_check_fails_on_a_long_file() {
    let files = [
        file("ok.rs", &"x\n".repeat(MAX_LINES)),
        file("big.rs", &"x\n".repeat(MAX_LINES + 1)),
    ];
    assert_eq!(
        long_files("src", &files, MAX_LINES),
        [format!(
            "src/big.rs: {} lines (at most {MAX_LINES})",
            MAX_LINES + 1
        )]
    );
}
