//! What the report measures: AUC of `RiskScore` against the labels, the share of
//! fraud caught when 1% and 5% of legitimate traffic is flagged, per pattern, and
//! the share of traffic each `Result` takes.

/// One scored transaction.
#[derive(Debug, Clone)]
pub struct Scored {
    pub score: f64,
    pub result: String,
    pub fraud: bool,
    pub pattern: &'static str,
}

/// Area under the ROC curve (Mann-Whitney, ties counted half).
pub fn auc(rows: &[Scored]) -> f64 {
    let mut sorted: Vec<&Scored> = rows.iter().collect();
    sorted.sort_by(|a, b| a.score.total_cmp(&b.score));
    let (mut rank_sum, mut i) = (0.0, 0);
    while i < sorted.len() {
        let mut j = i;
        while j < sorted.len() && sorted[j].score == sorted[i].score {
            j += 1;
        }
        // Ranks i+1..=j share their average.
        let avg = (i + 1 + j) as f64 / 2.0;
        rank_sum += avg * sorted[i..j].iter().filter(|r| r.fraud).count() as f64;
        i = j;
    }
    let pos = rows.iter().filter(|r| r.fraud).count() as f64;
    let neg = rows.len() as f64 - pos;
    (rank_sum - pos * (pos + 1.0) / 2.0) / (pos * neg)
}

/// The lowest score threshold flagging at most `fpr` of legitimate traffic
/// (flagged: score at or above it).
pub fn threshold_at(rows: &[Scored], fpr: f64) -> f64 {
    let mut legit: Vec<f64> = rows.iter().filter(|r| !r.fraud).map(|r| r.score).collect();
    legit.sort_by(|a, b| b.total_cmp(a));
    let allowed = (fpr * legit.len() as f64).floor() as usize;
    // Scores strictly above the (allowed+1)-th highest legit score.
    match legit.get(allowed) {
        Some(s) => next_up(*s),
        None => f64::NEG_INFINITY,
    }
}

fn next_up(s: f64) -> f64 {
    s + 1e-9
}

/// Share of `rows` (of a pattern, or all fraud) at or above `threshold`.
pub fn caught(rows: &[Scored], threshold: f64, pattern: Option<&str>) -> (usize, f64) {
    let fraud: Vec<&Scored> = rows
        .iter()
        .filter(|r| r.fraud && pattern.is_none_or(|p| r.pattern == p))
        .collect();
    let hit = fraud.iter().filter(|r| r.score >= threshold).count();
    (fraud.len(), hit as f64 / fraud.len().max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(score: f64, fraud: bool) -> Scored {
        Scored {
            score,
            result: String::new(),
            fraud,
            pattern: if fraud { "x" } else { "legit" },
        }
    }

    #[test]
    fn auc_counts_ties_half() {
        assert_eq!(auc(&[s(1.0, false), s(2.0, true)]), 1.0);
        assert_eq!(auc(&[s(2.0, false), s(1.0, true)]), 0.0);
        assert_eq!(auc(&[s(1.0, false), s(1.0, true)]), 0.5);
    }

    #[test]
    fn thresholds_flag_at_most_the_share() {
        let mut rows: Vec<Scored> = (0..100).map(|i| s(f64::from(i), false)).collect();
        rows.extend([s(97.5, true), s(94.0, true), s(50.0, true)]);
        let t = threshold_at(&rows, 0.05);
        // Legit 95..=99 are the 5% flagged: threshold just above 94.
        assert!(t > 94.0 && t < 95.0);
        assert_eq!(caught(&rows, t, None), (3, 1.0 / 3.0));
    }
}
