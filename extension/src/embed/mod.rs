//! `vigil.embed`: sentence embeddings computed inside the backend.
//!
//! The model is loaded on first use and kept for the life of the backend; it is
//! reloaded only when `vigil.model_dir` or `vigil.embed_threads` change. ONNX
//! Runtime itself can be loaded only once per process. Every failure to load
//! becomes an ERROR that names the setting and the path to fix.

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;
pub mod settings;

use std::cell::RefCell;
use std::path::PathBuf;

use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;
use vigil_embed::{EmbedError, Embedder};

struct Loaded {
    model_dir: PathBuf,
    threads: usize,
    spinning: bool,
    embedder: Embedder,
}

thread_local! {
    /// The ONNX Runtime environment and the library path it came from.
    static RUNTIME: RefCell<Option<(PathBuf, vigil_embed::Runtime)>> = const { RefCell::new(None) };
    static MODEL: RefCell<Option<Loaded>> = const { RefCell::new(None) };
}

/// Embeds one text: a 384-dimensional unit vector.
#[pg_extern(stable, parallel_safe)]
fn embed(text: &str) -> Vec<f32> {
    with_embedder(|e| e.embed(text))
}

/// Embeds many texts in few model calls; one row per input, in input order
/// (use `WITH ORDINALITY` to number them). A NULL input gives a NULL row.
#[pg_extern(stable, parallel_safe, name = "embed")]
fn embed_batch(texts: Vec<Option<String>>) -> SetOfIterator<'static, Option<Vec<f32>>> {
    let present: Vec<&str> = texts.iter().flatten().map(String::as_str).collect();
    let mut vectors = with_embedder(|e| {
        e.embed_many(&present, || {
            pg_sys::check_for_interrupts!();
        })
    })
    .into_iter();
    let rows: Vec<Option<Vec<f32>>> = texts
        .iter()
        .map(|t| t.as_ref().and_then(|_| vectors.next()))
        .collect();
    SetOfIterator::new(rows)
}

/// Runs `f` on this backend's embedder, loading it first if needed, and turns any
/// failure into an ERROR raised after every borrow is released.
pub(crate) fn with_embedder<R>(f: impl FnOnce(&mut Embedder) -> Result<R, EmbedError>) -> R {
    let model_dir = settings::model_dir();
    let threads = settings::threads();
    let spinning = settings::spinning();
    let result = MODEL.with_borrow_mut(|slot| {
        let fresh = matches!(slot, Some(l) if l.model_dir == model_dir && l.threads == threads && l.spinning == spinning);
        if !fresh {
            *slot = None;
            let embedder = RUNTIME.with_borrow_mut(load_runtime).and_then(|()| {
                RUNTIME.with_borrow(|rt| {
                    let (_, runtime) = rt.as_ref().expect("runtime loaded above");
                    Embedder::load(runtime, &model_dir, threads, spinning)
                        .map_err(Failure::Embed)
                })
            })?;
            *slot = Some(Loaded {
                model_dir: model_dir.clone(),
                threads,
                spinning,
                embedder,
            });
        }
        let loaded = slot.as_mut().expect("model loaded above");
        f(&mut loaded.embedder).map_err(Failure::Embed)
    });
    result.unwrap_or_else(|failure| failure.raise())
}

/// Runs `f` on this backend's ONNX Runtime, loading it first if needed: the
/// one the embeddings use, as a process loads the library once (the MRZ
/// recogniser runs on it too). A failure to load is returned as a message
/// naming the setting to fix, not raised.
pub(crate) fn with_runtime<R>(f: impl FnOnce(&vigil_embed::Runtime) -> R) -> Result<R, String> {
    RUNTIME.with_borrow_mut(|slot| {
        load_runtime(slot).map_err(|failure| failure.describe())?;
        let (_, runtime) = slot.as_ref().expect("runtime loaded above");
        Ok(f(runtime))
    })
}

fn load_runtime(slot: &mut Option<(PathBuf, vigil_embed::Runtime)>) -> Result<(), Failure> {
    let wanted = settings::runtime_path();
    match slot {
        Some((loaded, _)) if *loaded == wanted => Ok(()),
        Some((loaded, _)) => Err(Failure::RuntimeChanged {
            loaded: loaded.clone(),
            wanted,
        }),
        None => {
            let env = vigil_embed::load_runtime(&wanted).map_err(Failure::Embed)?;
            *slot = Some((wanted, env));
            Ok(())
        }
    }
}

enum Failure {
    Embed(EmbedError),
    RuntimeChanged { loaded: PathBuf, wanted: PathBuf },
}

impl Failure {
    /// The message of [`Failure::raise`], for a caller that goes on without the runtime.
    fn describe(&self) -> String {
        match self {
            Failure::Embed(e @ EmbedError::Runtime { .. }) => {
                format!("{e} (setting {})", settings::RUNTIME_PATH_GUC)
            }
            Failure::Embed(e) => e.to_string(),
            Failure::RuntimeChanged { loaded, wanted } => format!(
                "{} is \"{}\" but this backend already loaded ONNX Runtime from \"{}\"",
                settings::RUNTIME_PATH_GUC,
                wanted.display(),
                loaded.display()
            ),
        }
    }

    fn raise(self) -> ! {
        let (code, message, hint) = match self {
            Failure::Embed(e @ EmbedError::Runtime { .. }) => (
                file_code(&e),
                format!("{e} (setting {})", settings::RUNTIME_PATH_GUC),
                format!("Set {} to the path of libonnxruntime.so 1.31, or run scripts/setup.sh.", settings::RUNTIME_PATH_GUC),
            ),
            Failure::Embed(e @ (EmbedError::Model { .. } | EmbedError::Tokenizer { .. })) => (
                file_code(&e),
                format!("{e} (setting {})", settings::MODEL_DIR_GUC),
                format!("Set {} to a directory holding model.onnx and tokenizer.json, or run scripts/setup.sh.", settings::MODEL_DIR_GUC),
            ),
            Failure::Embed(e @ EmbedError::Inference(_)) => (
                PgSqlErrorCode::ERRCODE_EXTERNAL_ROUTINE_EXCEPTION,
                e.to_string(),
                String::from("This is a bug or a broken model file; please report it."),
            ),
            Failure::RuntimeChanged { loaded, wanted } => (
                PgSqlErrorCode::ERRCODE_CANT_CHANGE_RUNTIME_PARAM,
                format!(
                    "{} is \"{}\" but this backend already loaded ONNX Runtime from \"{}\"",
                    settings::RUNTIME_PATH_GUC,
                    wanted.display(),
                    loaded.display()
                ),
                String::from("A backend loads ONNX Runtime once; reconnect to use another library."),
            ),
        };
        pgrx::pg_sys::panic::ErrorReport::new(code, message, "vigil.embed")
            .set_hint(hint)
            .report(PgLogLevel::ERROR);
        unreachable!("an ERROR report does not return")
    }
}

fn file_code(e: &EmbedError) -> PgSqlErrorCode {
    match e.path() {
        Some(p) if !p.exists() => PgSqlErrorCode::ERRCODE_UNDEFINED_FILE,
        _ => PgSqlErrorCode::ERRCODE_CONFIG_FILE_ERROR,
    }
}
