//! The vector database endpoints. Each takes the body credentials
//! ([`AccountJson`]), enters the account inside the request's transaction,
//! then makes one call into the extension, where row-level security confines
//! it to that account. The extension checks the values and raises SQLSTATE
//! 22023 naming the field (400), P0002 for an unknown database or record
//! (404); `error::from_sqlstate` maps them.

pub mod query_batch;
pub mod query_cache;
mod records;
mod requests;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio_postgres::types::{Json as Jsonb, ToSql};
use tokio_postgres::Row;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::{
    with_vector, Account, AccountJson, BodyCredentials, Entered, NoFields, Param,
};
use crate::json::{refuse_nul, required, required_text};
use crate::openapi::{AuthRefusals, BodyRefusals};
use crate::state::AppState;
use records::{all, DeletedDatabase, ListedRecord, Record, ScoredRecord, SimilarRecord};
use requests::{
    DeleteEmbeddingRequest, GetEmbeddingsRequest, HybridSearch, HybridSearchRequest, NewRecord,
    NewRecords, Page, RecordId, Search, SearchRequest, StoreEmbeddingRequest,
    StoreEmbeddingsRequest, DEFAULT_LIMIT,
};

/// A vector database.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Database {
    account: String,
    db_name: String,
    /// Nanoseconds since the Unix epoch, 19 digits.
    #[schema(pattern = "^[0-9]{19}$", example = "1795255200123456000")]
    created_at: String,
    /// False when it existed already.
    created: bool,
}

/// Creates the database `dbName` of the account; idempotent.
#[utoipa::path(
    post,
    path = "/createDatabase",
    tag = "vector database",
    request_body = BodyCredentials,
    responses(
        (status = 201, description = "Created", body = Database),
        (status = 200, description = "It existed already", body = Database),
        AuthRefusals,
        BodyRefusals,
    ),
)]
pub async fn create_database(
    AccountJson {
        mut account,
        body: NoFields {},
    }: AccountJson<NoFields>,
) -> Result<(StatusCode, Json<Database>), ApiError> {
    let entered = account.enter().await?;
    let statement = entered
        .tx
        .prepare_cached(
            "SELECT account, name, vigil.epoch_ns(created_at), created \
             FROM vigil.create_database($1)",
        )
        .await?;
    let row = entered
        .tx
        .query_one(&statement, &[&entered.db_name])
        .await?;
    entered.tx.commit().await?;
    let database = Database {
        account: row.try_get(0)?,
        db_name: row.try_get(1)?,
        created_at: row.try_get(2)?,
        created: row.try_get(3)?,
    };
    let status = if database.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(database)))
}

