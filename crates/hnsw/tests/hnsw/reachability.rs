//! Every element stays linked, and a search for an element's own vector
//! finds it first all but very rarely: the in-memory twin of the end-to-end
//! concurrent-insert test, on the same kind of data (8 well-separated
//! clusters in 16 dimensions, cosine), where a Postgres run once missed 2 of
//! 1,200 self-lookups. Here the misses come without any unlinked element, so
//! they are the beam search's approximation, not a lost link.

use std::collections::HashSet;

use vigil_hnsw::{insert, IterativeScan, LevelRng, MemStore, Metric, Params, ScanOrder};

use crate::common::Rng;

#[test]
fn no_element_is_left_unlinked_and_self_lookups_rarely_miss() {
    const BUILDS: u64 = 10;
    const ROWS: usize = 1200;
    let (mut unlinked, mut misses) = (0, 0);
    for seed in 0..BUILDS {
        let mut r = Rng::new(seed);
        let centres: Vec<Vec<f32>> = (0..8)
            .map(|_| (0..16).map(|_| (r.unit() * 2.0 - 1.0) as f32).collect())
            .collect();
        let data: Vec<Vec<f32>> = (0..ROWS)
            .map(|i| {
                centres[i % 8]
                    .iter()
                    .map(|c| c + ((r.unit() - 0.5) * 0.5) as f32)
                    .collect()
            })
            .collect();
        let params = Params::new(16, Metric::Cosine);
        let mut store = MemStore::<u64>::new();
        let mut levels = LevelRng::new(seed * 7 + 1);
        for (i, v) in data.iter().enumerate() {
            insert(&mut store, &params, i as u64, v, &mut levels).unwrap();
        }
        let linked: HashSet<u64> = (0..ROWS as u64)
            .flat_map(|i| store.element(i).unwrap().neighbours[0].clone())
            .collect();
        unlinked += (0..ROWS as u64).filter(|i| !linked.contains(i)).count();
        for (i, v) in data.iter().enumerate() {
            let mut scan = IterativeScan::new(&store, &params, v, 100, ScanOrder::Strict).unwrap();
            if scan.next(&store).unwrap().map(|(_, id)| id) != Some(i as u64) {
                misses += 1;
            }
        }
    }
    let lookups = BUILDS as usize * ROWS;
    eprintln!("{unlinked} unlinked elements, {misses} of {lookups} self-lookups missed");
    assert_eq!(unlinked, 0);
    assert!(misses * 1000 <= lookups, "{misses} of {lookups}");
}
