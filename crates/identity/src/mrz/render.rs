//! Synthetic documents with a machine-readable zone, for the reading tests
//! and `examples/mrz_bench.rs` (which includes this file by path, so it uses
//! nothing of the crate).
//!
//! The zone is drawn in OCR-B, the font ICAO 9303 prescribes, from Debian's
//! `fonts-ocr-b` (public domain; scripts/setup.sh installs it), at its
//! printed size: 2.54 mm a character, 2.4 mm high, lines 4.23 mm apart, at
//! the bottom of a TD3 page (125 x 88 mm) or a TD1 card's back (85.6 x 54).
//! Above it, what a document has: a portrait, labels and values, a guilloche.
#![allow(dead_code)]

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use image::{GrayImage, Rgb, RgbImage};

pub const FONT_PATH: &str = "/usr/share/fonts/opentype/ocr-b/OCRB.otf";

/// OCR-B from `fonts-ocr-b`; the panic names the package.
pub fn font() -> FontRef<'static> {
    let bytes = std::fs::read(FONT_PATH).unwrap_or_else(|e| {
        panic!("{FONT_PATH}: {e} (the MRZ tests draw in OCR-B: apt-get install fonts-ocr-b, or scripts/setup.sh)")
    });
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    FontRef::try_from_slice(bytes).expect("OCR-B parses")
}

/// Which document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A passport's data page, 2 lines of 44.
    Td3,
    /// An ID card's back, 3 lines of 30.
    Td1,
}

impl Kind {
    /// Width and height in millimetres.
    pub fn size_mm(self) -> (f32, f32) {
        match self {
            Kind::Td3 => (125.0, 88.0),
            Kind::Td1 => (85.6, 54.0),
        }
    }
}

/// A tiny deterministic generator (no dependency on the crate's or rand's).
pub struct Lcg(pub u64);

impl Lcg {
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.next() % (hi - lo).max(1)
    }
}

/// Draws `text` (one line) in OCR-B with its capitals `cap_px` high, its
/// baseline at `baseline`, from `left`, characters `pitch` apart (the
/// font's own advance when `None`), in `ink`, antialiased.
#[allow(clippy::too_many_arguments)]
pub fn draw_text(
    image: &mut RgbImage,
    font: &FontRef,
    text: &str,
    left: f32,
    baseline: f32,
    cap_px: f32,
    pitch: Option<f32>,
    ink: [u8; 3],
) {
    let probe = font.as_scaled(PxScale::from(100.0));
    let cap = font
        .outline_glyph(probe.scaled_glyph('E'))
        .map_or(0.7, |e| e.px_bounds().height() / 100.0);
    let scale = PxScale::from(cap_px / cap);
    let scaled = font.as_scaled(scale);
    let pitch = pitch.unwrap_or_else(|| scaled.h_advance(font.glyph_id('0')));
    let (w, h) = image.dimensions();
    for (i, ch) in text.chars().enumerate() {
        let mut glyph = scaled.scaled_glyph(ch);
        glyph.position = ab_glyph::point(left + i as f32 * pitch, baseline);
        if let Some(outline) = font.outline_glyph(glyph) {
            let b = outline.px_bounds();
            outline.draw(|gx, gy, coverage| {
                let x = b.min.x as i32 + gx as i32;
                let y = b.min.y as i32 + gy as i32;
                if x >= 0 && y >= 0 && (x as u32) < w && (y as u32) < h {
                    let p = image.get_pixel_mut(x as u32, y as u32);
                    for (v, &i) in p.0.iter_mut().zip(&ink) {
                        *v = (f32::from(*v) * (1.0 - coverage) + f32::from(i) * coverage).round()
                            as u8;
                    }
                }
            });
        }
    }
}

