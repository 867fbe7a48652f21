//! Search queries embedded together: the queries of the searches in flight go
//! to the model in one call. One short query alone costs about 2.7 ms of a
//! core; sixteen in one call about 1.3 ms each (README, vector database
//! figures), because on a handful of tokens the model's matrix products run
//! far below a core's speed. A search's embedding is most of its cost, so
//! under load this is most of the throughput.
//!
//! No timer: a batch is whatever queued while the previous call ran, so a
//! lone search waits for nobody and batches grow with the load. With several
//! embedders (one per core by default) each takes an equal share of the
//! queue, so their batches run side by side at about one size. The calls
//! run on connections of their own, never the requests' pool: a request may
//! wait for its embedding while holding its pooled connection (a client's
//! first search, whose credentials have not passed a moment ago: see
//! `vectordb::prepare_search`), so sharing that pool could leave the
//! batch with no connection to run on.
//!
//! One text the database refuses must not fail the searches batched with it:
//! a failed call is retried one text at a time, and each search gets its own
//! answer.

use std::future::Future;
use std::sync::Arc;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot, Mutex};

use crate::error::ApiError;
use crate::metrics::Metrics;

/// Texts `--query-batch` allows in one model call by default: past this the
/// model gains nothing per text (it pads every text to the longest).
pub const DEFAULT_BATCH: usize = 32;

/// Searches that may wait for a batch before a new one waits to queue.
const QUEUE: usize = 4096;

type Embedding = Arc<[f32]>;

/// Something that embeds texts in one call, in order: the database through a
/// pool ([`Pool`]); the tests give their own.
pub trait EmbedTexts: Send + Sync + 'static {
    fn embed(
        &self,
        texts: &[String],
    ) -> impl Future<Output = Result<Vec<Vec<f32>>, ApiError>> + Send;
}

impl EmbedTexts for Pool {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ApiError> {
        let db = self.get().await?;
        let statement = db
            .prepare_cached(
                "SELECT e FROM vigil.embed($1::text[]) WITH ORDINALITY AS t(e, n) ORDER BY n",
            )
            .await?;
        let rows = db.query(&statement, &[&texts]).await?;
        rows.iter()
            .map(|row| Ok(row.try_get::<_, Vec<f32>>(0)?))
            .collect()
    }
}

/// Loads the model in each of the pool's `connections` now (about 200 ms
/// each), not during the first searches: holds them all at once so each is a
/// connection of its own.
pub async fn warm_up(pool: &Pool, connections: usize) -> Result<(), ApiError> {
    let mut held = Vec::with_capacity(connections);
    for _ in 0..connections {
        held.push(pool.get().await?);
    }
    for db in &held {
        db.query_one("SELECT vigil.embed('warm up')", &[]).await?;
    }
    Ok(())
}

/// A search waiting for its query's embedding.
struct Job {
    text: String,
    reply: oneshot::Sender<Result<Embedding, ApiError>>,
}

/// The queue of queries to embed, served by `embedders` tasks, each running
/// one batch at a time.
pub struct QueryBatcher {
    queue: mpsc::Sender<Job>,
}

impl QueryBatcher {
    /// Starts the tasks; `None` when `max_batch` is 0 (each search embeds
    /// its own query).
    pub fn start<E: EmbedTexts>(
        embedder: E,
        max_batch: usize,
        embedders: usize,
        metrics: Arc<Metrics>,
    ) -> Option<QueryBatcher> {
        if max_batch == 0 {
            return None;
        }
        let (queue, jobs) = mpsc::channel(QUEUE);
        let jobs = Arc::new(Mutex::new(jobs));
        let embedder = Arc::new(embedder);
        let embedders = embedders.max(1);
        for _ in 0..embedders {
            tokio::spawn(serve(
                Arc::clone(&embedder),
                Arc::clone(&jobs),
                Share {
                    max_batch,
                    embedders,
                },
                Arc::clone(&metrics),
            ));
        }
        Some(QueryBatcher { queue })
    }

    /// The embedding of `text`, computed in the next batch.
    pub async fn embed(&self, text: &str) -> Result<Embedding, ApiError> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            text: text.to_owned(),
            reply,
        };
        let stopped = || ApiError::unavailable("the query embedder has stopped");
        self.queue.send(job).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// How many of the queued jobs one embedder takes.
#[derive(Clone, Copy)]
struct Share {
    max_batch: usize,
    embedders: usize,
}

impl Share {
    /// Its share of `queued` jobs: an equal part for each embedder (at
    /// least one job, at most `max_batch`). The embedders then run batches of
    /// about one size side by side, each on a core, rather than one taking
    /// the whole queue while another finds it empty: a batch's searches all
    /// wait for its slowest text, so the largest batch sets the latency.
    fn of(self, queued: usize) -> usize {
        queued.div_ceil(self.embedders).clamp(1, self.max_batch)
    }
}

