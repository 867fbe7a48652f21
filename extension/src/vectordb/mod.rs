//! Vector databases: named collections of text records per account, each
//! record embedded inside Postgres and searched by similarity (`vigil_hnsw`),
//! by keywords ranked like BM25, or by both fused.
//!
//! The tables, their row-level security and the SQL functions are in
//! `sql/`, a file per concern (tables, the accounts view, the keyword index's
//! triggers, records, searches); every function there runs as its caller, so row-level
//! security decides which account's data it sees. Here are the pieces the
//! SQL calls that are Rust: exact tokens, BM25 over a `tsvector`, the
//! keyword index's posting blocks and the top k over them (with the terms a
//! backend keeps between searches), hybrid search's fusion of its two
//! rankings, from the pure `vigil-search` crate, and the `vigil.db` and
//! `vigil.keyword_cache` settings.

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CString;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use vigil_search::cache::{PostingsCache, Term};
use vigil_search::fusion::Fusion;
use vigil_search::postings::{self, Posting, QueryTerm};
use vigil_search::{bm25, tokens, tsvector::TsVector};

use crate::pg::tsvector::TsVectorBytes;

static DB: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static KEYWORD_CACHE: GucSetting<i32> = GucSetting::<i32>::new(32 * 1024);

/// `vigil.db`: the database a vector function means when not given one;
/// `vigil.keyword_cache`: how much of the keyword index one backend keeps
/// between searches (kB; `vigil_search::cache`).
pub fn register_settings() {
    GucRegistry::define_string_guc(
        c"vigil.db",
        c"The vector database that vigil.query_embeddings, vigil.hybrid_search and the others use when not passed one.",
        c"For psql sessions: SET vigil.db = 'notes'.",
        &DB,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"vigil.keyword_cache",
        c"Terms of the keyword index (record counts and posting blocks) one backend keeps between searches (0: none).",
        c"Per backend; a database's terms are read again after any write to it.",
        &KEYWORD_CACHE,
        0,
        i32::MAX / 1024,
        GucContext::Userset,
        GucFlags::UNIT_KB,
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

/// BM25's IDF of a term in `df` of `n` records.
#[pg_extern(immutable, strict, parallel_safe)]
fn bm25_idf(n: i64, df: i64) -> f32 {
    bm25::idf(n.max(0) as u64, df.max(0) as u64)
}

/// One block's row in `vigil.vector_postings`: its first and last record
/// ids, how many postings it holds, its bytes. (pgrx wants the columns
/// spelled out in each `TableIterator`.)
fn block_row(bytes: Vec<u8>) -> (i64, i64, i32, Vec<u8>) {
    let h = postings::header(&bytes).unwrap_or_else(|e| malformed_block(e.0));
    (h.first, h.last, h.count as i32, bytes)
}

fn malformed_block(why: &str) -> ! {
    error!("malformed posting block in vigil.vector_postings: {why}")
}

/// Most postings a block holds: a term's newest block with fewer takes the
/// next postings, a full one is left alone.
#[pg_extern(immutable, parallel_safe, name = "_postings_block_size")]
fn postings_block_size() -> i32 {
    postings::BLOCK as i32
}

/// The blocks that replace a term's newest block `tail` (NULL for a new
/// term) once the postings of records `ids` (term frequencies `tfs`, record
/// lengths `lengths`) are added.
#[pg_extern(immutable, parallel_safe, name = "_postings_append")]
fn postings_append(
    tail: Option<&[u8]>,
    ids: Vec<i64>,
    tfs: Vec<i32>,
    lengths: Vec<i32>,
) -> TableIterator<
    'static,
    (
        name!(first_id, i64),
        name!(last_id, i64),
        name!(size, i32),
        name!(postings, Vec<u8>),
    ),
> {
    if ids.len() != tfs.len() || ids.len() != lengths.len() {
        crate::pg::invalid_input("ids", "ids, tfs and lengths must be as long as each other");
    }
    let new: Vec<Posting> = ids
        .iter()
        .zip(&tfs)
        .zip(&lengths)
        .map(|((&id, &tf), &length)| Posting {
            id,
            tf: tf.clamp(1, i32::from(u16::MAX)) as u16,
            length: length.max(0) as u32,
        })
        .collect();
    let blocks = postings::append(tail, &new).unwrap_or_else(|e| malformed_block(e.0));
    TableIterator::new(blocks.into_iter().map(block_row))
}

/// Whether `block` holds a posting of any of the records `ids`.
#[pg_extern(immutable, strict, parallel_safe, name = "_postings_holds_any")]
fn postings_holds_any(block: &[u8], ids: Vec<i64>) -> bool {
    postings::holds_any(block, &ids).unwrap_or_else(|e| malformed_block(e.0))
}

/// `block` without the postings of records `ids`: no row when none is left.
#[pg_extern(immutable, strict, parallel_safe, name = "_postings_remove")]
fn postings_remove(
    block: &[u8],
    ids: Vec<i64>,
) -> TableIterator<
    'static,
    (
        name!(first_id, i64),
        name!(last_id, i64),
        name!(size, i32),
        name!(postings, Vec<u8>),
    ),
> {
    let left = postings::remove(block, &ids).unwrap_or_else(|e| malformed_block(e.0));
    TableIterator::new(left.into_iter().map(block_row))
}

/// The `k` records scoring highest by BM25, best first, ties by id: query
/// term `i` (1-based) weighs `idfs[i]`, and `blocks[j]` is a block of the
/// postings of term `block_terms[j]`; records average `average_length`
/// tokens.
#[pg_extern(immutable, strict, parallel_safe, name = "_bm25_top")]
fn bm25_top<'a>(
    block_terms: Vec<i32>,
    blocks: Array<'a, &'a [u8]>,
    idfs: Vec<f32>,
    average_length: f32,
    k: i32,
) -> TableIterator<'static, (name!(id, i64), name!(score, f32))> {
    if block_terms.len() != blocks.len() {
        crate::pg::invalid_input(
            "blocks",
            "block_terms and blocks must be as long as each other",
        );
    }
    let mut terms: Vec<QueryTerm> = idfs
        .iter()
        .map(|&idf| QueryTerm {
            idf,
            blocks: Vec::new(),
        })
        .collect();
    for (&term, block) in block_terms.iter().zip(blocks.iter()) {
        let block = block.unwrap_or_else(|| crate::pg::invalid_input("blocks", "a block is NULL"));
        let slot = usize::try_from(term)
            .ok()
            .and_then(|t| t.checked_sub(1))
            .and_then(|t| terms.get_mut(t))
            .unwrap_or_else(|| {
                crate::pg::invalid_input(
                    "block_terms",
                    "a block's term must be 1 to the number of idfs",
                )
            });
        slot.blocks.push(block);
    }
    let top = postings::top_k(&terms, average_length, k.max(0) as usize)
        .unwrap_or_else(|e| malformed_block(e.0));
    TableIterator::new(top)
}

