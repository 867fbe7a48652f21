//! Fitting the logistic regression: Newton's method with step halving on the
//! penalised log-likelihood, and the small Cholesky solve it needs.

use super::{link_weights, Labelled, Model, FEATURES, MIN_FRAUDS, MIN_LEGIT, POINTS_PER_LOGIT};

/// L2 penalty on the weights (not the intercept), in units of one row's
/// log-likelihood.
const L2: f64 = 1.0;

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
    fit_with(rows, MIN_FRAUDS, MIN_LEGIT)
}

/// [`fit`] with other minimums: a refit judges a fit on part of the labels.
pub(super) fn fit_with(
    rows: &[Labelled],
    min_frauds: usize,
    min_legit: usize,
) -> Result<Model, FitError> {
    let frauds = rows.iter().filter(|r| r.fraud).count();
    let legit = rows.len() - frauds;
    if frauds < min_frauds || legit < min_legit {
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
        ranges: super::ranges(rows),
        links: link_weights(rows),
        review_cutoff: None,
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
        let mut next = super::super::uniform(7);
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
                    at_us: 0,
                    links: [false; 2],
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
        // Feature 4 at the middle of its fitted range, so nothing is outside it.
        let mut risky = [0.0; FEATURES];
        risky[17] = 1.0;
        risky[4] = 2.5;
        // Against the average (8.4% fraud): 30% is +1.54 logits, 3% is -1.09.
        assert!(
            (m.points(&risky) - 18.3).abs() < 2.0,
            "{}",
            m.points(&risky)
        );
        let mut plain = [0.0; FEATURES];
        plain[4] = 2.5;
        assert!((m.points(&plain) + 12.9).abs() < 2.0);
        // Out of what the labels covered, the points shrink: half for one feature.
        let mut odd = risky;
        odd[3] = 1.0;
        assert_eq!(m.outside(&odd), 1);
        assert!((m.points(&odd) - m.points(&risky) / 2.0).abs() < 1e-9);
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
