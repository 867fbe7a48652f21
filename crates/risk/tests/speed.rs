//! Rough timing of the hot path, printed in ns/op. Not a benchmark and not run by
//! default: `cargo test --release -p vigil-risk --test speed -- --ignored --nocapture`.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::json;
use vigil_risk::{assess, parse_request};

/// Counts allocations, to report how allocation-light each step is.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations<T>(f: impl FnOnce() -> T) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    black_box(f());
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

fn per_op<T>(n: u32, mut f: impl FnMut() -> T) -> f64 {
    for _ in 0..n / 10 {
        black_box(f());
    }
    let start = Instant::now();
    for _ in 0..n {
        black_box(f());
    }
    start.elapsed().as_nanos() as f64 / f64::from(n)
}

#[test]
#[ignore = "timing only; run with --ignored --nocapture"]
fn assess_speed() {
    let body = json!({
        "product": "Laptop", "amount": 4800.0, "location": "Berlin",
        "time": "2024-03-05T02:30:00Z", "customerProfile": "regular", "onlinePurchase": true,
        "paymentMethod": "Credit Card",
        "shippingAddress": "Unter den Linden 1, 10117 Berlin, Germany",
        "billingAddress": "1600 Amphitheatre Pkwy, Mountain View, CA 94043, USA",
        "customerEmail": "jane.doe@example.com", "customerName": "Jane Doe", "isVPN": true,
        "clientBrowser": "Chrome", "deviceType": "desktop", "ipAddress": "81.2.69.160",
        "deviceFingerprint": "a1b2c3d4", "transactionFrequency": 12, "accountAge": 3,
        "emailDomain": "example.com", "addressMismatch": true, "twoFactorAuth": true,
        "referralSource": "ads", "proxyOrVPN": false, "orderQuantity": 2, "strictness": 50
    });
    let history = common::busy_history();
    let req = parse_request(&body).unwrap();
    let cold = Instant::now();
    let a = assess(&req, &history, Some(*b"GB"));
    println!(
        "first assess (sorts the disposable-domain list once per process): {} us",
        cold.elapsed().as_micros()
    );
    println!("{} reasons, score {}", a.reasons.len(), a.score);

    let n = 200_000;
    let parse_ns = per_op(n, || parse_request(black_box(&body)));
    let assess_ns = per_op(n, || {
        assess(black_box(&req), black_box(&history), Some(*b"GB"))
    });
    let json_ns = per_op(n, || a.to_json("00000000-0000-4000-8000-000000000000"));
    let ids_ns = per_op(n, || black_box(&req).identities());
    let parse_allocs = allocations(|| parse_request(&body));
    let assess_allocs = allocations(|| assess(&req, &history, Some(*b"GB")));
    let json_allocs = allocations(|| a.to_json("00000000-0000-4000-8000-000000000000"));
    println!("parse_request: {parse_ns:.0} ns/op, {parse_allocs} allocations");
    println!("assess:        {assess_ns:.0} ns/op, {assess_allocs} allocations");
    println!("to_json:       {json_ns:.0} ns/op, {json_allocs} allocations");
    println!("identities:    {ids_ns:.0} ns/op");

    let one_email = per_op(2_000, || {
        mailchecker::is_valid(black_box("jane.doe@example.com"))
    });
    println!("mailchecker::is_valid (not used): {one_email:.0} ns/op");
}
