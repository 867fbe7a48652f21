//! `POST /api/transaction` and its feedback endpoint: API key with scope
//! `transaction`, then one call of `vigil.risk_score` or
//! `vigil.transaction_feedback`.
//!
//! The caller is authenticated before its body is read as JSON (401 before
//! 400), and the body is validated by the same crate the extension uses, so a
//! bad field is a 400 naming it without a database write.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde::Deserialize;
use serde_json::Value;

use crate::app::AppState;
use crate::auth::client_ip::ClientIp;
use crate::auth::{self, ApiCaller};
use crate::error::ApiError;
use crate::json::{parse, require_json};

const SCOPE: &str = "transaction";

/// Authenticates, then checks the body is JSON; the order clients expect.
async fn authenticated_body<T: serde::de::DeserializeOwned>(
    state: &AppState,
    db: &deadpool_postgres::Object,
    headers: &HeaderMap,
    ip: ClientIp,
    body: &[u8],
) -> Result<(ApiCaller, T), ApiError> {
    let caller = auth::check_api_key(&state.limits, db, headers, ip.0, Some(SCOPE)).await?;
    require_json(headers)?;
    Ok((caller, parse(body)?))
}

pub async fn assess(
    State(state): State<AppState>,
    ip: ClientIp,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let db = state.db().await?;
    let (caller, transaction): (ApiCaller, Value) =
        authenticated_body(&state, &db, &headers, ip, &body).await?;
    if let Err(e) = vigil_risk::parse_request(&transaction) {
        // Worded as the extension words it: "invalid amount: must be ...".
        return Err(if e.field.is_empty() {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", e.message)
        } else {
            ApiError::invalid(&e.field, format!("invalid {}: {}", e.field, e.message))
        });
    }
    let statement = db.prepare_cached("SELECT vigil.risk_score($1, $2)").await?;
    let row = db
        .query_one(&statement, &[&transaction, &caller.key_id])
        .await?;
    Ok(Json(row.try_get(0)?))
}

#[derive(Deserialize)]
pub struct Feedback {
    label: Option<String>,
    note: Option<String>,
}

/// `POST /api/transaction/{transactionId}/feedback` with `{"label": "fraud"|"legit"|"chargeback"}`.
pub async fn feedback(
    State(state): State<AppState>,
    ip: ClientIp,
    Path(transaction_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let db = state.db().await?;
    let (_, feedback): (ApiCaller, Feedback) =
        authenticated_body(&state, &db, &headers, ip, &body).await?;
    if !is_uuid(&transaction_id) {
        return Err(ApiError::invalid(
            "transactionId",
            "transactionId must be a UUID as returned by POST /api/transaction",
        ));
    }
    let statement = db
        .prepare_cached("SELECT vigil.transaction_feedback($1::text::uuid, $2, $3)")
        .await?;
    let row = db
        .query_one(
            &statement,
            &[&transaction_id, &feedback.label, &feedback.note],
        )
        .await?;
    Ok(Json(row.try_get(0)?))
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}
