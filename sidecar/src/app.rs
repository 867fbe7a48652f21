//! The router: routes, and the layers every request passes through.
//!
//! Routes are registered through utoipa-axum, so each one is in the OpenAPI
//! document (`openapi`) with the types of its handler. Layers, outermost
//! first: request id, metrics, tracing, CORS (when origins are allowed), JSON
//! rendering of foreign errors, time limit (longer for the batch store); then per route, the body limit.
//! CORS sits outside the error rendering so errors carry its headers, and
//! metrics outside everything but the request id so they count every answer.

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{middleware, Router};
use std::sync::Arc;
use std::time::Duration;

use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;
use utoipa::OpenApi;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use crate::config::ServeArgs;
use crate::error::{render_foreign_errors, ApiError};
use crate::metrics::layer::MetricsLayer;
use crate::openapi::ApiDoc;
use crate::state::AppState;
use crate::{abandon, api_key, cors, health, identity, metrics, openapi, transaction, vectordb};

pub fn router(state: AppState, args: &ServeArgs) -> Result<Router, String> {
    // Each route that reads a body has its own limit: JSON routes
    // --max-body-bytes (1 MiB); a batch or an upload route may allow more.
    let json = RequestBodyLimitLayer::new(args.max_body_bytes);
    let batch = RequestBodyLimitLayer::new(args.max_batch_body_bytes);
    let (routes, doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(health::healthz))
        .routes(routes!(api_key::whoami))
        .routes(routes!(transaction::assess).layer(json))
        .routes(routes!(transaction::feedback).layer(json))
        .routes(
            routes!(identity::assess).layer(RequestBodyLimitLayer::new(identity::MAX_BODY_BYTES)),
        )
        .routes(routes!(vectordb::create_database).layer(json))
        .routes(routes!(vectordb::store_embedding).layer(json))
        .routes(routes!(vectordb::store_embeddings).layer(batch))
        .routes(routes!(vectordb::get_embeddings).layer(json))
        .routes(routes!(vectordb::search::query_embeddings).layer(json))
        .routes(routes!(vectordb::search::hybrid_search).layer(json))
        .routes(routes!(vectordb::delete_embedding).layer(json))
        .routes(routes!(vectordb::delete_database).layer(json))
        .routes(routes!(metrics::scrape::scrape))
        .split_for_parts();
    let document = openapi::rendered(doc)?;
    let cors = cors::layer(&args.cors_origins)?;
    let request_id = HeaderName::from_static("x-request-id");
    let metrics = MetricsLayer(Arc::clone(&state.metrics));
    Ok(routes
        // Documented by ApiDoc; its state is the rendered document.
        .route("/openapi.json", get(openapi::document).with_state(document))
        .fallback(|| async { ApiError::from_status(StatusCode::NOT_FOUND) })
        .method_not_allowed_fallback(|| async {
            ApiError::from_status(StatusCode::METHOD_NOT_ALLOWED)
        })
        .with_state(state)
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
                .layer(PropagateRequestIdLayer::new(request_id))
                .layer(metrics)
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(request_span)
                        .on_response(DefaultOnResponse::new().level(Level::INFO)),
                )
                .option_layer(cors)
                .layer(middleware::map_response(render_foreign_errors))
                .layer(middleware::from_fn_with_state(
                    Timeouts {
                        request: args.request_timeout(),
                        batch: args.batch_timeout(),
                    },
                    time_limit,
                ))
                // The per-route RequestBodyLimitLayer is the limit.
                .layer(DefaultBodyLimit::disable()),
        ))
}

/// How long a request may take before it is answered 503: one limit for
/// all, and a longer one for the batch store, which embeds up to 1,000 records.
#[derive(Clone, Copy)]
struct Timeouts {
    request: Duration,
    batch: Duration,
}

