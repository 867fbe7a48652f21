//! The `vigil` PostgreSQL extension.
//!
//! One module per capability; each keeps its logic in a pure crate or module and
//! only the Postgres edge (settings, `#[pg_extern]`s, errors) here.
//!
//! - [`embed`]: `vigil.embed(text)` and `vigil.embed(text[])`, sentence embeddings
//!   computed in the backend by ONNX Runtime.
//! - [`keys`]: accounts, API keys and user keys, and the per-account isolation
//!   (row-level security) of vector data.
//! - [`vectordb`]: named vector databases per account.
//! - [`hnsw`]: the `vigil_hnsw` index access method and the distance operators
//!   on `real[]`.
//! - [`risk`]: `vigil.risk_score(jsonb)`, the transaction risk engine's edge:
//!   history, recording, feedback and the blocklist.

use pgrx::prelude::*;

pub mod embed;
pub mod hnsw;
pub mod jsonb;
pub mod keys;
pub mod risk;
pub mod vectordb;

::pgrx::pg_module_magic!(name, version);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    embed::settings::register();
    hnsw::register();
    keys::register_settings();
    risk::register_settings();
}

/// `N` bytes from the server's strong random source (`pg_strong_random`);
/// an ERROR naming `what` they were for if it fails.
pub(crate) fn strong_random<const N: usize>(what: &str) -> [u8; N] {
    let mut bytes = [0u8; N];
    // SAFETY: the buffer is N bytes long, as passed.
    if !unsafe { pg_sys::pg_strong_random(bytes.as_mut_ptr().cast(), N) } {
        error!("could not generate random bytes for {what}");
    }
    bytes
}

/// Hooks for `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
