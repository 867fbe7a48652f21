//! Distance kernels and the [`Metric`] enum.
//!
//! The kernels are plain scalar Rust written so that LLVM vectorises them:
//! each loop walks `chunks_exact(8)` with eight independent accumulators (no
//! loop-carried dependency between lanes), then folds the lanes and adds the
//! tail, so the same code is correct on every platform Postgres runs on. One
//! exception: the fused `q . v` and `v . v` of a prepared cosine [`Query`],
//! which LLVM does not vectorise well, has AVX2 intrinsics doing the same
//! arithmetic in the same order.
//!
//! The kernels assume equal lengths (they only read the common prefix); the
//! graph code checks dimensions before calling them, so a short vector read
//! from a corrupt page is an error, never a wrong answer.

use std::borrow::Cow;

/// How distances are measured. Smaller is closer for every metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Euclidean distance `sqrt(sum((a-b)^2))` (the SQL `<->` operator).
    /// Plain, not squared, so distances reported to SQL need no conversion;
    /// ordering is the same either way.
    L2,
    /// Cosine distance `1 - cos(a, b)`, in `[0, 2]` (the SQL `<=>` operator).
    /// Zero vectors have no direction and are rejected by validation.
    Cosine,
    /// Negative inner product `-(a . b)` (the SQL `<#>` operator). Can be
    /// negative; not a metric, but HNSW works well with it in practice.
    InnerProduct,
}

impl Metric {
    /// Distance between two vectors of the same length.
    #[inline]
    pub fn distance(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Metric::L2 => l2(a, b),
            Metric::Cosine => cosine_distance(a, b),
            Metric::InnerProduct => -dot(a, b),
        }
    }

    /// Short name used in messages and by the SQL layer.
    pub fn name(self) -> &'static str {
        match self {
            Metric::L2 => "l2",
            Metric::Cosine => "cosine",
            Metric::InnerProduct => "inner_product",
        }
    }
}

const LANES: usize = 8;

/// Folds eight lanes pairwise (keeps rounding error low and is cheap).
#[inline]
fn fold(acc: [f32; LANES]) -> f32 {
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// Sums `term(a[i], b[i])` over the common prefix in eight independent
/// lanes. Inlined into each kernel so LLVM vectorises the lane loop.
#[inline(always)]
fn sum_lanes(a: &[f32], b: &[f32], term: impl Fn(f32, f32) -> f32) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += term(x[i], y[i]);
        }
    }
    let mut sum = fold(acc);
    for (x, y) in ra.iter().zip(rb) {
        sum += term(*x, *y);
    }
    sum
}

/// `(a . b, b . b)` in one pass over `b`, each sum with exactly the lanes
/// and order of [`sum_lanes`], so both equal what two passes would give.
/// The portable form; LLVM vectorises two accumulator sets poorly (scalar
/// shuffles, 32% of a scan in a profile), so x86-64 has its own below.
#[inline(always)]
fn dot_and_norm_lanes(a: &[f32], b: &[f32]) -> (f32, f32) {
    dot_and_norm_lanes_of(a, b, |y| y)
}

/// [`dot_and_norm_lanes`] over `b` stored as `T`, each element widened by
/// `widen` where it is used: halves are scored without a widened copy, so
/// without an allocation per distance where F16C is missing.
#[inline(always)]
fn dot_and_norm_lanes_of<T: Copy>(a: &[f32], b: &[T], widen: impl Fn(T) -> f32) -> (f32, f32) {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (mut ab, mut bb) = ([0.0f32; LANES], [0.0f32; LANES]);
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            let y = widen(y[i]);
            ab[i] += x[i] * y;
            bb[i] += y * y;
        }
    }
    let mut tail = [0.0f32; LANES];
    for (t, &y) in tail.iter_mut().zip(rb) {
        *t = widen(y);
    }
    fold_with_tail(ab, bb, ra, &tail[..rb.len()])
}

