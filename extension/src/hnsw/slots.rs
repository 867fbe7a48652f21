//! Where a new element's two items go: over the items of an element vacuum
//! removed, on a page it offered through the free space map, or after the
//! last items. Chosen and written under the [`PlacementLock`], so inserts
//! running side by side plan different slots.

use pgrx::pg_sys;
use vigil_hnsw_page::{self as page, ElementHeader, Filler, Tid, KIND_ELEMENT, META_BLOCK};

use super::buffer::Locked;
use super::items::{free_space, item};
use super::lock::PlacementLock;
use super::meta::read_meta;
use super::store::PageStore;

/// Where an insert's two items go: new items, or over the two items of a
/// removed element (`reuse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Placement {
    pub(super) element: Tid,
    pub(super) neighbours: Tid,
    pub(super) reuse: bool,
}

/// What vacuum records in the free space map for a page holding a removed
/// element, and what an insert asks it for: a mark, not a byte count (an
/// element takes the removed one's items, whatever the page's free space).
const REUSABLE_MARK: usize = page::BLOCK_SIZE / 2;

/// Pages the free space map offers an insert before it appends instead:
/// each offered page without a removed element left is cleared from the
/// map; one whose removed elements' items are too small for the new one's
/// level ends the search.
const REUSE_TRIES: usize = 4;

impl PageStore {
    /// Where an element of `level` would go now. Deterministic while the
    /// caller holds the [`PlacementLock`]: only its holder adds items.
    fn plan(&self, level: usize) -> Placement {
        let (elen, nlen) = (self.meta.element_len(), self.meta.lists().size(level));
        if let Some(slot) = self.removed_slot(elen, nlen) {
            return slot;
        }
        let nblocks = self.nblocks();
        let block = self.meta.insert_block;
        let mut filler = if block > META_BLOCK && block + 1 == nblocks {
            let locked = Locked::share(self.rel, block);
            // SAFETY: locked page.
            unsafe {
                Filler::resume(
                    block,
                    pg_sys::PageGetMaxOffsetNumber(locked.page()),
                    free_space(locked.page()),
                )
            }
        } else {
            // No data page yet (or the insert page is not the last one):
            // start a new page at the end.
            Filler::full(nblocks.max(1) - 1)
        };
        let (element, neighbours, _) = filler.place(elen, nlen);
        Placement {
            element,
            neighbours,
            reuse: false,
        }
    }

    /// The slot of a removed element that an element with items of `elen`
    /// and `nlen` bytes can take in place, on a page the free space map
    /// offers ([`PageStore::remember_removed`]): an element item of the
    /// same size (always, in one index), and room for the new neighbour item
    /// where the old one is (on the same page or, where the build or an
    /// insert split the two, the next).
    fn removed_slot(&self, elen: usize, nlen: usize) -> Option<Placement> {
        let nblocks = self.nblocks();
        let fits = |page: pg_sys::Page, at: Tid| -> bool {
            // SAFETY: the caller holds `page` locked; the slice is dropped here.
            let (old, free) = unsafe { (item(page, at.block, at.offset), free_space(page)) };
            old.is_ok_and(|old| page::maxalign(nlen) <= page::maxalign(old.len()) + free)
        };
        for _ in 0..REUSE_TRIES {
            // SAFETY: a lookup in the index's free space map.
            let block = unsafe { pg_sys::GetPageWithFreeSpace(self.rel, REUSABLE_MARK) };
            if block == pg_sys::InvalidBlockNumber || block == META_BLOCK || block >= nblocks {
                return None;
            }
            let (mut split, mut removed) = (Vec::new(), false);
            {
                let locked = Locked::share(self.rel, block);
                let page = locked.page();
                // SAFETY: locked page; slices dropped before the lock.
                let max = unsafe { pg_sys::PageGetMaxOffsetNumber(page) };
                for offset in 1..=max {
                    // SAFETY: as above.
                    let Ok(bytes) = (unsafe { item(page, block, offset) }) else {
                        continue;
                    };
                    if bytes.first() != Some(&KIND_ELEMENT) || bytes.len() != elen {
                        continue;
                    }
                    let Ok(h) = ElementHeader::decode(bytes) else {
                        continue;
                    };
                    if !h.removed() {
                        continue;
                    }
                    removed = true;
                    let element = Tid { block, offset };
                    if h.neighbours.block != block {
                        split.push((element, h.neighbours));
                    } else if fits(page, h.neighbours) {
                        return Some(Placement {
                            element,
                            neighbours: h.neighbours,
                            reuse: true,
                        });
                    }
                }
            }
            // The other page is locked alone: the slot stays removed and
            // ours while the placement lock is held.
            for (element, neighbours) in split {
                if neighbours.block < nblocks
                    && fits(Locked::share(self.rel, neighbours.block).page(), neighbours)
                {
                    return Some(Placement {
                        element,
                        neighbours,
                        reuse: true,
                    });
                }
            }
            if removed {
                // Its slots are too small for this element's level; the
                // next element, most likely of level 0, takes one.
                return None;
            }
            // SAFETY: a free space map update (a hint, not WAL-logged).
            unsafe { pg_sys::RecordPageWithFreeSpace(self.rel, block, 0) };
        }
        None
    }

    /// Offers `blocks`, pages holding removed (unlinked) elements, to later
    /// inserts through the index's free space map; called by vacuum once per
    /// pass, for the elements it removed and those removed before.
    pub fn remember_removed(&self, mut blocks: Vec<u32>) {
        blocks.sort_unstable();
        blocks.dedup();
        for &block in &blocks {
            // SAFETY: a free space map update.
            unsafe { pg_sys::RecordPageWithFreeSpace(self.rel, block, REUSABLE_MARK) };
        }
        if !blocks.is_empty() {
            // SAFETY: propagates the pages' entries up the map's tree.
            unsafe { pg_sys::IndexFreeSpaceMapVacuum(self.rel) };
        }
    }

    /// The id the next inserted element of `level` (heap row `heap`) gets;
    /// its placement is kept for `insert_element`, which `add_item` checks,
    /// with the [`PlacementLock`], held until that write.
    pub fn next_id(&mut self, placing: PlacementLock, level: usize, heap: Tid) -> Tid {
        // Another insert may have filled the insert page since `open`.
        self.meta = read_meta(self.rel);
        let plan = self.plan(level);
        self.pending.set(Some((plan, heap, placing)));
        plan.element
    }
}
