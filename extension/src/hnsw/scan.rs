//! Index scans: `ORDER BY col <op> $1 [LIMIT k]`.
//!
//! The first `vigil.hnsw_ef_search` rows are the best of one beam search
//! keeping twice as many candidates;
//! with `vigil.hnsw_iterative_scan` on (the default, `strict`) the scan then
//! keeps widening, so a selective `WHERE` clause that rejects most of the
//! nearest rows still yields its `LIMIT`, up to
//! `vigil.hnsw_max_scan_tuples` visited elements.
//!
//! An index that holds f32 vectors reports exact distances. One that holds
//! unit vectors in half precision (cosine, layout version 2) reports each
//! distance minus [`unit_half_cosine_error`], a lower bound of the exact
//! one, and sets `xs_recheckorderby`: the executor computes the exact
//! distance of each row from the table and returns rows in that order,
//! holding a row back until no later one can come before it (as for
//! GiST's lossy distances). The bound is the same for every row of a scan,
//! so the bounds come in the order of the distances the graph saw.

use std::cell::RefCell;

use pgrx::pg_sys;
use pgrx::prelude::*;
use vigil_hnsw::distance::unit_half_cosine_error;
use vigil_hnsw::{IterativeScan, ScanMemory, ScanOrder};
use vigil_hnsw_page::{Encoding, Tid};

use super::store::PageStore;
use super::{ops, raise, IterativeScanSetting, EF_SEARCH, ITERATIVE_SCAN, MAX_SCAN_TUPLES};

thread_local! {
    /// The memory of this backend's last finished scan, which the next scan
    /// starts in ([`ScanMemory`]): a backend runs one query after another.
    /// Scans open at once (a join of two) take it in turn; the others
    /// allocate their own.
    static SPARE: RefCell<Option<ScanMemory<Tid>>> = const { RefCell::new(None) };
}

/// Most bytes of scan memory a backend keeps between scans: a scan that
/// grew past it (a long iterative scan) gives its memory back.
const SPARE_BYTES: usize = 1 << 20;

/// Ends `state`'s scan, if any, keeping its memory for the next.
fn finish(state: &mut ScanState) {
    if let Some(scan) = state.scan.take() {
        let memory = scan.into_memory();
        if memory.bytes() <= SPARE_BYTES {
            SPARE.set(Some(memory));
        }
    }
}

/// Per-scan state, in `scan->opaque`; dropped with the scan's memory context.
struct ScanState {
    /// Opened by each rescan (one read of the meta page per scan).
    store: Option<PageStore>,
    query: Option<Vec<f32>>,
    scan: Option<IterativeScan<Tid>>,
    /// Subtracted from each distance to report a lower bound, for indexes
    /// whose distances are not exact; `None` when they are.
    lower_by: Option<f64>,
    returned: usize,
    ef: usize,
    setting: IterativeScanSetting,
    max_visited: usize,
}

#[pg_guard]
pub unsafe extern "C-unwind" fn ambeginscan(
    index: pg_sys::Relation,
    nkeys: i32,
    norderbys: i32,
) -> pg_sys::IndexScanDesc {
    let scan = pg_sys::RelationGetIndexScan(index, nkeys, norderbys);
    // The AM provides the slots for ORDER BY values (as GiST does).
    let slots = norderbys.max(1) as usize;
    (*scan).xs_orderbyvals =
        pg_sys::palloc0(slots * std::mem::size_of::<pg_sys::Datum>()) as *mut pg_sys::Datum;
    (*scan).xs_orderbynulls = pg_sys::palloc0(slots * std::mem::size_of::<bool>()) as *mut bool;
    let state = ScanState {
        store: None,
        query: None,
        scan: None,
        lower_by: None,
        returned: 0,
        ef: EF_SEARCH.get().max(1) as usize,
        setting: ITERATIVE_SCAN.get(),
        max_visited: MAX_SCAN_TUPLES.get().max(1) as usize,
    };
    (*scan).opaque = pgrx::PgMemoryContexts::CurrentMemoryContext.leak_and_drop_on_delete(state)
        as *mut std::ffi::c_void;
    scan
}

