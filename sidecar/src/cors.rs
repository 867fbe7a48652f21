//! Cross-origin access for browsers, from an allow-list (`--cors-origins`).
//!
//! Off when the list is empty: no layer at all, so same-origin and
//! server-to-server callers pay nothing for it. When on, it sits outside the
//! JSON error rendering (see `app`), so errors carry the headers too and a
//! browser can read a 401 or a 429 instead of a bare network failure.

use std::time::Duration;

use axum::http::header::{ACCESS_CONTROL_ALLOW_METHODS, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use tower::layer::util::Stack;
use tower::util::MapResponseLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::auth::API_KEY_HEADER;

/// How long a browser may cache a preflight's answer.
const MAX_AGE: Duration = Duration::from_secs(600);

pub type Layer = Stack<CorsLayer, MapResponseLayer<fn(Response) -> Response>>;

/// The CORS layer for `origins` (each `scheme://host[:port]`), or None when
/// the list is empty.
pub fn layer(origins: &[String]) -> Result<Option<Layer>, String> {
    let origins = origins
        .iter()
        .map(|o| o.trim())
        .filter(|o| !o.is_empty())
        .map(origin)
        .collect::<Result<Vec<_>, _>>()?;
    if origins.is_empty() {
        return Ok(None);
    }
    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
        .allow_headers([CONTENT_TYPE, HeaderName::from_static(API_KEY_HEADER)])
        .expose_headers([RETRY_AFTER, HeaderName::from_static("x-request-id")])
        .max_age(MAX_AGE);
    let no_content: fn(Response) -> Response = preflight_no_content;
    Ok(Some(Stack::new(cors, MapResponseLayer::new(no_content))))
}

/// An origin as browsers send it: scheme and authority, nothing else.
fn origin(text: &str) -> Result<HeaderValue, String> {
    let invalid =
        || format!("VIGIL_CORS_ORIGINS: {text:?} is not an origin such as http://localhost:3000");
    let uri: Uri = text.parse().map_err(|_| invalid())?;
    let exact = match (uri.scheme_str(), uri.authority()) {
        (Some(scheme @ ("http" | "https")), Some(authority)) => {
            text.len() == scheme.len() + 3 + authority.as_str().len()
        }
        _ => false,
    };
    if !exact {
        return Err(invalid());
    }
    HeaderValue::from_str(text).map_err(|_| invalid())
}

/// tower-http answers a preflight itself with 200 and no body; 204 says "no
/// content" as the fetch standard's examples do. Only a preflight's answer
/// carries Access-Control-Allow-Methods.
fn preflight_no_content(mut response: Response) -> Response {
    if response.status() == StatusCode::OK
        && response
            .headers()
            .contains_key(ACCESS_CONTROL_ALLOW_METHODS)
    {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(list: &[&str]) -> Result<Option<Layer>, String> {
        layer(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn an_empty_list_is_no_layer() {
        assert!(origins(&[]).unwrap().is_none());
        assert!(origins(&["", " "]).unwrap().is_none());
    }

    #[test]
    fn origins_are_scheme_and_authority_only() {
        assert!(
            origins(&["http://localhost:3000", " https://shop.example "])
                .unwrap()
                .is_some()
        );
        for bad in [
            "localhost:3000",
            "http://localhost:3000/",
            "http://localhost:3000/app",
            "ftp://example.com",
            "*",
        ] {
            assert!(origins(&[bad]).is_err(), "{bad}");
        }
    }
}
