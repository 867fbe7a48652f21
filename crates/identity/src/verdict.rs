//! From measures to an answer: reasons, result, level, score, confidence.
//!
//! Six checks, each a function that gives its reasons and its entry under
//! `checks`: `image_quality`, `document_framing`, `face`, `mrz`,
//! `tampering`, `duplicates`. [`judge`] joins them in that order, which is
//! the order of the reasons and of `checks`, adds up the points and picks the
//! [`Level`]; the result ([`Verdict`]) and the [`Decision`] follow from the level.
//!
//! Two kinds of reason, kept apart as Veriff keeps "resubmission requested"
//! apart from "declined":
//!
//! - **Retake** reasons (quality and framing: `LOW_RESOLUTION`, `BLURRY`,
//!   `GLARE`, `TOO_DARK`, `TOO_BRIGHT`, `LOW_CONTRAST`, `BLACK_AND_WHITE`,
//!   `NO_DOCUMENT`, `CUT_OFF`, `DOCUMENT_TOO_SMALL`, and `MRZ_UNREADABLE`):
//!   the image cannot be assessed as it is. Level 7, `Review`, `retryable`,
//!   decision `resubmit`. The face check then gives no `NO_FACE`, nor the
//!   MRZ check `MRZ_CHECK_DIGIT`: a portrait missed or a digit misread on a
//!   picture that must be taken again says nothing about the document.
//! - **Concern** reasons carry points: `DUPLICATE_IMAGE` 75,
//!   `MRZ_CHECK_DIGIT` 75, `NO_FACE` 60, `DOCUMENT_EXPIRED` 60,
//!   `EDITING_SOFTWARE` 60, `COMPRESSION_INCONSISTENT` 40,
//!   `NO_CAMERA_METADATA` 10. Tampering signals together count at most 75, so
//!   they can ask for a person but never fail an image alone. The total (at most
//!   100) is `RiskScore`, and levels follow the transaction cut-offs and
//!   numbers: 0 at 90 (`Failed`), 1 at 75 and 6 at 60 (`Review`), 3 at 40, 4
//!   at 20, else 5 (`Passed`). Level 2 (a transaction's hard rule) has no
//!   counterpart here.
//!
//! A `Failed` outcome outranks a retake; a retake outranks the score levels.
//! Score-only integrators are not misled: a retake scores at least 50.

use serde_json::{json, Map, Value};

use crate::document::{Found, Framing, Quad, MIN_DOCUMENT_SHARE};
use crate::mrz::{self, CheckOutcome, Mrz, MrzReading, ReadFailure, Reading};
use crate::{phash, Analysis, MrzAttempt};

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
/// ELA: how far the worst cells may stand out from the median before it is a signal.
pub const MAX_ELA_OUTLIER_RATIO: f64 = 10.0;
/// ELA: below this median error the image is too clean (flat, or saved at
/// the analysis quality) for the ratio to mean anything.
pub const MIN_ELA_MEDIAN: f64 = 0.002;
/// MRZ: the least sure character's probability from which a reading whose
/// check digit fails counts as clean (`MRZ_CHECK_DIGIT`) rather than a
/// misreading (`MRZ_UNREADABLE`). ICAO's specimen rendered sharp on a 2 MP
/// photo reads at 0.67 (its least sure character a `0` for the `O` the
/// nationality's type fixes), print taken for a zone at 0.01 to 0.05. On
/// the real zones of tests/tests/e2e/identity_real.rs, the four read with every
/// check digit holding have their least sure character at 0.24 (a sharp
/// Icelandic passport), 0.54, 0.64 and 0.64: the zone's least sure
/// character (mostly a filler in a long run, or a country code's `O`) does
/// not tell a misread from a clean read. So a failing digit is taken for
/// the document's when the characters it covers, and it, read at this level
/// (a specimen passport whose printed number `01PP30000` has check digit 2
/// where 9 is printed: every one at 0.8 or more, its fillers at 0.2), or
/// the whole zone does; else for a misread (a retake, not a person).
pub const MIN_MRZ_CONFIDENCE: f32 = 0.6;
/// MRZ: the fillers (`<`) a reading unsure or not a zone must show to be
/// taken for a zone read badly (`MRZ_UNREADABLE`) rather than other print.
pub const MIN_ZONE_FILLERS: usize = 4;
/// Most points the tampering signals add together.
const TAMPERING_CAP: f64 = 75.0;
/// Points from which an image fails, retake or not.
const CRITICAL_POINTS: f64 = 90.0;

/// An earlier assessment of the same picture.
#[derive(Clone, Debug, PartialEq)]
pub struct Duplicate {
    pub assessment_id: String,
    /// Differing bits of the 256-bit perceptual hashes.
    pub distance: u32,
    /// How many earlier assessments matched.
    pub matches: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Reason {
    pub code: &'static str,
    pub check: &'static str,
    pub message: String,
    /// 0 for retake reasons.
    pub points: f64,
}

/// `RiskLevel`, numbered as a transaction's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Critical = 0,
    High = 1,
    Monitor = 3,
    Low = 4,
    Safe = 5,
    Caution = 6,
    /// The image cannot be assessed as it is.
    Retake = 7,
}

impl Level {
    /// Cut-offs under [`CRITICAL_POINTS`], highest first; under all of them, `Safe`.
    const CUTOFFS: [(f64, Level); 4] = [
        (75.0, Level::High),
        (60.0, Level::Caution),
        (40.0, Level::Monitor),
        (20.0, Level::Low),
    ];

    /// The level of `points`: critical outranks a retake, which outranks the cut-offs.
    fn of(points: f64, retake: bool) -> Level {
        if points >= CRITICAL_POINTS {
            Level::Critical
        } else if retake {
            Level::Retake
        } else {
            Self::CUTOFFS
                .iter()
                .find(|(cutoff, _)| points >= *cutoff)
                .map_or(Level::Safe, |&(_, level)| level)
        }
    }

