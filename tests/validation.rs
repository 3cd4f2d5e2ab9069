//! Every kind of load error: its kind, its message and its file:line:column.
//! Each case edits a copy of the shipped default policy (or a tag file) and
//! checks that the diagnostic points exactly at the edited text.

use std::path::{Path, PathBuf};

use toolgate::diag::SourceFile;
use toolgate::load::{Sources, load_plan};
use toolgate::parse::policy::parse_policy;
use toolgate::{ErrorKind, LoadError};

const DEFAULT: &str = include_str!("../policies/default.toml");

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tags")).unwrap();
        for e in std::fs::read_dir("tool-tags").unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, dir.path().join("tags").join(p.file_name().unwrap())).unwrap();
        }
        std::fs::write(dir.path().join("policy.toml"), DEFAULT).unwrap();
        Case { dir }
    }
    fn policy(&self) -> PathBuf {
        self.dir.path().join("policy.toml")
    }
    fn edit(&self, file: &Path, from: &str, to: &str) -> &Self {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains(from), "{from:?} not in {}", file.display());
        std::fs::write(file, text.replacen(from, to, 1)).unwrap();
        self
    }
    fn edit_policy(&self, from: &str, to: &str) -> &Self {
        self.edit(&self.policy(), from, to)
    }
    fn load(&self) -> Result<toolgate::Plan, LoadError> {
        load_plan(&Sources {
            policy: Some(self.policy()),
            tags: Some(self.dir.path().join("tags")),
            tools: vec![],
        })
    }
}

/// 1-based line and column of the first occurrence of `needle` in `file`.
fn position(file: &Path, needle: &str) -> (usize, usize) {
    let text = std::fs::read_to_string(file).unwrap();
    let off = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not found"));
    SourceFile::new("x", text.as_str()).line_col(off)
}

fn expect(err: &LoadError, kind: ErrorKind, contains: &str, file: &Path, at: Option<&str>) {
    let d = err
        .diagnostics
        .iter()
        .find(|d| d.kind == kind && d.to_string().contains(contains))
        .unwrap_or_else(|| panic!("no {kind:?} among:\n{err}"));
    let text = d.to_string();
    assert!(
        text.contains(contains),
        "message {text:?} lacks {contains:?}"
    );
    if let Some(needle) = at {
        let (l, c) = position(file, needle);
        let loc = format!("{}:{l}:{c}", file.display());
        assert!(
            text.starts_with(&loc),
            "message {text:?} should start with {loc}"
        );
    }
}

#[test]
fn syntax_error_points_at_the_line() {
    let c = Case::new();
    c.edit_policy("threshold = 0.4 ", "threshold = = 0.4 ");
    let e = c.load().unwrap_err();
    expect(
        &e,
        ErrorKind::Syntax,
        "TOML syntax error",
        &c.policy(),
        None,
    );
    let (line, _) = position(&c.policy(), "threshold = = 0.4");
    assert!(
        e.to_string().contains(&format!("policy.toml:{line}:")),
        "{e}"
    );
}

#[test]
fn empty_file_is_an_error_not_defaults() {
    let c = Case::new();
    std::fs::write(c.policy(), "# only a comment\n\n").unwrap();
    let e = c.load().unwrap_err();
    expect(&e, ErrorKind::Empty, "empty", &c.policy(), None);
}

#[test]
fn unknown_key_suggests_the_right_one() {
    let c = Case::new();
    c.edit_policy("threshold = 0.4 ", "treshold = 0.4 ");
    let e = c.load().unwrap_err();
    expect(
        &e,
        ErrorKind::UnknownKey,
        "unknown key `treshold` in [activation], and the required key `threshold` is missing (did you mean `threshold`?)",
        &c.policy(),
        Some("treshold"),
    );
    // The now-missing threshold is said in the same problem, at the typo:
    // one mistake, one problem (issue 29).
    assert_eq!(e.diagnostics.len(), 1, "{e}");
}

