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
//! [`mrz`] reads the machine-readable zone off the image ([`mrz::read_mrz`]:
//! locating, recognising with a [`mrz::LineRecognizer`]) and parses and
//! checks its lines (ICAO 9303). [`analyse_with`] reads it on the
//! full-resolution image when given a recogniser ([`MrzReader`]), and
//! [`judge`] turns the reading into the `mrz` check.
//!
//! Nothing here claims an identity is verified: a pass means these checks found
//! nothing, and the answer lists what was not checked.

pub mod anchored;
pub mod decode;
pub mod document;
pub mod face;
pub mod interrupt;
pub mod jpeg;
pub mod mrz;
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
pub use verdict::{judge, Assessment, Confidence, Decision, Duplicate, Level, Reason, Verdict};

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
    /// Measured on the document's region (what is visible of a cut-off one)
    /// when there is one, else on the frame.
    pub quality: quality::Quality,
    /// Long side of the document (its visible part, or the frame) in pixels of the upload.
    pub document_pixels: u32,
    /// Faces found, best first; `None` when no search ran ([`analyse`]
    /// always searches: the whole frame when no document was found).
    pub faces: Option<Vec<face::Face>>,
    /// Where the faces were looked for.
    pub face_search: face::Searched,
    pub metadata: tamper::Metadata,
    /// `None` for PNG and WebP (no JPEG history to analyse) or a region too small.
    pub ela: Option<tamper::Ela>,
    /// Perceptual hash of the document's region (its visible part; the frame when none was found).
    pub phash: phash::Hash,
    /// The machine-readable zone, read or why not.
    pub mrz: MrzAttempt,
}

/// How [`analyse_with`] reads the machine-readable zone.
pub enum MrzReader<'a> {
    /// Not read: why (no recogniser installed, say), for the answer.
    Off(String),
    /// Read with `recognizer`; `today` resolves two-digit years and says
    /// whether the document has expired.
    On {
        recognizer: &'a (dyn mrz::LineRecognizer + Sync),
        today: mrz::Date,
    },
}

/// The machine-readable zone of an [`Analysis`].
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // one per analysis, never in a collection
pub enum MrzAttempt {
    /// Not attempted, and why.
    Skipped(String),
    /// Searched for and, where found, recognised and checked.
    Read {
        reading: mrz::MrzReading,
        today: mrz::Date,
    },
}

/// Decodes and measures an upload, without reading the machine-readable zone.
pub fn analyse(bytes: &[u8], faces: &mut FaceDetector) -> Result<Analysis, DecodeError> {
    analyse_with(
        bytes,
        faces,
        MrzReader::Off("no text recogniser was given".into()),
    )
}

/// Decodes and measures an upload, reading its machine-readable zone with `reader`.
pub fn analyse_with(
    bytes: &[u8],
    faces: &mut FaceDetector,
    reader: MrzReader,
) -> Result<Analysis, DecodeError> {
    let decoded = decode_watched(bytes)?;
    interrupt::check()?;
    let rgb = &decoded.rgb;
    let width = rgb.width();
    // One averaged copy, at most MID_WIDTH wide, serves the document search
    // (which shrinks it further) and the region's crop: one pass over the
    // full-size pixels instead of two (a profile had the two at 18%).
    let mid = if width > MID_WIDTH {
        std::borrow::Cow::Owned(shrink(rgb, width.div_ceil(MID_WIDTH)))
    } else {
        std::borrow::Cow::Borrowed(rgb)
    };
    let scale = f64::from(width) / f64::from(mid.width());
    interrupt::check()?;
    let found = match document::find(&mid) {
        document::Found::Document(quad) => document::Found::Document(quad),
        // No outline of its own (a card on a keyboard, in a hand): looked
        // for around the holder's face; unless what it finds is most of a
        // straight-edged region the frame cuts, which is then the document
        // running out of the frame (its inner border taken for its edge).
        other => match by_portrait(&mid, faces) {
            Some(quad)
                if !matches!(&other, document::Found::CutOff(cut)
                    if cut.contains(quad.centre()) && quad.frame_share >= 0.5 * cut.frame_share) =>
            {
                document::Found::Document(quad)
            }
            _ => other,
        },
    }
    .scaled(scale);
    interrupt::check()?;
    // The zone is read on a thread of its own beside the checks below (on
    // 2 MP, about 50 ms of recognition beside 60 of the rest), unless the
    // document is surely a card, whose front (told by its portrait, below)
    // has no zone to read.
    std::thread::scope(|threads| {
        let early = match (&reader, &found) {
            (MrzReader::On { .. }, document::Found::Document(quad)) => !quad.surely_a_card(),
            (MrzReader::On { .. }, _) => true,
            (MrzReader::Off(_), _) => false,
        };
        let (found, reader) = (&found, &reader);
        let reading = early.then(|| threads.spawn(move || read_zone(rgb, found, reader)));
        measure(bytes, &decoded, &mid, scale, found, faces, reader, reading)
    })
}

