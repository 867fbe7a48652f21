//! The router: routes, and the layers every request passes through.
//!
//! Outermost first: request id, tracing, JSON rendering of foreign errors,
//! timeout, body limit. Handlers only ever see requests within the limits.

use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::extract::Request;
use axum::http::{HeaderName, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{middleware, BoxError, Router};
use std::sync::Arc;

use deadpool_postgres::{Object, Pool};
use ipnet::IpNet;
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

use crate::auth::{self, Limits};
use crate::config::ServeArgs;
use crate::error::{render_foreign_errors, ApiError};
use crate::{health, transaction, vectordb};

#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub limits: Arc<Limits>,
    pub trusted_proxies: Arc<[IpNet]>,
}

impl AppState {
    /// A pooled connection, or 503 when the database cannot be reached.
    pub async fn db(&self) -> Result<Object, ApiError> {
        Ok(self.pool.get().await?)
    }
}

pub fn router(state: AppState, args: &ServeArgs) -> Router {
    let request_id = HeaderName::from_static("x-request-id");
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/api/key", get(auth::whoami))
        .route("/api/transaction", post(transaction::assess))
        .route(
            "/api/transaction/{transaction_id}/feedback",
            post(transaction::feedback),
        )
        .route("/createDatabase", post(vectordb::create_database))
        .fallback(|| async { ApiError::from_status(StatusCode::NOT_FOUND) })
        .method_not_allowed_fallback(|| async {
            ApiError::from_status(StatusCode::METHOD_NOT_ALLOWED)
        })
        .with_state(state)
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
                .layer(PropagateRequestIdLayer::new(request_id))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(request_span)
                        .on_response(DefaultOnResponse::new().level(Level::INFO)),
                )
                .layer(middleware::map_response(render_foreign_errors))
                .layer(HandleErrorLayer::new(|_: BoxError| async {
                    ApiError::timeout().into_response()
                }))
                .timeout(args.request_timeout())
                .layer(DefaultBodyLimit::disable())
                .layer(RequestBodyLimitLayer::new(args.max_body_bytes)),
        )
}

/// The log span of a request: method, path and request id. Never headers, query
/// strings or bodies, which can carry keys.
fn request_span(request: &Request) -> tracing::Span {
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    tracing::info_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path(),
        id = %id,
        // The database id of the authenticated key, once known (never the key).
        key = tracing::field::Empty,
    )
}
