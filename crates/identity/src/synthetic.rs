//! Synthetic identity cards, for tests and `make bench-identity`.
//!
//! A card of ID-1 proportions (85.60 x 53.98 mm) drawn on a textured
//! background: a coloured header band, a portrait with a drawn face that the
//! SeetaFace detector finds, blocks of "text" and two MRZ-like lines. The
//! seed changes the card's colours, the text blocks and the background, so two
//! seeds give two different documents. The variants are the bad photos the
//! checks must name: blurred, glared, dark, tiny, cut off, black and white;
//! and the other ways documents arrive: a passport page's proportions, a
//! tilt, a scan (the card on white paper, [`Backdrop::Paper`]) and a crop to
//! the card ([`card_crop`]).

use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{ImageEncoder, Rgb, RgbImage};
use imageproc::drawing::{draw_filled_ellipse_mut, draw_filled_rect_mut};
use imageproc::rect::Rect;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// ID-1 width over height.
pub const ID1_ASPECT: f64 = 85.60 / 53.98;

/// A passport data page (TD3), 125 x 88 mm.
pub const TD3_ASPECT: f64 = 125.0 / 88.0;

/// What the card lies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backdrop {
    /// A textured desk, as a phone photo shows.
    Desk,
    /// White paper with a scanner's faint noise, as a flatbed scan shows.
    Paper,
}

/// How the card sits in the frame.
#[derive(Clone, Copy, Debug)]
pub struct Scene {
    pub width: u32,
    pub height: u32,
    /// Card width as a share of the frame width.
    pub card_share: f64,
    /// Card centre as shares of the frame (0.5, 0.5 is centred).
    pub centre: (f64, f64),
    /// Card width over height: [`ID1_ASPECT`] or [`TD3_ASPECT`].
    pub aspect: f64,
    /// Clockwise rotation of the card, in degrees.
    pub tilt: f64,
    pub backdrop: Backdrop,
}

impl Default for Scene {
    fn default() -> Self {
        Scene {
            width: 1600,
            height: 1200,
            card_share: 0.72,
            centre: (0.5, 0.5),
            aspect: ID1_ASPECT,
            tilt: 0.0,
            backdrop: Backdrop::Desk,
        }
    }
}

impl Scene {
    /// The card's size in pixels.
    fn card_size(&self) -> (i32, i32) {
        let card_w = (f64::from(self.width) * self.card_share).round() as i32;
        (card_w, (f64::from(card_w) / self.aspect).round() as i32)
    }

    /// The card's top-left corner before rotation (about its centre).
    fn card_origin(&self) -> (i32, i32) {
        let (card_w, card_h) = self.card_size();
        (
            (f64::from(self.width) * self.centre.0) as i32 - card_w / 2,
            (f64::from(self.height) * self.centre.1) as i32 - card_h / 2,
        )
    }

    /// The card's corners in the frame, clockwise from top left (they may lie outside it).
    pub fn card_corners(&self) -> [(f64, f64); 4] {
        let (card_w, card_h) = self.card_size();
        let (x0, y0) = self.card_origin();
        let (cx, cy) = (
            f64::from(x0) + f64::from(card_w) / 2.0,
            f64::from(y0) + f64::from(card_h) / 2.0,
        );
        let (sin, cos) = self.tilt.to_radians().sin_cos();
        let (hw, hh) = (f64::from(card_w) / 2.0, f64::from(card_h) / 2.0);
        [(-hw, -hh), (hw, -hh), (hw, hh), (-hw, hh)]
            .map(|(dx, dy)| (cx + dx * cos - dy * sin, cy + dx * sin + dy * cos))
    }
}

/// A sharp, well-lit card in the middle of a 1600x1200 frame.
pub fn card(seed: u64) -> RgbImage {
    card_in(seed, Scene::default())
}

/// A card drawn into `scene`; parts outside the frame are cut off.
pub fn card_in(seed: u64, scene: Scene) -> RgbImage {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut image = match scene.backdrop {
        Backdrop::Desk => background(&mut rng, scene.width, scene.height),
        // Its own generator, so the card looks the same on paper as it
        // would have on a desk of the same seed's colours.
        Backdrop::Paper => paper(seed, scene.width, scene.height),
    };
    let (card_w, card_h) = scene.card_size();
    // The card is drawn on its own canvas, then laid on the backdrop.
    let mut card = RgbImage::new(card_w.max(1) as u32, card_h.max(1) as u32);
    draw_card(&mut card, &mut rng);
    let (x0, y0) = scene.card_origin();
    if scene.tilt == 0.0 {
        image::imageops::replace(&mut image, &card, i64::from(x0), i64::from(y0));
    } else {
        lay_rotated(&mut image, &card, &scene);
    }
    image
}

