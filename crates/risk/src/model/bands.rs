//! Where the labelled rows fall under the model a refit leaves in force: the
//! Review cut-off a review budget sets, and each `Result` band's precision and
//! recall. `vigil.risk_refit` reports these; they are arithmetic on
//! `(score, fraud)` pairs, so they live here rather than in the extension.

use super::{Labelled, Model};
use crate::score::{level_verdict, level_with_review, review_cutoff_tenths, score_of_points};

/// One `Result` band of the labelled rows, scored as the model in force
/// after the refit scores them: how many, how many were fraud, and the
/// shares those make, to four decimals as `vigil.risk_refit` reports them.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    pub result: &'static str,
    pub rows: usize,
    pub frauds: usize,
    /// The share of the band's rows that were fraud.
    pub precision: f64,
    /// The share of all the frauds that fell in this band.
    pub recall: f64,
}

/// Each row's score under `model` (its rules' points plus the model's, at
/// strictness 50) and whether it was fraud.
pub(super) fn scored(rows: &[Labelled], model: &Model) -> Vec<(f64, bool)> {
    rows.iter()
        .map(|r| {
            (
                score_of_points(r.expert_points + model.points(&r.x)),
                r.fraud,
            )
        })
        .collect()
}

/// The score above which `budget` of the `scored` rows lie, within the
/// monitor and high cut-offs.
pub(super) fn review_cutoff(scored: &[(f64, bool)], budget: f64) -> f64 {
    let mut scores: Vec<f64> = scored.iter().map(|(s, _)| *s).collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    let at = ((budget.clamp(0.0, 1.0) * scores.len() as f64) as usize)
        .min(scores.len().saturating_sub(1));
    let cutoff = scores.get(at).map_or(60.0, |s| (s * 10.0).ceil() / 10.0);
    f64::from(review_cutoff_tenths(cutoff)) / 10.0
}

/// The `scored` rows by the `Result` their score gives at strictness 50
/// (Passed, Review, Failed), the Review cut-off at `review_cutoff` when a
/// budget set one.
pub(super) fn bands(scored: &[(f64, bool)], review_cutoff: Option<f64>) -> Vec<Band> {
    let review = review_cutoff.map(review_cutoff_tenths);
    let mut out: Vec<Band> = ["Passed", "Review", "Failed"]
        .into_iter()
        .map(|result| Band {
            result,
            rows: 0,
            frauds: 0,
            precision: 0.0,
            recall: 0.0,
        })
        .collect();
    for (score, fraud) in scored {
        let tenths = (score * 10.0).round() as i32;
        let verdict = level_verdict(level_with_review(tenths, 50, review));
        let band = &mut out[verdict as usize];
        band.rows += 1;
        band.frauds += usize::from(*fraud);
    }
    let total_frauds = out.iter().map(|b| b.frauds).sum::<usize>().max(1);
    for band in &mut out {
        band.precision = share(band.frauds, band.rows);
        band.recall = share(band.frauds, total_frauds);
    }
    out
}

/// `n / of` to four decimals; 0 when `of` is 0.
fn share(n: usize, of: usize) -> f64 {
    (n as f64 / of.max(1) as f64 * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::super::{LinkWeights, FEATURES};
    use super::*;

    /// `n` rows at `score`, the first `frauds` of them fraud.
    fn at(score: f64, n: usize, frauds: usize) -> impl Iterator<Item = (f64, bool)> {
        (0..n).map(move |i| (score, i < frauds))
    }

    #[test]
    fn bands_count_rows_and_frauds_by_result_with_their_shares() {
        // Default cut-offs at strictness 50: Passed under 60, Review from 60
        // (caution) and 75 (high), Failed from 90 (critical).
        let scored: Vec<(f64, bool)> = at(10.0, 6, 1)
            .chain(at(59.9, 2, 1))
            .chain(at(60.0, 1, 1))
            .chain(at(80.0, 2, 0))
            .chain(at(95.0, 3, 2))
            .collect();
        let b = bands(&scored, None);
        let names: Vec<&str> = b.iter().map(|b| b.result).collect();
        assert_eq!(names, ["Passed", "Review", "Failed"]);
        assert_eq!((b[0].rows, b[0].frauds), (8, 2));
        assert_eq!((b[1].rows, b[1].frauds), (3, 1));
        assert_eq!((b[2].rows, b[2].frauds), (3, 2));
        // 2 of 8, 1 of 3, 2 of 3; of the 5 frauds 2, 1 and 2.
        assert_eq!(b[0].precision, 0.25);
        assert_eq!(b[1].precision, 0.3333);
        assert_eq!(b[2].precision, 0.6667);
        assert_eq!(
            b.iter().map(|b| b.recall).collect::<Vec<_>>(),
            [0.4, 0.2, 0.4]
        );
    }

    #[test]
    fn a_review_cutoff_moves_rows_between_passed_and_review() {
        let scored: Vec<(f64, bool)> = at(45.0, 4, 1).chain(at(55.0, 4, 3)).collect();
        let default = bands(&scored, None);
        assert_eq!((default[0].rows, default[1].rows), (8, 0));
        let moved = bands(&scored, Some(50.0));
        assert_eq!((moved[0].rows, moved[1].rows), (4, 4));
        assert_eq!(moved[1].precision, 0.75);
        assert_eq!(moved[1].recall, 0.75);
    }

    #[test]
    fn empty_bands_and_no_frauds_give_zero_shares() {
        let b = bands(&[(10.0, false), (20.0, false)], None);
        assert_eq!((b[0].rows, b[0].precision, b[0].recall), (2, 0.0, 0.0));
        assert_eq!((b[2].rows, b[2].precision, b[2].recall), (0, 0.0, 0.0));
        assert!(bands(&[], None).iter().all(|b| b.rows == 0));
    }

    #[test]
    fn the_review_cutoff_is_the_score_above_which_the_budget_lies() {
        // Scores 0.5, 1.5, ..., 99.5, taken from the highest.
        let scored: Vec<(f64, bool)> = (0..100).map(|i| (f64::from(i) + 0.5, false)).collect();
        // Half the rows: the 51st highest, 49.5.
        assert_eq!(review_cutoff(&scored, 0.5), 49.5);
        // A tenth: 89.5, held under the high cut-off (75).
        assert_eq!(review_cutoff(&scored, 0.1), 74.9);
        // Three quarters: 24.5, held above the monitor cut-off (40).
        assert_eq!(review_cutoff(&scored, 0.75), 40.1);
        // Every row, or more: the lowest score, held there too.
        assert_eq!(review_cutoff(&scored, 1.0), 40.1);
        assert_eq!(review_cutoff(&scored, 3.0), 40.1);
        // A score between tenths is rounded up, so the row stays at or above it.
        assert_eq!(review_cutoff(&[(52.34, true)], 0.5), 52.4);
        // No rows: the default caution cut-off.
        assert_eq!(review_cutoff(&[], 0.1), 60.0);
    }

    #[test]
    fn scores_are_the_rules_points_plus_the_models_through_the_logistic() {
        let row = |expert_points| Labelled {
            x: [0.0; FEATURES],
            expert_points,
            fraud: true,
            at_us: 0,
            links: [false; 2],
        };
        // A neutral model adds nothing: 35 points is the logistic's centre,
        // 35 + 12 one e-fold of the odds above it.
        let model = Model::neutral(LinkWeights::default());
        let s = scored(&[row(35.0), row(47.0)], &model);
        assert_eq!(s[0], (50.0, true));
        assert!(
            (s[1].0 - 100.0 / (1.0 + (-1.0f64).exp())).abs() < 1e-12,
            "{s:?}"
        );
    }
}
