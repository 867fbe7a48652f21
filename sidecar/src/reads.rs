//! Where a read runs: on a hot standby of `--read-database-url`, or on the
//! primary (issue 46, docs/high-availability.md "Reads from replicas").
//!
//! The reads are `/queryEmbeddings`, `/hybridSearch` and `/getEmbeddings`
//! (and the query embedders' `vigil.embed`); everything else, writes, risk
//! assessments and their refits, identity checks, API keys, runs on the
//! primary. A standby is a physical copy of the primary: the same roles and
//! row-level security, so an account sees on it what it sees on the primary.
//!
//! Read-your-writes: after a write commits on the primary the sidecar asks
//! where the primary's WAL stands (`pg_current_wal_insert_lsn()`, past the
//! commit) and remembers it for the account ([`Reads::wrote`]). That
//! account's next reads run on a standby only once the standby's connection
//! has replayed that far (`pg_last_wal_replay_lsn()`, one round trip on the
//! connection that will run the read, so it holds whichever standby it is);
//! until then, on the primary. A read never waits for a standby.
//!
//! The memory is bounded: [`ACCOUNTS`] accounts, each kept [`KEPT_FOR`]
//! after its last write. One forgotten leaves its position in a floor that
//! every read on a standby must pass then, so forgetting never lets a
//! read see less than its account's writes.
//!
//! A standby that fails (gone, a query cancelled by recovery, a refusal to
//! write) sends the read to the primary (`falls_back`); a standby that
//! cannot be reached is not tried again for [`REST`].
//!
//! The policy is here alone: every read goes through [`Reads::on_standby`],
//! but for a search that ran on a standby's query embedder, whose
//! connection is given ([`Reads::if_caught_up`]); both end in
//! [`Reads::settle`], which decides between the standby's answer and the
//! primary.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use deadpool_postgres::{Client, Pool};
use tokio_postgres::types::PgLsn;

use crate::abandon::Conn;
use crate::db::on_replica;
use crate::error::ApiError;
use crate::metrics::Metrics;

/// Accounts whose last write's position is kept.
pub const ACCOUNTS: usize = 10_000;
/// How long an account's last write's position is kept.
pub const KEPT_FOR: Duration = Duration::from_secs(60);
/// How long a standby that could not be reached is left alone.
pub const REST: Duration = Duration::from_secs(2);

/// What a standby answers a read of an account that wrote past what it
/// has replayed, when its connection was given rather than chosen.
const BEHIND: &str = "the replica has not replayed the account's last write";

/// Where the reads go.
pub struct Reads {
    replica: Option<Pool>,
    written: Mutex<Written>,
    /// When a standby last could not be reached.
    failed_at: Mutex<Option<Instant>>,
    metrics: Arc<Metrics>,
}

/// Why a read ran where it did, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// On a standby.
    Replica,
    /// On the primary: the standby had not replayed the account's last write.
    Behind,
    /// On the primary: no standby could be reached, or none is set.
    Unreachable,
    /// On the primary: the standby failed the read.
    ReplicaFailed,
}

impl Served {
    pub fn labels(self) -> (&'static str, &'static str) {
        match self {
            Served::Replica => ("replica", "caught_up"),
            Served::Behind => ("primary", "behind"),
            Served::Unreachable => ("primary", "unreachable"),
            Served::ReplicaFailed => ("primary", "replica_failed"),
        }
    }
}

impl Reads {
    pub fn new(replica: Option<Pool>, metrics: Arc<Metrics>) -> Reads {
        Reads {
            replica,
            written: Mutex::new(Written::default()),
            failed_at: Mutex::new(None),
            metrics,
        }
    }

    /// The standbys' pool, if set.
    pub fn replica_pool(&self) -> Option<&Pool> {
        self.replica.as_ref()
    }

    /// Runs `work` on a standby's connection that has replayed `account`'s
    /// writes: its answer, or `None` when the primary must answer instead
    /// (no standby set, reachable or caught up; or [`Reads::settle`]).
    pub async fn on_standby<T, W, F>(&self, account: &str, work: W) -> Result<Option<T>, ApiError>
    where
        W: FnOnce(Conn) -> F,
        F: Future<Output = Result<T, ApiError>>,
    {
        let Some(standby) = self.connection(account).await else {
            if self.replica.is_none() {
                self.served(Served::Unreachable);
            }
            return Ok(None);
        };
        self.settle(on_replica(work(standby)).await)
    }

