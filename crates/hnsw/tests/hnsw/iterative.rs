//! The iterative scan: everything eventually, in order; and enough rows
//! behind a selective filter.

use std::collections::HashSet;

use crate::common::*;
use vigil_hnsw::{search, GraphStore, IterativeScan, MemStore, Metric, Params, ScanOrder};

/// Elements reachable on layer 0 from the entry point.
fn reachable(store: &MemStore<u64>) -> usize {
    let entry = store.entry_point().unwrap().unwrap();
    let mut seen = HashSet::from([entry.id]);
    let mut stack = vec![entry.id];
    let mut list = Vec::new();
    while let Some(x) = stack.pop() {
        store.neighbours(x, 0, &mut list).unwrap();
        stack.extend(list.iter().filter(|y| seen.insert(**y)));
    }
    seen.len()
}

fn drain(
    store: &MemStore<u64>,
    params: &Params,
    q: &[f32],
    ef: usize,
    order: ScanOrder,
) -> (Vec<(f32, u64)>, usize) {
    let mut scan = IterativeScan::new(store, params, q, ef, order).unwrap();
    let mut out = Vec::new();
    while let Some(r) = scan.next(store).unwrap() {
        out.push(r);
    }
    (out, scan.skipped())
}

#[test]
fn yields_every_element_in_order() {
    let n = 600;
    let (data, queries) = clustered(21, n, 5, 8, 6);
    for metric in [Metric::L2, Metric::Cosine, Metric::InnerProduct] {
        let params = Params::new(8, metric);
        let (store, _) = build_by_insert(&params, &data, 21);
        // With inner product, elements of small norm are nobody's near
        // neighbour and can end up with no incoming links (true of HNSW on
        // inner product in general); with the metrics, all are reachable.
        let reach = reachable(&store);
        if metric != Metric::InnerProduct {
            assert_eq!(reach, n, "{metric:?}");
        }
        println!("{metric:?}: {reach} of {n} reachable on layer 0");
        for q in &queries {
            let (strict, skipped) = drain(&store, &params, q, 10, ScanOrder::Strict);
            let (relaxed, _) = drain(&store, &params, q, 10, ScanOrder::Relaxed);
            for out in [&strict, &relaxed] {
                let ids: HashSet<u64> = out.iter().map(|r| r.1).collect();
                assert_eq!(ids.len(), out.len(), "{metric:?}: no duplicates");
            }
            assert!(
                strict.windows(2).all(|w| w[0].0 <= w[1].0),
                "{metric:?}: order"
            );
            assert_eq!(
                strict.len() + skipped,
                reach,
                "{metric:?}: all accounted for"
            );
            assert_eq!(relaxed.len(), reach, "{metric:?}: relaxed loses nothing");
            if metric == Metric::InnerProduct {
                // Not a metric: a later round may still find something
                // closer than what was returned; rare.
                assert!(skipped * 100 <= reach, "{metric:?}: skipped {skipped}");
            } else {
                assert_eq!(skipped, 0, "{metric:?}");
                assert_eq!(strict, relaxed, "{metric:?}");
            }
            // The first ef results are those of an ordinary search with
            // twice the ef (each round expands twice as far as it returns).
            let (out, _) = drain(&store, &params, q, 10, ScanOrder::Strict);
            let plain = search(&store, &params, q, 10, 20).unwrap();
            assert_eq!(&out[..10], &plain[..]);
        }
    }
}

#[test]
fn selective_filter_still_gets_k() {
    let (data, queries) = clustered(31, N, 50, DIMS, 50);
    let params = Params::new(DIMS, Metric::L2);
    let (store, _) = build_by_insert(&params, &data, 31);
    // Passes 1% of the elements.
    let pass = |i: usize| i % 100 == 37;
    let mut truth = Vec::new();
    let mut found = Vec::new();
    let mut visited = 0;
    for q in &queries {
        let mut scan = IterativeScan::new(&store, &params, q, 40, ScanOrder::Strict).unwrap();
        let mut got = Vec::new();
        let mut last = f32::NEG_INFINITY;
        while got.len() < 10 {
            let (d, id) = scan.next(&store).unwrap().expect("ran out before k");
            assert!(d >= last);
            last = d;
            if pass(idx_of(id)) {
                got.push(id);
            }
        }
        visited += scan.visited();
        found.push(got);
        truth.push(brute_force(params.metric, &data, q, 10, pass));
    }
    let r = recall(&truth, &found);
    println!(
        "1% filter: recall@10 {r:.4}, mean elements visited {}",
        visited / queries.len()
    );
    assert!(r >= 0.9, "filtered recall {r}");
}

/// With the whole first beam returned, the first `2 * ef` rows are exactly
/// what a search with `2 * ef` finds, and the scan still goes on to every
/// element, once each, in order.
#[test]
fn the_whole_first_beam_is_a_search_twice_as_wide() {
    let n = 600;
    let (data, queries) = clustered(23, n, 5, 8, 6);
    let params = Params::new(8, Metric::Cosine);
    let (store, _) = build_by_insert(&params, &data, 23);
    for q in &queries {
        let wide = search(&store, &params, q, 20, 20).unwrap();
        let mut scan = IterativeScan::new(&store, &params, q, 10, ScanOrder::Strict).unwrap();
        scan.return_whole_first_beam();
        let mut out = Vec::new();
        while let Some(r) = scan.next(&store).unwrap() {
            out.push(r);
        }
        assert_eq!(out[..20], wide[..]);
        let ids: HashSet<u64> = out.iter().map(|r| r.1).collect();
        assert_eq!(ids.len(), out.len(), "no duplicates");
        assert_eq!(out.len() + scan.skipped(), reachable(&store));
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0), "in order");
    }
}
