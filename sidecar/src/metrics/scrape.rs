//! `GET /metrics`, the endpoint that renders the registry.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::IntoResponse;
use deadpool_postgres::Pool;

use super::Metrics;
use crate::error::ApiError;

/// The exposition format's media type.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The standbys' pool, when `--read-database-url` is set.
pub struct ReadPool(pub Option<Pool>);

/// `GET /metrics`: Prometheus text (OpenMetrics) exposition; with
/// `--metrics-token`, only for scrapes that give it.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses(
        (status = 200, description = "Metrics in the OpenMetrics text format",
         content_type = "application/openmetrics-text", body = String),
        (status = 401, description = "missing_credentials, unknown_key: the server has a \
         metrics token (--metrics-token) and the scrape did not give it as \
         `Authorization: Bearer <token>`", body = crate::error::ErrorBody),
    ),
)]
pub async fn scrape(
    State(metrics): State<Arc<Metrics>>,
    State(pool): State<Pool>,
    State(ReadPool(read_pool)): State<ReadPool>,
    headers: HeaderMap,
) -> axum::response::Response {
    if let Err(refused) = metrics.admit(&headers) {
        return refused.into_response();
    }
    match metrics.render(pool.status(), read_pool.as_ref().map(Pool::status)) {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => ApiError::internal(&format!("cannot encode the metrics: {e}")).into_response(),
    }
}