/// One embedder task: takes its share of the jobs queued and answers them
/// with one call, until the batcher is dropped.
async fn serve<E: EmbedTexts>(
    embedder: Arc<E>,
    jobs: Arc<Mutex<mpsc::Receiver<Job>>>,
    share: Share,
    metrics: Arc<Metrics>,
) {
    loop {
        let batch = {
            let mut jobs = jobs.lock().await;
            let Some(first) = jobs.recv().await else {
                return;
            };
            let take = share.of(1 + jobs.len());
            let mut batch = vec![first];
            while batch.len() < take {
                match jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            batch
        };
        answer(embedder.as_ref(), batch, &metrics).await;
    }
}

/// Embeds a batch's distinct texts in one call and answers each job; when the
/// call fails and the batch had more than one text, each job is tried alone.
async fn answer<E: EmbedTexts>(embedder: &E, batch: Vec<Job>, metrics: &Metrics) {
    let mut texts: Vec<String> = Vec::new();
    let mut slots = Vec::with_capacity(batch.len());
    for job in &batch {
        let slot = match texts.iter().position(|t| *t == job.text) {
            Some(slot) => slot,
            None => {
                texts.push(job.text.clone());
                texts.len() - 1
            }
        };
        slots.push(slot);
    }
    metrics.query_batch_embedded();
    match embed_all(embedder, &texts).await {
        Ok(embeddings) => {
            for (job, slot) in batch.into_iter().zip(slots) {
                let _ = job.reply.send(Ok(Arc::clone(&embeddings[slot])));
            }
        }
        Err(e) if texts.len() == 1 => {
            for job in batch {
                let _ = job.reply.send(Err(e.clone()));
            }
        }
        Err(_) => {
            for job in batch {
                metrics.query_batch_embedded();
                let alone = embed_all(embedder, std::slice::from_ref(&job.text)).await;
                let _ = job.reply.send(alone.map(|mut e| e.swap_remove(0)));
            }
        }
    }
}

/// One embedding per text, or an error.
async fn embed_all<E: EmbedTexts>(
    embedder: &E,
    texts: &[String],
) -> Result<Vec<Embedding>, ApiError> {
    let embeddings = embedder.embed(texts).await?;
    if embeddings.len() != texts.len() {
        return Err(ApiError::internal(&format!(
            "{} texts to embed, the database returned {} embeddings",
            texts.len(),
            embeddings.len()
        )));
    }
    Ok(embeddings.into_iter().map(Embedding::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;

    /// Embeds a text as `[its length]`, refuses any text holding "bad", and
    /// records the texts of every call.
    #[derive(Clone, Default)]
    struct Lengths {
        calls: Arc<StdMutex<Vec<Vec<String>>>>,
    }

    impl EmbedTexts for Lengths {
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ApiError> {
            self.calls.lock().unwrap().push(texts.to_vec());
            if texts.iter().any(|t| t.contains("bad")) {
                return Err(ApiError::invalid("query", "bad text"));
            }
            Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
        }
    }

    /// Queues `texts` before any embedder runs, then lets one run and
    /// collects the answers in order.
    async fn batch_of(
        embedder: &Lengths,
        texts: &[&str],
        max_batch: usize,
    ) -> Vec<Result<Embedding, ApiError>> {
        let (queue, jobs) = mpsc::channel(QUEUE);
        let mut answers = Vec::new();
        for text in texts {
            let (reply, answer) = oneshot::channel();
            queue
                .send(Job {
                    text: (*text).to_owned(),
                    reply,
                })
                .await
                .unwrap();
            answers.push(answer);
        }
        drop(queue);
        let metrics = Arc::new(Metrics::new());
        serve(
            Arc::new(embedder.clone()),
            Arc::new(Mutex::new(jobs)),
            Share {
                max_batch,
                embedders: 1,
            },
            metrics,
        )
        .await;
        let mut out = Vec::new();
        for answer in answers {
            out.push(answer.await.unwrap());
        }
        out
    }

    fn lengths(answers: &[Result<Embedding, ApiError>]) -> Vec<Option<f32>> {
        answers
            .iter()
            .map(|a| a.as_ref().ok().map(|e| e[0]))
            .collect()
    }

    #[tokio::test]
    async fn queued_queries_share_calls_of_at_most_max_batch_distinct_texts() {
        let embedder = Lengths::default();
        let answers = batch_of(&embedder, &["a", "bb", "a", "ccc", "dddd"], 3).await;
        assert_eq!(
            lengths(&answers),
            [Some(1.0), Some(2.0), Some(1.0), Some(3.0), Some(4.0)]
        );
        let calls = embedder.calls.lock().unwrap().clone();
        assert_eq!(calls, [vec!["a", "bb"], vec!["ccc", "dddd"]]);
    }

    #[test]
    fn embedders_take_equal_shares_of_the_queue() {
        let two = Share {
            max_batch: 32,
            embedders: 2,
        };
        assert_eq!(
            [1, 2, 3, 16, 17, 100].map(|queued| two.of(queued)),
            [1, 1, 2, 8, 9, 32]
        );
        let one = Share {
            max_batch: 4,
            embedders: 1,
        };
        assert_eq!([1, 3, 9].map(|queued| one.of(queued)), [1, 3, 4]);
    }

    #[tokio::test]
    async fn a_refused_text_fails_only_its_own_searches() {
        let embedder = Lengths::default();
        let answers = batch_of(&embedder, &["a", "bad", "bb", "bad"], 8).await;
        assert_eq!(lengths(&answers), [Some(1.0), None, Some(2.0), None]);
        let Err(e) = &answers[1] else { unreachable!() };
        assert_eq!(e, &ApiError::invalid("query", "bad text"));
        // The batch, then each search alone.
        assert_eq!(embedder.calls.lock().unwrap().len(), 5);
    }

    #[tokio::test]
    async fn a_batch_of_one_text_is_not_retried() {
        let embedder = Lengths::default();
        let answers = batch_of(&embedder, &["bad", "bad"], 8).await;
        assert!(answers.iter().all(Result::is_err));
        assert_eq!(embedder.calls.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_started_batcher_answers_and_zero_turns_it_off() {
        let metrics = Arc::new(Metrics::new());
        assert!(QueryBatcher::start(Lengths::default(), 0, 1, Arc::clone(&metrics)).is_none());
        let batcher = QueryBatcher::start(Lengths::default(), 4, 2, metrics).unwrap();
        let (a, b) = tokio::join!(batcher.embed("xyz"), batcher.embed("bad"));
        assert_eq!(a.unwrap()[0], 3.0);
        assert!(b.is_err());
    }
}
