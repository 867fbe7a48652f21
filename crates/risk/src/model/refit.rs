//! A refit adopts a new model only when it is better than the scoring in force.
//!
//! The labels are split by time: a model fitted on the older four fifths is
//! judged on the newest fifth, which it did not see, against the scoring in
//! force (the rules plus the current model, if any) on the same rows: AUC, and
//! the share of fraud caught when the installation's review rate of legitimate
//! traffic is flagged. It wins with an AUC higher by more than twice the
//! in-force AUC's standard error on those rows (Hanley and McNeil; with few
//! labels a chance gain is large) and at least the same catch;
//! then the model fitted on every label becomes current. Otherwise the model in
//! force stays (the rules alone when there is none). Either way the link
//! weights come from all the labels: they are a measured rate, not a fit.

use super::bands::{bands, review_cutoff, scored, Band};
use super::fit::fit_with;
use super::judge::{auc, caught_share, threshold_at};
use super::{fit, FitError, Labelled, Model};

/// Share of the labels, the newest, a fit is judged on.
pub const HOLDOUT_SHARE: f64 = 0.2;
/// Fewer frauds or legitimate labels than this among the newest: too few to judge.
pub const MIN_HOLDOUT: usize = 5;
/// How many standard errors of the in-force AUC a new model must gain (about
/// one chance in forty that noise does).
pub const ADOPTION_Z: f64 = 2.0;
/// The share of legitimate traffic a shop is assumed to review.
pub const DEFAULT_REVIEW_RATE: f64 = 0.05;

/// AUC and fraud caught at the review rate, on the held-out labels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    pub auc: f64,
    pub caught: f64,
}

/// How a fit fared against the scoring in force on the newest labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Validation {
    pub rows: usize,
    pub frauds: usize,
    pub review_rate: f64,
    pub in_force: Figures,
    pub candidate: Figures,
}

/// What a refit decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Refit {
    /// The model in force from now on (to store).
    pub model: Model,
    /// The model fitted on every label, adopted or not.
    pub fitted: Model,
    pub adopted: bool,
    /// None when the newest labels were too few to judge on.
    pub validation: Option<Validation>,
    /// Why, in a sentence.
    pub reason: String,
    /// The labelled rows by band (precision and recall at each).
    pub bands: Vec<Band>,
}

/// Fits on `rows`, judges against `in_force` at `review_rate` (see the
/// module docs); with a `budget` (a share of traffic to review), the model
/// stored also moves the Review cut-off so that about that share of the rows
/// scores at or above it.
pub fn refit(
    rows: &[Labelled],
    in_force: Option<&Model>,
    review_rate: f64,
    budget: Option<f64>,
) -> Result<Refit, FitError> {
    let mut outcome = judge(rows, in_force, review_rate)?;
    // The cut-off does not change the scores, only the bands they fall in.
    let scores = scored(rows, &outcome.model);
    outcome.model.review_cutoff = budget.map(|b| review_cutoff(&scores, b));
    outcome.bands = bands(&scores, outcome.model.review_cutoff);
    Ok(outcome)
}

/// The fit and the judgement: [`refit`] without the budget.
fn judge(rows: &[Labelled], in_force: Option<&Model>, review_rate: f64) -> Result<Refit, FitError> {
    let fitted = fit(rows)?;
    let links = fitted.links;
    let kept = || {
        let mut model = in_force.cloned().unwrap_or_else(|| Model::neutral(links));
        model.links = links;
        model
    };
    let mut order: Vec<&Labelled> = rows.iter().collect();
    order.sort_by_key(|r| r.at_us);
    let split =
        order.len() - ((order.len() as f64 * HOLDOUT_SHARE).ceil() as usize).min(order.len());
    let (older, newest) = order.split_at(split);
    let newest_frauds = newest.iter().filter(|r| r.fraud).count();
    let judged = (newest_frauds >= MIN_HOLDOUT && newest.len() - newest_frauds >= MIN_HOLDOUT)
        .then(|| {
            let older: Vec<Labelled> = older.iter().map(|r| (*r).clone()).collect();
            fit_with(&older, 1, 1).ok()
        })
        .flatten();
    let Some(candidate) = judged else {
        return Ok(Refit {
            model: kept(),
            fitted,
            adopted: false,
            validation: None,
            bands: Vec::new(),
            reason: format!(
                "the newest {} labels hold {newest_frauds} fraud: too few to judge a new model on, so the one in force stays",
                newest.len()
            ),
        });
    };
    let figures = |points: &dyn Fn(&Labelled) -> f64| {
        let scored: Vec<(f64, bool)> = newest
            .iter()
            .map(|r| (r.expert_points + points(r), r.fraud))
            .collect();
        Figures {
            auc: auc(&scored),
            caught: caught_share(&scored, threshold_at(&scored, review_rate)),
        }
    };
    let in_force_figures = figures(&|r| in_force.map_or(0.0, |m| m.points(&r.x)));
    let candidate_figures = figures(&|r| candidate.points(&r.x));
    let margin = auc_standard_error(
        in_force_figures.auc,
        newest_frauds,
        newest.len() - newest_frauds,
    );
    let adopted = candidate_figures.auc > in_force_figures.auc + ADOPTION_Z * margin
        && candidate_figures.caught >= in_force_figures.caught;
    let reason = if adopted {
        "the new model, fitted on the older labels, beat the scoring in force on the newest"
            .to_owned()
    } else {
        "the new model, fitted on the older labels, did not beat the scoring in force on the newest, which stays".to_owned()
    };
    let mut model = if adopted { fitted.clone() } else { kept() };
    model.links = links;
    model.review_cutoff = None;
    Ok(Refit {
        model,
        fitted,
        adopted,
        validation: Some(Validation {
            rows: newest.len(),
            frauds: newest_frauds,
            review_rate,
            in_force: in_force_figures,
            candidate: candidate_figures,
        }),
        reason,
        bands: Vec::new(),
    })
}

