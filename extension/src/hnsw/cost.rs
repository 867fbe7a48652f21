//! The planner's cost estimate for a `vigil_hnsw` scan.
//!
//! Only ordered scans can use the index (its operators are ordering
//! operators), so without an `ORDER BY` it is priced out. With one, the
//! startup cost is the first beam search: at most `ef_search * 2m`
//! distance computations (each priced like the operator function, `COST
//! 10`) and the same share of the index's pages, counted at
//! `seq_page_cost` because a graph's upper layers and hot pages stay
//! cached. (The share, not a page per element: a bulk build lays linked
//! elements out together, and an element's page holds its neighbours' codes
//! too.) The rest of the index, should every row be wanted, costs one more
//! distance each and the rest of its pages; the planner adds the heap
//! fetches itself. So `ORDER BY .. LIMIT k` prefers the index, and
//! an unbounded `ORDER BY` over a large table prefers a sort. A partitioned
//! index is priced out unless its key is compared with one value: it
//! holds one graph per key, and a scan walks one.

use pgrx::pg_sys;
use pgrx::prelude::*;

use super::EF_SEARCH;

/// The distance functions' `COST` in schema.sql.
const DISTANCE_PROCOST: f64 = 10.0;

#[pg_guard]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C-unwind" fn amcostestimate(
    _root: *mut pg_sys::PlannerInfo,
    path: *mut pg_sys::IndexPath,
    _loop_count: f64,
    startup: *mut pg_sys::Cost,
    total: *mut pg_sys::Cost,
    selectivity: *mut pg_sys::Selectivity,
    correlation: *mut f64,
    pages: *mut f64,
) {
    let path = &*path;
    let info = &*path.indexinfo;
    *correlation = 0.0;
    *pages = info.pages as f64;
    // A partitioned index answers only for one key (`key = $1`): its
    // first column must be among the path's conditions.
    let keyed = {
        let clauses = pgrx::PgList::<pg_sys::IndexClause>::from_pg(path.indexclauses);
        let keyed = clauses.iter_ptr().any(|c| (*c).indexcol == 0);
        keyed
    };
    let partitioned = info.nkeycolumns == 2;
    if path.indexorderbys.is_null() || (partitioned && !keyed) {
        // The index answers nothing but ORDER BY distance: never a plan,
        // even with every other plan disabled (which only adds 1e10 to
        // theirs; with 1e10 here, `SET enable_seqscan = off` once made
        // `SELECT count(*)` scan the index and count no rows).
        *startup = f64::INFINITY;
        *total = f64::INFINITY;
        *selectivity = 0.0;
        return;
    }
    let tuples = info.tuples.max(1.0);
    let index_pages = (info.pages as f64).max(1.0);
    let m = {
        let rel = pg_sys::index_open(info.indexoid, pg_sys::NoLock as i32);
        let (m, _) = super::options(rel);
        pg_sys::index_close(rel, pg_sys::NoLock as i32);
        m as f64
    };
    let distance = pg_sys::cpu_operator_cost * DISTANCE_PROCOST;
    let ef = f64::from(EF_SEARCH.get().max(1));
    let visited = (ef * 2.0 * m).min(tuples);
    let pages_read = index_pages * visited / tuples;
    *startup = visited * distance + pages_read * pg_sys::seq_page_cost;
    *total = *startup
        + (tuples - visited) * distance
        + (index_pages - pages_read) * pg_sys::seq_page_cost;
    *selectivity = 1.0;
}
