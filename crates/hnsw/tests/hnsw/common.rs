//! Shared test fixtures: clustered data, brute force, recall.
#![allow(dead_code)]

use std::collections::HashSet;
use std::time::Instant;

use vigil_hnsw::{insert, LevelRng, MemStore, Metric, Params};

/// Deterministic splitmix64 stream with Gaussian samples (Box-Muller).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    pub fn gauss(&mut self) -> f32 {
        let (u, v) = (self.unit(), self.unit());
        ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

pub const DIMS: usize = 64;
pub const N: usize = 10_000;
pub const QUERIES: usize = 200;

/// `n` points around `clusters` Gaussian centres, plus `q` queries drawn
/// from the same mixture (not in the set).
pub fn clustered(
    seed: u64,
    n: usize,
    q: usize,
    dims: usize,
    clusters: usize,
) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    spread_clusters(seed, n, q, dims, clusters, 0.35)
}

/// As [`clustered`], each point `spread` standard deviations from its
/// centre in each coordinate (0.35 there; near 1, points of a cluster are
/// about as far from each other as sentence embeddings of one topic are).
pub fn spread_clusters(
    seed: u64,
    n: usize,
    q: usize,
    dims: usize,
    clusters: usize,
    spread: f32,
) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let mut rng = Rng::new(seed);
    let centres: Vec<Vec<f32>> = (0..clusters)
        .map(|_| (0..dims).map(|_| rng.gauss()).collect())
        .collect();
    let point = |rng: &mut Rng| -> Vec<f32> {
        let c = &centres[rng.below(clusters)];
        c.iter().map(|x| x + spread * rng.gauss()).collect()
    };
    let data = (0..n).map(|_| point(&mut rng)).collect();
    let queries = (0..q).map(|_| point(&mut rng)).collect();
    (data, queries)
}

/// `data` as build input, the `i`th vector under [`id_of`]`(i)`.
pub fn with_ids(data: &[Vec<f32>]) -> Vec<(u64, Vec<f32>)> {
    data.iter()
        .enumerate()
        .map(|(i, v)| (id_of(i), v.clone()))
        .collect()
}

/// `data` as build input in unit halves (cosine `params`), as [`with_ids`].
pub fn with_ids_in_halves(
    params: &vigil_hnsw::Params,
    data: &[Vec<f32>],
) -> Vec<(u64, vigil_hnsw::build::UnitHalves)> {
    data.iter()
        .enumerate()
        .map(|(i, v)| {
            (
                id_of(i),
                vigil_hnsw::build::UnitHalves::of::<u64>(params, v).unwrap(),
            )
        })
        .collect()
}

/// Sparse, non-dense ids, as slot addresses would be.
pub fn id_of(i: usize) -> u64 {
    ((i as u64 / 100) << 16) | (i as u64 % 100 + 1)
}

/// Exact top-k ids by brute force among `keep` elements.
pub fn brute_force(
    metric: Metric,
    data: &[Vec<f32>],
    query: &[f32],
    k: usize,
    keep: impl Fn(usize) -> bool,
) -> Vec<u64> {
    let mut all: Vec<(f32, usize)> = data
        .iter()
        .enumerate()
        .filter(|(i, _)| keep(*i))
        .map(|(i, v)| (metric.distance(query, v), i))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.into_iter().take(k).map(|(_, i)| id_of(i)).collect()
}

/// Mean recall@k of `found` against `truth`.
pub fn recall(truth: &[Vec<u64>], found: &[Vec<u64>]) -> f64 {
    let mut hits = 0usize;
    let mut total = 0usize;
    for (t, f) in truth.iter().zip(found) {
        let f: HashSet<u64> = f.iter().copied().collect();
        hits += t.iter().filter(|x| f.contains(x)).count();
        total += t.len();
    }
    hits as f64 / total as f64
}

/// Builds a store with our own insert path; returns it and seconds taken.
pub fn build_by_insert(params: &Params, data: &[Vec<f32>], seed: u64) -> (MemStore<u64>, f64) {
    let t = Instant::now();
    let mut store = MemStore::new();
    let mut rng = LevelRng::new(seed);
    for (i, v) in data.iter().enumerate() {
        insert(&mut store, params, id_of(i), v, &mut rng).expect("insert");
    }
    (store, t.elapsed().as_secs_f64())
}

/// Inverse of [`id_of`].
pub fn idx_of(id: u64) -> usize {
    (id >> 16) as usize * 100 + (id & 0xffff) as usize - 1
}

/// Inside `impl GraphStore for W`, where `W` wraps a `MemStore<u64>` in the
/// field named here, the methods a test wrapper passes through unchanged:
/// the reads other than `with_elements`, and `set_neighbours`,
/// `mark_deleted`, `set_entry_point`; after a `;`, any of `insert_element`,
/// `replace_neighbours` and `remove_element` the wrapper does not change.
/// The wrapper writes the rest itself.
#[allow(unused_macros)]
macro_rules! pass_through_to {
    ($inner:ident $(; $($also:ident),+)?) => {
        $($(crate::common::pass_through_to!(@ $inner $also);)+)?

        fn entry_point(&self) -> Result<Option<vigil_hnsw::EntryPoint<u64>>, vigil_hnsw::MemError> {
            self.$inner.entry_point()
        }

        fn with_element<R>(
            &self,
            id: u64,
            f: impl FnOnce(vigil_hnsw::ElementMeta, &[f32]) -> R,
        ) -> Result<R, vigil_hnsw::MemError> {
            self.$inner.with_element(id, f)
        }

        fn neighbours(
            &self,
            id: u64,
            layer: usize,
            out: &mut Vec<u64>,
        ) -> Result<(), vigil_hnsw::MemError> {
            self.$inner.neighbours(id, layer, out)
        }

        fn for_each_element(
            &self,
            f: &mut dyn FnMut(u64, vigil_hnsw::ElementMeta),
        ) -> Result<(), vigil_hnsw::MemError> {
            self.$inner.for_each_element(f)
        }

        fn set_neighbours(
            &mut self,
            id: u64,
            layer: usize,
            list: &[u64],
        ) -> Result<(), vigil_hnsw::MemError> {
            self.$inner.set_neighbours(id, layer, list)
        }

        fn mark_deleted(&mut self, id: u64) -> Result<(), vigil_hnsw::MemError> {
            self.$inner.mark_deleted(id)
        }

        fn set_entry_point(
            &mut self,
            e: Option<vigil_hnsw::EntryPoint<u64>>,
        ) -> Result<(), vigil_hnsw::MemError> {
            self.$inner.set_entry_point(e)
        }
    };
    (@ $inner:ident insert_element) => {
        fn insert_element(
            &mut self,
            id: u64,
            level: usize,
            vector: &[f32],
            neighbours: &[Vec<u64>],
        ) -> Result<(), vigil_hnsw::MemError> {
            self.$inner.insert_element(id, level, vector, neighbours)
        }
    };
    (@ $inner:ident replace_neighbours) => {
        fn replace_neighbours(
            &mut self,
            id: u64,
            layer: usize,
            expected: &[u64],
            new: &[u64],
        ) -> Result<bool, vigil_hnsw::MemError> {
            self.$inner.replace_neighbours(id, layer, expected, new)
        }
    };
    (@ $inner:ident remove_element) => {
        fn remove_element(&mut self, id: u64) -> Result<(), vigil_hnsw::MemError> {
            self.$inner.remove_element(id)
        }
    };
}
#[allow(unused_imports)]
pub(crate) use pass_through_to;
