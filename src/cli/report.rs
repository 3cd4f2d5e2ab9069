//! Text and JSON reports of `eval` and `explain`.

use toolgate::Activation;

use super::{Format, bounded};

/// The widest a padded table column gets, in characters: a longer cell
/// prints whole and pushes its row out (`std::fmt` refuses widths above
/// 65,535, and a 65,536-character tool name panicked `eval`).
pub const MAX_COLUMN: usize = 120;

/// `x` with `prec` decimals, never as a negative zero (`-0.0000` prints
/// as `0.0000`: a term that contributes nothing is not negative).
pub fn fixed(x: f64, prec: usize) -> String {
    let s = format!("{x:.prec$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

fn order(act: &Activation) -> Vec<usize> {
    act.ranked()
}

pub fn reason_text(r: toolgate::Reason) -> &'static str {
    use toolgate::Reason::*;
    match r {
        AboveThreshold => "score >= effective threshold",
        Hysteresis => "kept by hysteresis",
        Pinned => "pinned by the policy",
        MinActive => "added to reach min_active",
        BelowThreshold => "score < effective threshold",
        MaxActive => "cut by max_active",
        InvalidScore => "the formula gave NaN",
    }
}

fn threshold_text(act: &Activation) -> String {
    match (act.cold_start, act.plan.cold_start) {
        (true, Some((min, f))) => format!(
            "{:.4} (cold start: {} call{} < {min}, threshold {} x {f})",
            act.effective_threshold,
            act.total_calls,
            if act.total_calls == 1 { "" } else { "s" },
            act.threshold
        ),
        _ => format!("{:.4}", act.effective_threshold),
    }
}

fn tool_json(act: &Activation, i: usize) -> serde_json::Value {
    act.tool_json(i)
}

fn header_json(act: &Activation) -> serde_json::Map<String, serde_json::Value> {
    act.header_json()
}

pub fn print_eval(o: &mut String, act: &Activation, format: Format) {
    let plan = &act.plan;
    if format == Format::Json {
        w!(o, "{}", act.report_json());
        return;
    }
    let active = act.tools.iter().filter(|t| t.active).count();
    w!(
        o,
        "policy {} | {} tools, {} active | effective threshold {}",
        plan.policy_name,
        plan.tools.len(),
        active,
        threshold_text(act)
    );
    if act.domain_weights().is_empty() {
        w!(
            o,
            "domain weights: none inferred (neutral domain match {})",
            plan.features.domain_neutral
        );
    } else {
        let mut dw: Vec<(&String, f64)> = plan
            .domains
            .iter()
            .zip(act.domain_weights().iter().copied())
            .collect();
        dw.sort_by(|a, b| b.1.total_cmp(&a.1));
        w!(
            o,
            "domain weights: {}",
            dw.iter()
                .map(|(d, w)| format!("{d} {w:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    w!(o, "rules applied: {}", or_none(&act.rule_names(), ", "));
    w!(o, "intent terms: {}", bounded::list(&act.intent_terms, " "));
    let clauses = act.clauses();
    if !clauses.is_empty() {
        let done = clauses.iter().filter(|c| c.1).count();
        w!(
            o,
            "clauses ([features.keyword_match.clauses]): {} scored one by one, {done} done: {}",
            clauses.len(),
            bounded::list(
                &clauses
                    .iter()
                    .map(|(t, d)| if *d {
                        format!("[done] {t}")
                    } else {
                        t.to_string()
                    })
                    .collect::<Vec<_>>(),
                " | "
            )
        );
    }
    if act.nothing_fits() {
        let min = plan.semantic.as_ref().and_then(|s| s.min_cosine);
        w!(
            o,
            "nothing fits: no tool's raw cosine with the request reaches min_cosine {} ([features.semantic_match]): keyword_match and semantic_match are 0 for every tool",
            min.unwrap_or(0.0)
        );
    }
    if let Some(af) = &plan.argument_fill
        && act.argument_fill(0).is_some()
    {
        w!(
            o,
            "argument fill: {} of {} tools lack values for their required parameters (below min_fraction {}, [features.argument_fill]): keyword_match and semantic_match are 0 for them",
            act.unfilled_count(),
            plan.tools.len(),
            af.min_fraction
        );
    }
    for w in &act.warnings {
        w!(o, "warning: {w}");
    }
    let width = plan
        .tools
        .iter()
        .map(|t| bounded::name(&t.name).chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, MAX_COLUMN);
    let feats: Vec<String> = plan
        .formula
        .terms
        .iter()
        .map(|t| match t.features.as_slice() {
            [f] => short(toolgate::FEATURES[*f as usize]).to_string(),
            _ => "term".into(),
        })
        .collect();
    let mut last_active = None;
    for i in order(act) {
        let s = &act.tools[i];
        if last_active != Some(s.active) {
            w!(o);
            let n = act.tools.iter().filter(|t| t.active == s.active).count();
            w!(o, "{} ({n})", if s.active { "ACTIVE" } else { "INACTIVE" });
            w!(
                o,
                "  {:>6}  {:<width$}  {}",
                "score",
                "tool",
                feats
                    .iter()
                    .map(|f| format!("{f:>9}"))
                    .collect::<Vec<_>>()
                    .join("")
            );
            last_active = Some(s.active);
        }
        let contribs: String = act
            .explain(i)
            .iter()
            .map(|e| format!("{:>9}", fixed(e.contribution, 4)))
            .collect();
        let note = match s.reason {
            toolgate::Reason::AboveThreshold | toolgate::Reason::BelowThreshold => String::new(),
            r => format!("  ({})", reason_text(r)),
        };
        w!(
            o,
            "  {:>6}  {:<width$}  {contribs}{note}",
            fixed(s.score, 4),
            bounded::name(&plan.tools[i].name)
        );
    }
}

fn short(f: &str) -> &str {
    match f {
        "domain_match" => "domain",
        "keyword_match" => "keyword",
        "stage_match" => "stage",
        "usage_bonus" => "usage",
        "priority_bonus" => "priority",
        "complexity_penalty" => "complex",
        "recency_bonus" => "recency",
        "transition_match" => "transit",
        "semantic_match" => "semantic",
        other => other,
    }
}

/// The names `toolgate mcp-proxy` gives the plan's tools under the default
/// name format (`{server}__{tool}`, made client-safe, collisions resolved),
/// for catalog names of the form `server.tool`; `None` for the others.
pub fn proxy_names(plan: &toolgate::Plan) -> Vec<Option<String>> {
    use toolgate::mcp::names::{NameFormat, assign};
    let split: Vec<Option<(&str, &str)>> =
        plan.tools.iter().map(|t| t.name.split_once('.')).collect();
    let pairs: Vec<(&str, &str)> = split.iter().flatten().copied().collect();
    let d = toolgate::mcp::ProxyConfig::default();
    let reserved = [d.find_tools.name.as_str(), d.call_tool.name.as_str()];
    let (names, _) = assign(&NameFormat::default(), &pairs, &reserved);
    let mut names = names.into_iter();
    split.iter().map(|p| p.and_then(|_| names.next())).collect()
}

pub fn print_explain(o: &mut String, act: &Activation, i: usize, format: Format) {
    let plan = &act.plan;
    let s = &act.tools[i];
    let t = &plan.tools[i];
    let exposed = proxy_names(plan).swap_remove(i);
    if format == Format::Json {
        let mut m = header_json(act);
        let mut tool = tool_json(act, i);
        if let serde_json::Value::Object(obj) = &mut tool {
            obj.insert("exposed_name".into(), serde_json::json!(exposed));
        }
        m.insert("tool".into(), tool);
        w!(o, "{}", serde_json::Value::Object(m));
        return;
    }
    let verdict = if s.active { "ACTIVE" } else { "INACTIVE" };
    w!(
        o,
        "{}: {verdict} ({}; score {:.4}, effective threshold {})",
        bounded::name(&t.name),
        reason_text(s.reason),
        s.score,
        threshold_text(act)
    );
    if let Some(n) = exposed {
        w!(
            o,
            "MCP clients see it as `{}` (toolgate mcp-proxy, default name format)",
            bounded::name(&n)
        );
    }
    w!(o);
    w!(
        o,
        "  {:<48} {:>8} {:>8} {:>13}",
        "term",
        "value",
        "weight",
        "contribution"
    );
    for e in act.explain(i) {
        let v = e.value.map(|x| fixed(x, 4)).unwrap_or_else(|| "-".into());
        let w = e.weight.map(|x| fixed(x, 4)).unwrap_or_else(|| "-".into());
        w!(
            o,
            "  {:<48} {v:>8} {w:>8} {:>13}",
            e.term,
            fixed(e.contribution, 4)
        );
    }
    w!(
        o,
        "  {:<48} {:>8} {:>8} {:>13}",
        "raw score (sum)",
        "",
        "",
        fixed(s.raw_score, 4)
    );
    w!(
        o,
        "  {:<48} {:>8} {:>8} {:>13}",
        format!("clamped to [{}, {}]", plan.clamp.0, plan.clamp.1),
        "",
        "",
        fixed(s.score, 4)
    );
    if let Some((clause, v)) = act.keyword_clause(i) {
        w!(
            o,
            "  keyword_match {} comes from the clause \"{}\" ([features.keyword_match.clauses]), above the whole request's value",
            fixed(v, 4),
            bounded::name(clause)
        );
    }
    w!(o);
    let doms: Vec<String> = t
        .domains
        .iter()
        .map(|&d| {
            let name = &plan.domains[d as usize];
            match act.domain_weights().get(d as usize) {
                Some(w) => format!("{name} ({w:.3})"),
                None => name.clone(),
            }
        })
        .collect();
    w!(
        o,
        "domains: {}{}",
        or_none(&doms, ", "),
        if act.domain_weights().is_empty() {
            format!(
                " — no domain weights inferred, neutral {}",
                plan.features.domain_neutral
            )
        } else {
            String::new()
        }
    );
    let stage_names: Vec<&str> = plan
        .stages
        .iter()
        .enumerate()
        .filter(|(k, _)| t.stage_mask & (1 << k) != 0)
        .map(|(_, s)| s.as_str())
        .collect();
    w!(o, "preferred stages: {}", or_none(&stage_names, ", "));
    let intent: std::collections::HashSet<&String> = act.intent_terms.iter().collect();
    let trig: Vec<String> = t
        .trigger_keywords
        .iter()
        .flat_map(|k| plan.analyzer.expand_keyword(k))
        .collect();
    let hits: Vec<&String> = trig.iter().filter(|k| intent.contains(k)).collect();
    w!(
        o,
        "trigger keywords: {}{}",
        if trig.is_empty() {
            String::new()
        } else {
            bounded::list(&trig, " ")
        },
        if t.auto_tagged {
            " (auto-tagged from the description)"
        } else {
            ""
        }
    );
    w!(o, "matched intent terms: {}", bounded::list(&hits, " "));
    if let (Some(f), Some(af)) = (act.argument_fill(i), &plan.argument_fill) {
        let verdict = if af.passes_fill(&f) {
            "passes"
        } else {
            "below min_fraction: keyword_match and semantic_match are 0"
        };
        w!(
            o,
            "argument fill: {} of {} required parameters have a value in the request{} ({verdict}, min_fraction {})",
            f.filled,
            f.required,
            if f.missing.is_empty() {
                String::new()
            } else {
                format!("; none for {}", bounded::list(&f.missing, ", "))
            },
            af.min_fraction
        );
    }
    w!(o, "rules applied: {}", or_none(&act.rule_names(), ", "));
}

/// `items` joined by `sep`, or `none` when there are none.
fn or_none<S: AsRef<str>>(items: &[S], sep: &str) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items
            .iter()
            .map(|s| s.as_ref())
            .collect::<Vec<_>>()
            .join(sep)
    }
}

#[cfg(test)]
mod tests {
    use super::fixed;

    #[test]
    fn no_negative_zero() {
        assert_eq!(fixed(-0.0, 4), "0.0000");
        assert_eq!(fixed(-0.00001, 4), "0.0000");
        assert_eq!(fixed(-0.05, 4), "-0.0500");
        assert_eq!(fixed(0.28466, 4), "0.2847");
    }
}
