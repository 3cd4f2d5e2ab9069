//! Writes a synthetic OpenAI-format tool file (the large-catalog benchmark's
//! input, `benches/common/catalog.rs`), for timing the release binary on it:
//!
//! ```sh
//! cargo run --release --example gen_tools -- 10000 target/tools-10000.json
//! /usr/bin/time -v target/release/toolgate check --policy policies/selection.toml \
//!     --tags EMPTY_DIR --tools target/tools-10000.json
//! ```

#[path = "../benches/common/catalog.rs"]
mod catalog;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or_else(|| {
        eprintln!("usage: gen_tools N OUT.json [SEED]");
        std::process::exit(2)
    });
    let out = args.next().unwrap_or_else(|| format!("tools-{n}.json"));
    let seed = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    if let Err(e) = std::fs::write(&out, catalog::openai_tools(n, seed)) {
        eprintln!("cannot write {out}: {e}");
        std::process::exit(1);
    }
}
