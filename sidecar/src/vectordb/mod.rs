//! The vector database endpoints. Each takes the body credentials
//! ([`AccountJson`]), enters the account inside the request's transaction,
//! then makes one call into the extension, where row-level security confines
//! it to that account. The extension checks the values and raises SQLSTATE
//! 22023 naming the field (400), P0002 for an unknown database or record
//! (404); `error::from_sqlstate` maps them. The two searches, which embed
//! their query first and may run before the account is entered, are
//! [`search`]'s. The reads (the searches and `/getEmbeddings`) run on a hot
//! standby when one is set and has replayed the account's writes
//! (`Account::read`); after each write the account's position is noted
//! (`Account::wrote`, `reads`).

mod records;
mod requests;
pub mod search;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio_postgres::types::{Json as Jsonb, ToSql};
use tokio_postgres::Row;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::{AccountJson, BodyCredentials, Entered, NoFields};
use crate::json::{required, required_text};
use crate::refusals::{AuthRefusals, BodyRefusals};
use crate::state::AppState;
use records::{all, DeletedDatabase, ListedRecord, Record};
use requests::{
    DeleteEmbeddingRequest, GetEmbeddingsRequest, NewRecord, NewRecords, Page, RecordId,
    StoreEmbeddingRequest, StoreEmbeddingsRequest, DEFAULT_LIMIT,
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
    let row = {
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
        row
    };
    account.wrote().await;
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
    account.wrote().await;
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
    account.wrote().await;
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
    let start = body.start.unwrap_or(0);
    let limit = body.limit.unwrap_or(DEFAULT_LIMIT);
    let rows = account
        .read(move |entered| {
            Box::pin(async move {
                let db = entered.db_name;
                call(
                    entered,
                    "SELECT id, title, content, metadata, vigil.epoch_ns(created_at), embedding \
                     FROM vigil.list_records($1::bigint, $2::int, $3)",
                    &[&start, &limit, &db],
                )
                .await
            })
        })
        .await?;
    Ok(Json(all(&rows, ListedRecord::from_row)?))
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
    account.wrote().await;
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
    account.wrote().await;
    Ok(Json(DeletedDatabase::from_row(one(&rows)?)?))
}
