//! # vigil-hnsw: the HNSW graph behind Vigil's `vigil_hnsw` index
//!
//! A pure-Rust implementation of Hierarchical Navigable Small World graphs
//! (Malkov & Yashunin, 2016/2018) for approximate nearest-neighbour search,
//! written to be driven by a Postgres index access method whose graph lives
//! in buffer-managed, WAL-logged pages. This crate has no Postgres in it: the
//! algorithm runs over the small [`GraphStore`] trait, which the access method
//! implements over pages and which [`MemStore`] implements in memory for tests
//! and tools.
//!
//! ## Pieces
//! * [`distance`]: f32 kernels for L2 (plain Euclidean), cosine distance and
//!   negative inner product; scalar code that auto-vectorises. Also unit
//!   vectors in half precision, which a store may keep under cosine and lend
//!   as they are ([`distance::VectorRef`]), with the bound on the error of a
//!   distance computed from them.
//! * [`codes`]: 128-bit codes of vectors kept beside links, from which a
//!   cosine search estimates a neighbour's distance and passes over those
//!   that cannot enter its beam without reading them.
//! * [`store`]: the [`GraphStore`] trait and [`MemStore`].
//! * [`insert()`]: one element at a time (random level, greedy descent,
//!   `ef_construction` beam search per layer, the paper's neighbour-selection
//!   heuristic (pruned candidates not kept), bidirectional links, shrinking of
//!   over-full lists by the same heuristic).
//! * [`search()`]: top-k search; [`IterativeScan`]: resumable scan that keeps
//!   returning results in non-decreasing distance (for filtered SQL queries).
//! * [`repair()`]: vacuum's repair of links to deleted elements.
//! * [`link_unreached`]: links the elements no search can reach, at the end
//!   of a build and at vacuum.
//! * [`check()`]: structural consistency check (basis of `vigil.hnsw_check`),
//!   link codes included where the store keeps them.
//! * [`build`]: parallel bulk build, the same insert on every core over an
//!   in-memory store, returning a plain [`build::Graph`] that loads into any
//!   store.
//! * [`layout`]: the order a bulk build lays elements out in, linked ones
//!   together ([`build::Graph::order_for_locality`]).
//!
//! ## Guarantees
//! * Library code does not panic on data: a bad vector, a wrong dimension, a
//!   missing element or a storage failure is an [`Error`].
//! * Deleted elements are traversed (they keep the graph connected until
//!   vacuum repairs it) but never returned by [`search()`] or
//!   [`IterativeScan`].
//! * Neighbour lists written by the algorithm never exceed
//!   [`Params::capacity`]: `2*m` on layer 0, `m` above.
//! * The algorithm calls a store from one thread; inserts may run side by
//!   side on one graph, each with its own store handle ([`write_element`]
//!   says what the caller must order). The bulk build does that in memory.
//!
//! ## Tests
//! `cargo test --release -p vigil-hnsw` (release: the recall tests build
//! several 10,000-element graphs and are slow in debug builds).

pub mod build;
pub mod check;
pub mod codes;
pub mod distance;
mod error;
mod ids;
pub mod insert;
pub mod layout;
mod params;
pub mod reach;
pub mod repair;
pub mod search;
pub mod store;

pub use check::{check, CheckOptions, CheckReport};
pub use distance::Metric;
pub use error::{Corruption, CorruptionKind, Error, StoreError};
pub use insert::{insert, insert_with_level, plan_links, write_element, LevelRng};
pub use params::{
    Params, DEFAULT_EF_CONSTRUCTION, DEFAULT_EF_SEARCH, DEFAULT_M, MAX_DIMS, MAX_EF_CONSTRUCTION,
    MAX_LEVEL, MAX_M, MIN_M,
};
pub use reach::{link_unreached, unreached, ReachReport};
pub use repair::{repair, RepairReport};
pub use search::{search, IterativeScan, ScanMemory, ScanOrder};
pub use store::{ElementId, ElementMeta, EntryPoint, GraphStore, MemError, MemStore};
