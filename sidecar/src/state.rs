//! The application state every handler receives. Its own module so that the
//! router (`app`) and the handlers both depend on it and not on each other:
//! it imports the parts it holds, never a handler's module. A handler that
//! needs one part alone takes it as a substate ([`FromRef`]), as
//! `metrics::scrape` and the searches do, so their modules need not know
//! the state.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::FromRef;
use deadpool_postgres::Pool;
use ipnet::IpNet;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::abandon::Conn;
use crate::auth::Limits;
use crate::error::ApiError;
use crate::metrics::scrape::ReadPool;
use crate::metrics::Metrics;
use crate::query_vectors::QueryVectors;
use crate::reads::Reads;

#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    /// Where the reads run: a hot standby that has replayed the account's
    /// writes, else the primary (`--read-database-url`).
    pub reads: Arc<Reads>,
    pub limits: Arc<Limits>,
    pub trusted_proxies: Arc<[IpNet]>,
    pub metrics: Arc<Metrics>,
    /// How long `POST /storeEmbeddings` and its statement may take (a batch
    /// embeds up to 1,000 records); every other request has the pool's
    /// statement timeout.
    pub batch_timeout: Duration,
    /// The searches' query embeddings: the cache and the batch.
    pub query_vectors: Arc<QueryVectors>,
    /// Turns to store records, half the pool: storing runs the model in the
    /// request's connection (a batch for up to minutes), so stores alone
    /// must never hold every connection and leave searches none.
    pub store_turns: Arc<Semaphore>,
    /// Turns to assess an identity image: as many at once as the memory
    /// budget (`--identity-memory-mb`) holds of the most one assessment may
    /// take in its backend (`identity::turns`).
    pub identity_turns: Arc<Semaphore>,
    /// KiB that long bodies may hold at once while their credentials, which
    /// come after their first 64 KiB, are not checked yet
    /// (`--unauthenticated-body-mb`; `extract::AccountJson`).
    pub unauthenticated_body: Arc<Semaphore>,
}

impl AppState {
    /// The semaphore of [`AppState::store_turns`] for a pool of `pool_size`.
    pub fn store_turns_for(pool_size: usize) -> Arc<Semaphore> {
        Arc::new(Semaphore::new((pool_size / 2).max(1)))
    }

    /// The semaphore of [`AppState::unauthenticated_body`] for `mb` MiB.
    pub fn unauthenticated_body_for(mb: usize) -> Arc<Semaphore> {
        Arc::new(Semaphore::new(
            mb.saturating_mul(1024).min(Semaphore::MAX_PERMITS),
        ))
    }

    /// Waits for a turn to store records (see [`AppState::store_turns`]).
    pub async fn store_turn(&self) -> Result<SemaphorePermit<'_>, ApiError> {
        turn(&self.store_turns).await
    }

    /// Waits for a turn to assess an identity image (see [`AppState::identity_turns`]).
    pub async fn identity_turn(&self) -> Result<SemaphorePermit<'_>, ApiError> {
        turn(&self.identity_turns).await
    }

    /// A pooled connection, or 503 when the database cannot be reached. The
    /// time spent waiting for it is measured: a busy pool shows there first.
    /// Discarded, not reused, if the request is abandoned ([`Conn`]).
    pub async fn db(&self) -> Result<Conn, ApiError> {
        let start = Instant::now();
        let connection = self.pool.get().await;
        self.metrics.pool_waited(start.elapsed());
        Ok(Conn::new(connection?))
    }
}

impl FromRef<AppState> for Pool {
    fn from_ref(state: &AppState) -> Pool {
        state.pool.clone()
    }
}

impl FromRef<AppState> for Arc<Metrics> {
    fn from_ref(state: &AppState) -> Arc<Metrics> {
        Arc::clone(&state.metrics)
    }
}

impl FromRef<AppState> for ReadPool {
    fn from_ref(state: &AppState) -> ReadPool {
        ReadPool(state.reads.replica_pool().cloned())
    }
}

impl FromRef<AppState> for Arc<QueryVectors> {
    fn from_ref(state: &AppState) -> Arc<QueryVectors> {
        Arc::clone(&state.query_vectors)
    }
}

async fn turn(turns: &Semaphore) -> Result<SemaphorePermit<'_>, ApiError> {
    turns
        .acquire()
        .await
        .map_err(|_| ApiError::unavailable("the server is shutting down"))
}
