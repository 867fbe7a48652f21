//! The one error type of the HTTP API, and the layer that makes every error JSON.
//!
//! Body: `{"error":{"code":"...","message":"...","field":"..."}}` (`field` only
//! when one input field is at fault). Errors produced outside our handlers
//! (unknown route, wrong method, body limit, timeout) are rewritten into the same
//! shape by [`render_foreign_errors`], so clients parse one format. Database
//! errors are mapped here too, in one place ([`from_sqlstate`]): invalid input
//! the extension reports becomes a 400 naming the field, an unreachable or
//! exhausted database 503, corruption and other faults 500 with stable codes.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    /// Seconds for `Retry-After` (429).
    pub retry_after: Option<u64>,
}

/// The body of every error response.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorDetail<'a> {
    /// Stable, machine-readable: see the error table of docs/reference/errors.md.
    #[schema(example = "invalid_field")]
    code: &'a str,
    /// For people; may change between versions.
    message: &'a str,
    /// The input field at fault (a body field, `x-api-key`, `transactionId`).
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
}

/// The code of an error response, for the metrics layer (it counts 429s by
/// code) without reading the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode(pub &'static str);

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

    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
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
            StatusCode::UNPROCESSABLE_ENTITY => {
                ("unprocessable", "the request body could not be processed")
            }
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

/// The `Retry-After` of a 503 that gives none of its own.
pub const RETRY_UNAVAILABLE_SECS: u64 = 1;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: &self.message,
                field: self.field.as_deref(),
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        response.extensions_mut().insert(ErrorCode(self.code));
        // Every 503 says when to come back: the database is reached again,
        // or the load has passed, within seconds or not at all soon.
        let retry_after = self
            .retry_after
            .or((self.status == StatusCode::SERVICE_UNAVAILABLE).then_some(RETRY_UNAVAILABLE_SECS));
        if let Some(secs) = retry_after {
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
        match e.as_db_error() {
            Some(db) if crate::db::in_replica() => from_replica(db),
            Some(db) => {
                if loses_primary(db.code().code()) {
                    crate::db::server_lost();
                }
                from_sqlstate(db.code().code(), db.message(), db.column())
            }
            None => {
                if connection_lost(&e) {
                    crate::db::server_lost();
                }
                tracing::warn!(error = %e, "database connection failed");
                ApiError::unavailable("the database is unreachable")
            }
        }
    }
}

/// A database error on a hot standby (`reads`): the request's own fault (a
/// refused input, a database it does not have) as on the primary; anything
/// else a 503 that sends the read to the primary. A standby refuses writes
/// (25006, such as `vigil.enter_account` recording a key's use) and cancels
/// queries that conflict with the WAL it replays (40001): the read is
/// answered by the primary then, and the replica is not lost for it; it is
/// when it shuts down or its connection fails.
fn from_replica(db: &tokio_postgres::error::DbError) -> ApiError {
    let code = db.code().code();
    if loses_replica(code) {
        crate::db::server_lost();
    }
    from_replica_sqlstate(code, db.message(), db.column())
}

/// Whether a database error on a standby's connection loses that standby:
/// as [`loses_primary`], but for 25006, which every standby answers to a write.
fn loses_replica(code: &str) -> bool {
    loses_primary(code) && code != "25006"
}

/// The HTTP error of a standby's database error (see [`from_replica`]).
fn from_replica_sqlstate(code: &str, message: &str, column: Option<&str>) -> ApiError {
    if code.starts_with("22") || code.starts_with("23") || code == "P0002" {
        return from_sqlstate(code, message, column);
    }
    tracing::info!(
        sqlstate = code,
        error = message,
        "a replica could not answer"
    );
    ApiError::unavailable("a replica could not answer")
}

/// Whether a database error says that the server of the connection is no
/// longer the primary, or no longer there: it is read-only now (25006, a
/// standby since a failover), it ends the connection (57P01 admin shutdown,
/// 57P02 crash shutdown, 57P03 cannot connect now), or the connection
/// failed (class 08). Then the pool's connections are all dropped
/// (`db::server_lost`) and new ones look for the primary again. Not class 53
/// (too many connections, out of memory, disk full): reconnecting would not help.
pub fn loses_primary(code: &str) -> bool {
    matches!(code, "25006" | "57P01" | "57P02" | "57P03") || code.starts_with("08")
}

/// Whether an error that is not the server's is the connection's: closed, or
/// an I/O error (reset, refused, timed out). A value the server sent that does
/// not convert is not.
fn connection_lost(e: &tokio_postgres::Error) -> bool {
    use std::error::Error as _;
    e.is_closed()
        || e.source()
            .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
}

impl ApiError {
    /// The error of `vigil.assess_id`: an image it refused (COLUMN `image`) by
    /// its SQLSTATE, else as every database error maps ([`from_sqlstate`]).
    pub fn from_image_error(e: tokio_postgres::Error) -> ApiError {
        match e.as_db_error() {
            Some(db) => from_image_sqlstate(db.code().code(), db.message(), db.column())
                .unwrap_or_else(|| ApiError::from(e)),
            None => ApiError::from(e),
        }
    }
}

