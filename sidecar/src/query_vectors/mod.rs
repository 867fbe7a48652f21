//! Where a search's query vector comes from, decided here alone: kept in
//! the sidecar's cache ([`cache`]); else computed in the next
//! batch of queries on the embedders' connections ([`batch`]);
//! else, batching off, in the search's own transaction while the cache is on
//! (to keep it); else nowhere: the statement gets NULL and embeds the query
//! itself. The model lives in the database, so embedding is a statement:
//! every statement that embeds a query is here.

pub mod batch;
pub mod cache;

use std::sync::Arc;
use std::time::Instant;

use deadpool_postgres::{Object, Pool, Transaction};
use tokio_postgres::Row;

use crate::config::ServeArgs;
use crate::db::on_replica;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::reads::Reads;
use batch::{EmbedTexts, Embedding, QueryBatcher, Then};
use cache::QueryCache;

/// The query embeddings of the sidecar: the cache and the batch.
pub struct QueryVectors {
    cache: QueryCache,
    /// `None` when queries are not batched (`--query-batch 0`).
    batcher: Option<QueryBatcher<Embedders>>,
    metrics: Arc<Metrics>,
}

/// The batch of [`QueryVectors`], when queries are batched.
pub struct Batch<'a> {
    vectors: &'a QueryVectors,
    batcher: &'a QueryBatcher<Embedders>,
}

impl QueryVectors {
    /// Batches queries on the pool `embedders` as `args` say, loading the
    /// model in its connections in the background, and keeps
    /// `--query-cache-entries` of them.
    pub fn start(args: &ServeArgs, embedders: Embedders, metrics: Arc<Metrics>) -> QueryVectors {
        let connections = args.query_embedders();
        // The model is loaded where the embedders will run: on the standbys
        // when they are set.
        let (warmed, replica) = match &embedders.replica {
            Some(replica) => (replica.clone(), true),
            None => (embedders.primary.clone(), false),
        };
        let batcher = QueryBatcher::start(
            embedders,
            args.query_batch,
            connections,
            Arc::clone(&metrics),
        );
        if batcher.is_some() {
            tokio::spawn(async move {
                let warm = warm_up(&warmed, connections);
                let warmed = if replica {
                    on_replica(warm).await
                } else {
                    warm.await
                };
                if let Err(e) = warmed {
                    tracing::warn!(
                        error = e.message,
                        "the query embedders could not load the model yet"
                    );
                }
            });
        }
        QueryVectors::new(args.query_cache_entries, batcher, metrics)
    }

    pub fn new(
        cache_entries: usize,
        batcher: Option<QueryBatcher<Embedders>>,
        metrics: Arc<Metrics>,
    ) -> QueryVectors {
        QueryVectors {
            cache: QueryCache::new(cache_entries),
            batcher,
            metrics,
        }
    }

    /// The batch, when queries are embedded in batches.
    pub fn batch(&self) -> Option<Batch<'_>> {
        Some(Batch {
            vectors: self,
            batcher: self.batcher.as_ref()?,
        })
    }

    /// The embedding of `query` for a search whose account is entered in
    /// `tx`: the one kept, else computed in the next batch, else in `tx`
    /// when the cache is on, and kept. `None` when neither caches nor
    /// batches: the search's statement embeds the query itself.
    pub async fn for_transaction(
        &self,
        tx: &Transaction<'_>,
        account: &str,
        query: &str,
    ) -> Result<Option<Embedding>, ApiError> {
        if let Some(kept) = self.kept(account, query) {
            return Ok(Some(kept));
        }
        let embedding = match self.batch() {
            // The batch counts the wait itself.
            Some(batch) => return batch.embed(account, query).await.map(Some),
            None if self.cache.enabled() => {
                let started = Instant::now();
                let statement = tx.prepare_cached("SELECT vigil.embed($1)").await?;
                let embedding: Vec<f32> = tx.query_one(&statement, &[&query]).await?.try_get(0)?;
                self.metrics.query_embedding_waited(started.elapsed());
                Embedding::from(embedding)
            }
            None => return Ok(None),
        };
        self.keep(account, query, &embedding);
        Ok(Some(embedding))
    }

    /// The embedding kept for `account`'s `query`, if any.
    fn kept(&self, account: &str, query: &str) -> Option<Embedding> {
        let kept = self.cache.get(account, query)?;
        self.metrics.query_cache(true);
        Some(kept)
    }

    /// Keeps `query`'s new embedding, when the cache is on.
    fn keep(&self, account: &str, query: &str, embedding: &Embedding) {
        if self.cache.enabled() {
            self.metrics.query_cache(false);
            self.cache.put(account, query, Arc::clone(embedding));
        }
    }
}

