//! Integer arguments the gate cannot represent exactly.
//!
//! serde_json (built without its `arbitrary_precision` feature, as here)
//! parses an integer literal outside the `i64` and `u64` ranges as the
//! nearest `f64`: `18446744073709551617` becomes `1.8446744073709552e19`,
//! `-9223372036854775810` becomes `-9223372036854775808.0`. A call checked
//! and forwarded with that value is not the call the model made, so the gate
//! fails closed on it (the finding `<invalid_arguments id>.inexact_integer`,
//! with the action of `[gate.checks.invalid_arguments]`, as for the string
//! `"18446744073709551616"` that cannot be coerced to an integer).
//!
//! Two readings, because the value alone cannot always tell:
//!
//! - **From the JSON text** ([`inexact_integers`]), exact: every integer
//!   literal (no fraction, no exponent) outside both ranges, at any position.
//!   Used where the arguments arrive as text: `guard --args`
//!   ([`check_call_json`](super::check_call_json)) and the MCP proxy's stdio
//!   `tools/call`.
//! - **From a parsed value** (`imprecise_integers`), for arguments that
//!   arrive already parsed ([`check_call`](super::check_call), the proxy over
//!   Streamable HTTP): a floating-point number of magnitude 2^63 or more
//!   where the schema declares `integer` (and not `number`). Such a value
//!   cannot be told from an integer literal that lost precision, and no
//!   64-bit integer holds it exactly. Elsewhere (a `number` or untyped
//!   parameter) a large float is taken as the float it is.

use serde_json::Value;

use super::coerce::allowed_types;
use super::config::CallChecks;
use super::schema::{MAX_FINDINGS, push_ptr, schema_at, subject};
use super::types::{Finding, FindingKind};

/// 2^63 as an `f64`: the magnitude from which a float is flagged.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// An integer literal of the arguments' JSON text that neither `i64` nor
/// `u64` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InexactInteger {
    /// JSON pointer of the value within the parsed text (`/n`, `/a/0`; empty
    /// for a text that is only the number).
    pub path: String,
    /// The literal as written.
    pub literal: String,
}