/// An image `vigil.assess_id` refused: 22P03 not a format it takes (415),
/// 54000 over a size limit, 22003 one side over four times the other and
/// 22023 undecodable (422). Only with COLUMN
/// `image`, so no other error is mistaken for one.
pub fn from_image_sqlstate(code: &str, message: &str, column: Option<&str>) -> Option<ApiError> {
    let (status, stable) = match code {
        "22P03" => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_image_type"),
        "54000" => (StatusCode::UNPROCESSABLE_ENTITY, "image_too_large"),
        "22003" => (StatusCode::UNPROCESSABLE_ENTITY, "image_out_of_proportion"),
        "22023" => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_image"),
        _ => return None,
    };
    (column == Some("image")).then(|| ApiError::new(status, stable, message).with_field("image"))
}

/// The HTTP error of a database error, from its SQLSTATE, message and COLUMN
/// (where the extension names the input field at fault). Only the classes
/// that mean "the request is wrong" are client errors, so a fault of ours
/// (a corrupt index, a full disk) is never blamed on the caller.
pub fn from_sqlstate(code: &str, message: &str, column: Option<&str>) -> ApiError {
    let named = |e: ApiError| match column {
        Some(field) => e.with_field(field),
        None => e,
    };
    let server = |status: StatusCode, stable: &'static str, public: &str| {
        tracing::error!(sqlstate = code, error = message, "database error");
        ApiError::new(status, stable, public)
    };
    match code {
        // unique_violation: the thing to create exists under that name.
        "23505" => named(ApiError::new(StatusCode::CONFLICT, "conflict", message)),
        // data_exception: input the extension refused ("invalid <field>: <why>");
        // other integrity violations: the request breaks a rule of the data.
        c if c.starts_with("22") || c.starts_with("23") => named(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_field",
            message,
        )),
        // no_data_found: the thing the request names does not exist.
        "P0002" => named(ApiError::new(StatusCode::NOT_FOUND, "not_found", message)),
        // invalid_authorization_specification: vigil.enter_api_key found the
        // key no longer live (revoked or expired since it was checked).
        "28000" => ApiError::new(StatusCode::UNAUTHORIZED, "unknown_key", message),
        // query_canceled: the statement timeout, which equals the request timeout.
        "57014" => ApiError::timeout(),
        "XX001" => server(
            StatusCode::INTERNAL_SERVER_ERROR,
            "data_corrupted",
            "stored data is damaged; the operator must repair it",
        ),
        "XX002" => server(
            StatusCode::INTERNAL_SERVER_ERROR,
            "index_corrupted",
            "an index is damaged; the operator must rebuild it",
        ),
        // read_only_sql_transaction: the server is a standby now, a failover
        // is under way; the next connection finds the new primary.
        "25006" => server(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the database is read-only while a failover completes",
        ),
        // insufficient_resources (disk full, out of memory, too many
        // connections), connection exceptions, operator intervention: retry later.
        c if c.starts_with("53") || c.starts_with("08") || c.starts_with("57P") => server(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the database is unavailable",
        ),
        _ => server(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error",
        ),
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
    if let Some(retry) = rendered.headers().get(header::RETRY_AFTER) {
        parts
            .headers
            .entry(header::RETRY_AFTER)
            .or_insert(retry.clone());
    }
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, rendered.into_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(code: &str, column: Option<&str>) -> (StatusCode, &'static str, Option<String>) {
        let e = from_sqlstate(code, "invalid amount: must be a number", column);
        (e.status, e.code, e.field)
    }

    #[test]
    fn refused_input_is_a_400_naming_its_field() {
        assert_eq!(
            mapped("22023", Some("amount")),
            (
                StatusCode::BAD_REQUEST,
                "invalid_field",
                Some("amount".into())
            )
        );
        assert_eq!(
            mapped("22P02", None),
            (StatusCode::BAD_REQUEST, "invalid_field", None)
        );
        let e = from_sqlstate("22023", "invalid body: must be an object", None);
        assert_eq!(e.message, "invalid body: must be an object");
    }

    #[test]
    fn integrity_and_missing_rows_are_client_errors() {
        assert_eq!(mapped("23505", None).0, StatusCode::CONFLICT);
        assert_eq!(mapped("23514", Some("label")).0, StatusCode::BAD_REQUEST);
        assert_eq!(
            mapped("P0002", Some("transactionId")),
            (
                StatusCode::NOT_FOUND,
                "not_found",
                Some("transactionId".into())
            )
        );
    }

    #[test]
    fn a_refused_image_is_415_or_422_naming_it_and_nothing_else_is() {
        let image = |code| {
            from_image_sqlstate(
                code,
                "invalid image: received a PDF document",
                Some("image"),
            )
            .map(|e| (e.status, e.code, e.field))
        };
        let named = Some("image".to_owned());
        assert_eq!(
            image("22P03"),
            Some((
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_image_type",
                named.clone()
            ))
        );
        assert_eq!(
            image("54000"),
            Some((
                StatusCode::UNPROCESSABLE_ENTITY,
                "image_too_large",
                named.clone()
            ))
        );
        assert_eq!(
            image("22003"),
            Some((
                StatusCode::UNPROCESSABLE_ENTITY,
                "image_out_of_proportion",
                named.clone()
            ))
        );
        assert_eq!(
            image("22023"),
            Some((StatusCode::UNPROCESSABLE_ENTITY, "invalid_image", named))
        );
        assert_eq!(image("XX000"), None);
        // Without COLUMN image, the general mapping decides.
        assert!(from_image_sqlstate("22023", "invalid amount", Some("amount")).is_none());
        assert!(from_image_sqlstate("54000", "too complex", None).is_none());
    }

    #[test]
    fn internal_failures_are_never_400_and_keep_their_own_codes() {
        let cases = [
            ("XX001", StatusCode::INTERNAL_SERVER_ERROR, "data_corrupted"),
            (
                "XX002",
                StatusCode::INTERNAL_SERVER_ERROR,
                "index_corrupted",
            ),
            ("XX000", StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            ("42P01", StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            ("53100", StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ("53200", StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ("08006", StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ("57P01", StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ("57014", StatusCode::SERVICE_UNAVAILABLE, "timeout"),
        ];
        for (sqlstate, status, code) in cases {
            // Even with a COLUMN, a server fault names no field and hides its message.
            let e = from_sqlstate(sqlstate, "secret detail", Some("amount"));
            assert_eq!(
                (e.status, e.code, e.field),
                (status, code, None),
                "{sqlstate}"
            );
            assert!(!e.message.contains("secret"), "{sqlstate}");
        }
    }

    /// What a caller sees while the primary is lost and another is promoted:
    /// the old primary read-only, shutting down or gone, no server taking
    /// writes yet, or the pool's wait running out. Always a 503 that says
    /// when to come back, never a 500.
    #[test]
    fn a_failover_is_a_503_with_retry_after_and_never_a_500() {
        let failover = [
            "25006", "57P01", "57P02", "57P03", "08000", "08001", "08003", "08006",
        ];
        let mut errors: Vec<ApiError> = failover
            .iter()
            .map(|code| {
                from_sqlstate(
                    code,
                    "cannot execute INSERT in a read-only transaction",
                    None,
                )
            })
            .collect();
        use deadpool_postgres::{PoolError, TimeoutType};
        for timeout in [TimeoutType::Wait, TimeoutType::Create, TimeoutType::Recycle] {
            errors.push(ApiError::from(PoolError::Timeout(timeout)));
        }
        errors.push(ApiError::from(PoolError::Closed));
        for e in errors {
            assert_eq!(
                (e.status, e.code),
                (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
                "{e:?}"
            );
            assert!(
                !e.message.contains("INSERT"),
                "the server's words stay in the log: {e:?}"
            );
            let response = e.into_response();
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(
                response
                    .headers()
                    .get(header::RETRY_AFTER)
                    .map(|v| v.to_str().unwrap()),
                Some(RETRY_UNAVAILABLE_SECS.to_string().as_str())
            );
        }
    }

    #[test]
    fn only_errors_that_lose_the_primary_drop_the_connections() {
        for code in [
            "25006", "57P01", "57P02", "57P03", "08000", "08006", "08P01",
        ] {
            assert!(loses_primary(code), "{code}");
        }
        // Too many connections, out of memory, disk full, a timeout, bad
        // input, a conflict: the primary is where it was.
        for code in [
            "53300", "53200", "53100", "57014", "22023", "23505", "40001", "XX000",
        ] {
            assert!(!loses_primary(code), "{code}");
        }
    }

    #[test]
    fn a_standby_refusing_a_write_or_cancelled_by_recovery_is_a_503_and_not_lost() {
        for code in ["25006", "40001", "57P01", "08006", "XX000", "53300"] {
            let e = from_replica_sqlstate(code, "whatever", None);
            assert_eq!(
                (e.status, e.code),
                (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
                "{code}"
            );
        }
        // The request's own fault is the same on a standby as on the primary.
        let e = from_replica_sqlstate("22023", "invalid limit: too large", Some("limit"));
        assert_eq!(
            (e.status, e.field.as_deref()),
            (StatusCode::BAD_REQUEST, Some("limit"))
        );
        assert_eq!(
            from_replica_sqlstate("P0002", "no database", None).status,
            StatusCode::NOT_FOUND
        );
        assert!(!loses_replica("25006") && !loses_replica("40001"));
        assert!(loses_replica("57P01") && loses_replica("08006"));
    }
}
