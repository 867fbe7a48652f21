//! The `face` check: a portrait on the document.

use serde_json::json;

use super::{concern, round, Check, FACE};
use crate::Analysis;

/// A portrait on the document; not asked for when the picture must be taken
/// again anyway (see [the verdict's doc](super)).
pub(super) fn face(a: &Analysis, retake_needed: bool) -> Check {
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
