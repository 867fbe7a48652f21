//! The heavyweight locks of the index's writers ([`GraphLock`],
//! [`PlacementLock`]).
//!
//! Inserts run side by side (sharing the graph lock), each new element's
//! slot is chosen and written by one insert at a time (the placement lock),
//! and an insert that may move the entry point or vacuum's repair runs
//! alone. Only the placement lock's holder holds more than one buffer lock
//! at a time (data pages, then the meta page); every other reader and
//! writer holds one at a time, so buffer locks cannot deadlock. Searches
//! take no heavyweight lock.

use pgrx::pg_sys;
use vigil_hnsw_page::META_BLOCK;

/// Heavyweight lock tags of an index (`LockPage` on these numbers; they
/// name locks, not the pages' buffers).
const GRAPH_LOCK_TAG: u32 = META_BLOCK;
const PLACEMENT_LOCK_TAG: u32 = 1;

/// A heavyweight page-number lock on the index, released on drop.
struct TagLock {
    rel: pg_sys::Relation,
    tag: u32,
    mode: u32,
}

impl TagLock {
    fn take(rel: pg_sys::Relation, tag: u32, mode: u32) -> TagLock {
        // SAFETY: rel is open; released in drop or at transaction end.
        unsafe { pg_sys::LockPage(rel, tag, mode as i32) };
        TagLock { rel, tag, mode }
    }
}

impl Drop for TagLock {
    fn drop(&mut self) {
        // SAFETY: taken in `take` with the same tag and mode.
        unsafe { pg_sys::UnlockPage(self.rel, self.tag, self.mode as i32) };
    }
}

/// The graph writers' lock. Inserts share it; an insert that may move the
/// entry point (the first, or one above the entry point's level) and
/// vacuum's repair hold it alone. Searches do not take it.
pub struct GraphLock {
    _lock: TagLock,
}

impl GraphLock {
    pub fn exclusive(rel: pg_sys::Relation) -> GraphLock {
        GraphLock {
            _lock: TagLock::take(rel, GRAPH_LOCK_TAG, pg_sys::ExclusiveLock),
        }
    }

    pub fn share(rel: pg_sys::Relation) -> GraphLock {
        GraphLock {
            _lock: TagLock::take(rel, GRAPH_LOCK_TAG, pg_sys::ShareLock),
        }
    }
}

/// Held from [`PageStore::next_id`](super::store::PageStore::next_id) until
/// the element is written, so that inserts running side by side plan
/// different slots.
pub struct PlacementLock {
    _lock: TagLock,
}

impl PlacementLock {
    pub fn take(rel: pg_sys::Relation) -> PlacementLock {
        PlacementLock {
            _lock: TagLock::take(rel, PLACEMENT_LOCK_TAG, pg_sys::ExclusiveLock),
        }
    }
}