#[test]
fn wrong_type_names_the_key() {
    let c = Case::new();
    c.edit_policy("w_keyword = 0.25", "w_keyword = \"0.25\"");
    let e = c.load().unwrap_err();
    expect(
        &e,
        ErrorKind::WrongType,
        "`score.weights.w_keyword` must be a number, found a string",
        &c.policy(),
        Some("\"0.25\""),
    );
}

#[test]
fn non_finite_weight_is_rejected() {
    let c = Case::new();
    c.edit_policy("w_stage = 0.20", "w_stage = nan");
    let e = c.load().unwrap_err();
    expect(
        &e,
        ErrorKind::NonFinite,
        "must be a finite number",
        &c.policy(),
        Some("nan"),
    );
    let c = Case::new();
    c.edit_policy("w_usage = 0.15", "w_usage = inf");
    expect(
        &c.load().unwrap_err(),
        ErrorKind::NonFinite,
        "`score.weights.w_usage`",
        &c.policy(),
        Some("inf"),
    );
}

#[test]
fn threshold_above_the_clamp_can_never_be_reached() {
    let c = Case::new();
    c.edit_policy("threshold = 0.4 ", "threshold = 1.5 ");
    expect(
        &c.load().unwrap_err(),
        ErrorKind::OutOfRange,
        "threshold 1.5 can never be reached: the highest score is 1 (scores are clamped to [0, 1])",
        &c.policy(),
        Some("1.5"),
    );
}

#[test]
fn threshold_above_the_formulas_highest_score_can_never_be_reached() {
    // without the domain term the seed's formula reaches 1.15 - 0.3 = 0.85
    let c = Case::new();
    c.edit_policy("threshold = 0.4 ", "threshold = 0.9 ");
    c.edit_policy("w_domain = 0.30", "w_domain = 0.0");
    expect(
        &c.load().unwrap_err(),
        ErrorKind::OutOfRange,
        "threshold 0.9 can never be reached: the highest score is 0.85",
        &c.policy(),
        Some("0.9 "),
    );
}

#[test]
fn cold_start_threshold_above_the_highest_score_can_never_be_reached() {
    // the seed's formula shifted down by 1.55: raw scores in [-1.54, -0.4];
    // threshold -0.5 is reached, -0.5 × 0.6 = -0.3 (during cold start) is not
    let c = Case::new();
    c.edit_policy("clamp = [0.0, 1.0]", "clamp = [-2.0, 1.0]");
    c.edit_policy("threshold = 0.4 ", "threshold = -0.5 ");
    c.edit_policy("formula = \"", "formula = \"-1.55 + ");
    let e = c.load().unwrap_err();
    expect(
        &e,
        ErrorKind::OutOfRange,
        "the cold-start threshold -0.3 (threshold -0.5 × 0.6) can never be reached: the highest score is -0.4",
        &c.policy(),
        Some("0.6       #"),
    );
}

#[test]
fn cold_start_factor_above_one_is_rejected() {
    let c = Case::new();
    c.edit_policy("threshold_factor = 0.6", "threshold_factor = 1.6");
    expect(
        &c.load().unwrap_err(),
        ErrorKind::OutOfRange,
        "threshold_factor",
        &c.policy(),
        Some("1.6"),
    );
}

#[test]
fn formula_that_does_not_parse() {
    let c = Case::new();
    c.edit_policy(
        "formula = \"w_domain*domain_match +",
        "formula = \"w_domain*domain_match + * ",
    );
    expect(
        &c.load().unwrap_err(),
        ErrorKind::InvalidExpression,
        "the formula does not parse",
        &c.policy(),
        Some("\"w_domain*domain_match + *"),
    );
}

