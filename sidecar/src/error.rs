//! The one error type of the HTTP API, and the layer that makes every error JSON.
//!
//! Body: `{"error":{"code":"...","message":"...","field":"..."}}` (`field` only
//! when one input field is at fault). Errors produced outside our handlers
//! (unknown route, wrong method, body limit, timeout) are rewritten into the same
//! shape by [`render_foreign_errors`], so clients parse one format.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Detail<'a>,
}

#[derive(Serialize)]
struct Detail<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
        }
    }

    /// The error a status gets when nothing more specific was said.
    pub fn from_status(status: StatusCode) -> Self {
        let (code, message) = match status {
            StatusCode::BAD_REQUEST => ("bad_request", "the request is malformed"),
            StatusCode::NOT_FOUND => ("not_found", "no such endpoint"),
            StatusCode::METHOD_NOT_ALLOWED => (
                "method_not_allowed",
                "this endpoint does not accept that method",
            ),
            StatusCode::REQUEST_TIMEOUT => ("timeout", "the request took too long"),
            StatusCode::PAYLOAD_TOO_LARGE => (
                "payload_too_large",
                "the request body is larger than the limit",
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => (
                "unsupported_media_type",
                "the request body has an unsupported content type",
            ),
            StatusCode::TOO_MANY_REQUESTS => ("rate_limited", "too many requests"),
            StatusCode::SERVICE_UNAVAILABLE => ("unavailable", "the service is unavailable"),
            s if s.is_client_error() => ("bad_request", "the request was refused"),
            _ => ("internal", "internal error"),
        };
        ApiError::new(status, code, message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }

    pub fn timeout() -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            "the request took longer than the server allows",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body {
            error: Detail {
                code: self.code,
                message: &self.message,
                field: self.field.as_deref(),
            },
        };
        (self.status, Json(body)).into_response()
    }
}

/// Response layer: an error response that is not JSON (made by axum or a tower
/// layer) gets our JSON body; its status and headers such as `Allow` are kept.
pub async fn render_foreign_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    let rendered = ApiError::from_status(status).into_response();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, rendered.into_body())
}
