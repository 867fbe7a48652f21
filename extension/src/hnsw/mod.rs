//! `vigil_hnsw`: an HNSW index access method over `real[]`, crash-safe and
//! replicated through generic WAL.
//!
//! The graph algorithm is the pure crate `vigil-hnsw`, and the page layout
//! the pure crate `vigil-hnsw-page` (described once, in
//! [`vigil_hnsw_page::layout`]); this module is their Postgres edge.
//!
//! The graph on pages, which every phase shares:
//!
//! - [`store`]: the crate's storage trait over the index's pages.
//! - [`slots`]: where a new element's items go, over a removed one's or after
//!   the last.
//! - [`meta`]: the meta page.
//! - [`items`]: items on a locked page.
//! - [`buffer`]: pinned, locked buffers and generic WAL records.
//! - [`lock`]: the writers' heavyweight locks.
//!
//! One file per phase of an index's life:
//!
//! - [`build`]: `CREATE INDEX` / `REINDEX` (in memory on every core, then
//!   written out; page by page when `maintenance_work_mem` runs out).
//! - [`insert`]: one row at a time after the build.
//! - [`scan`]: `ORDER BY col <op> $1 LIMIT k`, iterative so filters still
//!   yield rows.
//! - [`vacuum`]: dead rows out of the graph, their neighbours' links repaired.
//! - [`cost`]: the planner's estimate.
//! - [`ops`]: vectors from `real[]` and the exact distance operators.
//!
//! And `vigil.hnsw_check(regclass)`, the structural check.
//!
//! Functions here take `pg_sys::Relation`s as plain arguments: each is the
//! index Postgres opened and locked for the callback in progress, valid for
//! its whole duration, which is the only place they come from.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod buffer;
pub mod build;
pub mod cost;
pub mod directory;
pub mod insert;
pub mod items;
pub mod lock;
pub mod meta;
pub mod ops;
pub mod scan;
pub mod slots;
pub mod store;
pub mod vacuum;

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

use std::ffi::CStr;

use crate::pg::relation_name;

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting, PostgresGucEnum};
use vigil_hnsw::{CheckOptions, Metric, Params};

use self::lock::GraphLock;
use self::store::PageStore;

extension_sql_file!(
    "schema.sql",
    name = "hnsw_schema",
    requires = ["keys_schema"]
);

/// How a scan continues past its first `ef_search` results. Spelled in lower
/// case as PostgreSQL's own settings are; pgvector's spellings of
/// `hnsw.iterative_scan` (`strict_order`, `relaxed_order`) are taken too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PostgresGucEnum)]
pub enum IterativeScanSetting {
    /// Stop after the first `ef_search` candidates (plain HNSW).
    #[name = c"off"]
    Off,
    /// Keep going, returning rows in exact distance order.
    #[name = c"strict"]
    Strict,
    /// Keep going; later rows may be slightly out of order.
    #[name = c"relaxed"]
    Relaxed,
    /// pgvector's name for `strict`.
    #[name = c"strict_order"]
    StrictOrder,
    /// pgvector's name for `relaxed`.
    #[name = c"relaxed_order"]
    RelaxedOrder,
}

impl IterativeScanSetting {
    /// The order a continuing scan keeps; `None` when it does not continue.
    pub fn order(self) -> Option<vigil_hnsw::ScanOrder> {
        match self {
            IterativeScanSetting::Off => None,
            IterativeScanSetting::Strict | IterativeScanSetting::StrictOrder => {
                Some(vigil_hnsw::ScanOrder::Strict)
            }
            IterativeScanSetting::Relaxed | IterativeScanSetting::RelaxedOrder => {
                Some(vigil_hnsw::ScanOrder::Relaxed)
            }
        }
    }
}

pub static EF_SEARCH: GucSetting<i32> =
    GucSetting::<i32>::new(vigil_hnsw::DEFAULT_EF_SEARCH as i32);
pub static ITERATIVE_SCAN: GucSetting<IterativeScanSetting> =
    GucSetting::<IterativeScanSetting>::new(IterativeScanSetting::Strict);
pub static MAX_SCAN_TUPLES: GucSetting<i32> = GucSetting::<i32>::new(20_000);

/// Reloption kind of `vigil_hnsw`, allocated at load.
static mut RELOPT_KIND: pg_sys::relopt_kind::Type = 0;

