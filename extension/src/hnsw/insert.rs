//! Inserting one row after the build (and during a build that ran out of
//! `maintenance_work_mem`).
//!
//! Inserts run side by side: each searches the graph for its neighbours
//! under a shared graph lock, takes the placement lock only to choose and
//! write its element's slot, then links back from its neighbours by compare
//! and replace, so two inserts into one list both land. An insert that may
//! set the dimensions or raise the entry point runs alone ([`GraphLock`]).
//! Searches run alongside. Each page change is its own WAL record; a crash
//! between them leaves a valid graph (see [`super::store`], [`super::lock`]).

use std::cell::RefCell;

use pgrx::pg_sys;
use pgrx::prelude::*;
use vigil_hnsw::{plan_links, write_element, LevelRng};
use vigil_hnsw_page::{self as page, Tid};

use super::lock::{GraphLock, PlacementLock};
use super::meta;
use super::store::PageStore;
use super::{ops, raise};

thread_local! {
    /// Levels are drawn per backend, seeded from the strong random source.
    static LEVELS: RefCell<Option<LevelRng>> = const { RefCell::new(None) };
}

#[pg_guard]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C-unwind" fn aminsert(
    index: pg_sys::Relation,
    values: *mut pg_sys::Datum,
    isnull: *mut bool,
    heap_tid: pg_sys::ItemPointer,
    _heap: pg_sys::Relation,
    _check_unique: pg_sys::IndexUniqueCheck::Type,
    _unchanged: bool,
    _info: *mut pg_sys::IndexInfo,
) -> bool {
    let Some((key, datum)) = super::row_key(index, values, isnull) else {
        return false;
    };
    let vector = ops::vector_from_datum(datum).unwrap_or_else(|e| raise(index, e));
    let (block, offset) = pgrx::itemptr::item_pointer_get_both(*heap_tid);
    insert_vector(index, Tid { block, offset }, key, vector);
    false
}

/// Adds one heap row's vector to the graph (to `key`'s, in a partitioned index).
pub fn insert_vector(index: pg_sys::Relation, heap: Tid, key: Option<i64>, vector: &[f32]) {
    let open = || {
        let store = PageStore::open(index);
        match key {
            Some(key) => store.scoped(key, None).unwrap_or_else(|e| raise(index, e)),
            None => store,
        }
    };
    let mut store = open();
    let level = LEVELS.with_borrow_mut(|rng| {
        rng.get_or_insert_with(|| {
            LevelRng::new(u64::from_ne_bytes(crate::pg::strong_random::<8>(
                "vigil_hnsw levels",
            )))
        })
        .level(&store.params())
    });
    // Alone when this insert may set the dimensions or move the entry
    // point; otherwise beside other inserts. Checked again once locked: a
    // vacuum may have moved the entry point down meanwhile.
    let alone = |store: &PageStore| {
        store.meta.dims == 0
            || store
                .entry_as_opened()
                .unwrap_or_else(|e| raise(index, e))
                .is_none_or(|(_, top)| level as u32 > top)
    };
    let _lock = if alone(&store) {
        GraphLock::exclusive(index)
    } else {
        let shared = GraphLock::share(index);
        store = open();
        if alone(&store) {
            drop(shared);
            GraphLock::exclusive(index)
        } else {
            shared
        }
    };
    store = open();
    if store.meta.dims == 0 {
        // The first vector fixes the dimensions (page writes are not undone
        // by a rollback, so only a vector that will be accepted may decide).
        if vector.iter().any(|x| !x.is_finite()) {
            raise(index, "invalid vector: it contains NaN or infinity");
        }
        if vector.len() > page::MAX_DIMS {
            raise(
                index,
                format!(
                    "vectors of {} dimensions exceed the maximum of {}",
                    vector.len(),
                    page::MAX_DIMS
                ),
            );
        }
        meta::update_meta(index, |meta| {
            meta.dims = vector.len() as u32;
            meta.encoding = meta.encoding.settle(vector.len());
        });
        store.meta = meta::read_meta(index);
    }
    if vector.len() != store.meta.dims as usize {
        raise(
            index,
            format!(
                "row {heap:?} has {} dimensions, the index holds vectors of {}",
                vector.len(),
                store.meta.dims
            ),
        );
    }
    let params = store.params();
    if !params.indexes(vector) {
        return;
    }
    // Neighbours are chosen by the vector as it will be stored (so a copy
    // of a stored vector is at distance 0 from it); the store encodes the
    // vector as given, as the build does.
    let stored = store.meta.encoding.stored_form(vector);
    let lists = plan_links(&store, &params, &stored, level).unwrap_or_else(|e| raise(index, e));
    let id = store.next_id(PlacementLock::take(index), level, heap);
    write_element(&mut store, &params, id, vector, level, &lists)
        .unwrap_or_else(|e| raise(index, e));
}