/// [`decode::decode`], given up on as soon as the host asks to stop
/// ([`interrupt`]: the decode then finishes on its own thread, unwatched).
fn decode_watched(bytes: &[u8]) -> Result<decode::Decoded, DecodeError> {
    // Refused from their first bytes or header at once: no thread for them.
    decode::sniff(bytes)?;
    if !interrupt::installed() {
        return decode::decode(bytes);
    }
    let owned: Vec<u8> = bytes.to_vec();
    let (send, receive) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("vigil-decode".into())
        .spawn(move || {
            let _ = send.send(decode::decode(&owned));
        })
        .map_err(|e| DecodeError::Corrupt {
            format: "image",
            detail: format!("no thread to decode it on: {e}"),
        })?;
    loop {
        match receive.recv_timeout(std::time::Duration::from_millis(10)) {
            Ok(decoded) => return decoded,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => interrupt::check()?,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(DecodeError::Corrupt {
                    format: "image",
                    detail: "its decoder failed".into(),
                })
            }
        }
    }
}

/// The document around a face in `frame`, the surest face first (a
/// document's ghost image is a second, smaller face).
fn by_portrait(frame: &RgbImage, faces: &mut FaceDetector) -> Option<document::Quad> {
    let grey = image::imageops::grayscale(frame);
    faces.detect(&grey).iter().take(2).find_map(|face| {
        let face = anchored::FaceBox::from_detected(face, f64::from(frame.width()), (0.0, 0.0));
        anchored::around(frame, face)
    })
}

/// Character pitch over character height of a zone's OCR-B, as read off
/// real zones (a British specimen page: 9.8 px a character, 10.7 px high).
const ZONE_PITCH_PER_HEIGHT: f64 = 0.92;
/// Share of the frame's long side a zone must run across to vouch for a
/// document filling the frame: a TD3 page's lines take about 85% of its
/// width, a TD1 card's 75%; a page on a table, half the frame wide, under 50%.
const MIN_ZONE_SPAN: f64 = 0.6;

/// `reading` is a zone read in the whole frame, every check digit holding,
/// whose lines run across at least [`MIN_ZONE_SPAN`] of `long_side`.
fn zone_spans_frame(reading: &mrz::MrzReading, long_side: u32) -> bool {
    let (Some(zone), Ok(mrz)) = (&reading.zone, &reading.mrz) else {
        return false;
    };
    let span = mrz.format.line_length() as f64 * ZONE_PITCH_PER_HEIGHT * zone.char_height;
    reading.is_valid() && zone.whole_frame && span >= MIN_ZONE_SPAN * f64::from(long_side)
}

/// The document a zone read in the whole frame vouches for, where the
/// outline search found none (`nothing`) or only a region the frame cuts:
/// the frame itself, when it has a document's proportions and the zone,
/// every check digit holding, runs across it; else the page at the zone's
/// foot that fills the frame's width (a passport scanned open: its data
/// page, the facing page above), whose format the zone's lines tell even
/// where a check digit fails (that is the zone's own finding).
fn page_of_zone(
    reading: &mrz::MrzReading,
    width: u32,
    height: u32,
    nothing: bool,
) -> Option<document::Quad> {
    if nothing && zone_spans_frame(reading, width.max(height)) {
        if let Some(frame) = document::frame_vouched_by_zone(width, height) {
            return Some(frame);
        }
    }
    let (Some(zone), Ok(mrz)) = (&reading.zone, &reading.mrz) else {
        return None;
    };
    if !zone.whole_frame {
        return None;
    }
    document::page_of_zone(
        width,
        height,
        zone.bounds,
        zone.upside_down,
        mrz.format.document_mm()?,
    )
}

/// The zone read with `reader`, within `found`'s outline when it is a whole
/// document, else in the whole frame.
fn read_zone(rgb: &RgbImage, found: &document::Found, reader: &MrzReader) -> MrzAttempt {
    match reader {
        MrzReader::Off(why) => MrzAttempt::Skipped(why.clone()),
        MrzReader::On { recognizer, today } => {
            let outline = match found {
                document::Found::Document(quad) => Some(quad),
                _ => None,
            };
            MrzAttempt::Read {
                reading: mrz::read_mrz(rgb, outline, *recognizer, *today),
                today: *today,
            }
        }
    }
}

