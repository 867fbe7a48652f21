//! The refusals that every endpoint of a kind shares, as the OpenAPI
//! document lists them: each endpoint names these sets in its `responses`
//! instead of repeating them. [`ApiError`](crate::error::ApiError) makes
//! the responses themselves.

use utoipa::IntoResponses;

use crate::error::ErrorBody;

/// Refusals of a request that carries credentials.
#[derive(IntoResponses)]
#[allow(dead_code)] // documentation only: ApiError makes these responses
pub enum AuthRefusals {
    /// missing_credentials, unknown_key
    #[response(status = 401)]
    Unauthorized(ErrorBody<'static>),
    /// key_revoked, key_expired, key_scope, ip_not_allowed, wrong_account, database_not_granted
    #[response(status = 403)]
    Forbidden(ErrorBody<'static>),
    /// rate_limited, too_many_failures; `Retry-After` says when to come back
    #[response(status = 429, headers(("retry-after" = u64, description = "seconds")))]
    TooMany(ErrorBody<'static>),
}

/// Refusals of a JSON body.
#[derive(IntoResponses)]
#[allow(dead_code)] // documentation only: ApiError makes these responses
pub enum BodyRefusals {
    /// invalid_json, invalid_field (`field` names it)
    #[response(status = 400)]
    BadRequest(ErrorBody<'static>),
    /// payload_too_large
    #[response(status = 413)]
    TooLarge(ErrorBody<'static>),
    /// unsupported_media_type: the body must be `application/json`
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody<'static>),
}
