//! Learning from this installation's feedback labels: a logistic regression on top of
//! the expert rules.
//!
//! Every assessment records its feature vector ([`feature_vector`], names in
//! [`FEATURE_NAMES`]) and its expert points `T`. [`fit`] takes the labelled ones and
//! fits `P(fraud) = σ(T/12 + w·x + b)`: the expert's log-odds (the score's own
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
//! Why by hand: the fit is Newton's method on at most a few hundred thousand rows of
//! 24 features with a 25 × 25 Cholesky solve (about 100 lines); the Rust ML crates
//! that do logistic regression (linfa) bring a BLAS stack into a Postgres backend.

use crate::history::{History, Window};
use crate::input::Request;
use crate::signals::Features;

/// The features, in the order of [`feature_vector`]'s values. Stored with each
/// model, so a model is only used with vectors of the same layout.
pub const FEATURE_NAMES: [&str; 24] = [
    "accountSameDay",
    "accountUnderWeek",
    "accountUnderMonth",
    "accountAgeMissing",
    "lnAmount",
    "lnAmountOverHistory",
    "firstPurchase",
    "newDevice",
    "newIp",
    "lnDeviceOthers90d",
    "lnDeviceOthersDay",
    "lnIpOthers30d",
    "lnCardOthers90d",
    "lnEmailDay",
    "lnDeviceDay",
    "lnIpDay",
    "lnCardDay",
    "disposableEmail",
    "ipCountryMismatch",
    "addressesDiffer",
    "night",
    "twoFactor",
    "lnCustomerDays",
    "lnDeviceDays",
];

/// Number of features.
pub const FEATURES: usize = FEATURE_NAMES.len();

fn ln1p_count(n: u32) -> f64 {
    f64::from(n).ln_1p()
}

fn days_ln(us: Option<i64>) -> f64 {
    us.map_or(0.0, |us| (us.max(0) as f64 / Window::DAY_US as f64).ln_1p())
}

/// The feature vector of one assessment (see [`FEATURE_NAMES`]), from the
/// request, its history and what the signals computed.
pub(crate) fn feature_vector(req: &Request, hist: &History, f: &Features) -> [f64; FEATURES] {
    let age = req.account_age_days;
    let flag = |b: bool| f64::from(u8::from(b));
    [
        flag(age == Some(0)),
        flag(age.is_some_and(|a| (1..7).contains(&a))),
        flag(age.is_some_and(|a| (7..30).contains(&a))),
        flag(age.is_none()),
        req.amount.map_or(0.0, |a| a.max(0.0).ln_1p()),
        f.amount_ratio_to_mean
            .filter(|r| r.is_finite())
            .map_or(0.0, |r| r.max(1.0).ln()),
        flag(req.email.is_some() && hist.email_first_seen_us.is_none()),
        flag(req.device_fingerprint.is_some() && hist.device_first_seen_us.is_none()),
        flag(req.ip_address.is_some() && hist.ip_first_seen_us.is_none()),
        ln1p_count(hist.device_others.quarter),
        ln1p_count(hist.device_others.day),
        ln1p_count(hist.ip_others.month),
        ln1p_count(hist.card_others.quarter),
        ln1p_count(hist.email.last_day),
        ln1p_count(hist.device.last_day),
        ln1p_count(hist.ip.last_day),
        ln1p_count(hist.card.last_day),
        flag(f.disposable_email == Some(true)),
        flag(f.ip_country_mismatch),
        flag(f.addresses_differ == Some(true)),
        flag(f.night),
        flag(req.two_factor_auth == Some(true)),
        days_ln(hist.email_first_seen_us),
        days_ln(hist.device_first_seen_us),
    ]
}

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
/// L2 penalty on the weights (not the intercept), in units of one row's
/// log-likelihood.
const L2: f64 = 1.0;

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
}

impl Model {
    /// `frauds / (frauds + 25)`.
    pub fn weight(&self) -> f64 {
        let f = f64::from(self.frauds);
        f / (f + HALF_WEIGHT_FRAUDS)
    }

