//! Declared `[[properties]]` (fuzz::properties): each kind true and false,
//! decided statically and by search, on the shipped policies and on mutated
//! copies. Every counterexample is fed back, as JSON text, through the path
//! `toolgate eval --input` takes, and must show the violation. Also the
//! load errors of malformed properties, at file:line:column.
#![cfg(feature = "proptest")]

use std::sync::Arc;

use toolgate::compile::compile;
use toolgate::compile::witness::{CatalogBounds, evaluate_input};
use toolgate::diag::SourceFile;
use toolgate::fuzz::properties::{CheckOptions, Method, PropertyReport, check_properties};
use toolgate::load::{Sources, load_catalog};
use toolgate::parse::policy::{PolicySource, parse_policy};
use toolgate::plan::property::PropertyKind;
use toolgate::{ErrorKind, LoadError, Plan};

const DEFAULT: &str = include_str!("../policies/default.toml");
const ARTICLE: &str = include_str!("../policies/seed-article.toml");
const SELECTION: &str = include_str!("../policies/selection.toml");

fn load(text: &str) -> Result<(PolicySource, Arc<Plan>), LoadError> {
    let mut p = parse_policy(SourceFile::new("p.toml", text))?;
    // Data files (selection.toml's transitions) are read beside policies/.
    let name = std::mem::replace(&mut p.file, SourceFile::new("policies/p.toml", text));
    toolgate::load::load_data_files(&mut p)?;
    p.file = name;
    p.examples.clear();
    let tools = load_catalog(&Sources::default()).unwrap();
    compile(&p, tools).map(|plan| (p, Arc::new(plan)))
}

fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} not in the policy");
    text.replacen(from, to, 1)
}

/// Checks the properties of `text` (its own, shipped ones included, plus
/// `extra`), and feeds every counterexample back to evaluation.
fn check(text: &str, extra: &str) -> Vec<PropertyReport> {
    let text = format!("{text}\n{extra}");
    let (policy, plan) = load(&text).unwrap_or_else(|e| panic!("{e}"));
    let cb = CatalogBounds::of(&plan);
    let reports = check_properties(&policy, &plan, &cb, CheckOptions::default());
    for (r, p) in reports.iter().zip(&plan.properties) {
        assert_eq!(r.holds, r.counterexample.is_none(), "{r:?}");
        if let Some(c) = &r.counterexample {
            reproduces(&policy, &plan, &p.kind, r.tool.as_deref(), c);
        }
    }
    reports
}

/// The counterexample, read back from its JSON text as `eval --input` reads
/// it, shows the violation its property states.
fn reproduces(
    policy: &PolicySource,
    plan: &Arc<Plan>,
    kind: &PropertyKind,
    tool: Option<&str>,
    c: &serde_json::Value,
) {
    let text = serde_json::to_string_pretty(c).unwrap();
    let input: serde_json::Value = serde_json::from_str(&text).unwrap();
    let act = evaluate_input(Some(policy), plan, &input).unwrap_or_else(|e| panic!("{e}: {text}"));
    let score = |name: &str| *act.get(name).unwrap_or_else(|| panic!("{name} in {text}"));
    match kind {
        PropertyKind::RawScoreWithin { low, high } => {
            let x = score(tool.unwrap()).raw_score;
            assert!(
                x < *low || x > *high || x.is_nan(),
                "{x} in [{low}, {high}]: {text}"
            );
        }
        PropertyKind::ScoreWithin { low, high } => {
            let x = score(tool.unwrap()).score;
            assert!(x < *low || x > *high, "{x} in [{low}, {high}]: {text}");
        }
        PropertyKind::Monotone { increasing, .. } => {
            let raised = score(tool.unwrap()).raw_score;
            let base = score("toolgate.baseline").raw_score;
            if *increasing {
                assert!(raised < base, "{raised} >= {base}: {text}");
            } else {
                assert!(raised > base, "{raised} <= {base}: {text}");
            }
        }
        PropertyKind::AlwaysActive(_) => assert!(!score(tool.unwrap()).active, "{text}"),
        PropertyKind::NeverActive(_) => assert!(score(tool.unwrap()).active, "{text}"),
        PropertyKind::ActiveCountWithin { low, high } => {
            let n = act.tools.iter().filter(|t| t.active).count();
            assert!(n < *low || n > *high, "{n} active: {text}");
        }
    }
}

/// The report of the property called `name`.
fn report<'a>(reports: &'a [PropertyReport], name: &str) -> &'a PropertyReport {
    reports
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no property `{name}` in {reports:?}"))
}

fn property(name: &str, body: &str) -> String {
    format!("[[properties]]\nname = \"{name}\"\n{body}\n")
}