/// A document `width` pixels wide with `mrz` (lines separated by newlines)
/// printed where its format puts it.
pub fn document(font: &FontRef, kind: Kind, mrz: &str, width: u32, seed: u64) -> RgbImage {
    let mut rng = Lcg(seed);
    let (wmm, hmm) = kind.size_mm();
    let px = width as f32 / wmm;
    let height = (hmm * px).round() as u32;
    let paper = [
        rng.range(215, 245) as u8,
        rng.range(210, 240) as u8,
        rng.range(200, 235) as u8,
    ];
    let phase = rng.range(0, 628) as f32 / 100.0;
    let mut image = RgbImage::from_fn(width, height, |x, y| {
        // A faint guilloche, 15 levels darker.
        let s = ((x as f32 / px * 0.9 + phase).sin() * 3.0 * px + y as f32).rem_euclid(1.6 * px);
        let d = if s < 0.12 * px { 15 } else { 0 };
        Rgb(paper.map(|p| p.saturating_sub(d)))
    });
    let ink = [30, 30, 40];
    let label = [90, 70, 110];
    // A coloured header band with a title.
    let band = [
        rng.range(60, 160) as u8,
        rng.range(60, 140) as u8,
        rng.range(100, 200) as u8,
    ];
    for y in (2.0 * px) as u32..(8.0 * px) as u32 {
        for x in 0..width {
            image.put_pixel(x, y.min(height - 1), Rgb(band));
        }
    }
    let title = match kind {
        Kind::Td3 => "PASSPORT  PASSEPORT  UTOPIA",
        Kind::Td1 => "UTOPIA  IDENTITY CARD",
    };
    draw_text(
        &mut image,
        font,
        title,
        6.0 * px,
        6.5 * px,
        2.6 * px,
        None,
        [250, 250, 250],
    );
    // A portrait on a TD3 page; a block of printing on the card's back.
    let (px0, py0, px1, py1) = match kind {
        Kind::Td3 => (5.0, 12.0, 33.0, 50.0),
        Kind::Td1 => (62.0, 12.0, 80.0, 30.0),
    };
    for y in (py0 * px) as u32..(py1 * px) as u32 {
        for x in (px0 * px) as u32..(px1 * px) as u32 {
            let (cx, cy) = ((px0 + px1) / 2.0 * px, (py0 + py1) / 2.0 * px);
            let (dx, dy) = (
                (x as f32 - cx) / (0.3 * (px1 - px0) * px),
                (y as f32 - cy) / (0.35 * (py1 - py0) * px),
            );
            let face = dx * dx + dy * dy < 1.0;
            let v = if face {
                [200, 160, 140]
            } else {
                [120, 130, 150]
            };
            image.put_pixel(x.min(width - 1), y.min(height - 1), Rgb(v));
        }
    }
    // Labels and values.
    let fields = [
        ("SURNAME", "ERIKSSON"),
        ("GIVEN NAMES", "ANNA MARIA"),
        ("NATIONALITY", "UTOPIAN"),
        ("DATE OF BIRTH", "12 AUG 1974"),
        ("SEX", "F"),
        ("DATE OF EXPIRY", "15 APR 2032"),
    ];
    let (fx, fy0, step, count) = match kind {
        Kind::Td3 => (38.0, 14.0, 7.0, 6),
        Kind::Td1 => (6.0, 12.0, 6.0, 3),
    };
    for (i, (l, v)) in fields.iter().take(count).enumerate() {
        let y = fy0 + i as f32 * step;
        draw_text(
            &mut image,
            font,
            l,
            fx * px,
            (y + 1.3) * px,
            1.3 * px,
            None,
            label,
        );
        draw_text(
            &mut image,
            font,
            v,
            fx * px,
            (y + 4.3) * px,
            2.2 * px,
            None,
            ink,
        );
    }
    // The zone: 2.54 mm a character, 2.4 mm high, lines 4.23 mm apart, the
    // last line's baseline 4.5 mm (TD3) or 3.5 mm (TD1) above the bottom edge.
    let lines: Vec<&str> = mrz.lines().collect();
    let (left, bottom) = match kind {
        Kind::Td3 => ((125.0 - 44.0 * 2.54) / 2.0, 4.5),
        Kind::Td1 => ((85.6 - 30.0 * 2.54) / 2.0, 3.5),
    };
    for (i, line) in lines.iter().enumerate() {
        let baseline = hmm - bottom - (lines.len() - 1 - i) as f32 * 4.23;
        draw_text(
            &mut image,
            font,
            line,
            left * px,
            baseline * px,
            2.4 * px,
            Some(2.54 * px),
            ink,
        );
    }
    image
}

