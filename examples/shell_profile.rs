//! Runs the shell analyzer in a loop, for profilers that count instructions
//! (`valgrind --tool=callgrind`), where criterion's timing loop would only
//! add noise. The line is benches/gate.rs's 200-byte compound command (or
//! `git status` with `git`), on the shipped policy.
//!
//! ```sh
//! cargo build --profile bench --example shell_profile --features gate
//! valgrind --tool=callgrind target/release/examples/shell_profile 200 1000
//! ```
//!
//! Arguments: `200` or `git`, then the number of iterations (default 1,000).

use std::hint::black_box;

use toolgate::gate::{ShellInput, analyze_shell, config::shipped};

#[path = "../benches/common/shell_line.rs"]
mod shell_line;
use shell_line::command_200;

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "200".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let line = match which.as_str() {
        "git" => "git status".to_string(),
        _ => command_200(),
    };
    let cfg = shipped();
    // Warm the lazily built indexes and caches once.
    let first = analyze_shell(&cfg.shell, &cfg.paths, "/command", ShellInput::Line(&line));
    assert!(first.is_empty(), "{first:?}");
    for _ in 0..n {
        black_box(analyze_shell(
            &cfg.shell,
            &cfg.paths,
            "/command",
            ShellInput::Line(black_box(&line)),
        ));
    }
}
