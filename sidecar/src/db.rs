//! The connection pool to PostgreSQL.

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};
use tokio_postgres::NoTls;

use crate::config::ServeArgs;

/// Builds the requests' pool of `--pool-size` connections; connections are
/// opened lazily, so this fails only on a bad URL.
pub fn pool(args: &ServeArgs) -> Result<Pool, String> {
    pool_of(args, args.pool_size(), "")
}

/// The pool of the connections that embed search queries in batches
/// (`vectordb::search::batch`), each running its batch on
/// `--query-embed-threads` threads. One thread each and one connection per
/// core by default: batches side by side, one per core, answered more
/// searches than one batch shared out over the cores (docs/performance.md,
/// "Vector database"). The threads sleep rather than spin between
/// operators, because the searches want those cores too.
pub fn embedder_pool(args: &ServeArgs) -> Result<Pool, String> {
    let settings = format!(
        " -c vigil.embed_threads={} -c vigil.embed_spinning=off",
        args.query_embed_threads.max(1)
    );
    pool_of(args, args.query_embedders(), &settings)
}

/// A pool of `size` connections, with `settings` (`-c name=value ...`) beside
/// the ones every connection has.
fn pool_of(args: &ServeArgs, size: usize, settings: &str) -> Result<Pool, String> {
    let mut pg: tokio_postgres::Config = args
        .database_url
        .parse()
        .map_err(|e| format!("DATABASE_URL is not a valid PostgreSQL URL: {e}"))?;
    // Named in pg_stat_activity, unless the URL names it (several sidecars
    // on one database, told apart).
    if pg.get_application_name().is_none() {
        pg.application_name("vigil-sidecar");
    }
    // The server abandons a statement the client has stopped waiting for; times
    // come back in UTC, as the API reports them.
    pg.options(format!(
        "-c statement_timeout={} -c TimeZone=UTC{settings}",
        args.request_timeout_ms
    ));
    let manager = Manager::from_config(
        pg,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let timeout = Some(args.request_timeout());
    Pool::builder(manager)
        .max_size(size.max(1))
        .timeouts(Timeouts {
            wait: timeout,
            create: timeout,
            recycle: timeout,
        })
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| format!("cannot build the connection pool: {e}"))
}
