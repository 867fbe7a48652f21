//! The connection pool to PostgreSQL, and how it follows the primary.
//!
//! `DATABASE_URL` may name several servers (`postgres://u:p@a:5432,b:5432,c:5432/vigil
//! ?target_session_attrs=read-write`, as libpq takes them): a new connection
//! tries them in order and keeps the first that accepts writes. When the primary
//! is lost (the connection is closed or broken, the server shuts down, or it is
//! read-only now: a failover), [`server_lost`] is called where the error is
//! mapped (`error`), and every connection made until then is dropped at its next
//! checkout instead of being used again; new ones find the new primary. Until one
//! does, requests are answered 503 with `Retry-After` (docs/high-availability.md).
//!
//! `VIGIL_READ_DATABASE_URL` may name hot standbys for the searches and the
//! record listing ([`read_pool`], routed by `reads`). Work on one of their
//! connections runs inside [`on_replica`], so that an error there loses a
//! replica ([`Server::Replica`]: the read pools' connections are dropped),
//! never the primary.

use std::future::Future;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use deadpool_postgres::{
    HookError, Manager, ManagerConfig, Metrics, Pool, RecyclingMethod, Runtime, Timeouts,
};
use tokio_postgres::NoTls;

use crate::config::ServeArgs;

/// Builds the requests' pool of `--pool-size` connections; connections are
/// opened lazily, so this fails only on a bad URL.
pub fn pool(args: &ServeArgs) -> Result<Pool, String> {
    pool_of(
        &args.database_url,
        Server::Primary,
        args,
        args.pool_size(),
        Purpose::Requests,
    )
}

/// The pool of `--read-database-url` (hot standbys), as large as the
/// requests' pool; `None` when no URL is set: every read goes to the primary.
pub fn read_pool(args: &ServeArgs) -> Result<Option<Pool>, String> {
    let Some(url) = &args.read_database_url else {
        return Ok(None);
    };
    pool_of(
        url,
        Server::Replica,
        args,
        args.pool_size(),
        Purpose::Requests,
    )
    .map(Some)
}

/// The pool of the connections that embed search queries in batches
/// (`query_vectors::batch`), each running its batch on
/// `--query-embed-threads` threads. One thread each and one connection per
/// core by default: batches side by side, one per core, answered more
/// searches than one batch shared out over the cores (docs/performance.md,
/// "Vector database"). The threads sleep rather than spin between
/// operators, because the searches want those cores too.
/// With `--read-database-url` the embedders are the replicas' (`vigil.embed`
/// writes nothing), and those of the primary serve only while no replica
/// answers: [`read_embedder_pool`].
pub fn embedder_pool(args: &ServeArgs) -> Result<Pool, String> {
    let url = &args.database_url;
    pool_of(
        url,
        Server::Primary,
        args,
        args.query_embedders(),
        Purpose::QueryEmbedders(embedder_settings(args)),
    )
}

/// The query embedders on the replicas of `--read-database-url`, if set.
pub fn read_embedder_pool(args: &ServeArgs) -> Result<Option<Pool>, String> {
    let Some(url) = &args.read_database_url else {
        return Ok(None);
    };
    let size = args.query_embedders();
    pool_of(
        url,
        Server::Replica,
        args,
        size,
        Purpose::QueryEmbedders(embedder_settings(args)),
    )
    .map(Some)
}

fn embedder_settings(args: &ServeArgs) -> String {
    format!(
        " -c vigil.embed_threads={} -c vigil.embed_spinning=off",
        args.query_embed_threads.max(1)
    )
}

/// What a pool's connections do.
enum Purpose {
    /// The requests' statements.
    Requests,
    /// Query batches (`vigil.embed`), with these settings (`-c name=value
    /// ...`) beside the ones every connection has.
    QueryEmbedders(String),
}

/// A pool of `size` connections to `url`, the primary's or the replicas',
/// for `purpose`.
fn pool_of(
    url: &str,
    server: Server,
    args: &ServeArgs,
    size: usize,
    purpose: Purpose,
) -> Result<Pool, String> {
    let mut pg: tokio_postgres::Config = url
        .parse()
        .map_err(|e| format!("{} is not a valid PostgreSQL URL: {e}", server.variable()))?;
    // Named in pg_stat_activity `vigil-sidecar`, or as the URL names it
    // (several sidecars on one database, told apart). The query embedders
    // are `NAME embedders`: each holds the text model for as long as it
    // lives (165 MiB private on a processor without VNNI, which runs the
    // published model; less with the int8 rewrite), which an operator
    // sizing memory, and the identity budget's test, tell apart from the
    // requests' connections.
    let name = pg
        .get_application_name()
        .unwrap_or("vigil-sidecar")
        .to_owned();
    let settings = match purpose {
        Purpose::Requests => {
            pg.application_name(&name);
            String::new()
        }
        Purpose::QueryEmbedders(settings) => {
            pg.application_name(format!("{name} embedders"));
            settings
        }
    };
    // The server abandons a statement the client has stopped waiting for; times
    // come back in UTC, as the API reports them.
    pg.options(format!(
        "-c statement_timeout={} -c TimeZone=UTC{settings}",
        args.request_timeout_ms
    ));
    bound_waits(&mut pg, args.request_timeout());
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
        // A connection made before its server was lost is not used again.
        .pre_recycle(deadpool_postgres::Hook::sync_fn(move |_, metrics| {
            if made_before_loss(server, metrics) {
                Err(HookError::message("made before its server was lost"))
            } else {
                Ok(())
            }
        }))
        .build()
        .map_err(|e| format!("cannot build the connection pool: {e}"))
}

