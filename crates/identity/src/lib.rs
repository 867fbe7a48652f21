//! Vigil's identity-document image checks: pure Rust, no Postgres.
//!
//! The extension's `vigil.assess_id(bytea)` uses it in three steps:
//!
//! 1. [`analyse`] decodes the upload safely ([`decode`]) and measures it: image
//!    quality ([`quality`]), the document's outline ([`document`]), a portrait
//!    on it ([`face`]), metadata and error-level analysis ([`tamper`]), and the
//!    perceptual hash ([`phash`]). Bytes that are not a JPEG, PNG or WebP image
//!    within the limits give a [`DecodeError`] saying what was received.
//! 2. The extension looks the hash up among earlier assessments ([`phash`]
//!    explains the index), giving an optional [`Duplicate`].
//! 3. [`judge`] turns the measures and the duplicate into an [`Assessment`]:
//!    reasons with codes, the result, level, score and confidence, and the JSON
//!    answer ([`Assessment::to_json`]).
//!
//! Nothing here claims an identity is verified: a pass means these checks found
//! nothing, and the answer lists what was not checked.

pub mod decode;
pub mod document;
pub mod face;
pub mod phash;
pub mod quality;
#[cfg(any(test, feature = "synthetic"))]
pub mod synthetic;
pub mod tamper;
mod verdict;

use image::{ImageBuffer, ImageFormat, Pixel, RgbImage};
use sha2::{Digest, Sha256};

pub use decode::DecodeError;
pub use face::FaceDetector;
pub use verdict::{judge, Assessment, Duplicate, Reason};

/// Widest working copy the document is searched and cropped in (a whole
/// factor smaller than the upload: 512 to 1024 pixels wide).
const MID_WIDTH: u32 = 1024;

/// Everything measured on one upload.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub format: &'static str,
    pub bytes: usize,
    pub sha256: [u8; 32],
    /// Oriented dimensions.
    pub width: u32,
    pub height: u32,
    pub document: document::Found,
    /// Measured on the document's region when there is one, else on the frame.
    pub quality: quality::Quality,
    /// Long side of the document (or the frame) in pixels of the upload.
    pub document_pixels: u32,
    /// Faces on the document, best first; `None` when there was no document to search.
    pub faces: Option<Vec<face::Face>>,
    pub metadata: tamper::Metadata,
    /// `None` for PNG and WebP (no JPEG history to analyse) or a region too small.
    pub ela: Option<tamper::Ela>,
    /// Perceptual hash of the document's region (of the frame when none was found).
    pub phash: phash::Hash,
}

/// Decodes and measures an upload.
pub fn analyse(bytes: &[u8], faces: &mut FaceDetector) -> Result<Analysis, DecodeError> {
    let decoded = decode::decode(bytes)?;
    let rgb = &decoded.rgb;
    let (width, height) = rgb.dimensions();
    // One averaged copy, at most MID_WIDTH wide, serves the document search
    // (which shrinks it further) and the region's crop: one pass over the
    // full-size pixels instead of two (a profile had the two at 18%).
    let mid = if width > MID_WIDTH {
        std::borrow::Cow::Owned(shrink(rgb, width.div_ceil(MID_WIDTH)))
    } else {
        std::borrow::Cow::Borrowed(rgb)
    };
    let scale = f64::from(width) / f64::from(mid.width());
    let found = document::find(&mid).scaled(scale);
    let (rx, ry, rw, rh) = match &found {
        document::Found::Document(quad) => quad.bounds(width, height),
        _ => (0, 0, width, height),
    };
    let (rw, rh) = (rw.max(1), rh.max(1));
    let to_mid = |v: u32| ((f64::from(v) / scale) as u32).min(mid.width().max(mid.height()));
    let (mx, my) = (
        to_mid(rx).min(mid.width() - 1),
        to_mid(ry).min(mid.height() - 1),
    );
    let (mw, mh) = (
        to_mid(rw).clamp(1, mid.width() - mx),
        to_mid(rh).clamp(1, mid.height() - my),
    );
    // The region at the width the quality and face checks and the hash work
    // at; interpolated, not averaged: the face detector finds fewer faces in
    // a box-averaged copy.
    let crop = image::imageops::crop_imm(&*mid, mx, my, mw, mh);
    let region_h = ((u64::from(mh) * u64::from(quality::WORK_WIDTH)) / u64::from(mw)).max(1) as u32;
    let region = image::imageops::resize(
        &*crop,
        quality::WORK_WIDTH,
        region_h,
        image::imageops::FilterType::Triangle,
    );
    let quality = quality::measure(&region);
    let faces_found = match &found {
        document::Found::Document(_) => Some(faces.detect(&image::imageops::grayscale(&region))),
        _ => None,
    };
    let ela = match decoded.format {
        ImageFormat::Jpeg => tamper::ela(rgb, (rx, ry, rw, rh)),
        _ => None,
    };
    Ok(Analysis {
        format: decoded.format_name(),
        bytes: bytes.len(),
        sha256: Sha256::digest(bytes).into(),
        width,
        height,
        document_pixels: rw.max(rh),
        document: found,
        quality,
        faces: faces_found,
        metadata: tamper::metadata(decoded.exif.as_deref()),
        ela,
        phash: phash::hash(&region),
    })
}

/// `image` shrunk by a whole `factor`, each output pixel the mean of a
/// `factor` x `factor` block. Written here because `imageops::thumbnail`
/// (fractional boxes, float arithmetic per output pixel) took a quarter of an
/// assessment in a profile at this size; a whole factor needs only sums.
fn shrink(image: &RgbImage, factor: u32) -> RgbImage {
    let factor = factor.max(1);
    let (w, h) = (image.width() / factor, image.height() / factor);
    let (w, h) = (w.max(1), h.max(1));
    let mut sums = vec![[0u32; 3]; w as usize];
    let mut out = RgbImage::new(w, h);
    let area = factor * factor;
    let raw = image.as_raw();
    let stride = image.width() as usize * 3;
    for oy in 0..h {
        sums.iter_mut().for_each(|s| *s = [0; 3]);
        for y in oy * factor..((oy + 1) * factor).min(image.height()) {
            let row = &raw[y as usize * stride..(y as usize + 1) * stride];
            for (ox, sum) in sums.iter_mut().enumerate() {
                let start = ox * factor as usize * 3;
                let end = (start + factor as usize * 3).min(row.len());
                for px in row[start..end].chunks_exact(3) {
                    sum[0] += u32::from(px[0]);
                    sum[1] += u32::from(px[1]);
                    sum[2] += u32::from(px[2]);
                }
            }
        }
        for (ox, sum) in sums.iter().enumerate() {
            out.put_pixel(ox as u32, oy, image::Rgb(sum.map(|v| (v / area) as u8)));
        }
    }
    out
}

/// `image` scaled to `width` (height in proportion): averaged when shrinking,
/// which is fast and smooths as a low-pass should; interpolated when growing.
pub(crate) fn to_width<I, P>(image: &I, width: u32) -> ImageBuffer<P, Vec<u8>>
where
    I: image::GenericImageView<Pixel = P>,
    P: Pixel<Subpixel = u8> + 'static,
{
    let (w, h) = image.dimensions();
    let height = ((u64::from(h) * u64::from(width)) / u64::from(w.max(1))).max(1) as u32;
    if width < w {
        image::imageops::thumbnail(image, width, height)
    } else {
        image::imageops::resize(image, width, height, image::imageops::FilterType::Triangle)
    }
}