#[test]
fn the_shipped_policies_declare_properties_that_hold() {
    for (text, n) in [(DEFAULT, 6), (ARTICLE, 4), (SELECTION, 3)] {
        let reports = check(text, "");
        assert_eq!(reports.len(), n);
        for r in &reports {
            assert!(r.holds, "{r:?}");
            assert_eq!(r.method, Method::Static, "{r:?}");
        }
    }
}

#[test]
fn raw_score_within_true_and_false() {
    let reports = check(
        DEFAULT,
        &[
            property("within 0..1", "raw_score_within = [0.0, 1.0]"),
            property("within 0..0.95", "raw_score_within = [0.0, 0.95]"),
            property(
                "the clock stays low",
                "raw_score_within = [0.0, 0.8]\ntools = [\"time.get_current_time\"]",
            ),
        ]
        .concat(),
    );
    let r = report(&reports, "within 0..1");
    assert!(r.holds && r.method == Method::Static, "{r:?}");
    let r = report(&reports, "within 0..0.95");
    assert!(!r.holds && r.method == Method::Static, "{r:?}");
    assert_eq!(r.tool.as_deref(), Some("sqlite.read_query"));
    assert!(r.counterexample.as_ref().unwrap().get("tools").is_none());
    let r = report(&reports, "the clock stays low");
    assert!(r.holds, "{r:?}");
}

#[test]
fn raw_score_within_is_searched_when_the_bounds_are_loose() {
    // keyword_match - keyword_match is 0; intervals make it [-1, 1]
    let text = edit(
        DEFAULT,
        "formula = \"w_domain*domain_match",
        "formula = \"keyword_match - keyword_match + w_domain*domain_match",
    );
    let reports = check(
        &text,
        &property("within 0..1", "raw_score_within = [0.0, 1.0]"),
    );
    let r = report(&reports, "within 0..1");
    assert!(r.holds && r.method == Method::Search, "{r:?}");
    assert_eq!(r.samples, Some(256));
}

#[test]
fn score_within_true_and_false() {
    let reports = check(
        DEFAULT,
        &[
            property("in the clamp", "score_within = [0.0, 1.0]"),
            property("never below 0.05", "score_within = [0.05, 1.0]"),
        ]
        .concat(),
    );
    assert!(report(&reports, "in the clamp").holds);
    let r = report(&reports, "never below 0.05");
    assert!(!r.holds && r.method == Method::Static, "{r:?}");
}

#[test]
fn monotone_linear_true_and_false() {
    let reports = check(
        DEFAULT,
        &[
            property(
                "usage helps",
                "monotone = { feature = \"usage_bonus\", direction = \"increasing\" }",
            ),
            property(
                "complexity helps",
                "monotone = { feature = \"complexity_penalty\", direction = \"increasing\" }",
            ),
            property(
                "domains hurt",
                "monotone = { feature = \"domain_match\", direction = \"decreasing\" }",
            ),
        ]
        .concat(),
    );
    let r = report(&reports, "usage helps");
    assert!(r.holds && r.method == Method::Static, "{r:?}");
    for name in ["complexity helps", "domains hurt"] {
        let r = report(&reports, name);
        assert!(!r.holds && r.method == Method::Static, "{r:?}");
        assert_eq!(r.tool.as_deref(), Some("toolgate.witness"));
        let tools = r.counterexample.as_ref().unwrap()["tools"]
            .as_array()
            .unwrap();
        assert_eq!(tools.len(), 2, "{r:?}");
    }
}

#[test]
fn monotone_non_linear_is_searched() {
    let rising = edit(
        DEFAULT,
        "w_priority*priority_bonus",
        "w_priority*math::sqrt(priority_bonus)",
    );
    let reports = check(
        &rising,
        &property(
            "priority helps",
            "monotone = { feature = \"priority_bonus\", direction = \"increasing\" }",
        ),
    );
    let r = report(&reports, "priority helps");
    assert!(r.holds && r.method == Method::Search, "{r:?}");

    // rises from 0 to 1/4, then falls: 0.5 - 2 × 0.25 = 0 > 1 - 2 = -1
    let humped = edit(
        DEFAULT,
        "w_priority*priority_bonus",
        "w_priority*(priority_bonus - 2*priority_bonus*priority_bonus)",
    );
    let reports = check(
        &humped,
        &property(
            "priority helps",
            "monotone = { feature = \"priority_bonus\", direction = \"increasing\" }",
        ),
    );
    let r = report(&reports, "priority helps");
    assert!(!r.holds && r.method == Method::Search, "{r:?}");
    assert!(r.detail.contains("lowers the raw score"), "{}", r.detail);
}

