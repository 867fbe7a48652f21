//! `GET /api/key`: which key is this, and may it be used for `?scope=`?
//!
//! Lets a client check its key (and a key's rotation) without side effects.

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::client_ip::ClientIp;
use crate::app::AppState;
use crate::error::ApiError;

/// The scopes an API key can hold (the `scopes` check of `vigil.api_keys`).
const SCOPES: [&str; 2] = ["transaction", "identity"];

#[derive(Deserialize)]
pub struct ScopeQuery {
    scope: Option<String>,
}

pub async fn whoami(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Query(query): Query<ScopeQuery>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    if let Some(scope) = query.scope.as_deref() {
        if !SCOPES.contains(&scope) {
            return Err(ApiError::invalid(
                "scope",
                format!("scope must be one of {}", SCOPES.join(", ")),
            ));
        }
    }
    let db = state.db().await?;
    let caller =
        super::check_api_key(&state.limits, &db, &headers, ip, query.scope.as_deref()).await?;
    Ok(Json(json!({
        "name": caller.name,
        "prefix": caller.prefix,
        "scopes": caller.scopes,
        "expiresAt": caller.expires_at,
        "rateLimit": { "perSecond": caller.quota.per_second, "burst": caller.quota.burst },
    })))
}
