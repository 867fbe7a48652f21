//! The `tampering` check: signs of editing in the file's metadata and in
//! how its regions recompress, each a concern that alone never fails an image.

use serde_json::json;

use super::{concern, round, Check, TAMPERING};
use crate::Analysis;

/// ELA: how far the worst cells may stand out from the median before it is a signal.
pub const MAX_ELA_OUTLIER_RATIO: f64 = 10.0;
/// ELA: below this median error the image is too clean (flat, or saved at
/// the analysis quality) for the ratio to mean anything.
pub const MIN_ELA_MEDIAN: f64 = 0.002;

/// Signs of editing: an editor in the metadata, a region that recompresses
/// unlike the rest, no camera named.
pub(super) fn tampering(a: &Analysis) -> Check {
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
