//! Sentence embeddings with all-MiniLM-L6-v2 through ONNX Runtime.
//!
//! This crate knows nothing about Postgres: the extension wraps it in GUCs and
//! `#[pg_extern]`s, the benchmarks and tests drive it directly. One [`Embedder`]
//! holds one ONNX session and one tokenizer; callers keep it alive and reuse it,
//! because loading the model costs far more than running it.
//!
//! Inputs are truncated at [`MAX_TOKENS`] word pieces. The int8 model set-up
//! installs takes a call's texts packed into one row, so most of its matrix
//! products see no padding, and only attention (with its query, key and
//! value products) pads each text to the longest of the call; the published
//! model takes them padded to the longest (dynamic padding). [`Embedder`]
//! feeds whichever form the model file takes. Outputs are the mean of
//! the token states under the attention mask, L2-normalised, so the cosine of two
//! embeddings is their dot product.

use std::ops::Range;
use std::path::{Path, PathBuf};

use ort::{session::Session, value::Tensor};

/// A loaded ONNX Runtime: create it once per process with [`load_runtime`].
pub use ort::environment::Environment as Runtime;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// Length of every embedding.
pub const DIMENSIONS: usize = 384;
/// Word pieces kept per input (the model was trained at this length); the rest is cut.
pub const MAX_TOKENS: usize = 256;
/// Most inputs sent to the model in one call by [`Embedder::embed_many`]. Bigger
/// calls pad more and hold more activations in memory without running faster.
pub const MAX_BATCH: usize = 64;

/// File names expected inside the model directory.
pub const MODEL_FILE: &str = "model.onnx";
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The same model with int8 matrix products and activations quantized per
/// token (scripts/model_int8.py writes it at set-up): 1.8x (records) to 3.4x
/// (one short query) faster on one thread, cosine 0.996 or more to
/// [`MODEL_FILE`]'s embeddings, the same search quality (`make
/// bench-embed-int8`). Loaded instead of [`MODEL_FILE`] when it is there and
/// [`cpu_multiplies_int8_exactly`].
pub const INT8_MODEL_FILE: &str = "model-int8.onnx";

/// Whether ONNX Runtime's uint8 x int8 products are exact on this CPU. On
/// x86 without VNNI they go through an instruction that saturates at 16 bits
/// (ONNX Runtime's quantization guide warns of it), which full-range int8
/// weights can overflow; with VNNI, and on other architectures, the sums are
/// 32-bit.
pub fn cpu_multiplies_int8_exactly() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512vnni")
            || std::arch::is_x86_feature_detected!("avxvnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

/// The model file [`Embedder::load`] runs from `model_dir`.
pub fn model_path(model_dir: &Path) -> PathBuf {
    let int8 = model_dir.join(INT8_MODEL_FILE);
    if int8.is_file() && cpu_multiplies_int8_exactly() {
        int8
    } else {
        model_dir.join(MODEL_FILE)
    }
}

/// What went wrong, and with which file, so callers can name the setting to fix.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("could not load the ONNX Runtime library \"{}\": {reason}", path.display())]
    Runtime { path: PathBuf, reason: String },
    #[error("could not load the embedding model \"{}\": {reason}", path.display())]
    Model { path: PathBuf, reason: String },
    #[error("could not load the tokenizer \"{}\": {reason}", path.display())]
    Tokenizer { path: PathBuf, reason: String },
    #[error("embedding failed: {0}")]
    Inference(String),
}

impl EmbedError {
    /// The file the error is about, if it is about a file.
    pub fn path(&self) -> Option<&Path> {
        match self {
            EmbedError::Runtime { path, .. }
            | EmbedError::Model { path, .. }
            | EmbedError::Tokenizer { path, .. } => Some(path),
            EmbedError::Inference(_) => None,
        }
    }
}

fn inference(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Inference(e.to_string())
}

/// Loads the ONNX Runtime shared library and creates the process's environment.
///
/// ONNX Runtime can be loaded once per process: after a success, later calls reuse
/// the library first loaded whatever `path` says. A failed load can be retried.
pub fn load_runtime(path: &Path) -> Result<Runtime, EmbedError> {
    let fail = |reason: String| EmbedError::Runtime {
        path: path.to_owned(),
        reason,
    };
    if !path.is_file() {
        return Err(fail("no such file".into()));
    }
    ort::init_from(path)
        .map_err(|e| fail(e.to_string()))?
        .with_name("vigil")
        .build()
        .map_err(|e| fail(e.to_string()))
}