impl Batch<'_> {
    /// The embedding kept for `account`'s `query`, if any.
    pub fn kept(&self, account: &str, query: &str) -> Option<Embedding> {
        self.vectors.kept(account, query)
    }

    /// The embedding of `account`'s `query`, computed in the next batch, and kept.
    pub async fn embed(&self, account: &str, query: &str) -> Result<Embedding, ApiError> {
        let embedding = self.batcher.embed(query).await?;
        self.vectors.keep(account, query, &embedding);
        Ok(embedding)
    }

    /// Computes the embedding of `query` in the next batch, and keeps it;
    /// the embedder runs `then` with it on its own connection right after,
    /// and these are its rows.
    pub async fn embed_then(
        &self,
        account: &str,
        query: &str,
        then: Then<EmbedderConnection>,
    ) -> Result<Vec<Row>, ApiError> {
        let (embedding, rows) = self.batcher.search(query, then).await?;
        self.vectors.keep(account, query, &embedding);
        Ok(rows)
    }
}

/// The query embedders' pools: the standbys' when they are set
/// (`vigil.embed` writes nothing), else, and while no standby answers, the
/// primary's.
pub struct Embedders {
    pub primary: Pool,
    pub replica: Option<Pool>,
    pub reads: Arc<Reads>,
}

/// An embedder's connection, and whether it is a standby's (its work then
/// runs inside `db::on_replica`).
pub struct EmbedderConnection {
    pub client: Object,
    pub replica: bool,
}

/// The embedders' connections embed a batch's texts in one call.
impl EmbedTexts for Embedders {
    type Connection = EmbedderConnection;

    async fn connect(&self) -> Result<Self::Connection, ApiError> {
        if let Some(replica) = self.replica.as_ref().filter(|_| !self.reads.resting()) {
            match on_replica(replica.get()).await {
                Ok(client) => {
                    return Ok(EmbedderConnection {
                        client,
                        replica: true,
                    })
                }
                Err(e) => {
                    tracing::info!(error = %e, "no replica answers: embedding on the primary");
                    self.reads.unreachable();
                }
            }
        }
        Ok(EmbedderConnection {
            client: self.primary.get().await?,
            replica: false,
        })
    }

    async fn embed(db: &Self::Connection, texts: &[String]) -> Result<Vec<Vec<f32>>, ApiError> {
        let embed = async {
            let statement = db
                .client
                .prepare_cached(
                    "SELECT e FROM vigil.embed($1::text[]) WITH ORDINALITY AS t(e, n) ORDER BY n",
                )
                .await?;
            let rows = db.client.query(&statement, &[&texts]).await?;
            rows.iter()
                .map(|row| Ok(row.try_get::<_, Vec<f32>>(0)?))
                .collect()
        };
        if db.replica {
            on_replica(embed).await
        } else {
            embed.await
        }
    }
}

/// Loads the model in each of the pool's `connections` now (about 200 ms
/// each), not during the first searches: holds them all at once so each is a
/// connection of its own.
async fn warm_up(pool: &Pool, connections: usize) -> Result<(), ApiError> {
    let mut held = Vec::with_capacity(connections);
    for _ in 0..connections {
        held.push(pool.get().await?);
    }
    for db in &held {
        db.query_one("SELECT vigil.embed('warm up')", &[]).await?;
    }
    Ok(())
}
