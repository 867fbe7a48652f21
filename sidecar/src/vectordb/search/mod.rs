//! A search, from request to answer. `/queryEmbeddings` and `/hybridSearch`
//! differ only in their [`Statement`]; both go through [`run`], which puts
//! in order the steps `extract` and `auth` give (the account, its early
//! admission, its check) and the query's vector ([`crate::query_vectors`]: the
//! cache and the batch).
//!
//! When these credentials entered the account a moment ago
//! (`Account::admit_early`) and queries are batched, the request takes no
//! pooled connection: its query joins the next batch, and the embedder that
//! embeds it runs the statement right after, on its own connection, with the
//! rest of the batch's, all sent at once, each in one round trip with its
//! account check ([`Admitted`]). A batch takes every search waiting, not
//! only those holding connections, and its searches run one after another
//! in one backend, with no round trip between them and no other backend
//! competing for the cores. docs/performance.md, "Vector database", has the
//! figures ("Queries batched ... before the connection", "Searches run by
//! the embedders"). A query whose embedding is kept runs on a pooled connection, the
//! account entered in the same round trip. Otherwise, and for a query that
//! would be refused, the account is entered first: the model never runs for
//! credentials the database has not passed, and bad credentials are refused
//! before a bad query. A search for more than [`BATCHED_LIMIT`] records (a
//! hybrid search of 1,000 takes about 35 ms at 100,000 records, 25 times one
//! of 10) is embedded in the batch but runs on a pooled connection, so it
//! holds up neither its batch's other searches nor the embedder's next call.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use deadpool_postgres::Client;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::call;
use super::records::{all, ScoredRecord, SimilarRecord};
use super::requests::{
    HybridSearch, HybridSearchRequest, Search, SearchRequest, DEFAULT_LIMIT, MAX_QUERY_CHARS,
};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Account, AccountJson, Admitted};
use crate::json::{refuse_nul, required_text};
use crate::query_vectors::batch::Then;
use crate::query_vectors::{Batch, EmbedderConnection, QueryVectors};
use crate::reads::Served;
use crate::refusals::{AuthRefusals, BodyRefusals};

/// The records closest in meaning to `query`, most similar first.
#[utoipa::path(
    post,
    path = "/queryEmbeddings",
    tag = "vector database",
    request_body = SearchRequest,
    responses(
        (status = 200, description = "Most similar first", body = [SimilarRecord]),
        (status = 404, description = "not_found: no such database (`field` dbName)", body = ErrorBody),
        AuthRefusals,
        BodyRefusals,
    ),
)]
pub async fn query_embeddings(
    State(vectors): State<Arc<QueryVectors>>,
    AccountJson { mut account, body }: AccountJson<Search>,
) -> Result<Json<Vec<SimilarRecord>>, ApiError> {
    let db = account.db_name().to_owned();
    let limit = body.limit.unwrap_or(DEFAULT_LIMIT);
    let statement = Statement {
        sql: "SELECT id, title, content, metadata, vigil.epoch_ns(created_at), similarity \
              FROM vigil.query_embeddings($1, $2, $3::int, $4::real[])",
        params: vec![Box::new(db), Box::new(limit)],
    };
    let rows = run(&vectors, &mut account, body.query, limit, statement).await?;
    Ok(Json(all(&rows, SimilarRecord::from_row)?))
}

/// The best records for `query` by keywords and meaning together (rank
/// fusion of full-text and vector search), best first.
#[utoipa::path(
    post,
    path = "/hybridSearch",
    tag = "vector database",
    request_body = HybridSearchRequest,
    responses(
        (status = 200, description = "Best first", body = [ScoredRecord]),
        (status = 404, description = "not_found: no such database (`field` dbName)", body = ErrorBody),
        AuthRefusals,
        BodyRefusals,
    ),
)]
pub async fn hybrid_search(
    State(vectors): State<Arc<QueryVectors>>,
    AccountJson { mut account, body }: AccountJson<HybridSearch>,
) -> Result<Json<Vec<ScoredRecord>>, ApiError> {
    let db = account.db_name().to_owned();
    let limit = body.limit.unwrap_or(DEFAULT_LIMIT);
    // The extension checks the fusion and the weights and names the field;
    // a NUL, which cannot reach it, is refused here.
    let fusion = body.fusion.unwrap_or_else(|| "convex".to_owned());
    refuse_nul(&fusion, "fusion")?;
    let vector_weight = body.vector_weight.unwrap_or(1.0);
    let keyword_weight = body.keyword_weight.unwrap_or(1.0);
    let statement = Statement {
        sql: "SELECT id, title, content, metadata, vigil.epoch_ns(created_at), score \
              FROM vigil.hybrid_search($1, $2::int, $3, $4, $5::real, $6::real, $7::real[])",
        params: vec![
            Box::new(limit),
            Box::new(db),
            Box::new(fusion),
            Box::new(vector_weight),
            Box::new(keyword_weight),
        ],
    };
    let rows = run(&vectors, &mut account, body.query, limit, statement).await?;
    Ok(Json(all(&rows, ScoredRecord::from_row)?))
}

/// The most records a search may ask for and still run on a query
/// embedder's connection.
const BATCHED_LIMIT: i32 = 100;