/// A loaded model and tokenizer, ready to embed text.
pub struct Embedder {
    session: Session,
    tokenizer: Tokenizer,
    /// The model takes its texts packed (scripts/model_int8.py,
    /// `expose_packing`): [`PACKED_INPUTS`] rather than `attention_mask`.
    packed: bool,
    /// The model takes `token_type_ids` (all zeros for one-segment texts).
    type_ids: bool,
}

/// Inputs of a model that takes the texts of a call packed into one row:
/// their tokens one after another, each text's positions from 0, and where
/// attention finds each text's tokens in its padded layout and back. The
/// matrix products outside attention then run on real tokens only.
const PACKED_INPUTS: [&str; 5] = [
    "input_ids",
    "position_ids",
    "pad_index",
    "pack_index",
    "attention_bias",
];

impl Embedder {
    /// Loads the model ([`model_path`]) and `tokenizer.json` from `model_dir`, running the model
    /// on `threads` intra-op threads (at least one). With `spinning`, those threads
    /// wait for the next operator by spinning briefly before they sleep: a single
    /// short text is a chain of small operators, and waking sleeping threads for
    /// each costs more than the work (see docs/performance.md, "Embedding").
    pub fn load(
        runtime: &Runtime,
        model_dir: &Path,
        threads: usize,
        spinning: bool,
    ) -> Result<Self, EmbedError> {
        let tokenizer = load_tokenizer(&model_dir.join(TOKENIZER_FILE))?;
        let model_path = model_path(model_dir);
        let fail = |reason: String| EmbedError::Model {
            path: model_path.clone(),
            reason,
        };
        if !model_path.is_file() {
            return Err(fail("no such file".into()));
        }
        let session = Session::builder(runtime)
            .and_then(|b| Ok(b.with_intra_threads(threads.max(1))?))
            .and_then(|b| Ok(b.with_inter_threads(1)?))
            .and_then(|b| Ok(b.with_intra_op_spinning(spinning)?))
            // ONNX Runtime fuses each residual Add and LayerNormalization into
            // SkipLayerNormalization, whose CPU kernel took 0.2 ms a call on a
            // batch of 8 queries where the two unfused operators take 0.04 ms:
            // a fifth of the int8 model's time (docs/performance.md, "Embedding").
            .and_then(|b| Ok(b.with_disabled_optimizers("SkipLayerNormFusion")?))
            .and_then(|mut b| b.commit_from_file(&model_path))
            .map_err(|e| fail(e.to_string()))?;
        let takes = |name: &str| session.inputs().iter().any(|i| i.name() == name);
        let packed = PACKED_INPUTS.iter().all(|wanted| takes(wanted));
        let type_ids = takes("token_type_ids");
        let embedder = Embedder {
            session,
            tokenizer,
            packed,
            type_ids,
        };
        embedder.check_signature().map_err(fail)?;
        Ok(embedder)
    }

    /// Refuses a model that does not take and give what mean pooling needs.
    fn check_signature(&self) -> Result<(), String> {
        let inputs: Vec<&str> = self.session.inputs().iter().map(|i| i.name()).collect();
        let wants: &[&str] = if self.packed {
            &PACKED_INPUTS
        } else {
            &["input_ids", "attention_mask"]
        };
        for &wanted in wants {
            if !inputs.contains(&wanted) {
                return Err(format!(
                    "the model has no input \"{wanted}\" (inputs: {inputs:?})"
                ));
            }
        }
        if self.session.outputs().is_empty() {
            return Err("the model has no outputs".into());
        }
        Ok(())
    }

    /// Embeds one text.
    pub fn embed(&mut self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut out = self.embed_batch(&[text])?;
        out.pop()
            .ok_or_else(|| inference("the model returned no embedding"))
    }

    /// Embeds texts in one model call; the result is in input order.
    pub fn embed_batch(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encoded = self.tokenize(texts, &[])?;
        let refs: Vec<&[u32]> = encoded.iter().map(|t| t.ids.as_slice()).collect();
        let parts = vec![None; refs.len()];
        Ok(self
            .run(&refs, &parts)?
            .into_iter()
            .map(|p| p.whole)
            .collect())
    }

