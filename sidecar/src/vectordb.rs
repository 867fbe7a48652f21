//! The vector database endpoints. Each authenticates the body's user key for
//! its account and database inside the request's transaction, then makes one
//! call into the extension, where row-level security confines it to that account.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::app::AppState;
use crate::auth::client_ip::ClientIp;
use crate::auth::{self, AccountCredentials};
use crate::error::ApiError;
use crate::json::JsonBody;

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct CreateDatabase {
    #[serde(flatten)]
    credentials: AccountCredentials,
    db_name: Option<String>,
}

/// `POST /createDatabase`: 201 with the new database, or 200 when it exists.
pub async fn create_database(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    JsonBody(body): JsonBody<CreateDatabase>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let db_name = body
        .db_name
        .ok_or_else(|| ApiError::invalid("dbName", "dbName is required"))?;
    let mut conn = state.db().await?;
    let tx = conn.transaction().await?;
    auth::enter_account(&state.limits, &tx, &body.credentials, Some(&db_name), ip).await?;
    let statement = tx
        .prepare_cached(
            "SELECT account, name, vigil.epoch_ns(created_at), created \
             FROM vigil.create_database($1)",
        )
        .await?;
    let row = tx.query_one(&statement, &[&db_name]).await?;
    tx.commit().await?;
    let created: bool = row.try_get(3)?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(json!({
            "account": row.try_get::<_, String>(0)?,
            "dbName": row.try_get::<_, String>(1)?,
            "createdAt": row.try_get::<_, String>(2)?,
            "created": created,
        })),
    ))
}
