//! Search queries embedded together: the queries of the searches in flight go
//! to the model in one call. One short query alone costs about 2.7 ms of a
//! core; sixteen in one call about 1.3 ms each (docs/performance.md, vector database
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
//! [`vectordb::search`](crate::vectordb::search)), so sharing that pool could leave the batch
//! with no connection to run on.
//!
//! A search admitted early hands its statement to the batch too
//! ([`QueryBatcher::search`]): right after the model call the embedder sends
//! every such statement of the batch at once on its own connection, each
//! with its account check and in its own transaction, so the batch's
//! searches run one after another in that backend. They take no pooled
//! connection, no round trip separates them, and fewer backends compete for
//! the cores (docs/performance.md, "Vector database": "Searches run by the embedders").
//!
//! One text the database refuses must not fail the searches batched with it:
//! a failed call is retried one text at a time, and each search gets its own
//! answer.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use futures_util::future::{join_all, BoxFuture};
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio_postgres::Row;

use crate::error::ApiError;
use crate::metrics::Metrics;

/// Searches that may wait for a batch before a new one waits to queue.
const QUEUE: usize = 4096;

pub type Embedding = Arc<[f32]>;

/// Something that embeds texts in one call, in order, on a connection of its
/// own: the database through a pool ([`QueryVectors`](super::QueryVectors)); the tests
/// give their own.
pub trait EmbedTexts: Send + Sync + 'static {
    type Connection: Send + Sync + 'static;

    fn connect(&self) -> impl Future<Output = Result<Self::Connection, ApiError>> + Send;

    fn embed(
        connection: &Self::Connection,
        texts: &[String],
    ) -> impl Future<Output = Result<Vec<Vec<f32>>, ApiError>> + Send;
}

/// A search's statement, run on the embedder's connection once its query is
/// embedded (given the embedding), in the same round trip as the rest of the
/// batch's: [`vectordb::search`](crate::vectordb::search) makes it for a search admitted early. Each one sends its statements
/// together, in one go, so the batch's searches follow one another on the
/// connection and none runs inside another's transaction.
pub type Then<C> =
    Box<dyn for<'c> FnOnce(&'c C, Embedding) -> BoxFuture<'c, Result<Vec<Row>, ApiError>> + Send>;

/// A search waiting for its query's embedding, and what it runs then, if anything.
struct Job<C> {
    text: String,
    queued: Instant,
    then: Option<Then<C>>,
    reply: oneshot::Sender<Result<Answer, ApiError>>,
}

/// A job's embedding, and its statement's rows when it had one.
struct Answer {
    embedding: Embedding,
    rows: Vec<Row>,
}

/// The queue of queries to embed, served by `embedders` tasks, each running
/// one batch at a time.
pub struct QueryBatcher<E: EmbedTexts> {
    queue: mpsc::Sender<Job<E::Connection>>,
}

impl<E: EmbedTexts> QueryBatcher<E> {
    /// Starts the tasks; `None` when `max_batch` is 0 (each search embeds
    /// its own query).
    pub fn start(
        embedder: E,
        max_batch: usize,
        embedders: usize,
        metrics: Arc<Metrics>,
    ) -> Option<QueryBatcher<E>> {
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
        Ok(self.queue_job(text, None).await?.embedding)
    }

    /// The embedding of `text`, computed in the next batch, and the rows of
    /// `then`, run with it on the same connection right after.
    pub async fn search(
        &self,
        text: &str,
        then: Then<E::Connection>,
    ) -> Result<(Embedding, Vec<Row>), ApiError> {
        let answer = self.queue_job(text, Some(then)).await?;
        Ok((answer.embedding, answer.rows))
    }