/// Folds the two lane sets and adds the tail, as [`sum_lanes`] does.
#[inline(always)]
fn fold_with_tail(ab: [f32; LANES], bb: [f32; LANES], ra: &[f32], rb: &[f32]) -> (f32, f32) {
    let (mut ab, mut bb) = (fold(ab), fold(bb));
    for (x, y) in ra.iter().zip(rb) {
        ab += x * y;
        bb += y * y;
    }
    (ab, bb)
}

#[inline(always)]
fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    sum_lanes(a, b, |x, y| x * y)
}

#[inline(always)]
fn l2_squared_lanes(a: &[f32], b: &[f32]) -> f32 {
    sum_lanes(a, b, |x, y| (x - y) * (x - y))
}

/// The same kernels compiled for AVX2, chosen at run time when the CPU has
/// it: one binary runs on every x86-64 and uses 256-bit registers where they
/// exist (twice the lanes of the SSE2 baseline). The arithmetic and its order
/// are the same, so results are bit-for-bit equal.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    #[target_feature(enable = "avx2")]
    pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
        super::sum_lanes(a, b, |x, y| x * y)
    }

    /// One 256-bit register per lane set: lane `i` sums elements `i`,
    /// `i + 8`, ... with a multiply then an add (no fused multiply-add), as
    /// the portable lanes do, so the results are the same bit for bit.
    #[target_feature(enable = "avx2")]
    pub(super) fn dot_and_norm(a: &[f32], b: &[f32]) -> (f32, f32) {
        use std::arch::x86_64::{
            _mm256_add_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps, _mm256_storeu_ps,
        };
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let (ca, cb) = (a.chunks_exact(super::LANES), b.chunks_exact(super::LANES));
        let (ra, rb) = (ca.remainder(), cb.remainder());
        let (mut ab, mut bb) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        for (x, y) in ca.zip(cb) {
            // SAFETY: each chunk is exactly 8 floats; unaligned loads.
            let (x, y) = unsafe { (_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr())) };
            ab = _mm256_add_ps(ab, _mm256_mul_ps(x, y));
            bb = _mm256_add_ps(bb, _mm256_mul_ps(y, y));
        }
        let (mut ab_lanes, mut bb_lanes) = ([0.0f32; super::LANES], [0.0f32; super::LANES]);
        // SAFETY: each array holds exactly 8 floats; unaligned stores.
        unsafe {
            _mm256_storeu_ps(ab_lanes.as_mut_ptr(), ab);
            _mm256_storeu_ps(bb_lanes.as_mut_ptr(), bb);
        }
        super::fold_with_tail(ab_lanes, bb_lanes, ra, rb)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
        super::sum_lanes(a, b, |x, y| (x - y) * (x - y))
    }

    /// Whether the CPU has AVX2 (std caches the answer).
    #[inline]
    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("avx2")
    }
}

/// Inner product `a . b`.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { avx2::dot(a, b) };
    }
    dot_lanes(a, b)
}

/// `(a . b, b . b)`, read in one pass.
#[inline]
fn dot_and_norm(a: &[f32], b: &[f32]) -> (f32, f32) {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { avx2::dot_and_norm(a, b) };
    }
    dot_and_norm_lanes(a, b)
}

/// Squared Euclidean distance.
#[inline]
pub fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { avx2::l2_squared(a, b) };
    }
    l2_squared_lanes(a, b)
}

/// Euclidean distance.
#[inline]
pub fn l2(a: &[f32], b: &[f32]) -> f32 {
    l2_squared(a, b).sqrt()
}

/// Cosine distance `1 - cos(a, b)`, clamped to `[0, 2]` against rounding.
/// Returns 1 (orthogonal) if either vector is zero, so it never yields NaN.
#[inline]
pub fn cosine_distance(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (ab, bb) = dot_and_norm(a, b);
    cosine_from(ab, dot(a, a), bb)
}

