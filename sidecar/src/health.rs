//! `GET /healthz`: is the sidecar up and can it reach the database?

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Health {
    #[schema(example = "ok")]
    status: &'static str,
    #[schema(example = "ok")]
    database: &'static str,
}

/// Health of the sidecar and its database.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses(
        (status = 200, description = "Up, and the database answers", body = Health),
        (status = 503, description = "unavailable: the database does not answer", body = ErrorBody),
    ),
)]
pub async fn healthz(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    let client = state.db().await?;
    client.query_one("SELECT 1", &[]).await.map_err(|e| {
        tracing::warn!(error = %e, "health check: query failed");
        ApiError::unavailable("the database does not answer")
    })?;
    Ok(Json(Health {
        status: "ok",
        database: "ok",
    }))
}
