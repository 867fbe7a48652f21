//! From measures to an answer: reasons, result, level, score, confidence.
//!
//! Five checks, each a function that gives its reasons and its entry under
//! `checks`: `image_quality`, `document_framing`, `face`, `tampering`,
//! `duplicates`. [`judge`] joins them in that order, which is the order of the
//! reasons and of `checks`, adds up the points and picks the [`Level`]; the
//! result ([`Verdict`]) and the [`Decision`] follow from the level.
//!
//! Two kinds of reason, kept apart as Veriff keeps "resubmission requested"
//! apart from "declined":
//!
//! - **Retake** reasons (quality and framing: `LOW_RESOLUTION`, `BLURRY`,
//!   `GLARE`, `TOO_DARK`, `TOO_BRIGHT`, `LOW_CONTRAST`, `BLACK_AND_WHITE`,
//!   `NO_DOCUMENT`, `CUT_OFF`, `DOCUMENT_TOO_SMALL`): the image cannot be
//!   assessed as it is. Level 7, `Review`, `retryable`, decision `resubmit`.
//!   The face check then gives no `NO_FACE`: a portrait missed on a picture
//!   that must be taken again says nothing about the document.
//! - **Concern** reasons carry points: `DUPLICATE_IMAGE` 75, `NO_FACE` 60,
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
use crate::{phash, Analysis};

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
    let retake_needed = !(quality.reasons.is_empty() && framing.reasons.is_empty());
    let mut reasons = Vec::new();
    let mut checks = Map::new();
    for check in [
        quality,
        framing,
        face(a, retake_needed),
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
        not_performed: not_performed(),
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
        document_metrics(quad, clear),
    )
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

/// Low for a retake (the checks saw too little); High when the face search
/// and the error-level analysis both ran; else Medium.
fn confidence(a: &Analysis, level: Level) -> Confidence {
    if level == Level::Retake {
        Confidence::Low
    } else if a.ela.is_some() && a.faces.is_some() {
        Confidence::High
    } else {
        Confidence::Medium
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
        }
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