    /// Embeds any number of texts, in calls of at most [`MAX_BATCH`] texts of similar
    /// length ([`plan_calls`]: least padding for the calls made), calling `between_calls` before each call so a caller
    /// can honour cancellation. The result is in input order.
    pub fn embed_many(
        &mut self,
        texts: &[&str],
        between_calls: impl FnMut(),
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let pooled = self.embed_many_with_parts(texts, &[], between_calls)?;
        Ok(pooled.into_iter().map(|p| p.whole).collect())
    }

    /// [`Embedder::embed_many`], and for each text with a `parts` entry (a
    /// byte range of the text, such as its opening sentence) the mean of
    /// that range's token states too: the part as read in its whole text,
    /// from the same model call, so it costs no inference of its own.
    /// `parts` may be shorter than `texts` (the rest have none). A part
    /// whose tokens were all cut ([`MAX_TOKENS`]) or that covers no token
    /// gives `None`.
    pub fn embed_many_with_parts(
        &mut self,
        texts: &[&str],
        parts: &[Option<Range<usize>>],
        mut between_calls: impl FnMut(),
    ) -> Result<Vec<Pooled>, EmbedError> {
        let encoded = self.tokenize(texts, parts)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encoded[i].ids.len());
        let lengths: Vec<usize> = order.iter().map(|&i| encoded[i].ids.len()).collect();
        let mut out = vec![Pooled::default(); texts.len()];
        for call in plan_calls(&lengths, self.packed) {
            let chunk = &order[call];
            between_calls();
            let ids: Vec<&[u32]> = chunk.iter().map(|&i| encoded[i].ids.as_slice()).collect();
            let spans: Vec<Option<Range<usize>>> =
                chunk.iter().map(|&i| encoded[i].part.clone()).collect();
            for (&i, pooled) in chunk.iter().zip(self.run(&ids, &spans)?) {
                out[i] = pooled;
            }
        }
        Ok(out)
    }

    /// One model call over tokenized inputs packed into one row
    /// ([`PACKED_INPUTS`]). Attention still sees each text padded to the
    /// longest of the call, as in a padded call, so a text's embedding is
    /// the one it gets alone, bit for bit; the other matrix products, most
    /// of the time, skip the padding.
    fn run_packed(
        &mut self,
        ids: &[&[u32]],
        parts: &[Option<Range<usize>>],
    ) -> Result<Vec<Pooled>, EmbedError> {
        // A text without tokens (the tokenizer always adds two) embeds as
        // zeros, as under a mask of zeros; the rest go to the model.
        let kept: Vec<usize> = (0..ids.len()).filter(|&i| !ids[i].is_empty()).collect();
        let mut out = vec![Pooled::zero(); ids.len()];
        if kept.is_empty() {
            return Ok(out);
        }
        let batch = kept.len();
        let seq = kept.iter().map(|&i| ids[i].len()).max().unwrap_or(1);
        let tokens: usize = kept.iter().map(|&i| ids[i].len()).sum();
        let mut input_ids = Vec::with_capacity(tokens);
        let mut positions = Vec::with_capacity(tokens);
        let mut pack_index = Vec::with_capacity(tokens);
        let mut pad_index = vec![0i64; batch * seq];
        let mut bias = vec![f32::MIN; batch * seq];
        let mut starts = Vec::with_capacity(batch);
        for (row, &i) in kept.iter().enumerate() {
            let start = input_ids.len();
            starts.push(start);
            for (col, &id) in ids[i].iter().enumerate() {
                input_ids.push(i64::from(id));
                positions.push(col as i64);
                pack_index.push((row * seq + col) as i64);
                pad_index[row * seq + col] = (start + col) as i64;
                bias[row * seq + col] = 0.0;
            }
            // Padding slots read the text's first token; the bias hides them
            // as keys and nothing reads them back as queries.
            for slot in &mut pad_index[row * seq + ids[i].len()..(row + 1) * seq] {
                *slot = start as i64;
            }
        }
        let row = [1, tokens as i64];
        let tensor = |shape: &[i64], v: Vec<i64>| Tensor::from_array((shape.to_vec(), v));
        let mut inputs = ort::inputs! {
            "input_ids" => tensor(&row, input_ids).map_err(inference)?,
            "position_ids" => tensor(&row, positions).map_err(inference)?,
            "pad_index" => tensor(&[batch as i64, seq as i64], pad_index).map_err(inference)?,
            "pack_index" => tensor(&row, pack_index).map_err(inference)?,
            "attention_bias" => Tensor::from_array(([batch as i64, 1, 1, seq as i64], bias)).map_err(inference)?,
        };
        if self.type_ids {
            inputs.push((
                "token_type_ids".into(),
                tensor(&row, vec![0i64; tokens]).map_err(inference)?.into(),
            ));
        }
        let outputs = self.session.run(inputs).map_err(inference)?;
        let (out_shape, hidden) = outputs[0].try_extract_tensor::<f32>().map_err(inference)?;
        let expected = [1, tokens as i64, DIMENSIONS as i64];
        if **out_shape != expected {
            return Err(inference(format!(
                "model output has shape {out_shape:?}, expected {expected:?}"
            )));
        }
        for (&i, start) in kept.iter().zip(starts) {
            let len = ids[i].len();
            out[i] = Pooled::of(
                &hidden[start * DIMENSIONS..(start + len) * DIMENSIONS],
                parts.get(i).cloned().flatten(),
            );
        }
        Ok(out)
    }

    /// Word-piece ids of each text, with special tokens, truncated, unpadded,
    /// and the tokens of its part (`parts[i]`, a byte range), if any.
    fn tokenize(
        &self,
        texts: &[&str],
        parts: &[Option<Range<usize>>],
    ) -> Result<Vec<Tokens>, EmbedError> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let encoding = self.tokenizer.encode(*t, true).map_err(inference)?;
                let part = parts
                    .get(i)
                    .cloned()
                    .flatten()
                    .and_then(|bytes| tokens_within(encoding.get_offsets(), &bytes));
                Ok(Tokens {
                    ids: encoding.get_ids().to_vec(),
                    part,
                })
            })
            .collect()
    }

    /// One model call over already tokenized inputs: packed where the model
    /// takes them so, else padded to the longest.
    fn run(
        &mut self,
        ids: &[&[u32]],
        parts: &[Option<Range<usize>>],
    ) -> Result<Vec<Pooled>, EmbedError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        if self.packed {
            return self.run_packed(ids, parts);
        }
        let batch = ids.len();
        let seq = ids.iter().map(|t| t.len()).max().unwrap_or(0).max(1);
        let mut input_ids = vec![0i64; batch * seq];
        let mut mask = vec![0i64; batch * seq];
        for (row, tokens) in ids.iter().enumerate() {
            for (col, &id) in tokens.iter().enumerate() {
                input_ids[row * seq + col] = i64::from(id);
                mask[row * seq + col] = 1;
            }
        }
        let shape = [batch as i64, seq as i64];
        let ids_tensor = Tensor::from_array((shape, input_ids)).map_err(inference)?;
        let mask_tensor = Tensor::from_array((shape, mask)).map_err(inference)?;
        let outputs = if self.type_ids {
            let types = Tensor::from_array((shape, vec![0i64; batch * seq])).map_err(inference)?;
            self.session.run(ort::inputs! {
                "input_ids" => ids_tensor, "attention_mask" => mask_tensor, "token_type_ids" => types
            })
        } else {
            self.session.run(ort::inputs! {
                "input_ids" => ids_tensor, "attention_mask" => mask_tensor
            })
        }
        .map_err(inference)?;
        let (out_shape, hidden) = outputs[0].try_extract_tensor::<f32>().map_err(inference)?;
        let expected = [batch as i64, seq as i64, DIMENSIONS as i64];
        if **out_shape != expected {
            return Err(inference(format!(
                "model output has shape {out_shape:?}, expected {expected:?}"
            )));
        }
        Ok((0..batch)
            .map(|row| {
                if ids[row].is_empty() {
                    return Pooled::zero();
                }
                let start = row * seq * DIMENSIONS;
                Pooled::of(
                    &hidden[start..start + ids[row].len() * DIMENSIONS],
                    parts.get(row).cloned().flatten(),
                )
            })
            .collect())
    }
}