#[test]
fn always_active_true_and_false() {
    let reader = "always_active = [\"filesystem.read_text_file\"]";
    let r = check(DEFAULT, &property("reader", reader));
    let r = report(&r, "reader");
    assert!(!r.holds && r.method == Method::Static, "{r:?}");
    assert_eq!(r.tool.as_deref(), Some("filesystem.read_text_file"));

    // pinned: always active
    let pinned = edit(
        DEFAULT,
        "pinned = []",
        "pinned = [\"filesystem.read_text_file\"]",
    );
    let r = check(&pinned, &property("reader", reader));
    let r = report(&r, "reader");
    assert!(r.holds && r.method == Method::Static, "{r:?}");

    // a threshold under every shipped tool's lowest score
    let low = edit(DEFAULT, "threshold = 0.4 ", "threshold = 0.04 ");
    let r = check(&low, &property("reader", reader));
    let r = report(&r, "reader");
    assert!(r.holds && r.method == Method::Static, "{r:?}");
}

#[test]
fn always_active_under_max_active_is_searched() {
    let low = edit(DEFAULT, "threshold = 0.4 ", "threshold = 0.04 ");
    let reader = "always_active = [\"filesystem.read_text_file\"]";
    // the bounds cannot prove it (more than 3 tools may pass); its lowest
    // session already shows it cut
    let capped = edit(&low, "# max_active = 10 ", "max_active = 3 ");
    let r = check(&capped, &property("reader", reader));
    let r = report(&r, "reader");
    assert!(!r.holds, "{r:?}");
    assert!(r.detail.contains("max_active 3 cuts it"), "{}", r.detail);

    let roomy = edit(&low, "# max_active = 10 ", "max_active = 100 ");
    let r = check(&roomy, &property("reader", reader));
    let r = report(&r, "reader");
    assert!(r.holds && r.method == Method::Search, "{r:?}");
}

#[test]
fn never_active_true_and_false() {
    let shell = "never_active = [\"shell.run_command\"]";
    let r = check(DEFAULT, &property("no shell", shell));
    let r = report(&r, "no shell");
    assert!(!r.holds && r.method == Method::Static, "{r:?}");

    // no shipped tool reaches 0.99 (nor 0.99 × 0.6 in cold start: off)
    let high = edit(DEFAULT, "threshold = 0.4 ", "threshold = 0.99 ");
    let r = check(&high, &property("no shell", shell));
    let r = report(&r, "no shell");
    assert!(
        !r.holds && r.detail.contains("effective threshold 0.594"),
        "{r:?}"
    );
    let high = edit(
        &high,
        "[activation.cold_start]      # _get_effective_threshold",
        "[activation.cold_start]\nenabled = false",
    );
    let r = check(&high, &property("no shell", shell));
    let r = report(&r, "no shell");
    assert!(r.holds && r.method == Method::Static, "{r:?}");

    // pinned: active in every session, the empty one included
    let pinned = edit(&high, "pinned = []", "pinned = [\"shell.run_command\"]");
    let r = check(&pinned, &property("no shell", shell));
    let r = report(&r, "no shell");
    assert!(!r.holds, "{r:?}");
    assert_eq!(r.counterexample, Some(serde_json::json!({})));
}

#[test]
fn active_count_within_true_and_false() {
    let reports = check(
        DEFAULT,
        &[
            property("any", "active_count_within = [0, 71]"),
            property("few", "active_count_within = [0, 10]"),
        ]
        .concat(),
    );
    let r = report(&reports, "any");
    assert!(r.holds && r.method == Method::Static, "{r:?}");
    let r = report(&reports, "few");
    assert!(!r.holds && r.method == Method::Search, "{r:?}");
    assert!(r.tool.is_none());

    let capped = edit(DEFAULT, "# max_active = 10 ", "max_active = 10 ");
    let r = check(&capped, &property("few", "active_count_within = [0, 10]"));
    let r = report(&r, "few");
    assert!(r.holds && r.method == Method::Static, "{r:?}");
}

#[test]
fn a_search_counterexample_is_shrunk() {
    // at least one active tool is false in the empty session already; the
    // shrunk session keeps little besides what the violation needs
    let high = edit(DEFAULT, "threshold = 0.4 ", "threshold = 0.9 ");
    let reports = check(&high, &property("some", "active_count_within = [1, 71]"));
    let r = report(&reports, "some");
    assert!(!r.holds && r.method == Method::Search, "{r:?}");
    let c = r.counterexample.as_ref().unwrap();
    let keywords = c["context"]["user_intent_keywords"]
        .as_array()
        .map_or(0, |a| a.len());
    assert!(keywords <= 1, "{c}");
}

fn load_error(extra: &str) -> LoadError {
    load(&format!("{DEFAULT}\n{extra}")).unwrap_err()
}