#[test]
fn formula_with_unsupported_operator() {
    let c = Case::new();
    c.edit_policy(
        "formula = \"w_domain*domain_match +",
        "formula = \"(w_domain > 1) + w_domain*domain_match +",
    );
    expect(
        &c.load().unwrap_err(),
        ErrorKind::InvalidExpression,
        "does not support",
        &c.policy(),
        Some("\"(w_domain > 1)"),
    );
}

#[test]
fn formula_with_unknown_name_suggests() {
    let c = Case::new();
    c.edit_policy("w_domain*domain_match", "w_domain*domian_match");
    expect(
        &c.load().unwrap_err(),
        ErrorKind::UnknownName,
        "`domian_match`, which is neither a feature nor a weight of [score.weights] (did you mean `domain_match`?)",
        &c.policy(),
        Some("domian_match"),
    );
}

#[test]
fn formula_with_unknown_function() {
    let c = Case::new();
    c.edit_policy("w_domain*domain_match", "w_domain*sigmoid(domain_match)");
    expect(
        &c.load().unwrap_err(),
        ErrorKind::UnknownName,
        "calls `sigmoid`",
        &c.policy(),
        Some("sigmoid"),
    );
}

#[test]
fn rule_naming_an_undeclared_domain() {
    let c = Case::new();
    c.edit_policy("adjust = { database = 0.4 }", "adjust = { databse = 0.4 }");
    expect(
        &c.load().unwrap_err(),
        ErrorKind::UndeclaredDomain,
        "domain `databse` is not declared in [domains] (did you mean `database`?)",
        &c.policy(),
        Some("databse"),
    );
}

#[test]
fn tag_naming_an_undeclared_domain_and_stage() {
    let c = Case::new();
    let tags = c.dir.path().join("tags/sqlite.toml");
    c.edit(
        &tags,
        "domains = [\"database\", \"data_analysis\"]",
        "domains = [\"databse\", \"data_analysis\"]",
    );
    c.edit(
        &tags,
        "preferred_stages = [\"exploration\", \"debugging\"]",
        "preferred_stages = [\"exploraton\", \"debugging\"]",
    );
    let e = c.load().unwrap_err();
    expect(
        &e,
        ErrorKind::UndeclaredDomain,
        "tool `sqlite.read_query`: domain `databse`",
        &tags,
        Some("\"databse\""),
    );
    expect(
        &e,
        ErrorKind::UndeclaredStage,
        "stage `exploraton` is not declared in [stages] names (did you mean `exploration`?)",
        &tags,
        Some("\"exploraton\""),
    );
}

#[test]
fn duplicate_tool_names_across_files() {
    let c = Case::new();
    let tags = c.dir.path().join("tags/time.toml");
    c.edit(
        &tags,
        "name = \"time.convert_time\"",
        "name = \"sqlite.read_query\"",
    );
    expect(
        &c.load().unwrap_err(),
        ErrorKind::DuplicateTool,
        "tool name `sqlite.read_query` is already used (",
        &tags,
        Some("\"sqlite.read_query\""),
    );
}

/// A bare MCP name (an alias such as `write_file`) that two servers share
/// is not an error: a real catalog beside the shipped tags must load. The
/// alias then names neither tool (a warning says so); a tool's full name
/// keeps its name over another tool's alias.
#[test]
fn clashing_aliases_are_dropped_with_a_warning_full_names_win() {
    let tools = r#"{"server": "dc", "tools": [
        {"name": "write_file", "description": "Write a file", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
        {"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}}]}"#;
    let mut specs = toolgate::load::load_catalog(&Default::default()).unwrap();
    specs.extend(toolgate::parse::tags::import_tools_json("dc.json", tools).unwrap());
    let plan =
        toolgate::compile::compile(&toolgate::load::load_policy(None).unwrap(), specs.clone())
            .unwrap();
    assert!(plan.tool("dc.write_file").is_some() && plan.tool("filesystem.write_file").is_some());
    assert!(
        plan.tool("write_file").is_none(),
        "an alias of two tools names neither"
    );
    assert!(plan.tool("echo").is_none());
    assert!(
        plan.warnings.iter().any(|w| w.contains(
            "`write_file` is an alias of both `filesystem.write_file` and `dc.write_file`"
        )),
        "{:?}",
        plan.warnings
    );
    // A tool whose full name is `write_file` (an OpenAI tools array has no
    // server prefix) takes the name from the shipped alias.
    let bare = r#"[{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object"}}}]"#;
    let mut specs = toolgate::load::load_catalog(&Default::default()).unwrap();
    specs.extend(toolgate::parse::tags::import_tools_json("oa.json", bare).unwrap());
    let plan =
        toolgate::compile::compile(&toolgate::load::load_policy(None).unwrap(), specs).unwrap();
    let i = plan.tool_index("write_file").unwrap();
    assert_eq!(plan.tools[i].name, "write_file");
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("so it is no longer an alias of `filesystem.write_file`")),
        "{:?}",
        plan.warnings
    );
}

