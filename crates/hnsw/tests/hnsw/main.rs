//! Integration tests, in one binary to keep link time down (release builds
//! use thin LTO). Run: `cargo test --release -p vigil-hnsw -- --nocapture`
//! to see the recall and timing figures.

mod build;
mod check;
mod codes;
mod common;
mod delete_repair;
mod duplicates;
mod halves;
mod iterative;
mod reachability;
mod recall;
mod side_by_side;