thread_local! {
    /// This backend's copy of the keyword index (`vigil_search::cache`).
    static POSTINGS: RefCell<PostingsCache> = RefCell::new(PostingsCache::new());
    /// [`READ_TERMS`], planned once per backend: a search of a word this
    /// backend has not kept reads it, and parsing and planning the read
    /// each time cost about as much as running it.
    static READ_TERMS_PLAN: RefCell<Option<OwnedPreparedStatement>> = const { RefCell::new(None) };
}

/// What a database holds of some terms: each term's record count, with a
/// row per posting block (none when no record holds it). Run inside
/// `_keyword_ranked`, a security definer that has checked the database is
/// the account's. The account is named so that on a Citus cluster the
/// statement goes to the one worker holding it.
const READ_TERMS: &str = "SELECT t.term, t.records, p.postings FROM vigil.vector_terms t \
                          LEFT JOIN vigil.vector_postings p \
                            ON p.db = t.db AND p.term = t.term AND p.account = t.account \
                          WHERE t.account = $3 AND t.db = $1 AND t.term = ANY ($2)";

/// Reads what database `db_id` of `account` holds of `missing` ([`READ_TERMS`]).
fn read_terms(
    db_id: i64,
    account: &str,
    missing: &[String],
) -> Result<Vec<(String, Term)>, pgrx::spi::Error> {
    Spi::connect(|client| {
        READ_TERMS_PLAN.with_borrow_mut(|plan| {
            let statement: &OwnedPreparedStatement = match plan {
                Some(statement) => statement,
                None => {
                    let types = [
                        PgBuiltInOids::INT8OID,
                        PgBuiltInOids::TEXTARRAYOID,
                        PgBuiltInOids::TEXTOID,
                    ]
                    .map(|t| t.oid());
                    plan.insert(client.prepare(READ_TERMS, &types)?.keep())
                }
            };
            let args: [DatumWithOid; 3] = [db_id.into(), missing.to_vec().into(), account.into()];
            let mut held: HashMap<String, Term> = HashMap::new();
            for row in client.select(statement, None, &args)? {
                let (Some(name), Some(records)) = (row.get::<String>(1)?, row.get::<i64>(2)?)
                else {
                    continue;
                };
                let term = held.entry(name).or_default();
                term.records = records.max(0) as u64;
                term.blocks.extend(row.get::<Vec<u8>>(3)?);
            }
            Ok(held.into_iter().collect())
        })
    })
}

