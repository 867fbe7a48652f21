//! `VACUUM`: elements whose heap rows are dead are marked deleted (so no
//! scan returns them again, even once the heap reuses their TIDs), then the
//! links pointing at them are repaired and they are removed from the graph.
//!
//! Marking goes page by page without the graph writers' lock; the repair
//! ([`vigil_hnsw::repair`]) holds it, so no insert interleaves. Elements
//! deleted by an earlier vacuum that was interrupted are picked up again.
//! Removed elements keep their line pointers, and their pages go into the
//! index's free space map, where a later insert finds a removed element's
//! two items and writes its own over them
//! (`PageStore::remember_removed`): an index that loses and gains rows
//! stays its size. The id then names the new element. A scan that met the
//! old one before the repair and returns it later reads the new element's
//! heap row instead, which its snapshot cannot see: vacuum removed the old
//! row because no snapshot saw it any more, so the scan began before the
//! old element was unlinked, and the new row was written after.
//!
//! Then, with or without deletes, elements that no search can reach are
//! linked again ([`link_unreached`]): inserts strand a few rows far from all
//! others, and a repair can too.

use std::collections::HashSet;

use pgrx::pg_sys;
use pgrx::prelude::*;
use vigil_hnsw::GraphStore;
use vigil_hnsw_page::Tid;

use super::lock::GraphLock;
use super::raise;
use super::store::PageStore;
use crate::pg::relation_name;

#[pg_guard]
pub unsafe extern "C-unwind" fn ambulkdelete(
    info: *mut pg_sys::IndexVacuumInfo,
    stats: *mut pg_sys::IndexBulkDeleteResult,
    callback: pg_sys::IndexBulkDeleteCallback,
    callback_state: *mut std::ffi::c_void,
) -> *mut pg_sys::IndexBulkDeleteResult {
    let index = (*info).index;
    let stats = if stats.is_null() {
        PgBox::<pg_sys::IndexBulkDeleteResult>::alloc0().into_pg()
    } else {
        stats
    };
    let Some(callback) = callback else {
        return stats;
    };
    let mut store = PageStore::open(index);
    let (deleted, live, mut removed_pages) = store.mark_dead(|heap: Tid| {
        let mut tid = pg_sys::ItemPointerData::default();
        pgrx::itemptr::item_pointer_set_all(&mut tid, heap.block, heap.offset);
        // SAFETY: the callback Postgres gave us, with its state.
        unsafe { callback(&mut tid, callback_state) }
    });
    if !deleted.is_empty() {
        let _lock = GraphLock::exclusive(index);
        let store = PageStore::open(index);
        let params = store.params();
        if store.meta.partitioned {
            // Each key's graph repaired on its own, with its elements as
            // listed under the lock (an insert may have linked to a dead one).
            // The deleted elements' keys come with that pass.
            let dead: HashSet<Tid> = deleted.iter().copied().collect();
            for (key, members) in store.elements_by_key().unwrap_or_else(|e| raise(index, e)) {
                let ids: Vec<Tid> = members
                    .iter()
                    .map(|&(id, _)| id)
                    .filter(|id| dead.contains(id))
                    .collect();
                if ids.is_empty() {
                    continue;
                }
                let mut graph = PageStore::open(index)
                    .scoped(key, Some(members))
                    .unwrap_or_else(|e| raise(index, e));
                vigil_hnsw::repair(&mut graph, &params, &ids).unwrap_or_else(|e| raise(index, e));
            }
        } else {
            let mut store = store;
            vigil_hnsw::repair(&mut store, &params, &deleted).unwrap_or_else(|e| raise(index, e));
        }
        removed_pages.extend(deleted.iter().map(|t| t.block));
    }
    store.remember_removed(removed_pages);
    (*stats).tuples_removed += deleted.len() as f64;
    (*stats).num_index_tuples = live as f64;
    (*stats).num_pages =
        pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM);
    stats
}

#[pg_guard]
pub unsafe extern "C-unwind" fn amvacuumcleanup(
    info: *mut pg_sys::IndexVacuumInfo,
    stats: *mut pg_sys::IndexBulkDeleteResult,
) -> *mut pg_sys::IndexBulkDeleteResult {
    if (*info).analyze_only {
        return stats;
    }
    let index = (*info).index;
    let stats = if stats.is_null() {
        // No bulk delete ran (nothing dead): the walk counts the live
        // elements as it goes (the heap's row count sizes it); only when it
        // is skipped are they counted here.
        let stats = PgBox::<pg_sys::IndexBulkDeleteResult>::alloc0().into_pg();
        let estimate = (*info).num_heap_tuples.max(0.0) as usize;
        let live = match link_unreached(index, estimate) {
            Some(report) => report.live,
            None => {
                let mut live = 0usize;
                PageStore::open(index)
                    .for_each_element(&mut |_, meta| live += usize::from(!meta.deleted))
                    .unwrap_or_else(|e| raise(index, e));
                live
            }
        };
        (*stats).num_index_tuples = live as f64;
        stats
    } else {
        link_unreached(index, (*stats).num_index_tuples as usize);
        stats
    };
    (*stats).num_pages =
        pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM);
    stats
}

/// Bytes [`vigil_hnsw::link_unreached`] holds per live element, rounded up:
/// a set entry and a map entry of 6-byte ids in hash tables up to half
/// empty, and the list of live ids.
const REACH_BYTES_PER_ELEMENT: usize = 64;

/// Links the elements of `index` (about `live` of them) that no search can
/// reach, under the graph's shared lock, so inserts go on; the server log
/// says how many. Skipped (`None`), and logged, when its memory would exceed
/// `maintenance_work_mem`. Also run at the end of a build that did not fit
/// in memory.
pub(super) fn link_unreached(
    index: pg_sys::Relation,
    live: usize,
) -> Option<vigil_hnsw::ReachReport> {
    // SAFETY: a plain read of a GUC variable in this backend.
    let limit = unsafe { pg_sys::maintenance_work_mem } as usize;
    if live.saturating_mul(REACH_BYTES_PER_ELEMENT) > limit.saturating_mul(1024) {
        log!(
            "vigil_hnsw index \"{}\": {live} elements need more than maintenance_work_mem ({limit} kB) to find any no search reaches; not looked for",
            relation_name(index)
        );
        return None;
    }
    let _lock = GraphLock::share(index);
    let mut store = PageStore::open(index);
    let params = store.params();
    let report = if store.meta.partitioned {
        let mut total = vigil_hnsw::ReachReport::default();
        for (key, members) in store.elements_by_key().unwrap_or_else(|e| raise(index, e)) {
            let mut graph = PageStore::open(index)
                .scoped(key, Some(members))
                .unwrap_or_else(|e| raise(index, e));
            let r =
                vigil_hnsw::link_unreached(&mut graph, &params).unwrap_or_else(|e| raise(index, e));
            total.live += r.live;
            total.unreached += r.unreached;
            total.linked += r.linked;
            total.left += r.left;
            total.walks += r.walks;
        }
        total
    } else {
        vigil_hnsw::link_unreached(&mut store, &params).unwrap_or_else(|e| raise(index, e))
    };
    if report.unreached > 0 {
        log!(
            "vigil_hnsw index \"{}\": {} of {} elements were reached by no search; {} links added, {} still unreached",
            relation_name(index),
            report.unreached,
            report.live,
            report.linked,
            report.left
        );
    }
    Some(report)
}