    /// The number the answer and the record carry.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// `RiskLevelLabel`.
    pub fn label(self) -> &'static str {
        match self {
            Level::Critical => "Critical risk, document declined",
            Level::High => "High risk, manual verification required",
            Level::Monitor => "Monitor closely",
            Level::Low => "Low risk, auto approved",
            Level::Safe => "Safe zone, pass",
            Level::Caution => "Caution, review recommended",
            Level::Retake => "Additional verification needed: retake the photo",
        }
    }

    /// `Result`.
    pub fn verdict(self) -> Verdict {
        match self {
            Level::Critical => Verdict::Failed,
            Level::High | Level::Caution | Level::Retake => Verdict::Review,
            Level::Monitor | Level::Low | Level::Safe => Verdict::Passed,
        }
    }

    /// `decision`.
    pub fn decision(self) -> Decision {
        match self {
            Level::Critical => Decision::Decline,
            Level::Retake => Decision::Resubmit,
            Level::High | Level::Caution => Decision::Review,
            Level::Monitor | Level::Low | Level::Safe => Decision::Accept,
        }
    }
}

/// An enum of the answer's words, each variant with its spelling.
macro_rules! spelled {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            $($variant),+
        }

        impl $name {
            /// As the answer spells it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }
    };
}

spelled! {
    /// `Result`.
    Verdict { Passed => "Passed", Review => "Review", Failed => "Failed" }
}

spelled! {
    /// `decision`: a retake and a review are both `Review`, but only the
    /// retake is the person's to fix.
    Decision { Accept => "accept", Review => "review", Resubmit => "resubmit", Decline => "decline" }
}

spelled! {
    /// `ConfidenceLevel`: how much the checks could see.
    Confidence { Low => "Low", Medium => "Medium", High => "High" }
}

/// The answer, before it is given an id.
#[derive(Clone, Debug)]
pub struct Assessment {
    pub result: Verdict,
    pub level: Level,
    pub score: f64,
    pub confidence: Confidence,
    pub decision: Decision,
    pub retryable: bool,
    pub reasons: Vec<Reason>,
    checks: Map<String, Value>,
    not_performed: Vec<Value>,
    image: Value,
}

const QUALITY: &str = "imageQuality";
const DOCUMENT: &str = "document";
const FACE: &str = "face";
const TAMPERING: &str = "tampering";
const DUPLICATES: &str = "duplicates";
const MRZ: &str = "mrz";

fn retake(code: &'static str, check: &'static str, message: impl Into<String>) -> Reason {
    Reason {
        code,
        check,
        message: message.into(),
        points: 0.0,
    }
}

fn concern(
    code: &'static str,
    check: &'static str,
    points: f64,
    message: impl Into<String>,
) -> Reason {
    Reason {
        code,
        check,
        message: message.into(),
        points,
    }
}

/// One check's part of the answer.
struct Check {
    name: &'static str,
    reasons: Vec<Reason>,
    /// Its entry under `checks`.
    entry: Value,
}

impl Check {
    /// A check that ran: its outcome follows from its reasons.
    fn performed(name: &'static str, reasons: Vec<Reason>, metrics: Value) -> Check {
        let entry = json!({"outcome": outcome(&reasons), "metrics": metrics});
        Check {
            name,
            reasons,
            entry,
        }
    }

    fn skipped(name: &'static str, why: &str) -> Check {
        Check {
            name,
            reasons: Vec::new(),
            entry: json!({"outcome": "not_performed", "reason": why}),
        }
    }
}

/// Judges an analysed upload, given the earlier assessment it duplicates, if any.
pub fn judge(a: &Analysis, duplicate: Option<&Duplicate>) -> Assessment {
    let quality = image_quality(a);
    let framing = document_framing(a);
    // Every reason these two give asks for a retake.
    let image_retake = !(quality.reasons.is_empty() && framing.reasons.is_empty());
    let zone = mrz_check(a, image_retake);
    let retake_needed = image_retake || zone.reasons.iter().any(|r| r.points == 0.0);
    let mrz_read = zone.entry["outcome"] != "not_performed";
    let mrz_skipped = zone.entry["reason"].as_str().map(str::to_owned);
    let mut reasons = Vec::new();
    let mut checks = Map::new();
    for check in [
        quality,
        framing,
        face(a, retake_needed),
        zone,
        tampering(a),
        duplicates(a, duplicate),
    ] {
        reasons.extend(check.reasons);
        checks.insert(check.name.into(), check.entry);
    }
    let points = points(&reasons);
    let level = Level::of(points, retake_needed);
    Assessment {
        result: level.verdict(),
        level,
        score: score(points, level),
        confidence: confidence(a, level),
        decision: level.decision(),
        retryable: retake_needed || reasons.iter().any(|r| r.code == "NO_FACE"),
        reasons,
        checks,
        not_performed: not_performed((!mrz_read).then(|| {
            mrz_skipped.unwrap_or_else(|| "the machine-readable zone is not read".into())
        })),
        image: upload(a),
    }
}