    /// The model's points for feature vector `x`, clamped; 0 for a non-finite result.
    pub fn points(&self, x: &[f64; FEATURES]) -> f64 {
        let z: f64 = self.weights.iter().zip(x).map(|(w, v)| w * v).sum::<f64>() + self.intercept;
        let p = self.weight() * POINTS_PER_LOGIT * (z - self.expert_intercept);
        if p.is_finite() {
            p.clamp(MIN_POINTS, MAX_POINTS)
        } else {
            0.0
        }
    }
}

/// One labelled assessment: its features, its expert points `T`, and whether it was fraud.
#[derive(Debug, Clone)]
pub struct Labelled {
    pub x: [f64; FEATURES],
    pub expert_points: f64,
    pub fraud: bool,
}

/// Why no model was fitted.
#[derive(Debug, Clone, PartialEq)]
pub enum FitError {
    /// Fewer than [`MIN_FRAUDS`] frauds or [`MIN_LEGIT`] legitimate labels.
    TooFewLabels { frauds: usize, legit: usize },
    /// Newton's method did not converge (non-finite values).
    Diverged,
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FitError::TooFewLabels { frauds, legit } => write!(
                f,
                "{frauds} fraud and {legit} legitimate labels; a model needs at least {MIN_FRAUDS} and {MIN_LEGIT}"
            ),
            FitError::Diverged => f.write_str("the fit did not converge"),
        }
    }
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Fits the model on `rows` (see the module docs).
pub fn fit(rows: &[Labelled]) -> Result<Model, FitError> {
    let frauds = rows.iter().filter(|r| r.fraud).count();
    let legit = rows.len() - frauds;
    if frauds < MIN_FRAUDS || legit < MIN_LEGIT {
        return Err(FitError::TooFewLabels { frauds, legit });
    }
    let offset = |r: &Labelled| r.expert_points / POINTS_PER_LOGIT;
    let expert_intercept = newton(rows, offset, 0)?[0];
    let beta = newton(rows, offset, FEATURES)?;
    let mut weights = [0.0; FEATURES];
    weights.copy_from_slice(&beta[1..]);
    Ok(Model {
        weights,
        intercept: beta[0],
        expert_intercept,
        frauds: u32::try_from(frauds).unwrap_or(u32::MAX),
        legit: u32::try_from(legit).unwrap_or(u32::MAX),
    })
}

/// Penalised logistic regression with `offset` on the intercept and the first
/// `k` features, by Newton's method with step halving (the penalised
/// log-likelihood never falls, so nearly separable labels cannot make it
/// diverge); returns `[b, w_1..w_k]`.
fn newton(
    rows: &[Labelled],
    offset: impl Fn(&Labelled) -> f64,
    k: usize,
) -> Result<Vec<f64>, FitError> {
    let n = k + 1;
    let design = |r: &Labelled, row: &mut [f64]| {
        row[0] = 1.0;
        row[1..].copy_from_slice(&r.x[..k]);
    };
    let objective = |beta: &[f64]| {
        let mut row = vec![0.0; n];
        let mut ll = 0.0;
        for r in rows {
            design(r, &mut row);
            let z = offset(r) + row.iter().zip(beta).map(|(a, b)| a * b).sum::<f64>();
            // log σ(z) and log(1 - σ(z)) without overflow.
            let log1pexp = |v: f64| if v > 30.0 { v } else { v.exp().ln_1p() };
            ll -= if r.fraud { log1pexp(-z) } else { log1pexp(z) };
        }
        ll - 0.5 * L2 * beta[1..].iter().map(|b| b * b).sum::<f64>()
    };
    let mut beta = vec![0.0; n];
    let mut current = objective(&beta);
    let mut row = vec![0.0; n];
    for _ in 0..100 {
        let mut grad = vec![0.0; n];
        let mut hess = vec![0.0; n * n];
        for r in rows {
            design(r, &mut row);
            let z = offset(r) + row.iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>();
            let p = sigmoid(z);
            let y = f64::from(u8::from(r.fraud));
            let h = (p * (1.0 - p)).max(1e-12);
            for i in 0..n {
                grad[i] += (y - p) * row[i];
                for j in 0..=i {
                    hess[i * n + j] += h * row[i] * row[j];
                }
            }
        }
        for i in 1..n {
            grad[i] -= L2 * beta[i];
            hess[i * n + i] += L2;
        }
        // A tiny ridge on the intercept too keeps the Hessian definite.
        hess[0] += 1e-9;
        let step = cholesky_solve(&mut hess, &grad, n).ok_or(FitError::Diverged)?;
        let mut scale = 1.0;
        let mut improved = false;
        for _ in 0..40 {
            let trial: Vec<f64> = beta.iter().zip(&step).map(|(b, s)| b + scale * s).collect();
            let value = objective(&trial);
            if value.is_finite() && value >= current {
                let moved = step.iter().map(|s| (scale * s).abs()).fold(0.0, f64::max);
                beta = trial;
                improved = value - current > 1e-10 && moved > 1e-8;
                current = value;
                break;
            }
            scale /= 2.0;
        }
        if !beta.iter().all(|b| b.is_finite()) {
            return Err(FitError::Diverged);
        }
        if !improved {
            break;
        }
    }
    Ok(beta)
}

