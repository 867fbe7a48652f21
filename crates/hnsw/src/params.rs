//! Index-wide parameters and their bounds: what a caller fixes when an
//! index is created, checked once ([`Params::validate`]) before any
//! algorithm runs, so the algorithms can rely on the ranges.

use crate::distance::{self, Metric};
use crate::error::Error;
use crate::store::ElementId;

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
