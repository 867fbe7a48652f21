//! `vigil-sidecar`: the HTTP front of Vigil, and its admin command.
//!
//! `serve` authenticates each request and turns it into one SQL call into the
//! `vigil` extension; no business logic lives here. `keys`, `accounts` and
//! `user-keys` manage credentials through the extension's admin functions.
//! See `app` for the routes and the layers every request goes through.

mod abandon;
mod admin;
mod api_key;
mod app;
mod auth;
mod config;
mod cors;
mod db;
mod error;
mod extract;
mod health;
mod identity;
mod json;
mod metrics;
// A test of the crate's own layout: a unit test, so testing the sidecar builds
// no second, test-only copy of its binary (an integration test would).
#[cfg(test)]
mod module_cycles;
mod openapi;
mod outcome;
mod query_vectors;
mod reads;
mod refusals;
mod serve;
mod state;
mod transaction;
mod vectordb;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use crate::admin::AdminCommand;
use crate::config::ServeArgs;

#[derive(Parser, Debug)]
#[command(
    name = "vigil-sidecar",
    version,
    about = "HTTP front of the Vigil PostgreSQL extension, and its admin command"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the HTTP API until SIGINT or SIGTERM.
    Serve(ServeArgs),
    #[command(flatten)]
    Admin(AdminCommand),
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(log_filter())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let threads = match &cli.command {
        Command::Serve(args) => args.worker_threads(),
        Command::Admin(_) => 1,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build();
    let result = match runtime {
        Ok(runtime) => runtime.block_on(async {
            match cli.command {
                Command::Serve(args) => serve::serve(args).await,
                Command::Admin(command) => admin::run(command).await,
            }
        }),
        Err(e) => Err(format!("cannot start the async runtime: {e}").into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vigil-sidecar: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `RUST_LOG`, default `info`; whatever it says, tokio-postgres stays at
/// `info`, because at `debug` it logs statement parameters, which carry keys.
fn log_filter() -> EnvFilter {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    match "tokio_postgres=info".parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    }
}
