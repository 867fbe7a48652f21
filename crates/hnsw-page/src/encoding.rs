//! [`Encoding`]: how element items hold their vectors, which the meta
//! page's layout version names, and which one a new index takes.

use std::borrow::Cow;

use vigil_hnsw::codes::CODE_BYTES;
use vigil_hnsw::distance::{unit_halves, widen_halves};
use vigil_hnsw::Metric;

use crate::layout::ELEMENT_HEADER;

/// How element items hold their vectors; the meta page's layout version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Version 1: the vector as given, f32.
    F32,
    /// Version 2 (cosine only): the vector at unit length in half precision
    /// ([`vigil_hnsw::distance::unit_halves`]); distances computed from it
    /// are within [`vigil_hnsw::distance::unit_half_cosine_error`] of exact.
    UnitF16,
    /// Version 3 (cosine only): as version 2, with neighbour codes.
    UnitF16Coded,
}

/// Fewest dimensions for which a new cosine index keeps neighbour codes.
/// Below it an element's halves take less room than the codes of its
/// layer-0 links (2 x 128 B against 32 x 16 B): a page would hold half as
/// many elements, and reading a vector costs about what skipping it saves.
pub const CODED_MIN_DIMS: usize = 256;

impl Encoding {
    /// What a new index of `metric` over vectors of `dims` uses: halves
    /// where only the direction counts (cosine), with neighbour codes from
    /// [`CODED_MIN_DIMS`] (and while `dims` is not known yet, 0: the first
    /// vector settles it, [`Encoding::settle`]). Under L2 and inner product
    /// a vector's length matters and the error bound would depend on it, so
    /// those keep f32.
    pub fn for_index(metric: Metric, dims: usize) -> Encoding {
        match metric {
            Metric::Cosine if dims == 0 || dims >= CODED_MIN_DIMS => Encoding::UnitF16Coded,
            Metric::Cosine => Encoding::UnitF16,
            Metric::L2 | Metric::InnerProduct => Encoding::F32,
        }
    }

    /// The encoding of an empty index once its first vector fixes `dims`.
    pub fn settle(self, dims: usize) -> Encoding {
        match self {
            Encoding::UnitF16Coded if dims < CODED_MIN_DIMS => Encoding::UnitF16,
            other => other,
        }
    }

    /// How `vigil.hnsw_check` names it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::F32 => "f32",
            Encoding::UnitF16 => "unit half",
            Encoding::UnitF16Coded => "unit half, coded",
        }
    }

    pub(crate) fn layout_version(self) -> u32 {
        match self {
            Encoding::F32 => 1,
            Encoding::UnitF16 => 2,
            Encoding::UnitF16Coded => 3,
        }
    }

    pub(crate) fn bytes_per_dim(self) -> usize {
        match self {
            Encoding::F32 => 4,
            Encoding::UnitF16 | Encoding::UnitF16Coded => 2,
        }
    }

    /// Whether elements and layer-0 links carry codes (version 3).
    pub fn coded(self) -> bool {
        self == Encoding::UnitF16Coded
    }

    /// Where an element item's vector starts.
    pub fn vector_at(self) -> usize {
        if self.coded() {
            ELEMENT_HEADER + CODE_BYTES
        } else {
            ELEMENT_HEADER
        }
    }

    /// `v` as the index will hold it, widened back to f32: an insert
    /// compares its vector with stored ones in this form, so an exact copy
    /// of a stored vector is at distance 0 from it.
    pub fn stored_form(self, v: &[f32]) -> Cow<'_, [f32]> {
        match self {
            Encoding::F32 => Cow::Borrowed(v),
            Encoding::UnitF16 | Encoding::UnitF16Coded => {
                let (mut halves, mut wide) = (Vec::new(), Vec::new());
                unit_halves(v, &mut halves);
                widen_halves(&halves, &mut wide);
                Cow::Owned(wide)
            }
        }
    }
}