/// The card of `scene` cropped out of its photo, with `margin` pixels of the
/// backdrop on each side (negative: cut into the card), as a capture SDK
/// or a person cropping delivers it. A tilted card's crop holds the
/// backdrop's corners.
pub fn card_crop(seed: u64, scene: Scene, margin: i32) -> RgbImage {
    let photo = card_in(seed, scene);
    let corners = scene.card_corners();
    let fold = |f: fn(f64, f64) -> f64, pick: fn(&(f64, f64)) -> f64, init: f64| {
        corners.iter().map(pick).fold(init, f)
    };
    let m = f64::from(margin);
    let clip = |v: f64, max: u32| v.round().clamp(0.0, f64::from(max)) as u32;
    let x0 = clip(fold(f64::min, |c| c.0, f64::INFINITY) - m, photo.width());
    let y0 = clip(fold(f64::min, |c| c.1, f64::INFINITY) - m, photo.height());
    let x1 = clip(
        fold(f64::max, |c| c.0, f64::NEG_INFINITY) + m,
        photo.width(),
    );
    let y1 = clip(
        fold(f64::max, |c| c.1, f64::NEG_INFINITY) + m,
        photo.height(),
    );
    image::imageops::crop_imm(&photo, x0, y0, (x1 - x0).max(1), (y1 - y0).max(1)).to_image()
}

/// `card` laid on `image` rotated by the scene's tilt about its centre,
/// sampled bilinearly (a scanner or camera averages across the edge too).
fn lay_rotated(image: &mut RgbImage, card: &RgbImage, scene: &Scene) {
    let (card_w, card_h) = (f64::from(card.width()), f64::from(card.height()));
    let corners = scene.card_corners();
    let (cx, cy) = (
        corners.iter().map(|c| c.0).sum::<f64>() / 4.0,
        corners.iter().map(|c| c.1).sum::<f64>() / 4.0,
    );
    let (sin, cos) = scene.tilt.to_radians().sin_cos();
    let min = |i: fn(&(f64, f64)) -> f64| corners.iter().map(i).fold(f64::INFINITY, f64::min);
    let max = |i: fn(&(f64, f64)) -> f64| corners.iter().map(i).fold(f64::NEG_INFINITY, f64::max);
    let (w, h) = (f64::from(image.width()), f64::from(image.height()));
    let xs = min(|c| c.0).floor().max(0.0) as u32..max(|c| c.0).ceil().min(w) as u32;
    let ys = min(|c| c.1).floor().max(0.0) as u32..max(|c| c.1).ceil().min(h) as u32;
    for y in ys {
        for x in xs.clone() {
            let (dx, dy) = (f64::from(x) + 0.5 - cx, f64::from(y) + 0.5 - cy);
            // Into the card's own coordinates: rotate back.
            let u = dx * cos + dy * sin + card_w / 2.0 - 0.5;
            let v = -dx * sin + dy * cos + card_h / 2.0 - 0.5;
            if u < -0.5 || v < -0.5 || u > card_w - 0.5 || v > card_h - 0.5 {
                continue;
            }
            let sample = |px: f64, py: f64| {
                let (px, py) = (
                    px.clamp(0.0, card_w - 1.0) as u32,
                    py.clamp(0.0, card_h - 1.0) as u32,
                );
                card.get_pixel(px, py).0.map(f64::from)
            };
            let (fx, fy) = (u - u.floor(), v - v.floor());
            let (a, b) = (
                sample(u.floor(), v.floor()),
                sample(u.floor() + 1.0, v.floor()),
            );
            let (c, d) = (
                sample(u.floor(), v.floor() + 1.0),
                sample(u.floor() + 1.0, v.floor() + 1.0),
            );
            let px = std::array::from_fn(|i| {
                let top = a[i] * (1.0 - fx) + b[i] * fx;
                let bottom = c[i] * (1.0 - fx) + d[i] * fx;
                (top * (1.0 - fy) + bottom * fy).round() as u8
            });
            image.put_pixel(x, y, Rgb(px));
        }
    }
}

