//! Identity-document checks: `vigil.assess_id(bytea)`.
//!
//! The checks are the pure `vigil-identity` crate. This module is its Postgres
//! edge: it refuses bad uploads with an SQLSTATE per kind (so the sidecar can
//! answer 415, 422 or 413 without looking at the bytes itself), looks the
//! perceptual hash up among earlier assessments through the band index
//! (multi-index hashing, see `vigil_identity::phash`), and records the
//! assessment in the same transaction. A refused upload records nothing: the
//! error ends the statement before the insert.
//!
//! The machine-readable zone is recognised by PP-OCRv4 (`mrz-rec.onnx` in
//! `vigil.model_dir`, which set-up installs beside the embedding model) on
//! the ONNX Runtime the embeddings load: a process loads the library once.
//! The recogniser is loaded on a backend's first assessment and kept; where
//! the runtime or the model cannot be loaded, the assessment goes on and its
//! `mrz` check is not performed, the answer saying why.
//!
//! A cancel, a statement timeout or a terminate stops an assessment between
//! its stages: the analysis, on any of its threads, reads PostgreSQL's
//! pending-interrupt flag ([`interrupt_pending`]) and gives up, and the
//! interrupt is then processed here, on the backend's thread.

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

use std::cell::RefCell;
use std::path::PathBuf;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use vigil_identity::mrz::onnx::{OrtRecognizer, MODEL_FILE};
use vigil_identity::mrz::Date;
use vigil_identity::{
    phash, Analysis, Assessment, DecodeError, Duplicate, FaceDetector, MrzReader,
};

use crate::pg::jsonb::Jsonb;
use crate::pg::{invalid_input, refuse};

static KEEP_IMAGES: GucSetting<bool> = GucSetting::<bool>::new(false);
static MRZ_THREADS: GucSetting<i32> = GucSetting::<i32>::new(1);

thread_local! {
    /// The face detector, loaded on a backend's first assessment (it parses 1.2 MB of weights).
    static DETECTOR: RefCell<Option<FaceDetector>> = const { RefCell::new(None) };
    /// The MRZ recogniser, the model file it came from and its threads,
    /// loaded on a backend's first assessment and again when
    /// `vigil.model_dir` or `vigil.identity_mrz_threads` change.
    static RECOGNIZER: RefCell<Option<(PathBuf, usize, OrtRecognizer)>> = const { RefCell::new(None) };
}

/// `vigil.identity_keep_images`, `vigil.identity_mrz_threads`.
pub fn register_settings() {
    GucRegistry::define_int_guc(
        c"vigil.identity_mrz_threads",
        c"Threads one backend uses to recognise an identity document's machine-readable zone.",
        c"1 runs the recogniser on the backend's own thread; more cut an assessment's time when cores are idle, but each backend has its own pool.",
        &MRZ_THREADS,
        1,
        64,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"vigil.identity_keep_images",
        c"Keep the bytes of every assessed identity image in vigil.identity_assessments.",
        c"Off by default: only the SHA-256 and the perceptual hash are kept. Identity images are personal data; keep them only where the law and your policy allow.",
        &KEEP_IMAGES,
        GucContext::Suset,
        GucFlags::default(),
    );
}