    /// Runs `work` on `db`, a standby's connection already taken, if it has
    /// replayed `need` ([`Reads::needs`]); else fails so that
    /// [`Reads::settle`] sends the read to the primary.
    pub async fn if_caught_up<T>(
        &self,
        db: &Client,
        need: u64,
        work: impl Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        on_replica(async {
            if self.caught_up(db, need).await? {
                work.await
            } else {
                Err(ApiError::unavailable(BEHIND))
            }
        })
        .await
    }

    /// What a read that ran on a standby comes to: its answer (counted),
    /// `None` for the primary to answer it (counted), or the error itself
    /// when the primary would answer the same ([`Reads::falls_back`]).
    pub fn settle<T>(&self, answer: Result<T, ApiError>) -> Result<Option<T>, ApiError> {
        match answer {
            Ok(answer) => {
                self.served(Served::Replica);
                Ok(Some(answer))
            }
            Err(e) if e.message == BEHIND => {
                self.served(Served::Behind);
                Ok(None)
            }
            Err(e) if !self.falls_back(&e) => Err(e),
            Err(_) => Ok(None),
        }
    }

    /// After a write of `account` committed on `db` (the primary's
    /// connection): where its WAL stands now, past the commit, is what the
    /// account's next reads need a standby to have replayed. Nothing when no
    /// standby is set. When the primary cannot say, the account reads from
    /// the primary until it is forgotten.
    pub async fn wrote(&self, account: &str, db: &Client) {
        if self.replica.is_none() {
            return;
        }
        let lsn = match db
            .query_one("SELECT pg_current_wal_insert_lsn()", &[])
            .await
            .and_then(|row| row.try_get::<_, PgLsn>(0))
        {
            Ok(lsn) => u64::from(lsn),
            Err(e) => {
                tracing::warn!(error = %e, "the primary's WAL position is unknown after a write");
                u64::MAX
            }
        };
        self.written
            .lock()
            .unwrap()
            .wrote(account, lsn, Instant::now());
    }

    /// The WAL position a standby must have replayed to serve `account`'s
    /// reads; 0: any.
    pub fn needs(&self, account: &str) -> u64 {
        self.written.lock().unwrap().needs(account, Instant::now())
    }

    /// A standby's connection that has replayed `account`'s writes, or
    /// `None`: read from the primary (counted then).
    pub async fn connection(&self, account: &str) -> Option<Conn> {
        let pool = self.usable()?;
        let need = self.needs(account);
        let db = match on_replica(pool.get()).await {
            Ok(db) => Conn::new(db),
            Err(e) => {
                tracing::info!(error = %e, "no replica answers: reading from the primary");
                self.unreachable();
                self.served(Served::Unreachable);
                return None;
            }
        };
        match self.caught_up(&db, need).await {
            Ok(true) => Some(db),
            Ok(false) => {
                self.served(Served::Behind);
                None
            }
            Err(_) => {
                self.served(Served::ReplicaFailed);
                None
            }
        }
    }

    /// Whether the standby of `db` has replayed `need` (0: yes, at once).
    /// A server no longer in recovery (promoted) compares its own position.
    pub async fn caught_up(&self, db: &Client, need: u64) -> Result<bool, ApiError> {
        if need == 0 {
            return Ok(true);
        }
        if need == u64::MAX {
            return Ok(false);
        }
        on_replica(async {
            let statement = db
                .prepare_cached(
                    "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() \
                     ELSE pg_current_wal_lsn() END >= $1",
                )
                .await?;
            let row = db.query_one(&statement, &[&PgLsn::from(need)]).await?;
            Ok(row.try_get::<_, Option<bool>>(0)?.unwrap_or(false))
        })
        .await
    }

    /// The standbys' pool, unless none is set or one failed to connect
    /// within [`REST`] (counted as a read on the primary then).
    pub fn usable(&self) -> Option<&Pool> {
        let pool = self.replica.as_ref()?;
        if self.resting() {
            self.served(Served::Unreachable);
            return None;
        }
        Some(pool)
    }

    /// Whether a standby failed to connect within [`REST`].
    pub fn resting(&self) -> bool {
        self.failed_at
            .lock()
            .unwrap()
            .is_some_and(|at| at.elapsed() < REST)
    }

    /// No standby could be reached: none is tried for [`REST`].
    pub fn unreachable(&self) {
        *self.failed_at.lock().unwrap() = Some(Instant::now());
    }

