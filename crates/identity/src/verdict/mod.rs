//! From measures to an answer: reasons, result, level, score, confidence.
//!
//! Six checks, each a function that gives its reasons and its entry under
//! `checks`: `image_quality`, `document_framing`, `face`, `mrz`,
//! `tampering`, `duplicates`. [`judge`] joins them in that order, which is
//! the order of the reasons and of `checks`, adds up the points and picks the
//! [`Level`]; the result ([`Verdict`]) and the [`Decision`] follow from the level.
//! Each check is a module of its own with its cut-offs (`quality`, `framing`,
//! `face`, `zone` for the MRZ, `tampering`, `duplicates`); this one holds the
//! reasons, points, level and JSON they share.
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

use crate::{Analysis, MrzAttempt};

mod duplicates;
mod face;
mod framing;
mod quality;
mod tampering;
mod zone;

use duplicates::duplicates;
use face::face;
use framing::document_framing;
use quality::image_quality;
use tampering::tampering;
use zone::mrz_check;

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
mod tests;
