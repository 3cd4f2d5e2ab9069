//! `[discovery]` of a policy: how a host that serves tools to an MCP client
//! (the MCP proxy) lets the client *discover* them when the client sends no
//! context of its own.
//!
//! Real MCP clients never say what the user asked. The proxy therefore offers
//! a search tool (`find_tools`): its query is handled as a user message of
//! the session, the plan is evaluated, and the tools that pass the policy's
//! threshold are returned and listed ("found"). This section sets what the
//! policy decides about that flow; every key is optional:
//!
//! | key | type | default | meaning |
//! | --- | --- | --- | --- |
//! | `limit` | integer ≥ 1 | `[activation] max_active`, else no limit | tools a search returns when the call gives no `limit` |
//! | `expiry_seconds` | number ≥ 0 | 0 (never) | a found tool leaves the list this many seconds after it was found or last called |
//! | `expiry_calls` | integer ≥ 0 | 0 (never) | a found tool leaves the list after this many calls of *other* tools since it was found or last called |
//! | `intent_from_calls` | bool | false | the string arguments of every forwarded call feed the session's intent keywords (through `[keywords]`) |
//! | `on_definition_change` | `"ask"`, `"deny"`, `"allow"` | `"ask"` | what happens to a downstream tool whose description or `inputSchema` changed since it was first seen (pinned) |
//!
//! A found tool stays listed until a later search that finds tools replaces
//! the found set, or one of the expiries moves it out; a tool the session
//! calls joins the found set the same way (a search that finds nothing
//! leaves it as it was). Which tools a search returns is never a
//! number of its own: a tool must reach the policy's (effective) activation
//! threshold, and the best `limit` of those are returned.

use crate::diag::ErrorKind;
use crate::parse::reader::Table;

/// What happens to a tool whose definition changed since it was pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DefinitionChange {
    /// Withhold the tool (not listed, not found) until the user confirms the
    /// new definition through elicitation on its next call.
    #[default]
    Ask,
    /// Never expose it again (calls are refused) while the definition differs.
    Deny,
    /// Accept the new definition (re-pin it); the change is still audited.
    Allow,
}

impl DefinitionChange {
    /// `ask`, `deny` or `allow`.
    pub fn label(self) -> &'static str {
        match self {
            DefinitionChange::Ask => "ask",
            DefinitionChange::Deny => "deny",
            DefinitionChange::Allow => "allow",
        }
    }
}

/// `[discovery]` (see the module docs for each key's meaning and default).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiscoveryParams {
    /// Default number of tools a search returns; `None`: `[activation]
    /// max_active`, else every tool above the threshold.
    pub limit: Option<usize>,
    /// Seconds after which a found tool that was neither found again nor
    /// called leaves the list; `None` = never.
    pub expiry_seconds: Option<f64>,
    /// Calls of other tools after which a found tool that was not called
    /// leaves the list; `None` = never.
    pub expiry_calls: Option<u64>,
    /// Whether the string arguments of forwarded calls feed the intent keywords.
    pub intent_from_calls: bool,
    /// What happens to a tool whose definition changed.
    pub on_definition_change: DefinitionChange,
}

/// Reads `[discovery]` (absent: every default). Problems are reported to the
/// table's reader with their spans.
pub fn read_discovery(t: Option<Table<'_, '_>>) -> DiscoveryParams {
    let Some(t) = t else {
        return DiscoveryParams::default();
    };
    let r = t.reader();
    let mut p = DiscoveryParams::default();
    if let Some((x, span)) = t.int("limit") {
        if x < 1 {
            r.error(
                ErrorKind::OutOfRange,
                span,
                format!("`discovery.limit` must be 1 or more, found {x}"),
            );
        } else {
            p.limit = Some(x as usize);
        }
    }
    if let Some((x, span)) = t.f64("expiry_seconds") {
        if x.is_nan() || x < 0.0 {
            r.error(
                ErrorKind::OutOfRange,
                span,
                format!("`discovery.expiry_seconds` must be 0 or more, found {x}"),
            );
        } else if x > 0.0 {
            p.expiry_seconds = Some(x);
        }
    }
    if let Some((x, span)) = t.int("expiry_calls") {
        if x < 0 {
            r.error(
                ErrorKind::OutOfRange,
                span,
                format!("`discovery.expiry_calls` must be 0 or more, found {x}"),
            );
        } else if x > 0 {
            p.expiry_calls = Some(x as u64);
        }
    }
    p.intent_from_calls = t.bool("intent_from_calls").unwrap_or(false);
    if let Some((s, span)) = t.str("on_definition_change") {
        let options = [
            ("ask", DefinitionChange::Ask),
            ("deny", DefinitionChange::Deny),
            ("allow", DefinitionChange::Allow),
        ];
        match options.iter().find(|(n, _)| *n == s) {
            Some((_, v)) => p.on_definition_change = *v,
            None => r.push(
                crate::diag::Diagnostic::at(
                    ErrorKind::InvalidValue,
                    &r.file,
                    span,
                    format!(
                        "`discovery.on_definition_change` = \"{s}\" is not one of: ask, deny, allow"
                    ),
                )
                .with_suggestion(&s, ["ask", "deny", "allow"]),
            ),
        }
    }
    t.finish();
    p
}

#[cfg(test)]
mod tests {
    use crate::diag::SourceFile;
    use crate::parse::policy::parse_policy;

    fn with(section: &str) -> Result<super::DiscoveryParams, String> {
        // the shipped policy up to its own [discovery]
        let base = crate::defaults::DEFAULT_POLICY
            .1
            .split("[discovery]")
            .next()
            .unwrap();
        let text = format!("{base}\n{section}\n");
        parse_policy(SourceFile::new("p.toml", text.as_str()))
            .map(|p| p.discovery)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn reads_every_key_and_rejects_bad_values() {
        let p = with(
            "[discovery]\nlimit = 4\nexpiry_seconds = 60\nexpiry_calls = 0\nintent_from_calls = true\non_definition_change = \"deny\"",
        )
        .unwrap();
        assert_eq!(p.limit, Some(4));
        assert_eq!(p.expiry_seconds, Some(60.0));
        assert_eq!(p.expiry_calls, None, "0 = never");
        assert!(p.intent_from_calls);
        assert_eq!(p.on_definition_change, super::DefinitionChange::Deny);
        assert_eq!(with("").unwrap(), super::DiscoveryParams::default());
        let e = with("[discovery]\nlimit = 0").unwrap_err();
        assert!(e.contains("discovery.limit"), "{e}");
        let e = with("[discovery]\non_definition_change = \"aks\"").unwrap_err();
        assert!(e.contains("not one of"), "{e}");
        let e = with("[discovery]\nlimt = 3").unwrap_err();
        assert!(e.contains("unknown key `limt`"), "{e}");
    }
}