/// p.toml:line:column of `needle` in the default policy followed by `extra`.
fn position(extra: &str, needle: &str) -> String {
    let text = format!("{DEFAULT}\n{extra}");
    let off = DEFAULT.len() + 1 + extra.find(needle).unwrap();
    let (l, c) = SourceFile::new("p.toml", text).line_col(off);
    format!("p.toml:{l}:{c}")
}

#[test]
fn malformed_properties_are_load_errors_at_their_place() {
    let cases: [(&str, &str, ErrorKind, &str); 7] = [
        (
            "monotone = { feature = \"stage_matsh\", direction = \"increasing\" }",
            "\"stage_matsh\"",
            ErrorKind::UnknownName,
            "`stage_matsh` is not a feature",
        ),
        (
            "monotone = { feature = \"stage_match\", direction = \"up\" }",
            "\"up\"",
            ErrorKind::InvalidValue,
            "`properties.monotone.direction` = \"up\" is not one of: increasing, decreasing",
        ),
        (
            "always_active = [\"filesystem.read_txt_file\"]",
            "\"filesystem.read_txt_file\"",
            ErrorKind::UnknownName,
            "tool `filesystem.read_txt_file` is not in the catalog (did you mean `filesystem.read_text_file`?)",
        ),
        (
            "raw_score_within = [1.0, 0.0]",
            "[1.0, 0.0]",
            ErrorKind::InvalidValue,
            "`properties.raw_score_within` must be two finite numbers [low, high] with low <= high",
        ),
        (
            "score_within = [0.0, 1.0]\nnever_active = [\"shell.run_command\"]",
            "never_active",
            ErrorKind::InvalidValue,
            "states 2 things (score_within, never_active)",
        ),
        (
            "samples = 5",
            "[[properties]]",
            ErrorKind::MissingKey,
            "property `p` states nothing",
        ),
        (
            "monotone = { feature = \"stage_match\", direction = \"increasing\" }\ntools = [\"shell.run_command\"]",
            "[\"shell.run_command\"]",
            ErrorKind::InvalidValue,
            "`properties.tools` only applies to raw_score_within and score_within",
        ),
    ];
    for (body, needle, kind, message) in cases {
        let extra = property("p", body);
        let e = load_error(&extra);
        let d = e
            .diagnostics
            .iter()
            .find(|d| d.kind == kind)
            .unwrap_or_else(|| panic!("no {kind:?} for {body}: {e}"));
        let text = d.to_string();
        assert!(text.contains(message), "{text}");
        assert!(
            text.starts_with(&position(&extra, needle)),
            "{text} vs {}",
            position(&extra, needle)
        );
    }
}

#[test]
fn a_tool_of_another_catalog_is_skipped_with_a_warning() {
    let text = format!(
        "{DEFAULT}\n{}",
        property("other", "always_active = [\"github.create_issue\"]")
    );
    let (_, plan) = load(&text).unwrap();
    assert!(plan.properties.iter().all(|p| p.name != "other"));
    assert!(
        plan.warnings.iter().any(|w| w
            .contains("property `other`: tool(s) github.create_issue not in the catalog; skipped")),
        "{:?}",
        plan.warnings
    );
}

/// The first ```toml block after `heading` in docs/policy-reference.md.
fn doc_block(heading: &str) -> String {
    let doc = include_str!("../docs/policy-reference.md");
    let from = doc
        .find(heading)
        .unwrap_or_else(|| panic!("{heading:?} not in the doc"));
    let rest = &doc[from..];
    let start = rest.find("```toml\n").unwrap() + "```toml\n".len();
    let end = start + rest[start..].find("```").unwrap();
    rest[start..end].to_string()
}

#[test]
fn the_documented_policy_route_gives_the_documented_verdicts() {
    let block = doc_block("### Worked example: the policy route");
    let reports = check(DEFAULT, &block);
    assert_eq!(reports.len(), 9);
    let r = report(&reports, "raw scores stay within [0, 1]");
    assert!(r.holds && r.method == Method::Static);
    assert!(r.detail.contains("[0.048289, 0.968824]"), "{}", r.detail);
    let r = report(&reports, "a stage hit never lowers a score");
    assert!(r.holds && r.method == Method::Static);
    let r = report(&reports, "the file reader is always available");
    assert!(!r.holds && r.method == Method::Static);
    assert_eq!(r.tool.as_deref(), Some("filesystem.read_text_file"));
    // the counterexample shown in the doc
    let shown = serde_json::json!({"context":{"active_language":"sql","user_intent_keywords":["query","api","run"]},"now":0.0,"usage":{"call_counts":{"shell.run_command":5}}});
    assert_eq!(r.counterexample.as_ref(), Some(&shown));
    let doc = include_str!("../docs/policy-reference.md");
    assert!(doc.contains(&serde_json::to_string(&shown).unwrap()));
}
