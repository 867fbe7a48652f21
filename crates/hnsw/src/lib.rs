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
pub mod insert;
pub mod layout;
pub mod reach;
pub mod repair;
pub mod search;
pub mod store;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

pub use check::{check, CheckOptions, CheckReport};
pub use distance::Metric;
pub use insert::{insert, insert_with_level, plan_links, write_element, LevelRng};
pub use reach::{link_unreached, unreached, ReachReport};
pub use repair::{repair, RepairReport};
pub use search::{search, IterativeScan, ScanMemory, ScanOrder};
pub use store::{ElementId, ElementMeta, EntryPoint, GraphStore, MemError, MemStore};

/// Default `m`: links per element on layers above 0 (`2*m` on layer 0).
pub const DEFAULT_M: usize = 16;
/// Default beam width while inserting.
pub const DEFAULT_EF_CONSTRUCTION: usize = 64;
/// Default beam width while searching (`hnsw.ef_search` in SQL).
pub const DEFAULT_EF_SEARCH: usize = 40;
/// Highest level an element can get: levels are `0..=MAX_LEVEL`. With the
/// default `m` a level above 15 has probability `16^-16`; the cap gives the
/// page layout a fixed bound.
pub const MAX_LEVEL: usize = 15;
/// Largest supported dimension count.
pub const MAX_DIMS: usize = 16_000;
/// Bounds on `m` and `ef_construction`, as in pgvector.
pub const MIN_M: usize = 2;
pub const MAX_M: usize = 100;
pub const MAX_EF_CONSTRUCTION: usize = 1000;

/// Index-wide parameters. They are fixed when the index is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub dims: usize,
    pub metric: Metric,
    pub m: usize,
    pub ef_construction: usize,
}

impl Params {
    /// Parameters with the default `m` and `ef_construction`.
    pub fn new(dims: usize, metric: Metric) -> Self {
        Params {
            dims,
            metric,
            m: DEFAULT_M,
            ef_construction: DEFAULT_EF_CONSTRUCTION,
        }
    }

    /// Checks the ranges; every entry point of the crate calls it.
    pub fn validate(&self) -> Result<(), String> {
        if self.dims == 0 || self.dims > MAX_DIMS {
            return Err(format!("dims must be in 1..={MAX_DIMS}, got {}", self.dims));
        }
        if !(MIN_M..=MAX_M).contains(&self.m) {
            return Err(format!("m must be in {MIN_M}..={MAX_M}, got {}", self.m));
        }
        if self.ef_construction < 2 * self.m || self.ef_construction > MAX_EF_CONSTRUCTION {
            return Err(format!(
                "ef_construction must be in 2*m..={MAX_EF_CONSTRUCTION} ({}..={MAX_EF_CONSTRUCTION}), got {}",
                2 * self.m,
                self.ef_construction
            ));
        }
        Ok(())
    }

    /// Neighbour-list capacity on `layer`: `2*m` on layer 0, `m` above.
    pub fn capacity(&self, layer: usize) -> usize {
        if layer == 0 {
            2 * self.m
        } else {
            self.m
        }
    }

    /// The level multiplier `mL = 1/ln(m)` of the paper.
    pub fn level_multiplier(&self) -> f64 {
        1.0 / (self.m.max(2) as f64).ln()
    }

    /// Whether the index holds `v`. A zero vector has no cosine distance to
    /// anything, so under cosine it stays in the table and out of the index,
    /// as pgvector leaves it: a user's write never fails because of an index.
    pub fn indexes(&self, v: &[f32]) -> bool {
        self.metric != Metric::Cosine || distance::norm_squared(v) != 0.0
    }

    /// Checks a vector before it is inserted or searched for.
    pub(crate) fn validate_vector<I: ElementId, E: std::error::Error + 'static>(
        &self,
        v: &[f32],
    ) -> Result<(), Error<I, E>> {
        if v.len() != self.dims {
            return Err(Error::Dimensions {
                expected: self.dims,
                got: v.len(),
            });
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(Error::InvalidVector("it contains NaN or infinity"));
        }
        let n2 = distance::norm_squared(v);
        if !n2.is_finite() {
            return Err(Error::InvalidVector("its norm overflows f32"));
        }
        if self.metric == Metric::Cosine && n2 == 0.0 {
            return Err(Error::InvalidVector("a zero vector has no cosine distance"));
        }
        Ok(())
    }
}

