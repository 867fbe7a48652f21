//! The bodies of the vector endpoints: each endpoint's own fields, read beside
//! the body credentials by [`AccountJson`](crate::extract::AccountJson).
//!
//! Only JSON types are checked here (a wrong one is a 400 naming the field,
//! from `json::parse`), and the presence of required fields; values (lengths,
//! ranges, the shape of `metadata` and of each batch element) are checked by
//! the extension, which names the field in its error's COLUMN. The
//! `…Request` types exist for the OpenAPI document: the whole body, the
//! credentials included.

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::BodyCredentials;

/// The default of `limit`.
pub const DEFAULT_LIMIT: i32 = 10;

/// A record to store; its embedding is computed in the database.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewRecord {
    /// Up to 1,000 characters; may be empty.
    #[schema(required = true, value_type = String, example = "Refund policy")]
    pub title: Option<String>,
    /// Up to 100,000 characters; title and content may not both be blank.
    #[schema(required = true, value_type = String,
             example = "Refunds are paid within 14 days of the return.")]
    pub content: Option<String>,
    /// A JSON object kept with the record; `{}` when absent or null.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

/// The records of a batch, passed to the extension as received (it checks
/// each element and names it, e.g. `records[3].title`).
#[derive(Deserialize, ToSchema)]
pub struct NewRecords {
    /// 1 to 1,000 records, stored all or none.
    #[schema(required = true, value_type = Vec<NewRecord>, min_items = 1, max_items = 1000)]
    pub records: Option<Vec<Value>>,
}

/// A page of records, oldest first.
#[derive(Deserialize, ToSchema)]
pub struct Page {
    /// How many records to skip.
    #[schema(default = 0, minimum = 0)]
    pub start: Option<i64>,
    /// How many records to return at most.
    #[schema(default = 10, minimum = 1, maximum = 1000)]
    pub limit: Option<i32>,
}

/// A search.
#[derive(Deserialize, ToSchema)]
pub struct Search {
    /// The text to search for.
    #[schema(required = true, value_type = String, example = "how do I get my money back")]
    pub query: Option<String>,
    /// How many records to return at most.
    #[schema(default = 10, minimum = 1, maximum = 1000)]
    pub limit: Option<i32>,
}

/// A hybrid search: a search, and how its two rankings are fused. Its own
/// fields rather than a flattened [`Search`]: through `flatten` a field of the
/// wrong type would lose its name in the error.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HybridSearch {
    /// The text to search for.
    #[schema(required = true, value_type = String, example = "refund XK-42")]
    pub query: Option<String>,
    /// How many records to return at most.
    #[schema(default = 10, minimum = 1, maximum = 1000)]
    pub limit: Option<i32>,
    /// `rrf` (Reciprocal Rank Fusion, k = 60; the default) or `convex` (a
    /// weighted mean of the normalised scores, better when a few labelled
    /// queries have tuned the weights).
    #[schema(value_type = Option<String>, default = "rrf", example = "rrf")]
    pub fusion: Option<String>,
    /// Weight of the vector ranking (0 or more; default 1).
    #[schema(default = 1.0, minimum = 0)]
    pub vector_weight: Option<f32>,
    /// Weight of the keyword ranking (0 or more, not both 0; default 1).
    #[schema(default = 1.0, minimum = 0)]
    pub keyword_weight: Option<f32>,
}

/// A record to delete.
#[derive(Deserialize, ToSchema)]
pub struct RecordId {
    /// The record's `id`.
    #[schema(required = true, value_type = i64, example = 1)]
    pub id: Option<i64>,
}

/// A required field's value, or a 400 naming it.
pub fn required<T>(value: Option<T>, field: &str) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::invalid(field, format!("{field} is required")))
}

/// A required text field's value, or a 400 naming it: PostgreSQL's text
/// cannot hold the NUL character.
pub fn required_text(value: Option<String>, field: &str) -> Result<String, ApiError> {
    let text = required(value, field)?;
    if text.contains('\0') {
        return Err(ApiError::invalid(
            field,
            format!("{field} must not contain the NUL character (\\u0000)"),
        ));
    }
    Ok(text)
}

/// Documents a request body: the body credentials and the endpoint's own fields.
macro_rules! request {
    ($(#[$meta:meta])* $name:ident($fields:ty)) => {
        $(#[$meta])*
        #[derive(ToSchema)]
        #[allow(dead_code)] // documentation only
        pub struct $name {
            #[serde(flatten)]
            credentials: BodyCredentials,
            #[serde(flatten)]
            fields: $fields,
        }
    };
}

request!(
    /// `POST /storeEmbedding`
    StoreEmbeddingRequest(NewRecord)
);
request!(
    /// `POST /storeEmbeddings`
    StoreEmbeddingsRequest(NewRecords)
);
request!(
    /// `POST /getEmbeddings`
    GetEmbeddingsRequest(Page)
);
request!(
    /// `POST /queryEmbeddings`
    SearchRequest(Search)
);
request!(
    /// `POST /hybridSearch`
    HybridSearchRequest(HybridSearch)
);
request!(
    /// `POST /deleteEmbedding`
    DeleteEmbeddingRequest(RecordId)
);