/// White paper as a flatbed scanner sees it: nearly saturated, faint noise.
fn paper(seed: u64, width: u32, height: u32) -> RgbImage {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5CA7);
    RgbImage::from_fn(width, height, |_, _| {
        let v = rng.random_range(246..=255u8);
        Rgb([v, v, v.saturating_sub(1)])
    })
}

/// The card's face on its own canvas (`image` is the card).
fn draw_card(image: &mut RgbImage, rng: &mut SmallRng) {
    let (x0, y0) = (0i32, 0i32);
    let (card_w, card_h) = (image.width() as i32, image.height() as i32);
    let unit = |share: f64| (f64::from(card_w) * share).round() as i32;
    let rect = |x: i32, y: i32, w: i32, h: i32| {
        Rect::at(x0 + x, y0 + y).of_size(w.max(1) as u32, h.max(1) as u32)
    };

    // Body: a light pastel with a faint diagonal guilloche-like pattern.
    let base = [
        rng.random_range(200..236u8),
        rng.random_range(205..236u8),
        rng.random_range(210..240u8),
    ];
    for y in 0..card_h {
        for x in 0..card_w {
            let wave = (((x - x0 + y - y0) as f64 / 9.0).sin() * 6.0) as i16;
            let px = base.map(|c| (i16::from(c) + wave).clamp(0, 255) as u8);
            image.put_pixel(x as u32, y as u32, Rgb(px));
        }
    }
    // Header band with a title block.
    let header = Rgb([
        rng.random_range(20..90),
        rng.random_range(60..130),
        rng.random_range(120..190),
    ]);
    draw_filled_rect_mut(image, rect(0, 0, card_w, unit(0.13)), header);
    draw_filled_rect_mut(
        image,
        rect(unit(0.05), unit(0.035), unit(0.45), unit(0.05)),
        Rgb([240, 240, 240]),
    );

    // Portrait.
    let (px, py, pw, ph) = (unit(0.05), unit(0.165), unit(0.22), unit(0.29));
    draw_portrait(image, rng, x0 + px, y0 + py, pw, ph);

    // Text: label/value pairs of random lengths, then two MRZ-like lines.
    let ink = Rgb([30, 30, 40]);
    let mut y = unit(0.17);
    for _ in 0..5 {
        draw_filled_rect_mut(
            image,
            rect(unit(0.32), y, unit(0.12), unit(0.016)),
            Rgb([110, 110, 120]),
        );
        let len = rng.random_range(0.15..0.5);
        draw_filled_rect_mut(
            image,
            rect(unit(0.32), y + unit(0.022), unit(len), unit(0.026)),
            ink,
        );
        y += unit(0.056);
    }
    for line in 0..2 {
        let ly = unit(0.49) + line * unit(0.05);
        let mut x = unit(0.05);
        while x < unit(0.93) {
            let glyph = if rng.random_bool(0.25) {
                unit(0.006)
            } else {
                unit(0.02)
            };
            draw_filled_rect_mut(image, rect(x, ly, glyph, unit(0.032)), ink);
            x += unit(0.026);
        }
    }
}

