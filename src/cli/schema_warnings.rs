//! Warnings about keywords of the tools' JSON Schemas that no validator
//! reads (`propertes`, `requird`; issue 29), for `check` (every tool) and
//! `guard` (the tool called). A warning, never an error: JSON Schema
//! allows unknown keywords ([`toolgate::parse::schema_keywords`]).

use toolgate::plan::Plan;

/// At most this many warnings are listed; the rest are counted
/// ("… N more").
const MAX_WARNINGS: usize = 20;

/// One warning per unknown keyword of the schemas of `tools` (indices into
/// `plan.tools`): `tool `d`: inputSchema keyword `requird` at /properties/n
/// is not JSON Schema (did you mean `required`?); validators ignore it`,
/// then "… N more" past [`MAX_WARNINGS`].
pub fn warnings(plan: &Plan, tools: impl IntoIterator<Item = usize>) -> Vec<String> {
    let mut out = Vec::new();
    let mut more = 0;
    // Equal schemas are read once (a generated catalog repeats them): the
    // first tool that has one is named.
    let mut seen = std::collections::HashSet::new();
    for i in tools {
        let Some(t) = plan.tools.get(i) else { continue };
        if !seen.insert(t.input_schema.hash64()) {
            continue;
        }
        let schema = t.input_schema.value();
        for k in toolgate::parse::schema_keywords::unknown_keywords(&schema, 10_000) {
            if out.len() >= MAX_WARNINGS {
                more += 1;
                continue;
            }
            let at = if k.at.is_empty() {
                String::new()
            } else {
                format!(" at {}", toolgate::diag::echo(&k.at))
            };
            let hint = k
                .suggestion
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            out.push(format!(
                "tool `{}`: inputSchema keyword `{}`{at} is not JSON Schema 2020-12{hint}; validators ignore it, so it checks nothing",
                toolgate::diag::echo(&t.name),
                toolgate::diag::echo(&k.keyword)
            ));
        }
    }
    if more > 0 {
        out.push(format!(
            "inputSchema keywords: {}",
            toolgate::diag::more(more)
        ));
    }
    out
}
