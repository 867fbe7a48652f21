//! The connection pool to PostgreSQL, and how it follows the primary.
//!
//! `DATABASE_URL` may name several servers (`postgres://u:p@a:5432,b:5432,c:5432/vigil
//! ?target_session_attrs=read-write`, as libpq takes them): a new connection
//! tries them in order and keeps the first that accepts writes. When the primary
//! is lost (the connection is closed or broken, the server shuts down, or it is
//! read-only now: a failover), [`primary_lost`] is called where the error is
//! mapped (`error`), and every connection made until then is dropped at its next
//! checkout instead of being used again; new ones find the new primary. Until one
//! does, requests are answered 503 with `Retry-After` (docs/high-availability.md).

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
        // A connection made before the primary was lost is not used again.
        .pre_recycle(deadpool_postgres::Hook::sync_fn(|_, metrics| {
            if made_before_loss(metrics) {
                Err(HookError::message("made before the primary was lost"))
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

/// Nanoseconds after [`epoch`] at which the primary was last lost; 0: never.
static LOST_AT: AtomicU64 = AtomicU64::new(0);

/// The primary was lost (see the module's documentation): every connection
/// of every pool made until now is dropped at its next checkout.
pub fn primary_lost() {
    let now = u64::try_from(epoch().elapsed().as_nanos())
        .unwrap_or(u64::MAX)
        .max(1);
    if LOST_AT.fetch_max(now, Ordering::Relaxed) == 0 {
        tracing::warn!("the primary was lost: reconnecting");
    }
}

/// Whether a connection was made before the primary was last lost.
fn made_before_loss(metrics: &Metrics) -> bool {
    made_before(metrics.created, LOST_AT.load(Ordering::Relaxed))
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
