//! Selection quality features (issue 10): the absolute relevance floor,
//! conversation memory, transitions (learned and declared with `follows`),
//! catalog-derived query expansion, the static-embedding `semantic_match`,
//! and the load errors of their keys, each with its file:line:column.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate::compile::compile;
use toolgate::diag::SourceFile;
use toolgate::load::{Sources, load_plan, load_policy};
use toolgate::parse::tags::{InlineTool, import_tools_json};
use toolgate::plan::{F_KEYWORD, F_SEMANTIC, F_TRANSITION};
use toolgate::{ErrorKind, LoadError, Plan, SessionContext, UsageStats};

/// A minimal BM25 policy; `extra` is appended (new tables), `formula` replaces the score.
fn policy_text(formula: &str, extra: &str) -> String {
    format!(
        r#"[policy]
name = "t"
[activation]
threshold = 0.3
clamp = [0.0, 1.0]
recent_calls_window = 5
[score]
formula = "{formula}"
[score.weights]
w_k = 1.0
w_t = 1.0
[features.domain_match]
neutral = 0.5
[features.keyword_match]
method = "bm25"
k1 = 1.2
b = 0.3
split_identifiers = true
stemmer = "english"
[features.keyword_match.fields]
name = 3.0
description = 1.0
[features.stage_match]
hit = 1.0
miss = 0.0
[features.usage_bonus]
normalization = "busiest_tool"
multiplier = 1.0
cap = 1.0
[features.recency_bonus]
window_seconds = 300.0
bonus = 0.1
[features.complexity_penalty]
min = 1
max = 5
cap = 1.0
[domains]
general = 1.0
[stages]
names = ["exploration"]
[keywords]
min_length = 2
max_count = 64
letters_only = false
stop_words = ["the", "a", "me", "in"]
[auto_tags]
base_priority = 0.3
max_keywords = 0
parameter_complexity = 1
{extra}"#
    )
}

struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Self {
        Dir {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
    /// Loads `policy.toml` (written from `text`) with the OpenAI-style tools `tools`.
    fn plan(&self, text: &str, tools: &[(&str, &str)]) -> Result<Arc<Plan>, LoadError> {
        let p = self.write("policy.toml", text);
        let arr: Vec<serde_json::Value> = tools
            .iter()
            .map(|(n, d)| {
                serde_json::json!({"type": "function", "function": {"name": n, "description": d, "parameters": {"type": "object", "properties": {}}}})
            })
            .collect();
        let catalog = import_tools_json("tools.json", &serde_json::Value::Array(arr).to_string())?;
        let policy = load_policy(Some(&p))?;
        compile(&policy, catalog).map(Arc::new)
    }
}

fn ctx(current: &[&str], previous: &[&[&str]]) -> SessionContext {
    let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    SessionContext {
        user_intent_keywords: v(current),
        previous_intent_keywords: previous.iter().map(|p| v(p)).collect(),
        ..Default::default()
    }
}

const TOOLS: &[(&str, &str)] = &[
    ("get_weather", "Current weather and forecast for a city"),
    ("stock_price", "The latest price of a stock"),
    ("read_file", "Read a text file from disk"),
];

#[test]
fn relevance_floor_keeps_weak_matches_out() {
    let d = Dir::new();
    let formula = "w_k*keyword_match";
    let msg = ["weather", "price"];
    // No floor: both matching tools are scored relative to the best.
    let plan = d.plan(&policy_text(formula, ""), TOOLS).unwrap();
    let act = plan.evaluate(&ctx(&msg, &[]), &UsageStats::default(), 0.0);
    let (w, s) = (act.keyword_raw(0), act.keyword_raw(1));
    assert!(w > 0.0 && s > 0.0 && (w - s).abs() > 1e-9, "{w} {s}");
    let (strong, weak) = if w > s { (0, 1) } else { (1, 0) };
    let (hi, lo) = (w.max(s), w.min(s));
    assert!(
        act.tools[weak].active,
        "relative to the best, the weaker one is close enough"
    );
    // A floor between the two raw scores: the weaker match is out, the
    // stronger keeps keyword_match 1 (the best passing tool sets the divisor).
    let mid = (hi + lo) / 2.0;
    let extra = format!("[features.keyword_match.relevance]\nmin_score = {mid}\n");
    let plan = d.plan(&policy_text(formula, &extra), TOOLS).unwrap();
    let act = plan.evaluate(&ctx(&msg, &[]), &UsageStats::default(), 0.0);
    assert_eq!(act.features(weak)[F_KEYWORD], 0.0);
    assert_eq!(act.features(strong)[F_KEYWORD], 1.0);
    assert_eq!(act.active_names().len(), 1);
    // A floor above every score: nothing fits, nothing is exposed.
    let extra = format!(
        "[features.keyword_match.relevance]\nmin_score = {}\n",
        hi * 2.0
    );
    let plan = d.plan(&policy_text(formula, &extra), TOOLS).unwrap();
    let act = plan.evaluate(&ctx(&msg, &[]), &UsageStats::default(), 0.0);
    assert!(act.active_names().is_empty());
    assert!(act.tools.iter().all(|t| t.score == 0.0));
    // The raw score is still reported (fit chooses the floor from it).
    assert_eq!(act.keyword_raw(strong), hi);
}

#[test]
fn coverage_floor_needs_most_of_the_query() {
    let d = Dir::new();
    let tools = &[
        ("city_weather", "weather forecast for a city"),
        ("weather_alerts", "severe weather alerts"),
    ];
    let msg = ["city", "weather", "forecast"];
    let extra = "[features.keyword_match.relevance]\nmin_coverage = 0.9\n";
    let plan = d
        .plan(&policy_text("w_k*keyword_match", extra), tools)
        .unwrap();
    let act = plan.evaluate(&ctx(&msg, &[]), &UsageStats::default(), 0.0);
    // city_weather covers all three terms; weather_alerts only `weather`.
    assert_eq!(act.features(0)[F_KEYWORD], 1.0);
    assert_eq!(act.features(1)[F_KEYWORD], 0.0);
    let plan = d
        .plan(&policy_text("w_k*keyword_match", ""), tools)
        .unwrap();
    let act = plan.evaluate(&ctx(&msg, &[]), &UsageStats::default(), 0.0);
    assert!(act.features(1)[F_KEYWORD] > 0.0);
}

#[test]
fn memory_keeps_earlier_turns_with_decaying_weight() {
    let d = Dir::new();
    let f = "w_k*keyword_match";
    let usage = UsageStats::default();
    // The seed's rule: the latest message replaces the earlier ones.
    let plain = d.plan(&policy_text(f, ""), TOOLS).unwrap();
    let c = ctx(&["tomorrow", "paris"], &[&["weather", "forecast"]]);
    assert_eq!(plain.evaluate(&c, &usage, 0.0).keyword_raw(0), 0.0);
    // With memory, the earlier message still counts, weighted decay^turns back.
    let extra = "[keywords.memory]\nturns = 2\ndecay = 0.5\n";
    let mem = d.plan(&policy_text(f, extra), TOOLS).unwrap();
    let now = mem
        .evaluate(&ctx(&["weather", "forecast"], &[]), &usage, 0.0)
        .keyword_raw(0);
    let one_back = mem.evaluate(&c, &usage, 0.0).keyword_raw(0);
    let two_back = mem
        .evaluate(
            &ctx(&["paris"], &[&["tomorrow"], &["weather", "forecast"]]),
            &usage,
            0.0,
        )
        .keyword_raw(0);
    assert!(now > 0.0);
    assert!((one_back - 0.5 * now).abs() < 1e-9, "{one_back} vs {now}");
    assert!((two_back - 0.25 * now).abs() < 1e-9, "{two_back} vs {now}");
    assert!(mem.evaluate(&c, &usage, 0.0).tools[0].active);
    // Three turns back is beyond `turns = 2`.
    let three = mem.evaluate(
        &ctx(&["paris"], &[&["a"], &["b"], &["weather", "forecast"]]),
        &usage,
        0.0,
    );
    assert_eq!(three.keyword_raw(0), 0.0);
    // A term in both the latest and an earlier message keeps weight 1.
    let both = mem
        .evaluate(
            &ctx(&["weather", "forecast"], &[&["weather", "forecast"]]),
            &usage,
            0.0,
        )
        .keyword_raw(0);
    assert!((both - now).abs() < 1e-9);
}

#[test]
fn session_remembers_as_many_messages_as_asked() {
    let mut s = toolgate::Session::new();
    s.user_message(vec!["a".into()], 2);
    assert!(s.context.previous_intent_keywords.is_empty());
    s.user_message(vec!["b".into()], 2);
    s.user_message(vec!["c".into()], 2);
    s.user_message(vec!["d".into()], 2);
    assert_eq!(s.context.user_intent_keywords, vec!["d"]);
    assert_eq!(
        s.context.previous_intent_keywords,
        vec![vec!["c".to_string()], vec!["b".to_string()]]
    );
    s.user_message(vec!["e".into()], 0);
    assert!(s.context.previous_intent_keywords.is_empty());
}

const SHELL: &[(&str, &str)] = &[
    ("cd", "Change the directory"),
    ("ls", "List the files"),
    ("mkdir", "Make a directory"),
    ("cat", "Show a file"),
];

fn after(plan: &Arc<Plan>, last: Option<&str>) -> Vec<f64> {
    let c = SessionContext {
        recent_tool_calls: last.map(|l| vec![l.to_string()]).unwrap_or_default(),
        ..Default::default()
    };
    let act = plan.evaluate(&c, &UsageStats::default(), 0.0);
    (0..plan.tools.len())
        .map(|i| act.features(i)[F_TRANSITION])
        .collect()
}

#[test]
fn learned_transitions_are_smoothed_probabilities() {
    let d = Dir::new();
    d.write(
        "t.toml",
        "[after.\"cd\"]\n\"ls\" = 3\n\"mkdir\" = 1\n[after.\"ls\"]\n\"cat\" = 4\n[after.\"gone\"]\n\"ls\" = 9\n",
    );
    let f = "w_k*keyword_match + w_t*transition_match";
    let table = |s: f64| {
        format!("[features.transition_match]\ndeclared = 1.0\nfile = \"t.toml\"\nsmoothing = {s}\n")
    };
    // No smoothing: P(ls | cd) = 3/4, P(mkdir | cd) = 1/4.
    let plan = d.plan(&policy_text(f, &table(0.0)), SHELL).unwrap();
    assert_eq!(after(&plan, Some("cd")), vec![0.0, 0.75, 0.25, 0.0]);
    assert_eq!(after(&plan, Some("ls")), vec![0.0, 0.0, 0.0, 1.0]);
    assert_eq!(
        after(&plan, None),
        vec![0.0; 4],
        "no call yet: no transition"
    );
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("1 of the 4 learned transition pairs of t.toml")),
        "{:?}",
        plan.warnings
    );
    // Smoothing s = 2 toward q = successor shares (ls 3/8, mkdir 1/8, cat 4/8):
    // P(B | cd) = (count + 2 q(B)) / (4 + 2).
    let plan = d.plan(&policy_text(f, &table(2.0)), SHELL).unwrap();
    let got = after(&plan, Some("cd"));
    let want = [0.0, (3.0 + 0.75) / 6.0, (1.0 + 0.25) / 6.0, 1.0 / 6.0];
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
    }
    // A tool never seen as a predecessor backs off to q.
    assert_eq!(after(&plan, Some("mkdir")), vec![0.0, 0.375, 0.125, 0.5]);
    // The successor becomes active after `cd` with no keyword at all.
    let c = SessionContext {
        recent_tool_calls: vec!["cd".into()],
        ..Default::default()
    };
    let act = plan.evaluate(&c, &UsageStats::default(), 0.0);
    assert_eq!(act.active_names(), vec!["ls"]);
}

