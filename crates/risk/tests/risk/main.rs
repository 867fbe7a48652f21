//! The risk engine's tests against its public interface, one binary with a
//! module per area (each binary is linked on its own, which costs more than
//! its tests take to run). `speed` stays apart: it counts allocations with a
//! global allocator of its own.
//!
//! `cargo test --release -p vigil-risk --test risk scoring::` runs one area.

#[path = "../common/mod.rs"]
mod common;

mod geo;
mod inputs;
mod properties;
mod reference;
mod scoring;
