//! Vector databases: named collections of text records per account, each
//! record embedded inside Postgres and searched by similarity (`vigil_hnsw`),
//! by keywords ranked like BM25, or by both fused.
//!
//! The tables, their row-level security and the SQL functions are in
//! `schema.sql`; every function there runs as its caller, so row-level
//! security decides which account's data it sees. Here are the pieces the
//! SQL calls that are Rust: exact tokens and BM25 over a `tsvector`, from
//! the pure `vigil-search` crate, and the `vigil.db` setting.

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

use std::ffi::CString;

use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use vigil_search::{bm25, tokens, tsvector::TsVector};

use crate::pg::tsvector::TsVectorBytes;

static DB: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

/// `vigil.db`: the database a vector function means when not given one.
pub fn register_settings() {
    GucRegistry::define_string_guc(
        c"vigil.db",
        c"The vector database that vigil.query_embeddings, vigil.hybrid_search and the others use when not passed one.",
        c"For psql sessions: SET vigil.db = 'notes'.",
        &DB,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The words of `text` that PostgreSQL's parser splits but search should
/// match whole (`XK-42`, `a.b@c.org`), lower-cased.
#[pg_extern(immutable, strict, parallel_safe)]
fn exact_tokens(text: &str) -> Vec<String> {
    tokens::exact_tokens(text)
}

fn parse<'a>(terms: &TsVectorBytes<'a>) -> TsVector<'a> {
    TsVector::parse(terms.0).unwrap_or_else(|e| error!("malformed tsvector: {}", e.0))
}

/// Tokens of the record `terms` was made from: BM25's document length.
#[pg_extern(immutable, strict, parallel_safe)]
fn bm25_length(terms: TsVectorBytes) -> i32 {
    let length = parse(&terms)
        .token_count()
        .unwrap_or_else(|e| error!("malformed tsvector: {}", e.0));
    i32::try_from(length).unwrap_or(i32::MAX)
}

/// BM25 score of a record (`terms`) for query lexemes weighted by their IDF
/// in the record's database, whose records average `average_length` tokens.
#[pg_extern(immutable, strict, parallel_safe)]
fn bm25_score(
    terms: TsVectorBytes,
    lexemes: Vec<String>,
    idfs: Vec<f32>,
    average_length: f32,
) -> f32 {
    if lexemes.len() != idfs.len() {
        crate::pg::invalid_input("idfs", "lexemes and idfs must be as long as each other");
    }
    let lexemes: Vec<&[u8]> = lexemes.iter().map(|l| l.as_bytes()).collect();
    bm25::score(&parse(&terms), &lexemes, &idfs, average_length)
        .unwrap_or_else(|e| error!("malformed tsvector: {}", e.0))
}

/// How many of a query's terms, rarest first (`dfs` ascending), the first
/// round of a keyword search matches; see `vigil_search::bm25::essential_terms`.
#[pg_extern(immutable, strict, parallel_safe)]
fn bm25_essential_terms(dfs: Vec<i64>, budget: i64) -> i32 {
    let dfs: Vec<u64> = dfs.iter().map(|&d| d.max(0) as u64).collect();
    bm25::essential_terms(&dfs, budget.max(0) as u64) as i32
}

/// BM25's IDF of a term in `df` of `n` records.
#[pg_extern(immutable, strict, parallel_safe)]
fn bm25_idf(n: i64, df: i64) -> f32 {
    bm25::idf(n.max(0) as u64, df.max(0) as u64)
}

/// Most a term of weight `idf` adds to a score.
#[pg_extern(immutable, strict, parallel_safe)]
fn bm25_upper_bound(idf: f32) -> f32 {
    bm25::upper_bound(idf)
}

extension_sql_file!(
    "schema.sql",
    name = "vectordb_schema",
    requires = [
        "keys_schema",
        "hnsw_schema",
        exact_tokens,
        bm25_length,
        bm25_score,
        bm25_essential_terms,
        bm25_idf,
        bm25_upper_bound
    ]
);
