//! Reading a static embedding model's folder (`[features.semantic_match]
//! model`): the data file of the `semantic_match` feature, as
//! `parse::selection` reads the transitions file of `transition_match`.
//!
//! The three files (`tokenizer.json`, `model.safetensors`, `config.json`) are
//! checked (no token id may index past the table, which would panic inside
//! model2vec-rs) and loaded once per process: the loader hands the bytes over
//! and drops them, and a policy reload that reads the same files again gets
//! the model already in memory (keyed by a hash of the bytes). Inference is
//! model2vec-rs (MIT) behind the cargo feature `semantic`; without it, a model
//! does not load.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};

/// A loaded static embedding model. Loads are shared: loading the same
/// three files again (a policy reload) returns the model already in memory.
pub struct SemanticModel {
    /// The static table (`None` for a transformer or an absent model).
    #[cfg(feature = "semantic")]
    inner: Option<model2vec_rs::model::StaticModel>,
    /// The transformer bi-encoder (`encoder = "transformer"`).
    encoder: Option<crate::embed::BiEncoder>,
    dim: usize,
}

impl std::fmt::Debug for SemanticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticModel")
            .field("dim", &self.dim)
            .field("encoder", &self.encoder)
            .finish()
    }
}

/// Models loaded by this process, by a hash of their files' bytes.
static LOADED: Mutex<Vec<(u64, Weak<SemanticModel>)>> = Mutex::new(Vec::new());

/// The files of one model folder, as read.
#[derive(Debug, Clone, Copy)]
pub struct ModelFiles<'a> {
    /// The folder, for messages.
    pub dir: &'a str,
    /// `tokenizer.json`.
    pub tokenizer: &'a [u8],
    /// `model.safetensors`.
    pub model: &'a [u8],
    /// `config.json`.
    pub config: &'a [u8],
}

impl ModelFiles<'_> {
    fn digest(&self) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        for part in [self.tokenizer, self.model, self.config] {
            part.hash(&mut h);
        }
        h.finish()
    }
}

impl SemanticModel {
    /// Loads (or reuses) the model of `data`.
    ///
    /// # Errors
    /// A message (for a diagnostic at the policy's `model` key) when the
    /// files are not a Model2Vec model this matcher can run: a
    /// `model.safetensors` without a 2-D `embeddings` tensor, a tokenizer
    /// that is not the BERT WordPiece pipeline (normalizer, pre-tokenizer,
    /// `max_input_chars_per_word` up to [`MAX_INPUT_CHARS_PER_WORD`]) or whose
    /// token ids reach past the table's rows,
    /// a `mapping` tensor (vocabulary quantisation, not supported), or a
    /// build without the cargo feature `semantic`.
    pub fn load(files: ModelFiles<'_>) -> Result<Arc<SemanticModel>, String> {
        let digest = files.digest();
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        loaded.retain(|(_, w)| w.strong_count() > 0);
        if let Some(m) = loaded
            .iter()
            .find(|(d, _)| *d == digest)
            .and_then(|(_, w)| w.upgrade())
        {
            return Ok(m);
        }
        let model = Arc::new(Self::load_uncached(files)?);
        loaded.push((digest, Arc::downgrade(&model)));
        Ok(model)
    }

    #[cfg(not(feature = "semantic"))]
    fn load_uncached(_files: ModelFiles<'_>) -> Result<SemanticModel, String> {
        Err("toolgate was built without the cargo feature `semantic`".to_string())
    }

