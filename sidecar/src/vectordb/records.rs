//! The answers of the vector endpoints: records as the API shows them, read
//! from the rows of the extension's functions.
//!
//! Every record answer starts with the same five columns (`id`, `title`,
//! `content`, `metadata`, `vigil.epoch_ns(created_at)`); some add one. Each
//! shape is its own closed schema (no field the server does not send), so the
//! shared fields are written once, by [`record!`], rather than flattened.

use serde::Serialize;
use serde_json::Value;
use tokio_postgres::Row;
use utoipa::ToSchema;

use crate::error::ApiError;

/// Declares a record shape: the five shared fields, then at most one more,
/// read from the sixth column.
macro_rules! record {
    (
        $(#[$meta:meta])*
        $name:ident { $($(#[$field_meta:meta])* $field:ident: $ty:ty $(,)?)? }
    ) => {
        $(#[$meta])*
        #[derive(Serialize, ToSchema, Debug, PartialEq)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            /// The record's id in its database.
            #[schema(example = 1)]
            pub id: i64,
            pub title: String,
            pub content: String,
            /// The JSON object stored with the record (`{}` when none was given).
            #[schema(value_type = Object)]
            pub metadata: Value,
            /// Nanoseconds since the Unix epoch, 19 digits.
            #[schema(pattern = "^[0-9]{19}$", example = "1795255200123456000")]
            pub created_at: String,
            $($(#[$field_meta])* pub $field: $ty,)?
        }

        impl $name {
            pub fn from_row(row: &Row) -> Result<Self, ApiError> {
                Ok($name {
                    id: row.try_get(0)?,
                    title: row.try_get(1)?,
                    content: row.try_get(2)?,
                    metadata: row.try_get(3)?,
                    created_at: row.try_get(4)?,
                    $($field: row.try_get(5)?,)?
                })
            }
        }
    };
}

record! {
    /// A stored record.
    Record {}
}

record! {
    /// A stored record with its embedding.
    ListedRecord {
        /// The all-MiniLM-L6-v2 embedding of title and content: 384 numbers,
        /// unit length.
        #[schema(min_items = 384, max_items = 384)]
        embedding: Vec<f32>,
    }
}

record! {
    /// A record found by meaning.
    SimilarRecord {
        /// Cosine similarity of the record's embedding to the query's, -1 to 1;
        /// higher is closer.
        #[schema(example = 0.71)]
        similarity: f32,
    }
}

record! {
    /// A record found by hybrid search.
    ScoredRecord {
        /// The fused keyword and vector rank score; higher is better.
        #[schema(example = 0.032)]
        score: f32,
    }
}

/// A deleted database.
#[derive(Serialize, ToSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeletedDatabase {
    #[schema(example = "notes")]
    pub db_name: String,
    /// How many records it held, all deleted with it.
    pub deleted_records: i64,
}

impl DeletedDatabase {
    pub fn from_row(row: &Row) -> Result<Self, ApiError> {
        Ok(DeletedDatabase {
            db_name: row.try_get(0)?,
            deleted_records: row.try_get(1)?,
        })
    }
}

/// Each row as a `T`.
pub fn all<T>(rows: &[Row], read: fn(&Row) -> Result<T, ApiError>) -> Result<Vec<T>, ApiError> {
    rows.iter().map(read).collect()
}