    /// A read served, and why there.
    pub fn served(&self, served: Served) {
        self.metrics.read_served(served.labels());
    }

    /// Whether `error`, met on a standby, sends the read to the primary
    /// (counted then): all but a refused input (400) and a rate limit (429),
    /// which the primary would answer the same.
    pub fn falls_back(&self, error: &ApiError) -> bool {
        let back = !matches!(
            error.status,
            StatusCode::BAD_REQUEST | StatusCode::TOO_MANY_REQUESTS
        );
        if back {
            tracing::info!(code = error.code, message = %error.message,
                           "a replica failed a read: the primary answers it");
            self.served(Served::ReplicaFailed);
        }
        back
    }
}

/// The accounts' last writes: WAL positions, and the floor of those forgotten.
#[derive(Default)]
struct Written {
    accounts: HashMap<String, (u64, Instant)>,
    floor: u64,
}

impl Written {
    fn wrote(&mut self, account: &str, lsn: u64, now: Instant) {
        if !self.accounts.contains_key(account) && self.accounts.len() >= ACCOUNTS {
            self.forget_oldest(now);
        }
        let entry = self.accounts.entry(account.to_owned()).or_insert((0, now));
        *entry = (entry.0.max(lsn), now);
    }

    fn needs(&mut self, account: &str, now: Instant) -> u64 {
        let kept = match self.accounts.get(account) {
            Some(&(lsn, at)) if now.duration_since(at) >= KEPT_FOR => {
                self.accounts.remove(account);
                self.forgot(lsn);
                0
            }
            Some(&(lsn, _)) => lsn,
            None => 0,
        };
        kept.max(self.floor)
    }

    /// Makes room: forgets every account kept past [`KEPT_FOR`], or else the
    /// one that wrote longest ago.
    fn forget_oldest(&mut self, now: Instant) {
        let mut forgotten = Vec::new();
        self.accounts.retain(|_, &mut (lsn, at)| {
            let keep = now.duration_since(at) < KEPT_FOR;
            if !keep {
                forgotten.push(lsn);
            }
            keep
        });
        if forgotten.is_empty() {
            if let Some(oldest) = self
                .accounts
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(account, _)| account.clone())
            {
                forgotten.extend(self.accounts.remove(&oldest).map(|(lsn, _)| lsn));
            }
        }
        for lsn in forgotten {
            self.forgot(lsn);
        }
    }

    /// A position forgotten raises the floor; one unknown (the primary
    /// could not say) does not, or every read would go to the primary.
    fn forgot(&mut self, lsn: u64) {
        if lsn != u64::MAX {
            self.floor = self.floor.max(lsn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_needs_its_last_write_and_others_nothing() {
        let mut w = Written::default();
        let now = Instant::now();
        assert_eq!(w.needs("a", now), 0);
        w.wrote("a", 100, now);
        w.wrote("a", 90, now);
        assert_eq!(w.needs("a", now), 100, "the highest position");
        assert_eq!(w.needs("b", now), 0);
    }

    #[test]
    fn a_forgotten_account_leaves_its_position_in_the_floor() {
        let mut w = Written::default();
        let now = Instant::now();
        w.wrote("a", 100, now);
        let later = now + KEPT_FOR;
        assert_eq!(
            w.needs("a", later),
            100,
            "forgotten, but the floor holds it"
        );
        assert!(w.accounts.is_empty());
        assert_eq!(w.needs("b", later), 100);
        // Full: the account that wrote longest ago makes room.
        let mut w = Written::default();
        for i in 0..ACCOUNTS {
            w.wrote(
                &format!("acc{i}"),
                i as u64 + 1,
                now + Duration::from_micros(i as u64),
            );
        }
        w.wrote("new", 1_000_000, now + Duration::from_secs(1));
        assert_eq!(w.accounts.len(), ACCOUNTS);
        assert!(!w.accounts.contains_key("acc0"));
        assert_eq!(w.floor, 1);
        assert_eq!(w.needs("acc1", now), 2);
    }

    #[test]
    fn an_unknown_position_keeps_the_account_on_the_primary_only() {
        let mut w = Written::default();
        let now = Instant::now();
        w.wrote("a", u64::MAX, now);
        assert_eq!(w.needs("a", now), u64::MAX);
        assert_eq!(w.needs("a", now + KEPT_FOR), 0);
        assert_eq!(w.floor, 0);
    }
}
