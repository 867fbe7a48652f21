//! The vector database endpoints. Each takes the body credentials
//! ([`AccountJson`]), enters the account inside the request's transaction,
//! then makes one call into the extension, where row-level security confines
//! it to that account.

use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::{AccountJson, BodyCredentials, NoFields};
use crate::openapi::{AuthRefusals, BodyRefusals};

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