/// The checks of [`analyse_with`] once the document was looked for; the
/// zone's `reading`, when one was started, is joined at the end.
#[allow(clippy::too_many_arguments)]
fn measure(
    bytes: &[u8],
    decoded: &decode::Decoded,
    mid: &RgbImage,
    scale: f64,
    found: &document::Found,
    faces: &mut FaceDetector,
    reader: &MrzReader,
    reading: Option<std::thread::ScopedJoinHandle<'_, MrzAttempt>>,
) -> Result<Analysis, DecodeError> {
    let rgb = &decoded.rgb;
    let (width, height) = rgb.dimensions();
    // What is visible of a cut-off document is measured too: its brightness
    // and colour, not those of the desk or page beside it.
    let (rx, ry, rw, rh) = match found {
        document::Found::Document(quad) | document::Found::CutOff(quad) => {
            quad.bounds(width, height)
        }
        document::Found::Nothing => (0, 0, width, height),
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
    let crop = image::imageops::crop_imm(mid, mx, my, mw, mh);
    let region = image::imageops::resize(
        &*crop,
        quality::WORK_WIDTH,
        height_at(mw, mh, quality::WORK_WIDTH),
        image::imageops::FilterType::Triangle,
    );
    interrupt::check()?;
    let quality = quality::measure(&region);
    let grey = image::imageops::grayscale(&region);
    interrupt::check()?;
    let (faces_found, face_search) = match found {
        // The format's portrait zone on an upright document, then the rest.
        document::Found::Document(quad) if mw >= mh => {
            let in_zone = faces.detect_in(&grey, face::portrait_zone(quad.format().0));
            if in_zone.is_empty() {
                (faces.detect(&grey), face::Searched::Document)
            } else {
                (in_zone, face::Searched::PortraitZone)
            }
        }
        document::Found::Document(_) | document::Found::CutOff(_) => {
            (faces.detect(&grey), face::Searched::Document)
        }
        // No outline: the region is the whole frame.
        document::Found::Nothing => (faces.detect(&grey), face::Searched::Frame),
    };
    interrupt::check()?;
    let ela = match decoded.format {
        ImageFormat::Jpeg => tamper::ela(rgb, (rx, ry, rw, rh)),
        _ => None,
    };
    // On the full-resolution image: the zone's characters are small. Both
    // formats found (ID-1, TD3) can carry a zone (a card on its back), so it
    // is searched for on every upload but a card's front, within the
    // outline of a whole document, else in the whole frame.
    // A card's front, its portrait found where ID-1 puts it, carries no
    // zone (TD1 prints it on the back): not searched, which saves the
    // recognition of print taken for one (most of an assessment's time).
    interrupt::check()?;
    let card_front = face_search == face::Searched::PortraitZone
        && matches!(found, document::Found::Document(q) if q.surely_a_card());
    let mrz = match (reading, reader) {
        (Some(reading), _) => reading.join().unwrap_or_else(|_| {
            MrzAttempt::Skipped("reading the machine-readable zone failed".into())
        }),
        (None, MrzReader::On { .. }) if card_front => MrzAttempt::Skipped(
            "a card's front (its portrait found) has no machine-readable zone: send its back to have it read".into(),
        ),
        (None, reader) => read_zone(rgb, found, reader),
    };
    // Its thread gave up early, if asked to stop: its reading is not used.
    interrupt::check()?;
    // A zone read in the whole frame with every check digit holding, where
    // no outline was found, running across most of the frame: the frame is
    // the page, when it has a document's proportions (a crop with a margin).
    let document = match (found, &mrz) {
        (
            document::Found::Nothing | document::Found::CutOff(_),
            MrzAttempt::Read { reading, .. },
        ) => page_of_zone(reading, width, height, found == &document::Found::Nothing)
            .map_or_else(|| found.clone(), document::Found::Document),
        _ => found.clone(),
    };
    // What runs out of the frame is a document cut off when it shows one:
    // a corner of its outline in the frame, its holder's face, or a zone
    // read as one. A plain cloth filling the frame or a table's edge
    // across it shows none (their texture is as dense in edges as print).
    let zone_read = matches!(&mrz, MrzAttempt::Read { reading, .. } if reading.mrz.is_ok());
    let document = match document {
        document::Found::CutOff(quad)
            if faces_found.is_empty() && !zone_read && !quad.has_corner_inside(width, height) =>
        {
            document::Found::Nothing
        }
        other => other,
    };
    Ok(Analysis {
        format: decoded.format_name(),
        bytes: bytes.len(),
        sha256: Sha256::digest(bytes).into(),
        width,
        height,
        document_pixels: rw.max(rh),
        document,
        quality,
        faces: Some(faces_found),
        face_search,
        metadata: tamper::metadata(decoded.exif.as_deref()),
        ela,
        phash: phash::hash(&region),
        mrz,
    })
}

/// `image` shrunk by a whole `factor`, each output pixel the mean of a
/// `factor` x `factor` block. Written here because `imageops::thumbnail`
/// (fractional boxes, float arithmetic per output pixel) took a quarter of an
/// assessment in a profile at this size; a whole factor needs only sums.
fn shrink(image: &RgbImage, factor: u32) -> RgbImage {
    let factor = factor.max(1) as usize;
    let (in_w, in_h) = (image.width() as usize, image.height() as usize);
    let (w, h) = ((in_w / factor).max(1), (in_h / factor).max(1));
    let area = (factor * factor) as u32;
    let stride = in_w * 3;
    let used = (w * factor).min(in_w) * 3;
    let raw = image.as_raw();
    // Each output row: its `factor` input rows summed value by value (a
    // loop the compiler vectorises), then each pixel's `factor` columns.
    let mut column_sums = vec![0u32; used];
    let mut out = Vec::with_capacity(w * h * 3);
    for oy in 0..h {
        // A pass over the whole upload: cut short when asked to stop (the
        // caller checks again and gives up).
        if interrupt::pending() {
            return RgbImage::new(1, 1);
        }
        column_sums.fill(0);
        for y in oy * factor..((oy + 1) * factor).min(in_h) {
            let row = &raw[y * stride..y * stride + used];
            for (sum, &v) in column_sums.iter_mut().zip(row) {
                *sum += u32::from(v);
            }
        }
        for block in column_sums.chunks(factor * 3) {
            let mut pixel = [0u32; 3];
            for px in block.chunks_exact(3) {
                pixel[0] += px[0];
                pixel[1] += px[1];
                pixel[2] += px[2];
            }
            out.extend(pixel.map(|v| (v / area) as u8));
        }
    }
    RgbImage::from_raw(w as u32, h as u32, out).unwrap_or_else(|| RgbImage::new(w as u32, h as u32))
}

/// The height of a `w` x `h` image scaled to `width`: in proportion, but never
/// more than [`decode::MAX_ASPECT`] times `width`, so that no working copy
/// grows with a sliver. Uploads are refused past that proportion
/// ([`decode::DecodeError::OutOfProportion`]); a region cut from one (a
/// document's crop) is squeezed to it instead.
pub(crate) fn height_at(w: u32, h: u32, width: u32) -> u32 {
    let most = u64::from(decode::MAX_ASPECT) * u64::from(width.max(1));
    ((u64::from(h) * u64::from(width)) / u64::from(w.max(1))).clamp(1, most) as u32
}

/// `image` scaled to `width` (height in proportion, within [`height_at`]'s
/// bound): averaged when shrinking,
/// which is fast and smooths as a low-pass should; interpolated when growing.
pub(crate) fn to_width<I, P>(image: &I, width: u32) -> ImageBuffer<P, Vec<u8>>
where
    I: image::GenericImageView<Pixel = P>,
    P: Pixel<Subpixel = u8> + 'static,
{
    let (w, h) = image.dimensions();
    let height = height_at(w, h, width);
    if width < w {
        image::imageops::thumbnail(image, width, height)
    } else {
        image::imageops::resize(image, width, height, image::imageops::FilterType::Triangle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_copies_are_never_more_than_four_widths_tall() {
        assert_eq!(height_at(1000, 1500, 640), 960);
        assert_eq!(height_at(5, 12_000, 426), 4 * 426);
        assert_eq!(height_at(1, 12_000, 640), 4 * 640);
        assert_eq!(height_at(12_000, 1, 640), 1);
        assert_eq!(height_at(0, 0, 640), 1);
        let sliver = to_width(&image::GrayImage::new(3, 9000), 426);
        assert_eq!(sliver.dimensions(), (426, 4 * 426));
    }

    #[test]
    fn shrink_gives_each_block_its_mean_and_drops_partial_blocks() {
        // 7 x 5 with factor 2: 3 x 2 blocks, the last column and row dropped.
        let image = RgbImage::from_fn(7, 5, |x, y| {
            image::Rgb([(x * 30 + y) as u8, (y * 40) as u8, 200])
        });
        let small = shrink(&image, 2);
        assert_eq!(small.dimensions(), (3, 2));
        for (ox, oy, p) in small.enumerate_pixels() {
            for c in 0..3 {
                let sum: u32 = (0..2)
                    .flat_map(|dy| (0..2).map(move |dx| (2 * ox + dx, 2 * oy + dy)))
                    .map(|(x, y)| u32::from(image.get_pixel(x, y).0[c]))
                    .sum();
                assert_eq!(p.0[c], (sum / 4) as u8, "pixel ({ox}, {oy}) channel {c}");
            }
        }
        // Smaller than one block: one pixel, never a panic.
        assert_eq!(shrink(&RgbImage::new(1, 1), 3).dimensions(), (1, 1));
    }
}
