//! The transformer bi-encoder of `[features.semantic_match] encoder =
//! "transformer"` (issue 24; cargo feature `embed`): all-MiniLM-L6-v2 as
//! `scripts/install-minilm` installs it in `policies/models/all-MiniLM-L6-v2`
//! (`scripts/test` runs it before this binary). Real model, real files: the
//! vectors, the on-disk cache of tool embeddings, and a policy whose model
//! is missing.

use std::path::Path;
use std::sync::Once;

use toolgate::compile::compile;
use toolgate::embed::cache::{EmbeddingCache, cache_dir, text_key};
use toolgate::load::load_policy;
use toolgate::parse::policy::PolicySource;
use toolgate::parse::semantic_model::SemanticModel;
use toolgate::parse::tags::import_tools_json;
use toolgate::{SessionContext, UsageStats};

const POLICY: &str = "policies/selection-transformer.toml";
const MODEL: &str = "policies/models/all-MiniLM-L6-v2";

static CACHE: Once = Once::new();
/// The tests share one cache folder and count its records: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Every test's first call: the embedding cache goes to a folder of this
/// test run, never the user's (set once, while the other tests wait here).
fn init() -> std::sync::MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    CACHE.call_once(|| {
        let dir = std::env::temp_dir().join(format!("toolgate-bi-encoder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // SAFETY: every test calls `init` before anything reads the
        // environment, and `Once` holds them until this returns.
        unsafe { std::env::set_var("TOOLGATE_CACHE_DIR", &dir) };
    });
    assert!(
        Path::new(MODEL).join("model.safetensors").is_file(),
        "{MODEL} is missing: run scripts/install-minilm"
    );
    guard
}

fn policy(path: &Path) -> PolicySource {
    let mut p = load_policy(Some(path)).expect("policy loads");
    p.examples.clear();
    p
}

fn model(p: &PolicySource) -> std::sync::Arc<SemanticModel> {
    p.features
        .semantic
        .as_ref()
        .and_then(|s| s.data.clone())
        .expect("model data")
        .model
}

const TOOLS: &str = r#"[
  {"type": "function", "function": {"name": "delete_file", "description": "Removes a file from the disk.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "get_forecast", "description": "Weather forecast for a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "send_email", "description": "Sends an email message to a recipient.", "parameters": {"type": "object", "properties": {"to": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "convert_currency", "description": "Converts an amount between currencies.", "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}}}}
]"#;

#[test]
fn the_transformer_encodes_unit_vectors_that_put_paraphrases_close() {
    let _serial = init();
    let p = policy(Path::new(POLICY));
    let m = model(&p);
    assert!(m.is_transformer());
    assert_eq!(m.dim(), 384);
    let v = |t: &str| {
        let mut out = vec![0.0f32; 384];
        m.add_embedding(t, 1.0, &mut out);
        out
    };
    let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let a = v("will it rain in Paris tomorrow");
    let b = v("weather forecast for a city");
    let c = v("removes a file from the disk");
    assert!((cos(&a, &a) - 1.0).abs() < 1e-4, "unit length");
    assert!(
        cos(&a, &b) > cos(&a, &c) + 0.2,
        "rain/forecast {} vs rain/file {}",
        cos(&a, &b),
        cos(&a, &c)
    );
    assert_eq!(v("   "), vec![0.0; 384], "a blank text adds nothing");
    // The batch path and the single path agree.
    let batch = m
        .encode_tools(&["weather forecast for a city".to_string(), String::new()])
        .expect("a transformer");
    assert!(batch[0].iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-4));
    assert!(batch[1].iter().all(|x| *x == 0.0));
}

#[test]
fn requests_that_share_no_word_with_the_tool_find_it() {
    let _serial = init();
    let p = policy(Path::new(POLICY));
    let tools = import_tools_json("tools.json", TOOLS).expect("tools");
    let plan = std::sync::Arc::new(compile(&p, tools).expect("plan"));
    for (request, want) in [
        ("erase my notes document", "delete_file"),
        ("will it be sunny in Rome tomorrow", "get_forecast"),
        ("how many yen is 30 dollars", "convert_currency"),
    ] {
        let ctx = SessionContext {
            user_intent_keywords: plan.analyzer.extract(request),
            ..Default::default()
        };
        let act = plan.evaluate(&ctx, &UsageStats::default(), 0.0);
        let best = act
            .tools
            .iter()
            .min_by(|a, b| toolgate::eval::ToolScore::better_first(a, b))
            .expect("four tools");
        assert_eq!(plan.tools[best.tool].name, want, "{request}");
    }
}

#[test]
fn tool_vectors_are_cached_on_disk_by_text_and_reused() {
    let _serial = init();
    let p = policy(Path::new(POLICY));
    let m = model(&p);
    let tools = import_tools_json("tools.json", TOOLS).expect("tools");
    compile(&p, tools.clone()).expect("plan");
    let digest = std::fs::read_dir(cache_dir())
        .expect("the cache folder exists after a compile")
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "vec"))
        .expect("a cache file")
        .path();
    let stem = digest.file_stem().unwrap().to_string_lossy().to_string();
    let c = EmbeddingCache::open(&cache_dir(), &stem, 384).expect("opens");
    let text = toolgate::text::semantic::tool_text(
        "delete_file",
        "Removes a file from the disk.",
        &serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    );
    let cached = c
        .get(&text_key(&text))
        .expect("delete_file's text is cached")
        .to_vec();
    let fresh = m.encode_tools(&[text]).expect("a transformer").remove(0);
    assert!(cached.iter().zip(&fresh).all(|(x, y)| (x - y).abs() < 1e-5));
    let before = c.len();
    assert!(before >= 4, "{before}");
    // A second compile of the same catalog adds nothing; the plans agree.
    let a = compile(&p, tools.clone()).expect("plan");
    let b = compile(&p, tools).expect("plan");
    assert_eq!(
        a.semantic.as_ref().unwrap().vectors,
        b.semantic.as_ref().unwrap().vectors
    );
    let c = EmbeddingCache::open(&cache_dir(), &stem, 384).expect("opens");
    assert_eq!(c.len(), before);
}

#[test]
fn a_missing_model_still_loads_and_scores_zero() {
    let _serial = init();
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(POLICY)
        .expect("policy")
        .replace("models/all-MiniLM-L6-v2", "no-such-model")
        .replace(
            "transitions/bfcl-multi-turn.toml",
            &format!(
                "{}/policies/transitions/bfcl-multi-turn.toml",
                env!("CARGO_MANIFEST_DIR")
            ),
        );
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, text).expect("write");
    let p = policy(&path);
    let m = model(&p);
    assert!(!m.is_transformer());
    assert_eq!(m.dim(), 0);
    let tools = import_tools_json("tools.json", TOOLS).expect("tools");
    let plan = std::sync::Arc::new(compile(&p, tools).expect("plan"));
    let ctx = SessionContext {
        user_intent_keywords: plan.analyzer.extract("delete the file"),
        ..Default::default()
    };
    let act = plan.evaluate(&ctx, &UsageStats::default(), 0.0);
    let best = act
        .tools
        .iter()
        .min_by(|a, b| toolgate::eval::ToolScore::better_first(a, b))
        .expect("tools");
    assert_eq!(
        plan.tools[best.tool].name, "delete_file",
        "BM25 alone still works"
    );
    let sem = toolgate::plan::F_SEMANTIC;
    assert!((0..plan.tools.len()).all(|t| act.features(t)[sem] == 0.0));
}

