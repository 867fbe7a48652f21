//! Postgres plumbing that several capabilities share, so none reaches into
//! another's folder: errors that name their field ([`error`]), btree ranges read
//! straight from Rust and the relations they open ([`index_range`]), jsonb read
//! and written without text ([`jsonb`]), the
//! server's directories and path settings that default to them ([`paths`]),
//! relation names for messages, and the server's strong random source.

pub mod error;
pub mod index_range;
pub mod jsonb;
pub mod paths;
#[cfg(any(test, feature = "pg_test"))]
pub mod testing;
pub mod tsvector;

use std::cell::RefCell;
use std::ffi::CStr;

use pgrx::pg_sys;
use pgrx::prelude::*;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

pub use error::{invalid_input, refuse};

/// `N` bytes from the server's strong random source (`pg_strong_random`);
/// an ERROR naming `what` they were for if it fails.
pub fn strong_random<const N: usize>(what: &str) -> [u8; N] {
    let mut bytes = [0u8; N];
    // SAFETY: the buffer is N bytes long, as passed.
    if !unsafe { pg_sys::pg_strong_random(bytes.as_mut_ptr().cast(), N) } {
        error!("could not generate random bytes for {what}");
    }
    bytes
}

thread_local! {
    /// This backend's stream of record ids, seeded from the strong source.
    static ID_STREAM: RefCell<Option<ChaCha20Rng>> = const { RefCell::new(None) };
}

/// A random (version 4) UUID for a record's id: 122 bits of a ChaCha20
/// stream that each backend seeds once with 32 bytes of the strong source,
/// as the `uuid` crate's fast generator does. Asking the strong source for
/// every id (OpenSSL's `RAND_status` and `RAND_bytes`) was 3.6% of a risk
/// assessment in a profile.
pub fn random_uuid(what: &str) -> pgrx::Uuid {
    let mut id = [0u8; 16];
    ID_STREAM.with(|cell| {
        cell.borrow_mut()
            .get_or_insert_with(|| ChaCha20Rng::from_seed(strong_random::<32>(what)))
            .fill_bytes(&mut id)
    });
    id[6] = (id[6] & 0x0f) | 0x40;
    id[8] = (id[8] & 0x3f) | 0x80;
    pgrx::Uuid::from_bytes(id)
}

/// An open relation's name, for messages.
pub(crate) fn relation_name(rel: pg_sys::Relation) -> String {
    // SAFETY: rel is open, so its pg_class row is valid.
    unsafe { CStr::from_ptr((*(*rel).rd_rel).relname.data.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}
