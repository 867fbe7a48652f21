//! `vigil-sidecar`: the HTTP front of Vigil.
//!
//! Every endpoint authenticates its caller and becomes one SQL call into the
//! `vigil` extension; no business logic lives here. See `app` for the routes and
//! the layers every request goes through.

mod app;
mod config;
mod db;
mod error;
mod health;

use clap::Parser;
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

use crate::config::{Cli, Command, ServeArgs};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(args).await,
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vigil-sidecar: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(args: ServeArgs) -> Result<(), Box<dyn std::error::Error>> {
    let pool = db::pool(&args)?;
    let listener = TcpListener::bind(&args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let addr = listener.local_addr()?;
    let router = app::router(app::AppState { pool }, &args);
    // A plain line on stdout for scripts and tests that start us on port 0.
    println!("vigil-sidecar listening on http://{addr}");
    tracing::info!(%addr, "listening");
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on SIGINT or SIGTERM; in-flight requests then finish before exit.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler can be installed");
    tokio::select! {
        _ = interrupt => {},
        _ = terminate.recv() => {},
    }
    tracing::info!("shutting down");
}