/// `WITH (m = .., ef_construction = ..)`, as `build_reloptions` lays it out.
#[repr(C)]
struct Options {
    varlena_header: i32,
    m: i32,
    ef_construction: i32,
}

pub fn register() {
    GucRegistry::define_int_guc(
        c"vigil.hnsw_ef_search",
        c"Rows the first round of a vigil_hnsw scan returns (larger: better recall, slower).",
        c"They are the best of a beam search keeping twice as many candidates.",
        &EF_SEARCH,
        1,
        vigil_hnsw::MAX_EF_CONSTRUCTION as i32,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_enum_guc(
        c"vigil.hnsw_iterative_scan",
        c"Whether a vigil_hnsw scan continues past ef_search results (off, strict, relaxed; pgvector's strict_order and relaxed_order too).",
        c"With a selective WHERE clause, continuing is what still yields LIMIT rows.",
        &ITERATIVE_SCAN,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"vigil.hnsw_max_scan_tuples",
        c"Most graph elements an iterative vigil_hnsw scan visits before it stops.",
        c"Bounds the work of a filtered query whose filter matches almost nothing.",
        &MAX_SCAN_TUPLES,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::default(),
    );
    // SAFETY: called once from _PG_init, before any index is opened.
    unsafe {
        RELOPT_KIND = pg_sys::add_reloption_kind();
        let lock = pg_sys::AccessExclusiveLock as i32;
        pg_sys::add_int_reloption(
            RELOPT_KIND,
            c"m".as_ptr(),
            c"Links per element on upper layers (twice as many on layer 0)".as_ptr(),
            vigil_hnsw::DEFAULT_M as i32,
            vigil_hnsw::MIN_M as i32,
            vigil_hnsw::MAX_M as i32,
            lock,
        );
        pg_sys::add_int_reloption(
            RELOPT_KIND,
            c"ef_construction".as_ptr(),
            c"Candidates kept while inserting (at least 2 * m)".as_ptr(),
            vigil_hnsw::DEFAULT_EF_CONSTRUCTION as i32,
            4,
            vigil_hnsw::MAX_EF_CONSTRUCTION as i32,
            lock,
        );
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn amoptions(
    reloptions: pg_sys::Datum,
    validate: bool,
) -> *mut pg_sys::bytea {
    let table = [
        pg_sys::relopt_parse_elt {
            optname: c"m".as_ptr(),
            opttype: pg_sys::relopt_type::RELOPT_TYPE_INT,
            offset: std::mem::offset_of!(Options, m) as i32,
        },
        pg_sys::relopt_parse_elt {
            optname: c"ef_construction".as_ptr(),
            opttype: pg_sys::relopt_type::RELOPT_TYPE_INT,
            offset: std::mem::offset_of!(Options, ef_construction) as i32,
        },
    ];
    pg_sys::build_reloptions(
        reloptions,
        validate,
        RELOPT_KIND,
        std::mem::size_of::<Options>(),
        table.as_ptr(),
        table.len() as i32,
    ) as *mut pg_sys::bytea
}

/// Whether the index is partitioned: `(key bigint, vector)`, one graph per
/// key ([`vigil_hnsw_page::layout`]), rather than `(vector)`, one graph.
pub(crate) fn partitioned(index: pg_sys::Relation) -> bool {
    // SAFETY: index is open; rd_index is its pg_index row.
    unsafe { (*(*index).rd_index).indnkeyatts == 2 }
}

/// A row's key (in a partitioned index) and vector datum, from the values
/// an insert or a build is given; `None` when either is NULL (such a row
/// is not indexed: no scan could ask for it).
///
/// # Safety
/// `values` and `isnull` hold one entry per index column.
pub(crate) unsafe fn row_key(
    index: pg_sys::Relation,
    values: *const pg_sys::Datum,
    isnull: *const bool,
) -> Option<(Option<i64>, pg_sys::Datum)> {
    if !partitioned(index) {
        return (!*isnull).then(|| (None, *values));
    }
    if *isnull || *isnull.add(1) {
        return None;
    }
    Some((Some((*values).value() as i64), *values.add(1)))
}

/// The metric of the index's operator class, from its support function 1.
fn metric_of(index: pg_sys::Relation) -> Metric {
    // The vector is the last column (the second of a partitioned index).
    let column = if partitioned(index) { 2 } else { 1 };
    // SAFETY: index is open; get_func_name returns a palloc'd name or NULL.
    let name = unsafe {
        let proc = pg_sys::index_getprocid(index, column, 1);
        let name = pg_sys::get_func_name(proc);
        if name.is_null() {
            String::new()
        } else {
            CStr::from_ptr(name).to_string_lossy().into_owned()
        }
    };
    match name.as_str() {
        "cosine_distance" => Metric::Cosine,
        "l2_distance" => Metric::L2,
        "negative_inner_product" => Metric::InnerProduct,
        other => error!(
            "vigil_hnsw: operator class support function 1 is \"{other}\"; use vigil.cosine_ops, vigil.l2_ops or vigil.ip_ops"
        ),
    }
}

/// `m` and `ef_construction` from the index's reloptions.
fn options(index: pg_sys::Relation) -> (usize, usize) {
    // SAFETY: rd_options is NULL or the bytea amoptions built.
    unsafe {
        let options = (*index).rd_options as *const Options;
        if options.is_null() {
            (vigil_hnsw::DEFAULT_M, vigil_hnsw::DEFAULT_EF_CONSTRUCTION)
        } else {
            ((*options).m as usize, (*options).ef_construction as usize)
        }
    }
}

/// Parameters of a new index from its reloptions and operator class
/// (`dims` is decided by the first vector).
fn new_params(index: pg_sys::Relation) -> Params {
    let (m, ef_construction) = options(index);
    if ef_construction < 2 * m {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "vigil_hnsw: ef_construction ({ef_construction}) must be at least 2 * m ({})",
                2 * m
            )
        );
    }
    Params {
        dims: 0,
        metric: metric_of(index),
        m,
        ef_construction,
    }
}

/// Raises an error as an ERROR naming the index, with the SQLSTATE of its kind
/// ([`Sqlstate`]): clients must tell their own bad vector from a broken index.
fn raise<E: std::fmt::Display + Sqlstate>(index: pg_sys::Relation, e: E) -> ! {
    ereport!(
        ERROR,
        e.sqlstate(),
        format!("vigil_hnsw index \"{}\": {e}", relation_name(index))
    );
}

/// Which SQLSTATE an error is raised with. By default the caller's data is at
/// fault (22000, data_exception); the crate's errors say otherwise for the
/// index's own state (XX002, index_corrupted) and for failures inside Postgres
/// or the build (XX000, internal_error), which are never the caller's doing.
/// (The sidecar answers the first 400 and the others 500.)
pub(crate) trait Sqlstate {
    fn sqlstate(&self) -> PgSqlErrorCode {
        PgSqlErrorCode::ERRCODE_DATA_EXCEPTION
    }
}

impl Sqlstate for String {}
impl Sqlstate for &str {}

impl<I: vigil_hnsw::ElementId, E: std::error::Error + 'static> Sqlstate
    for vigil_hnsw::Error<I, E>
{
    fn sqlstate(&self) -> PgSqlErrorCode {
        use vigil_hnsw::Error;
        match self {
            Error::Dimensions { .. } | Error::InvalidVector(_) | Error::InvalidParams(_) => {
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION
            }
            // The page store fails only on pages that do not hold what the
            // graph says they do.
            Error::Corrupt(_) | Error::Storage(_) => PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
            Error::Build(_) => PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
        }
    }
}

impl Sqlstate for items::PageError {
    fn sqlstate(&self) -> PgSqlErrorCode {
        PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED
    }
}

ops::function_info_v1!(pg_finfo_vigil_hnsw_handler);

/// The access method's handler: its capabilities and callbacks.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn vigil_hnsw_handler(
    _fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    let mut am = PgBox::<pg_sys::IndexAmRoutine>::alloc_node(pg_sys::NodeTag::T_IndexAmRoutine);
    am.amstrategies = 0;
    am.amsupport = 1;
    am.amoptsprocnum = 0;
    am.amcanorder = false;
    am.amcanorderbyop = true;
    am.amcanbackward = false;
    am.amcanunique = false;
    // Two columns make a partitioned index: `(key bigint, vector)`.
    am.amcanmulticol = true;
    am.amoptionalkey = true;
    am.amsearcharray = false;
    am.amsearchnulls = false;
    am.amstorage = false;
    am.amclusterable = false;
    am.ampredlocks = false;
    am.amcanparallel = false;
    am.amcaninclude = false;
    am.amusemaintenanceworkmem = false;
    am.amparallelvacuumoptions = 0;
    am.amkeytype = pg_sys::InvalidOid;

    am.ambuild = Some(build::ambuild);
    am.ambuildempty = Some(build::ambuildempty);
    am.aminsert = Some(insert::aminsert);
    am.ambulkdelete = Some(vacuum::ambulkdelete);
    am.amvacuumcleanup = Some(vacuum::amvacuumcleanup);
    am.amcostestimate = Some(cost::amcostestimate);
    am.amoptions = Some(amoptions);
    am.ambuildphasename = Some(build::ambuildphasename);
    am.amvalidate = Some(amvalidate);
    am.ambeginscan = Some(scan::ambeginscan);
    am.amrescan = Some(scan::amrescan);
    am.amgettuple = Some(scan::amgettuple);
    am.amendscan = Some(scan::amendscan);
    pg_sys::Datum::from(am.into_pg())
}

