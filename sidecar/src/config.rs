//! Command line and environment: the one place the sidecar's settings come from.

use std::time::Duration;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "vigil-sidecar",
    version,
    about = "HTTP front of the Vigil PostgreSQL extension"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the HTTP API until SIGINT or SIGTERM.
    Serve(ServeArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (printed on stdout).
    #[arg(long, env = "VIGIL_HTTP_ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// PostgreSQL connection URL, as the non-superuser application role.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,

    /// Most database connections held open.
    #[arg(long, env = "VIGIL_POOL_SIZE", default_value_t = 16)]
    pub pool_size: usize,

    /// Largest request body accepted, in bytes; larger ones get 413.
    #[arg(long, env = "VIGIL_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Longest a request may take, in milliseconds, before it is answered 503.
    #[arg(long, env = "VIGIL_REQUEST_TIMEOUT_MS", default_value_t = 10_000)]
    pub request_timeout_ms: u64,
}

impl ServeArgs {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
}
