//! Neighbour codes: 128 sign bits of a vector, kept beside each link, so a
//! search can pass over a neighbour that cannot enter its beam without
//! reading the neighbour's vector.
//!
//! A search's time goes to reading the vectors of the neighbours of each
//! element it expands (in the index: a page each). Most of them end up too
//! far to enter the beam. With a short code of every neighbour stored in the
//! neighbour list itself, which the search has already read, it can estimate
//! each neighbour's distance first and read only those whose estimate is
//! within [`SKIP_MARGIN`] of the beam's worst. On the real embeddings of the
//! `make bench-hnsw` data that reads some 0.55x to 0.6x the vectors at equal
//! recall (`examples/neighbour_codes.rs`, docs/hnsw.md).
//!
//! The code is SimHash (Charikar, 2002): the signs of the vector's
//! projections on 128 random directions, here orthogonal ones from a
//! randomized Hadamard transform ([`Directions`]). The estimate is
//! asymmetric, as RaBitQ's (Gao and Long, SIGMOD 2024) is: the query is not
//! reduced to bits; its projections, each scaled to unit variance, are
//! summed with the signs of the element's code. For a Gaussian direction
//! `g`, `E[sign(g.x) g.q] = sqrt(2/pi) cos(x, q)` (unit `x`, `q`), so
//! `sqrt(pi/2)` times the mean estimates the cosine; the transform's
//! projections are near Gaussian. The directions come from a fixed seed
//! and depend only on the dimension count, so a code
//! written by one backend means the same in every other, and in the next
//! release: changing [`Directions`] changes the index format.
//!
//! Only for cosine: a code holds a direction, not a length.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::distance::norm_squared;

/// Bits in a code.
pub const CODE_BITS: usize = 128;
/// Bytes in a code as stored.
pub const CODE_BYTES: usize = CODE_BITS / 8;

/// A vector's code: bit `i` set when its projection on direction `i` is not
/// negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Code(pub [u64; 2]);

impl Code {
    pub fn to_bytes(self) -> [u8; CODE_BYTES] {
        let mut out = [0u8; CODE_BYTES];
        out[..8].copy_from_slice(&self.0[0].to_le_bytes());
        out[8..].copy_from_slice(&self.0[1].to_le_bytes());
        out
    }

    /// The code in `bytes` (at least [`CODE_BYTES`], any alignment).
    pub fn from_bytes(bytes: &[u8]) -> Option<Code> {
        let lo = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
        let hi = u64::from_le_bytes(bytes.get(8..16)?.try_into().ok()?);
        Some(Code([lo, hi]))
    }
}

/// How far past the beam's worst distance an estimate may be and the
/// neighbour still be read. From 128 bits the estimated cosine is off by
/// about 0.08 to 0.11 (one standard deviation, `sqrt((pi/2 - cos^2) / 128)`),
/// so some near neighbours are passed over and a search needs a wider beam
/// for the same recall, but reads fewer vectors for it. Measured on the real
/// embeddings of `make bench-hnsw` (`examples/neighbour_codes.rs`), vectors
/// read at equal recall against no codes: margin 0, 0.57x at recall 0.954
/// and 0.48x at 0.974; margin 0.06, 0.61x and 0.54x; margin 0.1, 0.65x and
/// 0.60x. On tightly clustered data, where a beam's distances are smaller
/// than the estimate's error, a small margin costs more reads than it saves
/// (the crate's tests); 0.08 keeps most of the gain and that case even.
pub const SKIP_MARGIN: f32 = 0.08;

/// Rounds of random signs and a Walsh-Hadamard transform in [`Directions`].
const ROUNDS: usize = 3;

/// The [`CODE_BITS`] fixed random directions for one dimension count: the
/// first rows of a randomized Hadamard transform (`ROUNDS` times: flip the
/// signs of fixed random coordinates, then a fast Walsh-Hadamard
/// transform), over vectors padded with zeros to `n`, a power of two. Its
/// rows are orthogonal and, after three rounds, each projection of a unit
/// vector is near Gaussian (Ailon and Chazelle's fast Johnson-Lindenstrauss
/// transform; RaBitQ rotates with it too). So a projection costs
/// `3 n log n` additions and a few kilobytes of signs, where as many
/// Gaussian rows would cost `128 dims` multiply-adds and `512 dims` bytes a
/// backend (196 KB at 384 dimensions, read again by every query, evicted by
/// every other backend sharing the core).
#[derive(Debug)]
pub struct Directions {
    dims: usize,
    /// `dims` rounded up to a power of two, at least [`CODE_BITS`].
    n: usize,
    /// `ROUNDS` vectors of `n` signs, +1 or -1.
    signs: Vec<f32>,
}

