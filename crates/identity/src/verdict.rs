//! From measures to an answer: reasons, result, level, score, confidence.
//!
//! Two kinds of reason, kept apart as Veriff keeps "resubmission requested"
//! apart from "declined":
//!
//! - **Retake** reasons (quality and framing: `LOW_RESOLUTION`, `BLURRY`,
//!   `GLARE`, `TOO_DARK`, `TOO_BRIGHT`, `LOW_CONTRAST`, `BLACK_AND_WHITE`,
//!   `NO_DOCUMENT`, `CUT_OFF`, `DOCUMENT_TOO_SMALL`): the image cannot be
//!   assessed as it is. Level 7, `Review`, `retryable`, decision `resubmit`.
//! - **Concern** reasons carry points: `DUPLICATE_IMAGE` 75, `NO_FACE` 60,
//!   `EDITING_SOFTWARE` 60, `COMPRESSION_INCONSISTENT` 40,
//!   `NO_CAMERA_METADATA` 10. Tampering signals together count at most 75, so
//!   they can ask for a person but never fail an image alone. The total (at most
//!   100) is `RiskScore`, and levels follow the transaction cut-offs: 0 at 90
//!   (`Failed`), 1 at 75 and 6 at 60 (`Review`), 3 at 40, 4 at 20, else 5
//!   (`Passed`).
//!
//! A `Failed` outcome outranks a retake; a retake outranks the score levels.
//! Score-only integrators are not misled: a retake scores at least 50.

use serde_json::{json, Map, Value};

use crate::document::{Found, Quad};
use crate::phash;
use crate::Analysis;

/// Shortest document side, in pixels of the upload, that is readable.
pub const MIN_DOCUMENT_PIXELS: u32 = 600;
/// Laplacian variance (at 640 px) under which the image is blurred.
pub const MIN_SHARPNESS: f64 = 60.0;
pub const MIN_BRIGHTNESS: f64 = 60.0;
pub const MAX_BRIGHTNESS: f64 = 215.0;
pub const MIN_CONTRAST: f64 = 20.0;
/// Share of the document blown out to white that hides what is under it.
pub const MAX_GLARE_SHARE: f64 = 0.02;
/// Mean chroma under which the image has no colour (a photocopy or a grey scan).
pub const MIN_COLOURFULNESS: f64 = 6.0;
/// ELA: how far the worst cells may stand out from the median before it is a signal.
pub const MAX_ELA_OUTLIER_RATIO: f64 = 10.0;
/// ELA: below this median error the image is too clean (flat, or saved at
/// the analysis quality) for the ratio to mean anything.
pub const MIN_ELA_MEDIAN: f64 = 0.002;
/// Most points the tampering signals add together.
const TAMPERING_CAP: f64 = 75.0;

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

