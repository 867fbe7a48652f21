//! The one error type of the HTTP API, and the layer that makes every error JSON.
//!
//! Body: `{"error":{"code":"...","message":"...","field":"..."}}` (`field` only
//! when one input field is at fault). Errors produced outside our handlers
//! (unknown route, wrong method, body limit, timeout) are rewritten into the same
//! shape by [`render_foreign_errors`], so clients parse one format. Database
//! errors are mapped here too, in one place: invalid input the extension reports
//! becomes a 400 naming the field, an unreachable database 503, the rest 500.

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
    /// Seconds for `Retry-After` (429).
    pub retry_after: Option<u64>,
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
            retry_after: None,
        }
    }

    /// A 400 about one input field.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_field", message).with_field(field)
    }

    pub fn with_field(mut self, field: &str) -> Self {
        self.field = Some(field.to_owned());
        self
    }

    /// A 429 telling the client when to come back.
    pub fn too_many(code: &'static str, message: &str, retry_after_secs: u64) -> Self {
        let mut e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, code, message);
        e.retry_after = Some(retry_after_secs);
        e
    }

    /// A 500 for a fault of ours; `what` is logged, the client gets no detail.
    pub fn internal(what: &str) -> Self {
        tracing::error!(error = what, "internal error");
        ApiError::from_status(StatusCode::INTERNAL_SERVER_ERROR)
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
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

impl From<deadpool_postgres::PoolError> for ApiError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        tracing::warn!(error = %e, "no database connection");
        ApiError::unavailable("the database is unreachable")
    }
}

impl From<tokio_postgres::Error> for ApiError {
    fn from(e: tokio_postgres::Error) -> Self {
        let Some(db) = e.as_db_error() else {
            tracing::warn!(error = %e, "database connection failed");
            return ApiError::unavailable("the database is unreachable");
        };
        let code = db.code().code();
        // The extension names the input field at fault in the error's COLUMN.
        let named = |e: ApiError| match db.column() {
            Some(field) => e.with_field(field),
            None => e,
        };
        match code {
            // data_exception (22xxx): input the extension refused, naming the field.
            c if c.starts_with("22") => named(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_field",
                db.message(),
            )),
            // no_data_found: the thing the request names does not exist.
            "P0002" => named(ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                db.message(),
            )),
            // query_canceled: the statement timeout, which equals the request timeout.
            "57014" => ApiError::timeout(),
            c if c.starts_with("08") || c.starts_with("57P") => {
                tracing::warn!(error = %db, "database unavailable");
                ApiError::unavailable("the database is unavailable")
            }
            _ => ApiError::internal(&format!("database error {code}: {}", db.message())),
        }
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