impl Directions {
    /// The directions for `dims`, made once per process and shared.
    pub fn for_dims(dims: usize) -> Arc<Directions> {
        static MADE: OnceLock<Mutex<HashMap<usize, Arc<Directions>>>> = OnceLock::new();
        let made = MADE.get_or_init(Default::default);
        let mut made = made.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        made.entry(dims)
            .or_insert_with(|| Arc::new(Directions::new(dims)))
            .clone()
    }

    fn new(dims: usize) -> Directions {
        // xorshift64* from a fixed seed: the format depends on these exact
        // signs, so no library generator whose stream could change.
        let n = dims.next_power_of_two().max(CODE_BITS);
        let mut state = 0x5EED_C0DE_u64 ^ (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let signs = (0..ROUNDS * n)
            .map(|_| {
                state ^= state >> 12;
                state ^= state << 25;
                state ^= state >> 27;
                if state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 63 == 1 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        Directions { dims, n, signs }
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// `v`'s projections on the directions, scaled so that a unit vector's
    /// have unit variance. Each round's transform is unnormalized (it grows
    /// a norm by `sqrt(n)`): after three, dividing by `n` leaves `sqrt(n)`
    /// times the orthonormal transform's coordinates.
    fn project(&self, v: &[f32]) -> Vec<f32> {
        let n = self.n;
        let mut x = vec![0f32; n];
        let len = v.len().min(n);
        x[..len].copy_from_slice(&v[..len]);
        for signs in self.signs.chunks_exact(n) {
            x.iter_mut().zip(signs).for_each(|(a, s)| *a *= s);
            walsh_hadamard(&mut x);
        }
        x.truncate(CODE_BITS);
        let scale = 1.0 / n as f32;
        x.iter_mut().for_each(|a| *a *= scale);
        x
    }

    /// The code of `v` (of length `dims`; any length, as a unit vector of
    /// its direction).
    pub fn code(&self, v: &[f32]) -> Code {
        let mut words = [0u64; 2];
        for (i, p) in self.project(v).into_iter().enumerate() {
            if p >= 0.0 {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        Code(words)
    }

    /// A query ready to estimate its cosine distance to coded vectors.
    pub fn query(&self, q: &[f32]) -> CodedQuery {
        self.query_in(q, Vec::new())
    }

    /// [`Directions::query`], its tables written in `tables` (the memory of
    /// an earlier query's, [`CodedQuery::into_tables`]).
    pub fn query_in(&self, q: &[f32], mut tables: Vec<f32>) -> CodedQuery {
        let n = norm_squared(q).sqrt();
        let inv = if n > 0.0 && n.is_finite() {
            1.0 / n
        } else {
            0.0
        };
        // estimate = 1 - c * sum(s_i p_i), s_i = +-1 by bit i, p_i the unit
        // variance projection: = 1 + c * sum(p) - 2c * sum(p_i, bit i set).
        // Tables per nibble of the code hold the last sum's parts, so an
        // estimate is 32 lookups.
        let c = (std::f32::consts::PI / 2.0).sqrt() / CODE_BITS as f32;
        let mut p = self.project(q);
        p.iter_mut().for_each(|x| *x *= inv);
        tables.clear();
        tables.resize(CODE_BYTES * 256, 0.0);
        for (j, table) in tables.chunks_exact_mut(256).enumerate() {
            // Entry `b`: 2c times the projections whose bits `b` sets,
            // built from the entry without its highest bit.
            for b in 1..256usize {
                let top = (usize::BITS - 1 - b.leading_zeros()) as usize;
                table[b] = table[b & !(1 << top)] + 2.0 * c * p[8 * j + top];
            }
        }
        CodedQuery {
            base: 1.0 + c * p.iter().sum::<f32>(),
            tables,
        }
    }
}

/// The fast Walsh-Hadamard transform of `x` (length a power of two), in
/// place and unnormalized.
fn walsh_hadamard(x: &mut [f32]) {
    let mut h = 1;
    while h < x.len() {
        for pair in x.chunks_exact_mut(2 * h) {
            let (a, b) = pair.split_at_mut(h);
            for (u, w) in a.iter_mut().zip(b.iter_mut()) {
                (*u, *w) = (*u + *w, *u - *w);
            }
        }
        h *= 2;
    }
}

/// A query's projections, arranged for [`CodedQuery::estimate`]: one
/// table of 256 sums for each byte of a code, so an estimate is 16
/// lookups, summed in four independent chains.
#[derive(Debug, Clone)]
pub struct CodedQuery {
    base: f32,
    /// `CODE_BYTES` tables of 256.
    tables: Vec<f32>,
}

impl CodedQuery {
    /// The memory of its tables, for the next query's ([`Directions::query_in`]).
    pub fn into_tables(self) -> Vec<f32> {
        self.tables
    }

    /// Estimated cosine distance from the query to the vector coded `code`.
    #[inline]
    pub fn estimate(&self, code: &Code) -> f32 {
        let t = &self.tables[..CODE_BYTES * 256];
        let mut sums = [0f32; 4];
        for (w, &word) in code.0.iter().enumerate() {
            let bytes = word.to_le_bytes();
            for (k, &b) in bytes.iter().enumerate() {
                let j = 8 * w + k;
                sums[k % 4] += t[256 * j + usize::from(b)];
            }
        }
        self.base - ((sums[0] + sums[1]) + (sums[2] + sums[3]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::cosine_distance;

    /// Deterministic pseudo-random vectors for the tests.
    fn vectors(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = seed;
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        (0..n)
            .map(|_| (0..dims).map(|_| next()).collect())
            .collect()
    }

    #[test]
    fn directions_are_fixed_for_a_dimension_count() {
        let a = Directions::new(384);
        let b = Directions::for_dims(384);
        assert_eq!((a.n, &a.signs), (512, &b.signs));
        assert!(Arc::ptr_eq(&b, &Directions::for_dims(384)));
        assert_ne!(a.signs[..512], Directions::new(1000).signs[..512]);
        // A golden code: the format on disk depends on these numbers.
        let v: Vec<f32> = (0..384).map(|i| ((i * 7919) % 97) as f32 - 48.0).collect();
        assert_eq!(
            a.code(&v),
            Code([0xc6ab_c310_0beb_32b4, 0x6721_f7c4_9a3a_b60a])
        );
    }

    #[test]
    fn projections_are_orthonormal_rows_scaled_to_unit_variance() {
        // The transform is orthogonal and spreads a vector over every row:
        // a unit vector's projections average a square of about 1, and two
        // orthogonal vectors' projections are nearly uncorrelated.
        let d = Directions::new(100);
        let e = |i: usize| {
            let mut v = vec![0f32; 100];
            v[i] = 1.0;
            v
        };
        let (p0, p1) = (d.project(&e(0)), d.project(&e(1)));
        let mean_square = p0.iter().map(|x| x * x).sum::<f32>() / CODE_BITS as f32;
        assert!((mean_square - 1.0).abs() < 0.3, "{mean_square}");
        let cross: f32 = p0.iter().zip(&p1).map(|(a, b)| a * b).sum();
        assert!(cross.abs() < CODE_BITS as f32 * 0.3, "{cross}");
    }

    #[test]
    fn codes_round_trip_through_bytes() {
        let c = Code([0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210]);
        assert_eq!(Code::from_bytes(&c.to_bytes()), Some(c));
        assert_eq!(Code::from_bytes(&[0u8; 15]), None);
    }

    #[test]
    fn a_vector_is_estimated_near_itself_and_far_from_its_opposite() {
        let d = Directions::for_dims(64);
        for v in vectors(20, 64, 7) {
            let q = d.query(&v);
            let opposite: Vec<f32> = v.iter().map(|x| -x).collect();
            assert!(
                q.estimate(&d.code(&v)) < 0.35,
                "{}",
                q.estimate(&d.code(&v))
            );
            assert!(q.estimate(&d.code(&opposite)) > 1.65);
            // Scale does not matter to cosine, nor to codes.
            let scaled: Vec<f32> = v.iter().map(|x| 3.0 * x).collect();
            assert_eq!(d.code(&scaled), d.code(&v));
        }
    }

    #[test]
    fn estimates_follow_the_cosine_distance() {
        // Over many pairs the estimate is unbiased enough and its error
        // about what 128 bits allow (standard deviation near 0.1).
        let d = Directions::for_dims(96);
        let vs = vectors(200, 96, 11);
        let (mut sum, mut sum_sq, mut n) = (0.0f64, 0.0f64, 0.0f64);
        for pair in vs.chunks_exact(2) {
            let exact = cosine_distance(&pair[0], &pair[1]);
            let estimate = d.query(&pair[0]).estimate(&d.code(&pair[1]));
            let e = f64::from(estimate - exact);
            sum += e;
            sum_sq += e * e;
            n += 1.0;
        }
        let (mean, sd) = (sum / n, (sum_sq / n - (sum / n).powi(2)).sqrt());
        assert!(mean.abs() < 0.04, "bias {mean}");
        assert!(sd < 0.15, "spread {sd}");
    }

    #[test]
    fn the_estimate_equals_the_signed_sum_it_stands_for() {
        let d = Directions::for_dims(32);
        let vs = vectors(2, 32, 3);
        let code = d.code(&vs[1]);
        let n = norm_squared(&vs[0]).sqrt();
        let signed: f32 = d
            .project(&vs[0])
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let p = p / n;
                if code.0[i / 64] >> (i % 64) & 1 == 1 {
                    p
                } else {
                    -p
                }
            })
            .sum();
        let direct = 1.0 - (std::f32::consts::PI / 2.0).sqrt() / CODE_BITS as f32 * signed;
        assert!((d.query(&vs[0]).estimate(&code) - direct).abs() < 1e-4);
    }
}