/// The answer, before it is given an id.
#[derive(Clone, Debug)]
pub struct Assessment {
    pub result: &'static str,
    pub level: u8,
    pub score: f64,
    pub confidence: &'static str,
    pub decision: &'static str,
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

/// Judges an analysed upload, given the earlier assessment it duplicates, if any.
pub fn judge(a: &Analysis, duplicate: Option<&Duplicate>) -> Assessment {
    let mut reasons = Vec::new();
    let mut checks = Map::new();
    let q = &a.quality;
    let (document_found, quad) = match &a.document {
        Found::Document(quad) => (true, Some(quad)),
        Found::CutOff(quad) => (false, Some(quad)),
        Found::Nothing => (false, None),
    };

    // Image quality.
    let before = reasons.len();
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
    } else if q.brightness > MAX_BRIGHTNESS {
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
    if q.colourfulness < MIN_COLOURFULNESS {
        reasons.push(retake(
            "BLACK_AND_WHITE",
            QUALITY,
            "the image has no colour, as a photocopy or a grey scan has: photograph the original document",
        ));
    }
    checks.insert(
        QUALITY.into(),
        check(
            outcome(&reasons[before..]),
            json!({
                "width": a.width,
                "height": a.height,
                "documentPixels": a.document_pixels,
                "sharpness": round(q.sharpness, 1),
                "brightness": round(q.brightness, 1),
                "contrast": round(q.contrast, 1),
                "glareShare": round(q.glare_share, 4),
                "colourfulness": round(q.colourfulness, 1),
                "measuredOn": if document_found { "document" } else { "frame" },
            }),
        ),
    );

    // Document.
    let before = reasons.len();
    match &a.document {
        Found::Nothing => reasons.push(retake(
            "NO_DOCUMENT",
            DOCUMENT,
            "no card or passport page was found: place the whole document on a plain, contrasting surface",
        )),
        Found::CutOff(_) => reasons.push(retake(
            "CUT_OFF",
            DOCUMENT,
            "the document runs out of the frame: all four edges must be visible",
        )),
        Found::Document(quad) if quad.frame_share < crate::document::MIN_DOCUMENT_SHARE => reasons.push(retake(
            "DOCUMENT_TOO_SMALL",
            DOCUMENT,
            format!(
                "the document fills {:.0}% of the image: move closer so it fills most of the frame",
                quad.frame_share * 100.0
            ),
        )),
        Found::Document(_) => {}
    }
    checks.insert(
        DOCUMENT.into(),
        check(
            outcome(&reasons[before..]),
            document_metrics(quad, document_found),
        ),
    );
    let retake_needed = !reasons.is_empty();

    // Face.
    let before = reasons.len();
    let face_check = match &a.faces {
        None => not_executed("no document to search"),
        Some(faces) => {
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
            check(
                outcome(&reasons[before..]),
                json!({"faces": faces.len(), "best": best, "searchedWidth": crate::face::WORK_WIDTH}),
            )
        }
    };
    checks.insert(FACE.into(), face_check);

    // Tampering.
    let before = reasons.len();
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
    checks.insert(
        TAMPERING.into(),
        check(
            outcome(&reasons[before..]),
            json!({
                "format": a.format,
                "exif": m.has_exif,
                "software": m.software,
                "camera": m.camera,
                "errorLevelAnalysis": ela,
            }),
        ),
    );

    // Duplicates.
    let before = reasons.len();
    if let Some(d) = duplicate {
        reasons.push(concern(
            "DUPLICATE_IMAGE",
            DUPLICATES,
            75.0,
            format!(
                "the same picture was assessed before (assessment {}, {} of 256 hash bits differ)",
                d.assessment_id, d.distance
            ),
        ));
    }
    checks.insert(
        DUPLICATES.into(),
        check(
            outcome(&reasons[before..]),
            json!({
                "perceptualHash": phash::to_hex(&a.phash),
                "maxDistance": phash::DUPLICATE_DISTANCE,
                "duplicateOf": duplicate.map(|d| d.assessment_id.as_str()),
                "distance": duplicate.map(|d| d.distance),
                "matches": duplicate.map_or(0, |d| d.matches),
            }),
        ),
    );

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
    let points = (other + tampering.min(TAMPERING_CAP)).clamp(0.0, 100.0) + 0.0;
    let level = if points >= 90.0 {
        0
    } else if retake_needed {
        7
    } else if points >= 75.0 {
        1
    } else if points >= 60.0 {
        6
    } else if points >= 40.0 {
        3
    } else if points >= 20.0 {
        4
    } else {
        5
    };
    let (result, decision) = match level {
        0 => ("Failed", "decline"),
        7 => ("Review", "resubmit"),
        1 | 6 => ("Review", "review"),
        _ => ("Passed", "accept"),
    };
    let score = if level == 7 { points.max(50.0) } else { points };
    let confidence = if level == 7 {
        "Low"
    } else if a.ela.is_some() && a.faces.is_some() {
        "High"
    } else {
        "Medium"
    };
    Assessment {
        result,
        level,
        score,
        confidence,
        decision,
        retryable: retake_needed || reasons.iter().any(|r| r.code == "NO_FACE"),
        reasons,
        checks,
        not_performed: not_performed(),
        image: json!({
            "format": a.format,
            "bytes": a.bytes,
            "width": a.width,
            "height": a.height,
            "sha256": hex(&a.sha256),
        }),
    }
}

/// Label of a level for identity checks.
pub fn level_label(level: u8) -> &'static str {
    match level {
        0 => "Critical risk, document declined",
        1 => "High risk, manual verification required",
        3 => "Monitor closely",
        4 => "Low risk, auto approved",
        5 => "Safe zone, pass",
        6 => "Caution, review recommended",
        _ => "Additional verification needed: retake the photo",
    }
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
            "Result": self.result,
            "RiskLevel": self.level,
            "RiskLevelLabel": level_label(self.level),
            "RiskScore": round(self.score, 1),
            "ConfidenceLevel": self.confidence,
            "decision": self.decision,
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

fn check(outcome: &str, metrics: Value) -> Value {
    json!({"outcome": outcome, "metrics": metrics})
}

fn not_executed(why: &str) -> Value {
    json!({"outcome": "not_performed", "reason": why})
}

fn document_metrics(quad: Option<&Quad>, clear: bool) -> Value {
    match quad {
        None => json!({"found": false}),
        Some(q) => {
            let (format, deviation) = q.format();
            json!({
                "found": clear,
                "corners": q.corners.map(|(x, y)| [round(x, 0), round(y, 0)]),
                "frameShare": round(q.frame_share, 3),
                "aspectRatio": round(q.aspect, 3),
                "nearestFormat": format,
                "aspectDeviation": round(deviation, 3),
                "rectangularity": round(q.rectangularity, 3),
            })
        }
    }
}

/// What these checks do not do, so nobody reads a pass as more than it is.
fn not_performed() -> Vec<Value> {
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
        ("mrz", "the machine-readable zone is not read"),
        (
            "securityFeatures",
            "holograms, microprint and UV features are not examined",
        ),
    ]
    .iter()
    .map(|(check, reason)| json!({"check": check, "reason": reason}))
    .collect()
}

fn round(value: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (value * f).round() / f
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