#[test]
fn complexity_outside_the_declared_range() {
    let c = Case::new();
    let tags = c.dir.path().join("tags/fetch.toml");
    let text = std::fs::read_to_string(&tags).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("parameter_complexity"))
        .unwrap()
        .to_string();
    c.edit(&tags, &line, "parameter_complexity = 9");
    expect(
        &c.load().unwrap_err(),
        ErrorKind::OutOfRange,
        "parameter_complexity 9 is outside the policy's range [1, 5]",
        &tags,
        Some("9\n"),
    );
}

#[test]
fn unknown_keyword_method_lists_the_accepted_ones() {
    let c = Case::new();
    c.edit_policy("method = \"jaccard\"", "method = \"jacard\"");
    expect(
        &c.load().unwrap_err(),
        ErrorKind::InvalidValue,
        "is not one of: jaccard, containment, bm25 (did you mean `jaccard`?)",
        &c.policy(),
        Some("\"jacard\""),
    );
}

#[test]
fn failing_example_is_an_error_with_its_location() {
    let c = Case::new();
    c.edit_policy(
        "inactive = [\"time.convert_time\", \"everything.echo\"]",
        "inactive = [\"time.convert_time\", \"sqlite.read_query\"]",
    );
    expect(
        &c.load().unwrap_err(),
        ErrorKind::ExampleFailed,
        "`sqlite.read_query` must be inactive but is active",
        &c.policy(),
        Some("\"sqlite.read_query\"]"),
    );
}

#[test]
fn rule_expression_with_unknown_variable() {
    let c = Case::new();
    c.edit_policy(
        "when = { language = [\"python\"] }",
        "when = { expr = \"contains(intent_keyword, \\\"x\\\")\" }",
    );
    expect(
        &c.load().unwrap_err(),
        ErrorKind::UnknownName,
        "`intent_keyword`, which is not a context variable (did you mean `intent_keywords`?)",
        &c.policy(),
        None,
    );
}

