//! The end-to-end suite, one test binary with a module per area.
//!
//! One binary, not one per file: each test binary links reqwest, rustls and
//! the identity crate again under the release profile's LTO, and twenty of
//! them took ten minutes to link on two cores. `scripts/e2e.sh` (what
//! `make test` runs) still starts one process per module, in order, so areas
//! never share a process or run at the same time, as they did as binaries;
//! `cargo test -p vigil-e2e --test e2e MODULE::` runs one area.

mod auth;
mod backup;
mod crash;
mod docs;
mod durability;
mod fuzz;
mod ha;
mod hnsw;
mod hostile;
mod http_basics;
mod http_surface;
mod identity;
mod identity_real;
mod interrupts;
mod make_run;
mod reference;
mod registries;
mod search_quality;
mod side_by_side;
mod tenants;
mod transaction;
mod upgrade;
mod vectordb;
