//! Bounded work for any image size (issue 60): a 5x12000 PNG of 266 bytes
//! once made the face search's working copy 426 x 5.1 million pixels and took
//! a backend to 8.6 GB. Random sizes from 1 to the largest side, each within
//! or past the limits, go through the whole analysis; the heap's peak (a
//! counting allocator: its own test binary, one test, so nothing else
//! allocates meanwhile) stays within the per-assessment budget, and an
//! image refused by its header costs next to nothing. Then the host's
//! interrupt stops an analysis (in this binary: the check is the process's).

use peak_alloc::PeakAlloc;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use vigil_identity::decode::{self, DecodeError, MAX_PIXELS, MAX_SIDE};
use vigil_identity::{analyse, FaceDetector};

#[global_allocator]
static HEAP: PeakAlloc = PeakAlloc;

/// The memory one assessment may take, as docs/identity.md states it
/// (384 MiB a turn of the sidecar's identity budget), less the recogniser's
/// share (no MRZ is read here).
const BUDGET: usize = 384 << 20;
/// What a refusal from the header may cost: the error and its message.
const REFUSAL: usize = 1 << 20;

/// A PNG of `width` x `height`: a light page with a darker card on it,
/// so the document search and the checks have edges to work on.
fn page(width: u32, height: u32) -> Vec<u8> {
    let (x0, y0, x1, y1) = (width / 5, height / 5, width * 4 / 5, height * 4 / 5);
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        if (x0..x1).contains(&x) && (y0..y1).contains(&y) {
            image::Rgb([70, 90, 140])
        } else {
            image::Rgb([235, 235, 230])
        }
    });
    let mut png = Vec::new();
    image::DynamicImage::ImageRgb8(image)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    png
}

/// The heap's peak while `work` runs, over what was held before it.
fn peak_of<T>(work: impl FnOnce() -> T) -> (T, usize) {
    let base = HEAP.current_usage();
    HEAP.reset_peak_usage();
    let out = work();
    (out, HEAP.peak_usage().saturating_sub(base))
}

#[test]
fn any_size_is_analysed_or_refused_within_the_budget() {
    let faces = std::cell::RefCell::new(FaceDetector::new());
    let mut runner = TestRunner::new(Config {
        cases: 40,
        failure_persistence: None,
        ..Config::default()
    });
    let sides = (1..=MAX_SIDE, 1..=MAX_SIDE);
    runner
        .run(&sides, |(width, height)| {
            let pixels = u64::from(width) * u64::from(height);
            if pixels > MAX_PIXELS || decode::out_of_proportion(width, height) {
                // Refused from the header: its few hundred bytes are a
                // real PNG only where they fit in memory here.
                let png = if pixels <= MAX_PIXELS {
                    page(width, height)
                } else {
                    header(width, height)
                };
                let (result, peak) = peak_of(|| analyse(&png, &mut faces.borrow_mut()).map(|_| ()));
                prop_assert!(
                    matches!(
                        result,
                        Err(DecodeError::OutOfProportion { .. } | DecodeError::TooManyPixels { .. })
                    ),
                    "{width}x{height}: {result:?}"
                );
                prop_assert!(
                    peak <= REFUSAL,
                    "{width}x{height} refused with a peak of {peak} bytes"
                );
            } else {
                let png = page(width, height);
                let (result, peak) = peak_of(|| analyse(&png, &mut faces.borrow_mut()).map(|_| ()));
                prop_assert!(result.is_ok(), "{width}x{height}: {result:?}");
                println!(
                    "{width}x{height}: peak {} MiB, {:.1} bytes a pixel",
                    peak >> 20,
                    peak as f64 / pixels as f64
                );
                prop_assert!(
                    peak <= BUDGET,
                    "{width}x{height}: a peak of {} MiB",
                    peak >> 20
                );
            }
            Ok(())
        })
        .unwrap();
    // The sizes issue 60 found, whatever the draw.
    for (width, height) in [
        (5, 12_000),
        (100, 12_000),
        (300, 6000),
        (1, 1),
        (3000, 12_000),
    ] {
        let png = page(width, height);
        let (result, peak) =
            peak_of(|| analyse(&png, &mut faces.borrow_mut()).map(|a| (a.width, a.height)));
        println!("{width}x{height}: {result:?}, peak {} KiB", peak >> 10);
        match result {
            Ok(_) => assert!(!decode::out_of_proportion(width, height) && peak <= BUDGET),
            Err(DecodeError::OutOfProportion { .. }) => assert!(peak <= REFUSAL, "{peak}"),
            Err(e) => panic!("{width}x{height}: {e:?}"),
        }
    }

    // The host's check: asked to stop, the analysis gives up; else it runs.
    vigil_identity::interrupt::set_check(stop_asked);
    let png = page(4000, 3000);
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
    let stopped = analyse(&png, &mut faces.borrow_mut()).map(|_| ());
    assert_eq!(stopped, Err(DecodeError::Interrupted));
    STOP.store(false, std::sync::atomic::Ordering::Relaxed);
    assert!(analyse(&png, &mut faces.borrow_mut()).is_ok());
}

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn stop_asked() -> bool {
    STOP.load(std::sync::atomic::Ordering::Relaxed)
}

/// A PNG's signature, header chunk claiming `width` x `height` and an empty
/// data chunk (the decoder reads up to it before it gives the size): no pixels.
fn header(width: u32, height: u32) -> Vec<u8> {
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    writer.write_chunk(png::chunk::IDAT, &[]).unwrap();
    drop(writer);
    png
}
