//! The error each outcome of a credential check becomes: the status, code,
//! message and field of a refusal, in one table.

use axum::http::StatusCode;

use super::credentials::API_KEY_HEADER;
use crate::error::ApiError;

#[derive(Clone, Copy)]
pub(super) enum Credential {
    ApiKey,
    UserKey,
    Account,
}

impl Credential {
    fn field(self) -> &'static str {
        match self {
            Credential::ApiKey => API_KEY_HEADER,
            Credential::UserKey => "userKey",
            Credential::Account => "account",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Credential::ApiKey => "API key",
            Credential::UserKey => "user key",
            Credential::Account => "account",
        }
    }
}

/// The error of a check's outcome. Statuses as DESIGN.md fixes them: 401 when
/// the caller is not identified, 403 when identified but not allowed here.
pub(super) fn refusal(outcome: &str, credential: Credential) -> ApiError {
    let noun = credential.noun();
    let (status, code, message, field) = match outcome {
        "missing" => (
            StatusCode::UNAUTHORIZED,
            "missing_credentials",
            match credential {
                Credential::ApiKey => "an API key is required in the x-api-key header".to_owned(),
                _ => format!("{} is required", credential.field()),
            },
            credential.field(),
        ),
        "unknown" => (
            StatusCode::UNAUTHORIZED,
            "unknown_key",
            format!("the {noun} is not recognised"),
            credential.field(),
        ),
        "revoked" => (
            StatusCode::FORBIDDEN,
            "key_revoked",
            format!("the {noun} has been revoked"),
            credential.field(),
        ),
        "expired" => (
            StatusCode::FORBIDDEN,
            "key_expired",
            format!("the {noun} has expired"),
            credential.field(),
        ),
        "scope" => (
            StatusCode::FORBIDDEN,
            "key_scope",
            format!("the {noun} is not allowed to use this endpoint"),
            credential.field(),
        ),
        "ip" => (
            StatusCode::FORBIDDEN,
            "ip_not_allowed",
            format!("the {noun} may not be used from this address"),
            credential.field(),
        ),
        "account" => (
            StatusCode::FORBIDDEN,
            "wrong_account",
            "the user key does not belong to this account".to_owned(),
            "account",
        ),
        "database" => (
            StatusCode::FORBIDDEN,
            "database_not_granted",
            "the user key may not use this database".to_owned(),
            "dbName",
        ),
        other => {
            return ApiError::internal(&format!("unexpected authentication outcome {other:?}"))
        }
    };
    ApiError::new(status, code, message).with_field(field)
}
