//! Sentence embeddings with all-MiniLM-L6-v2 through ONNX Runtime.
//!
//! This crate knows nothing about Postgres: the extension wraps it in GUCs and
//! `#[pg_extern]`s, the benchmarks and tests drive it directly. One [`Embedder`]
//! holds one ONNX session and one tokenizer; callers keep it alive and reuse it,
//! because loading the model costs far more than running it.
//!
//! Inputs are truncated at [`MAX_TOKENS`] word pieces and padded only to the
//! longest input of each model call (dynamic padding). Outputs are the mean of
//! the token states under the attention mask, L2-normalised, so the cosine of two
//! embeddings is their dot product.

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
}

impl Embedder {
    /// Loads `model.onnx` and `tokenizer.json` from `model_dir`, running the model
    /// on `threads` intra-op threads (at least one). With `spinning`, those threads
    /// wait for the next operator by spinning briefly before they sleep: a single
    /// short text is a chain of small operators, and waking sleeping threads for
    /// each costs more than the work (see README, embedding figures).
    pub fn load(
        runtime: &Runtime,
        model_dir: &Path,
        threads: usize,
        spinning: bool,
    ) -> Result<Self, EmbedError> {
        let tokenizer = load_tokenizer(&model_dir.join(TOKENIZER_FILE))?;
        let model_path = model_dir.join(MODEL_FILE);
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
            .and_then(|mut b| b.commit_from_file(&model_path))
            .map_err(|e| fail(e.to_string()))?;
        let embedder = Embedder { session, tokenizer };
        embedder.check_signature().map_err(fail)?;
        Ok(embedder)
    }

    /// Refuses a model that does not take and give what mean pooling needs.
    fn check_signature(&self) -> Result<(), String> {
        let inputs: Vec<&str> = self.session.inputs().iter().map(|i| i.name()).collect();
        for wanted in ["input_ids", "attention_mask"] {
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
        let encoded = self.tokenize(texts)?;
        let refs: Vec<&[u32]> = encoded.iter().map(Vec::as_slice).collect();
        self.run(&refs)
    }

    /// Embeds any number of texts, in calls of at most [`MAX_BATCH`] texts of similar
    /// length (less padding), calling `between_calls` before each call so a caller
    /// can honour cancellation. The result is in input order.
    pub fn embed_many(
        &mut self,
        texts: &[&str],
        mut between_calls: impl FnMut(),
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encoded = self.tokenize(texts)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encoded[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(MAX_BATCH) {
            between_calls();
            let ids: Vec<&[u32]> = chunk.iter().map(|&i| encoded[i].as_slice()).collect();
            for (&i, vector) in chunk.iter().zip(self.run(&ids)?) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    /// Word-piece ids of each text, with special tokens, truncated, unpadded.
    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>, EmbedError> {
        texts
            .iter()
            .map(|t| {
                self.tokenizer
                    .encode(*t, true)
                    .map(|e| e.get_ids().to_vec())
                    .map_err(inference)
            })
            .collect()
    }

    /// One model call over already tokenized inputs, padded to the longest.
    fn run(&mut self, ids: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if ids.is_empty() {
            return Ok(Vec::new());
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
        let wants_type_ids = self
            .session
            .inputs()
            .iter()
            .any(|i| i.name() == "token_type_ids");
        let ids_tensor = Tensor::from_array((shape, input_ids)).map_err(inference)?;
        let mask_tensor = Tensor::from_array((shape, mask.clone())).map_err(inference)?;
        let outputs = if wants_type_ids {
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
                mean_pool(
                    &hidden[row * seq * DIMENSIONS..(row + 1) * seq * DIMENSIONS],
                    &mask[row * seq..(row + 1) * seq],
                )
            })
            .collect())
    }
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