/// A text's word pieces and which of them make its part, if it has one.
struct Tokens {
    ids: Vec<u32>,
    part: Option<Range<usize>>,
}

/// The tokens (indexes into `offsets`) that lie within the byte range
/// `bytes`, as one range: special tokens (empty offsets) and tokens past the
/// truncation are not in it. `None` when none is.
fn tokens_within(offsets: &[(usize, usize)], bytes: &Range<usize>) -> Option<Range<usize>> {
    let inside =
        |&(start, end): &(usize, usize)| end > start && start >= bytes.start && end <= bytes.end;
    let first = offsets.iter().position(inside)?;
    let last = offsets.iter().rposition(inside)?;
    Some(first..last + 1)
}

/// A text's embedding and, when asked for, its part's
/// ([`Embedder::embed_many_with_parts`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pooled {
    pub whole: Vec<f32>,
    pub part: Option<Vec<f32>>,
}

impl Pooled {
    /// A text without tokens: zeros, as under a mask of zeros.
    fn zero() -> Pooled {
        Pooled {
            whole: vec![0f32; DIMENSIONS],
            part: None,
        }
    }

    /// From a text's token states (`[tokens, DIMENSIONS]`, no padding).
    fn of(states: &[f32], part: Option<Range<usize>>) -> Pooled {
        let tokens = states.len() / DIMENSIONS;
        let ones = vec![1i64; tokens];
        let part = part
            .filter(|p| p.end <= tokens && p.start < p.end)
            .map(|p| {
                mean_pool(
                    &states[p.start * DIMENSIONS..p.end * DIMENSIONS],
                    &ones[p.clone()],
                )
            });
        Pooled {
            whole: mean_pool(states, &ones),
            part,
        }
    }
}