/// Everything that can go wrong. `I` is the element id type, `E` the
/// store's error type.
#[derive(Debug, thiserror::Error)]
pub enum Error<I: ElementId, E: std::error::Error + 'static> {
    /// The store failed (in Postgres: an `ereport` caught by the glue).
    #[error("storage error: {0}")]
    Storage(#[source] E),
    #[error("vector has {got} dimensions, the index expects {expected}")]
    Dimensions { expected: usize, got: usize },
    #[error("invalid vector: {0}")]
    InvalidVector(&'static str),
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// The graph is inconsistent; names the element and layer.
    #[error("index is corrupt: {0}")]
    Corrupt(Corruption<I>),
    /// The bulk build failed (duplicate id, too many elements, a panic).
    #[error("build failed: {0}")]
    Build(String),
}

/// The [`Error`] for store `S`.
pub type StoreError<S> = Error<<S as GraphStore>::Id, <S as GraphStore>::Error>;

/// A structural problem found in the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Corruption<I> {
    /// The element whose data is wrong, if the problem belongs to one.
    pub element: Option<I>,
    /// The layer of the neighbour list concerned, if any.
    pub layer: Option<usize>,
    pub kind: CorruptionKind<I>,
}

/// What exactly is wrong; see [`check()`].
#[derive(Debug, Clone, PartialEq)]
pub enum CorruptionKind<I> {
    SelfLink,
    DuplicateLink {
        target: I,
    },
    DanglingLink {
        target: I,
    },
    LinkToDeleted {
        target: I,
    },
    /// A link on layer `l` to an element whose level is below `l`.
    LinkBelowLayer {
        target: I,
        target_level: usize,
    },
    TooManyNeighbours {
        len: usize,
        capacity: usize,
    },
    VectorLength {
        len: usize,
        expected: usize,
    },
    /// A layer-0 link's code differs from the code its element keeps, or
    /// the list has not one code per link.
    WrongCode {
        target: Option<I>,
    },
    NonFiniteVector,
    LevelTooHigh {
        level: usize,
    },
    /// The store has elements but no entry point.
    NoEntryPoint,
    /// The entry point names an element that does not exist.
    EntryPointMissing,
    /// The entry point's recorded level differs from the element's level.
    EntryPointLevel {
        recorded: usize,
        actual: usize,
    },
    /// Some element has a higher level than the entry point.
    EntryPointNotTop {
        entry_level: usize,
        higher: I,
        higher_level: usize,
    },
    EntryPointDeleted,
    /// An empty store with an entry point.
    EntryPointOnEmpty,
}

impl<I: fmt::Debug> fmt::Display for Corruption<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(e) = &self.element {
            write!(f, "element {e:?}")?;
            if let Some(l) = self.layer {
                write!(f, " layer {l}")?;
            }
            write!(f, ": ")?;
        }
        match &self.kind {
            CorruptionKind::SelfLink => write!(f, "links to itself"),
            CorruptionKind::DuplicateLink { target } => write!(f, "links to {target:?} twice"),
            CorruptionKind::DanglingLink { target } => {
                write!(f, "links to {target:?}, which does not exist")
            }
            CorruptionKind::LinkToDeleted { target } => {
                write!(f, "links to {target:?}, which is deleted")
            }
            CorruptionKind::LinkBelowLayer {
                target,
                target_level,
            } => write!(
                f,
                "links to {target:?}, whose level {target_level} is below this layer"
            ),
            CorruptionKind::TooManyNeighbours { len, capacity } => {
                write!(f, "has {len} neighbours, capacity is {capacity}")
            }
            CorruptionKind::VectorLength { len, expected } => {
                write!(f, "vector has {len} dimensions, expected {expected}")
            }
            CorruptionKind::NonFiniteVector => write!(f, "vector contains NaN or infinity"),
            CorruptionKind::WrongCode {
                target: Some(target),
            } => {
                write!(
                    f,
                    "the code kept with the link to {target:?} is not that element's"
                )
            }
            CorruptionKind::WrongCode { target: None } => {
                write!(f, "the list does not keep one code per link")
            }
            CorruptionKind::LevelTooHigh { level } => {
                write!(f, "level {level} exceeds the maximum {MAX_LEVEL}")
            }
            CorruptionKind::NoEntryPoint => write!(f, "graph has elements but no entry point"),
            CorruptionKind::EntryPointMissing => write!(f, "entry point does not exist"),
            CorruptionKind::EntryPointLevel { recorded, actual } => write!(
                f,
                "entry point recorded at level {recorded}, element has level {actual}"
            ),
            CorruptionKind::EntryPointNotTop {
                entry_level,
                higher,
                higher_level,
            } => write!(
                f,
                "entry point has level {entry_level} but {higher:?} has level {higher_level}"
            ),
            CorruptionKind::EntryPointDeleted => write!(f, "entry point is deleted"),
            CorruptionKind::EntryPointOnEmpty => write!(f, "empty graph has an entry point"),
        }
    }
}

/// A fast, non-cryptographic hasher for visited sets (ids are not
/// attacker-chosen in a way that matters: they are slot addresses).
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // Final avalanche so that the low bits HashMap uses are well mixed.
        let mut z = self.0;
        z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        z ^ (z >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }

    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

pub(crate) type IdSet<I> = HashSet<I, BuildHasherDefault<IdHasher>>;
pub(crate) type IdMap<I, V> = HashMap<I, V, BuildHasherDefault<IdHasher>>;
