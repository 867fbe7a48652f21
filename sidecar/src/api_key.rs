//! `GET /api/key`: which key is this, and may it be used for `?scope=`?
//!
//! Lets a client check its key (and a key's rotation) without side effects.

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::extract::client_ip::ClientIp;
use crate::refusals::AuthRefusals;
use crate::state::AppState;

/// The scopes an API key can hold (the `scopes` check of `vigil.api_keys`).
const SCOPES: [&str; 2] = ["transaction", "identity"];

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScopeQuery {
    /// `transaction` or `identity`: 403 unless the key holds it.
    scope: Option<String>,
}

/// The calling key, as the admin command shows it (never the key itself).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyInfo {
    name: String,
    /// The key's first 11 characters.
    #[schema(example = "vk_1a2b3c4d")]
    prefix: String,
    scopes: Vec<String>,
    /// ISO 8601, or null for a key that does not expire.
    expires_at: Option<String>,
    rate_limit: RateLimit,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimit {
    per_second: f64,
    burst: u32,
}

/// Describes the calling API key.
#[utoipa::path(
    get,
    path = "/api/key",
    tag = "keys",
    params(ScopeQuery),
    responses(
        (status = 200, description = "The key", body = KeyInfo),
        (status = 400, description = "invalid_field: an unknown scope", body = crate::error::ErrorBody),
        AuthRefusals,
    ),
    security(("apiKey" = [])),
)]
pub async fn whoami(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Query(query): Query<ScopeQuery>,
    headers: HeaderMap,
) -> Result<Json<KeyInfo>, ApiError> {
    if let Some(scope) = query.scope.as_deref() {
        if !SCOPES.contains(&scope) {
            return Err(ApiError::invalid(
                "scope",
                format!("scope must be one of {}", SCOPES.join(", ")),
            ));
        }
    }
    let caller = crate::auth::check_api_key(
        &state.limits,
        || state.db(),
        &headers,
        ip,
        query.scope.as_deref(),
    )
    .await?;
    Ok(Json(KeyInfo {
        name: caller.name,
        prefix: caller.prefix,
        scopes: caller.scopes,
        expires_at: caller.expires_at,
        rate_limit: RateLimit {
            per_second: caller.quota.per_second,
            burst: caller.quota.burst,
        },
    }))
}