/// What one more model call costs, in padded tokens: about 1.7 ms against
/// about 0.1 ms a token on this project's 2-core machine (16 twelve-token
/// texts in 21.5 ms, 64 in 80.8 ms, one alone in 2.75 ms).
const CALL_COST_TOKENS: usize = 16;

/// In a packed call only attention sees the padding: its query, key and
/// value products (a quarter of a token's) run on every padded slot, and a
/// text padded to `s` tokens costs attention itself about
/// `s * s / ATTENTION_TOKENS` tokens of products (per slot, its scores and
/// weighted sum over `s` keys, in f32, are about `s / 512` of a token's int8
/// products through the layers).
const ATTENTION_TOKENS: usize = 512;

/// Splits texts sorted by token count (`lengths`, ascending) into calls of
/// consecutive texts, at most [`MAX_BATCH`] each, so that the calls' cost
/// plus [`CALL_COST_TOKENS`] per call is least. A padded call pads every
/// text to its longest, so one long text in a call of short ones costs as
/// much as making all of them long; a `packed` call costs its real tokens
/// and its attention over the padded layout ([`ATTENTION_TOKENS`]). Exact,
/// by dynamic programming over where each call ends (`lengths` is at most a
/// few thousand).
pub fn plan_calls(lengths: &[usize], packed: bool) -> Vec<std::ops::Range<usize>> {
    let n = lengths.len();
    let mut sums = vec![0usize; n + 1];
    for (i, &len) in lengths.iter().enumerate() {
        sums[i + 1] = sums[i] + len;
    }
    let cost_of = |from: usize, end: usize| {
        let (count, longest) = (end - from, lengths[end - 1]);
        if packed {
            let (real, slots) = (sums[end] - sums[from], count * longest);
            (3 * real + slots) / 4 + slots * longest / ATTENTION_TOKENS
        } else {
            count * longest
        }
    };
    // best[i]: the least cost of the first i texts; start[i]: where the
    // last call of that plan starts.
    let mut best = vec![0usize; n + 1];
    let mut start = vec![0usize; n + 1];
    for end in 1..=n {
        best[end] = usize::MAX;
        for from in end.saturating_sub(MAX_BATCH)..end {
            let cost = best[from] + CALL_COST_TOKENS + cost_of(from, end);
            if cost < best[end] {
                best[end] = cost;
                start[end] = from;
            }
        }
    }
    let mut calls = Vec::new();
    let mut end = n;
    while end > 0 {
        calls.push(start[end]..end);
        end = start[end];
    }
    calls.reverse();
    calls
}