/// Runs the endpoint's one statement in the entered transaction, `$db` last
/// among `params` as written in `sql`, and commits.
async fn call(
    entered: Entered<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, ApiError> {
    let statement = entered.tx.prepare_cached(sql).await?;
    let rows = entered.tx.query(&statement, params).await?;
    entered.tx.commit().await?;
    Ok(rows)
}

/// The most records a search may ask for and still run on a query
/// embedder's connection.
const BATCHED_LIMIT: i32 = 100;

/// Runs a search's statement for the account: `sql` takes the checked
/// `query` first, then `params`, then the query's embedding
/// ([`query_vector`]).
///
/// When these credentials entered the account a moment ago
/// (`Account::admit_early`) and queries are batched, the request takes no
/// pooled connection: its query joins the next batch, and the embedder that
/// embeds it runs the statement right after, on its own connection, with the
/// rest of the batch's, all sent at once (`Account::admitted_search`). A
/// batch takes every search waiting, not only those holding connections,
/// and its searches run one after another in one backend, with no round
/// trip between them and no other backend competing for the cores.
/// docs/performance-log.md, "Queries embedded before the connection" and
/// "Searches run by the embedders", has the figures. A query whose
/// embedding is kept runs on a pooled connection, the account entered in the
/// same round trip. Otherwise, and for a query that would be refused, the
/// account is entered first: the model never runs for credentials the
/// database has not passed, and bad credentials are refused before a bad
/// query. A search for more than [`BATCHED_LIMIT`] records (a hybrid search
/// of 1,000 takes about 35 ms at 100,000 records, 25 times one of 10) is
/// embedded in the batch but runs on a pooled connection, so it holds up
/// neither its batch's other searches nor the embedder's next call.
async fn search(
    state: &AppState,
    account: &mut Account,
    query: Option<String>,
    limit: i32,
    sql: &'static str,
    params: Vec<Param>,
) -> Result<Vec<Row>, ApiError> {
    let query = required_text(query, "query");
    if let (Ok(text), Some(batcher)) = (&query, &state.query_batcher) {
        if account.admit_early()? {
            let mut all: Vec<Param> = vec![Box::new(text.clone())];
            all.extend(params);
            let kept = kept_vector(state, text);
            if kept.is_none() && limit <= BATCHED_LIMIT {
                let then = account.admitted_search(sql, all)?;
                let (embedding, rows) = batcher.search(text, then).await?;
                keep_vector(state, text, embedding);
                return Ok(rows);
            }
            let embedding = match kept {
                Some(kept) => kept,
                None => {
                    let embedding = batcher.embed(text).await?;
                    keep_vector(state, text, Arc::clone(&embedding));
                    embedding
                }
            };
            return account.run_admitted(sql, all, embedding).await;
        }
    }
    let entered = account.enter().await?;
    let query = query?;
    let vector = query_vector(state, &entered.tx, &query).await?;
    let vector = vector.as_deref();
    let mut all: Vec<Param> = vec![Box::new(query)];
    all.extend(params);
    call(entered, sql, &with_vector(&all, &vector)).await
}

/// The embedding kept for `query` in the sidecar's cache, if any.
fn kept_vector(state: &AppState, query: &str) -> Option<Arc<[f32]>> {
    let kept = state.query_cache.get(query)?;
    state.metrics.query_cache(true);
    Some(kept)
}

/// Keeps `query`'s new embedding, when the cache is on.
fn keep_vector(state: &AppState, query: &str, embedding: Arc<[f32]>) {
    if state.query_cache.enabled() {
        state.metrics.query_cache(false);
        state.query_cache.put(query, embedding);
    }
}

/// The embedding of `query` for a search whose account is entered in `tx`:
/// the one kept in the sidecar's cache, or computed in the next batch of
/// queries (in `tx` if batching is off), and kept. `None` when neither
/// caches nor batches: the search embeds the query itself.
async fn query_vector(
    state: &AppState,
    tx: &deadpool_postgres::Transaction<'_>,
    query: &str,
) -> Result<Option<Arc<[f32]>>, ApiError> {
    if let Some(kept) = kept_vector(state, query) {
        return Ok(Some(kept));
    }
    let embedding = match &state.query_batcher {
        // The batcher counts the wait itself.
        Some(batcher) => batcher.embed(query).await?,
        None if state.query_cache.enabled() => {
            let started = Instant::now();
            let statement = tx.prepare_cached("SELECT vigil.embed($1)").await?;
            let embedding: Vec<f32> = tx.query_one(&statement, &[&query]).await?.try_get(0)?;
            state.metrics.query_embedding_waited(started.elapsed());
            Arc::from(embedding)
        }
        None => return Ok(None),
    };
    keep_vector(state, query, Arc::clone(&embedding));
    Ok(Some(embedding))
}

/// The one row a statement returns, or a 500: the extension returns one or raises.
fn one(rows: &[Row]) -> Result<&Row, ApiError> {
    match rows {
        [row] => Ok(row),
        _ => Err(ApiError::internal(&format!(
            "expected one row, the extension returned {}",
            rows.len()
        ))),
    }
}

/// Stores one record; its embedding is computed in the database.
#[utoipa::path(
    post,
    path = "/storeEmbedding",
    tag = "vector database",
    request_body = StoreEmbeddingRequest,
    responses(
        (status = 201, description = "Stored", body = Record),
        (status = 404, description = "not_found: no such database (`field` dbName)", body = ErrorBody),
        AuthRefusals,
        BodyRefusals,
    ),
)]
pub async fn store_embedding(
    State(state): State<AppState>,
    AccountJson { mut account, body }: AccountJson<NewRecord>,
) -> Result<(StatusCode, Json<Record>), ApiError> {
    let _turn = state.store_turn().await?;
    let entered = account.enter().await?;
    let db = entered.db_name;
    let title = required_text(body.title, "title")?;
    let content = required_text(body.content, "content")?;
    let metadata = Jsonb(body.metadata.unwrap_or_else(|| Value::Object(Map::new())));
    let rows = call(
        entered,
        "SELECT id, title, content, metadata, vigil.epoch_ns(created_at) \
         FROM vigil.store_record($1, $2, $3::jsonb, $4)",
        &[&title, &content, &metadata, &db],
    )
    .await?;
    Ok((StatusCode::CREATED, Json(Record::from_row(one(&rows)?)?)))
}

/// Stores 1 to 1,000 records at once, all or none; the answer lists them in
/// the order given.
#[utoipa::path(
    post,
    path = "/storeEmbeddings",
    tag = "vector database",
    request_body = StoreEmbeddingsRequest,
    responses(
        (status = 201, description = "Stored, in the order given", body = [Record]),
        (status = 404, description = "not_found: no such database (`field` dbName)", body = ErrorBody),
        AuthRefusals,
        BodyRefusals,
    ),
)]
pub async fn store_embeddings(
    State(state): State<AppState>,
    AccountJson { mut account, body }: AccountJson<NewRecords>,
) -> Result<(StatusCode, Json<Vec<Record>>), ApiError> {
    let _turn = state.store_turn().await?;
    let entered = account.enter().await?;
    // The batch's statement may run as long as its request (the router's
    // time limit for this route), not the pool's per-statement limit.
    entered
        .tx
        .batch_execute(&format!(
            "SET LOCAL statement_timeout = {}",
            state.batch_timeout.as_millis()
        ))
        .await?;
    let db = entered.db_name;
    let records = Jsonb(required(body.records, "records")?);
    let rows = call(
        entered,
        "SELECT id, title, content, metadata, vigil.epoch_ns(created_at) \
         FROM vigil.store_records($1::jsonb, $2)",
        &[&records, &db],
    )
    .await?;
    Ok((StatusCode::CREATED, Json(all(&rows, Record::from_row)?)))
}

