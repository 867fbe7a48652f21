//! The application state every handler receives. Its own module so that the
//! router (`app`) and the handlers both depend on it and not on each other.

use std::sync::Arc;
use std::time::{Duration, Instant};

use deadpool_postgres::{Object, Pool};
use ipnet::IpNet;

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
}

impl AppState {
    /// A pooled connection, or 503 when the database cannot be reached. The
    /// time spent waiting for it is measured: a busy pool shows there first.
    pub async fn db(&self) -> Result<Object, ApiError> {
        let start = Instant::now();
        let connection = self.pool.get().await;
        self.metrics.pool_waited(start.elapsed());
        Ok(connection?)
    }
}
