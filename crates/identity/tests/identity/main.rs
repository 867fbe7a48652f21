//! The identity checks' tests against the crate's public interface, one
//! binary with a module per area (each binary is linked on its own, which
//! costs more than these take to run). `bounded` stays apart: it measures
//! the heap with a global allocator of its own.
//!
//! `cargo test --release -p vigil-identity --test identity checks::` runs one area.

mod checks;
// The MRZ read by the real recogniser needs ONNX Runtime (feature `ocr-ort`).
#[cfg(feature = "ocr-ort")]
mod mrz_model;
