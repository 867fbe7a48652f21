//! `estimate_build_memory` against the real heap peak of a build and its
//! ordering for locality (what `CREATE INDEX` does in memory), measured
//! with a counting allocator (its own test binary, one test, so nothing else
//! allocates meanwhile).

#[path = "hnsw/common.rs"]
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use vigil_hnsw::build::{build, estimate_build_memory, BuildVector, UnitHalves};
use vigil_hnsw::{Metric, Params};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Builds `items` and orders the result, measuring the heap's peak over
/// what was allocated before; `input` bytes of items count too.
fn measured_peak<V: BuildVector>(params: &Params, items: Vec<(u64, V)>, input: usize) -> usize {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut g = build(params, items, 2).unwrap();
    g.order_for_locality(8);
    let peak = PEAK.load(Ordering::Relaxed) - base + input;
    drop(g);
    peak
}

fn check<V: BuildVector>(what: &str, n: usize, dims: usize, peak: usize) {
    let est = estimate_build_memory::<V>(n, dims, 16);
    println!(
        "{what}, n {n} dims {dims}: measured peak {peak} bytes, estimate {est} ({:.2}x)",
        est as f64 / peak as f64
    );
    assert!(est >= peak, "estimate {est} below peak {peak}");
    assert!(est <= 3 * peak, "estimate {est} far above peak {peak}");
}

#[test]
fn estimate_covers_the_peak() {
    for (n, dims) in [(5000usize, 32usize), (2000, 384)] {
        let (data, _) = clustered(51, n, 0, dims, 20);
        // The input is part of what the estimate covers.
        let params = Params::new(dims, Metric::L2);
        let peak = measured_peak(&params, with_ids(&data), n * (dims * 4 + 32));
        check::<Vec<f32>>("f32", n, dims, peak);

        let params = Params::new(dims, Metric::Cosine);
        let halves = with_ids_in_halves(&params, &data);
        let peak = measured_peak(&params, halves, n * (dims * 2 + 32));
        check::<UnitHalves>("unit halves", n, dims, peak);
    }
}
