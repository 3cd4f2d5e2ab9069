//! Writes a synthetic trace (docs/trace-format.md) of `N` tool calls over a
//! given catalog, for the streamed replay, compare and fit benchmarks
//! (docs/performance.md, "Replay, compare and fit at 1,000,000 calls"):
//!
//! ```sh
//! cargo run --release --example gen_tools -- 1000 target/tools-1000.json
//! cargo run --release --example gen_trace -- 1000000 target/tools-1000.json \
//!     target/trace-1m.jsonl 7 8
//! /usr/bin/time -v target/release/toolgate replay --policy policies/selection.toml \
//!     --tools target/tools-1000.json --trace target/trace-1m.jsonl > /dev/null
//! ```
//!
//! Arguments: `N TOOLS.json OUT.jsonl [SEED=7] [OPEN=8]`. `TOOLS.json` is an
//! OpenAI tools array or an MCP `tools/list` result (the names are read).
//! Sessions have realistic lengths: calls per session from a geometric
//! distribution with mean 40 (1 to 400), a user message before about one call
//! in four (its text uses words of the next called tool's name, so keyword
//! features carry signal), a `context` line opening each session, 3–60 s
//! between lines. `OPEN` sessions are open at once and their lines interleave
//! (1: one session after another). The same arguments write the same bytes.

use std::io::Write;

#[path = "../benches/common/catalog.rs"]
#[allow(dead_code)]
pub mod catalog;
use catalog::{Rng, WORDS};

/// The tool names of an OpenAI tools array or an MCP `tools/list` result.
pub fn tool_names(text: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(text).expect("TOOLS.json is JSON");
    let list = v
        .get("tools")
        .and_then(|t| t.as_array())
        .or_else(|| v.as_array())
        .expect("an array of tools, or {\"tools\": [...]}");
    list.iter()
        .filter_map(|t| {
            t.pointer("/function/name")
                .or_else(|| t.get("name"))
                .and_then(|n| n.as_str())
                .map(String::from)
        })
        .collect()
}

struct Open {
    id: usize,
    left: usize,
    t: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: gen_trace N TOOLS.json OUT.jsonl [SEED] [OPEN]");
        std::process::exit(2);
    }
    let n: usize = args[0].parse().expect("N is a number");
    let tools = tool_names(&std::fs::read_to_string(&args[1]).expect("TOOLS.json reads"));
    assert!(!tools.is_empty(), "no tools in {}", args[1]);
    let seed = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(7);
    let width: usize = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(8).max(1);
    let (written, sessions) = write_trace(n, &tools, std::path::Path::new(&args[2]), seed, width);
    eprintln!("{written} calls in {sessions} sessions ({width} open at once)");
}

/// Writes the trace of `n` calls over the tool names `tools` to `path`
/// (see the file's documentation; `width` sessions open at once). Returns
/// the calls and sessions written. Also used by `benches/scale.rs`.
pub fn write_trace(
    n: usize,
    tools: &[String],
    path: &std::path::Path,
    seed: u64,
    width: usize,
) -> (usize, usize) {
    let width = width.max(1);
    let stages = [
        "exploration",
        "implementation",
        "debugging",
        "documentation",
    ];
    let mut r = Rng(seed);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("OUT opens"));
    let mut open: Vec<Open> = Vec::new();
    let (mut written, mut next_id) = (0usize, 0usize);
    while written < n || !open.is_empty() {
        while open.len() < width && written + open.iter().map(|s| s.left).sum::<usize>() < n {
            // Geometric length, mean 40, cut to 1..=400.
            let mut len = 1;
            while len < 400 && r.next(40) != 0 {
                len += 1;
            }
            let room = n - written - open.iter().map(|s| s.left).sum::<usize>();
            let s = Open {
                id: next_id,
                left: len.min(room),
                t: r.next(3600) as f64,
            };
            next_id += 1;
            writeln!(
                out,
                "{{\"session\":\"g{}\",\"t\":{},\"event\":\"context\",\"stage\":\"{}\"}}",
                s.id,
                s.t,
                stages[r.next(stages.len())]
            )
            .unwrap();
            open.push(s);
        }
        if open.is_empty() {
            break;
        }
        let k = r.next(open.len());
        let s = &mut open[k];
        let tool = &tools[r.next(tools.len())];
        if r.next(4) == 0 {
            s.t += (3 + r.next(58)) as f64;
            let words: Vec<&str> = tool
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() > 2 && !w.chars().all(|c| c.is_ascii_digit()))
                .collect();
            let w = |i: usize| words.get(i).copied().unwrap_or("it");
            writeln!(
                out,
                "{{\"session\":\"g{}\",\"t\":{},\"event\":\"user_message\",\"text\":\"please {} the {} for my {}\"}}",
                s.id,
                s.t,
                w(1),
                w(2),
                WORDS[r.next(WORDS.len())]
            )
            .unwrap();
        }
        s.t += (3 + r.next(58)) as f64;
        writeln!(
            out,
            "{{\"session\":\"g{}\",\"t\":{},\"event\":\"tool_call\",\"tool\":\"{tool}\"}}",
            s.id, s.t
        )
        .unwrap();
        written += 1;
        s.left -= 1;
        if s.left == 0 {
            open.swap_remove(k);
        }
    }
    out.flush().unwrap();
    (written, next_id)
}
