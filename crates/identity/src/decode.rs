//! Turning untrusted bytes into pixels, or into an error that says what came.
//!
//! The format is read from the bytes (magic numbers), never from a file name or
//! a content type. Only JPEG, PNG and WebP are decoded. Before any pixel is
//! decoded the header's dimensions are checked against [`MAX_PIXELS`] and
//! [`MAX_SIDE`] and its proportions against [`MAX_ASPECT`], and the decoder
//! runs under an allocation limit, so a small file that claims a huge image
//! (a decompression bomb) is refused without allocating for it. EXIF orientation is applied, so checks see the document
//! the way a person would.

use std::io::Cursor;

use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits, RgbImage};

/// Largest upload the checks accept (10 MiB); the HTTP layer refuses bigger bodies first.
pub const MAX_BYTES: usize = 10 * 1024 * 1024;
/// Largest image, in pixels (40 megapixels: more than any phone camera's default).
pub const MAX_PIXELS: u64 = 40_000_000;
/// Longest side, in pixels.
pub const MAX_SIDE: u32 = 12_000;
/// Most one side may be of the other: 4 to 1. A document is 1.4 to 1.6 to 1
/// and a phone's photo of one at most 2.2 to 1 (a tall screen). The checks
/// scale their working copies to fixed widths, which a sliver turns into
/// millions of rows: a 5x12000 PNG of 266 bytes once made a backend's copy
/// 426 x 5.1 million pixels, beyond cancel (issue 60).
pub const MAX_ASPECT: u32 = 4;
/// Largest decoded image, in bytes, checked from the header before decoding:
/// any image of 8 bits per channel within [`MAX_PIXELS`] (RGBA: 4 bytes a
/// pixel). An image of 16 bits per channel takes twice as many bytes a
/// pixel, so it is accepted up to half as many pixels; a small PNG can claim
/// 36 megapixels of 16-bit RGBA, 288 MB decoded.
pub const MAX_DECODED_BYTES: u64 = MAX_PIXELS * 4;
/// Memory the decoder may allocate: the decoded image and its working buffers.
const MAX_ALLOC: u64 = 256 * 1024 * 1024;

/// Why an upload could not be decoded. Each says what was received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// No bytes at all.
    Empty,
    /// More than [`MAX_BYTES`].
    TooManyBytes { bytes: usize },
    /// A format we do not take, named when recognised (`PDF document`, `HEIC image`, ...).
    Unsupported { received: String },
    /// A supported format whose header claims more than the pixel limits.
    TooManyPixels { width: u32, height: u32 },
    /// One side more than [`MAX_ASPECT`] times the other.
    OutOfProportion { width: u32, height: u32 },
    /// Within the pixel limits, but more than [`MAX_DECODED_BYTES`] decoded
    /// (16 bits per channel).
    TooDeep {
        width: u32,
        height: u32,
        bytes_per_pixel: u16,
    },
    /// A supported format that does not decode (truncated, corrupt).
    Corrupt {
        format: &'static str,
        detail: String,
    },
    /// Stopped by the host ([`crate::interrupt`]) before it was done.
    Interrupted,
}

impl DecodeError {
    /// For people: what was received and what is accepted.
    pub fn message(&self) -> String {
        match self {
            DecodeError::Empty => "the image is empty (0 bytes)".into(),
            DecodeError::TooManyBytes { bytes } => {
                format!("the image is {bytes} bytes; at most {MAX_BYTES} are accepted")
            }
            DecodeError::Unsupported { received } => {
                format!("received {received}; only JPEG, PNG and WebP images are accepted")
            }
            DecodeError::TooManyPixels { width, height } => format!(
                "the image is {width}x{height} pixels; at most {MAX_PIXELS} pixels and {MAX_SIDE} per side are accepted"
            ),
            DecodeError::OutOfProportion { width, height } => format!(
                "the image is {width}x{height} pixels, {:.1} to 1; at most {MAX_ASPECT} to 1 is accepted \
                 (a document, or a photo of one, is about 1.5 to 1)",
                f64::from(*width.max(height)) / f64::from((*width.min(height)).max(1))
            ),
            DecodeError::TooDeep {
                width,
                height,
                bytes_per_pixel,
            } => format!(
                "the image is {width}x{height} pixels of {bytes_per_pixel} bytes each; at most \
                 {MAX_DECODED_BYTES} bytes decoded are accepted (send 8 bits per channel, or fewer pixels)"
            ),
            DecodeError::Interrupted => "the assessment was interrupted".into(),
            DecodeError::Corrupt { format, detail } => {
                format!("the {format} image could not be decoded ({detail}); it may be truncated or damaged")
            }
        }
    }
}

/// An upload as the checks see it.
pub struct Decoded {
    pub format: ImageFormat,
    /// Oriented as EXIF says, RGB (alpha dropped).
    pub rgb: RgbImage,
    /// Raw EXIF (TIFF structure), when the file carries it.
    pub exif: Option<Vec<u8>>,
}

