//! A store that keeps unit vectors in half precision, as `vigil_hnsw` keeps
//! cosine indexes on pages: searches score the halves as they are
//! ([`VectorRef::F16`]), the rest of the algorithm sees them widened. Recall
//! stays that of f32, and every distance a search reports is within
//! [`unit_half_cosine_error`] of the exact one, which is what lets
//! PostgreSQL re-rank by exact distance.

use crate::common::*;
use vigil_hnsw::distance::{unit_half_cosine_error, unit_halves, widen_halves};
use vigil_hnsw::store::{ElementVisitor, VectorRef};
use vigil_hnsw::{
    check, insert, search, CheckOptions, GraphStore, IterativeScan, LevelRng, MemError, MemStore,
    Metric, Params, ScanOrder,
};

/// The graph in a [`MemStore`] holding the widened halves, and the halves.
#[derive(Default)]
struct HalfStore {
    graph: MemStore<u64>,
    halves: std::collections::HashMap<u64, Vec<u16>>,
}

impl GraphStore for HalfStore {
    type Id = u64;
    type Error = MemError;

    pass_through_to!(graph; replace_neighbours);

    fn with_elements(&self, ids: &[u64], f: &mut ElementVisitor<'_, u64>) -> Result<(), MemError> {
        for &id in ids {
            let meta = self.graph.with_element(id, |meta, _| meta)?;
            f(id, meta, VectorRef::F16(&self.halves[&id]));
        }
        Ok(())
    }

    fn insert_element(
        &mut self,
        id: u64,
        level: usize,
        vector: &[f32],
        neighbours: &[Vec<u64>],
    ) -> Result<(), MemError> {
        let (mut halves, mut wide) = (Vec::new(), Vec::new());
        unit_halves(vector, &mut halves);
        widen_halves(&halves, &mut wide);
        self.graph.insert_element(id, level, &wide, neighbours)?;
        self.halves.insert(id, halves);
        Ok(())
    }

    fn remove_element(&mut self, id: u64) -> Result<(), MemError> {
        self.halves.remove(&id);
        self.graph.remove_element(id)
    }
}

#[test]
fn halves_search_as_well_as_f32_and_report_distances_within_the_bound() {
    let (data, queries) = clustered(11, N, QUERIES, DIMS, 50);
    let params = Params::new(DIMS, Metric::Cosine);
    let (full, _) = build_by_insert(&params, &data, 11);
    let mut halves = HalfStore::default();
    let mut rng = LevelRng::new(11);
    for (i, v) in data.iter().enumerate() {
        insert(&mut halves, &params, id_of(i), v, &mut rng).expect("insert");
    }
    check(&halves, &params, CheckOptions::default()).expect("check");
    let bound = unit_half_cosine_error(DIMS);
    let (mut truth, mut by_full, mut by_halves) = (Vec::new(), Vec::new(), Vec::new());
    for q in &queries {
        truth.push(brute_force(Metric::Cosine, &data, q, 10, |_| true));
        let ids = |r: Vec<(f32, u64)>| r.into_iter().map(|(_, id)| id).collect::<Vec<_>>();
        by_full.push(ids(search(&full, &params, q, 10, 40).expect("search")));
        let found = search(&halves, &params, q, 10, 40).expect("search");
        for &(d, id) in &found {
            let exact = Metric::Cosine.distance(&data[idx_of(id)], q);
            assert!((d - exact).abs() <= bound, "{d} vs exact {exact}");
        }
        by_halves.push(ids(found));
    }
    let (r_full, r_halves) = (recall(&truth, &by_full), recall(&truth, &by_halves));
    println!("recall@10 f32 {r_full:.4}, unit halves {r_halves:.4}");
    assert!(
        r_halves >= 0.95 && r_halves >= r_full - 0.01,
        "{r_halves} vs {r_full}"
    );

    // An iterative scan over halves: non-decreasing, each within the bound.
    let mut scan =
        IterativeScan::new(&halves, &params, &queries[0], 20, ScanOrder::Strict).expect("scan");
    let mut last = f32::NEG_INFINITY;
    for _ in 0..300 {
        let (d, id) = scan.next(&halves).expect("next").expect("more rows");
        assert!(d >= last, "strict order");
        last = d;
        let exact = Metric::Cosine.distance(&data[idx_of(id)], &queries[0]);
        assert!((d - exact).abs() <= bound);
    }
}
