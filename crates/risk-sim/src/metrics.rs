//! What the report measures: AUC of `RiskScore` against the labels, the share of
//! fraud caught when 1% and 5% of legitimate traffic is flagged, per pattern, and
//! the share of traffic each `Result` takes. The measures themselves are the
//! risk crate's (`vigil_risk::model::judge`), which a refit judges models by.

use vigil_risk::model::{auc as pairs_auc, caught_share, threshold_at as pairs_threshold};

/// One scored transaction.
#[derive(Debug, Clone)]
pub struct Scored {
    pub score: f64,
    pub result: String,
    pub fraud: bool,
    pub pattern: &'static str,
}

fn pairs<'a>(rows: impl Iterator<Item = &'a Scored>) -> Vec<(f64, bool)> {
    rows.map(|r| (r.score, r.fraud)).collect()
}

/// Area under the ROC curve.
pub fn auc(rows: &[Scored]) -> f64 {
    pairs_auc(&pairs(rows.iter()))
}

/// The lowest score threshold flagging at most `fpr` of legitimate traffic.
pub fn threshold_at(rows: &[Scored], fpr: f64) -> f64 {
    pairs_threshold(&pairs(rows.iter()), fpr)
}

/// Share of `rows` (of a pattern, or all fraud) at or above `threshold`.
pub fn caught(rows: &[Scored], threshold: f64, pattern: Option<&str>) -> (usize, f64) {
    let fraud = pairs(
        rows.iter()
            .filter(|r| r.fraud && pattern.is_none_or(|p| r.pattern == p)),
    );
    (fraud.len(), caught_share(&fraud, threshold))
}

/// Share of legitimate purchases answered `Review` or `Failed`.
pub fn legit_flagged(rows: &[Scored]) -> f64 {
    let legit: Vec<&Scored> = rows.iter().filter(|r| !r.fraud).collect();
    let flagged = legit.iter().filter(|r| r.result != "Passed").count();
    flagged as f64 / legit.len().max(1) as f64
}
