//! The application state every handler receives. Its own module so that the
//! router (`app`) and the handlers both depend on it and not on each other.

use std::sync::Arc;
use std::time::{Duration, Instant};

use deadpool_postgres::{Object, Pool};
use ipnet::IpNet;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::auth::Limits;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::vectordb::query_batch::QueryBatcher;
use crate::vectordb::query_cache::QueryCache;

#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub limits: Arc<Limits>,
    pub trusted_proxies: Arc<[IpNet]>,
    pub metrics: Arc<Metrics>,
    /// How long `POST /storeEmbeddings` and its statement may take (a batch
    /// embeds up to 1,000 records); every other request has the pool's
    /// statement timeout.
    pub batch_timeout: Duration,
    pub query_cache: Arc<QueryCache>,
    /// `None` when search queries are not batched (`--query-batch 0`).
    pub query_batcher: Option<Arc<QueryBatcher>>,
    /// Turns to store records, half the pool: storing runs the model in the
    /// request's connection (a batch for up to minutes), so stores alone
    /// must never hold every connection and leave searches none.
    pub store_turns: Arc<Semaphore>,
}

impl AppState {
    /// The semaphore of [`AppState::store_turns`] for a pool of `pool_size`.
    pub fn store_turns_for(pool_size: usize) -> Arc<Semaphore> {
        Arc::new(Semaphore::new((pool_size / 2).max(1)))
    }

    /// Waits for a turn to store records (see [`AppState::store_turns`]).
    pub async fn store_turn(&self) -> Result<SemaphorePermit<'_>, ApiError> {
        self.store_turns
            .acquire()
            .await
            .map_err(|_| ApiError::unavailable("the server is shutting down"))
    }

    /// A pooled connection, or 503 when the database cannot be reached. The
    /// time spent waiting for it is measured: a busy pool shows there first.
    pub async fn db(&self) -> Result<Object, ApiError> {
        let start = Instant::now();
        let connection = self.pool.get().await;
        self.metrics.pool_waited(start.elapsed());
        Ok(connection?)
    }
}