/// Resolution, focus, exposure, glare and colour, measured on the document
/// (what is visible of it when it is cut off), else on the whole frame.
fn image_quality(a: &Analysis) -> Check {
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

/// Whether a whole document, large enough, is in the frame.
fn document_framing(a: &Analysis) -> Check {
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

/// A portrait on the document; not asked for when the picture must be taken
/// again anyway (see the module's doc).
fn face(a: &Analysis, retake_needed: bool) -> Check {
    let Some(faces) = &a.faces else {
        return Check::skipped(FACE, "the portrait was not searched");
    };
    let mut reasons = Vec::new();
    if faces.is_empty() && !retake_needed {
        reasons.push(concern(
            "NO_FACE",
            FACE,
            60.0,
            "no portrait was found on the document (if this is the back, send the side with the photo)",
        ));
    }
    let best = faces.first().map(|f| {
        json!({"x": f.x, "y": f.y, "width": f.width, "height": f.height, "score": round(f.score, 2)})
    });
    Check::performed(
        FACE,
        reasons,
        json!({
            "faces": faces.len(),
            "best": best,
            "searched": a.face_search.as_str(),
            "searchedWidth": crate::face::WORK_WIDTH,
        }),
    )
}

/// The machine-readable zone: read, its check digits, the expiry date.
///
/// - No zone found: on a passport page (TD3), which always carries one,
///   `MRZ_UNREADABLE`; on a card (ID-1), whose front has none, or where no
///   document was found, the check is not performed.
/// - Text that is no zone: `MRZ_UNREADABLE` on a passport page when it shows
///   at least [`MIN_ZONE_FILLERS`] fillers, else not performed (print taken
///   for a zone: a card's front, or a card outlined in a page's proportions).
/// - A zone whose check digits do not all hold (after the correction of
///   confusable characters): `MRZ_CHECK_DIGIT` when it read cleanly (every
///   character at least [`MIN_MRZ_CONFIDENCE`], or every one a failing
///   check digit covers; no line repaired, no ambiguity) on an image that
///   needs no retake, else `MRZ_UNREADABLE` on
///   a clean reading or a passport page's reading with its fillers, and not
///   performed otherwise (print read unsurely as a zone).
/// - An expiry date, its check digit holding, before today: `DOCUMENT_EXPIRED`.
fn mrz_check(a: &Analysis, image_retake: bool) -> Check {
    let (reading, today) = match &a.mrz {
        MrzAttempt::Skipped(why) => return Check::skipped(MRZ, why),
        MrzAttempt::Read { reading, today } => (reading, *today),
    };
    let passport = match &a.document {
        Found::Document(q) | Found::CutOff(q) => q.format().0 == "TD3",
        Found::Nothing => false,
    };
    // Fillers in what was recognised: a zone read badly still shows them
    // (every format has at least the names' `<<`); print taken for a zone
    // (a card's outline read as a page's proportions) has none.
    let looks_like_zone = reading.text.matches('<').count() >= MIN_ZONE_FILLERS;
    let unreadable = |why: &str| {
        retake(
            "MRZ_UNREADABLE",
            MRZ,
            format!("the machine-readable zone {why}: photograph the whole page, sharp and without glare on the two lines at its bottom"),
        )
    };
    let m = match &reading.mrz {
        Err(ReadFailure::Recognizer(e)) => {
            return Check::skipped(MRZ, &format!("the zone's characters could not be recognised ({e})"))
        }
        Err(ReadFailure::NoZone) if passport => {
            return Check::performed(
                MRZ,
                vec![unreadable("was not found")],
                mrz_metrics(reading, None),
            )
        }
        Err(ReadFailure::NoZone) => {
            return Check::skipped(
                MRZ,
                "no machine-readable zone was found (a card's front has none)",
            )
        }
        Err(ReadFailure::Mrz(_)) if passport && looks_like_zone => {
            return Check::performed(
                MRZ,
                vec![unreadable("could not be read")],
                mrz_metrics(reading, None),
            )
        }
        Err(ReadFailure::Mrz(e)) => {
            return Check::skipped(
                MRZ,
                &format!("no machine-readable zone could be read (a card's front has none; the text found: {e})"),
            )
        }
        Ok(m) => m,
    };
    let as_read = m.reading == Reading::Failed && m.repaired_lines.is_empty();
    // Every character a check digit covers (and the digit) read surely: a
    // failing one is then the document's, not the reading's. The least
    // sure characters of a zone are mostly elsewhere (the fillers of long
    // runs, a country code's O for 0), and say nothing of this field.
    let surely_read = |checked: mrz::Checked| {
        m.format.covered_by(checked).iter().all(|&(line, column)| {
            reading
                .char_probs
                .get(line)
                .and_then(|l| l.get(column))
                .is_some_and(|&p| p >= MIN_MRZ_CONFIDENCE)
        })
    };
    let clean =
        as_read && (reading.confidence >= MIN_MRZ_CONFIDENCE || m.failed_checks().any(surely_read));
    // A zone: read clearly, or a passport page's reading with its fillers.
    let a_zone = clean || (passport && looks_like_zone);
    if !m.all_checks_valid() && !a_zone {
        // On a card, lines of print taken for a zone and read as one, unsurely.
        return Check::skipped(
            MRZ,
            "no machine-readable zone could be read (a card's front has none; the lines found read unsurely, their check digits failing)",
        );
    }
    let mut reasons = Vec::new();
    if !m.all_checks_valid() {
        if clean && !image_retake {
            let failed: Vec<&str> = m.failed_checks().map(|c| c.as_str()).collect();
            reasons.push(concern(
                "MRZ_CHECK_DIGIT",
                MRZ,
                75.0,
                format!(
                    "the machine-readable zone reads clearly but its check digit fails ({}): a sign of an altered or forged document",
                    failed.join(", ")
                ),
            ));
        } else {
            reasons.push(unreadable(
                "could not be read reliably (a check digit fails)",
            ));
        }
    }
    let expiry_holds = m
        .checks
        .iter()
        .any(|c| c.checked == mrz::Checked::ExpiryDate && c.outcome == CheckOutcome::Valid);
    if expiry_holds && m.expired(today) == Some(true) {
        let expiry = m.expiry_date.date.map_or(String::new(), |d| d.to_string());
        reasons.push(concern(
            "DOCUMENT_EXPIRED",
            MRZ,
            60.0,
            format!("the document expired on {expiry}"),
        ));
    }
    Check::performed(MRZ, reasons, mrz_metrics(reading, Some((m, today))))
}

/// The zone's fields and each check digit's outcome.
fn mrz_metrics(reading: &MrzReading, parsed: Option<(&Mrz, mrz::Date)>) -> Value {
    let zone = reading.zone.as_ref().map(|z| {
        json!({
            "lines": z.lines,
            "upsideDown": z.upside_down,
            "skewDegrees": round(z.skew_degrees, 1),
            "charHeight": round(z.char_height, 1),
            "wholeFrame": z.whole_frame,
        })
    });
    let Some((m, today)) = parsed else {
        return json!({
            "found": reading.zone.is_some(),
            "zone": zone,
            "confidence": round(f64::from(reading.confidence), 3),
        });
    };
    let checks: Map<String, Value> = m
        .checks
        .iter()
        .map(|c| {
            let outcome = match c.outcome {
                CheckOutcome::Valid => json!({"valid": true}),
                CheckOutcome::Invalid { printed, computed } => {
                    json!({"valid": false, "printed": printed.to_string(), "computed": computed})
                }
            };
            (c.checked.as_str().to_owned(), outcome)
        })
        .collect();
    let date = |d: &mrz::MrzDate| d.date.map(|d| d.to_string());
    let sex = match m.sex {
        mrz::Sex::Male => Some("M"),
        mrz::Sex::Female => Some("F"),
        mrz::Sex::Unspecified => Some("X"),
        mrz::Sex::Invalid(_) => None,
    };
    let (reading_name, candidates) = match m.reading {
        Reading::Valid => ("valid", None),
        Reading::Corrected => ("corrected", None),
        Reading::Ambiguous { candidates } => ("ambiguous", Some(candidates)),
        Reading::Failed => ("failed", None),
    };
    let corrections: Vec<Value> = m
        .corrections
        .iter()
        .map(|c| {
            json!({
                "line": c.line + 1,
                "column": c.column + 1,
                "read": c.read.to_string(),
                "corrected": c.corrected.to_string(),
                "field": field_name(c.field),
            })
        })
        .collect();
    json!({
        "found": true,
        "format": m.format.as_str(),
        "documentType": m.document_type,
        "issuingState": m.issuing_state,
        "documentNumber": m.document_number,
        "primaryName": m.primary_name,
        "secondaryName": m.secondary_name,
        "nationality": m.nationality,
        "birthDate": date(&m.birth_date),
        "expiryDate": date(&m.expiry_date),
        "expired": m.expired(today),
        "sex": sex,
        "optionalData": m.optional_data,
        "optionalData2": m.optional_data_2,
        "checkDigits": checks,
        "allCheckDigitsValid": m.all_checks_valid(),
        "reading": reading_name,
        "candidates": candidates,
        "corrections": corrections,
        "correctedLines": (m.reading == Reading::Corrected).then_some(&m.lines),
        "lines": m.lines,
        "recognised": reading.text,
        "repairedLines": m.repaired_lines.iter().map(|l| l + 1).collect::<Vec<_>>(),
        "confidence": round(f64::from(reading.confidence), 3),
        "zone": zone,
    })
}

fn field_name(field: mrz::Field) -> String {
    use mrz::Field;
    match field {
        Field::DocumentType => "documentType".into(),
        Field::IssuingState => "issuingState".into(),
        Field::DocumentNumber => "documentNumber".into(),
        Field::Names => "names".into(),
        Field::Nationality => "nationality".into(),
        Field::BirthDate => "birthDate".into(),
        Field::Sex => "sex".into(),
        Field::ExpiryDate => "expiryDate".into(),
        Field::OptionalData => "optionalData".into(),
        Field::OptionalData2 => "optionalData2".into(),
        Field::CheckDigit(c) => format!("{}CheckDigit", c.as_str()),
    }
}

/// Signs of editing: an editor in the metadata, a region that recompresses
/// unlike the rest, no camera named.
fn tampering(a: &Analysis) -> Check {
    let mut reasons = Vec::new();
    let m = &a.metadata;
    if let Some(editor) = m.editor {
        reasons.push(concern(
            "EDITING_SOFTWARE",
            TAMPERING,
            60.0,
            format!("the file was last saved by an image editor ({editor})"),
        ));
    }
    if let Some(ela) = &a.ela {
        if ela.median >= MIN_ELA_MEDIAN && ela.outlier_ratio > MAX_ELA_OUTLIER_RATIO {
            reasons.push(concern(
                "COMPRESSION_INCONSISTENT",
                TAMPERING,
                40.0,
                "part of the image recompresses unlike the rest, as pasted-in content does",
            ));
        }
    }
    if m.camera.is_none() {
        reasons.push(concern(
            "NO_CAMERA_METADATA",
            TAMPERING,
            10.0,
            "the file names no camera (screenshots, exports and some messaging apps drop it)",
        ));
    }
    let ela = a.ela.map(|e| {
        json!({"pixels": e.pixels, "median": round(e.median, 4), "outlierRatio": round(e.outlier_ratio, 2)})
    });
    Check::performed(
        TAMPERING,
        reasons,
        json!({
            "format": a.format,
            "exif": m.has_exif,
            "software": m.software,
            "camera": m.camera,
            "errorLevelAnalysis": ela,
        }),
    )
}

/// The same picture assessed before (the caller looks it up by hash).
fn duplicates(a: &Analysis, duplicate: Option<&Duplicate>) -> Check {
    let reasons = duplicate
        .map(|d| {
            concern(
                "DUPLICATE_IMAGE",
                DUPLICATES,
                75.0,
                format!(
                    "the same picture was assessed before (assessment {}, {} of 256 hash bits differ)",
                    d.assessment_id, d.distance
                ),
            )
        })
        .into_iter()
        .collect();
    Check::performed(
        DUPLICATES,
        reasons,
        json!({
            "perceptualHash": phash::to_hex(&a.phash),
            "maxDistance": phash::DUPLICATE_DISTANCE,
            "duplicateOf": duplicate.map(|d| d.assessment_id.as_str()),
            "distance": duplicate.map(|d| d.distance),
            "matches": duplicate.map_or(0, |d| d.matches),
        }),
    )
}

/// The reasons' points, tampering's capped at [`TAMPERING_CAP`], at most 100.
fn points(reasons: &[Reason]) -> f64 {
    let tampering: f64 = reasons
        .iter()
        .filter(|r| r.check == TAMPERING)
        .map(|r| r.points)
        .sum();
    let other: f64 = reasons
        .iter()
        .filter(|r| r.check != TAMPERING)
        .map(|r| r.points)
        .sum();
    // `+ 0.0`: an empty float sum is -0.0, which JSON would show as such.
    (other + tampering.min(TAMPERING_CAP)).clamp(0.0, 100.0) + 0.0
}

/// `RiskScore`: the points, but at least 50 for a retake, as score-only
/// integrators review from 50.
fn score(points: f64, level: Level) -> f64 {
    if level == Level::Retake {
        points.max(50.0)
    } else {
        points
    }
}

/// Low for a retake (the checks saw too little); High when the document's
/// own data held (a machine-readable zone read with every check digit valid)
/// and the face search and the error-level analysis both ran; else Medium.
///
/// Without a zone, nothing on the document is verified: a drawn card (a
/// bordered rectangle, a cartoon face, "LOREM IPSUM") passes the image
/// checks as a real card's front does, so neither is High (issue 60).
fn confidence(a: &Analysis, level: Level) -> Confidence {
    if level == Level::Retake {
        Confidence::Low
    } else if zone_verified(a) && a.ela.is_some() && a.faces.is_some() {
        Confidence::High
    } else {
        Confidence::Medium
    }
}

/// Whether a machine-readable zone was read with every check digit valid.
fn zone_verified(a: &Analysis) -> bool {
    matches!(&a.mrz, MrzAttempt::Read { reading, .. }
        if reading.mrz.as_ref().is_ok_and(|m| m.all_checks_valid()))
}

impl Assessment {
    /// The answer of `POST /assess-id` and `vigil.assess_id`.
    pub fn to_json(&self, assessment_id: &str) -> Value {
        let reasons: Vec<Value> = self
            .reasons
            .iter()
            .map(|r| json!({"code": r.code, "check": r.check, "message": r.message, "points": r.points}))
            .collect();
        json!({
            "assessmentId": assessment_id,
            "Result": self.result.as_str(),
            "RiskLevel": self.level.number(),
            "RiskLevelLabel": self.level.label(),
            "RiskScore": round(self.score, 1),
            "ConfidenceLevel": self.confidence.as_str(),
            "decision": self.decision.as_str(),
            "retryable": self.retryable,
            "reasons": reasons,
            "checks": self.checks,
            "notPerformed": self.not_performed,
            "image": self.image,
        })
    }

    /// Reason codes, in order.
    pub fn codes(&self) -> Vec<&'static str> {
        self.reasons.iter().map(|r| r.code).collect()
    }
}

fn outcome(reasons: &[Reason]) -> &'static str {
    if reasons.iter().any(|r| r.points == 0.0 || r.points >= 60.0) {
        "failed"
    } else if reasons.is_empty() {
        "passed"
    } else {
        "warning"
    }
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

/// The upload itself: what was received.
fn upload(a: &Analysis) -> Value {
    json!({
        "format": a.format,
        "bytes": a.bytes,
        "width": a.width,
        "height": a.height,
        "sha256": hex(&a.sha256),
    })
}

/// What these checks do not do, so nobody reads a pass as more than it is;
/// `mrz` with why it was not read, unless it was.
fn not_performed(mrz: Option<String>) -> Vec<Value> {
    [
        (
            "liveness",
            "a still image cannot show a live person is present",
        ),
        ("faceMatch", "no selfie is compared with the portrait"),
        (
            "issuerDatabase",
            "the document is not looked up with its issuer",
        ),
        ("mrz", ""),
        (
            "securityFeatures",
            "holograms, microprint and UV features are not examined",
        ),
    ]
    .iter()
    .filter_map(|&(check, reason)| match check {
        "mrz" => mrz
            .as_deref()
            .map(|why| json!({"check": check, "reason": why})),
        _ => Some(json!({"check": check, "reason": reason})),
    })
    .collect()
}

fn round(value: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (value * f).round() / f
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::face::Face;
    use crate::quality::Quality;
    use crate::tamper::Metadata;

    /// A clear document with one face, a camera and no error-level analysis.
    fn analysis() -> Analysis {
        Analysis {
            format: "png",
            bytes: 1000,
            sha256: [0; 32],
            width: 1200,
            height: 800,
            document: Found::Document(Quad {
                corners: [
                    (100.0, 100.0),
                    (1100.0, 100.0),
                    (1100.0, 700.0),
                    (100.0, 700.0),
                ],
                frame_share: 0.6,
                aspect: 1.585,
                rectangularity: 0.98,
                framing: Framing::Background,
            }),
            quality: Quality {
                sharpness: 200.0,
                brightness: 130.0,
                contrast: 50.0,
                glare_share: 0.0,
                colourfulness: 30.0,
                dark_level: 40.0,
                colour_share: 0.3,
            },
            document_pixels: 1000,
            faces: Some(vec![Face {
                x: 20,
                y: 40,
                width: 90,
                height: 110,
                score: 3.0,
            }]),
            face_search: crate::face::Searched::PortraitZone,
            metadata: Metadata {
                has_exif: true,
                camera: Some("Canon EOS 80D".into()),
                ..Metadata::default()
            },
            ela: None,
            phash: [0; 32],
            mrz: MrzAttempt::Skipped("no recogniser".into()),
        }
    }

    const TD3: &str =
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10";
    /// Before the specimen's expiry (2012-04-15).
    const BEFORE_EXPIRY: mrz::Date = mrz::Date {
        year: 2010,
        month: 1,
        day: 1,
    };

    /// The document's outline given the format's proportions.
    fn with_format(mut a: Analysis, aspect: f64) -> Analysis {
        if let Found::Document(q) = &mut a.document {
            q.aspect = aspect;
        }
        a
    }

    fn passport() -> Analysis {
        with_format(analysis(), 125.0 / 88.0)
    }

    /// `text` as a recogniser read it, each character at least `confidence` sure.
    fn read(text: &str, confidence: f32, today: mrz::Date) -> MrzAttempt {
        let mut a = mrz::read_zone(
            &mrz::locate::Zone {
                lines: text
                    .lines()
                    .map(|_| image::GrayImage::new(400, mrz::locate::LINE_HEIGHT))
                    .collect(),
                upside_down: false,
                skew_degrees: 0.5,
                char_height: 24.0,
                bounds: (0.0, 0.0, 400.0, 96.0),
            },
            false,
            &Scripted(text.lines().map(str::to_owned).collect()),
            today,
        );
        a.confidence = confidence;
        a.char_probs = text.lines().map(|l| vec![confidence; l.len()]).collect();
        MrzAttempt::Read { reading: a, today }
    }

    /// Gives its lines, whatever it is shown.
    struct Scripted(Vec<String>);

    impl mrz::LineRecognizer for Scripted {
        fn recognize(
            &self,
            lines: &[image::GrayImage],
        ) -> Result<Vec<mrz::ctc::LineProbabilities>, mrz::RecognizeError> {
            Ok(self
                .0
                .iter()
                .take(lines.len())
                .map(|l| mrz::ctc::LineProbabilities::certain(l))
                .collect())
        }
    }

    fn no_zone(today: mrz::Date) -> MrzAttempt {
        MrzAttempt::Read {
            reading: MrzReading {
                zone: None,
                text: String::new(),
                confidence: 0.0,
                char_probs: Vec::new(),
                mrz: Err(ReadFailure::NoZone),
            },
            today,
        }
    }

    fn mrz_not_performed(json: &Value) -> Option<&str> {
        json["notPerformed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["check"] == "mrz")
            .and_then(|e| e["reason"].as_str())
    }

    #[test]
    fn a_zone_read_with_every_check_digit_gives_its_fields_and_leaves_not_performed() {
        let mut a = passport();
        a.mrz = read(TD3, 0.98, BEFORE_EXPIRY);
        let verdict = judge(&a, None);
        assert_eq!(verdict.codes(), Vec::<&str>::new());
        assert_eq!(verdict.level, Level::Safe);
        let json = verdict.to_json("id");
        let m = &json["checks"]["mrz"];
        assert_eq!(m["outcome"], "passed", "{m}");
        let metrics = &m["metrics"];
        for (key, value) in [
            ("format", "TD3"),
            ("documentType", "P"),
            ("issuingState", "UTO"),
            ("documentNumber", "L898902C3"),
            // Sliced, not spelled: upper-case literals here are taken for
            // reason codes (tests/tests/e2e/reference.rs).
            ("primaryName", &TD3[5..13]),
            ("secondaryName", "Anna Maria".to_uppercase().as_str()),
            ("nationality", "UTO"),
            ("birthDate", "1974-08-12"),
            ("expiryDate", "2012-04-15"),
            ("sex", "F"),
            ("optionalData", "ZE184226B"),
            ("reading", "valid"),
        ] {
            assert_eq!(metrics[key], value, "{key}: {metrics}");
        }
        assert_eq!(metrics["expired"], false);
        assert_eq!(metrics["allCheckDigitsValid"], true);
        let digits = metrics["checkDigits"].as_object().unwrap();
        assert_eq!(
            digits.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "birthDate",
                "composite",
                "documentNumber",
                "expiryDate",
                "optionalData"
            ]
        );
        assert!(digits.values().all(|d| d["valid"] == true));
        assert!(metrics["correctedLines"].is_null());
        assert_eq!(mrz_not_performed(&json), None);
        // The check sits between the face and tampering.
        let names: Vec<&String> = json["checks"].as_object().unwrap().keys().collect();
        assert!(names.contains(&&"mrz".to_string()));
    }

    #[test]
    fn an_expired_document_is_a_concern_when_its_expiry_check_digit_holds() {
        let mut a = passport();
        a.mrz = read(TD3, 0.98, mrz::Date::new(2026, 11, 27).unwrap());
        let verdict = judge(&a, None);
        assert_eq!(verdict.codes(), vec!["DOCUMENT_EXPIRED"]);
        assert_eq!(verdict.reasons[0].points, 60.0);
        assert_eq!(verdict.level, Level::Caution);
        assert!(verdict.reasons[0].message.contains("2012-04-15"));
        assert_eq!(
            verdict.to_json("id")["checks"]["mrz"]["metrics"]["expired"],
            true
        );
        // Valid on its expiry day.
        a.mrz = read(TD3, 0.98, mrz::Date::new(2012, 4, 15).unwrap());
        assert_eq!(judge(&a, None).codes(), Vec::<&str>::new());
    }

    #[test]
    fn a_failing_check_digit_is_a_concern_when_read_cleanly_else_a_retake() {
        // The birth date altered (740812 to 740813): its check digit and
        // the composite fail, and no confusable character explains it.
        let altered = TD3.replace("7408122F", "7408132F");
        let mut a = passport();
        a.mrz = read(&altered, 0.97, BEFORE_EXPIRY);
        let verdict = judge(&a, None);
        assert_eq!(
            verdict.codes(),
            vec!["MRZ_CHECK_DIGIT"],
            "{:?}",
            verdict.reasons
        );
        assert_eq!(verdict.reasons[0].points, 75.0);
        assert!(verdict.reasons[0].message.contains("birthDate"));
        assert_eq!(
            (verdict.level, verdict.decision),
            (Level::High, Decision::Review)
        );
        let json = verdict.to_json("id");
        let digits = &json["checks"]["mrz"]["metrics"]["checkDigits"];
        assert_eq!(digits["birthDate"]["valid"], false);
        assert_eq!(digits["birthDate"]["printed"], "2");
        assert_eq!(digits["birthDate"]["computed"], 3);
        assert_eq!(digits["documentNumber"]["valid"], true);
        assert_eq!(json["checks"]["mrz"]["outcome"], "failed");

        // The same read unsurely: a misreading, so a retake.
        a.mrz = read(&altered, 0.3, BEFORE_EXPIRY);
        let verdict = judge(&a, None);
        assert_eq!(verdict.codes(), vec!["MRZ_UNREADABLE"]);
        assert_eq!((verdict.level, verdict.retryable), (Level::Retake, true));
        // Unsure only where no failing digit looks (the names' fillers, the
        // optional data's): the birth date read surely, its digit fails:
        // the document's. Unsure in the birth date itself: a misreading.
        let unsure_at = |columns: &[(usize, usize)]| {
            let mut m = read(&altered, 0.95, BEFORE_EXPIRY);
            if let MrzAttempt::Read { reading, .. } = &mut m {
                for &(line, column) in columns {
                    reading.char_probs[line][column] = 0.2;
                }
                reading.confidence = 0.2;
            }
            m
        };
        a.mrz = unsure_at(&[(0, 40), (0, 41), (1, 30), (1, 31)]);
        assert_eq!(judge(&a, None).codes(), vec!["MRZ_CHECK_DIGIT"]);
        a.mrz = unsure_at(&[(0, 40), (1, 16)]);
        assert_eq!(judge(&a, None).codes(), vec!["MRZ_UNREADABLE"]);
        // On a card, an unsure reading whose digits fail is print taken
        // for a zone: not performed; read cleanly, it is a zone.
        let mut card = analysis();
        card.mrz = read(&altered, 0.3, BEFORE_EXPIRY);
        let json = judge(&card, None).to_json("id");
        assert_eq!(json["reasons"], json!([]), "{json}");
        assert_eq!(json["checks"]["mrz"]["outcome"], "not_performed");
        card.mrz = read(&altered, 0.97, BEFORE_EXPIRY);
        assert_eq!(judge(&card, None).codes(), vec!["MRZ_CHECK_DIGIT"]);

        // Cleanly, but on a blurred photo: a retake, not a forgery.
        a.mrz = read(&altered, 0.97, BEFORE_EXPIRY);
        a.quality.sharpness = 10.0;
        assert_eq!(judge(&a, None).codes(), vec!["BLURRY", "MRZ_UNREADABLE"]);
    }

    #[test]
    fn a_confusable_character_is_corrected_when_the_check_digits_allow_one_reading() {
        // The document number's 0 read as O.
        let misread = TD3.replace("L898902C3", "L8989O2C3");
        let mut a = passport();
        a.mrz = read(&misread, 0.9, BEFORE_EXPIRY);
        let verdict = judge(&a, None);
        assert_eq!(verdict.codes(), Vec::<&str>::new());
        let json = verdict.to_json("id");
        let metrics = &json["checks"]["mrz"]["metrics"];
        assert_eq!(metrics["reading"], "corrected", "{metrics}");
        assert_eq!(metrics["documentNumber"], "L898902C3");
        assert_eq!(metrics["correctedLines"][1], TD3.lines().nth(1).unwrap());
        assert_eq!(metrics["recognised"], misread);
        let correction = &metrics["corrections"][0];
        assert_eq!(
            (
                &correction["line"],
                &correction["column"],
                &correction["read"],
                &correction["corrected"],
                &correction["field"]
            ),
            (
                &json!(2),
                &json!(6),
                &json!("O"),
                &json!("0"),
                &json!("documentNumber")
            )
        );
    }

    #[test]
    fn no_zone_is_a_retake_on_a_passport_page_and_not_performed_on_a_card() {
        let mut a = passport();
        a.mrz = no_zone(BEFORE_EXPIRY);
        let verdict = judge(&a, None);
        assert_eq!(verdict.codes(), vec!["MRZ_UNREADABLE"]);
        assert_eq!(verdict.level, Level::Retake);
        let json = verdict.to_json("id");
        assert_eq!(json["checks"]["mrz"]["metrics"]["found"], false);
        assert_eq!(mrz_not_performed(&json), None);

        // A card: its front has no zone.
        let mut a = analysis();
        a.mrz = no_zone(BEFORE_EXPIRY);
        let verdict = judge(&a, None);
        assert_eq!(verdict.codes(), Vec::<&str>::new());
        let json = verdict.to_json("id");
        assert_eq!(json["checks"]["mrz"]["outcome"], "not_performed");
        assert!(mrz_not_performed(&json).is_some_and(|r| r.contains("front")));

        // Text that is not a zone: the same two ways.
        let garbled = MrzAttempt::Read {
            reading: MrzReading {
                zone: None,
                text: "P<UTOERIKSSON<<ANNA<MARIA<<<".into(),
                confidence: 0.4,
                char_probs: Vec::new(),
                mrz: Err(ReadFailure::Mrz(mrz::MrzError::LineCount { found: 1 })),
            },
            today: BEFORE_EXPIRY,
        };
        a.mrz = garbled.clone();
        let json = judge(&a, None).to_json("id");
        assert_eq!(json["reasons"], json!([]));
        assert!(mrz_not_performed(&json).is_some_and(|r| r.contains("1 lines")));
        let mut p = passport();
        p.mrz = garbled;
        assert_eq!(judge(&p, None).codes(), vec!["MRZ_UNREADABLE"]);
        // Print without fillers, read as a zone on what looks like a page
        // (a card outlined with something beside it): not a zone.
        p.mrz = read(
            "10O001010000011110100000001010000030\n10000A010010001000101000000O01010020",
            0.01,
            BEFORE_EXPIRY,
        );
        let json = judge(&p, None).to_json("id");
        assert_eq!(json["reasons"], json!([]), "{json}");
        assert_eq!(json["checks"]["mrz"]["outcome"], "not_performed");

        // Not attempted: not performed, with the reason given.
        let json = judge(&analysis(), None).to_json("id");
        assert_eq!(json["checks"]["mrz"]["outcome"], "not_performed");
        assert_eq!(mrz_not_performed(&json), Some("no recogniser"));
    }

    #[test]
    fn a_passport_rendered_in_ocr_b_is_read_through_analyse_with() {
        use crate::mrz::render;
        let font = render::font();
        let page = render::document(&font, render::Kind::Td3, render::TD3_SPECIMEN, 1100, 7);
        let mut scene = render::desk(1600, 1200, 3);
        render::place(&mut scene, &page, (800.0, 600.0), 1100.0, 2.0);
        let bytes = crate::synthetic::jpeg(&scene, 92, Some(crate::synthetic::camera_exif()));
        let scripted = Scripted(render::TD3_SPECIMEN.lines().map(str::to_owned).collect());
        let a = crate::analyse_with(
            &bytes,
            &mut crate::FaceDetector::new(),
            crate::MrzReader::On {
                recognizer: &scripted,
                today: BEFORE_EXPIRY,
            },
        )
        .expect("decodes");
        let json = judge(&a, None).to_json("id");
        let m = &json["checks"]["mrz"];
        assert_eq!(m["outcome"], "passed", "{m}");
        assert_eq!(m["metrics"]["documentNumber"], "L898902C3");
        assert_eq!(m["metrics"]["zone"]["lines"], 2);
        assert_eq!(m["metrics"]["zone"]["wholeFrame"], false);
    }

    #[test]
    fn a_cards_front_with_its_portrait_is_not_searched_for_a_zone() {
        let card = crate::synthetic::card(7);
        let bytes = crate::synthetic::jpeg(&card, 90, Some(crate::synthetic::camera_exif()));
        let scripted = Scripted(render_specimen());
        let a = crate::analyse_with(
            &bytes,
            &mut crate::FaceDetector::new(),
            crate::MrzReader::On {
                recognizer: &scripted,
                today: BEFORE_EXPIRY,
            },
        )
        .expect("decodes");
        assert_eq!(a.face_search, crate::face::Searched::PortraitZone);
        let json = judge(&a, None).to_json("id");
        assert_eq!(json["checks"]["mrz"]["outcome"], "not_performed");
        assert!(mrz_not_performed(&json).is_some_and(|r| r.contains("front")));
    }

    fn render_specimen() -> Vec<String> {
        crate::mrz::render::TD3_SPECIMEN
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn levels_follow_the_cut_offs_a_failure_outranking_a_retake_outranking_the_rest() {
        let cases = [
            (0.0, false, 5, "Passed", "accept"),
            (19.0, false, 5, "Passed", "accept"),
            (20.0, false, 4, "Passed", "accept"),
            (40.0, false, 3, "Passed", "accept"),
            (60.0, false, 6, "Review", "review"),
            (75.0, false, 1, "Review", "review"),
            (90.0, false, 0, "Failed", "decline"),
            (0.0, true, 7, "Review", "resubmit"),
            (85.0, true, 7, "Review", "resubmit"),
            (100.0, true, 0, "Failed", "decline"),
        ];
        for (points, retake, number, result, decision) in cases {
            let level = Level::of(points, retake);
            assert_eq!(
                (
                    level.number(),
                    level.verdict().as_str(),
                    level.decision().as_str()
                ),
                (number, result, decision),
                "{points} points, retake {retake}"
            );
        }
    }

    #[test]
    fn tampering_counts_at_most_its_cap_and_no_points_are_a_positive_zero() {
        assert!(points(&[]) == 0.0 && points(&[]).is_sign_positive());
        let editor = concern("EDITING_SOFTWARE", TAMPERING, 60.0, "");
        let ela = concern("COMPRESSION_INCONSISTENT", TAMPERING, 40.0, "");
        let camera = concern("NO_CAMERA_METADATA", TAMPERING, 10.0, "");
        let tampered = [editor, ela, camera];
        assert_eq!(points(&tampered), TAMPERING_CAP);
        // Only the tampering is capped, and the total is at most 100.
        let no_face = concern("NO_FACE", FACE, 60.0, "");
        assert_eq!(points(&[tampered[2].clone(), no_face.clone()]), 70.0);
        assert_eq!(
            points(&[tampered[0].clone(), no_face.clone(), no_face]),
            100.0
        );
    }

    #[test]
    fn no_face_is_asked_for_only_when_no_retake_is() {
        let mut a = analysis();
        a.faces = Some(Vec::new());
        let found = face(&a, false);
        assert_eq!(found.reasons.len(), 1);
        assert_eq!(
            (found.reasons[0].code, found.entry["outcome"].as_str()),
            ("NO_FACE", Some("failed"))
        );
        let retake = face(&a, true);
        assert!(retake.reasons.is_empty());
        assert_eq!(retake.entry["outcome"], "passed");
        a.faces = None;
        assert_eq!(face(&a, false).entry["outcome"], "not_performed");

        // Through judge: a blurred photo without a face is only a retake.
        a.faces = Some(Vec::new());
        a.quality.sharpness = 10.0;
        let verdict = judge(&a, None);
        assert_eq!(verdict.codes(), vec!["BLURRY"]);
        assert_eq!(
            (verdict.level, verdict.confidence),
            (Level::Retake, Confidence::Low)
        );
    }

    #[test]
    fn a_check_outcome_is_failed_for_a_retake_or_a_strong_concern_warning_for_a_weak_one() {
        let camera = concern("NO_CAMERA_METADATA", TAMPERING, 10.0, "");
        let ela = concern("COMPRESSION_INCONSISTENT", TAMPERING, 40.0, "");
        let editor = concern("EDITING_SOFTWARE", TAMPERING, 60.0, "");
        let blurry = retake("BLURRY", QUALITY, "");
        assert_eq!(outcome(&[]), "passed");
        assert_eq!(outcome(&[camera.clone(), ela]), "warning");
        assert_eq!(outcome(&[camera.clone(), editor]), "failed");
        assert_eq!(outcome(&[blurry]), "failed");
    }

    #[test]
    fn only_a_zone_whose_check_digits_hold_makes_a_pass_high_confidence() {
        let ela = Some(crate::tamper::Ela {
            pixels: 1000,
            median: 0.01,
            outlier_ratio: 2.0,
        });
        // A card's front (or a drawing of one): every image check ran, no zone.
        let mut card = analysis();
        card.ela = ela;
        let verdict = judge(&card, None);
        assert_eq!(
            (verdict.result, verdict.confidence),
            (Verdict::Passed, Confidence::Medium)
        );
        // A passport page whose zone holds.
        let mut page = passport();
        page.ela = ela;
        page.mrz = read(TD3, 0.98, BEFORE_EXPIRY);
        let verdict = judge(&page, None);
        assert_eq!(
            (verdict.result, verdict.confidence),
            (Verdict::Passed, Confidence::High)
        );
        // The same zone with a failing check digit, read unsurely: a retake.
        page.mrz = read(&TD3.replace("7408122", "7408123"), 0.5, BEFORE_EXPIRY);
        assert_ne!(judge(&page, None).confidence, Confidence::High);
    }

    #[test]
    fn a_clean_photo_without_error_level_analysis_passes_with_medium_confidence() {
        let verdict = judge(&analysis(), None);
        assert_eq!(verdict.codes(), Vec::<&str>::new());
        assert_eq!(
            (
                verdict.result,
                verdict.level,
                verdict.decision,
                verdict.confidence
            ),
            (
                Verdict::Passed,
                Level::Safe,
                Decision::Accept,
                Confidence::Medium
            )
        );
        let json = verdict.to_json("id");
        assert_eq!(json["RiskLevel"], 5);
        assert_eq!(json["RiskLevelLabel"], "Safe zone, pass");
        assert_eq!(json["decision"], "accept");
    }
}
