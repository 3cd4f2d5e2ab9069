//! `toolgate check`: load the policy and catalog (the load itself reports
//! the static findings: an unreachable threshold fails it, the other findings
//! are warnings), print the score bounds (any tool the policy admits, and the
//! loaded catalog), check the declared `[[properties]]`, and with `--fuzz N`
//! run N random sessions against the clamp and set controls.

use std::mem::ManuallyDrop;
use std::sync::Arc;

use serde_json::json;
use toolgate::compile::bounds::num;
use toolgate::compile::witness::{CatalogBounds, ScoreBounds, Witness, score_bounds};
use toolgate::fuzz::properties::{CheckOptions, PropertyReport, check_properties};
use toolgate::load::{Sources, load_policy_and_plan};
use toolgate::parse::policy::PolicySource;
use toolgate::{LoadError, Plan};

use super::{Fail, Format, PlanArgs, bounded};

/// Loads the policy (kept: witnesses are compiled with it) and the plan.
pub fn build_with_source(args: &PlanArgs) -> Result<(PolicySource, Arc<Plan>), LoadError> {
    let sources = Sources {
        policy: args.policy.clone(),
        tags: args.tags.clone(),
        tools: args.tools.clone(),
    };
    let (policy, plan) = load_policy_and_plan(&sources)?;
    Ok((policy, Arc::new(plan)))
}

fn bounds_json(b: &ScoreBounds) -> serde_json::Value {
    serde_json::to_value(b).unwrap_or_default()
}

/// `TOOL on INPUT`, the tool's name and the input's strings clipped
/// (`super::bounded`; `--format json` gives them whole).
fn witness_line(w: &Witness) -> String {
    format!(
        "{} on {}",
        bounded::name(&w.tool),
        bounded::json_line(&w.input)
    )
}

fn print_bounds(o: &mut String, label: &str, b: &ScoreBounds) {
    w!(
        o,
        "  score bounds, {label}: raw [{}, {}], clamped [{}, {}], {}{}",
        num(b.raw[0]),
        num(b.raw[1]),
        num(b.clamped[0]),
        num(b.clamped[1]),
        if b.exact {
            "exact (both attained)"
        } else {
            "a bound (not shown to be attained)"
        },
        if b.nan_possible { "; NaN possible" } else { "" }
    );
    if let Some(x) = &b.lowest {
        w!(o, "    lowest {}: {}", num(x.raw_score), witness_line(x));
    }
    if let Some(x) = &b.highest {
        w!(o, "    highest {}: {}", num(x.raw_score), witness_line(x));
    }
}

fn print_properties(o: &mut String, reports: &[PropertyReport]) {
    if reports.is_empty() {
        w!(o, "  properties: none declared");
        return;
    }
    let failed = reports.iter().filter(|r| !r.holds).count();
    w!(
        o,
        "  properties: {} declared, {} hold, {} fail",
        reports.len(),
        reports.len() - failed,
        failed
    );
    for r in reports {
        w!(
            o,
            "    {} {} [{}, {:?}] ({}): {}",
            if r.holds { "ok  " } else { "FAIL" },
            bounded::name(&r.name),
            r.kind,
            r.method,
            r.location,
            toolgate::diag::clip_chars(&r.detail, MAX_DETAIL)
        );
        if let Some(c) = &r.counterexample {
            w!(
                o,
                "         counterexample{}: {}",
                r.tool
                    .as_deref()
                    .map(|t| format!(" (tool {})", bounded::name(t)))
                    .unwrap_or_default(),
                bounded::json_line(c)
            );
            w!(
                o,
                "         reproduce: save it as cex.json, run `toolgate eval --input cex.json` with the same --policy/--tags/--tools"
            );
        }
    }
}

/// At most this many characters of a property's or a fuzz violation's
/// detail, or of a warning, are printed in the text format (the names in
/// them are clipped where they are written; this bounds the sentence
/// whatever it quotes).
const MAX_DETAIL: usize = 1_000;

/// How often a long `--fuzz` run reports its progress on stderr.
const FUZZ_PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// `--fuzz N`'s range: 1 to [`toolgate::fuzz::MAX_FUZZ_SAMPLES`]; `N` is
/// read signed, so that `--fuzz -5` is this range error too, not clap's
/// `unexpected argument '-5'`.
///
/// # Errors
/// The message for a count out of range, naming the cap (exit 2).
pub fn fuzz_count(n: i64) -> Result<usize, String> {
    let cap = toolgate::fuzz::MAX_FUZZ_SAMPLES;
    if let Ok(u) = usize::try_from(n)
        && (1..=cap).contains(&u)
    {
        return Ok(u);
    }
    Err(format!(
        "--fuzz {n} is out of range: give 1 to {cap} random sessions (the cap of one run; for more, run several checks with different --seed values)"
    ))
}

