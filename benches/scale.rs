//! The 1,000,000-call benchmark of `toolgate replay`, `compare` and `fit`
//! (issue 28; docs/performance.md, "Replay, compare and fit at 1,000,000
//! calls"): a bench binary, not criterion, since one run takes minutes.
//!
//! ```sh
//! cargo bench --bench scale                  # 1,000,000 calls over 1,000 tools
//! cargo bench --bench scale -- 100000 1000   # CALLS TOOLS
//! ```
//!
//! It writes the synthetic catalog (`benches/common/catalog.rs`, seed 7) and
//! the trace (`examples/gen_trace.rs`: seed 7, 8 sessions open at once) to
//! `target/scale-bench/`, then runs the release binary on it: `replay` under
//! `policies/selection.toml`, `compare` default vs selection, and `fit` of
//! the selection policy, each with its output to a file, under
//! `/usr/bin/time -v` when that exists (wall time and max RSS), else timed
//! alone. It prints one line per command, and fit's sampling line.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "../examples/gen_trace.rs"]
#[allow(dead_code)]
mod gen_trace;

use gen_trace::catalog;

/// Runs `args` of the toolgate binary with stdout to `out`: wall seconds
/// and max RSS in MB (`None` without `/usr/bin/time`). `refusal_ok`: exit
/// status 1 is a result, not a failure (`fit` that finds a declared
/// property failing under the fitted weights does the whole fit, prints
/// its report, and does not write the policy: exit 1).
fn run(args: &[&str], out: &Path, refusal_ok: bool) -> (f64, Option<f64>) {
    let bin = env!("CARGO_BIN_EXE_toolgate");
    let time = Path::new("/usr/bin/time");
    let stdout = std::fs::File::create(out).expect("the output file opens");
    let start = Instant::now();
    let o = if time.exists() {
        Command::new(time)
            .arg("-v")
            .arg(bin)
            .args(args)
            .stdout(stdout)
            .stderr(Stdio::piped())
            .output()
    } else {
        Command::new(bin)
            .args(args)
            .stdout(stdout)
            .stderr(Stdio::piped())
            .output()
    }
    .expect("the binary runs");
    let wall = start.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() || (refusal_ok && o.status.code() == Some(1)),
        "toolgate {args:?} failed: {err}"
    );
    let rss = err
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|kb| kb / 1000.0);
    (wall, rss)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let calls: usize = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let tools: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/scale-bench");
    std::fs::create_dir_all(&dir).expect("target/scale-bench is writable");
    let tools_file = dir.join(format!("tools-{tools}.json"));
    let trace = dir.join(format!("trace-{calls}-{tools}.jsonl"));
    if !tools_file.exists() {
        std::fs::write(&tools_file, catalog::openai_tools(tools, 7)).expect("tools written");
    }
    if !trace.exists() {
        let text = std::fs::read_to_string(&tools_file).expect("tools read");
        let names = gen_trace::tool_names(&text);
        let t = Instant::now();
        let (n, s) = gen_trace::write_trace(calls, &names, &trace, 7, 8);
        eprintln!(
            "wrote {} ({n} calls, {s} sessions) in {:.1} s",
            trace.display(),
            t.elapsed().as_secs_f64()
        );
    }
    let (tr, tf) = (trace.to_str().unwrap(), tools_file.to_str().unwrap());
    // --tools without --tags: the catalog is the tools file alone.
    let cat = ["--tools", tf, "--trace", tr];
    let runs: [(&str, Vec<&str>); 3] = [
        (
            "replay",
            [&["replay", "--policy", "policies/selection.toml"][..], &cat].concat(),
        ),
        (
            "compare",
            [
                &[
                    "compare",
                    "--policy-a",
                    "policies/default.toml",
                    "--policy-b",
                    "policies/selection.toml",
                ][..],
                &cat,
            ]
            .concat(),
        ),
        (
            "fit",
            [&["fit", "--policy", "policies/selection.toml"][..], &cat].concat(),
        ),
    ];
    println!("{calls} calls over {tools} tools ({})", trace.display());
    for (name, args) in &runs {
        let out = dir.join(format!("{name}-{calls}-{tools}.out"));
        let (wall, rss) = run(args, &out, *name == "fit");
        let rss = rss
            .map(|r| format!("{r:.1} MB"))
            .unwrap_or_else(|| "- (no /usr/bin/time)".into());
        println!("  {name:<8} wall {wall:>7.1} s   max RSS {rss}");
        if *name == "fit" {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            for l in text.lines().take(2) {
                println!("    {l}");
            }
        }
    }
}
