//! Deleted elements are never returned; vacuum repair keeps recall and
//! leaves a graph that passes the strict structure check.

use std::collections::HashSet;

use crate::common::*;
use vigil_hnsw::{
    check, insert_with_level, repair, search, CheckOptions, GraphStore, IterativeScan, MemStore,
    Metric, Params, ScanOrder, DEFAULT_EF_SEARCH,
};

fn strict() -> CheckOptions {
    CheckOptions {
        require_live_links: true,
        check_vectors: true,
    }
}

fn search_recall(
    store: &MemStore<u64>,
    params: &Params,
    data: &[Vec<f32>],
    queries: &[Vec<f32>],
    deleted: &HashSet<usize>,
) -> f64 {
    let truth: Vec<Vec<u64>> = queries
        .iter()
        .map(|q| brute_force(params.metric, data, q, 10, |i| !deleted.contains(&i)))
        .collect();
    let found: Vec<Vec<u64>> = queries
        .iter()
        .map(|q| {
            let r = search(store, params, q, 10, DEFAULT_EF_SEARCH).expect("search");
            assert_eq!(r.len(), 10);
            for (_, id) in &r {
                assert!(!deleted.contains(&idx_of(*id)), "deleted {id} returned");
            }
            r.into_iter().map(|(_, id)| id).collect()
        })
        .collect();
    recall(&truth, &found)
}

#[test]
fn delete_20_percent_then_repair() {
    let (data, queries) = clustered(7, N, QUERIES, DIMS, 50);
    let params = Params::new(DIMS, Metric::L2);
    let (mut store, _) = build_by_insert(&params, &data, 7);
    let entry = store.entry_point().unwrap().expect("entry");

    // 20% at random, including the entry point.
    let mut rng = Rng::new(99);
    let mut deleted: HashSet<usize> = HashSet::new();
    deleted.insert(idx_of(entry.id));
    while deleted.len() < N / 5 {
        deleted.insert(rng.below(N));
    }
    for &i in &deleted {
        store.mark_deleted(id_of(i)).unwrap();
    }
    check(&store, &params, CheckOptions::default())
        .expect("links to deleted are fine before vacuum");

    let before = search_recall(&store, &params, &data, &queries, &deleted);

    // The iterative scan skips them too.
    let mut scan = IterativeScan::new(&store, &params, &queries[0], 40, ScanOrder::Strict).unwrap();
    for _ in 0..500 {
        let (_, id) = scan.next(&store).unwrap().expect("more results");
        assert!(!deleted.contains(&idx_of(id)));
    }

    let mut ids: Vec<u64> = deleted.iter().map(|&i| id_of(i)).collect();
    ids.sort_unstable();
    let t = std::time::Instant::now();
    let report = repair(&mut store, &params, &ids).expect("repair");
    let secs = t.elapsed().as_secs_f64();
    assert!(report.entry_moved);
    assert_eq!(report.removed, deleted.len());
    assert_eq!(store.len(), N - deleted.len());
    let stats = check(&store, &params, strict()).expect("strict check after repair");

    let after = search_recall(&store, &params, &data, &queries, &deleted);
    println!(
        "delete 20%: recall before repair {before:.4}, after {after:.4}; repair {secs:.2}s, {} lists ({} topped up by search); levels {:?}",
        report.lists_repaired, report.searches, stats.levels
    );
    assert!(after >= 0.95, "recall after repair {after}");

    // Inserting after repair still works and is found.
    let v: Vec<f32> = data[0].iter().map(|x| x + 0.01).collect();
    insert_with_level(&mut store, &params, 1 << 40, &v, 1).unwrap();
    let r = search(&store, &params, &v, 1, DEFAULT_EF_SEARCH).unwrap();
    assert_eq!(r[0].1, 1 << 40);
    check(&store, &params, strict()).unwrap();
}

fn small(n: usize, metric: Metric) -> (MemStore<u64>, Params, Vec<Vec<f32>>) {
    let (data, _) = clustered(11, n, 0, 8, 4);
    let params = Params {
        m: 4,
        ef_construction: 16,
        ..Params::new(8, metric)
    };
    let (store, _) = build_by_insert(&params, &data, 11);
    (store, params, data)
}

#[test]
fn insert_does_not_link_to_deleted() {
    let (mut store, params, data) = small(200, Metric::L2);
    let deleted: Vec<u64> = (0..200).step_by(2).map(id_of).collect();
    for &id in &deleted {
        store.mark_deleted(id).unwrap();
    }
    let v: Vec<f32> = data[0].iter().map(|x| x * 1.01).collect();
    insert_with_level(&mut store, &params, 1 << 40, &v, 0).unwrap();
    let mut list = Vec::new();
    store.neighbours(1 << 40, 0, &mut list).unwrap();
    assert!(!list.is_empty());
    assert!(list.iter().all(|id| !deleted.contains(id)));
}

#[test]
fn repair_everything_leaves_an_empty_graph() {
    let (mut store, params, data) = small(100, Metric::Cosine);
    let all: Vec<u64> = (0..data.len()).map(id_of).collect();
    repair(&mut store, &params, &all).unwrap();
    assert!(store.is_empty());
    assert_eq!(store.entry_point().unwrap(), None);
    check(&store, &params, strict()).unwrap();
    assert!(search(&store, &params, &data[0], 5, 10).unwrap().is_empty());
}

#[test]
fn repair_only_the_entry_point() {
    let (mut store, params, data) = small(300, Metric::InnerProduct);
    let entry = store.entry_point().unwrap().unwrap();
    let report = repair(&mut store, &params, &[entry.id]).unwrap();
    assert!(report.entry_moved);
    let new = store.entry_point().unwrap().unwrap();
    assert_ne!(new.id, entry.id);
    check(&store, &params, strict()).unwrap();
    let r = search(&store, &params, &data[5], 10, 40).unwrap();
    assert_eq!(r.len(), 10);
}
