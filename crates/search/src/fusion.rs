//! Hybrid search's fusion of its branches: the records ranked by meaning
//! (vector similarity) and by keywords (BM25), and among the keyword ones
//! those holding an identifier of the query (a part number, an e-mail
//! address), fused into one ranking.
//!
//! - [`Fusion::Rrf`], Reciprocal Rank Fusion (Cormack et al., 2009): each
//!   branch adds `weight / (60 + rank)`; the identifier branch weighs as the
//!   keyword one, so an identifier wins over meaning.
//! - [`Fusion::Convex`]: the weighted mean of each branch's score divided by
//!   its best (similarity below 0 counts 0), a branch that misses a record
//!   counting 0 (Bruch et al., "An Analysis of Fusion Functions for Hybrid
//!   Retrieval", 2023).
//!
//! Arithmetic follows `vigil.hybrid_search` before 0.7.7, which fused in SQL,
//! so rankings and ties are the same as they were: RRF sums in `double
//! precision`, the convex combination is `real` throughout.

use std::collections::{HashMap, HashSet};

/// How the branches' rankings become one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    Rrf,
    Convex,
}

impl Fusion {
    /// `rrf` or `convex`.
    pub fn parse(name: &str) -> Option<Fusion> {
        match name {
            "rrf" => Some(Fusion::Rrf),
            "convex" => Some(Fusion::Convex),
            _ => None,
        }
    }
}

/// RRF's constant: how much the first ranks count above the later ones.
pub const RRF_K: f64 = 60.0;

/// One record in both branches' terms: its rank (from 1) and score in each.
#[derive(Default, Clone, Copy)]
struct Seen {
    vector: Option<(u32, f32)>,
    keyword: Option<(u32, f32)>,
    identifier: Option<u32>,
}

/// `(id, score)` pairs ranked best first, ties by smaller id.
fn ranked(branch: &[(i64, f32)]) -> Vec<(i64, f32)> {
    let mut out = branch.to_vec();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// The `k` best records by `fusion` of `by_vector` (id, cosine similarity)
/// and `by_keyword` (id, BM25 score), given in any order, where the keyword
/// records in `identified` hold an identifier of the query (that branch is
/// ranked as the keyword one is; RRF only). Best first, ties by smaller id.
pub fn fuse(
    by_vector: &[(i64, f32)],
    by_keyword: &[(i64, f32)],
    identified: &[i64],
    fusion: Fusion,
    vector_weight: f32,
    keyword_weight: f32,
    k: usize,
) -> Vec<(i64, f64)> {
    let by_vector = ranked(by_vector);
    let by_keyword = ranked(by_keyword);
    let mut seen: HashMap<i64, Seen> = HashMap::with_capacity(by_vector.len() + by_keyword.len());
    for (rank, &(id, similarity)) in (1..).zip(&by_vector) {
        seen.entry(id).or_default().vector = Some((rank, similarity));
    }
    // Up to 2,000 keyword records each: a set, not a scan per record.
    let identified: HashSet<i64> = identified.iter().copied().collect();
    let mut identifier_rank = 0;
    for (rank, &(id, score)) in (1..).zip(&by_keyword) {
        let entry = seen.entry(id).or_default();
        entry.keyword = Some((rank, score));
        if identified.contains(&id) {
            identifier_rank += 1;
            entry.identifier = Some(identifier_rank);
        }
    }
    let best_similarity = by_vector.first().map(|&(_, s)| s);
    let best_score = by_keyword.first().map(|&(_, s)| s);
    let vector_weight_f64 = f64::from(vector_weight);
    let keyword_weight_f64 = f64::from(keyword_weight);
    let mut fused: Vec<(i64, f64)> = seen
        .into_iter()
        .map(|(id, s)| {
            let score = match fusion {
                Fusion::Rrf => {
                    let rrf = |weight: f64, rank: Option<u32>| {
                        rank.map_or(0.0, |r| weight / (RRF_K + f64::from(r)))
                    };
                    rrf(vector_weight_f64, s.vector.map(|v| v.0))
                        + rrf(keyword_weight_f64, s.keyword.map(|w| w.0))
                        + rrf(keyword_weight_f64, s.identifier)
                }
                Fusion::Convex => {
                    // A branch's score over its best; none when the best is 0.
                    let share = |score: Option<f32>, best: Option<f32>| match (score, best) {
                        (Some(score), Some(best)) if best != 0.0 => score / best,
                        _ => 0.0,
                    };
                    let vector = share(s.vector.map(|v| v.1.max(0.0)), best_similarity);
                    let keyword = share(s.keyword.map(|w| w.1), best_score);
                    f64::from(
                        (vector_weight * vector + keyword_weight * keyword)
                            / (vector_weight + keyword_weight),
                    )
                }
            };
            // -0 (a negative best similarity) is 0, as SQL compares it.
            (id, if score == 0.0 { 0.0 } else { score })
        })
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused.truncate(k);
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_sums_weight_over_60_plus_rank_in_each_branch() {
        let v = [(1, 0.9), (2, 0.8)];
        let w = [(2, 5.0), (3, 4.0)];
        let got = fuse(&v, &w, &[], Fusion::Rrf, 1.0, 1.0, 10);
        let ids: Vec<i64> = got.iter().map(|r| r.0).collect();
        assert_eq!(ids, [2, 1, 3]);
        assert_eq!(got[0].1, 1.0 / 62.0 + 1.0 / 61.0);
        assert_eq!(got[1].1, 1.0 / 61.0);
        assert_eq!(got[2].1, 1.0 / 62.0);
    }

    #[test]
    fn an_identifier_ranks_as_a_third_branch_at_the_keyword_weight() {
        let v = [(1, 0.9)];
        let w = [(2, 5.0), (3, 4.0)];
        let got = fuse(&v, &w, &[3], Fusion::Rrf, 1.0, 1.0, 10);
        assert_eq!(got[0], (3, 1.0 / 62.0 + 1.0 / 61.0));
        // Records outside the keyword branch are not identified.
        let got = fuse(&v, &w, &[1], Fusion::Rrf, 1.0, 1.0, 10);
        assert_eq!(got[0], (1, 1.0 / 61.0));
    }

    #[test]
    fn convex_weighs_each_branch_over_its_best_and_counts_negative_similarity_0() {
        let v = [(1, 0.5), (2, -0.2)];
        let w = [(2, 8.0), (3, 2.0)];
        let got = fuse(&v, &w, &[], Fusion::Convex, 1.0, 3.0, 10);
        assert_eq!(got, [(2, 0.75), (1, 0.25), (3, 0.1875)]);
        // A branch whose best is 0 adds nothing.
        let got = fuse(&[(1, 0.0)], &[(2, 1.0)], &[], Fusion::Convex, 1.0, 1.0, 10);
        assert_eq!(got, [(2, 0.5), (1, 0.0)]);
    }

    #[test]
    fn ties_go_to_the_smaller_id_and_k_cuts() {
        let v = [(9, 0.5), (4, 0.5), (7, 0.5)];
        let got = fuse(&v, &[], &[], Fusion::Rrf, 1.0, 1.0, 2);
        // Ranked within the branch by id on equal similarity: 4, 7, 9.
        assert_eq!(got, [(4, 1.0 / 61.0), (7, 1.0 / 62.0)]);
        assert!(fuse(&[], &[], &[], Fusion::Convex, 1.0, 1.0, 5).is_empty());
    }
}
