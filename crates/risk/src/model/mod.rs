//! Learning from this installation's feedback labels: a logistic regression on top of
//! the expert rules.
//!
//! Every assessment records its feature vector
//! ([`crate::features::feature_vector`], names in [`FEATURE_NAMES`]) and its
//! expert points `T`. [`fit`] takes the labelled ones and fits
//! `P(fraud) = σ(T/12 + w·x + b)`: the expert's log-odds (the score's own
//! slope, [`crate::score`]) is a fixed offset, so the weights learn only what the
//! rules miss or overstate here. The model's contribution to a new assessment is
//! `12 · (w·x + b − b₀)` points, `b₀` being the intercept of the expert alone
//! (`σ(T/12 + b₀)` fitted on the same labels): zero where the labels agree with the
//! rules. It is scaled by `frauds / (frauds + 25)` (little weight on few labels),
//! clamped to [−30, 40], and shown in `reasons` as `LEARNED_MODEL`.
//!
//! `isVPN` and `proxyOrVPN` are not features: SPEC says a VPN never lowers the score,
//! and a fitted weight could be negative. Strictness is not a feature either, so the
//! model's points, like a strong signal's, do not depend on it and strictness stays
//! monotone.
//!
//! Out of what its labels covered, the model stays quiet: a feature outside the
//! range it took in the fitted rows (a field always present there now missing,
//! a value beyond any seen, a feature that never varied) is held to that range,
//! and each such feature halves the model's points ([`Model::points`]).
//!
//! A refit does not simply replace the model in force: [`refit`] fits on the
//! older labels, judges on the newest, and adopts only a model that beats the
//! scoring in force there. It also sets how much a link to confirmed fraud
//! through a device or an IP weighs here ([`link_weights`]).
//!
//! Why by hand: the fit is Newton's method on at most a few hundred thousand rows of
//! 24 features with a 25 × 25 Cholesky solve (about 100 lines); the Rust ML crates
//! that do logistic regression (linfa) bring a BLAS stack into a Postgres backend.

mod bands;
mod fit;
mod judge;
mod refit;

pub use bands::Band;
pub use fit::{fit, FitError};
pub use judge::{auc, caught_share, threshold_at};
pub use refit::{refit, Figures, Refit, Validation, DEFAULT_REVIEW_RATE};

// The feature layout and the link weights are the signals' too: they live in
// `features`, which both read.
pub use crate::features::{LinkWeights, FEATURES, FEATURE_NAMES};

/// Points per unit of log-odds: the score's own slope (`score::SCORE_SPREAD`).
pub const POINTS_PER_LOGIT: f64 = 12.0;
/// Frauds at which the model gets half its weight.
pub const HALF_WEIGHT_FRAUDS: f64 = 25.0;
/// The model's points are clamped to this range.
pub const MIN_POINTS: f64 = -30.0;
pub const MAX_POINTS: f64 = 40.0;
/// Fewer labels than these: no model.
pub const MIN_FRAUDS: usize = 20;
pub const MIN_LEGIT: usize = 100;

/// The link weights ([`LinkWeights`]) that labelled rows' links
/// ([`Labelled::links`]) measure: per kind, the share of the linked rows that
/// were fraud, with two pseudo-labels of prior, over the prior's one half.
pub fn link_weights(rows: &[Labelled]) -> LinkWeights {
    let weight = |kind: usize| {
        let linked = rows.iter().filter(|r| r.links[kind]);
        let (n, k) = linked.fold((0.0, 0.0), |(n, k), r| {
            (n + 1.0, k + f64::from(u8::from(r.fraud)))
        });
        (((k + 1.0) / (n + 2.0)) / 0.5).clamp(0.0, LinkWeights::MAX)
    };
    LinkWeights {
        device: weight(0),
        ip: weight(1),
    }
}