/// A frontal face: hair, skin oval, brows, eyes, nose shadow, mouth, softened.
fn draw_portrait(image: &mut RgbImage, rng: &mut SmallRng, x: i32, y: i32, w: i32, h: i32) {
    let backdrop = Rgb([
        rng.random_range(150..190),
        rng.random_range(170..200),
        rng.random_range(190..220),
    ]);
    let mut photo = RgbImage::from_pixel(w.max(1) as u32, h.max(1) as u32, backdrop);
    let (cx, cy) = (w / 2, h * 11 / 20);
    let (fw, fh) = (w * 30 / 100, h * 32 / 100);
    let hair = Rgb([
        rng.random_range(20..60),
        rng.random_range(15..45),
        rng.random_range(10..30),
    ]);
    let skin = Rgb([
        rng.random_range(185..225),
        rng.random_range(145..180),
        rng.random_range(115..150),
    ]);
    draw_filled_ellipse_mut(
        &mut photo,
        (cx, cy - fh / 4),
        fw + fw / 6,
        fh + fh / 8,
        hair,
    );
    draw_filled_rect_mut(
        &mut photo,
        Rect::at(cx - fw * 12 / 10, cy + fh * 8 / 10)
            .of_size((fw * 24 / 10) as u32, (h / 4) as u32),
        Rgb([50, 60, 80]),
    );
    draw_filled_ellipse_mut(&mut photo, (cx, cy + fh / 10), fw, fh, skin);
    let shade = |c: Rgb<u8>, f: f32| Rgb(c.0.map(|v| (f32::from(v) * f) as u8));
    let (ex, ey) = (fw * 42 / 100, cy - fh / 6);
    for side in [-1, 1] {
        draw_filled_ellipse_mut(
            &mut photo,
            (cx + side * ex, ey - fh / 6),
            fw / 4,
            fh / 22,
            shade(hair, 1.0),
        );
        draw_filled_ellipse_mut(
            &mut photo,
            (cx + side * ex, ey),
            fw / 5,
            fh / 11,
            Rgb([245, 245, 245]),
        );
        draw_filled_ellipse_mut(
            &mut photo,
            (cx + side * ex, ey),
            fw / 10,
            fh / 11,
            Rgb([40, 30, 25]),
        );
    }
    draw_filled_ellipse_mut(
        &mut photo,
        (cx, cy + fh / 6),
        fw / 9,
        fh / 5,
        shade(skin, 0.88),
    );
    draw_filled_ellipse_mut(
        &mut photo,
        (cx, cy + fh * 23 / 100),
        fw / 5,
        fh / 14,
        shade(skin, 0.7),
    );
    draw_filled_ellipse_mut(
        &mut photo,
        (cx, cy + fh / 2),
        fw * 2 / 5,
        fh / 12,
        Rgb([150, 60, 60]),
    );
    let photo = imageproc::filter::gaussian_blur_f32(&photo, (w as f32 / 120.0).max(0.8));
    image::imageops::overlay(image, &photo, i64::from(x), i64::from(y));
}

/// A textured surface (wood or a desk): a gradient with grain and noise.
fn background(rng: &mut SmallRng, width: u32, height: u32) -> RgbImage {
    let tone = [
        rng.random_range(70..130i32),
        rng.random_range(50..100),
        rng.random_range(30..80),
    ];
    let grain = rng.random_range(8.0..20.0);
    let mut image = RgbImage::new(width, height);
    for (x, y, px) in image.enumerate_pixels_mut() {
        let g = ((f64::from(y) / grain + (f64::from(x) / 97.0).sin() * 3.0).sin() * 10.0) as i32;
        let n = rng.random_range(-6..=6);
        let shade = (x as i32 + y as i32) * 20 / (width + height) as i32;
        *px = Rgb(tone.map(|c| (c + g + n + shade).clamp(0, 255) as u8));
    }
    image
}

/// A desk with no document on it.
pub fn scenery(seed: u64) -> RgbImage {
    background(&mut SmallRng::seed_from_u64(seed), 1600, 1200)
}

/// The same scene, blurred as by a shaking hand or bad focus.
pub fn blurred(image: &RgbImage, sigma: f32) -> RgbImage {
    imageproc::filter::gaussian_blur_f32(image, sigma)
}

/// A blown-out reflection over part of the card.
pub fn glared(image: &RgbImage) -> RgbImage {
    let mut out = image.clone();
    let (w, h) = out.dimensions();
    let (cx, cy) = (w as f64 * 0.58, h as f64 * 0.45);
    let (rx, ry) = (w as f64 * 0.16, h as f64 * 0.12);
    for (x, y, px) in out.enumerate_pixels_mut() {
        let d = ((x as f64 - cx) / rx).powi(2) + ((y as f64 - cy) / ry).powi(2);
        if d < 1.6 {
            let t = (1.6 - d).min(1.0) as f32;
            *px = Rgb(px
                .0
                .map(|c| (f32::from(c) * (1.0 - t) + 255.0 * t).min(255.0) as u8));
        }
    }
    out
}

/// Every channel multiplied by `factor` (under 1 darkens, over 1 brightens, clipped).
pub fn exposed(image: &RgbImage, factor: f32) -> RgbImage {
    let mut out = image.clone();
    for px in out.pixels_mut() {
        *px = Rgb(px.0.map(|c| (f32::from(c) * factor).min(255.0) as u8));
    }
    out
}

/// A camera's sensor noise (uniform, up to `amplitude` levels per channel).
pub fn with_noise(image: &RgbImage, amplitude: i16, seed: u64) -> RgbImage {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut out = image.clone();
    for px in out.pixels_mut() {
        for c in px.0.iter_mut() {
            *c = (i16::from(*c) + rng.random_range(-amplitude..=amplitude)).clamp(0, 255) as u8;
        }
    }
    out
}