/// Operator classes are made by our own script; nothing to validate.
#[pg_guard]
unsafe extern "C-unwind" fn amvalidate(_opclass: pg_sys::Oid) -> bool {
    true
}

extension_sql!(
    "-- The structural check reads a whole index, every tenant's rows of a\n\
     -- shared one included: the owner's and the superuser's, not the application's.\n\
     REVOKE EXECUTE ON FUNCTION vigil.hnsw_check(regclass) FROM PUBLIC;",
    name = "hnsw_check_revoked",
    requires = [hnsw_check]
);

/// `vigil.hnsw_check(index)`: verifies the graph's structure (every link
/// points at an existing element of high enough level, list sizes, levels,
/// vectors, the entry point) and returns its statistics, with how many live
/// elements no search can reach (`VACUUM` links them); an ERROR that
/// names the element and layer when something is wrong. Blocks inserts
/// (not searches) while it runs; works on a hot standby too.
#[pg_extern(volatile, parallel_unsafe)]
fn hnsw_check(index: pgrx::PgRelation) -> pgrx::JsonB {
    let rel = index.as_ptr();
    // SAFETY: rel is open (PgRelation holds AccessShareLock).
    let am = unsafe { (*(*rel).rd_rel).relam };
    // SAFETY: looks up our access method by name.
    let ours = unsafe { pg_sys::get_index_am_oid(c"vigil_hnsw".as_ptr(), false) };
    if am != ours {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            format!("\"{}\" is not a vigil_hnsw index", index.name())
        );
    }
    // A standby cannot take the lock (and has no writers to keep out).
    // SAFETY: plain status query.
    let _lock = (!unsafe { pg_sys::RecoveryInProgress() }).then(|| GraphLock::exclusive(rel));
    let store = PageStore::open(rel);
    let options = CheckOptions {
        require_live_links: false,
        check_vectors: true,
    };
    let check = |graph: &PageStore| {
        let report =
            vigil_hnsw::check(graph, &graph.params(), options).unwrap_or_else(|e| raise(rel, e));
        let unreached = vigil_hnsw::unreached(graph).unwrap_or_else(|e| raise(rel, e));
        (report, unreached.len())
    };
    let mut keys = 0usize;
    let (report, unreachable) = if store.meta.dims == 0 {
        Default::default()
    } else if store.meta.partitioned {
        // Every key's graph on its own: a link to another key's element
        // is a link to an element the graph does not hold.
        let mut total = (vigil_hnsw::CheckReport::default(), 0);
        for (key, members) in store.elements_by_key().unwrap_or_else(|e| raise(rel, e)) {
            keys += 1;
            let graph = PageStore::open(rel)
                .scoped(key, Some(members))
                .unwrap_or_else(|e| raise(rel, e));
            let (r, unreached) = check(&graph);
            total.0.elements += r.elements;
            total.0.deleted += r.deleted;
            total.0.links += r.links;
            if total.0.levels.len() < r.levels.len() {
                total.0.levels.resize(r.levels.len(), 0);
            }
            for (sum, n) in total.0.levels.iter_mut().zip(&r.levels) {
                *sum += n;
            }
            total.1 += unreached;
        }
        total
    } else {
        check(&store)
    };
    pgrx::JsonB(serde_json::json!({
        "elements": report.elements,
        "deleted": report.deleted,
        "links": report.links,
        "unreachable": unreachable,
        "levels": report.levels,
        "dims": store.meta.dims,
        "metric": store.meta.metric.name(),
        "vectors": store.meta.encoding.name(),
        "m": store.meta.m,
        "ef_construction": store.meta.ef_construction,
        "partitioned": store.meta.partitioned,
        "keys": keys,
    }))
}
