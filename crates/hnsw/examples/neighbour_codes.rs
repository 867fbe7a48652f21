//! How many exact distances (in the index: element pages read) could short
//! codes of the neighbours save a search at equal recall? A measurement for
//! the design of neighbour codes in `vigil_hnsw` (docs/hnsw.md, "Neighbour codes",
//! measured in stop 37), not part of the index.
//!
//! It builds the graph with this crate's bulk build (cosine, m 16,
//! ef_construction 64), then runs its own beam search twice over: as the
//! index searches (every unvisited neighbour of an expanded element scored
//! exactly), and with each element's code (`bits` random hyperplanes, sign
//! bits, SimHash) at hand, where a neighbour whose estimated distance
//! (1 - cos(pi * hamming / bits)) is farther than the beam's worst by more
//! than `delta` is passed over without reading it (it may be reached again
//! from another element). With `asym` the query is not reduced to bits: the
//! estimate is the mean of its projections signed by the element's bits
//! (sqrt(pi / 2) times it estimates the cosine for Gaussian hyperplanes), as
//! RaBitQ estimates from one-bit codes and a full query. Prints recall@10
//! against the exact top 10 and the exact and code distances a query took,
//! for ef 20, 40, 80 and 120.
//!
//! The rows and queries of `make bench-hnsw`, exported from its cluster
//! (`psql` writes as the server's user, so into a directory it may write):
//!
//! ```text
//! mkdir -m 777 /tmp/codes
//! scripts/pg-cluster.sh up .vigil/bench-hnsw 28818
//! scripts/pg-cluster.sh psql .vigil/bench-hnsw -c "\copy (SELECT id, array_to_string(v, ' ') FROM bench.real_items ORDER BY id) TO '/tmp/codes/items.txt'"
//! scripts/pg-cluster.sh psql .vigil/bench-hnsw -c "\copy (SELECT id, array_to_string(v, ' ') FROM bench.real_queries ORDER BY id) TO '/tmp/codes/queries.txt'"
//! cargo run --release -p vigil-hnsw --example neighbour_codes -- \
//!     /tmp/codes/items.txt /tmp/codes/queries.txt 0,128,256 0,0.05 [asym]
//! ```
//!
//! (bits 0: no codes, the index's search.)

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet};

use vigil_hnsw::distance::{dot, normalize};
use vigil_hnsw::{build, Metric, Params};

/// `id<TAB>x1 x2 ...` lines, each vector scaled to unit length.
fn load(path: &str) -> Vec<(u32, Vec<f32>)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|line| {
            let (id, v) = line.split_once('\t').expect("id<TAB>vector");
            let mut v: Vec<f32> = v.split(' ').map(|x| x.parse().expect("a number")).collect();
            normalize(&mut v);
            (id.parse().expect("an id"), v)
        })
        .collect()
}

fn list<T: std::str::FromStr>(arg: Option<String>, default: &str) -> Vec<T> {
    arg.as_deref()
        .unwrap_or(default)
        .split(',')
        .map(|x| x.parse().ok().expect("a comma-separated list"))
        .collect()
}

/// A distance and an element, ordered by distance.
#[derive(Clone, Copy, PartialEq)]
struct Scored(f32, u32);

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// Sign bits of a vector against `bits` random hyperplanes.
struct Codes {
    bits: usize,
    planes: Vec<Vec<f32>>,
    codes: Vec<Vec<u64>>,
}