/// Solves `A x = b` for symmetric positive definite `A` (lower triangle filled,
/// row-major `n × n`, overwritten by its Cholesky factor).
fn cholesky_solve(a: &mut [f64], b: &[f64], n: usize) -> Option<Vec<f64>> {
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= a[j * n + k] * a[j * n + k];
        }
        // Not positive definite, or NaN from a degenerate input.
        if d.is_nan() || d <= 0.0 {
            return None;
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / d;
        }
    }
    let mut y = vec![0.0; n];
    for i in 0..n {
        let s: f64 = (0..i).map(|k| a[i * n + k] * y[k]).sum();
        y[i] = (b[i] - s) / a[i * n + i];
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| a[k * n + i] * x[k]).sum();
        x[i] = (y[i] - s) / a[i * n + i];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows where feature 17 (disposable e-mail) makes fraud 10x likelier than the
    /// rules (T = 0 for all) say, and the rest is noise.
    fn rows(n: usize) -> Vec<Labelled> {
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let mut x = [0.0; FEATURES];
                x[17] = f64::from(u8::from(next() < 0.2));
                x[4] = next() * 5.0;
                let p = if x[17] > 0.0 { 0.3 } else { 0.03 };
                Labelled {
                    x,
                    expert_points: 0.0,
                    fraud: next() < p,
                }
            })
            .collect()
    }

    #[test]
    fn learns_what_the_rules_miss() {
        let m = fit(&rows(20_000)).expect("enough labels");
        // log(0.3/0.7) - log(0.03/0.97) = 2.63; the noise feature stays near 0.
        assert!((m.weights[17] - 2.63).abs() < 0.3, "{m:?}");
        assert!(m.weights[4].abs() < 0.1, "{m:?}");
        let mut risky = [0.0; FEATURES];
        risky[17] = 1.0;
        // Against the average (8.4% fraud): 30% is +1.54 logits, 3% is -1.09.
        assert!(
            (m.points(&risky) - 18.3).abs() < 2.0,
            "{}",
            m.points(&risky)
        );
        assert!((m.points(&[0.0; FEATURES]) + 12.9).abs() < 2.0);
    }

    #[test]
    fn refuses_too_few_labels() {
        let few = rows(100);
        assert!(matches!(fit(&few), Err(FitError::TooFewLabels { .. })));
    }

    #[test]
    fn solves_a_small_system() {
        // [[4, 2], [2, 3]] x = [2, 5] → x = [-0.5, 2]
        let mut a = vec![4.0, 0.0, 2.0, 3.0];
        let x = cholesky_solve(&mut a, &[2.0, 5.0], 2).expect("positive definite");
        assert!((x[0] + 0.5).abs() < 1e-12 && (x[1] - 2.0).abs() < 1e-12);
    }
}
