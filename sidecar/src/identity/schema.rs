//! The documented shapes of `POST /assess-id`.
//!
//! The handler passes the extension's answer through as JSON, so these types
//! exist for the OpenAPI document; the end-to-end tests check real answers
//! against it, so it cannot drift.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::outcome::{Confidence, Outcome};

/// The form of `POST /assess-id`.
#[derive(ToSchema)]
#[allow(dead_code)] // documentation only: the handler reads the multipart stream
pub struct IdentityUpload {
    /// A photo of the identity document: JPEG, PNG or WebP (told from the
    /// bytes, not the file name or the part's content type), at most 10 MiB
    /// and 40 megapixels.
    #[schema(value_type = String, format = Binary, content_media_type = "application/octet-stream")]
    image: Vec<u8>,
}

/// The answer of `POST /assess-id` (`vigil.assess_id`). A pass means these
/// checks found nothing; it never says an identity is verified.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct IdentityAssessment {
    #[serde(rename = "assessmentId")]
    #[schema(pattern = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
    assessment_id: String,
    #[serde(rename = "Result")]
    result: Outcome,
    /// SPEC's levels: 7 = cannot assess, retake the photo; 0 = declined;
    /// 1 and 6 = a person should look; 3, 4, 5 = passed.
    #[serde(rename = "RiskLevel")]
    #[schema(minimum = 0, maximum = 7)]
    risk_level: u8,
    #[serde(rename = "RiskLevelLabel")]
    risk_level_label: String,
    /// 0 to 100, the points of the concerns found; at least 50 when a retake is needed.
    #[serde(rename = "RiskScore")]
    #[schema(minimum = 0, maximum = 100)]
    risk_score: f64,
    #[serde(rename = "ConfidenceLevel")]
    confidence_level: Confidence,
    /// What to do: `accept`, `review` (a person), `resubmit` (a better photo), `decline`.
    decision: Decision,
    /// True when a better photo would help (quality, framing, the side without the portrait).
    retryable: bool,
    reasons: Vec<IdentityReason>,
    /// One entry per check: `imageQuality`, `document`, `face`, `mrz` (the
    /// machine-readable zone's fields and each check digit's outcome),
    /// `tampering`, `duplicates`.
    #[schema(value_type = Object)]
    checks: Map<String, Value>,
    /// What these checks do not do (liveness, face match, issuer lookup,
    /// security features; the MRZ where it was not read, with why).
    #[serde(rename = "notPerformed")]
    not_performed: Vec<NotPerformed>,
    /// The upload as decoded: `format`, `bytes`, `width`, `height`, `sha256`.
    #[schema(value_type = Object)]
    image: Map<String, Value>,
}

#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct IdentityReason {
    /// `LOW_RESOLUTION`, `BLURRY`, `GLARE`, `MRZ_CHECK_DIGIT`, `DOCUMENT_EXPIRED`,
    /// `DUPLICATE_IMAGE`... (docs/reference/signals.md lists them).
    code: String,
    /// The check that found it.
    check: String,
    /// For people.
    message: String,
    /// Points toward `RiskScore` (0 for a retake reason).
    points: f64,
}

#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct NotPerformed {
    check: String,
    reason: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum Decision {
    Accept,
    Review,
    Resubmit,
    Decline,
}