/// Bounds what the URL leaves unbounded, so that a server that vanishes
/// (a host powered off: no reset comes back) costs seconds, not the
/// operating system's minutes: each connection attempt gives up after
/// `connect_timeout` (the request timeout shared out over the hosts, 1 to
/// 5 s), unacknowledged data or keepalive probes after `tcp_user_timeout`
/// (10 s), and probes start after 5 s of silence (`keepalives_idle`, libpq's
/// 2 hours otherwise). A URL that sets any of them keeps its own.
fn bound_waits(pg: &mut tokio_postgres::Config, request_timeout: Duration) {
    if pg.get_connect_timeout().is_none() {
        let hosts = pg.get_hosts().len().max(1) as u32;
        pg.connect_timeout(
            (request_timeout / hosts).clamp(Duration::from_secs(1), Duration::from_secs(5)),
        );
    }
    if pg.get_tcp_user_timeout().is_none() {
        pg.tcp_user_timeout(Duration::from_secs(10));
    }
    if pg.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
        pg.keepalives_idle(Duration::from_secs(5));
    }
}

/// The instant every time is measured from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The servers a pool connects to: the primary (`DATABASE_URL`), or the
/// hot standbys of `--read-database-url`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Primary,
    Replica,
}

impl Server {
    fn variable(self) -> &'static str {
        match self {
            Server::Primary => "DATABASE_URL",
            Server::Replica => "VIGIL_READ_DATABASE_URL",
        }
    }
}

/// Nanoseconds after [`epoch`] at which the primary, and a replica, were
/// last lost; 0: never.
static LOST_AT: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

tokio::task_local! {
    /// Set while work runs on a replica's connection ([`on_replica`]).
    static ON_REPLICA: ();
}

/// Runs `work`, which uses a replica's connection: the errors it meets
/// lose a replica, not the primary ([`server_lost`]).
pub async fn on_replica<F: Future>(work: F) -> F::Output {
    ON_REPLICA.scope((), work).await
}

/// Whether the work running now uses a replica's connection.
pub fn in_replica() -> bool {
    ON_REPLICA.try_with(|_| ()).is_ok()
}

/// The server of the work running now was lost (see the module's
/// documentation): a replica inside [`on_replica`], else the primary. Every
/// connection of the pools of that server made until now is dropped at its
/// next checkout.
pub fn server_lost() {
    lost(if in_replica() {
        Server::Replica
    } else {
        Server::Primary
    });
}

fn lost(server: Server) {
    let now = u64::try_from(epoch().elapsed().as_nanos())
        .unwrap_or(u64::MAX)
        .max(1);
    if LOST_AT[server as usize].fetch_max(now, Ordering::Relaxed) == 0 {
        tracing::warn!(?server, "a database server was lost: reconnecting");
    }
}

/// Whether a connection to `server` was made before it was last lost.
fn made_before_loss(server: Server, metrics: &Metrics) -> bool {
    made_before(
        metrics.created,
        LOST_AT[server as usize].load(Ordering::Relaxed),
    )
}

fn made_before(created: Instant, lost_at: u64) -> bool {
    lost_at != 0 && created <= epoch() + Duration::from_nanos(lost_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_made_before_a_loss_are_dropped_and_later_ones_kept() {
        let before = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        let lost_at = u64::try_from(epoch().elapsed().as_nanos()).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let after = Instant::now();
        assert!(made_before(before, lost_at));
        assert!(!made_before(after, lost_at));
        // Never lost: nothing is dropped.
        assert!(!made_before(before, 0));
    }

    fn config(url: &str) -> tokio_postgres::Config {
        let mut pg: tokio_postgres::Config = url.parse().unwrap();
        bound_waits(&mut pg, Duration::from_secs(10));
        pg
    }

    #[test]
    fn waits_the_url_leaves_open_are_bounded_and_its_own_kept() {
        let three = config("postgres://u@a:1,b:2,c:3/vigil?target_session_attrs=read-write");
        assert_eq!(three.get_hosts().len(), 3);
        assert_eq!(
            three.get_connect_timeout(),
            Some(&(Duration::from_secs(10) / 3))
        );
        assert_eq!(three.get_tcp_user_timeout(), Some(&Duration::from_secs(10)));
        assert_eq!(three.get_keepalives_idle(), Duration::from_secs(5));
        let one = config("postgres://u@a/vigil");
        assert_eq!(one.get_connect_timeout(), Some(&Duration::from_secs(5)));
        let own = config(
            "postgres://u@a/vigil?connect_timeout=30&tcp_user_timeout=60&keepalives_idle=600",
        );
        assert_eq!(own.get_connect_timeout(), Some(&Duration::from_secs(30)));
        assert_eq!(own.get_tcp_user_timeout(), Some(&Duration::from_secs(60)));
        assert_eq!(own.get_keepalives_idle(), Duration::from_secs(600));
    }
}