/// [`toolgate::fuzz::fuzz`], with a line on stderr every
/// [`FUZZ_PROGRESS_EVERY`] once the run has taken that long: sessions done,
/// the share, and the time left at the rate so far.
fn fuzz_with_progress(p: &Arc<Plan>, n: usize, seed: u64) -> Vec<toolgate::fuzz::Violation> {
    let start = std::time::Instant::now();
    let mut last = start;
    let mut report = |done: usize| {
        // the clock is read every 64 sessions only
        if !done.is_multiple_of(64) || last.elapsed() < FUZZ_PROGRESS_EVERY {
            return;
        }
        last = std::time::Instant::now();
        let spent = start.elapsed().as_secs_f64();
        let left = spent / done as f64 * (n - done) as f64;
        eprintln!(
            "fuzz: {done} of {n} random sessions ({:.1}%), about {} left",
            done as f64 * 100.0 / n as f64,
            seconds(left)
        );
    };
    toolgate::fuzz::fuzz_with_progress(p, n, seed, &mut report)
}

/// `45 s`, `3 min 20 s`, `2 h 5 min`.
fn seconds(s: f64) -> String {
    let s = s.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// Runs `check`; `Ok(false)` when a property fails or the fuzzer finds a breach.
pub fn run(
    o: &mut String,
    args: &PlanArgs,
    fuzz: Option<usize>,
    seed: u64,
    samples: u64,
    format: Format,
) -> Result<bool, Fail> {
    // 0 random sessions would check nothing, yet read as "no
    // counterexample": refused as an option out of range (exit 2, like
    // --fuzz 0; issue 29).
    super::option_ranges::check_samples(samples)?;
    // `check` is the process's last work: the plan, the policy and the
    // catalog bounds are left to the process exit instead of being freed
    // (freeing a 10,000-tool plan is a tenth of the run).
    let (policy, p) = build_with_source(args).map_err(Fail::Load)?;
    // A schema that cannot validate loads, but the gate denies every call
    // of its tool: `check` says so (`schema_check`).
    let unusable = super::schema_check::unusable_schemas(&p, args);
    if !unusable.is_empty() {
        return Err(Fail::Load(LoadError {
            diagnostics: unusable,
        }));
    }
    let (policy, p) = (ManuallyDrop::new(policy), ManuallyDrop::new(p));
    let violations = fuzz.map(|n| fuzz_with_progress(&p, n, seed));
    let bounds = score_bounds(&policy, &p);
    let catalog = ManuallyDrop::new(CatalogBounds::of(&p));
    let reports = check_properties(&policy, &p, &catalog, CheckOptions { samples, seed });
    let ok = violations.as_ref().is_none_or(|v| v.is_empty()) && reports.iter().all(|r| r.holds);
    let schema_warnings = super::schema_warnings::warnings(&p, 0..p.tools.len());
    if format == Format::Json {
        w!(
            o,
            "{}",
            json!({
                "ok": ok,
                "policy": p.policy_name,
                "sources": p.sources,
                "tools": p.tools.len(),
                "auto_tagged": p.tools.iter().filter(|t| t.auto_tagged).count(),
                "domains": p.domains,
                "stages": p.stages,
                "rules": p.rules.len(),
                "formula_terms": p.formula.terms.len(),
                "examples_checked": p.examples_checked,
                "examples_skipped": p.examples_skipped,
                "warnings": p.warnings.iter().chain(&schema_warnings).collect::<Vec<_>>(),
                "notes": p.notes,
                "score_bounds": bounds_json(&bounds),
                "catalog_bounds": (!p.tools.is_empty()).then(|| bounds_json(&catalog.overall)),
                "properties": reports,
                "fuzz_samples": fuzz,
                "violations": violations,
                "gate": super::gate_summary(&p),
            })
        );
        return Ok(ok);
    }
    w!(
        o,
        "{}: policy `{}` from {}",
        if ok { "ok" } else { "FAILED" },
        bounded::name(&p.policy_name),
        p.sources.first().map(String::as_str).unwrap_or("")
    );
    let files = &p.sources[1.min(p.sources.len())..];
    let embedded = files.iter().filter(|f| f.ends_with(" (embedded)")).count();
    w!(
        o,
        "  tools: {} ({} auto-tagged) from {} file(s){}",
        p.tools.len(),
        p.tools.iter().filter(|t| t.auto_tagged).count(),
        files.len(),
        match embedded {
            0 => String::new(),
            n if n == files.len() => " (embedded tool-tags/)".to_string(),
            n => format!(" ({n} of them the embedded tool-tags/)"),
        }
    );
    w!(
        o,
        "  domains: {} ({})",
        p.domains.len(),
        bounded::list(&p.domains, ", ")
    );
    w!(o, "  stages: {}", bounded::list(&p.stages, ", "));
    w!(o, "  domain rules: {}", p.rules.len());
    w!(
        o,
        "  formula: {} terms: {}",
        p.formula.terms.len(),
        p.formula.source
    );
    print_bounds(o, "any tool the policy admits", &bounds);
    if p.tools.is_empty() {
        w!(o, "  score bounds, the loaded catalog: no tools");
    } else {
        print_bounds(
            o,
            &format!("the {} loaded tools", p.tools.len()),
            &catalog.overall,
        );
    }
    // An example whose every expectation was skipped holds nothing: it is
    // counted apart (its warning below says why).
    match p.examples_skipped {
        0 => w!(o, "  examples: {} checked, all hold", p.examples_checked),
        n => w!(
            o,
            "  examples: {} checked, all hold; {n} skipped (their tools are not in this catalog: see the warnings)",
            p.examples_checked
        ),
    }
    let g = super::gate_summary(&p);
    w!(
        o,
        "  gate: {} shell rules, {} SQL statement rules, {} patterns, {} risk rules, path roots: {}",
        g["shell_rules"],
        g["sql_statement_rules"],
        g["patterns"],
        g["risk_rules"],
        g["roots"]
            .as_array()
            .map(|r| r
                .iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(", "))
            .unwrap_or_default()
    );
    for w in p.warnings.iter().chain(&schema_warnings) {
        w!(
            o,
            "  warning: {}",
            toolgate::diag::clip_chars(w, MAX_DETAIL)
        );
    }
    for n in &p.notes {
        w!(o, "  note: {n}");
    }
    if !p.notes.is_empty() && !p.tools.is_empty() {
        // The notes cover any tool the policy admits; the declared
        // properties, the loaded tools: say where these stand.
        let (lo, hi) = (catalog.overall.raw[0], catalog.overall.raw[1]);
        let (clo, chi) = p.clamp;
        w!(
            o,
            "  note: the {} loaded tools' raw scores lie in [{}, {}], {} the clamp [{}, {}]; the declared properties below are checked over these tools",
            p.tools.len(),
            num(lo),
            num(hi),
            if lo >= clo && hi <= chi {
                "within"
            } else {
                "beyond"
            },
            num(clo),
            num(chi)
        );
    }
    print_properties(o, &reports);
    if let (Some(n), Some(v)) = (fuzz, &violations) {
        w!(o, "  fuzz: {n} random sessions, {} violation(s)", v.len());
        const SHOWN: usize = 20;
        for x in v.iter().take(SHOWN) {
            w!(
                o,
                "    sample {}: {}{}",
                x.sample,
                x.tool
                    .as_deref()
                    .map(|t| format!("{}: ", bounded::name(t)))
                    .unwrap_or_default(),
                toolgate::diag::clip_chars(&x.message, MAX_DETAIL)
            );
        }
        if v.len() > SHOWN {
            w!(o, "    {}", toolgate::diag::more(v.len() - SHOWN));
        }
    }
    Ok(ok)
}

#[cfg(test)]
mod fuzz_tests {
    use super::{fuzz_count, seconds};

    #[test]
    fn the_fuzz_count_is_capped_and_times_read_plainly() {
        assert_eq!(fuzz_count(1), Ok(1));
        assert!(fuzz_count(0).is_err());
        let e = fuzz_count(99_999_999_999).unwrap_err();
        assert!(e.contains("1 to 1000000"), "{e}");
        assert_eq!(seconds(45.2), "45 s");
        assert_eq!(seconds(200.0), "3 min 20 s");
        assert_eq!(seconds(7500.0), "2 h 5 min");
    }
}