/// Assesses an identity-document image (JPEG, PNG or WebP) and records it.
///
/// Runs as the extension's owner, so the application role needs no access to
/// the assessments table; `api_key_id` attributes the record to the caller.
/// Acts for the account entered ([`crate::keys::acting_account`]): the
/// duplicates are looked for among its assessments, and the record is its.
#[pg_extern(volatile, security_definer)]
#[search_path(pg_catalog, vigil)]
fn assess_id(image: Option<&[u8]>, api_key_id: default!(Option<i64>, "NULL")) -> Jsonb {
    let Some(bytes) = image else {
        invalid_input("image", "is required (a JPEG, PNG or WebP image)")
    };
    vigil_identity::interrupt::set_check(interrupt_pending);
    let analyse = || {
        with_recognizer(|reader| {
            DETECTOR.with(|cell| {
                let mut cell = cell.borrow_mut();
                let detector = cell.get_or_insert_with(FaceDetector::new);
                vigil_identity::analyse_with(bytes, detector, reader)
            })
        })
    };
    let mut analysed = analyse();
    // Stopped for an interrupt: processing it raises the cancel, timeout or
    // terminate. One that raises nothing (a signal barrier, say) was all
    // there was: the analysis runs again.
    for _ in 0..3 {
        if !matches!(analysed, Err(DecodeError::Interrupted)) {
            break;
        }
        pg_sys::check_for_interrupts!();
        analysed = analyse();
    }
    let analysis = match analysed {
        Ok(analysis) => analysis,
        Err(e) => refuse(sqlstate(&e), "image", &e.message()),
    };
    let account = crate::keys::acting_account();
    let duplicate = find_duplicate(&analysis.phash, &account);
    let assessment = vigil_identity::judge(&analysis, duplicate.as_ref());
    let id = crate::pg::random_uuid("an identity assessment id");
    let response = assessment.to_json(&id.to_string());
    record(
        id,
        &account,
        api_key_id,
        bytes,
        &analysis,
        &assessment,
        &response,
    );
    Jsonb(response)
}

/// Runs `f` with this backend's MRZ recogniser, loading it first if needed;
/// without it (no runtime, no model), with why not.
fn with_recognizer<R>(f: impl FnOnce(MrzReader) -> R) -> R {
    let model = crate::embed::settings::model_dir().join(MODEL_FILE);
    let threads = usize::try_from(MRZ_THREADS.get()).unwrap_or(1).max(1);
    RECOGNIZER.with_borrow_mut(|slot| {
        if !matches!(slot, Some((loaded, t, _)) if *loaded == model && *t == threads) {
            *slot = None;
            let loaded = crate::embed::with_runtime(|runtime| {
                OrtRecognizer::load(runtime, &model, threads).map_err(|e| {
                    format!(
                        "{e} (setting {}; scripts/setup.sh installs it)",
                        crate::embed::settings::MODEL_DIR_GUC
                    )
                })
            })
            .and_then(|loaded| loaded);
            match loaded {
                Ok(recognizer) => *slot = Some((model, threads, recognizer)),
                Err(why) => {
                    return f(MrzReader::Off(format!(
                        "the text recogniser could not be loaded: {why}"
                    )))
                }
            }
        }
        let (_, _, recognizer) = slot.as_ref().expect("recogniser loaded above");
        f(MrzReader::On {
            recognizer,
            today: Date::today_utc(),
        })
    })
}

/// Whether PostgreSQL has an interrupt to process that processing would
/// not hold off: what `CHECK_FOR_INTERRUPTS` reads first. Called on the
/// analysis's threads too: the flag is a `sig_atomic_t` its signal handlers
/// set, and the hold-off counts are the backend thread's, which waits for
/// the analysis meanwhile.
fn interrupt_pending() -> bool {
    // SAFETY: plain reads of process globals of a type no write tears.
    unsafe {
        std::ptr::read_volatile(&raw const pg_sys::InterruptPending) != 0
            && std::ptr::read_volatile(&raw const pg_sys::InterruptHoldoffCount) == 0
            && std::ptr::read_volatile(&raw const pg_sys::QueryCancelHoldoffCount) == 0
            && std::ptr::read_volatile(&raw const pg_sys::CritSectionCount) == 0
    }
}

/// The SQLSTATE of a refused upload; the sidecar maps each to its HTTP status.
fn sqlstate(e: &DecodeError) -> PgSqlErrorCode {
    match e {
        // 415: not a format we take.
        DecodeError::Unsupported { .. } => PgSqlErrorCode::ERRCODE_INVALID_BINARY_REPRESENTATION,
        // 413 / 422: over a size limit, refused before decoding.
        DecodeError::TooManyBytes { .. }
        | DecodeError::TooManyPixels { .. }
        | DecodeError::TooDeep { .. } => PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        // 422: one side more than four times the other.
        DecodeError::OutOfProportion { .. } => PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
        // 422: a supported format that does not decode.
        // Interrupted three times by what raised nothing.
        DecodeError::Interrupted => PgSqlErrorCode::ERRCODE_QUERY_CANCELED,
        DecodeError::Empty | DecodeError::Corrupt { .. } => {
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE
        }
    }
}

