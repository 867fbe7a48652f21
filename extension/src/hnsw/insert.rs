//! Inserting one row after the build (and during a build that ran out of
//! `maintenance_work_mem`).
//!
//! Inserts hold the graph writers' lock ([`GraphLock`]) for the whole
//! insert: the new element's slot is known before it is written, and the
//! read-modify-write of each neighbour's list cannot lose a concurrent
//! writer's link. Searches run alongside. Each page change is its own WAL
//! record; a crash between them leaves a valid graph (see [`super::store`]).

use std::cell::RefCell;

use pgrx::pg_sys;
use pgrx::prelude::*;
use vigil_hnsw::{insert_with_level, LevelRng};

use super::page::{self, Tid};
use super::store::{self, GraphLock, PageStore};
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
    if *isnull {
        return false;
    }
    let vector = ops::vector_from_datum(*values).unwrap_or_else(|e| raise(index, e));
    let (block, offset) = pgrx::itemptr::item_pointer_get_both(*heap_tid);
    insert_vector(index, Tid { block, offset }, vector);
    false
}

/// Adds one heap row's vector to the graph.
pub fn insert_vector(index: pg_sys::Relation, heap: Tid, vector: &[f32]) {
    let _lock = GraphLock::exclusive(index);
    let mut store = PageStore::open(index);
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
        store::update_meta(index, |meta| meta.dims = vector.len() as u32);
        store.meta.dims = vector.len() as u32;
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
    let level = LEVELS.with_borrow_mut(|rng| {
        rng.get_or_insert_with(|| {
            LevelRng::new(u64::from_ne_bytes(crate::pg::strong_random::<8>(
                "vigil_hnsw levels",
            )))
        })
        .level(&params)
    });
    let id = store.next_id(level, heap);
    insert_with_level(&mut store, &params, id, vector, level).unwrap_or_else(|e| raise(index, e));
}