fn load_tokenizer(path: &Path) -> Result<Tokenizer, EmbedError> {
    let fail = |reason: String| EmbedError::Tokenizer {
        path: path.to_owned(),
        reason,
    };
    if !path.is_file() {
        return Err(fail("no such file".into()));
    }
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| fail(e.to_string()))?;
    // The published tokenizer.json pads every input to 128 tokens and truncates
    // there; we pad per call ourselves and keep the model's full 256.
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: MAX_TOKENS,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        }))
        .map_err(|e| fail(e.to_string()))?;
    Ok(tokenizer)
}

/// Mean of the token states where the mask is 1, scaled to unit length.
/// `hidden` is `[seq, DIMENSIONS]` row-major, `mask` is `[seq]`.
pub fn mean_pool(hidden: &[f32], mask: &[i64]) -> Vec<f32> {
    let mut sum = vec![0f32; DIMENSIONS];
    let mut count = 0f32;
    for (token, &m) in hidden.chunks_exact(DIMENSIONS).zip(mask) {
        if m != 0 {
            count += 1.0;
            for (s, &h) in sum.iter_mut().zip(token) {
                *s += h;
            }
        }
    }
    if count > 0.0 {
        sum.iter_mut().for_each(|s| *s /= count);
    }
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        sum.iter_mut().for_each(|s| *s /= norm);
    }
    sum
}

/// Cosine similarity of two vectors of equal length.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(calls: &[std::ops::Range<usize>]) -> Vec<usize> {
        calls.iter().map(|c| c.len()).collect()
    }

    #[test]
    fn calls_cover_every_text_once_in_order() {
        for lengths in [
            vec![],
            vec![7],
            (1..300).map(|i| i % 90 + 3).collect::<Vec<_>>(),
        ] {
            let mut lengths = lengths;
            lengths.sort_unstable();
            let calls = plan_calls(&lengths, false);
            let covered: Vec<usize> = calls.iter().flat_map(|c| c.clone()).collect();
            assert_eq!(covered, (0..lengths.len()).collect::<Vec<_>>());
            assert!(calls.iter().all(|c| !c.is_empty() && c.len() <= MAX_BATCH));
        }
    }

    #[test]
    fn texts_of_one_length_share_calls_and_far_lengths_do_not() {
        assert_eq!(sizes(&plan_calls(&[12; 16], false)), [16]);
        assert_eq!(sizes(&plan_calls(&[12; 100], false)), [36, 64]);
        // Five short texts padded to 200 tokens would cost more than a call.
        let mixed = [10, 10, 11, 11, 12, 190, 195, 200, 200, 200];
        assert_eq!(sizes(&plan_calls(&mixed, false)), [5, 5]);
        // Lengths close together are not worth a second call.
        assert_eq!(sizes(&plan_calls(&[10, 11, 12, 13, 14, 15], false)), [6]);
    }

    #[test]
    fn packed_calls_split_only_where_attention_would_pad_long_texts() {
        // Padded, two short and two longer queries are worth two calls;
        // packed, it costs only attention's share of the products: one call.
        assert_eq!(sizes(&plan_calls(&[7, 8, 19, 22], false)), [2, 2]);
        assert_eq!(sizes(&plan_calls(&[7, 8, 19, 22], true)), [4]);
        // Short texts with long ones would be padded to 200 in attention.
        let mixed = [10, 10, 11, 11, 12, 190, 195, 200, 200, 200];
        assert_eq!(sizes(&plan_calls(&mixed, true)), [5, 5]);
        let mut all: Vec<usize> = (1..300).map(|i| i % 90 + 3).collect();
        all.sort_unstable();
        let covered: Vec<usize> = plan_calls(&all, true).into_iter().flatten().collect();
        assert_eq!(covered, (0..all.len()).collect::<Vec<_>>());
    }

    #[test]
    fn a_part_is_the_tokens_inside_its_bytes() {
        // [CLS] "It" "works" "." "More" [SEP]
        let offsets = [(0, 0), (0, 2), (3, 8), (8, 9), (10, 14), (0, 0)];
        assert_eq!(tokens_within(&offsets, &(0..9)), Some(1..4));
        assert_eq!(tokens_within(&offsets, &(3..14)), Some(2..5));
        // A token cut by the range is outside it; specials never count.
        assert_eq!(tokens_within(&offsets, &(4..14)), Some(3..5));
        assert_eq!(tokens_within(&offsets, &(20..30)), None);
        assert_eq!(tokens_within(&offsets, &(0..0)), None);
    }
}
