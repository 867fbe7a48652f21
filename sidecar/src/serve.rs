//! `vigil-sidecar serve`: binds, serves HTTP or HTTPS (rustls), and shuts down
//! gracefully on SIGINT or SIGTERM, letting requests in flight finish.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum_server::accept::NoDelayAcceptor;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use axum_server::Handle;

use crate::app;
use crate::auth::Limits;
use crate::config::ServeArgs;
use crate::db;
use crate::metrics::Metrics;
use crate::query_vectors::{Embedders, QueryVectors};
use crate::reads::Reads;
use crate::state::AppState;

type BoxError = Box<dyn std::error::Error>;

pub async fn serve(args: ServeArgs) -> Result<(), BoxError> {
    let metrics = Arc::new(Metrics::new().requiring_token(args.metrics_token.as_deref()));
    let reads = Arc::new(Reads::new(db::read_pool(&args)?, Arc::clone(&metrics)));
    let embedders = Embedders {
        primary: db::embedder_pool(&args)?,
        replica: db::read_embedder_pool(&args)?,
        reads: Arc::clone(&reads),
    };
    let query_vectors = QueryVectors::start(&args, embedders, Arc::clone(&metrics));
    let state = AppState {
        pool: db::pool(&args)?,
        reads,
        store_turns: AppState::store_turns_for(args.pool_size()),
        identity_turns: crate::identity::turns(args.identity_memory_mb),
        unauthenticated_body: AppState::unauthenticated_body_for(args.unauthenticated_body_mb),
        limits: Arc::new(Limits::new(&args.limits)?),
        trusted_proxies: args.trusted_proxies.clone().into(),
        metrics,
        batch_timeout: args.batch_timeout(),
        query_vectors: Arc::new(query_vectors),
    };
    if args.risk_refit_seconds > 0 {
        tokio::spawn(crate::transaction::refit_periodically(
            state.pool.clone(),
            std::time::Duration::from_secs(args.risk_refit_seconds),
        ));
    }
    let router = app::router(state, &args)?;
    let tls = match (&args.tls.tls_cert, &args.tls.tls_key) {
        (Some(cert), Some(key)) => {
            // One crypto provider for the process; ring builds without cmake.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let config = RustlsConfig::from_pem_file(cert, key).await.map_err(|e| {
                format!(
                    "cannot load the TLS certificate {} and key {}: {e}",
                    cert.display(),
                    key.display()
                )
            })?;
            Some(config)
        }
        _ => None,
    };
    let listener = std::net::TcpListener::bind(&args.listen)
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let handle = Handle::new();
    tokio::spawn(shutdown_on_signal(handle.clone())?);

    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    // Connections are TCP_NODELAY, as web servers set them: an answer
    // longer than one segment goes out whole, not with its last, partial
    // segment held back until the client acknowledges the others (Nagle).
    let scheme = if tls.is_some() { "https" } else { "http" };
    // A plain line on stdout for scripts and tests that start us on port 0.
    println!("vigil-sidecar listening on {scheme}://{addr}");
    tracing::info!(%addr, scheme, "listening");
    match tls {
        Some(config) => {
            axum_server::from_tcp(listener)?
                .acceptor(RustlsAcceptor::new(config).acceptor(NoDelayAcceptor))
                .handle(handle)
                .serve(service)
                .await?
        }
        None => {
            axum_server::from_tcp(listener)?
                .acceptor(NoDelayAcceptor)
                .handle(handle)
                .serve(service)
                .await?
        }
    }
    tracing::info!("stopped");
    Ok(())
}

/// Installs the signal handlers now (so a signal right after start is not
/// missed) and returns the task that waits for one.
fn shutdown_on_signal(
    handle: Handle<SocketAddr>,
) -> Result<impl std::future::Future<Output = ()>, BoxError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {},
            _ = terminate.recv() => {},
        }
        tracing::info!("shutting down");
        handle.graceful_shutdown(Some(Duration::from_secs(30)));
    })
}