/// BM25's top `k` in database `db_id` of `account`, which holds `records` records of
/// `average_length` tokens on average, over the query's `lexemes`: each
/// term's record count (its IDF) and posting blocks come from this
/// backend's copy of the keyword index when it holds them for the same row
/// version `(xmin, ctid)` of the database's counts, which every write of
/// its postings replaces (at most `vigil.keyword_cache`); the rest are read
/// and kept. Terms no record holds are left out; the others are summed
/// rarest first, ties by the term's bytes, as `vigil_search::postings::
/// top_k` sums them.
#[allow(clippy::too_many_arguments)]
#[pg_extern(stable, strict, name = "_bm25_search_kept")]
fn bm25_search_kept(
    db_id: i64,
    account: &str,
    xmin: i64,
    ctid: pg_sys::ItemPointerData,
    lexemes: Vec<String>,
    records: i64,
    average_length: f32,
    k: i32,
) -> TableIterator<'static, (name!(id, i64), name!(score, f32))> {
    let (block, offset) = pgrx::itemptr::item_pointer_get_both(ctid);
    let version = (xmin as u64, (u64::from(block) << 16) | u64::from(offset));
    let budget = usize::try_from(KEYWORD_CACHE.get()).unwrap_or(0) * 1024;
    let mut lexemes = lexemes;
    lexemes.sort_unstable();
    lexemes.dedup();
    let held = POSTINGS
        .with_borrow_mut(|cache| {
            cache.terms(db_id, version, &lexemes, budget, |missing| {
                read_terms(db_id, account, missing)
            })
        })
        .unwrap_or_else(|e| error!("could not read the keyword index: {e}"));
    let mut found: Vec<(&String, &Term)> = lexemes
        .iter()
        .zip(&held)
        .map(|(name, term)| (name, term.as_ref()))
        .filter(|(_, term)| term.records > 0)
        .collect();
    found.sort_by(|a, b| (a.1.records, a.0).cmp(&(b.1.records, b.0)));
    let n = records.max(0) as u64;
    let terms: Vec<QueryTerm> = found
        .iter()
        .map(|(_, term)| QueryTerm {
            idf: bm25::idf(n, term.records),
            blocks: term.blocks.iter().map(Vec::as_slice).collect(),
        })
        .collect();
    let top = postings::top_k(&terms, average_length, k.max(0) as usize)
        .unwrap_or_else(|e| malformed_block(e.0));
    TableIterator::new(top)
}

/// Hybrid search's fusion (`vigil_search::fusion`): the `k` best records of
/// the vector branch (`vector_ids` with their `similarities`) and the keyword
/// branch (`keyword_ids` with their BM25 `scores`), each in any order, where
/// the keyword records `identified` hold an identifier of the query. `fusion`
/// is 'rrf' or 'convex'; the weights are checked by the caller. Best first,
/// ties by smaller id. A NULL array is an empty branch.
#[allow(clippy::too_many_arguments)]
#[pg_extern(immutable, parallel_safe, name = "_fuse")]
fn fuse(
    vector_ids: Option<Vec<i64>>,
    similarities: Option<Vec<f32>>,
    keyword_ids: Option<Vec<i64>>,
    scores: Option<Vec<f32>>,
    identified: Option<Vec<i64>>,
    k: i32,
    fusion: &str,
    vector_weight: f32,
    keyword_weight: f32,
) -> TableIterator<'static, (name!(id, i64), name!(score, f64))> {
    let pairs = |ids: Option<Vec<i64>>, values: Option<Vec<f32>>, field: &str| {
        let (ids, values) = (ids.unwrap_or_default(), values.unwrap_or_default());
        if ids.len() != values.len() {
            crate::pg::invalid_input(field, "as many ids as scores are needed");
        }
        ids.into_iter().zip(values).collect::<Vec<_>>()
    };
    let by_vector = pairs(vector_ids, similarities, "similarities");
    let by_keyword = pairs(keyword_ids, scores, "scores");
    let fusion = Fusion::parse(fusion)
        .unwrap_or_else(|| crate::pg::invalid_input("fusion", "fusion must be 'rrf' or 'convex'"));
    let fused = vigil_search::fusion::fuse(
        &by_vector,
        &by_keyword,
        &identified.unwrap_or_default(),
        fusion,
        vector_weight,
        keyword_weight,
        k.max(0) as usize,
    );
    TableIterator::new(fused)
}

