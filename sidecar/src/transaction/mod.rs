//! `POST /api/transaction` and its feedback endpoint: API key with scope
//! `transaction` ([`KeyedJson`]), then one call of `vigil.risk_score` or
//! `vigil.transaction_feedback`, acting for the key's account: the statement
//! enters it first (`vigil.enter_api_key`, an argument, so one round trip).
//!
//! The body goes to the extension as it is: the extension validates it and
//! refuses bad input with SQLSTATE 22023 naming the field, which `error`
//! turns into a 400 with `field`. Validating here too would say it twice.
//!
//! [`refit_periodically`] refits the model learned from the feedback labels.

pub(crate) mod schema;

use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio_postgres::types::Json as Jsonb;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::{KeyedJson, TransactionScope};
use crate::refusals::{AuthRefusals, BodyRefusals};
use crate::state::AppState;
use schema::{Assessment, FeedbackResult, TransactionRequest};

/// Assesses a transaction (SPEC form A or B, field by field) and records it.
#[utoipa::path(
    post,
    path = "/api/transaction",
    tag = "transactions",
    request_body = TransactionRequest,
    responses(
        (status = 200, description = "The assessment", body = Assessment),
        AuthRefusals,
        BodyRefusals,
    ),
    security(("apiKey" = [])),
)]
pub async fn assess(
    State(state): State<AppState>,
    // A JSON object; anything else is a 400 before the database is asked.
    request: KeyedJson<TransactionScope, Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    let db = &request.db;
    let statement = db
        .prepare_cached("SELECT vigil.risk_score($1, vigil.enter_api_key($2))")
        .await?;
    let row = db
        .query_one(
            &statement,
            &[&Jsonb(&request.body), &request.caller.key.as_str()],
        )
        .await?;
    let assessment: Value = row.try_get(0)?;
    state
        .metrics
        .assessed(assessment.get("Result").and_then(Value::as_str));
    Ok(Json(assessment))
}

#[derive(Deserialize, ToSchema)]
pub struct Feedback {
    /// `fraud`, `legit` or `chargeback`: fraud and chargeback make the
    /// transaction's identities hard rules; a later `legit` withdraws them.
    #[schema(required = true, value_type = schema::Label)]
    label: Option<String>,
    /// Free text kept with the label.
    note: Option<String>,
}

/// Labels an assessed transaction.
#[utoipa::path(
    post,
    path = "/api/transaction/{transactionId}/feedback",
    tag = "transactions",
    params(("transactionId" = String, Path,
            description = "as returned by POST /api/transaction")),
    request_body = Feedback,
    responses(
        (status = 200, description = "The label was recorded", body = FeedbackResult),
        (status = 404, description = "not_found: no such transaction in the key's account", body = crate::error::ErrorBody),
        AuthRefusals,
        BodyRefusals,
    ),
    security(("apiKey" = [])),
)]
pub async fn feedback(
    Path(transaction_id): Path<String>,
    request: KeyedJson<TransactionScope, Feedback>,
) -> Result<Json<Value>, ApiError> {
    if !is_uuid(&transaction_id) {
        return Err(ApiError::invalid(
            "transactionId",
            "transactionId must be a UUID as returned by POST /api/transaction",
        ));
    }
    let (db, feedback) = (&request.db, &request.body);
    let statement = db
        .prepare_cached(
            "SELECT vigil.transaction_feedback($1::text::uuid, $2, $3) \
             FROM vigil.enter_api_key($4)",
        )
        .await?;
    let row = db
        .query_one(
            &statement,
            &[
                &transaction_id,
                &feedback.label,
                &feedback.note,
                &request.caller.key.as_str(),
            ],
        )
        .await?;
    Ok(Json(row.try_get(0)?))
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// Calls `vigil.risk_refit_accounts()` every `every` (skipping the first
/// tick, so a restart loop does not refit each time): every account with
/// labels refits its own model. A failure is logged and retried at the next
/// tick: learning is an improvement, never a reason to stop serving.
pub async fn refit_periodically(pool: deadpool_postgres::Pool, every: std::time::Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let outcome = async {
            let client = pool.get().await.map_err(|e| e.to_string())?;
            client
                .query(
                    "SELECT account, outcome::text FROM vigil.risk_refit_accounts()",
                    &[],
                )
                .await
                .map_err(|e| e.to_string())
        }
        .await;
        match outcome {
            Ok(rows) => {
                for row in rows {
                    let (account, summary): (String, String) = (row.get(0), row.get(1));
                    tracing::info!(%account, %summary, "risk model refitted");
                }
            }
            Err(error) => tracing::warn!(%error, "risk model refit failed"),
        }
    }
}
