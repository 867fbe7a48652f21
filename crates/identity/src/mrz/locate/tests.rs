//! Zones drawn in OCR-B on pages and cards, placed tilted or upside down on
//! a desk; and noise and absurd outlines, which give nothing and never panic.

use super::cut::otsu;
use super::*;
use crate::mrz::render::{self, Kind};

fn quad(corners: [(f64, f64); 4]) -> Quad {
    Quad {
        corners,
        frame_share: 0.5,
        aspect: 1.42,
        rectangularity: 1.0,
        framing: crate::document::Framing::Background,
    }
}

/// Rows of `line` holding ink over its left and right quarters: a level
/// line has them at the same height.
fn ink_rows(line: &GrayImage, from: u32, to: u32) -> (u32, u32) {
    let threshold = otsu(line.as_raw());
    let rows: Vec<u32> = (0..line.height())
        .filter(|&y| {
            (from..to)
                .filter(|&x| line.get_pixel(x, y).0[0] <= threshold)
                .count()
                > 1
        })
        .collect();
    (
        rows.first().copied().unwrap_or(0),
        rows.last().copied().unwrap_or(0),
    )
}

fn assert_lines(zone: &Zone, count: usize, chars: usize, what: &str) {
    assert_eq!(zone.lines.len(), count, "{what}: lines");
    for (i, line) in zone.lines.iter().enumerate() {
        assert_eq!(line.height(), LINE_HEIGHT, "{what}: line {i}");
        // Glyphs, roughly: the chevrons and most characters stand apart.
        let runs = render::ink_runs(line);
        assert!(
            runs + 6 >= chars && runs <= chars + 2,
            "{what}: line {i}: {runs} ink runs for {chars} characters"
        );
        let quarter = line.width() / 4;
        let (l, r) = (
            ink_rows(line, 0, quarter),
            ink_rows(line, line.width() - quarter, line.width()),
        );
        assert!(
            l.0.abs_diff(r.0) <= 2 && l.1.abs_diff(r.1) <= 2,
            "{what}: line {i} not level: {l:?} {r:?}"
        );
    }
}

#[test]
fn a_passport_page_filling_the_frame_gives_two_level_lines() {
    let font = render::font();
    let page = render::document(&font, Kind::Td3, render::TD3_SPECIMEN, 1200, 1);
    let zone = locate(&render::jpeg(&page, 85), None).expect("zone");
    assert!(!zone.upside_down);
    assert_lines(&zone, 2, 44, "TD3 crop");
    // 2.4 mm characters on a page 1,200 pixels for 125 mm.
    assert!(
        (zone.char_height - 23.0).abs() < 4.0,
        "{}",
        zone.char_height
    );
}

#[test]
fn a_card_on_a_desk_tilted_gives_three_lines_with_or_without_its_outline() {
    let font = render::font();
    let card = render::document(&font, Kind::Td1, render::TD1_SPECIMEN, 1000, 2);
    let mut scene = render::desk(1600, 1200, 2);
    let corners = render::place(&mut scene, &card, (800.0, 620.0), 1100.0, 4.0);
    let scene = render::jpeg(&scene, 85);
    let zone = locate(&scene, Some(&quad(corners))).expect("zone in the outline");
    assert!(!zone.upside_down);
    assert!((zone.skew_degrees).abs() < 1.0, "{}", zone.skew_degrees);
    assert_lines(&zone, 3, 30, "TD1 outlined");
    let zone = locate(&scene, None).expect("zone in the frame");
    assert!(
        (zone.skew_degrees - 4.0).abs() < 0.6,
        "{}",
        zone.skew_degrees
    );
    assert_lines(&zone, 3, 30, "TD1 in the frame");
}

#[test]
fn a_page_upside_down_is_found_and_turned() {
    let font = render::font();
    let page = render::document(&font, Kind::Td3, render::TD3_SPECIMEN, 1100, 3);
    let mut scene = render::desk(1600, 1200, 3);
    let corners = render::place(&mut scene, &page, (800.0, 600.0), 1150.0, 178.0);
    let zone = locate(&scene, Some(&quad(corners))).expect("zone");
    assert!(zone.upside_down);
    assert_lines(&zone, 2, 44, "TD3 upside down");
    // Turned back, the first line is the names line: its fillers (light,
    // thin chevrons) on the right.
    let first = &zone.lines[0];
    let darkness = |from: u32, to: u32| {
        (from..to)
            .flat_map(|x| (0..first.height()).map(move |y| (x, y)))
            .map(|(x, y)| 255 - u32::from(first.get_pixel(x, y).0[0]))
            .sum::<u32>()
    };
    let w = first.width();
    assert!(
        darkness(0, w / 3) > darkness(2 * w / 3, w),
        "names first, fillers last"
    );
}

#[test]
fn nothing_like_a_zone_gives_none_and_nothing_panics() {
    let mut rng = render::Lcg(7);
    let noise = RgbImage::from_fn(700, 500, |_, _| {
        image::Rgb([rng.next() as u8, rng.next() as u8, rng.next() as u8])
    });
    assert!(locate(&noise, None).is_none());
    let plain = RgbImage::from_pixel(900, 600, image::Rgb([230, 230, 230]));
    assert!(locate(&plain, None).is_none());
    for (w, h) in [(1, 1), (15, 400), (4000, 17), (17, 4000)] {
        let _ = locate(&RgbImage::new(w, h), None);
    }
    // Random quads over random rectangles of random sizes.
    for _ in 0..40 {
        let (w, h) = (rng.range(1, 700), rng.range(1, 700));
        let image = RgbImage::from_fn(w, h, |x, y| {
            let v = if (x / 7 + y / 3) % 5 == 0 { 20 } else { 220 };
            image::Rgb([v, v, v])
        });
        let mut corner = || {
            (
                f64::from(rng.range(0, 1400)) - 350.0,
                f64::from(rng.range(0, 1400)) - 350.0,
            )
        };
        let corners = [corner(), corner(), corner(), corner()];
        let _ = locate(&image, Some(&quad(corners)));
        let _ = locate(&image, None);
    }
    // Degenerate and absurd outlines.
    let page = RgbImage::from_pixel(300, 200, image::Rgb([200, 200, 200]));
    for corners in [
        [(0.0, 0.0); 4],
        [(f64::NAN, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)],
        [(-1e9, -1e9), (1e9, -1e9), (1e9, 1e9), (-1e9, 1e9)],
        [(10.0, 10.0), (10.0, 190.0), (290.0, 190.0), (290.0, 10.0)],
    ] {
        let _ = locate(&page, Some(&quad(corners)));
    }
}
