//! Tampering signals: weak evidence that raises concern, never a verdict alone.
//!
//! - The EXIF `Software` tag naming an image editor (a phone's camera app
//!   writes its firmware there; Photoshop, GIMP and the like write themselves).
//! - No camera `Make`/`Model`: screenshots, exports and re-saved files lose them,
//!   and so do many honest uploads (messaging apps strip EXIF), hence a small weight.
//! - Error-level analysis on JPEG ([`ela`]): recompressing a once-saved JPEG
//!   changes it evenly; a region pasted in from elsewhere changes differently.

use exif::{In, Reader, Tag};

/// Editors, matched case-insensitively as substrings of `Software`.
const EDITORS: [&str; 16] = [
    "photoshop",
    "gimp",
    "lightroom",
    "affinity",
    "pixelmator",
    "paint.net",
    "paintshop",
    "corel",
    "snapseed",
    "picsart",
    "canva",
    "facetune",
    "photopea",
    "fotor",
    "krita",
    "inkscape",
];

/// What the metadata says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metadata {
    /// The file carries EXIF at all.
    pub has_exif: bool,
    /// `Software`, as written.
    pub software: Option<String>,
    /// The editor `software` names, if it is one.
    pub editor: Option<&'static str>,
    /// `Make` and `Model`, joined.
    pub camera: Option<String>,
}

/// Reads `exif` (a TIFF structure as the decoder hands it over); damage reads as absence.
pub fn metadata(exif: Option<&[u8]>) -> Metadata {
    let Some(raw) = exif else {
        return Metadata::default();
    };
    let Ok(parsed) = Reader::new().read_raw(raw.to_vec()) else {
        return Metadata {
            has_exif: true,
            ..Metadata::default()
        };
    };
    let text = |tag: Tag| {
        parsed
            .get_field(tag, In::PRIMARY)
            .and_then(|f| match &f.value {
                exif::Value::Ascii(parts) => {
                    let joined: Vec<String> = parts
                        .iter()
                        .map(|p| String::from_utf8_lossy(p).trim().to_owned())
                        .filter(|p| !p.is_empty())
                        .collect();
                    (!joined.is_empty()).then(|| joined.join(" "))
                }
                _ => None,
            })
    };
    let software = text(Tag::Software).map(|s| s.chars().take(200).collect::<String>());
    let editor = software.as_deref().and_then(|s| {
        let lower = s.to_lowercase();
        EDITORS.iter().copied().find(|e| lower.contains(e))
    });
    let camera = match (text(Tag::Make), text(Tag::Model)) {
        (None, None) => None,
        (make, model) => Some(
            [make, model]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(200)
                .collect(),
        ),
    };
    Metadata {
        has_exif: true,
        software,
        editor,
        camera,
    }
}

/// Error-level analysis of a region of a JPEG's pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ela {
    /// Pixels analysed (the region, at most [`ELA_MAX_SIDE`] square, from its centre).
    pub pixels: u64,
    /// Median over 32x32 cells of the texture-normalised recompression error.
    pub median: f64,
    /// Its 99th percentile over the median: how far the worst cells stand out.
    pub outlier_ratio: f64,
}

/// Side of the largest square analysed (bounds the cost on big photos).
pub const ELA_MAX_SIDE: u32 = 512;
/// Quality of the recompression: below what cameras and apps save at, so
/// every block changes and history shows (at 90, a file saved at 90 barely changes).
const ELA_QUALITY: u8 = 75;

/// Error-level analysis of `rgb`'s region (x, y, width, height), aligned to the
/// JPEG's 16-pixel blocks so it recompresses on the original grid.
pub fn ela(rgb: &image::RgbImage, region: (u32, u32, u32, u32)) -> Option<Ela> {
    let (rx, ry, rw, rh) = region;
    let (w, h) = (rw.min(ELA_MAX_SIDE), rh.min(ELA_MAX_SIDE));
    let x = (rx + (rw - w) / 2) & !15;
    let y = (ry + (rh - h) / 2) & !15;
    let (w, h) = (w & !31, h & !31);
    if w < 64 || h < 64 || x + w > rgb.width() || y + h > rgb.height() {
        return None;
    }
    let crop = image::imageops::crop_imm(rgb, x, y, w, h).to_image();
    let mut encoded = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut encoded, ELA_QUALITY)
        .encode_image(&crop)
        .ok()?;
    let again = image::load_from_memory_with_format(&encoded, image::ImageFormat::Jpeg)
        .ok()?
        .into_rgb8();
    let (cells_x, cells_y) = ((w / 32) as usize, (h / 32) as usize);
    let mut cells = Vec::with_capacity(cells_x * cells_y);
    for cy in 0..cells_y {
        for cx in 0..cells_x {
            let (mut error, mut sum, mut sum_sq) = (0.0, 0.0, 0.0);
            for py in 0..32 {
                for px in 0..32 {
                    let (ix, iy) = ((cx * 32 + px) as u32, (cy * 32 + py) as u32);
                    let a = crop.get_pixel(ix, iy).0;
                    let b = again.get_pixel(ix, iy).0;
                    for c in 0..3 {
                        error += (f64::from(a[c]) - f64::from(b[c])).abs();
                    }
                    let luma = (f64::from(a[0]) + f64::from(a[1]) + f64::from(a[2])) / 3.0;
                    sum += luma;
                    sum_sq += luma * luma;
                }
            }
            let n = 1024.0;
            let spread = (sum_sq / n - (sum / n).powi(2)).max(0.0).sqrt();
            // Error grows with texture; dividing by it compares like with like.
            cells.push(error / (3.0 * n) / (spread + 4.0));
        }
    }
    cells.sort_by(f64::total_cmp);
    let median = cells[cells.len() / 2];
    let p99 = cells[(cells.len() * 99 / 100).min(cells.len() - 1)];
    Some(Ela {
        pixels: u64::from(w) * u64::from(h),
        median,
        outlier_ratio: p99 / median.max(1e-6),
    })
}