impl Decoded {
    pub fn format_name(&self) -> &'static str {
        format_name(self.format)
    }
}

pub fn format_name(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Jpeg => "JPEG",
        ImageFormat::Png => "PNG",
        ImageFormat::WebP => "WebP",
        _ => "image",
    }
}

/// The format of `bytes` if it is one we decode; otherwise an error naming what it is.
pub fn sniff(bytes: &[u8]) -> Result<ImageFormat, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    if bytes.len() > MAX_BYTES {
        return Err(DecodeError::TooManyBytes { bytes: bytes.len() });
    }
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return Ok(ImageFormat::Jpeg);
    }
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Ok(ImageFormat::Png);
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return Ok(ImageFormat::WebP);
    }
    Err(DecodeError::Unsupported {
        received: describe_unsupported(bytes),
    })
}

/// A name for bytes we do not decode, for the error message.
fn describe_unsupported(bytes: &[u8]) -> String {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    let named = if starts(b"%PDF-") {
        "a PDF document"
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        "a GIF image"
    } else if starts(b"BM") {
        "a BMP image"
    } else if starts(b"II*\0") || starts(b"MM\0*") {
        "a TIFF image"
    } else if bytes.len() >= 12 && &bytes[4..8] == b"ftyp" {
        match &bytes[8..12] {
            b"avif" | b"avis" => "an AVIF image",
            b"heic" | b"heix" | b"hevc" | b"hevx" | b"heim" | b"heis" | b"mif1" | b"msf1" => {
                "a HEIC/HEIF image"
            }
            _ => "an ISO media file (MP4, MOV or similar)",
        }
    } else if starts(b"PK\x03\x04") {
        "a ZIP archive (or an office document)"
    } else if starts(b"<") || starts(b"\xEF\xBB\xBF<") {
        "text that looks like HTML, XML or SVG"
    } else {
        ""
    };
    if !named.is_empty() {
        return named.to_owned();
    }
    let head: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!(
        "{} bytes of an unrecognised format (starting {})",
        bytes.len(),
        head.join(" ")
    )
}

/// Decodes an upload within the limits, oriented, as RGB.
pub fn decode(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    let format = sniff(bytes)?;
    let name = format_name(format);
    let corrupt = |e: image::ImageError| DecodeError::Corrupt {
        format: name,
        detail: e.to_string(),
    };
    if format == ImageFormat::Jpeg {
        crate::jpeg::check(bytes).map_err(|detail| DecodeError::Corrupt {
            format: name,
            detail,
        })?;
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(|e| refused(e, bytes, name))?;
    let (width, height) = decoder.dimensions();
    if width == 0 || height == 0 {
        return Err(DecodeError::Corrupt {
            format: name,
            detail: format!("its header says {width}x{height} pixels"),
        });
    }
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(DecodeError::TooManyPixels { width, height });
    }
    if out_of_proportion(width, height) {
        return Err(DecodeError::OutOfProportion { width, height });
    }
    if decoder.total_bytes() > MAX_DECODED_BYTES {
        return Err(DecodeError::TooDeep {
            width,
            height,
            bytes_per_pixel: decoder.color_type().bytes_per_pixel().into(),
        });
    }
    // Metadata is optional: a file whose EXIF is damaged still has pixels.
    let exif = decoder.exif_metadata().ok().flatten();
    let orientation = decoder.orientation().ok();
    let mut image = DynamicImage::from_decoder(decoder).map_err(corrupt)?;
    if let Some(orientation) = orientation {
        image.apply_orientation(orientation);
    }
    Ok(Decoded {
        format,
        rgb: image.into_rgb8(),
        exif,
    })
}

/// Whether one side is more than [`MAX_ASPECT`] times the other.
pub fn out_of_proportion(width: u32, height: u32) -> bool {
    u64::from(width.max(height)) > u64::from(MAX_ASPECT) * u64::from(width.min(height))
}

/// The error of a decoder that refused the header: the limits (a bomb) or damage.
fn refused(e: image::ImageError, bytes: &[u8], name: &'static str) -> DecodeError {
    if let image::ImageError::Limits(_) = e {
        if let Some((width, height)) = header_dimensions(bytes) {
            return DecodeError::TooManyPixels { width, height };
        }
    }
    DecodeError::Corrupt {
        format: name,
        detail: e.to_string(),
    }
}