async fn time_limit(State(limits): State<Timeouts>, request: Request, next: Next) -> Response {
    let limit = if request.uri().path() == "/storeEmbeddings" {
        limits.batch
    } else {
        limits.request
    };
    // Watched: a request dropped at its limit, or by a client that hung up,
    // discards the connections it holds (`abandon`).
    match tokio::time::timeout(limit, abandon::watch(next.run(request))).await {
        Ok(response) => response,
        Err(_) => ApiError::timeout().into_response(),
    }
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

#[cfg(test)]
mod tests {
    //! The router without a database: the pool points at a closed port, so
    //! whatever needs it answers 503, which is enough to see the layers.

    use super::*;
    use crate::auth::Limits;
    use crate::metrics::Metrics;
    use crate::query_vectors::QueryVectors;
    use crate::{Cli, Command};
    use axum::body::{to_bytes, Body};
    use axum::extract::ConnectInfo;
    use axum::http::{header, Method, Response};
    use clap::Parser;
    use serde_json::Value;
    use std::net::SocketAddr;
    use tower::ServiceExt;

    const ALLOWED: &str = "http://localhost:3000";

    fn app() -> Router {
        let cli = Cli::try_parse_from([
            "vigil-sidecar",
            "serve",
            "--database-url",
            "postgres://nobody@127.0.0.1:1/none",
            "--request-timeout-ms",
            "2000",
            "--cors-origins",
            ALLOWED,
        ])
        .unwrap();
        let Command::Serve(args) = cli.command else {
            unreachable!("serve was parsed")
        };
        let metrics = Arc::new(Metrics::new());
        let state = AppState {
            pool: crate::db::pool(&args).unwrap(),
            reads: Arc::new(crate::reads::Reads::new(None, Arc::clone(&metrics))),
            limits: Arc::new(Limits::new(&args.limits).unwrap()),
            trusted_proxies: Arc::from([]),
            metrics: Arc::clone(&metrics),
            batch_timeout: args.batch_timeout(),
            query_vectors: Arc::new(QueryVectors::new(args.query_cache_entries, None, metrics)),
            store_turns: AppState::store_turns_for(args.pool_size()),
            identity_turns: crate::identity::turns(args.identity_memory_mb),
            unauthenticated_body: AppState::unauthenticated_body_for(args.unauthenticated_body_mb),
        };
        router(state, &args).unwrap()
    }

    async fn send(
        app: &Router,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Response<Body> {
        let mut request = Request::builder().method(method).uri(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let mut request = request.body(Body::from("{}")).unwrap();
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        request.extensions_mut().insert(ConnectInfo(peer));
        app.clone().oneshot(request).await.unwrap()
    }

    async fn json(response: Response<Body>) -> Value {
        serde_json::from_slice(&to_bytes(response.into_body(), 1 << 20).await.unwrap()).unwrap()
    }

    fn allowed_origin(response: &Response<Body>) -> Option<&str> {
        response
            .headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .and_then(|v| v.to_str().ok())
    }

    #[tokio::test]
    async fn a_preflight_from_an_allowed_origin_is_204_with_methods_and_headers() {
        let app = app();
        let preflight = |origin| {
            [
                ("origin", origin),
                ("access-control-request-method", "POST"),
                ("access-control-request-headers", "content-type,x-api-key"),
            ]
        };
        let ok = send(
            &app,
            Method::OPTIONS,
            "/api/transaction",
            &preflight(ALLOWED),
        )
        .await;
        assert_eq!(ok.status(), StatusCode::NO_CONTENT);
        assert_eq!(allowed_origin(&ok), Some(ALLOWED));
        let h = ok.headers();
        assert_eq!(h["access-control-allow-methods"], "GET,POST,OPTIONS");
        assert_eq!(h["access-control-allow-headers"], "content-type,x-api-key");
        let other = send(
            &app,
            Method::OPTIONS,
            "/api/transaction",
            &preflight("http://evil.example"),
        )
        .await;
        assert_eq!(allowed_origin(&other), None);
    }

    #[tokio::test]
    async fn errors_carry_cors_headers_for_allowed_origins_only() {
        let app = app();
        for (method, path, status) in [
            (Method::GET, "/no/such/route", StatusCode::NOT_FOUND),
            (Method::DELETE, "/healthz", StatusCode::METHOD_NOT_ALLOWED),
            (Method::GET, "/healthz", StatusCode::SERVICE_UNAVAILABLE),
        ] {
            let response = send(&app, method.clone(), path, &[("origin", ALLOWED)]).await;
            assert_eq!(response.status(), status, "{method} {path}");
            assert_eq!(allowed_origin(&response), Some(ALLOWED), "{method} {path}");
            let exposed = response.headers()["access-control-expose-headers"]
                .to_str()
                .unwrap();
            assert_eq!(exposed, "retry-after,x-request-id");
            assert!(json(response).await["error"]["code"].is_string());
            let other = send(
                &app,
                method.clone(),
                path,
                &[("origin", "http://evil.example")],
            )
            .await;
            assert_eq!(allowed_origin(&other), None, "{method} {path}");
        }
    }

    #[tokio::test]
    async fn every_documented_operation_is_routed() {
        let app = app();
        let doc = json(send(&app, Method::GET, "/openapi.json", &[]).await).await;
        assert_eq!(doc["openapi"], "3.1.0");
        let paths = doc["paths"].as_object().unwrap();
        for path in [
            "/healthz",
            "/api/key",
            "/api/transaction",
            "/api/transaction/{transactionId}/feedback",
            "/assess-id",
            "/createDatabase",
            "/storeEmbedding",
            "/storeEmbeddings",
            "/getEmbeddings",
            "/queryEmbeddings",
            "/hybridSearch",
            "/deleteEmbedding",
            "/deleteDatabase",
            "/openapi.json",
            "/metrics",
        ] {
            assert!(paths.contains_key(path), "{path} is not documented");
        }
        for (path, item) in paths {
            for (method, operation) in item.as_object().unwrap() {
                let default = &operation["responses"]["default"]["content"]["application/json"];
                assert_eq!(
                    default["schema"]["$ref"], "#/components/schemas/ErrorBody",
                    "{path}"
                );
                let uri = path.replace("{transactionId}", "00000000-0000-4000-8000-000000000000");
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                let response = send(
                    &app,
                    method.clone(),
                    &uri,
                    &[("content-type", "application/json")],
                )
                .await;
                assert!(
                    ![StatusCode::NOT_FOUND, StatusCode::METHOD_NOT_ALLOWED]
                        .contains(&response.status()),
                    "{method} {path}: {}",
                    response.status()
                );
            }
        }
    }

    #[tokio::test]
    async fn metrics_count_by_route_pattern_never_the_raw_path() {
        let app = app();
        let id = "11111111-2222-4333-8444-555555555555";
        send(
            &app,
            Method::POST,
            &format!("/api/transaction/{id}/feedback"),
            &[],
        )
        .await;
        let response = send(&app, Method::GET, "/metrics", &[]).await;
        assert_eq!(response.status(), StatusCode::OK);
        let text = String::from_utf8(
            to_bytes(response.into_body(), 1 << 20)
                .await
                .unwrap()
                .to_vec(),
        )
        .unwrap();
        assert!(
            text.contains(r#"route="/api/transaction/{transactionId}/feedback""#),
            "{text}"
        );
        assert!(!text.contains(id));
        // The default pool: three connections per core.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let size = format!("vigil_db_pool_max_size {}", 3 * cores);
        assert!(text.contains(&size), "{text}");
    }
}