#[test]
fn declared_follows_from_tags() {
    let d = Dir::new();
    let f = "w_k*keyword_match + w_t*transition_match";
    let p = d.write(
        "policy.toml",
        &policy_text(f, "[features.transition_match]\ndeclared = 0.6\n"),
    );
    let tools: Vec<InlineTool> = serde_json::from_value(serde_json::json!([
        {"name": "auth.login", "description": "Log in"},
        {"name": "orders.list", "description": "List orders", "follows": ["auth.login"]},
        {"name": "orders.cancel", "description": "Cancel an order", "follows": ["orders.list", "auth.login"]}
    ]))
    .unwrap();
    let policy = load_policy(Some(&p)).unwrap();
    let plan =
        Arc::new(compile(&policy, tools.into_iter().map(|t| t.into_spec()).collect()).unwrap());
    assert_eq!(after(&plan, Some("auth.login")), vec![0.0, 0.6, 0.6]);
    assert_eq!(after(&plan, Some("orders.list")), vec![0.0, 0.0, 0.6]);
    assert_eq!(after(&plan, None), vec![0.0; 3]);
}

#[test]
fn follows_naming_an_unknown_tool_is_an_error_in_the_tag_file() {
    let d = Dir::new();
    std::fs::create_dir(d.dir.path().join("tags")).unwrap();
    let tag = d.write(
        "tags/t.toml",
        "[[tool]]\nname = \"orders.list\"\nfollows = [\"auth.logn\"]\n\n[[tool]]\nname = \"auth.login\"\n",
    );
    let p = d.write(
        "policy.toml",
        &policy_text(
            "w_k*keyword_match",
            "[features.transition_match]\ndeclared = 1.0\n",
        ),
    );
    let e = load_plan(&Sources {
        policy: Some(p),
        tags: Some(d.dir.path().join("tags")),
        tools: vec![],
    })
    .unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("{}:3:12", tag.display())), "{msg}");
    assert!(msg.contains("`follows` names `auth.logn`"), "{msg}");
    assert!(msg.contains("did you mean `auth.login`"), "{msg}");
    assert_eq!(e.diagnostics[0].kind, ErrorKind::UnknownName);
}