#[test]
fn missing_file_is_an_io_error() {
    let e = load_plan(&Sources {
        policy: Some("/nonexistent/p.toml".into()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.has(ErrorKind::Io));
    assert!(e.to_string().contains("/nonexistent/p.toml"));
}

#[test]
fn several_errors_are_reported_at_once() {
    let c = Case::new();
    c.edit_policy("threshold = 0.4 ", "threshold = 4.0 ");
    c.edit_policy("w_stage = 0.20", "w_stage = \"x\"");
    c.edit_policy("bonus = 0.15", "bonnus = 0.15");
    let e = c.load().unwrap_err();
    assert!(
        e.has(ErrorKind::OutOfRange) && e.has(ErrorKind::WrongType) && e.has(ErrorKind::UnknownKey),
        "{e}"
    );
    assert!(e.diagnostics.len() >= 3);
}

#[test]
fn garbage_never_panics() {
    for text in [
        "\u{0}",
        "[[[",
        "a = 1",
        "[activation]\nthreshold = []",
        "[score]\nformula = 3",
        "x = \"\\u{D800}\"",
        "[domains]\na = true",
    ] {
        let r = parse_policy(SourceFile::new("g.toml", text));
        assert!(r.is_err(), "{text:?} should not load");
    }
}

#[test]
fn formula_that_divides_by_zero_is_rejected() {
    let c = Case::new();
    c.edit_policy("+ recency_bonus -", "+ recency_bonus / 0 -");
    expect(
        &c.load().unwrap_err(),
        ErrorKind::InvalidExpression,
        "the formula gives",
        &c.policy(),
        None,
    );
}

#[test]
fn overlong_formula_is_rejected_before_parsing() {
    let c = Case::new();
    let long = format!("formula = \"{}w_domain*domain_match", "-".repeat(50_000));
    c.edit_policy("formula = \"w_domain*domain_match", &long);
    expect(
        &c.load().unwrap_err(),
        ErrorKind::InvalidExpression,
        "at most 2000 are accepted",
        &c.policy(),
        None,
    );
}

#[test]
fn negative_counts_are_rejected() {
    let c = Case::new();
    c.edit_policy("min_calls = 5", "min_calls = -5");
    c.edit_policy("recent_calls_window = 5", "recent_calls_window = -1");
    let e = c.load().unwrap_err();
    expect(
        &e,
        ErrorKind::OutOfRange,
        "`activation.cold_start.min_calls` must be 0 or more",
        &c.policy(),
        Some("-5"),
    );
    expect(
        &e,
        ErrorKind::OutOfRange,
        "`activation.recent_calls_window` must be 0 or more",
        &c.policy(),
        Some("-1"),
    );
}

#[test]
fn example_naming_a_misspelt_tool_is_an_error() {
    let c = Case::new();
    c.edit_policy(
        "active = [\"sqlite.read_query\"]",
        "active = [\"sqlite.read_querry\"]",
    );
    expect(
        &c.load().unwrap_err(),
        ErrorKind::ExampleFailed,
        "tool `sqlite.read_querry` is not in the catalog (did you mean `sqlite.read_query`?)",
        &c.policy(),
        Some("\"sqlite.read_querry\""),
    );
}

#[test]
fn tool_names_with_control_characters_are_rejected() {
    let c = Case::new();
    let tags = c.dir.path().join("tags/time.toml");
    c.edit(
        &tags,
        "name = \"time.convert_time\"",
        "name = \"time.convert\\u001b[31m\"",
    );
    expect(
        &c.load().unwrap_err(),
        ErrorKind::InvalidValue,
        "without spaces or control characters",
        &tags,
        None,
    );
}

#[test]
fn thousands_of_problems_are_counted_not_all_printed() {
    let c = Case::new();
    let mut text = String::new();
    for i in 0..5000 {
        text += &format!("[[tool]]\nname = \"t{i}\"\ndomains = [\"database\"]\n\n");
    }
    std::fs::write(c.dir.path().join("tags/many.toml"), text).unwrap();
    let e = c.load().unwrap_err();
    assert!(e.diagnostics.len() >= 5000);
    let shown = e.to_string();
    assert!(
        shown.contains(&format!(
            "… {} more problems",
            e.diagnostics.len() - toolgate::diag::MAX_SHOWN
        )),
        "{}",
        &shown[shown.len() - 200..]
    );
}

#[test]
fn half_tagged_inline_tools_are_rejected() {
    let e = toolgate::input::EvalInput::parse(
        r#"{"tools": [{"name": "a", "domains": ["nope"], "base_priority": 0.5}]}"#,
    )
    .unwrap_err();
    assert!(
        e.contains("tool `a`: base_priority and parameter_complexity are required"),
        "{e}"
    );
    let e = toolgate::input::EvalInput::parse("[1, 2]").unwrap_err();
    assert!(e.contains("must be a JSON object"), "{e}");
}
