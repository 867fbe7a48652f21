//! `POST /assess-id`: an API key with scope `identity` ([`ApiKey`]), a
//! multipart form with one file part `image`, then one call of `vigil.assess_id`.
//!
//! The bytes go to the extension as they are: it tells the format from them
//! and refuses what it cannot assess with an SQLSTATE per kind, which
//! [`ApiError::from_image_error`] turns into 415 or 422 naming `image`.

mod schema;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::multipart::{Multipart, MultipartRejection};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::error::ApiError;
use crate::extract::{ApiKey, IdentityScope};
use crate::refusals::AuthRefusals;
use crate::state::AppState;
use schema::{IdentityAssessment, IdentityUpload};

/// Largest image (the extension's limit, `vigil_identity::decode::MAX_BYTES`).
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;
/// Body limit of the route: the image plus the form's own framing.
pub const MAX_BODY_BYTES: usize = MAX_IMAGE_BYTES + 64 * 1024;
/// The most memory one assessment takes in its backend: a maximal image
/// (8000x5000 pixels of 8-bit RGBA, the extension's largest decoded size)
/// took a backend's peak resident memory from 15 to 357 MB with the MRZ read
/// (0.11.0; 321 MB without it) (docs/identity.md, "Input safety"), with room
/// for the upload's 10 MiB. Sizes the [`turns`].
pub const ASSESSMENT_PEAK_BYTES: u64 = 384 << 20;

/// The turns to assess an image (`AppState::identity_turns`): as many at
/// once as a budget of `budget_mb` MiB holds of [`ASSESSMENT_PEAK_BYTES`].
pub fn turns(budget_mb: u64) -> Arc<Semaphore> {
    let turns = (budget_mb << 20) / ASSESSMENT_PEAK_BYTES;
    Arc::new(Semaphore::new(usize::try_from(turns).unwrap_or(1).max(1)))
}

/// Refusals of an upload.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // documentation only: ApiError makes these responses
pub enum UploadRefusals {
    /// invalid_field (`field` is `image`: no such part), invalid_multipart
    #[response(status = 400)]
    BadRequest(crate::error::ErrorBody<'static>),
    /// payload_too_large: over 10 MiB
    #[response(status = 413)]
    TooLarge(crate::error::ErrorBody<'static>),
    /// unsupported_media_type (the body is not multipart/form-data),
    /// unsupported_image_type (the image is not JPEG, PNG or WebP; the message says what it is)
    #[response(status = 415)]
    UnsupportedMediaType(crate::error::ErrorBody<'static>),
    /// invalid_image (truncated or damaged), image_too_large (over 40 megapixels),
    /// image_out_of_proportion (one side over four times the other)
    #[response(status = 422)]
    Unprocessable(crate::error::ErrorBody<'static>),
}

/// Checks a photo of an identity document and records the assessment.
#[utoipa::path(
    post,
    path = "/assess-id",
    tag = "identity",
    request_body(content = IdentityUpload, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "The assessment", body = IdentityAssessment),
        AuthRefusals,
        UploadRefusals,
    ),
    security(("apiKey" = [])),
)]
pub async fn assess(
    State(state): State<AppState>,
    key: Result<ApiKey<IdentityScope>, ApiError>,
    form: Result<Multipart, MultipartRejection>,
) -> Result<Json<Value>, ApiError> {
    let key = match key {
        Ok(key) => key,
        Err(refused) => {
            // Read the upload before answering: a client still sending it
            // when the connection closes sees a broken pipe, not the 401.
            if let Ok(mut form) = form {
                while let Ok(Some(mut field)) = form.next_field().await {
                    while let Ok(Some(_)) = field.chunk().await {}
                }
            }
            return Err(refused);
        }
    };
    let image = read_image(form).await?;
    let _turn = state.identity_turn().await?;
    let db = state.db().await?;
    let statement = db
        .prepare_cached("SELECT vigil.assess_id($1, vigil.enter_api_key($2))")
        .await?;
    let row = db
        .query_one(&statement, &[&&image[..], &key.caller.key.as_str()])
        .await
        .map_err(ApiError::from_image_error)?;
    let assessment: Value = row.try_get(0)?;
    state
        .metrics
        .identity_assessed(assessment.get("Result").and_then(Value::as_str));
    Ok(Json(assessment))
}

/// The bytes of the first part named `image`; other parts are ignored.
async fn read_image(form: Result<Multipart, MultipartRejection>) -> Result<Bytes, ApiError> {
    let mut form = form.map_err(|_| {
        ApiError::from_status(StatusCode::UNSUPPORTED_MEDIA_TYPE)
            .with_message("the body must be multipart/form-data with a file part named `image`")
    })?;
    let broken = |e: axum::extract::multipart::MultipartError| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::from_status(StatusCode::PAYLOAD_TOO_LARGE)
                .with_message(format!("the upload is over {MAX_IMAGE_BYTES} bytes"))
        } else {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_multipart",
                format!("the multipart body is malformed: {}", e.body_text()),
            )
        }
    };
    while let Some(field) = form.next_field().await.map_err(broken)? {
        if field.name() == Some("image") {
            let bytes = field.bytes().await.map_err(broken)?;
            if bytes.len() > MAX_IMAGE_BYTES {
                return Err(ApiError::from_status(StatusCode::PAYLOAD_TOO_LARGE)
                    .with_message(format!(
                        "the image is {} bytes; at most {MAX_IMAGE_BYTES} are accepted",
                        bytes.len()
                    ))
                    .with_field("image"));
            }
            return Ok(bytes);
        }
    }
    Err(ApiError::invalid(
        "image",
        "the form has no file part named `image`",
    ))
}