/// A fitted model.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub weights: [f64; FEATURES],
    pub intercept: f64,
    /// Intercept of the expert alone on the same labels (`b₀`).
    pub expert_intercept: f64,
    /// Labelled frauds and legitimate transactions it was fitted on.
    pub frauds: u32,
    pub legit: u32,
    /// The range (least, greatest) each feature took in those rows.
    pub ranges: [(f64, f64); FEATURES],
    /// How much links to confirmed fraud weigh here.
    pub links: LinkWeights,
    /// The Review cut-off a review budget set (a score at strictness 50,
    /// in place of 60); None: the default cut-offs.
    pub review_cutoff: Option<f64>,
}

impl Model {
    /// `frauds / (frauds + 25)`.
    pub fn weight(&self) -> f64 {
        let f = f64::from(self.frauds);
        f / (f + HALF_WEIGHT_FRAUDS)
    }

    /// A model that adds nothing: the rules alone, with `links` (what a refit
    /// stores when its fit lost and no model was in force).
    pub fn neutral(links: LinkWeights) -> Model {
        Model {
            weights: [0.0; FEATURES],
            intercept: 0.0,
            expert_intercept: 0.0,
            frauds: 0,
            legit: 0,
            ranges: [(f64::NEG_INFINITY, f64::INFINITY); FEATURES],
            links,
            review_cutoff: None,
        }
    }

    /// How many of `x`'s features lie outside the ranges the model was fitted on.
    pub fn outside(&self, x: &[f64; FEATURES]) -> usize {
        self.assess(x).1
    }

    /// The model's points for feature vector `x` ([`Model::assess`]).
    pub fn points(&self, x: &[f64; FEATURES]) -> f64 {
        self.assess(x).0
    }

    /// The model's points for feature vector `x`, and how many of its
    /// features lie outside the ranges it was fitted on: each feature held to
    /// its range (`max` then `min`, never a panic on a stored range), the
    /// points halved for each one outside, clamped; 0 for a non-finite result.
    pub fn assess(&self, x: &[f64; FEATURES]) -> (f64, usize) {
        let mut z = self.intercept;
        let mut outside = 0;
        for ((w, v), (lo, hi)) in self.weights.iter().zip(x).zip(&self.ranges) {
            outside += usize::from(*v < lo - RANGE_SLACK || *v > hi + RANGE_SLACK);
            z += w * v.max(*lo).min(*hi);
        }
        let shrink = 0.5f64.powi(i32::try_from(outside).unwrap_or(i32::MAX));
        let p = shrink * self.weight() * POINTS_PER_LOGIT * (z - self.expert_intercept);
        let points = if p.is_finite() {
            p.clamp(MIN_POINTS, MAX_POINTS)
        } else {
            0.0
        };
        (points, outside)
    }
}

/// How far past a fitted range a value may be and still count as inside it
/// (rounding of the stored `real` features).
const RANGE_SLACK: f64 = 1e-4;

/// The range each feature takes in `rows`.
pub(crate) fn ranges(rows: &[Labelled]) -> [(f64, f64); FEATURES] {
    let mut out = [(f64::INFINITY, f64::NEG_INFINITY); FEATURES];
    for r in rows {
        for (range, v) in out.iter_mut().zip(&r.x) {
            range.0 = range.0.min(*v);
            range.1 = range.1.max(*v);
        }
    }
    out
}

/// One labelled assessment: its features, its expert points `T`, and whether it was fraud.
#[derive(Debug, Clone)]
pub struct Labelled {
    pub x: [f64; FEATURES],
    pub expert_points: f64,
    pub fraud: bool,
    /// When it occurred (µs since the epoch): a refit judges on the newest.
    pub at_us: i64,
    /// Whether its device and its IP were linked to confirmed fraud when it
    /// was assessed ([`LinkWeights`]).
    pub links: [bool; 2],
}

/// Deterministic uniform numbers in [0, 1) for the tests' labelled rows (a
/// linear congruential generator: no dependency for a test's noise).
#[cfg(test)]
fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    }
}
