//! `toolgate audit summary FILE`: seed 002's tracer summary over an audit log.

use std::path::Path;

use toolgate::gate::audit::{AuditSummary, summarize};

use super::Format;

/// At most this many entries of each list of the text summary (decisions,
/// error kinds, other events); the rest are counted ("… N more"). The JSON
/// summary lists them all.
const MAX_LISTED: usize = 20;

/// Reads and summarizes the log at `path`. A file with no audit record is
/// an error (exit 3, as README's table says): an empty file says so; a file
/// with other lines names the first such line and the two formats expected.
pub fn summary(path: &Path) -> Result<AuditSummary, String> {
    let f =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let s = summarize(std::io::BufReader::new(f))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if s.records == 0
        && let Some((line, why)) = &s.first_skipped
    {
        return Err(format!(
            "{}: none of its {} line(s) is an audit record (line {line}: {why}); expected the JSON Lines written by `toolgate guard --audit FILE` or `toolgate mcp-proxy --audit FILE`",
            path.display(),
            s.skipped_lines
        ));
    }
    if s.records == 0 {
        return Err(format!(
            "{}: holds no audit record (no line to summarise); expected the JSON Lines written by `toolgate guard --audit FILE` or `toolgate mcp-proxy --audit FILE`, with at least one call",
            path.display()
        ));
    }
    Ok(s)
}

/// Lines shown by number in the text summary's `skipped:` line.
const SKIPPED_SHOWN: usize = 5;

/// `line 3`, `lines 3, 7, 9`, `lines 3, 7, 9, 12, 15, … 8 more`: the first
/// skipped lines by number, then why each of those shown was skipped
/// (`; line 3: not JSON …; line 7: unknown outcome …`).
fn skipped_lines(s: &AuditSummary) -> String {
    let shown: Vec<String> = s
        .skipped_line_numbers
        .iter()
        .take(SKIPPED_SHOWN)
        .map(|n| n.to_string())
        .collect();
    let mut text = format!(
        "line{} {}",
        if s.skipped_lines == 1 { "" } else { "s" },
        shown.join(", ")
    );
    if s.skipped_lines > shown.len() {
        text.push_str(", ");
        text.push_str(&toolgate::diag::more(s.skipped_lines - shown.len()));
    }
    for (line, why) in s
        .skipped_line_numbers
        .iter()
        .zip(&s.skipped_why)
        .take(SKIPPED_SHOWN)
    {
        text.push_str(&format!("; line {line}: {}", toolgate::diag::echo(why)));
    }
    text
}

/// Milliseconds for people: `0.046 ms`, `12.3 ms`, `2.50 s`; a time whose
/// seconds take more than [`toolgate::diag::MAX_ECHOED_NUMBER`] characters
/// in that form (`latency_ms: 1e300` in a crafted log) in exponent form,
/// `1.00e297 s`, as every number the CLI prints (issue 29).
pub fn duration(ms: f64) -> String {
    if ms < 1.0 {
        format!("{ms:.3} ms")
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        let s = format!("{:.2}", ms / 1000.0);
        if s.len() <= toolgate::diag::MAX_ECHOED_NUMBER {
            format!("{s} s")
        } else {
            format!("{:.2e} s", ms / 1000.0)
        }
    }
}

/// Prints a summary.
pub fn print_summary(o: &mut String, s: &AuditSummary, format: Format) {
    if format == Format::Json {
        w!(
            o,
            "{}",
            serde_json::to_string_pretty(s).unwrap_or_else(|_| "{}".into())
        );
        return;
    }
    w!(o, "total calls: {}", s.total_calls);
    w!(o, "success rate: {:.1}%", s.success_rate);
    w!(
        o,
        "latency: p50 {}, p95 {}",
        duration(s.latency_p50_ms),
        duration(s.latency_p95_ms)
    );
    // Keys come from the log (a crafted or corrupt one may hold any number
    // of any length): each echoed clipped, lists cut at MAX_LISTED.
    let counts = |m: &std::collections::BTreeMap<String, usize>| {
        let mut parts: Vec<String> = m
            .iter()
            .take(MAX_LISTED)
            .map(|(k, n)| format!("{} {n}", toolgate::diag::echo(k)))
            .collect();
        if m.len() > MAX_LISTED {
            parts.push(toolgate::diag::more(m.len() - MAX_LISTED));
        }
        parts.join(", ")
    };
    if !s.decisions.is_empty() {
        w!(o, "decisions: {}", counts(&s.decisions));
    }
    let c = &s.confirmations;
    if c.asked > 0 {
        w!(
            o,
            "confirmations: {} asked, {} confirmed, {} declined, {} unanswered",
            c.asked,
            c.confirmed,
            c.declined,
            c.unanswered
        );
    }
    if let Some(d) = &s.downstream {
        w!(
            o,
            "downstream latency: p50 {}, p95 {} ({} forwarded call(s))",
            duration(d.p50_ms),
            duration(d.p95_ms),
            d.calls
        );
    }
    if s.error_breakdown.is_empty() {
        w!(o, "errors: none");
    } else {
        w!(o, "errors:");
        for (k, n) in s.error_breakdown.iter().take(MAX_LISTED) {
            w!(o, "  {}: {n}", toolgate::diag::echo(k));
        }
        if s.error_breakdown.len() > MAX_LISTED {
            w!(
                o,
                "  {}",
                toolgate::diag::more(s.error_breakdown.len() - MAX_LISTED)
            );
        }
    }
    if !s.events.is_empty() {
        w!(o, "other events: {}", counts(&s.events));
    }
    if s.repeated_records > 0 {
        let mut lines: Vec<String> = s
            .repeated_line_numbers
            .iter()
            .take(SKIPPED_SHOWN)
            .map(|n| n.to_string())
            .collect();
        if s.repeated_records > lines.len() {
            lines.push(toolgate::diag::more(s.repeated_records - lines.len()));
        }
        w!(
            o,
            "repeated: {} record(s) repeat an earlier record of the same call_id and event (line{} {}): counted once",
            s.repeated_records,
            if s.repeated_records == 1 { "" } else { "s" },
            lines.join(", ")
        );
    }
    if s.skipped_lines > 0 {
        w!(
            o,
            "skipped: {} line(s) that are not audit records ({})",
            s.skipped_lines,
            skipped_lines(s)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration(0.045485000000000005), "0.045 ms");
        assert_eq!(duration(12.34), "12.3 ms");
        assert_eq!(duration(2500.0), "2.50 s");
        assert_eq!(duration(1e300), "1.00e297 s");
    }
}