/// `image` saved as JPEG at quality 70, reopened, and a region of `donor`
/// pasted over its middle: a forgery before it is saved again.
pub fn spliced(image: &RgbImage, donor: &RgbImage) -> RgbImage {
    let saved = image::load_from_memory(&jpeg(image, 70, None))
        .expect("our own JPEG decodes")
        .into_rgb8();
    let mut out = saved;
    let (w, h) = out.dimensions();
    let patch = image::imageops::crop_imm(donor, w * 3 / 16, h / 4, w / 4, h / 4).to_image();
    image::imageops::overlay(&mut out, &patch, i64::from(w * 3 / 16), i64::from(h / 4));
    out
}

/// Grey levels only, as a photocopy gives.
pub fn black_and_white(image: &RgbImage) -> RgbImage {
    let gray = image::imageops::grayscale(image);
    RgbImage::from_fn(gray.width(), gray.height(), |x, y| {
        let v = gray.get_pixel(x, y).0[0];
        Rgb([v, v, v])
    })
}

pub fn resized(image: &RgbImage, width: u32) -> RgbImage {
    let height =
        (u64::from(image.height()) * u64::from(width) / u64::from(image.width().max(1))) as u32;
    image::imageops::resize(image, width, height.max(1), FilterType::Triangle)
}

/// `image` cropped by `share` of its size on every side.
pub fn cropped(image: &RgbImage, share: f64) -> RgbImage {
    let (w, h) = image.dimensions();
    let (dx, dy) = ((f64::from(w) * share) as u32, (f64::from(h) * share) as u32);
    image::imageops::crop_imm(image, dx, dy, w - 2 * dx, h - 2 * dy).to_image()
}

/// JPEG bytes at `quality`, with `exif` (a TIFF structure) when given.
pub fn jpeg(image: &RgbImage, quality: u8, exif: Option<Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = JpegEncoder::new_with_quality(&mut out, quality);
    if let Some(exif) = exif {
        encoder
            .set_exif_metadata(exif)
            .expect("the JPEG encoder takes EXIF");
    }
    encoder
        .write_image(
            image,
            image.width(),
            image.height(),
            image::ExtendedColorType::Rgb8,
        )
        .expect("encoding to memory");
    out
}

/// Lossless WebP bytes.
pub fn webp(image: &RgbImage) -> Vec<u8> {
    encoded(image, image::ImageFormat::WebP)
}

pub fn png(image: &RgbImage) -> Vec<u8> {
    encoded(image, image::ImageFormat::Png)
}

fn encoded(image: &RgbImage, format: image::ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image
        .write_to(&mut out, format)
        .expect("encoding to memory");
    out.into_inner()
}

/// EXIF with the given ASCII tags of the primary image (Make, Model, Software...).
pub fn exif(tags: &[(exif::Tag, &str)]) -> Vec<u8> {
    let fields: Vec<exif::Field> = tags
        .iter()
        .map(|(tag, value)| field(*tag, exif::Value::Ascii(vec![value.as_bytes().to_vec()])))
        .collect();
    write_exif(&fields)
}

fn field(tag: exif::Tag, value: exif::Value) -> exif::Field {
    exif::Field {
        tag,
        ifd_num: exif::In::PRIMARY,
        value,
    }
}

fn write_exif(fields: &[exif::Field]) -> Vec<u8> {
    let mut writer = exif::experimental::Writer::new();
    for field in fields {
        writer.push_field(field);
    }
    let mut out = Cursor::new(Vec::new());
    writer
        .write(&mut out, false)
        .expect("writing EXIF to memory");
    out.into_inner()
}

/// EXIF with an orientation (1 to 8) and a camera.
pub fn oriented_exif(orientation: u16) -> Vec<u8> {
    write_exif(&[
        field(
            exif::Tag::Orientation,
            exif::Value::Short(vec![orientation]),
        ),
        field(
            exif::Tag::Make,
            exif::Value::Ascii(vec![b"Google".to_vec()]),
        ),
    ])
}

/// EXIF of a phone camera photo.
pub fn camera_exif() -> Vec<u8> {
    exif(&[(exif::Tag::Make, "Google"), (exif::Tag::Model, "Pixel 7")])
}

use std::io::Cursor;

/// EXIF tags, for [`exif`] callers without a dependency on the EXIF crate.
pub use exif::Tag as ExifTag;