/// Cosine distance from `a . b`, `a . a` and `b . b`.
#[inline]
fn cosine_from(ab: f32, aa: f32, bb: f32) -> f32 {
    let denom = (aa * bb).sqrt();
    if denom > 0.0 && denom.is_finite() {
        (1.0 - ab / denom).clamp(0.0, 2.0)
    } else {
        1.0
    }
}

/// A query vector ready for many distances: for cosine its own `q . q` is
/// computed once, so each distance reads the stored vector once (`q . v`
/// and `v . v` together) where [`cosine_distance`] makes two passes more.
/// Distances equal [`Metric::distance`]'s bit for bit. (A profile of the
/// query loop had the three-pass cosine at 27% of a scan.)
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    metric: Metric,
    vector: &'a [f32],
    self_dot: f32,
}

impl<'a> Query<'a> {
    pub fn new(metric: Metric, vector: &'a [f32]) -> Self {
        let self_dot = match metric {
            Metric::Cosine => dot(vector, vector),
            Metric::L2 | Metric::InnerProduct => 0.0,
        };
        Query {
            metric,
            vector,
            self_dot,
        }
    }

    /// A query whose `self_dot` (see [`Query::self_dot`]) is already known.
    pub fn with_self_dot(metric: Metric, vector: &'a [f32], self_dot: f32) -> Self {
        Query {
            metric,
            vector,
            self_dot,
        }
    }

    /// What was computed once: `q . q` for cosine, 0 otherwise.
    pub fn self_dot(&self) -> f32 {
        self.self_dot
    }

    pub fn vector(&self) -> &'a [f32] {
        self.vector
    }

    /// Distance from the query to `v`, a vector of the same length.
    #[inline]
    pub fn distance(&self, v: &[f32]) -> f32 {
        match self.metric {
            Metric::Cosine => {
                let n = self.vector.len().min(v.len());
                let (ab, bb) = dot_and_norm(&self.vector[..n], &v[..n]);
                cosine_from(ab, self.self_dot, bb)
            }
            metric => metric.distance(self.vector, v),
        }
    }

    /// Distance from the query to a vector as a store keeps it. Halves are
    /// widened exactly to f32 on the way, so the result equals
    /// [`Query::distance`] of the widened vector bit for bit; under cosine
    /// that happens inside the kernel, without a copy.
    #[inline]
    pub fn distance_to(&self, v: VectorRef<'_>) -> f32 {
        match v {
            VectorRef::F32(v) => self.distance(v),
            VectorRef::F16(h) if self.metric == Metric::Cosine => {
                let n = self.vector.len().min(h.len());
                let (ab, bb) = dot_and_norm_half(&self.vector[..n], &h[..n]);
                cosine_from(ab, self.self_dot, bb)
            }
            VectorRef::F16(_) => self.distance(&v.to_f32()),
        }
    }
}

