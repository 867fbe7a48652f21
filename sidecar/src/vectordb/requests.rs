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
    #[serde(default, deserialize_with = "integer")]
    pub start: Option<i64>,
    /// How many records to return at most.
    #[schema(default = 10, minimum = 1, maximum = 1000)]
    #[serde(default, deserialize_with = "integer")]
    pub limit: Option<i32>,
}

/// The longest search query, in characters: the model reads a query's first
/// 256 tokens (about 1,000 characters of English), and keyword search's cost
/// grows with its words (at most 500 here). A 1 MB query cost about 2 s of
/// CPU, or a 500 from the keyword index (issue 60). The longest of the
/// labelled queries (bench/vectordb) has 148.
pub const MAX_QUERY_CHARS: usize = 1000;

/// A search.
#[derive(Deserialize, ToSchema)]
pub struct Search {
    /// The text to search for, up to 1,000 characters.
    #[schema(required = true, value_type = String, max_length = 1000, example = "how do I get my money back")]
    pub query: Option<String>,
    /// How many records to return at most.
    #[schema(default = 10, minimum = 1, maximum = 1000)]
    #[serde(default, deserialize_with = "integer")]
    pub limit: Option<i32>,
}

/// A hybrid search: a search, and how its two rankings are fused. Its own
/// fields rather than a flattened [`Search`]: through `flatten` a field of the
/// wrong type would lose its name in the error.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HybridSearch {
    /// The text to search for, up to 1,000 characters.
    #[schema(required = true, value_type = String, max_length = 1000, example = "refund XK-42")]
    pub query: Option<String>,
    /// How many records to return at most.
    #[schema(default = 10, minimum = 1, maximum = 1000)]
    #[serde(default, deserialize_with = "integer")]
    pub limit: Option<i32>,
    /// `convex` (the default: a weighted mean of each ranking's scores scaled
    /// to 0..1) or `rrf` (Reciprocal Rank Fusion, k = 60).
    #[schema(value_type = Option<Fusion>, default = "convex", example = "convex")]
    pub fusion: Option<String>,
    /// Weight of the vector ranking (0 to 1,000,000; default 1).
    #[schema(default = 1.0, minimum = 0, maximum = 1_000_000)]
    #[serde(default, deserialize_with = "weight")]
    pub vector_weight: Option<f32>,
    /// Weight of the keyword ranking (0 to 1,000,000, not both 0; default 1).
    #[schema(default = 1.0, minimum = 0, maximum = 1_000_000)]
    #[serde(default, deserialize_with = "weight")]
    pub keyword_weight: Option<f32>,
}

/// The largest weight: weights are relative, and a product of two must
/// stay finite in a `real` (3.4e38 overflowed in the fusion).
pub const MAX_WEIGHT: f64 = 1e6;

/// A fusion weight: a number from 0 to [`MAX_WEIGHT`] (null: the default).
/// Out of range it is a 400 naming the field (serde_json would read 1e39
/// as infinity).
fn weight<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f32>, D::Error> {
    use serde::de::Error;
    match Option::<f64>::deserialize(d)? {
        Some(w) if !(0.0..=MAX_WEIGHT).contains(&w) => Err(D::Error::custom(format!(
            "a weight is a number from 0 to {MAX_WEIGHT}, not {w}"
        ))),
        w => Ok(w.map(|w| w as f32)),
    }
}

/// The fusions of a hybrid search, for the document: the extension checks
/// the text (`vigil.hybrid_search`) and names the field.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)] // documentation only
pub enum Fusion {
    Rrf,
    Convex,
}

/// A record to delete.
#[derive(Deserialize, ToSchema)]
pub struct RecordId {
    /// The record's `id`.
    #[schema(required = true, value_type = i64, example = 1)]
    #[serde(default, deserialize_with = "integer")]
    pub id: Option<i64>,
}

/// An integer field, written `5` or `5.0` (JSON Schema's integers, which
/// some clients' encoders write with a fraction); null: absent. Anything
/// else, a fraction or a number out of `T`'s range included, is a 400
/// naming the field.
fn integer<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    use serde::de::Error;
    let Some(number) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    // Within ±2^63 an integral f64 converts exactly.
    let whole = number.as_i64().or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
            .map(|f| f as i64)
    });
    whole
        .and_then(|n| T::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| D::Error::custom(format!("must be an integer in range, not {number}")))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn integers_may_be_written_with_a_zero_fraction_and_read_exactly() {
        let id = |body: &str| parse::<RecordId>(body.as_bytes()).map(|r| r.id);
        assert_eq!(id(r#"{"id": 7}"#).unwrap(), Some(7));
        assert_eq!(id(r#"{"id": 7.0}"#).unwrap(), Some(7));
        // Near 2^52 a fast float parser can be a unit in the last place off.
        assert_eq!(
            id(r#"{"id": 3786595243929910.0}"#).unwrap(),
            Some(3_786_595_243_929_910)
        );
        assert_eq!(id(r#"{"id": null}"#).unwrap(), None);
        for bad in [r#"{"id": 7.5}"#, r#"{"id": "7"}"#, r#"{"id": 1e19}"#] {
            let Err(e) = id(bad) else {
                panic!("{bad} was read");
            };
            assert_eq!(e.field.as_deref(), Some("id"), "{bad}");
        }
        let Err(page) = parse::<Page>(br#"{"limit": 4294967296}"#) else {
            panic!("a limit over i32 was read");
        };
        assert_eq!(page.field.as_deref(), Some("limit"));
    }
}
