//! Recognising the zone's lines with PP-OCRv4 through ONNX Runtime (feature `ocr-ort`).
//!
//! The model is `ch_PP-OCRv4_rec_infer.onnx` from PyPI `rapidocr-onnxruntime`
//! 1.4.4 (Apache-2.0), which docker/fetch-data.sh installs as
//! `$(pg_config --sharedir)/vigil/model/mrz-rec.onnx` ([`MODEL_FILE`]),
//! rewritten by scripts/mrz_model.py into the same function in fewer
//! operations (outputs equal to about 1e-6, recognition 0.75x the time). It
//! takes `[N, 3, H, W]` float pixels `(v / 255 - 0.5) / 0.5` and gives
//! `[N, W / 8, 6625]` probabilities: the blank, the dictionary in its
//! metadata property `character`, a space. Trained at 48 pixels high, it reads
//! MRZ lines best at 32 ([`LINE_HEIGHT`]) and 2.3 times faster
//! (docs/identity.md, "Why this MRZ recogniser"): about 30 ms of one core for a zone.
//!
//! ONNX Runtime is loaded once a process, from a path the caller gives
//! ([`load_runtime`], or the runtime the embeddings already loaded: the same
//! `ort` environment type); the session runs on the caller's thread.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use image::GrayImage;
use ort::session::Session;
use ort::value::Tensor;

use super::ctc::{ClassMap, LineProbabilities, CLASSES};
use super::locate::{LINE_HEIGHT, MAX_LINE_WIDTH};
use super::read::{LineRecognizer, RecognizeError};

/// A loaded ONNX Runtime (one a process: the embeddings' own, `vigil_embed::load_runtime`).
pub use ort::environment::Environment as Runtime;

/// The model's file name in the model directory set-up installs.
pub const MODEL_FILE: &str = "mrz-rec.onnx";
/// The metadata property holding the model's dictionary.
const DICTIONARY_KEY: &str = "character";

/// What could not be loaded, and from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OcrError {
    Model { path: PathBuf, reason: String },
}

impl std::fmt::Display for OcrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OcrError::Model { path, reason } => write!(
                f,
                "could not load the MRZ recognition model \"{}\": {reason}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for OcrError {}

/// PP-OCRv4 recognition, its output reduced to the MRZ's classes.
pub struct OrtRecognizer {
    /// `Session::run` takes `&mut`; the lock lets one recogniser be shared.
    session: Mutex<Session>,
    classes: ClassMap,
}

impl OrtRecognizer {
    /// Loads `model` on `threads` intra-op threads (1 runs it on the
    /// caller's thread, as measured), reading its dictionary.
    pub fn load(
        runtime: &Runtime,
        model: &Path,
        threads: usize,
    ) -> Result<OrtRecognizer, OcrError> {
        let fail = |reason: String| OcrError::Model {
            path: model.to_owned(),
            reason,
        };
        if !model.is_file() {
            return Err(fail("no such file".into()));
        }
        let session = Session::builder(runtime)
            .and_then(|b| Ok(b.with_intra_threads(threads.max(1))?))
            .and_then(|b| Ok(b.with_inter_threads(1)?))
            .and_then(|mut b| b.commit_from_file(model))
            .map_err(|e| fail(e.to_string()))?;
        if session.inputs().len() != 1 || session.outputs().is_empty() {
            return Err(fail(format!(
                "{} inputs and {} outputs: not a text recogniser (one input, one output)",
                session.inputs().len(),
                session.outputs().len()
            )));
        }
        let dictionary = session
            .metadata()
            .map_err(|e| fail(e.to_string()))?
            .custom(DICTIONARY_KEY)
            .ok_or_else(|| fail(format!("no \"{DICTIONARY_KEY}\" metadata (the dictionary)")))?;
        let classes = ClassMap::from_dictionary(&dictionary).map_err(fail)?;
        Ok(OrtRecognizer {
            session: Mutex::new(session),
            classes,
        })
    }
}

impl LineRecognizer for OrtRecognizer {
    /// All lines in one batch, padded to the widest (with the normalised
    /// zero, mid-grey, as RapidOCR pads).
    fn recognize(&self, lines: &[GrayImage]) -> Result<Vec<LineProbabilities>, RecognizeError> {
        if lines.is_empty() {
            return Ok(Vec::new());
        }
        let fail = |e: &dyn std::fmt::Display| RecognizeError(e.to_string());
        let h = LINE_HEIGHT as usize;
        let lines: Vec<std::borrow::Cow<GrayImage>> = lines
            .iter()
            .map(|l| {
                if l.height() == LINE_HEIGHT && l.width() <= MAX_LINE_WIDTH && l.width() >= 8 {
                    std::borrow::Cow::Borrowed(l)
                } else {
                    let w = (u64::from(l.width()) * u64::from(LINE_HEIGHT)
                        / u64::from(l.height().max(1)))
                    .clamp(8, u64::from(MAX_LINE_WIDTH)) as u32;
                    std::borrow::Cow::Owned(image::imageops::resize(
                        l,
                        w,
                        LINE_HEIGHT,
                        image::imageops::FilterType::Triangle,
                    ))
                }
            })
            .collect();
        let w = lines.iter().map(|l| l.width() as usize).max().unwrap_or(8);
        let n = lines.len();
        let mut data = vec![0f32; n * 3 * h * w];
        for (i, line) in lines.iter().enumerate() {
            for (x, y, p) in line.enumerate_pixels() {
                let v = (f32::from(p.0[0]) / 255.0 - 0.5) / 0.5;
                for c in 0..3 {
                    data[((i * 3 + c) * h + y as usize) * w + x as usize] = v;
                }
            }
        }
        let input =
            Tensor::from_array(([n as i64, 3, h as i64, w as i64], data)).map_err(|e| fail(&e))?;
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let outputs = session.run(ort::inputs![input]).map_err(|e| fail(&e))?;
        let (shape, probs) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| fail(&e))?;
        let dims: Vec<usize> = shape
            .iter()
            .map(|&d| usize::try_from(d).unwrap_or(0))
            .collect();
        let [batch, steps, classes] = dims[..] else {
            return Err(RecognizeError(format!(
                "output of shape {dims:?}, not [N, steps, classes]"
            )));
        };
        if batch != n || classes != self.classes.model_classes || probs.len() != n * steps * classes
        {
            return Err(RecognizeError(format!(
                "output of shape {dims:?} for {n} lines and {} classes",
                self.classes.model_classes
            )));
        }
        let mut out = Vec::with_capacity(n);
        let mut row = [0f32; CLASSES];
        for i in 0..n {
            let mut reduced = Vec::with_capacity(steps * CLASSES);
            for t in 0..steps {
                let at = (i * steps + t) * classes;
                self.classes.reduce(&probs[at..at + classes], &mut row);
                reduced.extend_from_slice(&row);
            }
            out.push(
                LineProbabilities::new(steps, reduced)
                    .ok_or_else(|| RecognizeError("probabilities of the wrong size".into()))?,
            );
        }
        Ok(out)
    }
}
