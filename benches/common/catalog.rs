//! Synthetic OpenAI-format tool files for the large-catalog benchmarks
//! (issue 14): `n` tools, each with an 8-word description and 1–4 string
//! parameters (named and described from a 50-word vocabulary, so most
//! schemas are distinct), drawn by a fixed LCG so that every run and the
//! `gen_tools` example produce the same bytes.
//!
//! Shared by `benches/catalog.rs` and `examples/gen_tools.rs` (`#[path]`).

/// The vocabulary of names and descriptions.
pub const WORDS: &[&str] = &[
    "read",
    "write",
    "file",
    "query",
    "table",
    "user",
    "account",
    "weather",
    "forecast",
    "city",
    "stock",
    "price",
    "order",
    "invoice",
    "email",
    "message",
    "calendar",
    "event",
    "flight",
    "hotel",
    "booking",
    "search",
    "web",
    "image",
    "resize",
    "convert",
    "currency",
    "translate",
    "text",
    "summary",
    "repository",
    "commit",
    "branch",
    "issue",
    "ticket",
    "deploy",
    "server",
    "log",
    "metric",
    "alert",
    "payment",
    "customer",
    "product",
    "inventory",
    "shipment",
    "route",
    "map",
    "distance",
    "time",
    "zone",
];

/// A 64-bit LCG (Knuth's constants).
pub struct Rng(pub u64);

impl Rng {
    /// A value in `0..m`.
    pub fn next(&mut self, m: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % m
    }
}

/// An OpenAI `tools` array of `n` tools (`svcK.word_word_i` names), as JSON
/// text; `seed` picks the draw.
pub fn openai_tools(n: usize, seed: u64) -> String {
    let mut r = Rng(seed);
    let mut tools = Vec::with_capacity(n);
    for i in 0..n {
        let words: Vec<&str> = (0..8).map(|_| WORDS[r.next(WORDS.len())]).collect();
        let name = format!("svc{}.{}_{}_{i}", i % 37, words[0], words[1]);
        let props: serde_json::Map<String, serde_json::Value> = (0..1 + r.next(4))
            .map(|k| {
                (
                    format!("{}_{k}", words[2 + k]),
                    serde_json::json!({
                        "type": "string",
                        "description": format!("the {} to {}", words[k], words[k + 1])
                    }),
                )
            })
            .collect();
        let required: Vec<&String> = props.keys().take(1).collect();
        tools.push(serde_json::json!({"type": "function", "function": {
            "name": name,
            "description": words.join(" "),
            "parameters": {"type": "object", "properties": props, "required": required}
        }}));
    }
    serde_json::Value::Array(tools).to_string()
}