/// Differing bits of two perceptual hashes (NULL if either is not one).
#[pg_extern(immutable, strict, parallel_safe, name = "_phash_distance")]
fn phash_distance(a: &[u8], b: &[u8]) -> Option<i32> {
    let (a, b) = (as_hash(a)?, as_hash(b)?);
    Some(phash::distance(&a, &b) as i32)
}

/// The band keys of a perceptual hash, which its GIN index holds.
#[pg_extern(immutable, strict, parallel_safe, name = "_phash_bands")]
fn phash_bands(hash: &[u8]) -> Vec<i32> {
    match as_hash(hash) {
        Some(hash) => phash::band_keys(&hash).to_vec(),
        None => invalid_input(
            "phash",
            &format!("must be {} bytes, not {}", phash::HASH_BYTES, hash.len()),
        ),
    }
}

fn as_hash(bytes: &[u8]) -> Option<phash::Hash> {
    bytes.try_into().ok()
}

/// The earliest, closest earlier assessment of the same picture in the same
/// account (schema.sql).
const FIND_DUPLICATE: &str =
    "SELECT id::text, distance, matches FROM vigil._identity_duplicate($1, $2, $3)";

fn find_duplicate(hash: &phash::Hash, account: &str) -> Option<Duplicate> {
    let args: [DatumWithOid; 3] = [
        hash.as_slice().into(),
        (phash::DUPLICATE_DISTANCE as i32).into(),
        account.into(),
    ];
    let found = Spi::connect(|client| {
        let rows = client.select(FIND_DUPLICATE, Some(1), &args)?;
        match rows.into_iter().next() {
            None => Ok::<_, pgrx::spi::Error>(None),
            Some(row) => Ok(Some(Duplicate {
                assessment_id: row.get::<String>(1)?.unwrap_or_default(),
                distance: row.get::<i32>(2)?.unwrap_or_default().max(0) as u32,
                matches: row.get::<i64>(3)?.unwrap_or_default().max(0) as u64,
            })),
        }
    });
    found.unwrap_or_else(|e| error!("could not look up earlier identity images: {e}"))
}

const RECORD: &str = "\
INSERT INTO vigil.identity_assessments
    (id, api_key_id, sha256, phash, result, level, score, confidence, decision,
     reasons, format, width, height, bytes, response, image, account)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)";

fn record(
    id: pgrx::Uuid,
    account: &str,
    api_key_id: Option<i64>,
    bytes: &[u8],
    analysis: &Analysis,
    assessment: &Assessment,
    response: &serde_json::Value,
) {
    let kept = KEEP_IMAGES.get().then_some(bytes);
    let codes: Vec<String> = assessment.codes().into_iter().map(str::to_owned).collect();
    let args: [DatumWithOid; 17] = [
        id.into(),
        api_key_id.into(),
        analysis.sha256.as_slice().into(),
        analysis.phash.as_slice().into(),
        assessment.result.as_str().into(),
        i16::from(assessment.level.number()).into(),
        (assessment.score as f32).into(),
        assessment.confidence.as_str().into(),
        assessment.decision.as_str().into(),
        codes.into(),
        analysis.format.into(),
        (analysis.width as i32).into(),
        (analysis.height as i32).into(),
        (analysis.bytes as i32).into(),
        Jsonb(response.clone()).into(),
        kept.into(),
        account.into(),
    ];
    if let Err(e) = Spi::run_with_args(RECORD, &args) {
        error!("could not record the identity assessment: {e}");
    }
}

extension_sql_file!(
    "schema.sql",
    name = "identity_schema",
    requires = ["risk_schema", phash_bands, phash_distance]
);

extension_sql!(
    "-- Security definer: only the application role (sql/bootstrap.sql) and the owner assess.\n\
     REVOKE EXECUTE ON FUNCTION vigil.assess_id(bytea, bigint) FROM PUBLIC;",
    name = "assess_id_settings",
    requires = [assess_id, "identity_schema"]
);