    #[cfg(feature = "semantic")]
    fn load_uncached(data: ModelFiles<'_>) -> Result<SemanticModel, String> {
        let (rows, dim, probes) = check_files(data)?;
        let inner = model2vec_rs::model::StaticModel::from_bytes(
            data.tokenizer,
            data.model,
            data.config,
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
        let model = SemanticModel {
            inner: Some(inner),
            encoder: None,
            dim,
        };
        model.check_vectors(data.dir, &probes)?;
        Ok(model)
    }

    /// Embeds each of `probes` (words of the vocabulary) and refuses a model
    /// whose vectors are all unusable (zero, NaN or infinite: an all-NaN
    /// table, NaN or infinite `weights`, an all-zero table, values so large
    /// that the norm overflows) or all on one line (a table of one
    /// dimension, every row the same): such a model gives every tool the
    /// same `semantic_match` (attack report 2, item 13).
    #[cfg(feature = "semantic")]
    fn check_vectors(&self, dir: &str, probes: &[String]) -> Result<(), String> {
        let mut first: Option<Vec<f32>> = None;
        let (mut usable, mut distinct) = (0usize, false);
        let mut v = vec![0.0f32; self.dim];
        for p in probes {
            v.iter_mut().for_each(|x| *x = 0.0);
            self.add_embedding(p, 1.0, &mut v);
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            if !(norm.is_finite() && norm > 1e-12) {
                continue;
            }
            v.iter_mut().for_each(|x| *x /= norm);
            usable += 1;
            match &first {
                None => first = Some(v.clone()),
                Some(f) => {
                    let cos: f32 = f.iter().zip(&v).map(|(a, b)| a * b).sum();
                    distinct |= cos.abs() < 0.9999;
                }
            }
        }
        if probes.is_empty() {
            return Ok(());
        }
        if usable == 0 {
            return Err(format!(
                "{dir}/model.safetensors: no usable vector: the {} vocabulary words tried (`{}`, ...) all embed to zero, NaN or infinity",
                probes.len(),
                probes[0]
            ));
        }
        if usable >= 2 && !distinct {
            return Err(format!(
                "{dir}/model.safetensors: the vectors of the {usable} vocabulary words tried all lie on one line (every row the same, or one dimension): the model cannot tell texts apart"
            ));
        }
        Ok(())
    }

    /// The number of dimensions of the vectors (0 for an absent model).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// A model that embeds nothing: what a `[features.semantic_match]
    /// encoder = "transformer"` policy gets when its model's files are
    /// missing or cannot run (`load` warns once). `semantic_match` is then 0
    /// for every tool and the rest of the formula decides.
    pub fn absent() -> Arc<SemanticModel> {
        Arc::new(SemanticModel {
            #[cfg(feature = "semantic")]
            inner: None,
            encoder: None,
            dim: 0,
        })
    }

    /// Loads (or reuses) a transformer bi-encoder
    /// ([`crate::embed::BiEncoder`]) from `files`: `tokenizer` must be the
    /// BERT WordPiece pipeline (checked as for a static model), `model` the
    /// transformer's f32 weights and `config` its BERT config.
    ///
    /// # Errors
    /// A message naming the folder when a check fails, the weights do not
    /// load, or toolgate was built without the cargo feature `embed`.
    pub fn load_transformer(files: ModelFiles<'_>) -> Result<Arc<SemanticModel>, String> {
        let digest = files.digest() ^ 0x7472_616e_7366_6d72; // not a static model's key
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        loaded.retain(|(_, w)| w.strong_count() > 0);
        if let Some(m) = loaded
            .iter()
            .find(|(d, _)| *d == digest)
            .and_then(|(_, w)| w.upgrade())
        {
            return Ok(m);
        }
        #[cfg(feature = "semantic")]
        {
            let tok: serde_json::Value = serde_json::from_slice(files.tokenizer)
                .map_err(|e| format!("{}/tokenizer.json: not JSON: {e}", files.dir))?;
            check_bert_pipeline(files.dir, &tok)?;
        }
        let encoder = crate::embed::BiEncoder::load(crate::embed::EncoderFiles {
            dir: files.dir,
            config: files.config,
            tokenizer: files.tokenizer,
            model: files.model,
        })?;
        let model = Arc::new(SemanticModel {
            #[cfg(feature = "semantic")]
            inner: None,
            dim: encoder.dim(),
            encoder: Some(encoder),
        });
        loaded.push((digest, Arc::downgrade(&model)));
        Ok(model)
    }

    /// The forward passes the transformer has run (0 for a static or an
    /// absent model): see [`crate::embed::BiEncoder::forward_passes`].
    pub fn forward_passes(&self) -> u64 {
        self.encoder
            .as_ref()
            .map_or(0, crate::embed::BiEncoder::forward_passes)
    }

    /// Whether this is a transformer bi-encoder.
    pub fn is_transformer(&self) -> bool {
        self.encoder.is_some()
    }

    /// The unit vectors of tool texts for a transformer (batched, through
    /// the on-disk cache: [`crate::embed::BiEncoder::encode_tools`]); `None`
    /// for a static model, whose tools are embedded one by one with
    /// [`SemanticModel::add_embedding`].
    pub fn encode_tools(&self, texts: &[String]) -> Option<Vec<Vec<f32>>> {
        self.encoder.as_ref().map(|e| e.encode_tools(texts))
    }

    /// Adds `weight` times the unit vector of `text` to `out` (`dim` floats);
    /// a text with no known token adds nothing. At most the first
    /// [`MAX_EMBED_CHARS`] characters and 512 tokens are read.
    pub fn add_embedding(&self, text: &str, weight: f32, out: &mut [f32]) {
        #[cfg(feature = "semantic")]
        {
            if text.trim().is_empty() || weight == 0.0 {
                return;
            }
            // (a text of at most MAX_EMBED_CHARS bytes has no more characters)
            let text = if text.len() <= MAX_EMBED_CHARS {
                text
            } else {
                text.char_indices()
                    .nth(MAX_EMBED_CHARS)
                    .map_or(text, |(i, _)| &text[..i])
            };
            if let Some(enc) = &self.encoder {
                // a remembered message's vector comes from the encoder's memo
                let v = enc.encode_query(text);
                for (o, x) in out.iter_mut().zip(v) {
                    *o += weight * x;
                }
                return;
            }
            let Some(inner) = &self.inner else {
                return;
            };
            let v = inner.encode_single(text);
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

/// The largest `model.max_input_chars_per_word` a tokenizer may declare: 100,
/// BERT's value. A longer word is one unknown token; a larger bound would
/// make WordPiece's greedy longest-match cost grow with the square of a
/// word's length.
pub const MAX_INPUT_CHARS_PER_WORD: u64 = 100;

/// The most characters of one text [`SemanticModel::add_embedding`] reads:
/// 8,192. model2vec-rs reads at most 512 tokens, and cuts the text at 512 ×
/// the vocabulary's median token length, a number the model file chooses;
/// this bound does not depend on the model.
pub const MAX_EMBED_CHARS: usize = 8192;

/// Requires the tokenizer to be exactly the BERT pipeline model2vec-rs runs
/// with its own WordPiece (`fast_wordpiece`, linear in the text): model
/// `WordPiece`, normalizer `BertNormalizer`, pre-tokenizer
/// `BertPreTokenizer`, the fields that path reads present, and added tokens
/// it can match (non-empty, in the vocabulary, no duplicates, no
/// `normalized` / `single_word` / `lstrip` / `rstrip`). Any other tokenizer
/// would make model2vec-rs fall back to the `tokenizers` crate, whose
/// WordPiece, pre-tokenizers and regexes a hostile file can make take
/// seconds to minutes per text (attack report 2, item 7).
#[cfg(feature = "semantic")]
fn check_bert_pipeline(dir: &str, tok: &serde_json::Value) -> Result<(), String> {
    let at = |what: &str| format!("{dir}/tokenizer.json: {what}");
    let ty = |v: Option<&serde_json::Value>| {
        v.and_then(|v| v.get("type"))
            .and_then(|t| t.as_str())
            .map(str::to_string)
    };
    let model = tok.get("model");
    if ty(model).as_deref() != Some("WordPiece") {
        return Err(at("the tokenizer must be WordPiece (`model.type`)"));
    }
    let normalizer = tok.get("normalizer");
    if ty(normalizer).as_deref() != Some("BertNormalizer") {
        return Err(at(&format!(
            "the normalizer must be `BertNormalizer`, found {} (only the BERT pipeline is run)",
            ty(normalizer).map_or("none".to_string(), |t| format!("`{t}`"))
        )));
    }
    let pre = tok.get("pre_tokenizer");
    if ty(pre).as_deref() != Some("BertPreTokenizer") {
        return Err(at(&format!(
            "the pre-tokenizer must be `BertPreTokenizer`, found {} (only the BERT pipeline is run)",
            ty(pre).map_or("none".to_string(), |t| format!("`{t}`"))
        )));
    }
    for key in ["lowercase", "clean_text", "handle_chinese_chars"] {
        if !normalizer
            .and_then(|n| n.get(key))
            .is_some_and(serde_json::Value::is_boolean)
        {
            return Err(at(&format!("`normalizer.{key}` must be true or false")));
        }
    }
    if !model
        .and_then(|m| m.get("continuing_subword_prefix"))
        .is_some_and(serde_json::Value::is_string)
    {
        return Err(at("`model.continuing_subword_prefix` must be a string"));
    }
    if !model
        .and_then(|m| m.get("unk_token"))
        .is_some_and(serde_json::Value::is_string)
    {
        return Err(at("`model.unk_token` must be a string"));
    }
    match model
        .and_then(|m| m.get("max_input_chars_per_word"))
        .and_then(serde_json::Value::as_u64)
    {
        Some(1..=MAX_INPUT_CHARS_PER_WORD) => {}
        _ => {
            return Err(at(&format!(
                "`model.max_input_chars_per_word` must be within [1, {MAX_INPUT_CHARS_PER_WORD}], found {}",
                model
                    .and_then(|m| m.get("max_input_chars_per_word"))
                    .map_or("none".to_string(), ToString::to_string)
            )));
        }
    }
    let vocab = model
        .and_then(|m| m.get("vocab"))
        .and_then(|v| v.as_object())
        .ok_or_else(|| at("no `model.vocab`"))?;
    let mut seen = std::collections::HashSet::new();
    for t in tok
        .get("added_tokens")
        .and_then(|a| a.as_array())
        .into_iter()
        .flatten()
    {
        let content = t.get("content").and_then(|c| c.as_str()).unwrap_or("");
        let flags_off = ["single_word", "lstrip", "rstrip", "normalized"]
            .iter()
            .all(|k| t.get(*k).and_then(serde_json::Value::as_bool) == Some(false));
        if content.is_empty() || !flags_off || !vocab.contains_key(content) || !seen.insert(content)
        {
            let shown = crate::diag::clip_chars(content, 40);
            return Err(at(&format!(
                "the added token {shown:?} must be a non-empty vocabulary token, listed once, with `single_word`, `lstrip`, `rstrip` and `normalized` false"
            )));
        }
    }
    Ok(())
}

/// Checks the files before model2vec-rs reads them, so that no token id can
/// index past the table (which would panic there) and the tokenizer is the
/// BERT pipeline model2vec-rs runs natively ([`check_bert_pipeline`]):
/// returns (rows, dims, up to [`PROBES`] words of the vocabulary, evenly
/// spread over its ids, for [`SemanticModel::check_vectors`]).
#[cfg(feature = "semantic")]
fn check_files(data: ModelFiles<'_>) -> Result<(usize, usize, Vec<String>), String> {
    let dir = data.dir;
    let bytes = data.model;
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
    let tok: serde_json::Value = serde_json::from_slice(data.tokenizer)
        .map_err(|e| format!("{dir}/tokenizer.json: not JSON: {e}"))?;
    check_bert_pipeline(dir, &tok)?;
    let model = tok.get("model");
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
    // Words of three or more ASCII letters, by id, evenly spread.
    let mut words: Vec<(u64, &str)> = vocab
        .iter()
        .filter(|(k, _)| k.len() >= 3 && k.bytes().all(|b| b.is_ascii_alphabetic()))
        .filter_map(|(k, id)| Some((id.as_u64()?, k.as_str())))
        .collect();
    words.sort_unstable();
    let step = words.len().div_ceil(PROBES).max(1);
    let probes = words
        .iter()
        .step_by(step)
        .map(|(_, w)| w.to_string())
        .collect();
    Ok((rows, dim, probes))
}

/// How many vocabulary words [`SemanticModel::check_vectors`] embeds at
/// load: 256.
#[cfg(feature = "semantic")]
const PROBES: usize = 256;
