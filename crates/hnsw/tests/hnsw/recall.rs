//! Recall@10 at default settings (m=16, ef_construction=64, ef_search=40) on
//! 10,000 clustered vectors (50 Gaussian clusters, dim 64), 200 queries not
//! in the set, against brute force: own insert path and the parallel build,
//! each metric. Run with `--nocapture` to see the figures.

use std::time::Instant;

use crate::common::*;
use vigil_hnsw::build::build;
use vigil_hnsw::{
    check, search, CheckOptions, GraphStore, MemStore, Metric, Params, DEFAULT_EF_SEARCH,
};

fn measure(
    store: &MemStore<u64>,
    params: &Params,
    data: &[Vec<f32>],
    queries: &[Vec<f32>],
) -> (f64, f64) {
    let truth: Vec<Vec<u64>> = queries
        .iter()
        .map(|q| brute_force(params.metric, data, q, 10, |_| true))
        .collect();
    let t = Instant::now();
    let found: Vec<Vec<u64>> = queries
        .iter()
        .map(|q| {
            let r = search(store, params, q, 10, DEFAULT_EF_SEARCH).expect("search");
            assert!(r.windows(2).all(|w| w[0].0 <= w[1].0), "sorted");
            r.into_iter().map(|(_, id)| id).collect()
        })
        .collect();
    let per_query_us = t.elapsed().as_secs_f64() * 1e6 / queries.len() as f64;
    (recall(&truth, &found), per_query_us)
}

fn own_insert(metric: Metric, seed: u64) {
    let (data, queries) = clustered(seed, N, QUERIES, DIMS, 50);
    let params = Params::new(DIMS, metric);
    let (store, secs) = build_by_insert(&params, &data, seed);
    check(&store, &params, CheckOptions::default()).expect("check");
    let (r, us) = measure(&store, &params, &data, &queries);
    println!(
        "own insert  {:<13} recall@10 {r:.4}  build {secs:.2}s  search {us:.0}us/query",
        metric.name()
    );
    assert!(r >= 0.95, "recall {r} for {metric:?}");
}

fn parallel_build(metric: Metric, seed: u64) {
    let (data, queries) = clustered(seed, N, QUERIES, DIMS, 50);
    let params = Params::new(DIMS, metric);
    let items = with_ids(&data);
    let t = Instant::now();
    let graph = build(&params, items, 2).expect("build");
    let secs = t.elapsed().as_secs_f64();
    let mut store = MemStore::new();
    graph.load_into(&mut store).expect("load");
    let report = check(&store, &params, CheckOptions::default()).expect("check");
    let (r, us) = measure(&store, &params, &data, &queries);
    println!(
        "build       {:<13} recall@10 {r:.4}  build {secs:.2}s (2 threads)  search {us:.0}us/query  levels {:?}",
        metric.name(),
        report.levels
    );
    assert!(r >= 0.95, "recall {r} for {metric:?}");
}

#[test]
fn recall_own_insert_cosine() {
    own_insert(Metric::Cosine, 1);
}

#[test]
fn recall_own_insert_l2() {
    own_insert(Metric::L2, 2);
}

#[test]
fn recall_own_insert_inner_product() {
    own_insert(Metric::InnerProduct, 3);
}

#[test]
fn recall_parallel_build_cosine() {
    parallel_build(Metric::Cosine, 1);
}

#[test]
fn recall_parallel_build_l2() {
    parallel_build(Metric::L2, 2);
}

#[test]
fn recall_parallel_build_inner_product() {
    parallel_build(Metric::InnerProduct, 3);
}

/// A cosine graph built over unit halves (as `CREATE INDEX` builds a cosine
/// index) links as well as one built over f32: searched with the original
/// vectors, its recall is the f32 graph's within a point.
#[test]
fn recall_parallel_build_cosine_over_unit_halves() {
    let (data, queries) = clustered(1, N, QUERIES, DIMS, 50);
    let params = Params::new(DIMS, Metric::Cosine);
    let halves = with_ids_in_halves(&params, &data);
    let t = Instant::now();
    let graph = build(&params, halves, 2).expect("build");
    let secs = t.elapsed().as_secs_f64();
    // The graph's links with the original vectors.
    let mut store = MemStore::new();
    for e in &graph.elements {
        store
            .insert_element(e.id, e.level, &data[idx_of(e.id)], &e.neighbours)
            .unwrap();
    }
    store.set_entry_point(graph.entry).unwrap();
    check(&store, &params, CheckOptions::default()).expect("check");
    let (r, _) = measure(&store, &params, &data, &queries);

    let f32_graph = build(&params, with_ids(&data), 2).expect("build");
    let mut f32_store = MemStore::new();
    f32_graph.load_into(&mut f32_store).expect("load");
    let (r32, _) = measure(&f32_store, &params, &data, &queries);
    println!("build over unit halves: recall@10 {r:.4} (f32 {r32:.4}), build {secs:.2}s");
    assert!(
        r >= 0.95 && r >= r32 - 0.01,
        "recall {r} against {r32} over f32"
    );
}
