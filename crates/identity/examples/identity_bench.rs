//! `make bench-identity`'s in-process step: writes a 2-megapixel JPEG of a
//! synthetic card (with a camera's EXIF) to the path given, then times on one
//! thread, over the same bytes, decoding alone (the baseline: what any image
//! service pays) and the whole assessment (decode, checks, hash, verdict).
//!
//! cargo run --release -p vigil-identity --features synthetic --example identity_bench -- OUT.jpg [RUNS [WIDTHxHEIGHT]]
//!
//! The photo is 1732 x 1155 (2 megapixels) unless WIDTHxHEIGHT says
//! otherwise (a phone's 12 megapixels: 4032x3024).
//!
//! With `BENCH_PASSPORT=PATH`, it also writes there a photo of the same size
//! of a passport's data page on a desk, its zone in OCR-B (ICAO's specimen),
//! for the SQL steps that time reading the MRZ (this step has no recogniser).

use std::time::Instant;

use vigil_identity::synthetic::{self as s, Scene};
use vigil_identity::{analyse, decode, judge, FaceDetector};

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: identity_bench OUT.jpg [RUNS [WIDTHxHEIGHT]]");
    let runs: usize = args
        .next()
        .map_or(50, |r| r.parse().expect("RUNS is a number"));
    // 1732 x 1155 = 2.0 megapixels, 3:2 as a phone photo.
    let (width, height) = args.next().map_or((1732, 1155), |size| {
        let (w, h) = size.split_once('x').expect("WIDTHxHEIGHT");
        (
            w.parse().expect("WIDTH is a number"),
            h.parse().expect("HEIGHT is a number"),
        )
    });
    let scene = Scene {
        width,
        height,
        ..Scene::default()
    };
    let bytes = s::jpeg(&s::card_in(42, scene), 90, Some(s::camera_exif()));
    std::fs::write(&out, &bytes).expect("writing the image");
    if let Some(path) = std::env::var_os("BENCH_PASSPORT") {
        use vigil_identity::mrz::render;
        let font = render::font();
        let page_width = width * 3 / 4;
        let page = render::document(
            &font,
            render::Kind::Td3,
            render::TD3_SPECIMEN,
            page_width,
            42,
        );
        let mut photo = render::desk(width, height, 42);
        let centre = (width as f32 / 2.0, height as f32 / 2.0);
        render::place(&mut photo, &page, centre, page_width as f32, 1.5);
        let passport = s::jpeg(&photo, 90, Some(s::camera_exif()));
        std::fs::write(path, passport).expect("writing the passport photo");
    }
    let mut detector = FaceDetector::new();
    let time = |f: &mut dyn FnMut()| {
        f(); // warm-up
        let mut ms: Vec<f64> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        (ms[ms.len() / 2], ms[ms.len() * 9 / 10])
    };
    let (decode_p50, decode_p90) = time(&mut || {
        decode::decode(&bytes).expect("decodes");
    });
    let mut codes = Vec::new();
    let (assess_p50, assess_p90) = time(&mut || {
        let analysis = analyse(&bytes, &mut detector).expect("assessed");
        codes = judge(&analysis, None).codes();
    });
    println!(
        "image: {} bytes, {width}x{height} JPEG, reasons {codes:?}",
        bytes.len()
    );
    println!("in-process, one thread, {runs} runs:");
    println!("  decode only   p50 {decode_p50:.1} ms  p90 {decode_p90:.1} ms");
    println!(
        "  assessment    p50 {assess_p50:.1} ms  p90 {assess_p90:.1} ms  ({:.1}x decoding)",
        assess_p50 / decode_p50
    );
}