#[test]
fn expansion_reaches_a_tool_named_in_other_words() {
    let d = Dir::new();
    let tools = &[
        ("trash_item", "Remove or delete an item from the list"),
        ("purge_cache", "Delete and remove cached entries"),
        ("erase_note", "Delete a note"),
        ("get_weather", "Current weather"),
    ];
    let f = "w_k*keyword_match";
    let usage = UsageStats::default();
    let plain = d.plan(&policy_text(f, ""), tools).unwrap();
    let act = plain.evaluate(&ctx(&["remove"], &[]), &usage, 0.0);
    assert_eq!(
        act.keyword_raw(2),
        0.0,
        "`remove` is not in erase_note's text"
    );
    let extra = "[features.keyword_match.expansion]\nneighbours = 2\nweight = 0.5\nmin_similarity = 0.5\nmin_shared = 2\n";
    let exp = d.plan(&policy_text(f, extra), tools).unwrap();
    let idx = exp.bm25.as_ref().unwrap();
    let id = |t: &str| idx.terms[t];
    // remove and delete share 2 tools; df 2 and 3: cosine 2 / sqrt(6).
    let rel = &idx.related[id("remov") as usize];
    let sim = rel.iter().find(|x| x.0 == id("delet")).unwrap().1;
    assert!((sim - 2.0 / 6f64.sqrt()).abs() < 1e-12, "{rel:?}");
    let act = exp.evaluate(&ctx(&["remove"], &[]), &usage, 0.0);
    assert!(act.keyword_raw(2) > 0.0, "reached through `delete`");
    assert_eq!(act.keyword_raw(3), 0.0, "unrelated tools stay at 0");
    // Direct matches still rank first.
    assert!(act.keyword_raw(0) > act.keyword_raw(2));
}

