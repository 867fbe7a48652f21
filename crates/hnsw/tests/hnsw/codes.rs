//! Neighbour codes: a cosine search over a store that keeps them reads
//! fewer vectors for the same recall, and an iterative scan still returns
//! every element.

use std::cell::Cell;
use std::collections::HashSet;

use crate::common::*;
use vigil_hnsw::store::{Code, ElementVisitor};
use vigil_hnsw::{
    build, check, search, CheckOptions, CorruptionKind, Error, GraphStore, IterativeScan, MemError,
    MemStore, Metric, Params, ScanMemory, ScanOrder,
};

/// A [`MemStore`] that counts the vectors a search reads.
struct Counting {
    graph: MemStore<u64>,
    reads: Cell<usize>,
    /// Lends a wrong code for this element's first link.
    stale: Option<u64>,
}

impl GraphStore for Counting {
    type Id = u64;
    type Error = MemError;

    pass_through_to!(graph; insert_element, replace_neighbours, remove_element);

    fn with_elements(&self, ids: &[u64], f: &mut ElementVisitor<'_, u64>) -> Result<(), MemError> {
        self.reads.set(self.reads.get() + ids.len());
        self.graph.with_elements(ids, f)
    }

    fn keeps_codes(&self) -> bool {
        self.graph.keeps_codes()
    }

    fn neighbours_coded(
        &self,
        id: u64,
        out: &mut Vec<u64>,
        codes: &mut Vec<Code>,
    ) -> Result<(), MemError> {
        self.graph.neighbours_coded(id, out, codes)?;
        if let (Some(first), true) = (codes.first_mut(), self.stale == Some(id)) {
            first.0[0] ^= 1;
        }
        Ok(())
    }

    fn element_code(&self, id: u64) -> Result<Option<Code>, MemError> {
        self.graph.element_code(id)
    }
}

/// The same graph in a store without codes and in one with them.
fn stores(data: &[Vec<f32>], params: &Params) -> (Counting, Counting) {
    let graph = build::build(params, with_ids(data), 2).expect("build");
    let mut plain = MemStore::new();
    let mut coded = MemStore::with_codes();
    graph.load_into(&mut plain).expect("load");
    graph.load_into(&mut coded).expect("load");
    let wrap = |graph| Counting {
        graph,
        reads: Cell::new(0),
        stale: None,
    };
    (wrap(plain), wrap(coded))
}

/// Recall@10 and vectors read a query at beam `ef`.
fn run(
    store: &Counting,
    params: &Params,
    data: &[Vec<f32>],
    queries: &[Vec<f32>],
    ef: usize,
) -> (f64, f64) {
    store.reads.set(0);
    let (mut truth, mut found) = (Vec::new(), Vec::new());
    for q in queries {
        truth.push(brute_force(params.metric, data, q, 10, |_| true));
        let got = search(store, params, q, 10, ef).expect("search");
        found.push(got.into_iter().map(|r| r.1).collect::<Vec<_>>());
    }
    (
        recall(&truth, &found),
        store.reads.get() as f64 / queries.len() as f64,
    )
}

#[test]
fn codes_buy_the_same_recall_for_fewer_reads() {
    let (data, queries) = spread_clusters(41, N, QUERIES, DIMS, 50, 1.0);
    let params = Params::new(DIMS, Metric::Cosine);
    let (plain, coded) = stores(&data, &params);
    let (want, plain_reads) = run(&plain, &params, &data, &queries, 24);
    let mut matched = None;
    for ef in [24, 32, 40, 48, 64] {
        let (r, reads) = run(&coded, &params, &data, &queries, ef);
        println!("codes ef {ef}: recall {r:.4}, {reads:.0} reads; without codes ef 24: {want:.4}, {plain_reads:.0}");
        if r >= want {
            matched = Some(reads);
            break;
        }
    }
    let reads = matched.expect("codes reach the recall of ef 24 without them");
    assert!(
        reads < 0.85 * plain_reads,
        "{reads:.0} reads with codes against {plain_reads:.0} without"
    );
    // Not cosine: codes are not used, and the search is the plain one.
    let l2 = Params::new(DIMS, Metric::L2);
    let (plain, coded) = stores(&data, &l2);
    assert_eq!(
        run(&plain, &l2, &data, &queries[..20], 40),
        run(&coded, &l2, &data, &queries[..20], 40)
    );
}