    async fn queue_job(
        &self,
        text: &str,
        then: Option<Then<E::Connection>>,
    ) -> Result<Answer, ApiError> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            text: text.to_owned(),
            queued: Instant::now(),
            then,
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
    jobs: Arc<Mutex<mpsc::Receiver<Job<E::Connection>>>>,
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
        match embedder.connect().await {
            Ok(connection) => answer::<E>(&connection, batch, &metrics).await,
            Err(e) => {
                for job in batch {
                    let _ = job.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// Embeds a batch's distinct texts in one call, then runs the jobs'
/// statements on the same connection, all sent at once, and answers each
/// job; when the call fails and the batch had more than one text, each job
/// is tried alone.
async fn answer<E: EmbedTexts>(
    connection: &E::Connection,
    batch: Vec<Job<E::Connection>>,
    metrics: &Metrics,
) {
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
    match embed_all::<E>(connection, &texts).await {
        Ok(embeddings) => {
            let embedded: Vec<_> = batch
                .into_iter()
                .zip(slots)
                .map(|(job, slot)| (job, Arc::clone(&embeddings[slot])))
                .collect();
            finish(connection, embedded, metrics).await;
        }
        Err(e) if texts.len() == 1 => {
            for job in batch {
                let _ = job.reply.send(Err(e.clone()));
            }
        }
        Err(_) => {
            for job in batch {
                metrics.query_batch_embedded();
                match embed_all::<E>(connection, std::slice::from_ref(&job.text)).await {
                    Ok(mut alone) => {
                        let embedding = alone.swap_remove(0);
                        finish(connection, vec![(job, embedding)], metrics).await;
                    }
                    Err(e) => {
                        let _ = job.reply.send(Err(e));
                    }
                }
            }
        }
    }
}

/// Answers embedded jobs: those with a statement once it has run (all of
/// them sent together, in the batch's order), the others at once.
async fn finish<C>(connection: &C, embedded: Vec<(Job<C>, Embedding)>, metrics: &Metrics) {
    let mut running = Vec::new();
    let mut replies = Vec::new();
    for (job, embedding) in embedded {
        metrics.query_embedding_waited(job.queued.elapsed());
        match job.then {
            None => {
                let _ = job.reply.send(Ok(Answer {
                    embedding,
                    rows: Vec::new(),
                }));
            }
            Some(then) => {
                running.push(then(connection, Arc::clone(&embedding)));
                replies.push((job.reply, embedding));
            }
        }
    }
    for ((reply, embedding), rows) in replies.into_iter().zip(join_all(running).await) {
        let _ = reply.send(rows.map(|rows| Answer { embedding, rows }));
    }
}

/// One embedding per text, or an error.
async fn embed_all<E: EmbedTexts>(
    connection: &E::Connection,
    texts: &[String],
) -> Result<Vec<Embedding>, ApiError> {
    let embeddings = E::embed(connection, texts).await?;
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
        type Connection = Lengths;

        async fn connect(&self) -> Result<Lengths, ApiError> {
            Ok(self.clone())
        }

        async fn embed(this: &Lengths, texts: &[String]) -> Result<Vec<Vec<f32>>, ApiError> {
            this.calls.lock().unwrap().push(texts.to_vec());
            if texts.iter().any(|t| t.contains("bad")) {
                return Err(ApiError::invalid("query", "bad text"));
            }
            Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
        }
    }

    /// Queues `texts` before any embedder runs, then lets one run and
    /// collects the embeddings in order.
    async fn batch_of(
        embedder: &Lengths,
        texts: &[&str],
        max_batch: usize,
    ) -> Vec<Result<Embedding, ApiError>> {
        let jobs = texts.iter().map(|text| (text.to_string(), None)).collect();
        answers_of(embedder, jobs, max_batch)
            .await
            .into_iter()
            .map(|a| a.map(|a| a.embedding))
            .collect()
    }

    /// Queues `jobs` (a text and what runs with its embedding) before any
    /// embedder runs, then lets one run and collects the answers in order.
    async fn answers_of(
        embedder: &Lengths,
        jobs: Vec<(String, Option<Then<Lengths>>)>,
        max_batch: usize,
    ) -> Vec<Result<Answer, ApiError>> {
        let (queue, queued) = mpsc::channel(QUEUE);
        let mut answers = Vec::new();
        for (text, then) in jobs {
            let (reply, answer) = oneshot::channel();
            let job = Job {
                text,
                queued: Instant::now(),
                then,
                reply,
            };
            queue.send(job).await.unwrap();
            answers.push(answer);
        }
        drop(queue);
        serve(
            Arc::new(embedder.clone()),
            Arc::new(Mutex::new(queued)),
            Share {
                max_batch,
                embedders: 1,
            },
            Arc::new(Metrics::new()),
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

    /// A search's statement runs on the embedder's connection with its own
    /// query's embedding, after the batch's call; one that fails fails only
    /// its own search.
    #[tokio::test]
    async fn each_search_runs_with_its_own_embedding_after_the_call() {
        let embedder = Lengths::default();
        let ran = Arc::new(StdMutex::new(Vec::new()));
        let jobs = ["a", "bbb", "cc", "bbb"]
            .into_iter()
            .map(|text| {
                let ran = Arc::clone(&ran);
                let then: Then<Lengths> = Box::new(move |connection: &Lengths, embedding| {
                    Box::pin(async move {
                        let calls = connection.calls.lock().unwrap().len();
                        ran.lock().unwrap().push((text, embedding[0], calls));
                        if text == "cc" {
                            return Err(ApiError::invalid("limit", "too many"));
                        }
                        Ok(Vec::new())
                    })
                });
                (text.to_owned(), Some(then))
            })
            .collect();
        let got: Vec<_> = answers_of(&embedder, jobs, 8)
            .await
            .into_iter()
            .map(|a| a.map(|a| a.embedding[0]))
            .collect();
        assert_eq!(got[..2], [Ok(1.0), Ok(3.0)]);
        assert_eq!(got[2], Err(ApiError::invalid("limit", "too many")));
        assert_eq!(got[3], Ok(3.0));
        // One model call, for the distinct texts, before any statement ran.
        assert_eq!(
            embedder.calls.lock().unwrap().clone(),
            [vec!["a", "bbb", "cc"]]
        );
        assert_eq!(
            ran.lock().unwrap().clone(),
            [
                ("a", 1.0, 1),
                ("bbb", 3.0, 1),
                ("cc", 2.0, 1),
                ("bbb", 3.0, 1)
            ]
        );
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