impl Codes {
    fn new(bits: usize, vectors: &[Vec<f32>]) -> Codes {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f32 / (1u64 << 53) as f32 - 0.5
        };
        // Sums of four uniforms: near enough to Gaussian for hyperplanes.
        let planes = (0..bits)
            .map(|_| {
                (0..vectors[0].len())
                    .map(|_| (0..4).map(|_| uniform()).sum())
                    .collect()
            })
            .collect();
        let mut codes = Codes {
            bits,
            planes,
            codes: Vec::new(),
        };
        codes.codes = vectors.iter().map(|v| codes.code(v)).collect();
        codes
    }

    fn code(&self, v: &[f32]) -> Vec<u64> {
        let mut words = vec![0u64; self.bits.div_ceil(64)];
        for (i, plane) in self.planes.iter().enumerate() {
            if dot(plane, v) >= 0.0 {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        words
    }

    /// The query's projections on the hyperplanes, each scaled as if its
    /// entries had unit variance, for [`Codes::estimate_asymmetric`].
    fn project(&self, q: &[f32]) -> Vec<f32> {
        self.planes
            .iter()
            .map(|p| dot(p, q) / dot(p, p).sqrt() * (p.len() as f32).sqrt())
            .collect()
    }

    fn estimate_asymmetric(&self, projected: &[f32], element: u32) -> f32 {
        let code = &self.codes[element as usize];
        let signed: f32 = projected
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                if code[i / 64] >> (i % 64) & 1 == 1 {
                    x
                } else {
                    -x
                }
            })
            .sum();
        1.0 - signed / self.bits as f32 * (std::f32::consts::PI / 2.0).sqrt()
    }

    fn estimate(&self, query: &[u64], element: u32) -> f32 {
        let hamming: u32 = query
            .iter()
            .zip(&self.codes[element as usize])
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        1.0 - (std::f32::consts::PI * hamming as f32 / self.bits as f32).cos()
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let items = load(&args.next().expect("items file"));
    let queries = load(&args.next().expect("queries file"));
    let bit_counts: Vec<usize> = list(args.next(), "0,128,256");
    let deltas: Vec<f32> = list(args.next(), "0,0.05");
    let asymmetric = args.next().as_deref() == Some("asym");
    // Elements are numbered by position; the file's ids only order them.
    let vectors: Vec<Vec<f32>> = items.into_iter().map(|(_, v)| v).collect();
    let n = vectors.len();
    let params = Params {
        dims: vectors[0].len(),
        metric: Metric::Cosine,
        m: 16,
        ef_construction: 64,
    };
    let graph = build::build(
        &params,
        (0..n as u32)
            .map(|i| (i, vectors[i as usize].clone()))
            .collect(),
        2,
    )
    .expect("the build");
    let mut at = vec![0usize; n];
    for (position, element) in graph.elements.iter().enumerate() {
        at[element.id as usize] = position;
    }
    let neighbours = |id: u32, layer: usize| &graph.elements[at[id as usize]].neighbours[layer];
    let entry = graph.entry.expect("a graph");
    let distance = |q: &[f32], id: u32| 1.0 - dot(q, &vectors[id as usize]);
    let truth: Vec<HashSet<u32>> = queries
        .iter()
        .map(|(_, q)| {
            let mut all: Vec<Scored> = (0..n as u32).map(|i| Scored(distance(q, i), i)).collect();
            all.select_nth_unstable(10);
            all[..10].iter().map(|s| s.1).collect()
        })
        .collect();
    for &bits in &bit_counts {
        let codes = (bits > 0).then(|| Codes::new(bits, &vectors));
        let deltas = if bits > 0 { deltas.clone() } else { vec![0.0] };
        for delta in deltas {
            for ef in [20usize, 40, 80, 120] {
                let (mut exact, mut estimated, mut found) = (0u64, 0u64, 0usize);
                for ((_, q), wanted) in queries.iter().zip(&truth) {
                    let query_code = codes.as_ref().map(|c| c.code(q));
                    let projected = codes.as_ref().map(|c| c.project(q));
                    let (mut at_id, mut at_distance) = (entry.id, distance(q, entry.id));
                    exact += 1;
                    for layer in (1..=entry.level).rev() {
                        let mut moved = true;
                        while moved {
                            moved = false;
                            for &x in neighbours(at_id, layer) {
                                let d = distance(q, x);
                                exact += 1;
                                if d < at_distance {
                                    (at_id, at_distance, moved) = (x, d, true);
                                }
                            }
                        }
                    }
                    let mut visited = HashSet::from([at_id]);
                    let mut candidates = BinaryHeap::from([Reverse(Scored(at_distance, at_id))]);
                    let mut beam = BinaryHeap::from([Scored(at_distance, at_id)]);
                    while let Some(Reverse(Scored(d, c))) = candidates.pop() {
                        let worst = beam.peek().map_or(f32::INFINITY, |s| s.0);
                        if beam.len() >= ef && d > worst {
                            break;
                        }
                        for &x in neighbours(c, 0) {
                            if visited.contains(&x) {
                                continue;
                            }
                            let worst = beam.peek().map_or(f32::INFINITY, |s| s.0);
                            if let (Some(codes), Some(query_code), Some(projected), true) =
                                (&codes, &query_code, &projected, beam.len() >= ef)
                            {
                                estimated += 1;
                                let estimate = if asymmetric {
                                    codes.estimate_asymmetric(projected, x)
                                } else {
                                    codes.estimate(query_code, x)
                                };
                                if estimate > worst + delta {
                                    continue;
                                }
                            }
                            visited.insert(x);
                            let dx = distance(q, x);
                            exact += 1;
                            if beam.len() < ef || dx < worst {
                                candidates.push(Reverse(Scored(dx, x)));
                                beam.push(Scored(dx, x));
                                if beam.len() > ef {
                                    beam.pop();
                                }
                            }
                        }
                    }
                    let mut best = beam.into_vec();
                    best.sort();
                    found += best
                        .iter()
                        .take(10)
                        .filter(|s| wanted.contains(&s.1))
                        .count();
                }
                let nq = queries.len() as f64;
                println!(
                    "bits {bits:3}{} delta {delta:.2} ef {ef:3}: recall@10 {:.4}, exact distances a query {:.0}, code distances {:.0}",
                    if asymmetric { " asym" } else { "" },
                    found as f64 / (10.0 * nq),
                    exact as f64 / nq,
                    estimated as f64 / nq
                );
            }
        }
    }
}