#[test]
fn an_iterative_scan_with_codes_still_returns_everything_in_order() {
    // 200 dimensions: 128 of the transform's 256 rows, so estimates err
    // and neighbours are passed over, to be read in a later round.
    let n = 2_000;
    let (data, queries) = spread_clusters(43, n, 5, 200, 8, 1.0);
    let params = Params::new(200, Metric::Cosine);
    let (plain, coded) = stores(&data, &params);
    let first_ten = |store: &Counting, q: &[f32]| {
        store.reads.set(0);
        let mut scan = IterativeScan::new(store, &params, q, 10, ScanOrder::Strict).unwrap();
        let ten: Vec<_> = (0..10)
            .map(|_| scan.next(store).unwrap().unwrap())
            .collect();
        (ten, store.reads.get())
    };
    let (mut plain_reads, mut coded_reads) = (0, 0);
    for q in &queries {
        let (ten, reads) = first_ten(&coded, q);
        coded_reads += reads;
        plain_reads += first_ten(&plain, q).1;
        // The first results are what a search with twice the beam finds.
        assert_eq!(ten, search(&coded, &params, q, 10, 20).unwrap());

        let mut scan = IterativeScan::new(&coded, &params, q, 10, ScanOrder::Relaxed).unwrap();
        let mut seen = HashSet::new();
        let mut last = f32::NEG_INFINITY;
        let mut out_of_order = 0;
        while let Some((d, id)) = scan.next(&coded).unwrap() {
            assert!(seen.insert(id), "returned twice: {id}");
            out_of_order += usize::from(d < last);
            last = last.max(d);
        }
        assert_eq!(seen.len(), n, "every element, once");
        // A neighbour passed over in one round and read in the next may
        // be nearer than what the first returned: rare.
        assert!(out_of_order * 50 <= n, "{out_of_order} out of order");
        let mut scan = IterativeScan::new(&coded, &params, q, 10, ScanOrder::Strict).unwrap();
        let mut strict = Vec::new();
        while let Some(r) = scan.next(&coded).unwrap() {
            strict.push(r);
        }
        assert!(strict.windows(2).all(|w| w[0].0 <= w[1].0), "order");
        assert_eq!(strict.len() + scan.skipped(), n, "all accounted for");
    }
    // Codes did pass neighbours over: the first round read fewer vectors.
    assert!(
        coded_reads < plain_reads,
        "{coded_reads} reads with codes, {plain_reads} without"
    );
}

#[test]
fn a_scan_in_the_memory_of_another_returns_what_a_fresh_one_does() {
    // Scans of different widths and orders, stopped early or run through
    // several rounds, each in the memory the last one left: the visited
    // set, heaps, passed-over neighbours and the coded query's tables
    // must start empty, whatever the last scan left in them.
    let (data, queries) = spread_clusters(53, 1_000, 12, 200, 8, 1.0);
    let params = Params::new(200, Metric::Cosine);
    let (_, coded) = stores(&data, &params);
    let take = |scan: &mut IterativeScan<u64>, n: usize| {
        let mut out = Vec::new();
        while out.len() < n {
            match scan.next(&coded).unwrap() {
                Some(r) => out.push(r),
                None => break,
            }
        }
        out
    };
    let plans = [
        (10, ScanOrder::Strict, 25),
        (40, ScanOrder::Relaxed, 1_000),
        (5, ScanOrder::Strict, 3),
    ];
    let mut memory = ScanMemory::default();
    for (i, q) in queries.iter().enumerate() {
        let (ef, order, n) = plans[i % plans.len()];
        let fresh = take(
            &mut IterativeScan::new(&coded, &params, q, ef, order).unwrap(),
            n,
        );
        let mut reused = IterativeScan::reusing(memory, &coded, &params, q, ef, order).unwrap();
        assert_eq!(take(&mut reused, n), fresh, "query {i}");
        memory = reused.into_memory();
    }
    assert!(memory.bytes() > 0, "the memory is kept");
}

#[test]
fn the_check_finds_a_link_whose_code_is_not_its_elements() {
    let (data, _) = spread_clusters(47, 300, 0, 16, 4, 1.0);
    let params = Params::new(16, Metric::Cosine);
    let (_, mut coded) = stores(&data, &params);
    assert!(check(&coded, &params, CheckOptions::default()).is_ok());
    coded.stale = Some(id_of(7));
    let err = check(&coded, &params, CheckOptions::default()).unwrap_err();
    let Error::Corrupt(c) = err else {
        panic!("{err}")
    };
    assert_eq!((c.element, c.layer), (Some(id_of(7)), Some(0)));
    assert!(matches!(
        c.kind,
        CorruptionKind::WrongCode { target: Some(_) }
    ));
}
