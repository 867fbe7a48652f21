//! Exact duplicates: users store the same text twice, and its embedding is
//! then the same vector twice. A copy is at distance 0 from its original, so
//! a neighbour heuristic that prunes every candidate "no closer to the base
//! than to a kept neighbour" let the copy prune every other link of a full
//! list: the pair linked only to each other, and a search that reached it
//! returned 2 results where 10 were asked (found in a 100,000-record vector
//! database, where 1,000 records were stored twice). Lists here must keep
//! links out of every group of copies, and searches must still return `k`
//! and find the copies (all but a few: the search is approximate).

use std::collections::HashSet;

use vigil_hnsw::build::build;
use vigil_hnsw::{insert, search, IterativeScan, LevelRng, MemStore, Metric, Params, ScanOrder};

use crate::common::{brute_force, clustered, id_of, idx_of, recall, with_ids};

const DIMS: usize = 32;

/// 2,000 clustered vectors, then 300 of them again (inserted after all of
/// them, when most lists are full), then one vector 60 times over, more
/// copies than a layer-0 list holds (m is 8: lists of 16).
fn with_copies() -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let (mut data, queries) = clustered(11, 2_000, 100, DIMS, 20);
    for i in 0..300 {
        data.push(data[i * 5].clone());
    }
    for _ in 0..60 {
        data.push(data[7].clone());
    }
    (data, queries)
}

/// Elements from which layer 0's links lead only to exact copies of
/// themselves (or nowhere): a search that enters them cannot leave.
fn trapped(store: &MemStore<u64>, data: &[Vec<f32>]) -> usize {
    (0..data.len())
        .filter(|&i| {
            let mut seen = HashSet::from([i]);
            let mut next = vec![i];
            while let Some(j) = next.pop() {
                for &n in &store.element(id_of(j)).unwrap().neighbours[0] {
                    let n = idx_of(n);
                    if data[n] != data[i] {
                        return false;
                    }
                    if seen.insert(n) {
                        next.push(n);
                    }
                }
            }
            true
        })
        .count()
}

fn params(metric: Metric) -> Params {
    Params {
        m: 8,
        ef_construction: 32,
        ..Params::new(DIMS, metric)
    }
}

fn check(store: &MemStore<u64>, params: &Params, data: &[Vec<f32>], queries: &[Vec<f32>]) {
    assert_eq!(
        trapped(store, data),
        0,
        "elements whose links lead only to their copies"
    );
    // Each stored pair, asked for: 10 results, both copies among them.
    let mut missed = 0;
    for i in (0..300).map(|i| i * 5) {
        let found = search(store, params, &data[i], 10, 40).unwrap();
        assert_eq!(found.len(), 10, "vector {i}: {} of 10 results", found.len());
        let copies = found
            .iter()
            .filter(|(_, id)| data[idx_of(*id)] == data[i])
            .count();
        missed += 2 - copies.min(2);
    }
    // The vector stored 61 times, more than a beam of 32 holds: its copies'
    // lists hold nothing but copies, and each copy is linked from one (a
    // list halved to 8 copies when a 17th came dropped 9 links at once,
    // and left a copy of the inserted L2 graph linked from nowhere). The
    // first 10 results are copies, and a scan that goes on reaches every
    // copy. Relaxed order, to the end: a strict scan skips a copy found
    // after a farther element was returned, and how many it skips moved
    // with the graph a two-thread build happens to make (56 to 61 of the
    // first 200 results under load), where a scan to the end reaches every
    // linked element.
    assert_eq!(unlinked_copies(store, data), 0, "copies no list links to");
    let found = search(store, params, &data[7], 10, 40).unwrap();
    let group = found
        .iter()
        .filter(|(_, id)| data[idx_of(*id)] == data[7])
        .count();
    let mut scan = IterativeScan::new(store, params, &data[7], 40, ScanOrder::Relaxed).unwrap();
    let mut reached = 0;
    while let Some((_, id)) = scan.next(store).unwrap() {
        reached += usize::from(data[idx_of(id)] == data[7]);
    }
    eprintln!(
        "{:?}: {missed} of 600 copies of pairs missed; the vector stored 61 times: \
         {group} of the top 10, {reached} of 61 reached",
        params.metric
    );
    // The search is approximate: a copy may be missed now and then (0 to 4
    // of these 600 in runs of this build), not more.
    assert!(missed <= 6, "{missed} of 600 copies missed");
    assert_eq!(group, 10, "the top 10 of a vector stored 61 times");
    assert_eq!(reached, 61, "copies reached by a scan to the end");
    let truth: Vec<Vec<u64>> = queries
        .iter()
        .map(|q| brute_force(params.metric, data, q, 10, |_| true))
        .collect();
    let found: Vec<Vec<u64>> = queries
        .iter()
        .map(|q| {
            search(store, params, q, 10, 40)
                .unwrap()
                .into_iter()
                .map(|(_, id)| id)
                .collect()
        })
        .collect();
    let r = recall(&truth, &found);
    assert!(r >= 0.95, "recall@10 {r}");
}

#[test]
fn copies_keep_their_links_out_when_inserted() {
    for metric in [Metric::Cosine, Metric::L2] {
        let (data, queries) = with_copies();
        let params = params(metric);
        let mut store = MemStore::<u64>::new();
        let mut levels = LevelRng::new(3);
        for (i, v) in data.iter().enumerate() {
            insert(&mut store, &params, id_of(i), v, &mut levels).unwrap();
        }
        check(&store, &params, &data, &queries);
    }
}

#[test]
fn copies_keep_their_links_out_when_built() {
    for metric in [Metric::Cosine, Metric::L2] {
        let (data, queries) = with_copies();
        let params = params(metric);
        let items = with_ids(&data);
        let graph = build(&params, items, 2).unwrap();
        let mut store = MemStore::<u64>::new();
        graph.load_into(&mut store).unwrap();
        check(&store, &params, &data, &queries);
    }
}

/// Copies no layer-0 list links to, among those of `data[7]`.
fn unlinked_copies(store: &MemStore<u64>, data: &[Vec<f32>]) -> usize {
    let linked: HashSet<usize> = (0..data.len())
        .flat_map(|j| store.element(id_of(j)).unwrap().neighbours[0].clone())
        .map(idx_of)
        .collect();
    (0..data.len())
        .filter(|&g| data[g] == data[7] && !linked.contains(&g))
        .count()
}

#[test]
fn a_vector_stored_hundreds_of_times_keeps_every_copy_linked() {
    // 481 copies, fifteen times a beam of 32: each new copy finds only
    // copies, the well linked ones, and a full list of copies drops one to
    // take it in. Dropping at random left 35 to 37 of them (inserted one at
    // a time) and 3 (built) linked from no list; the new copy now takes
    // over each dropped copy's link.
    let (mut data, _) = clustered(11, 2_000, 100, DIMS, 20);
    for _ in 0..480 {
        data.push(data[7].clone());
    }
    for metric in [Metric::Cosine, Metric::L2] {
        let params = params(metric);
        let mut store = MemStore::<u64>::new();
        let mut levels = LevelRng::new(3);
        for (i, v) in data.iter().enumerate() {
            insert(&mut store, &params, id_of(i), v, &mut levels).unwrap();
        }
        assert_eq!(unlinked_copies(&store, &data), 0, "{metric:?}, inserted");
        let graph = build(&params, with_ids(&data), 2).unwrap();
        let mut built = MemStore::<u64>::new();
        graph.load_into(&mut built).unwrap();
        assert_eq!(unlinked_copies(&built, &data), 0, "{metric:?}, built");
    }
}
