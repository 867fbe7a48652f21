//! How well scores separate fraud: AUC, and the share of fraud caught when a
//! given share of legitimate traffic is flagged. A refit judges models with
//! them; the simulator reports them.

/// Area under the ROC curve of `(score, fraud)` pairs (Mann-Whitney, ties
/// counted half); 0.5 when either class is missing.
pub fn auc(rows: &[(f64, bool)]) -> f64 {
    let mut sorted: Vec<(f64, bool)> = rows.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut rank_sum, mut i) = (0.0, 0);
    while i < sorted.len() {
        let mut j = i;
        while j < sorted.len() && sorted[j].0 == sorted[i].0 {
            j += 1;
        }
        // Ranks i+1..=j share their average.
        let avg = (i + 1 + j) as f64 / 2.0;
        rank_sum += avg * sorted[i..j].iter().filter(|r| r.1).count() as f64;
        i = j;
    }
    let pos = rows.iter().filter(|r| r.1).count() as f64;
    let neg = rows.len() as f64 - pos;
    if pos == 0.0 || neg == 0.0 {
        return 0.5;
    }
    (rank_sum - pos * (pos + 1.0) / 2.0) / (pos * neg)
}

/// The lowest threshold flagging at most `share` of the legitimate rows
/// (flagged: score at or above it).
pub fn threshold_at(rows: &[(f64, bool)], share: f64) -> f64 {
    let mut legit: Vec<f64> = rows.iter().filter(|r| !r.1).map(|r| r.0).collect();
    legit.sort_by(|a, b| b.total_cmp(a));
    let allowed = (share * legit.len() as f64).floor() as usize;
    // Scores strictly above the (allowed+1)-th highest legitimate score.
    match legit.get(allowed) {
        Some(s) => s + 1e-9,
        None => f64::NEG_INFINITY,
    }
}

/// The share of fraud rows at or above `threshold`.
pub fn caught_share(rows: &[(f64, bool)], threshold: f64) -> f64 {
    let fraud = rows.iter().filter(|r| r.1);
    let (n, hit) = fraud.fold((0usize, 0usize), |(n, hit), r| {
        (n + 1, hit + usize::from(r.0 >= threshold))
    });
    hit as f64 / n.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_counts_ties_half() {
        assert_eq!(auc(&[(1.0, false), (2.0, true)]), 1.0);
        assert_eq!(auc(&[(2.0, false), (1.0, true)]), 0.0);
        assert_eq!(auc(&[(1.0, false), (1.0, true)]), 0.5);
        assert_eq!(auc(&[(1.0, false)]), 0.5);
    }

    #[test]
    fn thresholds_flag_at_most_the_share() {
        let mut rows: Vec<(f64, bool)> = (0..100).map(|i| (f64::from(i), false)).collect();
        rows.extend([(97.5, true), (94.0, true), (50.0, true)]);
        let t = threshold_at(&rows, 0.05);
        // Legitimate 95..=99 are the 5% flagged: the threshold is just above 94.
        assert!(t > 94.0 && t < 95.0);
        assert_eq!(caught_share(&rows, t), 1.0 / 3.0);
    }
}
