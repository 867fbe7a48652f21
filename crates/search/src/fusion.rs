//! Hybrid search's fusion of its branches: the records ranked by meaning
//! (vector similarity) and by keywords (BM25), and among the keyword ones
//! those holding an identifier of the query (a part number, an e-mail
//! address), fused into one ranking.
//!
//! - [`Fusion::Convex`], the default since 0.11.0: the weighted mean of each
//!   branch's scores scaled to 0..1 within the branch (min-max: its best
//!   1, its last 0), a branch that misses a record counting 0 (Bruch et
//!   al., "An Analysis of Fusion Functions for Hybrid Retrieval", 2023,
//!   found such a combination ahead of RRF, and more robust to its weight
//!   than RRF to its constant). A record holding an identifier adds the
//!   keyword weight once more, so an identifier wins over meaning.
//! - [`Fusion::Rrf`], Reciprocal Rank Fusion (Cormack et al., 2009): each
//!   branch adds `weight / (60 + rank)`; the identifier branch weighs as the
//!   keyword one.
//!
//! Why min-max at equal weights is the default: on both labelled sets it
//! came within 0.002 of the best plain fusion tuned on the set itself, where
//! RRF at its textbook constant was 0.01 to 0.02 behind
//! (docs/vector-database.md, "Quality"). RRF sums in `double precision`, as
//! the SQL it replaced did.

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

/// A branch's scores from its last to its best, to scale them to 0..1.
struct Range {
    low: f64,
    high: f64,
}

impl Range {
    /// Of a ranked branch (best first).
    fn of(ranked: &[(i64, f32)]) -> Range {
        let at = |pair: Option<&(i64, f32)>| pair.map_or(0.0, |&(_, s)| f64::from(s));
        Range {
            low: at(ranked.last()),
            high: at(ranked.first()),
        }
    }

    /// `score` scaled so the branch's best is 1 and its last 0; every
    /// record 1 when all score the same (each is the branch's best).
    fn scale(&self, score: f32) -> f64 {
        let spread = self.high - self.low;
        if spread > 0.0 {
            (f64::from(score) - self.low) / spread
        } else {
            1.0
        }
    }
}

/// `(id, score)` pairs ranked best first, ties by smaller id.
fn ranked(branch: &[(i64, f32)]) -> Vec<(i64, f32)> {
    let mut out = branch.to_vec();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// The `k` best records by `fusion` of `by_vector` (id, cosine similarity)
/// and `by_keyword` (id, BM25 score), given in any order, where the keyword
/// records in `identified` hold an identifier of the query. Best first,
/// ties by smaller id.
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
    let vector_range = Range::of(&by_vector);
    let keyword_range = Range::of(&by_keyword);
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
                    let vector = s.vector.map_or(0.0, |(_, v)| vector_range.scale(v));
                    let keyword = s.keyword.map_or(0.0, |(_, w)| keyword_range.scale(w));
                    let identifier = if s.identifier.is_some() { 1.0 } else { 0.0 };
                    (vector_weight_f64 * vector + keyword_weight_f64 * (keyword + identifier))
                        / (vector_weight_f64 + keyword_weight_f64)
                }
            };
            (id, score)
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
    fn convex_scales_each_branch_from_its_last_to_its_best() {
        let v = [(1, 0.5), (2, -0.2), (4, 0.3)];
        let w = [(2, 8.0), (3, 2.0)];
        let got = fuse(&v, &w, &[], Fusion::Convex, 1.0, 3.0, 10);
        // 2: vector 0 (last), keyword 1; 1: vector 1; 4: vector 5/7; 3: 0.
        assert_eq!(got[0], (2, 0.75));
        assert_eq!(got[1], (1, 0.25));
        assert!((got[2].1 - 0.25 * 5.0 / 7.0).abs() < 1e-6 && got[2].0 == 4);
        assert_eq!(got[3], (3, 0.0));
        // A branch of one record, or of equal scores, gives each 1.
        let got = fuse(
            &[(1, 0.2)],
            &[(2, 1.0), (3, 1.0)],
            &[],
            Fusion::Convex,
            1.0,
            1.0,
            10,
        );
        assert_eq!(got, [(1, 0.5), (2, 0.5), (3, 0.5)]);
    }

    #[test]
    fn convex_adds_the_keyword_weight_for_an_identifier() {
        let v = [(1, 0.9), (2, 0.1)];
        let w = [(2, 3.0), (3, 2.0), (5, 1.0)];
        // 3, second by keywords and absent by meaning, holds the identifier:
        // (0.5 + 1) / 2 against 0.5 for the best by meaning alone.
        let got = fuse(&v, &w, &[3], Fusion::Convex, 1.0, 1.0, 10);
        assert_eq!(got[0], (3, 0.75));
        assert_eq!(got[1..], [(1, 0.5), (2, 0.5), (5, 0.0)]);
        let got = fuse(&v, &w, &[2], Fusion::Convex, 1.0, 1.0, 10);
        assert_eq!(got[0], (2, 1.0));
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