/// A stored vector as a store lends it for scoring.
#[derive(Debug, Clone, Copy)]
pub enum VectorRef<'a> {
    F32(&'a [f32]),
    /// IEEE half-precision bit patterns (see [`unit_halves`]).
    F16(&'a [u16]),
}

impl<'a> VectorRef<'a> {
    /// The vector in f32: lent as it is, or widened (exactly) into a copy.
    pub fn to_f32(self) -> Cow<'a, [f32]> {
        match self {
            VectorRef::F32(v) => Cow::Borrowed(v),
            VectorRef::F16(h) => {
                let mut wide = Vec::with_capacity(h.len());
                widen_halves(h, &mut wide);
                Cow::Owned(wide)
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            VectorRef::F32(v) => v.len(),
            VectorRef::F16(h) => h.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// Half-precision unit vectors.
//
// Under cosine only a vector's direction matters, so an index may keep each
// vector scaled to unit length and rounded to IEEE half precision: half the
// bytes of f32, so a search touches half the cache lines per visited
// element, which is where its time goes. Components of a unit vector are at
// most 1 in magnitude, so nothing overflows, and rounding moves each by at
// most 2^-11 of itself (2^-25 below half's normal range): the direction
// turns by at most about 2^-11, and a cosine distance moves by no more
// than [`unit_half_cosine_error`]. Distances from halves are therefore
// lower bounds once that is subtracted, which is what PostgreSQL needs to
// re-rank an index's candidates by their exact distances.

/// Writes `v` scaled to unit length and rounded to half precision (bit
/// patterns, round to nearest even) into `out`, cleared first. A zero or
/// non-finite norm leaves the scale alone (such vectors are not indexed
/// under cosine; validation rejects them first).
pub fn unit_halves(v: &[f32], out: &mut Vec<u16>) {
    let norm = norm_squared(v).sqrt();
    let scale = if norm > 0.0 && norm.is_finite() {
        norm
    } else {
        1.0
    };
    out.clear();
    out.extend(v.iter().map(|&x| half::f16::from_f32(x / scale).to_bits()));
}

/// Widens half-precision bit patterns to f32 (exactly: every half is an
/// f32) into `out`, cleared first.
pub fn widen_halves(h: &[u16], out: &mut Vec<f32>) {
    use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
    out.clear();
    out.resize(h.len(), 0.0);
    h.reinterpret_cast::<half::f16>().convert_to_f32_slice(out);
}

/// The most a cosine distance computed (in f32, by this module) from a
/// vector's [`unit_halves`] can differ from the one computed from the
/// vector itself, for `dims` dimensions, with a quarter to spare.
///
/// Rounding to half moves each component of the unit vector by at most
/// 2^-11 of itself or 2^-25 (subnormals), and the scaling by 2^-23 of
/// itself, so the stored direction is within an angle of
/// `2^-11 + 2^-23 + 2^-25 * sqrt(dims)` (times 1.0001 for arcsine against
/// its argument) of the true one, and a cosine moves by at most that angle.
/// Each f32 evaluation adds at most `(2 * (dims / 8 + 3) + 3)` units in the
/// last place of 1 (eight-lane sums of `dims / 8` terms, then the division
/// and square root), counted twice. For 384 dimensions the bound is 6.4e-4.
pub fn unit_half_cosine_error(dims: usize) -> f32 {
    let d = dims as f64;
    let turn = 1.0001 * ((-11f64).exp2() + (-23f64).exp2() + (-25f64).exp2() * d.sqrt());
    let arithmetic = 2.0 * (2.0 * (d / 8.0 + 3.0) + 3.0) * (-24f64).exp2();
    (1.25 * (turn + arithmetic)) as f32
}

/// `(a . h, h . h)` for halves `h`, widened in the kernel.
#[inline]
fn dot_and_norm_half(a: &[f32], h: &[u16]) -> (f32, f32) {
    #[cfg(target_arch = "x86_64")]
    if f16c::available() {
        // SAFETY: the CPU has AVX2 and F16C, checked just above.
        return unsafe { f16c::dot_and_norm(a, h) };
    }
    dot_and_norm_lanes_of(a, h, |b| half::f16::from_bits(b).to_f32())
}

/// The fused cosine kernel over halves: eight halves widened per
/// instruction (`vcvtph2ps`), four independent pairs of sums so that the
/// additions of one do not wait on the last (with one pair, a profile of
/// the query loop had the kernel waiting on its own sums; the f32 kernels
/// keep one pair for bit-for-bit equality with the portable code, which
/// halves have no need of). The order of the sums differs from the f32
/// kernels', so the result may differ from [`Query::distance`] of the
/// widened vector in the last bits, which
/// [`unit_half_cosine_error`] allows for.
#[cfg(target_arch = "x86_64")]
mod f16c {
    use std::arch::x86_64::{
        __m128i, __m256, _mm256_add_ps, _mm256_cvtph_ps, _mm256_loadu_ps, _mm256_mul_ps,
        _mm256_setzero_ps, _mm256_storeu_ps, _mm_loadu_si128,
    };

    const LANES: usize = super::LANES;
    const PAIRS: usize = 4;

    /// Adds `x . y` and `y . y` of eight floats and eight halves into `ab`, `bb`.
    ///
    /// # Safety
    /// `x` holds at least 8 floats, `y` at least 8 halves; AVX2 and F16C.
    #[inline]
    #[target_feature(enable = "avx2,f16c")]
    unsafe fn step(x: &[f32], y: &[u16], ab: &mut __m256, bb: &mut __m256) {
        // SAFETY: 8 floats and 8 halves (16 bytes) are in bounds; unaligned loads.
        let (x, y) = unsafe {
            (
                _mm256_loadu_ps(x.as_ptr()),
                _mm256_cvtph_ps(_mm_loadu_si128(y.as_ptr() as *const __m128i)),
            )
        };
        *ab = _mm256_add_ps(*ab, _mm256_mul_ps(x, y));
        *bb = _mm256_add_ps(*bb, _mm256_mul_ps(y, y));
    }

    #[target_feature(enable = "avx2,f16c")]
    pub(super) fn dot_and_norm(a: &[f32], h: &[u16]) -> (f32, f32) {
        let n = a.len().min(h.len());
        let (a, h) = (&a[..n], &h[..n]);
        let mut ab = [_mm256_setzero_ps(); PAIRS];
        let mut bb = [_mm256_setzero_ps(); PAIRS];
        let (wide_a, wide_h) = (a.chunks_exact(LANES * PAIRS), h.chunks_exact(LANES * PAIRS));
        let (rest_a, rest_h) = (wide_a.remainder(), wide_h.remainder());
        for (x, y) in wide_a.zip(wide_h) {
            for k in 0..PAIRS {
                let at = k * LANES;
                // SAFETY: each chunk holds PAIRS * LANES of each; the CPU features are ours.
                unsafe { step(&x[at..], &y[at..], &mut ab[k], &mut bb[k]) };
            }
        }
        let (ca, ch) = (rest_a.chunks_exact(LANES), rest_h.chunks_exact(LANES));
        let (ra, rh) = (ca.remainder(), ch.remainder());
        for (k, (x, y)) in ca.zip(ch).enumerate() {
            // SAFETY: as above, one chunk of LANES each.
            unsafe { step(x, y, &mut ab[k], &mut bb[k]) };
        }
        let sum = |v: [__m256; PAIRS]| {
            let mut lanes = [0.0f32; LANES];
            let total = _mm256_add_ps(_mm256_add_ps(v[0], v[2]), _mm256_add_ps(v[1], v[3]));
            // SAFETY: the array holds exactly 8 floats; unaligned store.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), total) };
            lanes
        };
        let mut tail = [0.0f32; LANES];
        for (t, &b) in tail.iter_mut().zip(rh) {
            *t = half::f16::from_bits(b).to_f32();
        }
        super::fold_with_tail(sum(ab), sum(bb), ra, &tail[..rh.len()])
    }

    /// Whether the CPU has AVX2 and F16C (std caches the answers).
    #[inline]
    pub(super) fn available() -> bool {
        super::avx2::available() && std::is_x86_feature_detected!("f16c")
    }
}

/// Asks the CPU to bring the cache line at `addr` in. A hint: it reads
/// nothing and cannot fault, whatever `addr`.
#[inline(always)]
pub fn prefetch(addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it reads nothing and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch(addr as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// [`prefetch`] of every cache line of `len` bytes from `start`. Scoring a
/// neighbour list first prefetches every vector in it, so their misses
/// overlap instead of coming one after another.
#[inline]
pub fn prefetch_bytes(start: *const u8, len: usize) {
    for k in (0..len).step_by(64) {
        prefetch(start.wrapping_add(k));
    }
}

/// Scales `v` to unit length (a zero or non-finite vector is left as it is).
pub fn normalize(v: &mut [f32]) {
    let norm = norm_squared(v).sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Squared norm, used by validation and by the bulk build's inner-product shift.
#[inline]
pub fn norm_squared(a: &[f32]) -> f32 {
    dot(a, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test-only splitmix64 stream of floats in [-1, 1).
    fn floats(seed: u64, n: usize) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    fn naive_dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
    }

    fn naive_l2(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    fn naive_cosine(a: &[f32], b: &[f32]) -> f64 {
        1.0 - naive_dot(a, b) / (naive_dot(a, a) * naive_dot(b, b)).sqrt()
    }

    fn close(got: f32, want: f64, scale: f64) -> bool {
        (got as f64 - want).abs() <= 1e-5 * scale.max(1.0)
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn wide_kernels_equal_the_baseline_bit_for_bit() {
        if !super::avx2::available() {
            return;
        }
        for n in [1, 7, 8, 9, 31, 384, 1000] {
            let (a, b) = (floats(1, n), floats(2, n));
            // SAFETY: AVX2 is available, checked above.
            let (dot, l2) = unsafe { (super::avx2::dot(&a, &b), super::avx2::l2_squared(&a, &b)) };
            assert_eq!(
                dot.to_bits(),
                super::dot_lanes(&a, &b).to_bits(),
                "dot, n={n}"
            );
            assert_eq!(
                l2.to_bits(),
                super::l2_squared_lanes(&a, &b).to_bits(),
                "l2, n={n}"
            );
        }
    }

    #[test]
    fn a_prepared_query_gives_the_same_distances_bit_for_bit() {
        for n in [1, 7, 8, 9, 384, 1001] {
            for seed in 0..5u64 {
                let (q, v) = (floats(seed, n), floats(seed + 100, n));
                for metric in [Metric::Cosine, Metric::L2, Metric::InnerProduct] {
                    let prepared = Query::new(metric, &q).distance(&v);
                    assert_eq!(prepared.to_bits(), metric.distance(&q, &v).to_bits());
                }
                let two_pass = 1.0 - dot(&q, &v) / (dot(&q, &q) * dot(&v, &v)).sqrt();
                assert_eq!(
                    cosine_distance(&q, &v).to_bits(),
                    two_pass.clamp(0.0, 2.0).to_bits(),
                    "the fused pass sums as separate passes do"
                );
            }
        }
        let zero = vec![0.0; 16];
        assert_eq!(
            Query::new(Metric::Cosine, &zero).distance(&floats(1, 16)),
            1.0
        );
    }

    #[test]
    fn kernels_match_naive_reference() {
        let dims: Vec<usize> = (1..=33)
            .chain([63, 64, 65, 127, 1536, 1999, 2000])
            .collect();
        for (i, &d) in dims.iter().enumerate() {
            let a = floats(i as u64 * 2 + 1, d);
            let b = floats(i as u64 * 2 + 2, d);
            // Scale for the tolerance: the sum of absolute terms.
            let scale: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (*x as f64 * *y as f64).abs())
                .sum();
            assert!(close(dot(&a, &b), naive_dot(&a, &b), scale), "dot d={d}");
            assert!(
                close(
                    Metric::InnerProduct.distance(&a, &b),
                    -naive_dot(&a, &b),
                    scale
                ),
                "ip d={d}"
            );
            let l2s: f64 = naive_l2(&a, &b).powi(2);
            assert!(close(l2_squared(&a, &b), l2s, l2s), "l2sq d={d}");
            assert!(
                close(Metric::L2.distance(&a, &b), naive_l2(&a, &b), 1.0),
                "l2 d={d}"
            );
            let c = Metric::Cosine.distance(&a, &b);
            assert!((c as f64 - naive_cosine(&a, &b)).abs() < 1e-5, "cos d={d}");
        }
    }

    #[test]
    fn halves_score_as_their_widened_vectors() {
        for n in [1, 7, 8, 9, 31, 384, 1001, 2000] {
            for seed in 0..4u64 {
                let (q, v) = (floats(seed, n), floats(seed + 50, n));
                let mut h = Vec::new();
                unit_halves(&v, &mut h);
                let mut wide = Vec::new();
                widen_halves(&h, &mut wide);
                for metric in [Metric::L2, Metric::InnerProduct] {
                    let query = Query::new(metric, &q);
                    assert_eq!(
                        query.distance_to(VectorRef::F16(&h)).to_bits(),
                        query.distance(&wide).to_bits(),
                        "{metric:?}, n={n}"
                    );
                }
                // Without F16C, halves are widened in the portable lanes:
                // the same sums as the widened copy's, bit for bit.
                let portable = dot_and_norm_lanes_of(&q, &h, |b| half::f16::from_bits(b).to_f32());
                let copied = dot_and_norm_lanes(&q, &wide);
                assert_eq!(
                    (portable.0.to_bits(), portable.1.to_bits()),
                    (copied.0.to_bits(), copied.1.to_bits()),
                    "n={n}"
                );
                // Cosine with F16C sums in its own order: equal to rounding.
                let fused = Query::new(Metric::Cosine, &q).distance_to(VectorRef::F16(&h));
                let reference = naive_cosine(&q, &wide);
                assert!(
                    (fused as f64 - reference).abs() < 1e-6,
                    "n={n}: {fused} vs {reference}"
                );
            }
        }
    }

    /// The bound holds with its quarter to spare on vectors built to be
    /// hard: components at every scale (subnormal halves included), ones
    /// that sit half-way between two halves, near-copies of the query, and
    /// embeddings-like vectors; and it is tight enough to be useful.
    #[test]
    fn unit_halves_stay_within_the_cosine_error_bound() {
        let mut worst = 0.0f64;
        for n in [1, 2, 3, 8, 16, 100, 384, 768, 2000] {
            let bound = unit_half_cosine_error(n) as f64 / 1.25;
            for seed in 0..40u64 {
                let q = floats(seed * 3 + 1, n);
                let base = floats(seed * 3 + 2, n);
                let v: Vec<f32> = match seed % 5 {
                    // Components over 40 binary orders of magnitude.
                    0 => base
                        .iter()
                        .enumerate()
                        .map(|(i, x)| x * (-((i % 40) as f32)).exp2())
                        .collect(),
                    // Half-way between neighbouring halves after scaling.
                    1 => {
                        let mut v: Vec<f32> = base
                            .iter()
                            .map(|x| {
                                half::f16::from_f32(*x).to_f32()
                                    + x.signum() * 2f32.powi(-12) * x.abs()
                            })
                            .collect();
                        normalize(&mut v);
                        v
                    }
                    // A near-copy of the query.
                    2 => q.iter().zip(&base).map(|(a, b)| a + 1e-3 * b).collect(),
                    // The query itself, scaled.
                    3 => q.iter().map(|a| a * 1e6).collect(),
                    _ => base,
                };
                if norm_squared(&v) == 0.0 || norm_squared(&q) == 0.0 {
                    continue;
                }
                let mut h = Vec::new();
                unit_halves(&v, &mut h);
                let query = Query::new(Metric::Cosine, &q);
                let approx = query.distance_to(VectorRef::F16(&h)) as f64;
                let exact = Metric::Cosine.distance(&v, &q) as f64;
                let err = (approx - exact).abs();
                assert!(err <= bound, "n={n} seed={seed}: {err} > {bound}");
                worst = worst.max(err / bound);
            }
        }
        // 0.43 here: the bound is within a small factor of what happens.
        assert!(
            worst > 0.1,
            "the bound is far looser than the errors seen ({worst})"
        );
        assert!(unit_half_cosine_error(384) < 7e-4);
    }

    #[test]
    fn cosine_edge_cases() {
        let a = [1.0f32, 2.0, 3.0];
        assert!(cosine_distance(&a, &a).abs() < 1e-6);
        let neg: Vec<f32> = a.iter().map(|x| -x).collect();
        assert!((cosine_distance(&a, &neg) - 2.0).abs() < 1e-6);
        assert_eq!(cosine_distance(&a, &[0.0; 3]), 1.0);
        assert_eq!(l2(&a, &a), 0.0);
    }
}
