//! The `document` check: a whole document, large enough, in the frame, and
//! its format as the outline (or, where read, the zone) tells it.

use serde_json::{json, Value};

use super::{retake, round, Check, DOCUMENT};
use crate::document::{Found, Framing, Quad, MIN_DOCUMENT_SHARE};
use crate::{mrz, Analysis, MrzAttempt};

/// Whether a whole document, large enough, is in the frame.
pub(super) fn document_framing(a: &Analysis) -> Check {
    let (reason, quad, clear) = match &a.document {
        Found::Nothing => (
            Some(retake(
                "NO_DOCUMENT",
                DOCUMENT,
                "no card or passport page was found: place the whole document on a plain, contrasting surface",
            )),
            None,
            false,
        ),
        Found::CutOff(quad) => (
            Some(retake(
                "CUT_OFF",
                DOCUMENT,
                "the document runs out of the frame: all four edges must be visible",
            )),
            Some(quad),
            false,
        ),
        // Only a photo on a background is too small by its share of the
        // frame: on a scanned page the scan's resolution says it all.
        Found::Document(quad)
            if quad.framing == Framing::Background && quad.frame_share < MIN_DOCUMENT_SHARE =>
        (
            Some(retake(
                "DOCUMENT_TOO_SMALL",
                DOCUMENT,
                format!(
                    "the document fills {:.0}% of the image: move closer so it fills most of the frame",
                    quad.frame_share * 100.0
                ),
            )),
            Some(quad),
            true,
        ),
        Found::Document(quad) => (None, Some(quad), true),
    };
    Check::performed(
        DOCUMENT,
        reason.into_iter().collect(),
        document_metrics(quad, clear, zone_format(a)),
    )
}

/// The document's format as its zone tells it, read with every check digit
/// holding: the line length settles what the outline's proportions leave
/// open (a passport page photographed measures near a card).
fn zone_format(a: &Analysis) -> Option<&'static str> {
    let MrzAttempt::Read { reading, .. } = &a.mrz else {
        return None;
    };
    let mrz = reading.mrz.as_ref().ok().filter(|m| m.all_checks_valid())?;
    Some(match mrz.format {
        mrz::Format::Td1 => "ID-1",
        mrz::Format::Td2 | mrz::Format::MrvB => "TD2",
        mrz::Format::Td3 | mrz::Format::MrvA => "TD3",
    })
}

/// `format`: the zone's when it was read, else the outline's nearest.
fn document_metrics(quad: Option<&Quad>, clear: bool, zone: Option<&'static str>) -> Value {
    match quad {
        None => json!({"found": false}),
        Some(q) => {
            let (format, deviation) = q.format();
            json!({
                "found": clear,
                "format": zone.unwrap_or(format),
                "formatFrom": if zone.is_some() { "mrz" } else { "outline" },
                "corners": q.corners.map(|(x, y)| [round(x, 0), round(y, 0)]),
                "frameShare": round(q.frame_share, 3),
                "aspectRatio": round(q.aspect, 3),
                "nearestFormat": format,
                "aspectDeviation": round(deviation, 3),
                "rectangularity": round(q.rectangularity, 3),
                "framing": q.framing.as_str(),
            })
        }
    }
}