/// A textured desk, as a phone photo shows.
pub fn desk(width: u32, height: u32, seed: u64) -> RgbImage {
    let mut rng = Lcg(seed ^ 0x5eed);
    let base = [
        rng.range(90, 140) as i32,
        rng.range(60, 100) as i32,
        rng.range(40, 70) as i32,
    ];
    RgbImage::from_fn(width, height, |x, y| {
        let grain = ((x as f32 * 0.05).sin() * 8.0
            + (y as f32 * 0.011 + x as f32 * 0.002).sin() * 6.0) as i32;
        let noise = (rng.next() % 9) as i32 - 4;
        Rgb(base.map(|b| (b + grain + noise).clamp(0, 255) as u8))
    })
}

/// `doc` laid on `scene` with its centre at `centre`, `doc_width` pixels
/// wide, turned `tilt` degrees clockwise; the corners it covers, clockwise
/// from the document's top left.
pub fn place(
    scene: &mut RgbImage,
    doc: &RgbImage,
    centre: (f32, f32),
    doc_width: f32,
    tilt: f32,
) -> [(f64, f64); 4] {
    let scale = doc.width() as f32 / doc_width;
    let (sin, cos) = tilt.to_radians().sin_cos();
    let (dw, dh) = (doc.width() as f32, doc.height() as f32);
    let (sw, sh) = scene.dimensions();
    for y in 0..sh {
        for x in 0..sw {
            let (dx, dy) = (x as f32 + 0.5 - centre.0, y as f32 + 0.5 - centre.1);
            // Into the document's frame: turn back, scale, from its centre.
            let u = (dx * cos + dy * sin) * scale + dw / 2.0 - 0.5;
            let v = (-dx * sin + dy * cos) * scale + dh / 2.0 - 0.5;
            if u >= 0.0 && v >= 0.0 && u <= dw - 1.0 && v <= dh - 1.0 {
                let (x0, y0) = (u as u32, v as u32);
                let (x1, y1) = (
                    (x0 + 1).min(doc.width() - 1),
                    (y0 + 1).min(doc.height() - 1),
                );
                let (fx, fy) = (u - x0 as f32, v - y0 as f32);
                let p = |a: u32, b: u32, c: usize| f32::from(doc.get_pixel(a, b).0[c]);
                let mut out = [0u8; 3];
                for (c, o) in out.iter_mut().enumerate() {
                    let top = p(x0, y0, c) * (1.0 - fx) + p(x1, y0, c) * fx;
                    let bottom = p(x0, y1, c) * (1.0 - fx) + p(x1, y1, c) * fx;
                    *o = (top * (1.0 - fy) + bottom * fy).round() as u8;
                }
                scene.put_pixel(x, y, Rgb(out));
            }
        }
    }
    let half = (doc_width / 2.0, doc_width * dh / dw / 2.0);
    [
        (-half.0, -half.1),
        (half.0, -half.1),
        (half.0, half.1),
        (-half.0, half.1),
    ]
    .map(|(a, b)| {
        (
            f64::from(centre.0 + a * cos - b * sin),
            f64::from(centre.1 + a * sin + b * cos),
        )
    })
}

/// A JPEG round trip at `quality`, as an upload arrives.
pub fn jpeg(image: &RgbImage, quality: u8) -> RgbImage {
    use image::ImageEncoder;
    let mut bytes = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, quality)
        .write_image(
            image.as_raw(),
            image.width(),
            image.height(),
            image::ExtendedColorType::Rgb8,
        )
        .expect("JPEG encodes");
    image::load_from_memory(&bytes)
        .expect("JPEG decodes")
        .to_rgb8()
}

/// The columns of `line` holding ink (darker than the midpoint of its
/// range) grouped into runs: glyphs, roughly.
pub fn ink_runs(line: &GrayImage) -> usize {
    let (lo, hi) = line
        .pixels()
        .fold((255u8, 0u8), |(lo, hi), p| (lo.min(p.0[0]), hi.max(p.0[0])));
    let mid = (u16::from(lo) + u16::from(hi)) / 2;
    let mut runs = 0;
    let mut inked = false;
    for x in 0..line.width() {
        let any = (0..line.height()).any(|y| u16::from(line.get_pixel(x, y).0[0]) < mid);
        if any && !inked {
            runs += 1;
        }
        inked = any;
    }
    runs
}

/// The ICAO 9303 specimens: a TD3 passport and a TD1 card.
pub const TD3_SPECIMEN: &str =
    "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10";
pub const TD1_SPECIMEN: &str =
    "I<UTOD231458907<<<<<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\nERIKSSON<<ANNA<MARIA<<<<<<<<<<";
