//! The `imageQuality` check: whether the picture is large, sharp and lit
//! enough to read the document on it, and the cut-offs that say so.

use serde_json::json;

use super::{retake, round, Check, QUALITY};
use crate::document::Found;
use crate::Analysis;

/// Shortest document side, in pixels of the upload, that is readable.
pub const MIN_DOCUMENT_PIXELS: u32 = 600;
/// Laplacian variance (at 640 px) under which the image is blurred.
pub const MIN_SHARPNESS: f64 = 60.0;
pub const MIN_BRIGHTNESS: f64 = 60.0;
/// Mean luminance above which an image is overexposed when it is washed
/// out too (contrast under [`MIN_BRIGHT_CONTRAST`]): a white document,
/// scanned or cropped, is as bright (ICAO's specimen page 230, a New York
/// licence 221) but its printing keeps its contrast (58 and 59, where the
/// synthetic card at 2.5 and 3 times its exposure has 42 and 38).
pub const MAX_BRIGHTNESS: f64 = 215.0;
pub const MIN_BRIGHT_CONTRAST: f64 = 48.0;
pub const MIN_CONTRAST: f64 = 20.0;
/// Share of the document blown out to white that hides what is under it.
pub const MAX_GLARE_SHARE: f64 = 0.02;
/// Share of pixels in colour under which the image has none (a photocopy or
/// a grey scan: 0); documents printed in muted colours have 3% and more
/// (a New York licence 3.4%, ICAO's black-and-white specimen page with its
/// colour portrait 7.4%), which their mean chroma (6.8 and 4.3) did not
/// tell from grey.
pub const MIN_COLOUR_SHARE: f64 = 0.01;

/// Resolution, focus, exposure, glare and colour, measured on the document
/// (what is visible of it when it is cut off), else on the whole frame.
pub(super) fn image_quality(a: &Analysis) -> Check {
    let mut reasons = Vec::new();
    let q = &a.quality;
    if a.document_pixels < MIN_DOCUMENT_PIXELS {
        reasons.push(retake(
            "LOW_RESOLUTION",
            QUALITY,
            format!(
                "the document is {} pixels across; at least {MIN_DOCUMENT_PIXELS} are needed to read it",
                a.document_pixels
            ),
        ));
    }
    if q.sharpness < MIN_SHARPNESS {
        reasons.push(retake(
            "BLURRY",
            QUALITY,
            "the image is blurred: hold the camera still and focus on the document",
        ));
    }
    if q.glare_share > MAX_GLARE_SHARE {
        reasons.push(retake(
            "GLARE",
            QUALITY,
            format!(
                "{:.1}% of the document is blown out by a reflection: avoid direct light",
                q.glare_share * 100.0
            ),
        ));
    }
    if q.brightness < MIN_BRIGHTNESS {
        reasons.push(retake(
            "TOO_DARK",
            QUALITY,
            "the image is too dark: take it in better light",
        ));
    } else if q.brightness > MAX_BRIGHTNESS && q.contrast < MIN_BRIGHT_CONTRAST {
        reasons.push(retake(
            "TOO_BRIGHT",
            QUALITY,
            "the image is overexposed: take it in softer light",
        ));
    } else if q.contrast < MIN_CONTRAST {
        reasons.push(retake(
            "LOW_CONTRAST",
            QUALITY,
            "the image has too little contrast to read",
        ));
    }
    if q.colour_share < MIN_COLOUR_SHARE {
        reasons.push(retake(
            "BLACK_AND_WHITE",
            QUALITY,
            "the image has no colour, as a photocopy or a grey scan has: photograph the original document",
        ));
    }
    let on_document = !matches!(a.document, Found::Nothing);
    Check::performed(
        QUALITY,
        reasons,
        json!({
            "width": a.width,
            "height": a.height,
            "documentPixels": a.document_pixels,
            "sharpness": round(q.sharpness, 1),
            "brightness": round(q.brightness, 1),
            "contrast": round(q.contrast, 1),
            "glareShare": round(q.glare_share, 4),
            "colourfulness": round(q.colourfulness, 1),
            "colourShare": round(q.colour_share, 4),
            "darkLevel": round(q.dark_level, 1),
            "measuredOn": if on_document { "document" } else { "frame" },
        }),
    )
}
