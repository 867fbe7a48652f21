//! `JsonBody<T>`: the JSON request body extractor with our errors.
//!
//! Unlike `axum::Json`, a body that does not fit names the field at fault
//! (through `serde_path_to_error`), and every refusal is an [`ApiError`]:
//! 415 without a JSON content type, 413 over the body limit, 400 otherwise.
//! serde_json's recursion limit turns absurdly deep nesting into a 400 too
//! (unknown fields are skipped without recursion, so they need none).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, StatusCode};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        parse(&json_bytes(req, state).await?).map(JsonBody)
    }
}

/// The body of a request that says it is JSON, not yet parsed.
pub async fn json_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    require_json(req.headers())?;
    Bytes::from_request(req, state)
        .await
        .map_err(|rejection| ApiError::from_status(rejection.status()))
}

/// 415 unless the request says its body is JSON.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|mime| mime.split(';').next())
        .map(str::trim)
        .unwrap_or("");
    let json = essence.eq_ignore_ascii_case("application/json")
        || (essence.starts_with("application/") && essence.ends_with("+json"));
    if json {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be JSON (Content-Type: application/json)",
        ))
    }
}

/// Bodies up to this many bytes are parsed where they are read; longer ones
/// (a batch of records may be megabytes) on tokio's blocking pool.
const PARSE_HERE_BYTES: usize = 1 << 20;

/// `read(bytes)`, on tokio's blocking pool when the body is long: parsing
/// megabytes takes milliseconds, which would hold up every request sharing
/// this worker thread (one per core, or as `--worker-threads` says).
pub async fn read_body<R: Send + 'static>(
    bytes: Bytes,
    read: impl FnOnce(&[u8]) -> Result<R, ApiError> + Send + 'static,
) -> Result<R, ApiError> {
    if bytes.len() <= PARSE_HERE_BYTES {
        return read(&bytes);
    }
    tokio::task::spawn_blocking(move || read(&bytes))
        .await
        .map_err(|e| ApiError::internal(&format!("reading the body stopped: {e}")))?
}

pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let invalid = |message: String| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not valid: {message}"),
        )
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let error = invalid(e.inner().to_string());
        // The body's own field ("metadata" of "metadata.a[3]"); "." is the whole
        // body, "?" a place serde could not name.
        let field = path.split(['.', '[']).next().unwrap_or("");
        if field.is_empty() || path == "." || path.contains('?') {
            error
        } else {
            error.with_field(field)
        }
    })?;
    de.end().map_err(|e| invalid(e.to_string()))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Body {
        db_name: Option<String>,
        limit: Option<u32>,
        metadata: Option<serde_json::Value>,
    }

    /// A long body is read off this thread and answers as a short one does.
    #[tokio::test]
    async fn long_bodies_read_elsewhere_read_the_same() {
        let pad = "x".repeat(PARSE_HERE_BYTES);
        for (body, limit) in [
            (format!(r#"{{"dbName":"{pad}","limit":3}}"#), Some(3)),
            (r#"{"dbName":"a","limit":3}"#.to_owned(), Some(3)),
        ] {
            let read = read_body(Bytes::from(body), parse::<Body>).await.unwrap();
            assert_eq!(read.limit, limit);
        }
        let bad = format!(r#"{{"dbName":"{pad}","limit":-1}}"#);
        let e = read_body(Bytes::from(bad), parse::<Body>)
            .await
            .unwrap_err();
        assert_eq!(
            (e.status, e.field.as_deref()),
            (StatusCode::BAD_REQUEST, Some("limit"))
        );
    }

    #[test]
    fn a_wrong_type_names_its_field() {
        let e = parse::<Body>(br#"{"dbName": 5}"#).unwrap_err();
        assert_eq!(
            (e.status, e.field.as_deref()),
            (StatusCode::BAD_REQUEST, Some("dbName"))
        );
        let e = parse::<Body>(br#"{"limit": -1}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("limit"));
    }

    #[test]
    fn malformed_trailing_and_deep_bodies_are_400() {
        for body in [&b"{"[..], b"{} {}", b"not json"] {
            let e = parse::<Body>(body).unwrap_err();
            assert_eq!((e.status, e.field), (StatusCode::BAD_REQUEST, None));
        }
        let nested = |field: &str| {
            format!(
                "{{\"{field}\":{}{}}}",
                "[".repeat(10_000),
                "]".repeat(10_000)
            )
        };
        let e = parse::<Body>(nested("metadata").as_bytes()).unwrap_err();
        assert_eq!(
            e.status,
            StatusCode::BAD_REQUEST,
            "over the recursion limit"
        );
        // An unknown field is skipped without recursion: no limit is needed there.
        assert!(parse::<Body>(nested("other").as_bytes()).is_ok());
    }
}
