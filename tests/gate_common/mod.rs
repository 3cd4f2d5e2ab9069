//! Shared helpers for the gate analyzer tests (moved from the prototype).
#![allow(dead_code)]

use toolgate::gate::{
    Action, Finding, GateConfig, PatternScope as ArgRole, PatternSet, ShellInput, analyze_shell,
    analyze_sql, decide,
};

/// The `[gate]` of the shipped default policy.
pub fn config() -> GateConfig {
    toolgate::gate::config::shipped().clone()
}

/// Everything the gate looks at for a shell command line.
pub fn shell_line(cfg: &GateConfig, set: &PatternSet, line: &str) -> Vec<Finding> {
    let mut f = analyze_shell(&cfg.shell, &cfg.paths, "/command", ShellInput::Line(line));
    f.extend(set.scan_as(ArgRole::Shell, "/command", line));
    f
}

/// Everything the gate looks at for a shell argv.
pub fn shell_argv(cfg: &GateConfig, set: &PatternSet, argv: &[String]) -> Vec<Finding> {
    let mut f = analyze_shell(&cfg.shell, &cfg.paths, "/command", ShellInput::Argv(argv));
    for (i, a) in argv.iter().enumerate() {
        f.extend(set.scan_as(ArgRole::Shell, &format!("/command/{i}"), a));
    }
    f
}

/// Everything the gate looks at for SQL.
pub fn sql(cfg: &GateConfig, set: &PatternSet, q: &str, read_only: bool) -> Vec<Finding> {
    let mut f = analyze_sql(&cfg.sql, "/query", q, "", read_only);
    f.extend(set.scan_as(ArgRole::Sql, "/query", q));
    f
}

/// Decision for a shell line.
pub fn line_action(cfg: &GateConfig, set: &PatternSet, line: &str) -> Action {
    decide(&shell_line(cfg, set, line))
}