/// The shipped static model, by absolute path.
fn shipped_model() -> String {
    format!(
        "{}/policies/models/minilm-static-128",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn semantic_match_reaches_a_tool_named_in_other_words() {
    let d = Dir::new();
    let tools = &[
        ("delete_file", "Delete a file at the given path"),
        ("get_forecast", "Weather forecast for a city"),
        ("send_email", "Send an email message to a recipient"),
        ("stock_price", "The latest price of a stock"),
    ];
    let usage = UsageStats::default();
    let f = "w_k*keyword_match + w_t*semantic_match";
    let plain = d
        .plan(&policy_text("w_k*keyword_match", ""), tools)
        .unwrap();
    let extra = format!(
        "[features.semantic_match]\nmodel = {:?}\nnormalization = \"best\"\n",
        shipped_model()
    );
    let sem = d.plan(&policy_text(f, &extra), tools).unwrap();
    // No word of the request is in any tool's text: BM25 finds nothing.
    let request = ctx(&["erase", "document", "notes.txt"], &[]);
    let act = plain.evaluate(&request, &usage, 0.0);
    assert!(act.active_names().is_empty(), "{:?}", act.active_names());
    assert!((0..4).all(|i| act.keyword_raw(i) == 0.0));
    // The semantic match ranks delete_file first, with 1 (normalization "best").
    let act = sem.evaluate(&request, &usage, 0.0);
    let values: Vec<f64> = (0..4).map(|i| act.features(i)[F_SEMANTIC]).collect();
    assert_eq!(values[0], 1.0, "{values:?}");
    assert!(
        values[1..].iter().all(|&v| (0.0..1.0).contains(&v)),
        "{values:?}"
    );
    assert!(act.get("delete_file").unwrap().active);
    let explained = act.explain(0);
    let term = explained
        .iter()
        .find(|t| t.feature == Some("semantic_match"))
        .expect("the term is explained");
    assert_eq!(term.value, Some(1.0));
    // A remembered message counts with its decayed weight. Without memory
    // the earlier message is ignored; with it, "write mail" then "bob"
    // brings send_email first.
    let follow_up = ctx(&["bob"], &[&["write", "mail"]]);
    let alone = ctx(&["bob"], &[]);
    let a = sem.evaluate(&follow_up, &usage, 0.0);
    let b = sem.evaluate(&alone, &usage, 0.0);
    let feats = |act: &toolgate::Activation| -> Vec<f64> {
        (0..4).map(|i| act.features(i)[F_SEMANTIC]).collect()
    };
    assert_eq!(
        feats(&a),
        feats(&b),
        "no memory: earlier messages do not count"
    );
    let with_memory = sem_with_memory(&d, tools, &extra);
    let act = with_memory.evaluate(&follow_up, &usage, 0.0);
    assert_eq!(
        feats(&act)[2],
        1.0,
        "send_email is the closest: {:?}",
        feats(&act)
    );
    assert_ne!(feats(&act), feats(&b));
    // Without the table the feature is 0 for every tool.
    let act = plain.evaluate(&request, &usage, 0.0);
    assert!((0..4).all(|i| act.features(i)[F_SEMANTIC] == 0.0));
}

/// `[features.semantic_match] input = "message"` embeds each user message
/// as written (the context's `user_message` and `previous_user_messages`,
/// kept by `Session::user_message_text`), where the default `"keywords"`
/// embeds the stemmed keywords without stop words; a turn without text
/// falls back to its keywords.
#[test]
fn semantic_input_message_embeds_the_text_as_written() {
    let d = Dir::new();
    let tools = &[
        ("delete_file", "Delete a file at the given path"),
        ("get_forecast", "Weather forecast for a city"),
        ("send_email", "Send an email message to a recipient"),
    ];
    let table = format!(
        "[features.semantic_match]\nmodel = {:?}\nnormalization = \"best\"\n",
        shipped_model()
    );
    let keywords = sem_with_memory(&d, tools, &table);
    let message = sem_with_memory(&d, tools, &format!("{table}input = \"message\"\n"));
    let (first, latest) = (
        "Erase the documents in the archive",
        "then the mailing of them to Bob",
    );
    let mut s = toolgate::context::Session::new();
    for text in [first, latest] {
        s.user_message_text(text, message.analyzer.extract(text), 1);
    }
    let c = &s.context;
    assert_eq!(c.user_message.as_deref(), Some(latest));
    assert_eq!(c.previous_user_messages, [first]);
    assert_eq!(c.previous_intent_keywords.len(), 1);
    assert_ne!(c.user_intent_keywords.join(" "), latest.to_lowercase());

    let usage = UsageStats::default();
    let feats = |plan: &Arc<Plan>, c: &SessionContext| -> Vec<f64> {
        let act = plan.evaluate(c, &usage, 0.0);
        (0..3).map(|i| act.features(i)[F_SEMANTIC]).collect()
    };
    let expect = |plan: &Arc<Plan>, turns: &[(&[String], f64)]| {
        let mut out = Vec::new();
        plan.semantic.as_ref().unwrap().score(turns, &mut out);
        out
    };
    let (t_latest, t_first) = ([latest.to_string()], [first.to_string()]);
    let by_text = expect(&message, &[(&t_latest, 1.0), (&t_first, 0.5)]);
    let by_keywords = expect(
        &keywords,
        &[
            (&c.user_intent_keywords, 1.0),
            (&c.previous_intent_keywords[0], 0.5),
        ],
    );
    assert_eq!(feats(&message, c), by_text);
    assert_eq!(feats(&keywords, c), by_keywords);
    assert_ne!(by_text, by_keywords, "the texts are not the keywords");
    // A context without the texts (a host that sends keywords only).
    let bare = ctx(
        &c.user_intent_keywords
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        &[&c.previous_intent_keywords[0]
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()],
    );
    assert_eq!(feats(&message, &bare), by_keywords);
    // An `eval` input's `message` is the text too (unless the context has one).
    let input: toolgate::input::EvalInput =
        serde_json::from_value(serde_json::json!({"message": latest})).unwrap();
    let (resolved, _, _) = input.resolve(&message).unwrap();
    assert_eq!(resolved.user_message.as_deref(), Some(latest));
    let input: toolgate::input::EvalInput = serde_json::from_value(
        serde_json::json!({"message": latest, "context": {"user_message": first}}),
    )
    .unwrap();
    let (resolved, _, _) = input.resolve(&message).unwrap();
    assert_eq!(resolved.user_message.as_deref(), Some(first));
    // A turn recorded without text keeps the lists aligned.
    let mut s = toolgate::context::Session::new();
    s.user_message(vec!["erase".into()], 2);
    s.user_message_text("mail it", vec!["mail".into()], 2);
    assert!(s.context.previous_user_messages.is_empty());
    s.user_message_text("to Bob", vec!["bob".into()], 2);
    assert_eq!(s.context.previous_user_messages, ["mail it", ""]);
    assert_eq!(s.context.previous_intent_keywords, [["mail"], ["erase"]]);
}

fn sem_with_memory(d: &Dir, tools: &[(&str, &str)], extra: &str) -> Arc<Plan> {
    let f = "w_k*keyword_match + w_t*semantic_match";
    let text = policy_text(f, extra).replace(
        "[auto_tags]",
        "[keywords.memory]\nturns = 1\ndecay = 0.5\n[auto_tags]",
    );
    d.plan(&text, tools).unwrap()
}

/// Loads `text` as `policy.toml` in `d` (with the shipped tags) and returns the error.
fn load_err(d: &Dir, text: &str) -> (LoadError, PathBuf) {
    let p = d.write("policy.toml", text);
    let e = load_plan(&Sources {
        policy: Some(p.clone()),
        tags: None,
        tools: vec![],
    })
    .unwrap_err();
    (e, p)
}

fn at(file: &Path, needle: &str) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let off = text.find(needle).unwrap_or_else(|| panic!("{needle:?}"));
    let (l, c) = SourceFile::new("x", text.as_str()).line_col(off);
    format!("{}:{l}:{c}", file.display())
}

fn expect(e: &LoadError, kind: ErrorKind, contains: &str, loc: &str) {
    let d = e
        .diagnostics
        .iter()
        .find(|d| d.kind == kind && d.to_string().contains(contains))
        .unwrap_or_else(|| panic!("no {kind:?} with {contains:?} among:\n{e}"));
    assert!(
        d.to_string().starts_with(loc),
        "{d} should start with {loc}"
    );
}

#[test]
fn bad_new_keys_are_load_errors_with_positions() {
    let d = Dir::new();
    let f = "w_k*keyword_match + w_t*transition_match";
    let cases: &[(&str, ErrorKind, &str, &str)] = &[
        (
            "[keywords.memory]\nturns = 2\ndecay = 1.5\n",
            ErrorKind::OutOfRange,
            "`keywords.memory.decay` must be within [0, 1], found 1.5",
            "1.5",
        ),
        (
            "[keywords.memory]\nturns = -1\ndecay = 0.5\n",
            ErrorKind::OutOfRange,
            "`keywords.memory.turns` must be 0 or more",
            "-1",
        ),
        (
            "[keywords.memory]\nturns = 2\ndecy = 0.5\n",
            ErrorKind::UnknownKey,
            "unknown key `decy` in [keywords.memory], and the required key `decay` is missing (did you mean `decay`?)",
            "decy",
        ),
        (
            "[features.keyword_match.relevance]\nmin_score = -3\n",
            ErrorKind::OutOfRange,
            "`features.keyword_match.relevance.min_score` must be within [0, ∞], found -3",
            "-3",
        ),
        (
            "[features.keyword_match.relevance]\nmin_coverage = 2\n",
            ErrorKind::OutOfRange,
            "min_coverage` must be within [0, 1], found 2",
            "2\n",
        ),
        (
            "[features.keyword_match.relevance]\nmin_share = 1.5\n",
            ErrorKind::OutOfRange,
            "min_share` must be within [0, 1], found 1.5",
            "1.5",
        ),
        (
            "[features.keyword_match.relevance]\nmin_score_idf = -1\n",
            ErrorKind::OutOfRange,
            "min_score_idf` must be within [0, ∞], found -1",
            "-1",
        ),
        (
            "[features.keyword_match.relevance]\nmin_coverage = 0.2\nquery_terms = \"every\"\n",
            ErrorKind::InvalidValue,
            "query_terms` = \"every\" is not one of: known, all",
            "\"every\"",
        ),
        (
            "[features.keyword_match.relevance]\n",
            ErrorKind::MissingKey,
            "needs `min_score`, `min_score_idf`, `min_coverage` or `min_share`",
            "[features.keyword_match.relevance]",
        ),
        (
            "[features.keyword_match.expansion]\nneighbours = 0\nweight = 0.3\n",
            ErrorKind::OutOfRange,
            "`features.keyword_match.expansion.neighbours` must be 1 or more, found 0",
            "0\nweight",
        ),
        (
            "[features.transition_match]\nfile = \"t.toml\"\nsmoothing = 1\n",
            ErrorKind::MissingKey,
            "missing the required key `declared`",
            "[features.transition_match]",
        ),
        (
            "[features.transition_match]\ndeclared = 1.0\nfile = \"t.toml\"\n",
            ErrorKind::MissingKey,
            "missing the required key `smoothing`",
            "[features.transition_match]",
        ),
        (
            "[features.transition_match]\ndeclared = 1.0\nfile = \"missing.toml\"\nsmoothing = 1\n",
            ErrorKind::Io,
            "cannot read the transitions file",
            "\"missing.toml\"",
        ),
        #[cfg(unix)]
        (
            "[features.transition_match]\ndeclared = 1.0\nfile = \"zero.toml\"\nsmoothing = 1\n",
            ErrorKind::Io,
            "zero.toml: not a regular file (a character device)",
            "\"zero.toml\"",
        ),
        #[cfg(unix)]
        (
            "[features.transition_match]\ndeclared = 1.0\nfile = \"fifo.toml\"\nsmoothing = 1\n",
            ErrorKind::Io,
            "not a regular file (a FIFO)",
            "\"fifo.toml\"",
        ),
        #[cfg(unix)]
        (
            "[features.semantic_match]\nmodel = \"fifo-model\"\nnormalization = \"best\"\n",
            ErrorKind::Io,
            "fifo-model/tokenizer.json: not a regular file (a FIFO)",
            "\"fifo-model\"",
        ),
        (
            "[features.semantic_match]\nnormalization = \"best\"\n",
            ErrorKind::MissingKey,
            "missing the required key `model`",
            "[features.semantic_match]",
        ),
        (
            "[features.semantic_match]\nmodel = \"m\"\nnormalization = \"cosine\"\n",
            ErrorKind::InvalidValue,
            "normalization` = \"cosine\" is not one of: best, none",
            "\"cosine\"",
        ),
        (
            "[features.semantic_match]\nmodel = \"nowhere\"\nnormalization = \"best\"\n",
            ErrorKind::Io,
            "does not exist (a model folder holds",
            "\"nowhere\"",
        ),
        (
            "[features.semantic_match]\nmodel = \"broken\"\nnormalization = \"best\"\n",
            ErrorKind::InvalidValue,
            "`features.semantic_match.model`: ",
            "\"broken\"",
        ),
        (
            "[features.semantic_match]\nmodel = \"m\"\nnormalization = \"best\"\ninput = \"words\"\n",
            ErrorKind::InvalidValue,
            "input` = \"words\" is not one of: keywords, message",
            "\"words\"",
        ),
        (
            "[features.semantic_match]\nmodel = \"m\"\nnormalization = \"confidence\"\n",
            ErrorKind::MissingKey,
            "missing the required key `confidence_rank`",
            "[features.semantic_match]",
        ),
        (
            "[features.semantic_match]\nmodel = \"m\"\nnormalization = \"confidence\"\nconfidence_rank = 1\n",
            ErrorKind::InvalidValue,
            "`confidence_rank` = 1 must be within [2, 10000]",
            "1\n",
        ),
        (
            "[features.semantic_match]\nmodel = \"m\"\nnormalization = \"best\"\nconfidence_rank = 5\n",
            ErrorKind::InvalidValue,
            "`confidence_rank` is read only with `normalization = \"confidence\"`",
            "5\n",
        ),
        (
            "[features.semantic_match]\nmodel = \"m\"\nnormalisation = \"best\"\n",
            ErrorKind::UnknownKey,
            "unknown key `normalisation`",
            "normalisation",
        ),
    ];
    // A model folder whose files are there but are not a model.
    std::fs::create_dir_all(d.dir.path().join("broken")).unwrap();
    d.write("broken/tokenizer.json", "{}");
    d.write("broken/model.safetensors", "not safetensors");
    d.write("broken/config.json", "{}");
    d.write("t.toml", "[after.cd]\nls = 1\n");
    // Files that never end or never open (attack report 2, item 8): refused
    // without reading or blocking.
    #[cfg(unix)]
    {
        let mkfifo = |p: &Path| {
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        };
        std::os::unix::fs::symlink("/dev/zero", d.dir.path().join("zero.toml")).unwrap();
        mkfifo(&d.dir.path().join("fifo.toml"));
        let m = d.dir.path().join("fifo-model");
        std::fs::create_dir_all(&m).unwrap();
        mkfifo(&m.join("tokenizer.json"));
    }
    for (extra, kind, msg, needle) in cases {
        let (e, p) = load_err(&d, &policy_text(f, extra));
        // the needle is searched after the base text, in the appended tables
        let text = std::fs::read_to_string(&p).unwrap();
        let base = policy_text(f, "").len();
        let off = base + text[base..].find(needle).unwrap();
        let (l, c) = SourceFile::new("x", text.as_str()).line_col(off);
        expect(&e, *kind, msg, &format!("{}:{l}:{c}", p.display()));
    }
    // `relevance` and `expansion` need BM25.
    let text = policy_text(f, "[features.keyword_match.relevance]\nmin_score = 1\n")
        .replace("method = \"bm25\"", "method = \"jaccard\"")
        .replace(
            "k1 = 1.2\nb = 0.3\nsplit_identifiers = true\nstemmer = \"english\"\n",
            "",
        )
        .replace(
            "[features.keyword_match.fields]\nname = 3.0\ndescription = 1.0\n",
            "",
        );
    let (e, p) = load_err(&d, &text);
    expect(
        &e,
        ErrorKind::InvalidValue,
        "`features.keyword_match.relevance` needs `method = \"bm25\"`",
        &at(&p, "relevance]"),
    );
    // A transitions file that does not parse is reported in that file.
    let t = d.write("bad.toml", "[after.cd]\nls = -2\n[befor]\n");
    let (e, _) = load_err(
        &d,
        &policy_text(
            f,
            "[features.transition_match]\ndeclared = 1.0\nfile = \"bad.toml\"\nsmoothing = 1\n",
        ),
    );
    expect(
        &e,
        ErrorKind::OutOfRange,
        "must be 0 or more, found -2",
        &at(&t, "-2"),
    );
    expect(
        &e,
        ErrorKind::UnknownKey,
        "unknown key `befor`",
        &at(&t, "befor"),
    );
}

#[test]
fn seed_presets_declare_none_of_the_new_tables() {
    for p in ["policies/default.toml", "policies/seed-article.toml"] {
        let policy = load_policy(Some(Path::new(p))).unwrap();
        assert!(policy.memory.is_none(), "{p}");
        assert!(policy.features.transitions.is_none(), "{p}");
        assert!(policy.features.bm25.is_none(), "{p}");
    }
    // The selection policy turns memory and transitions on; its relevance
    // floor is off (a raw BM25 floor depends on the catalog's size, and even
    // the scale-free one loses requests on a one-server catalog:
    // tests/selection_small_catalogs.rs).
    let s = load_policy(Some(Path::new("policies/selection.toml"))).unwrap();
    assert!(s.memory.is_some());
    assert!(s.features.transitions.as_ref().unwrap().data.is_some());
    assert!(s.features.bm25.as_ref().unwrap().relevance.is_none());
    for p in ["policies/default.toml", "policies/seed-article.toml"] {
        let policy = load_policy(Some(Path::new(p))).unwrap();
        assert!(policy.features.semantic.is_none(), "{p}");
    }
}

#[test]
fn a_policy_edit_reuses_the_catalogs_embeddings() {
    use toolgate::compile::CompileCache;
    let d = Dir::new();
    let extra = format!(
        "[features.semantic_match]\nmodel = {:?}\nnormalization = \"best\"\n",
        shipped_model()
    );
    let f = "w_k*keyword_match + w_t*semantic_match";
    let load = |text: &str| {
        let p = d.write("policy.toml", text);
        load_policy(Some(&p)).unwrap()
    };
    let tools = |names: &[&str]| {
        let arr: Vec<serde_json::Value> = names
            .iter()
            .map(|n| serde_json::json!({"type": "function", "function": {"name": n, "description": format!("{n} things"), "parameters": {"type": "object", "properties": {}}}}))
            .collect();
        Arc::new(import_tools_json("t.json", &serde_json::Value::Array(arr).to_string()).unwrap())
    };
    let unit = tools(&["delete_file", "get_forecast"]);
    let mut cache = CompileCache::default();
    let a = cache
        .compile(&load(&policy_text(f, &extra)), std::slice::from_ref(&unit))
        .unwrap();
    let edited = policy_text(f, &extra).replace("threshold = 0.3", "threshold = 0.35");
    let b = cache
        .compile(&load(&edited), std::slice::from_ref(&unit))
        .unwrap();
    let (va, vb) = (
        &a.semantic.as_ref().unwrap().vectors,
        &b.semantic.as_ref().unwrap().vectors,
    );
    assert!(Arc::ptr_eq(va, vb), "a policy edit embeds nothing again");
    // A changed catalog is embedded again, and equals a compile from scratch.
    let other = tools(&["delete_file", "send_email"]);
    let c = cache
        .compile(&load(&edited), std::slice::from_ref(&other))
        .unwrap();
    let vc = &c.semantic.as_ref().unwrap().vectors;
    assert!(!Arc::ptr_eq(vb, vc));
    let fresh = compile(&load(&edited), (*other).clone()).unwrap();
    assert_eq!(**vc, *fresh.semantic.as_ref().unwrap().vectors);
    assert_eq!(va.rows.len(), 2 * 128);
}
