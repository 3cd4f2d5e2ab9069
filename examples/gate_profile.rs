//! Runs the gate's benchmark calls (benches/gate.rs) in a loop, for
//! profilers that count instructions or allocations (`valgrind
//! --tool=callgrind`, `valgrind --tool=dhat`), where criterion's timing loop
//! would only add noise. Run it from the repository root, as `cargo bench`
//! runs the bench, so the 200-byte line's paths (`target/tmp`, ...) are the
//! same.
//!
//! ```sh
//! cargo build --release --example gate_profile
//! valgrind --tool=callgrind target/release/examples/gate_profile full 1000
//! ```
//!
//! Arguments: what to run, then the number of iterations (default 1,000):
//! `full` (the full check of the 200-byte shell line, `shell.run_command`),
//! `shell` (the shell analyzer alone on that line), `plain` (the full check
//! of `time.convert_time` with no shell, SQL or path argument). One call is
//! made before the loop, so lazily built indexes and caches are warm; the
//! cost per call is the difference between two iteration counts.

use std::hint::black_box;

use serde_json::json;
use toolgate::gate::{Action, ShellInput, analyze_shell, check_call, config::shipped};
use toolgate::load::{Sources, load_plan};

#[path = "../benches/common/shell_line.rs"]
mod shell_line;
use shell_line::command_200;

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "full".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let plan = load_plan(&Sources::default()).expect("the shipped policy loads");
    let line = command_200();
    match which.as_str() {
        "full" | "plain" => {
            let (tool, call) = if which == "full" {
                ("shell.run_command", json!({ "command": line }))
            } else {
                (
                    "time.convert_time",
                    json!({"source_timezone": "Europe/Berlin", "time": "16:30", "target_timezone": "Asia/Tokyo"}),
                )
            };
            let first = check_call(&plan, tool, call.clone());
            assert_eq!(first.decision, Action::Allow, "{}", first.message);
            for _ in 0..n {
                black_box(check_call(&plan, tool, black_box(call.clone())));
            }
        }
        "shell" => {
            let cfg = shipped();
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
        other => {
            eprintln!("gate_profile: unknown case `{other}` (full, shell or plain)");
            std::process::exit(2);
        }
    }
}