/// Every integer literal of `text` (JSON; any text is accepted, and what is
/// not JSON yields nothing useful but never panics) outside the `i64` and
/// `u64` ranges, in text order, with its JSON pointer. Linear in the text's
/// length; no recursion (nesting costs heap, not stack).
pub fn inexact_integers(text: &str) -> Vec<InexactInteger> {
    enum Frame {
        /// An object: the key being read or whose value is being read.
        Object(Option<String>),
        /// An array: the index of the current element.
        Array(usize),
    }
    let pointer = |stack: &[Frame]| {
        let mut p = String::new();
        for f in stack {
            match f {
                Frame::Object(Some(k)) => push_ptr(&mut p, k),
                Frame::Object(None) => push_ptr(&mut p, ""),
                Frame::Array(i) => {
                    p.push('/');
                    p.push_str(&i.to_string());
                }
            }
        }
        p
    };
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => stack.push(Frame::Object(None)),
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array(n)) => *n += 1,
                Some(Frame::Object(k)) => *k = None,
                None => {}
            },
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let end = (i + 1).min(bytes.len());
                if let Some(Frame::Object(k @ None)) = stack.last_mut() {
                    // a key: decode its escapes (a flat string, no depth)
                    let raw = text.get(start..end).unwrap_or_default();
                    *k = Some(serde_json::from_str::<String>(raw).unwrap_or_default());
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i + 1 < bytes.len()
                    && matches!(bytes[i + 1], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                let literal = text.get(start..=i).unwrap_or_default();
                let integral = !literal.contains(['.', 'e', 'E']);
                if integral
                    && literal.parse::<i64>().is_err()
                    && literal.parse::<u64>().is_err()
                    && literal
                        .trim_start_matches('-')
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                {
                    out.push(InexactInteger {
                        path: pointer(&stack),
                        literal: literal.to_string(),
                    });
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether a float of magnitude 2^63 or more is anywhere in `v`. Containers
/// are queued only when nested, so flat arguments allocate nothing.
fn has_big_float(v: &Value) -> bool {
    // true when `x` is such a float; queues it when it is a container
    fn visit<'a>(x: &'a Value, pending: &mut Vec<&'a Value>) -> bool {
        if x.is_object() || x.is_array() {
            pending.push(x);
        }
        matches!(x, Value::Number(n) if !n.is_i64() && !n.is_u64()
            && n.as_f64().is_some_and(|f| f.abs() >= TWO_POW_63))
    }
    let mut pending: Vec<&Value> = Vec::new();
    let mut next = Some(v);
    while let Some(v) = next.take().or_else(|| pending.pop()) {
        match v {
            Value::Object(m) => {
                for x in m.values() {
                    if visit(x, &mut pending) {
                        return true;
                    }
                }
            }
            Value::Array(a) => {
                for x in a {
                    if visit(x, &mut pending) {
                        return true;
                    }
                }
            }
            other => return visit(other, &mut Vec::new()),
        }
    }
    false
}

/// JSON pointers of the numbers of `args` that are floats of magnitude
/// 2^63 or more where `root` (the tool's input schema) declares `integer`
/// and not `number` (see the module docs), with the value as parsed.
pub(crate) fn imprecise_integers(root: &Value, args: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    // the usual case, no float that large: one walk without pointers (and,
    // for flat arguments, without allocating)
    if !has_big_float(args) {
        return out;
    }
    let mut stack: Vec<(&Value, String)> = vec![(args, String::new())];
    while let Some((v, ptr)) = stack.pop() {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter().rev() {
                    let mut p = ptr.clone();
                    push_ptr(&mut p, k);
                    stack.push((x, p));
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate().rev() {
                    stack.push((x, format!("{ptr}/{i}")));
                }
            }
            Value::Number(n) if !n.is_i64() && !n.is_u64() => {
                let Some(f) = n.as_f64() else { continue };
                if f.abs() < TWO_POW_63 {
                    continue;
                }
                let Some(schema) = schema_at(root, &ptr) else {
                    continue;
                };
                let types = allowed_types(root, schema);
                if types.contains(&"integer") && !types.contains(&"number") {
                    out.push((ptr, f));
                }
            }
            _ => {}
        }
    }
    out
}

/// What the model is told to send instead.
const RANGE: &str = "Send an integer between -9223372036854775808 and 18446744073709551615 (or the value as a string, if the parameter accepts strings).";

/// The finding for an argument at `path`, with `detail` saying what was got.
fn finding(checks: &CallChecks, path: &str, detail: String) -> Finding {
    checks
        .invalid_arguments
        .sub_finding("inexact_integer", FindingKind::Schema, path, &detail)
}

/// The finding for a float at an integer position (`imprecise_integers`).
pub(crate) fn imprecise_finding(checks: &CallChecks, path: &str, value: f64) -> Finding {
    finding(
        checks,
        path,
        format!(
            "{} must be an integer the gate can check exactly; got {value:e}, a number beyond the 64-bit range (an integer that large loses precision when read). {RANGE}",
            subject(path)
        ),
    )
}

/// Adds a finding for each literal of `inexact` (from the arguments' text)
/// whose path has no finding yet, while `findings` holds fewer than
/// [`MAX_FINDINGS`].
pub(crate) fn add_literal_findings(
    findings: &mut Vec<Finding>,
    inexact: &[InexactInteger],
    checks: &CallChecks,
) {
    for x in inexact {
        // the value's own finding is replaced by this one, which shows
        // what was sent; a path with another finding keeps it
        let at = findings.iter().position(|f| f.path == x.path);
        let replace = at.filter(|&i| findings[i].rule_id.ends_with(".inexact_integer"));
        if at.is_some() && replace.is_none() {
            continue;
        }
        if replace.is_none() && findings.len() >= MAX_FINDINGS {
            break;
        }
        let read = x
            .literal
            .parse::<f64>()
            .map(|f| format!("{f:e}"))
            .unwrap_or_else(|_| "a different number".into());
        let f = finding(
            checks,
            &x.path,
            format!(
                "{} is the integer {}, beyond the 64-bit range: it would be read as {read}, and the tool would not get the value sent. {RANGE}",
                subject(&x.path),
                super::schema::excerpt(&Value::String(x.literal.clone())).trim_matches('"'),
            ),
        );
        match replace {
            Some(i) => findings[i] = f,
            None => findings.push(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn found(text: &str) -> Vec<(String, String)> {
        inexact_integers(text)
            .into_iter()
            .map(|x| (x.path, x.literal))
            .collect()
    }

    #[test]
    fn literals_outside_both_ranges_are_found_with_their_pointer() {
        let text = r#"{"n": -9223372036854775810, "ok": 18446744073709551615,
            "a": [1, {"m~/x": 18446744073709551617}], "s": "18446744073709551617",
            "f": 1.8446744073709552e19, "g": 18446744073709551617.0, "min": -9223372036854775808}"#;
        assert_eq!(
            found(text),
            [
                ("/n".to_string(), "-9223372036854775810".to_string()),
                (
                    "/a/1/m~0~1x".to_string(),
                    "18446744073709551617".to_string()
                ),
            ]
        );
        assert_eq!(
            found("123456789012345678901234567890"),
            [(String::new(), "123456789012345678901234567890".to_string())]
        );
    }

    #[test]
    fn keys_with_escapes_and_strings_with_quotes_do_not_confuse_the_walk() {
        let text = r#"{"a\"b": "x\"y, 99999999999999999999", "c\u0064": [99999999999999999999]}"#;
        assert_eq!(
            found(text),
            [("/cd/0".to_string(), "99999999999999999999".to_string())]
        );
    }

    #[test]
    fn literal_findings_replace_the_value_finding_and_respect_the_cap() {
        let cfg = super::super::config::shipped();
        let checks = &cfg.checks;
        let lit = |path: &str| InexactInteger {
            path: path.into(),
            literal: "18446744073709551617".into(),
        };
        let mut findings = vec![imprecise_finding(checks, "/n", 1.8446744073709552e19)];
        add_literal_findings(&mut findings, &[lit("/n"), lit("/m")], checks);
        assert_eq!(findings.len(), 2, "{findings:?}");
        assert!(
            findings[0]
                .message
                .contains("is the integer 18446744073709551617")
        );
        assert_eq!(findings[1].path, "/m");
        assert!(
            findings
                .iter()
                .all(|f| f.rule_id.ends_with(".inexact_integer"))
        );
        // another finding at the path stays; the cap is kept
        let mut findings = vec![Finding {
            rule_id: "schema.maximum".into(),
            ..findings[0].clone()
        }];
        findings[0].path = "/n".into();
        let many: Vec<_> = (0..100).map(|i| lit(&format!("/a/{i}"))).collect();
        add_literal_findings(&mut findings, &[vec![lit("/n")], many].concat(), checks);
        assert_eq!(findings[0].rule_id, "schema.maximum");
        assert_eq!(findings.len(), MAX_FINDINGS);
    }

    #[test]
    fn any_text_is_safe() {
        for t in [
            "",
            "\"",
            "{\"a",
            "[[[[",
            "-",
            "}}]]",
            "{\"a\":-}",
            "\\",
            "{\"k\":1e999999}",
        ] {
            let _ = inexact_integers(t);
        }
        let deep = "[".repeat(100_000) + "99999999999999999999";
        assert_eq!(inexact_integers(&deep).len(), 1);
    }

    #[test]
    fn floats_at_integer_positions_beyond_2_pow_63_are_flagged() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "u": {},
            "l": {"type": "array", "items": {"type": ["integer", "null"]}}}});
        let args: Value = serde_json::from_str(
            r#"{"n": 18446744073709551617, "x": 1e300, "u": 1e30, "l": [1, -9223372036854775810, 2.0e19]}"#,
        )
        .unwrap();
        let mut flagged: Vec<String> = imprecise_integers(&schema, &args)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        flagged.sort();
        assert_eq!(flagged, ["/l/1", "/l/2", "/n"]);
        // in range: never flagged
        let ok = json!({"n": 9007199254740993_u64, "l": [i64::MIN, u64::MAX]});
        assert!(imprecise_integers(&schema, &ok).is_empty());
    }
}