/// The standard error of an AUC of `auc` on `pos` positives and `neg`
/// negatives (Hanley and McNeil, 1982).
fn auc_standard_error(auc: f64, pos: usize, neg: usize) -> f64 {
    let (p, n) = (pos as f64, neg as f64);
    let q1 = auc / (2.0 - auc);
    let q2 = 2.0 * auc * auc / (1.0 + auc);
    let a2 = auc * auc;
    let variance =
        (auc * (1.0 - auc) + (p - 1.0) * (q1 - a2) + (n - 1.0) * (q2 - a2)) / (p * n).max(1.0);
    variance.max(0.0).sqrt()
}

#[cfg(test)]
mod tests {
    use super::super::FEATURES;
    use super::*;

    /// Labels over 100 days where feature 0 makes fraud likelier (`signal`),
    /// or is noise.
    fn rows(signal: bool) -> Vec<Labelled> {
        let mut next = super::super::uniform(11);
        (0..4000)
            .map(|i| {
                let mut x = [0.0; FEATURES];
                x[0] = f64::from(u8::from(next() < 0.2));
                let p = if signal && x[0] > 0.0 { 0.4 } else { 0.04 };
                Labelled {
                    x,
                    expert_points: 0.0,
                    fraud: next() < p,
                    at_us: i * 2_160_000_000,
                    links: [i % 10 == 0, false],
                }
            })
            .collect()
    }

    #[test]
    fn a_model_that_sees_what_the_rules_miss_is_adopted() {
        let r = refit(&rows(true), None, DEFAULT_REVIEW_RATE, None).expect("enough labels");
        assert!(r.adopted, "{r:?}");
        let v = r.validation.expect("judged");
        assert!(v.candidate.auc > v.in_force.auc + 0.1, "{v:?}");
        assert_eq!(r.model, r.fitted);
    }

    #[test]
    fn a_model_of_noise_is_not_adopted_and_the_one_in_force_stays() {
        let r = refit(&rows(false), None, DEFAULT_REVIEW_RATE, None).expect("enough labels");
        assert!(!r.adopted, "{r:?}");
        let x = [1.0; FEATURES];
        assert_eq!(r.model.points(&x), 0.0, "the rules alone stay in force");
        let good = refit(&rows(true), None, DEFAULT_REVIEW_RATE, None)
            .unwrap()
            .model;
        let again = refit(&rows(false), Some(&good), DEFAULT_REVIEW_RATE, None).unwrap();
        assert!(!again.adopted);
        assert_eq!(
            again.model.weights, good.weights,
            "the model in force stays"
        );
    }

    #[test]
    fn a_budget_moves_the_review_cutoff_to_the_share_it_can_review() {
        let mut rows = rows(true);
        for (i, r) in rows.iter_mut().enumerate() {
            r.expert_points = (i % 100) as f64 / 2.0;
        }
        let tight = refit(&rows, None, DEFAULT_REVIEW_RATE, Some(0.01)).unwrap();
        let loose = refit(&rows, None, DEFAULT_REVIEW_RATE, Some(0.2)).unwrap();
        let (t, l) = (
            tight.model.review_cutoff.unwrap(),
            loose.model.review_cutoff.unwrap(),
        );
        assert!(t > l, "a smaller budget, a higher cut-off: {t} {l}");
        let flagged = |r: &Refit| r.bands[1].rows + r.bands[2].rows;
        assert!(flagged(&tight) < flagged(&loose));
        let all: usize = tight.bands.iter().map(|b| b.rows).sum();
        assert_eq!(all, rows.len());
        let none = refit(&rows, None, DEFAULT_REVIEW_RATE, None).unwrap();
        assert!(none.model.review_cutoff.is_none());
    }

    #[test]
    fn link_weights_are_the_rate_at_which_links_were_fraud() {
        let mut rows = rows(false);
        for (i, r) in rows.iter_mut().enumerate() {
            r.links = [i % 4 == 0, false];
            r.fraud = i % 40 == 0;
        }
        // 1,000 device links, 100 of them fraud: (101 / 1002) / 0.5.
        let w = super::super::link_weights(&rows);
        assert!((w.device - 0.2016).abs() < 1e-3, "{w:?}");
        assert_eq!(w.ip, 1.0, "no IP link: the prior");
    }
}