/// Records' embeddings, one row per (title, content) pair in input order
/// (number them `WITH ORDINALITY`): `embedding`, of the text
/// `title || E'\n' || content` (NULL when either is), and `opening`, its
/// content's first sentence as read within that text
/// (`vigil_search::opening`), or `embedding` again when the content has no
/// sentence or it lies past the tokens the model reads: NULL in
/// `vector_records.opening` means only "not read yet" (vigil.fill_openings).
#[pg_extern(stable, parallel_safe, name = "_embed_records")]
// pgrx reads the columns' names (`name!`) from the signature itself, so the
// row type cannot be an alias.
#[allow(clippy::type_complexity)]
fn embed_records(
    titles: Vec<Option<String>>,
    contents: Vec<Option<String>>,
) -> TableIterator<
    'static,
    (
        name!(embedding, Option<Vec<f32>>),
        name!(opening, Option<Vec<f32>>),
    ),
> {
    if titles.len() != contents.len() {
        crate::pg::invalid_input("contents", "as many contents as titles are needed");
    }
    let mut texts = Vec::with_capacity(titles.len());
    let mut parts = Vec::with_capacity(titles.len());
    for (title, content) in titles.iter().zip(&contents) {
        if let (Some(title), Some(content)) = (title, content) {
            let start = title.len() + 1;
            parts.push(
                vigil_search::opening::opening(content).map(|r| r.start + start..r.end + start),
            );
            texts.push(format!("{title}\n{content}"));
        }
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut pooled = crate::embed::with_embedder(|e| {
        e.embed_many_with_parts(&refs, &parts, || {
            pg_sys::check_for_interrupts!();
        })
    })
    .into_iter();
    let rows: Vec<_> = titles
        .iter()
        .zip(&contents)
        .map(|pair| match pair {
            (Some(_), Some(_)) => pooled.next().map_or((None, None), |p| {
                let opening = p.part.unwrap_or_else(|| p.whole.clone());
                (Some(p.whole), Some(opening))
            }),
            _ => (None, None),
        })
        .collect();
    TableIterator::new(rows)
}

/// Functions of earlier versions' scripts, kept as symbols only so that
/// `CREATE EXTENSION vigil VERSION '0.6.0'` (or any later version kept)
/// still loads with this library (PostgreSQL checks a C function's symbol
/// when it is created), with the signature they had, so their arguments
/// are read as they are passed. Called before `ALTER EXTENSION vigil
/// UPDATE`, they say so.
mod retired {
    use pgrx::prelude::*;

    fn retired(name: &str, version: &str) -> ! {
        error!("vigil.{name} was removed in {version}: run ALTER EXTENSION vigil UPDATE")
    }

    #[pg_extern(sql = false)]
    fn bm25_essential_terms(_dfs: Vec<i64>, _budget: i64) -> i32 {
        retired("bm25_essential_terms", "0.7.0")
    }

    #[pg_extern(sql = false)]
    fn bm25_upper_bound(_idf: f32) -> f32 {
        retired("bm25_upper_bound", "0.7.0")
    }

    #[allow(clippy::too_many_arguments)]
    #[pg_extern(sql = false)]
    fn bm25_top_kept(
        _db_id: i64,
        _xmin: i64,
        _ctid: pg_sys::ItemPointerData,
        _lexemes: Vec<String>,
        _idfs: Vec<f32>,
        _average_length: f32,
        _k: i32,
    ) -> TableIterator<'static, (name!(id, i64), name!(score, f32))> {
        retired("_bm25_top_kept", "0.7.8")
    }
}

// The SQL, a file per concern, in this order: each file after the one
// before it, the first after every Rust function they call.
extension_sql_file!(
    "sql/tables.sql",
    name = "vectordb_tables",
    requires = [
        "keys_schema",
        "hnsw_schema",
        exact_tokens,
        bm25_length,
        bm25_score,
        bm25_idf,
        postings_block_size,
        postings_append,
        postings_holds_any,
        postings_remove,
        bm25_top,
        bm25_search_kept,
        fuse
    ]
);
extension_sql_file!(
    "sql/accounts.sql",
    name = "vectordb_accounts",
    requires = ["vectordb_tables"]
);
extension_sql_file!(
    "sql/keywords.sql",
    name = "vectordb_keywords",
    requires = ["vectordb_accounts"]
);
extension_sql_file!(
    "sql/records.sql",
    name = "vectordb_records",
    requires = ["vectordb_keywords"]
);
extension_sql_file!(
    "sql/search.sql",
    name = "vectordb_schema",
    requires = ["vectordb_records"]
);