/// The dimensions a header claims, read without the limits, for the error message.
fn header_dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    // PNG's first chunk is IHDR, width and height at fixed offsets; the png
    // crate itself refuses to read on when they are over its limit.
    if bytes.starts_with(b"\x89PNG") && bytes.len() >= 24 && &bytes[12..16] == b"IHDR" {
        let be = |at: usize| {
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        return Some((be(16), be(20)));
    }
    let mut reader = ImageReader::new(Cursor::new(bytes));
    reader.no_limits();
    reader.with_guessed_format().ok()?.into_dimensions().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_apart_by_their_bytes() {
        assert_eq!(sniff(b"\xFF\xD8\xFF\xE0rest"), Ok(ImageFormat::Jpeg));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest"), Ok(ImageFormat::Png));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Ok(ImageFormat::WebP));
        let unsupported = |bytes: &[u8]| match sniff(bytes) {
            Err(DecodeError::Unsupported { received }) => received,
            other => panic!("{other:?}"),
        };
        assert_eq!(unsupported(b"%PDF-1.7\n"), "a PDF document");
        assert_eq!(
            unsupported(b"\0\0\0\x18ftypheic\0\0\0\0"),
            "a HEIC/HEIF image"
        );
        assert!(unsupported(b"\x01\x02\x03").contains("3 bytes of an unrecognised format"));
        assert_eq!(sniff(b""), Err(DecodeError::Empty));
    }

    #[test]
    fn a_jpeg_cut_short_is_refused_as_corrupt_with_its_reason() {
        let image =
            image::RgbImage::from_fn(64, 48, |x, y| image::Rgb([x as u8 * 4, y as u8 * 5, 90]));
        let mut jpeg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 85)
            .encode_image(&image)
            .unwrap();
        assert!(decode(&jpeg).is_ok());
        // Cut, and cut with an end marker appended (the whole file, cut
        // before its end marker, is the one cut that sealing restores).
        let cuts = [4, 20, jpeg.len() / 2, jpeg.len() - 2];
        let sealed = cuts[..3]
            .iter()
            .map(|&cut| [&jpeg[..cut], &[0xFF, 0xD9]].concat());
        for bytes in cuts.iter().map(|&cut| jpeg[..cut].to_vec()).chain(sealed) {
            match decode(&bytes) {
                Err(DecodeError::Corrupt { detail, .. }) => {
                    assert!(detail.contains("cut short"), "{}: {detail}", bytes.len())
                }
                other => panic!("{}: {:?}", bytes.len(), other.map(|_| "decoded")),
            }
        }
    }

    /// A valid PNG signature and IHDR claiming `width` x `height` pixels of
    /// `depth` bits per channel and colour type `colour`, then an empty IDAT
    /// (the decoder reads up to the first) and nothing.
    fn png_header(width: u32, height: u32, depth: u8, colour: u8) -> Vec<u8> {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&width.to_be_bytes());
        png.extend_from_slice(&height.to_be_bytes());
        png.extend_from_slice(&[depth, colour, 0, 0, 0]);
        let crc = crc32(&png[12..]);
        png.extend_from_slice(&crc.to_be_bytes());
        png.extend_from_slice(b"\0\0\0\0IDAT");
        png.extend_from_slice(&crc32(b"IDAT").to_be_bytes());
        png
    }

    #[test]
    fn sixteen_bits_a_channel_are_refused_past_the_decoded_size_before_decoding() {
        // 36 megapixels of 16-bit RGBA: 288 MB decoded.
        match decode(&png_header(6000, 6000, 16, 6)) {
            Err(DecodeError::TooDeep {
                width: 6000,
                height: 6000,
                bytes_per_pixel: 8,
            }) => {}
            other => panic!("{:?}", other.map(|_| "decoded")),
        }
        // As many pixels at 8 bits pass the size checks (and then, headers
        // only, fail to decode).
        assert!(matches!(
            decode(&png_header(6000, 6000, 8, 6)),
            Err(DecodeError::Corrupt { .. })
        ));
    }

    #[test]
    fn slivers_are_refused_with_their_proportions_before_decoding() {
        // Issue 60's 5x12000 PNG (a header is enough: refused before decoding).
        for (w, h) in [(5, 12_000), (12_000, 5), (1, 5), (300, 6000), (100, 12_000)] {
            match decode(&png_header(w, h, 8, 2)) {
                Err(e @ DecodeError::OutOfProportion { .. }) => {
                    assert_eq!(
                        e,
                        DecodeError::OutOfProportion {
                            width: w,
                            height: h
                        }
                    );
                    let ratio = format!("{:.1} to 1", f64::from(w.max(h)) / f64::from(w.min(h)));
                    assert!(e.message().contains(&ratio), "{}", e.message());
                }
                other => panic!("{w}x{h}: {:?}", other.map(|_| "decoded")),
            }
        }
        // 4 to 1 passes the checks (and then, a header only, fails to decode).
        for (w, h) in [(3000, 12_000), (4, 1), (1, 1)] {
            assert!(
                matches!(
                    decode(&png_header(w, h, 8, 2)),
                    Err(DecodeError::Corrupt { .. })
                ),
                "{w}x{h}"
            );
        }
    }

    #[test]
    fn a_header_claiming_a_huge_image_is_refused_before_decoding() {
        let png = png_header(100_000, 100_000, 8, 2);
        match decode(&png) {
            Err(DecodeError::TooManyPixels { width, height }) => {
                assert_eq!((width, height), (100_000, 100_000))
            }
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("decoded"),
        }
    }

    /// CRC-32 (ISO 3309) of a PNG chunk, so the test's header is valid.
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
}
