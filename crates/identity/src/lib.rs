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

use image::{ImageBuffer, ImageFormat, Pixel};
use sha2::{Digest, Sha256};

pub use decode::DecodeError;
pub use face::FaceDetector;
pub use verdict::{judge, Assessment, Duplicate, Reason};

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
    let found = document::find(rgb);
    let region = match &found {
        document::Found::Document(quad) => quad.bounds(width, height),
        _ => (0, 0, width, height),
    };
    let (rx, ry, rw, rh) = region;
    let (rw, rh) = (rw.max(1), rh.max(1));
    // The region at the width the quality and face checks and the hash work
    // at; interpolated, not averaged: the face detector finds fewer faces in
    // the box-averaged copy.
    let crop = image::imageops::crop_imm(rgb, rx, ry, rw, rh);
    let region_h = ((u64::from(rh) * u64::from(quality::WORK_WIDTH)) / u64::from(rw)).max(1) as u32;
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
