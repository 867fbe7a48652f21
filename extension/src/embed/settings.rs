//! Settings (GUCs) of the embedding model.
//!
//! The two paths default to where `scripts/setup.sh` installs the files, derived
//! from this server's own directories, so a set-up machine needs no configuration.
//! They can load native code and read files, so only a superuser may change them.

use std::ffi::CString;
use std::path::PathBuf;

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

use crate::pg::paths::{non_empty, pkglib_dir, share_dir};

pub const MODEL_DIR_GUC: &str = "vigil.model_dir";
pub const RUNTIME_PATH_GUC: &str = "vigil.onnxruntime_path";
pub const THREADS_GUC: &str = "vigil.embed_threads";
pub const SPINNING_GUC: &str = "vigil.embed_spinning";

/// File name of the runtime inside `$pkglibdir/vigil/`.
const RUNTIME_FILE: &str = "libonnxruntime.so.1.31.1";

static MODEL_DIR: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static RUNTIME_PATH: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static THREADS: GucSetting<i32> = GucSetting::<i32>::new(1);
static SPINNING: GucSetting<bool> = GucSetting::<bool>::new(true);

pub fn register() {
    GucRegistry::define_string_guc(
        c"vigil.model_dir",
        c"Directory holding model.onnx and tokenizer.json of the embedding model.",
        c"Empty means $sharedir/vigil/model, where scripts/setup.sh installs them.",
        &MODEL_DIR,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"vigil.onnxruntime_path",
        c"Path of the ONNX Runtime shared library, loaded once per backend.",
        c"Empty means $pkglibdir/vigil/libonnxruntime.so.1.31.1, where scripts/setup.sh installs it.",
        &RUNTIME_PATH,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"vigil.embed_threads",
        c"Threads one backend uses to run the embedding model.",
        c"Each backend has its own pool; keep the product with concurrent embedding sessions near the core count.",
        &THREADS,
        1,
        64,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"vigil.embed_spinning",
        c"Whether the embedding threads spin briefly for the next operator before sleeping.",
        c"On: one text at a time runs as fast as raw ONNX Runtime; the spin is bounded and an idle backend uses no CPU. Matters only when vigil.embed_threads is above 1.",
        &SPINNING,
        GucContext::Userset,
        GucFlags::default(),
    );
}

pub fn model_dir() -> PathBuf {
    non_empty(&MODEL_DIR).unwrap_or_else(|| share_dir().join("vigil").join("model"))
}

pub fn runtime_path() -> PathBuf {
    non_empty(&RUNTIME_PATH).unwrap_or_else(|| pkglib_dir().join("vigil").join(RUNTIME_FILE))
}

pub fn spinning() -> bool {
    SPINNING.get()
}

pub fn threads() -> usize {
    usize::try_from(THREADS.get()).unwrap_or(1).max(1)
}
