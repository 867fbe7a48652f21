//! The bulk build's speed and graph quality, without Postgres:
//! `cargo run --release -p vigil-hnsw --example build_speed [N] [THREADS]`
//! (defaults 30,000 and 2). Builds a cosine graph (m 16, ef_construction 64)
//! over N 384-dim vectors around 200 random centres, then prints the build
//! time and recall@10 at ef_search 40 over 200 queries from the same mixture
//! against brute force.

use std::time::Instant;

use vigil_hnsw::build::build;
use vigil_hnsw::{search, MemStore, Metric, Params};

const DIMS: usize = 384;
const CENTRES: usize = 200;
const QUERIES: usize = 200;

/// Uniform in [0, 1): splitmix64, so every run sees the same data.
struct Uniform(u64);

impl Uniform {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(30_000);
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let mut rng = Uniform(1);
    let centres: Vec<Vec<f32>> = (0..CENTRES)
        .map(|_| (0..DIMS).map(|_| rng.next() - 0.5).collect())
        .collect();
    let point = |rng: &mut Uniform| -> Vec<f32> {
        let c = &centres[(rng.next() * CENTRES as f32) as usize % CENTRES];
        c.iter().map(|x| x + 0.15 * (rng.next() - 0.5)).collect()
    };
    let data: Vec<Vec<f32>> = (0..n).map(|_| point(&mut rng)).collect();
    let queries: Vec<Vec<f32>> = (0..QUERIES).map(|_| point(&mut rng)).collect();

    let params = Params::new(DIMS, Metric::Cosine);
    let items = data
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, v)| (i as u64, v))
        .collect();
    let t = Instant::now();
    let graph = build(&params, items, threads).expect("build");
    let secs = t.elapsed().as_secs_f64();
    let mut store = MemStore::new();
    graph.load_into(&mut store).expect("load");

    let mut hits = 0;
    for q in &queries {
        let mut exact: Vec<(f32, u64)> = data
            .iter()
            .enumerate()
            .map(|(i, v)| (Metric::Cosine.distance(q, v), i as u64))
            .collect();
        exact.sort_by(|a, b| a.0.total_cmp(&b.0));
        let truth: Vec<u64> = exact[..10].iter().map(|x| x.1).collect();
        let found = search(&store, &params, q, 10, 40).expect("search");
        hits += found.iter().filter(|x| truth.contains(&x.1)).count();
    }
    let recall = hits as f64 / (10 * QUERIES) as f64;
    println!(
        "{n} vectors, {threads} threads: build {secs:.2} s, recall@10 at ef_search 40 {recall:.4}"
    );
}
