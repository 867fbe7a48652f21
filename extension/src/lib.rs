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
//! - [`identity`]: `vigil.assess_id(bytea)`, the identity-document checks' edge:
//!   refusals by kind, the duplicate lookup and the record.
//! - [`risk`]: `vigil.risk_score(jsonb)`, the transaction risk engine's edge:
//!   history, recording, feedback and the blocklist.
//! - [`pg`]: Postgres plumbing the capabilities share (errors naming their
//!   field, btree ranges, relation names, strong random bytes).

use pgrx::prelude::*;

pub mod cluster;
pub mod embed;
pub mod hnsw;
pub mod identity;
pub mod keys;
pub mod pg;
pub mod risk;
pub mod vectordb;

::pgrx::pg_module_magic!(name, version);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    pg::error::register();
    embed::settings::register();
    hnsw::register();
    keys::register_settings();
    vectordb::register_settings();
    risk::register_settings();
    identity::register_settings();
}

/// Hooks for `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