/// A new message with `[keywords.memory]` runs one forward pass: the
/// remembered messages' vectors come from the encoder's memo of request
/// texts (`embed::QUERY_MEMO`), and they are the vectors a fresh forward
/// pass gives.
#[test]
fn a_remembered_message_is_not_encoded_again() {
    let _serial = init();
    let p = policy(Path::new(POLICY));
    let m = model(&p);
    let tools = import_tools_json("tools.json", TOOLS).expect("tools");
    let plan = std::sync::Arc::new(compile(&p, tools).expect("plan"));
    // texts no other test of this binary encodes
    let msgs = [
        "wipe the old invoice scan from my laptop",
        "then tell me if snow is expected in Oslo",
        "and how many euros are 40 pounds",
    ];
    let mut ctx = SessionContext::default();
    for (k, msg) in msgs.iter().enumerate() {
        let now = plan.analyzer.extract(msg);
        if k > 0 {
            let last = std::mem::take(&mut ctx.user_intent_keywords);
            ctx.previous_intent_keywords.insert(0, last);
        }
        ctx.user_intent_keywords = now;
        let before = m.forward_passes();
        plan.evaluate(&ctx, &UsageStats::default(), 0.0);
        assert_eq!(
            m.forward_passes() - before,
            1,
            "message {k} with {} remembered: only the new one is encoded",
            ctx.previous_intent_keywords.len()
        );
    }
    // A remembered text's vector is the one a forward pass gives.
    let text = ctx.previous_intent_keywords[0].join(" ");
    let before = m.forward_passes();
    let mut memo = vec![0.0f32; 384];
    m.add_embedding(&text, 1.0, &mut memo);
    assert_eq!(m.forward_passes(), before, "from the memo");
    let fresh = m.encode_tools(&[text]).expect("a transformer").remove(0);
    assert!(memo.iter().any(|x| *x != 0.0));
    assert!(memo.iter().zip(&fresh).all(|(x, y)| (x - y).abs() < 1e-5));
}