#[pg_guard]
pub unsafe extern "C-unwind" fn amrescan(
    scan: pg_sys::IndexScanDesc,
    keys: pg_sys::ScanKey,
    nkeys: i32,
    orderbys: pg_sys::ScanKey,
    norderbys: i32,
) {
    let scan = &mut *scan;
    if !keys.is_null() && nkeys > 0 {
        std::ptr::copy(keys, scan.keyData, nkeys as usize);
    }
    if !orderbys.is_null() && norderbys > 0 {
        std::ptr::copy(orderbys, scan.orderByData, norderbys as usize);
    }
    let state = &mut *(scan.opaque as *mut ScanState);
    finish(state);
    state.returned = 0;
    state.store = None;
    state.query = None;
    if scan.numberOfOrderBys == 0 {
        return;
    }
    let key = &*scan.orderByData;
    if key.sk_flags & pg_sys::SK_ISNULL as i32 != 0 {
        return;
    }
    let index = scan.indexRelation;
    let query = ops::vector_from_datum(key.sk_argument)
        .unwrap_or_else(|e| raise(index, format!("query vector: {e}")));
    let mut store = PageStore::open_for_scan(index);
    if super::partitioned(index) {
        // The graph of the key the scan asks for (`key = $1`): the planner
        // offers the index to no query without one (cost.rs).
        let keys = std::slice::from_raw_parts(scan.keyData, scan.numberOfKeys.max(0) as usize);
        let Some(wanted) = keys.iter().find(|k| k.sk_attno == 1) else {
            raise(
                index,
                "a scan of a partitioned vigil_hnsw index needs its first column compared with = to one value",
            );
        };
        if wanted.sk_flags & pg_sys::SK_ISNULL as i32 != 0 {
            // `key = NULL`: no rows.
            return;
        }
        // `key = 3` compares with an integer: the datum of the type it names.
        let raw = wanted.sk_argument.value();
        let key = match wanted.sk_subtype {
            pg_sys::INT4OID => raw as i32 as i64,
            pg_sys::INT2OID => raw as i16 as i64,
            _ => raw as i64,
        };
        store = store.scoped(key, None).unwrap_or_else(|e| raise(index, e));
    }
    let store = state.store.insert(store);
    let dims = store.meta.dims as usize;
    if dims != 0 && query.len() != dims {
        raise(
            index,
            format!(
                "the query vector has {} dimensions, the index holds vectors of {dims}",
                query.len()
            ),
        );
    }
    state.lower_by = match store.meta.encoding {
        Encoding::F32 => None,
        Encoding::UnitF16 | Encoding::UnitF16Coded => {
            Some(f64::from(unit_half_cosine_error(query.len())))
        }
    };
    state.query = Some(query.to_vec());
}

#[pg_guard]
pub unsafe extern "C-unwind" fn amgettuple(
    scan: pg_sys::IndexScanDesc,
    _dir: pg_sys::ScanDirection::Type,
) -> bool {
    let scan = &mut *scan;
    let index = scan.indexRelation;
    let state = &mut *(scan.opaque as *mut ScanState);
    let (Some(query), Some(store)) = (&state.query, &state.store) else {
        // No ORDER BY value (NULL) or an empty index: no rows in index order.
        return false;
    };
    if store.meta.dims == 0 {
        return false;
    }
    let params = store.params();
    if state.scan.is_none() {
        count_scan(index);
        // Off still scans in strict order; it only stops after ef rows.
        let order = state.setting.order().unwrap_or(ScanOrder::Strict);
        let memory = SPARE.take().unwrap_or_default();
        let mut s = IterativeScan::reusing(memory, store, &params, query, state.ef, order)
            .unwrap_or_else(|e| raise(index, e));
        if state.lower_by.is_some() {
            // The executor re-ranks, reading a few rows past the LIMIT.
            s.return_whole_first_beam();
        }
        state.scan = Some(s);
    }
    let Some(iter) = state.scan.as_mut() else {
        return false;
    };
    let limited = match state.setting.order() {
        None => state.returned >= state.ef,
        Some(_) => state.returned >= state.ef && iter.visited() >= state.max_visited,
    };
    if limited {
        return false;
    }
    pgrx::check_for_interrupts!();
    let Some((dist, id)) = iter.next(store).unwrap_or_else(|e| raise(index, e)) else {
        return false;
    };
    let heap = store.header(id).unwrap_or_else(|e| raise(index, e)).heap;
    state.returned += 1;
    pgrx::itemptr::item_pointer_set_all(&mut scan.xs_heaptid, heap.block, heap.offset);
    let reported = f64::from(dist) - state.lower_by.unwrap_or(0.0);
    *scan.xs_orderbyvals = pg_sys::Datum::from(reported.to_bits());
    *scan.xs_orderbynulls = false;
    scan.xs_recheckorderby = state.lower_by.is_some();
    scan.xs_recheck = false;
    true
}

/// Counts a scan of the index in its statistics (`idx_scan` of
/// `pg_stat_user_indexes`), as PostgreSQL's `pgstat_count_index_scan` does
/// for its own access methods; that is a macro, so it is spelled out here.
///
/// # Safety
/// `index` is an open relation.
unsafe fn count_scan(index: pg_sys::Relation) {
    if (*index).pgstat_info.is_null() {
        if !(*index).pgstat_enabled {
            return;
        }
        pg_sys::pgstat_assoc_relation(index);
    }
    if let Some(stats) = (*index).pgstat_info.as_mut() {
        stats.t_counts.t_numscans += 1;
    }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn amendscan(scan: pg_sys::IndexScanDesc) {
    let state = &mut *((*scan).opaque as *mut ScanState);
    // The scan's memory goes to the next scan; the rest with the memory context.
    finish(state);
    state.query = None;
}