/// A page of records with their embeddings, oldest first.
#[utoipa::path(
    post,
    path = "/getEmbeddings",
    tag = "vector database",
    request_body = GetEmbeddingsRequest,
    responses(
        (status = 200, description = "The page; empty past the last record", body = [ListedRecord]),
        (status = 404, description = "not_found: no such database (`field` dbName)", body = ErrorBody),
        AuthRefusals,
        BodyRefusals,
    ),
)]
pub async fn get_embeddings(
    AccountJson { mut account, body }: AccountJson<Page>,
) -> Result<Json<Vec<ListedRecord>>, ApiError> {
    let entered = account.enter().await?;
    let db = entered.db_name;
    let start = body.start.unwrap_or(0);
    let limit = body.limit.unwrap_or(DEFAULT_LIMIT);
    let rows = call(
        entered,
        "SELECT id, title, content, metadata, vigil.epoch_ns(created_at), embedding \
         FROM vigil.list_records($1::bigint, $2::int, $3)",
        &[&start, &limit, &db],
    )
    .await?;
    Ok(Json(all(&rows, ListedRecord::from_row)?))
}

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
    State(state): State<AppState>,
    AccountJson { mut account, body }: AccountJson<Search>,
) -> Result<Json<Vec<SimilarRecord>>, ApiError> {
    let db = account.db_name().to_owned();
    let limit = body.limit.unwrap_or(DEFAULT_LIMIT);
    let rows = search(
        &state,
        &mut account,
        body.query,
        limit,
        "SELECT id, title, content, metadata, vigil.epoch_ns(created_at), similarity \
         FROM vigil.query_embeddings($1, $2, $3::int, $4::real[])",
        vec![Box::new(db), Box::new(limit)],
    )
    .await?;
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
    State(state): State<AppState>,
    AccountJson { mut account, body }: AccountJson<HybridSearch>,
) -> Result<Json<Vec<ScoredRecord>>, ApiError> {
    let db = account.db_name().to_owned();
    let limit = body.limit.unwrap_or(DEFAULT_LIMIT);
    // The extension checks the fusion and the weights and names the field;
    // a NUL, which cannot reach it, is refused here.
    let fusion = body.fusion.unwrap_or_else(|| "rrf".to_owned());
    refuse_nul(&fusion, "fusion")?;
    let vector_weight = body.vector_weight.unwrap_or(1.0);
    let keyword_weight = body.keyword_weight.unwrap_or(1.0);
    let rows = search(
        &state,
        &mut account,
        body.query,
        limit,
        "SELECT id, title, content, metadata, vigil.epoch_ns(created_at), score \
         FROM vigil.hybrid_search($1, $2::int, $3, $4, $5::real, $6::real, $7::real[])",
        vec![
            Box::new(limit),
            Box::new(db),
            Box::new(fusion),
            Box::new(vector_weight),
            Box::new(keyword_weight),
        ],
    )
    .await?;
    Ok(Json(all(&rows, ScoredRecord::from_row)?))
}

/// Deletes one record; the answer is the record as it was.
#[utoipa::path(
    post,
    path = "/deleteEmbedding",
    tag = "vector database",
    request_body = DeleteEmbeddingRequest,
    responses(
        (status = 200, description = "Deleted", body = Record),
        (status = 404, description = "not_found: no such database (`field` dbName) or record (`field` id)", body = ErrorBody),
        AuthRefusals,
        BodyRefusals,
    ),
)]
pub async fn delete_embedding(
    AccountJson { mut account, body }: AccountJson<RecordId>,
) -> Result<Json<Record>, ApiError> {
    let entered = account.enter().await?;
    let db = entered.db_name;
    let id = required(body.id, "id")?;
    let rows = call(
        entered,
        "SELECT id, title, content, metadata, vigil.epoch_ns(created_at) \
         FROM vigil.delete_record($1::bigint, $2)",
        &[&id, &db],
    )
    .await?;
    Ok(Json(Record::from_row(one(&rows)?)?))
}

/// Deletes the database `dbName` with all its records.
#[utoipa::path(
    post,
    path = "/deleteDatabase",
    tag = "vector database",
    request_body = BodyCredentials,
    responses(
        (status = 200, description = "Deleted", body = DeletedDatabase),
        (status = 404, description = "not_found: no such database (`field` dbName)", body = ErrorBody),
        AuthRefusals,
        BodyRefusals,
    ),
)]
pub async fn delete_database(
    AccountJson {
        mut account,
        body: NoFields {},
    }: AccountJson<NoFields>,
) -> Result<Json<DeletedDatabase>, ApiError> {
    let entered = account.enter().await?;
    let db = entered.db_name;
    let rows = call(
        entered,
        "SELECT name, records::bigint FROM vigil.drop_database($1)",
        &[&db],
    )
    .await?;
    Ok(Json(DeletedDatabase::from_row(one(&rows)?)?))
}
