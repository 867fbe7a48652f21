//! The `duplicates` check: the same picture assessed before, as the caller
//! found it by its perceptual hash.

use serde_json::json;

use super::{concern, Check, Duplicate, DUPLICATES};
use crate::{phash, Analysis};

/// The same picture assessed before (the caller looks it up by hash).
pub(super) fn duplicates(a: &Analysis, duplicate: Option<&Duplicate>) -> Check {
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