/// A search's statement: `sql` takes the checked query first, then
/// `params`, then the query's embedding (NULL: the statement embeds it).
struct Statement {
    sql: &'static str,
    params: Vec<Param>,
}

/// A statement parameter owned, to be run later or elsewhere.
type Param = Box<dyn ToSql + Sync + Send>;

impl Statement {
    /// `query`, the params and `vector`, as `sql` takes them.
    fn args<'a>(
        &'a self,
        query: &'a String,
        vector: &'a Option<&'a [f32]>,
    ) -> Vec<&'a (dyn ToSql + Sync)> {
        let mut args: Vec<&(dyn ToSql + Sync)> = vec![query];
        args.extend(self.params.iter().map(|p| &**p as &(dyn ToSql + Sync)));
        args.push(vector);
        args
    }
}

/// Runs a search's `statement` for `account`, for `limit` records: admitted
/// early ([`run_admitted`]), or in the account entered first.
async fn run(
    vectors: &Arc<QueryVectors>,
    account: &mut Account,
    query: Option<String>,
    limit: i32,
    statement: Statement,
) -> Result<Vec<Row>, ApiError> {
    let query = required_text(query, "query").and_then(within_length);
    if let (Ok(query), Some(batch)) = (&query, vectors.batch()) {
        if account.admit_early()? {
            let search = AdmittedSearch {
                account: account.admitted()?,
                query: query.clone(),
                statement,
            };
            return run_admitted(batch, account, query, limit, search).await;
        }
    }
    let statement = Arc::new(statement);
    let name: Arc<str> = Arc::from(account.name());
    account
        .read(move |entered| {
            let (vectors, statement, query, name) = (
                Arc::clone(vectors),
                Arc::clone(&statement),
                query.clone(),
                Arc::clone(&name),
            );
            Box::pin(async move {
                let query = query?;
                let vector = vectors.for_transaction(&entered.tx, &name, &query).await?;
                let vector = vector.as_deref();
                call(entered, statement.sql, &statement.args(&query, &vector)).await
            })
        })
        .await
}

/// Runs a search admitted early: on the embedder's connection right after
/// its batch, or, when its query's embedding is kept or it asks for more
/// than [`BATCHED_LIMIT`] records, on the request's.
async fn run_admitted(
    batch: Batch<'_>,
    account: &mut Account,
    query: &str,
    limit: i32,
    search: AdmittedSearch,
) -> Result<Vec<Row>, ApiError> {
    let reads = Arc::clone(account.reads());
    let search = Arc::new(search);
    let name = account.name().to_owned();
    let mut kept = batch.kept(&name, query);
    if kept.is_none() && limit <= BATCHED_LIMIT {
        // On a standby's embedder only once it has replayed the account's
        // writes; else (or when the standby fails) on the primary below,
        // with the embedding the batch made.
        let need = reads.needs(account.name());
        let embedded = Arc::new(std::sync::Mutex::new(None));
        let (then_search, then_reads, then_embedded) = (
            Arc::clone(&search),
            Arc::clone(&reads),
            Arc::clone(&embedded),
        );
        let then: Then<EmbedderConnection> = Box::new(move |db, embedding| {
            Box::pin(async move {
                if !db.replica {
                    return then_search.run(&db.client, &embedding).await;
                }
                *then_embedded.lock().unwrap() = Some(Arc::clone(&embedding));
                let search = then_search.run(&db.client, &embedding);
                then_reads.if_caught_up(&db.client, need, search).await
            })
        });
        let answer = batch.embed_then(&name, query, then).await;
        // Ran on a standby's embedder, or else on the primary's (none is
        // set, or none answered), or failed before any search.
        let Some(embedding) = embedded.lock().unwrap().take() else {
            if answer.is_ok() {
                reads.served(Served::Unreachable);
            }
            return answer;
        };
        if let Some(rows) = reads.settle(answer)? {
            return Ok(rows);
        }
        let db = account.connection().await?;
        return search.run(&db, &embedding).await;
    }
    let embedding = match kept.take() {
        Some(kept) => kept,
        None => batch.embed(&name, query).await?,
    };
    let (on_standby, vector) = (&search, &embedding);
    let standby = reads.on_standby(account.name(), |standby| async move {
        on_standby.run(&standby, vector).await
    });
    if let Some(rows) = standby.await? {
        return Ok(rows);
    }
    let db = account.connection().await?;
    search.run(&db, &embedding).await
}

/// A search whose account was admitted early, owned, to run wherever its
/// query's embedding is ready.
struct AdmittedSearch {
    account: Admitted,
    query: String,
    statement: Statement,
}

impl AdmittedSearch {
    async fn run(&self, db: &Client, embedding: &[f32]) -> Result<Vec<Row>, ApiError> {
        let vector = Some(embedding);
        let args = self.statement.args(&self.query, &vector);
        self.account.run(db, self.statement.sql, &args).await
    }
}

/// `query` if it is at most [`MAX_QUERY_CHARS`] characters long, else a 400
/// naming it: checked before any embedding (the extension checks it too).
fn within_length(query: String) -> Result<String, ApiError> {
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(ApiError::invalid(
            "query",
            format!("query is {chars} characters; at most {MAX_QUERY_CHARS} are searched for"),
        ));
    }
    Ok(query)
}
