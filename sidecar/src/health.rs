//! `GET /healthz`: is the sidecar up and can it reach the database?

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use crate::app::AppState;
use crate::error::ApiError;

pub async fn healthz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let client = state.db().await?;
    client.query_one("SELECT 1", &[]).await.map_err(|e| {
        tracing::warn!(error = %e, "health check: query failed");
        ApiError::unavailable("the database does not answer")
    })?;
    Ok(Json(json!({ "status": "ok", "database": "ok" })))
}
