//! [`PageStore`]: the graph algorithm's storage trait over the index's pages.
//!
//! Reads pin and share-lock one page at a time and never hold two, so they
//! cannot deadlock with anything. Every write is one generic WAL record
//! (`GenericXLogStart` .. `GenericXLogFinish`) covering every page it
//! touches, so each write is atomic on crash and replayed on replicas.
//!
//! Writers take heavyweight locks ([`GraphLock`], [`PlacementLock`]):
//! inserts run side by side (sharing the graph lock), each new element's
//! slot is chosen and written by one insert at a time (the placement lock),
//! and an insert that may move the entry point or vacuum's repair runs
//! alone. A list another insert may be changing is updated by compare and
//! replace under the page's exclusive lock ([`GraphStore::replace_neighbours`]),
//! so no link is lost. Only the placement lock's holder holds more than one
//! buffer lock at a time (data pages, then the meta page); every other
//! reader and writer holds one at a time, so buffer locks cannot deadlock.
//! Searches take no heavyweight lock: they see each page either before or
//! after a write, and a graph half-way through an insert is still a valid
//! graph (the new element is written before anything links to it).

use std::cell::{Cell, RefCell};

use pgrx::pg_sys;
use pgrx::prelude::*;
use vigil_hnsw::distance::{prefetch, prefetch_bytes};
use vigil_hnsw::store::{Code, ElementVisitor, VectorRef};
use vigil_hnsw::{ElementMeta, EntryPoint, GraphStore, Params};
use vigil_hnsw_page::{
    self as page, element_size, ElementHeader, Encoding, Filler, Meta, Opaque, Tid, FLAG_DELETED,
    FLAG_REMOVED, KIND_ELEMENT, META_BLOCK, META_SIZE, PAGE_DATA, PAGE_HEADER, PAGE_ID, PAGE_META,
};

// The sizes the layout takes from Postgres' headers are this server's.
const _: () = {
    assert!(page::BLOCK_SIZE == pg_sys::BLCKSZ as usize);
    // SAFETY: a const offset_of, no pointer is read.
    assert!(PAGE_HEADER == unsafe { pg_sys::SizeOfPageHeaderData() });
    assert!(page::LINE_POINTER == size_of::<pg_sys::ItemIdData>());
    assert!(page::maxalign(1) == pg_sys::MAXIMUM_ALIGNOF as usize);
    assert!(page::SPECIAL_SIZE == page::maxalign(page::SPECIAL_SIZE));
};

/// A page that does not hold what the graph says it should.
#[derive(Debug)]
pub struct PageError(pub String);

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PageError {}

/// ERROR XX002 (index_corrupted): the metapage does not hold what it must.
fn corrupted(e: &dyn std::fmt::Display) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
        format!("vigil_hnsw: {e}")
    );
}

fn err<T>(at: Tid, what: impl std::fmt::Display) -> Result<T, PageError> {
    Err(PageError(format!("item {at:?}: {what}")))
}

/// A pinned, content-locked buffer; unlocked and unpinned on drop.
pub struct Locked {
    buf: pg_sys::Buffer,
}

thread_local! {
    /// Per index (by its file), the buffer where this backend last found
    /// each block: see [`pin`].
    static RECENT: RefCell<Vec<(pg_sys::RelFileNode, Vec<pg_sys::Buffer>)>> =
        const { RefCell::new(Vec::new()) };
}

/// Indexes whose recent buffers a backend remembers, and blocks per index.
const RECENT_INDEXES: usize = 8;
const RECENT_BLOCKS: u32 = 1 << 22;

/// Pins `block` of `rel`. A scan visits a thousand or so elements, each a
/// page lookup in the shared buffer table (hash and partition lock: a
/// fifth of a scan in a profile). So the backend remembers where it last
/// found each block and first asks `ReadRecentBuffer`, which pins that
/// buffer if it still holds the block (it checks the buffer's tag) with no
/// table lookup; otherwise `ReadBuffer` as usual. A stale hint (the block
/// evicted, the index dropped or rewritten) only costs the fallback.
fn pin(rel: pg_sys::Relation, block: u32) -> pg_sys::Buffer {
    const INVALID: pg_sys::Buffer = pg_sys::InvalidBuffer as pg_sys::Buffer;
    // SAFETY: rel is an open relation.
    let node = unsafe { (*rel).rd_node };
    let same = |a: &pg_sys::RelFileNode| {
        (a.spcNode, a.dbNode, a.relNode) == (node.spcNode, node.dbNode, node.relNode)
    };
    let recent = RECENT.with_borrow(|all| {
        all.iter()
            .find(|(n, _)| same(n))
            .and_then(|(_, bufs)| bufs.get(block as usize).copied())
            .unwrap_or(INVALID)
    });
    // SAFETY: any buffer number is accepted; the tag is checked under its header lock.
    if recent != INVALID
        && unsafe {
            pg_sys::ReadRecentBuffer(node, pg_sys::ForkNumber::MAIN_FORKNUM, block, recent)
        }
    {
        return recent;
    }
    // SAFETY: rel is open; ReadBuffer errors out on a bad block.
    let buf = unsafe { pg_sys::ReadBuffer(rel, block) };
    if block < RECENT_BLOCKS {
        RECENT.with_borrow_mut(|all| {
            let at = match all.iter().position(|(n, _)| same(n)) {
                Some(at) => at,
                None => {
                    if all.len() >= RECENT_INDEXES {
                        all.remove(0);
                    }
                    all.push((node, Vec::new()));
                    all.len() - 1
                }
            };
            let bufs = &mut all[at].1;
            if bufs.len() <= block as usize {
                bufs.resize(block as usize + 1, INVALID);
            }
            bufs[block as usize] = buf;
        });
    }
    buf
}

impl Locked {
    fn lock(rel: pg_sys::Relation, block: u32, mode: u32) -> Locked {
        Locked::pinned(pin(rel, block), mode)
    }

    /// Locks a buffer the caller has pinned; the pin passes to the result.
    fn pinned(buf: pg_sys::Buffer, mode: u32) -> Locked {
        // SAFETY: the caller pinned `buf` (ReadBuffer) and hands the pin over.
        unsafe { pg_sys::LockBuffer(buf, mode as i32) };
        Locked { buf }
    }

    pub fn share(rel: pg_sys::Relation, block: u32) -> Locked {
        Locked::lock(rel, block, pg_sys::BUFFER_LOCK_SHARE)
    }

    pub fn exclusive(rel: pg_sys::Relation, block: u32) -> Locked {
        Locked::lock(rel, block, pg_sys::BUFFER_LOCK_EXCLUSIVE)
    }

    /// A new page at the end of the relation, exclusively locked.
    pub fn extend(rel: pg_sys::Relation) -> Locked {
        // SAFETY: the extension lock serialises extenders, as Postgres requires.
        unsafe {
            pg_sys::LockRelationForExtension(rel, pg_sys::ExclusiveLock as i32);
            let buf = pg_sys::ReadBufferExtended(
                rel,
                pg_sys::ForkNumber::MAIN_FORKNUM,
                pg_sys::InvalidBlockNumber,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                std::ptr::null_mut(),
            );
            pg_sys::UnlockRelationForExtension(rel, pg_sys::ExclusiveLock as i32);
            pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_EXCLUSIVE as i32);
            Locked { buf }
        }
    }

    pub fn block(&self) -> u32 {
        // SAFETY: the buffer is pinned.
        unsafe { pg_sys::BufferGetBlockNumber(self.buf) }
    }

    pub fn page(&self) -> pg_sys::Page {
        // SAFETY: the buffer is pinned.
        unsafe { pg_sys::BufferGetPage(self.buf) }
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        // SAFETY: we hold the pin and the content lock taken in `lock`.
        unsafe { pg_sys::UnlockReleaseBuffer(self.buf) }
    }
}

/// The address of item `offset`'s line pointer on `page`, if in range.
fn line_pointer(page: pg_sys::Page, offset: u16) -> Option<*const u32> {
    if offset == 0 || usize::from(offset) > page::BLOCK_SIZE / 4 {
        return None;
    }
    Some(
        (page as *const u8).wrapping_add(PAGE_HEADER + 4 * (usize::from(offset) - 1)) as *const u32,
    )
}

/// Prefetches all of item `offset` (header and vector: prefetching only
/// its first 256 bytes and leaving the rest to the hardware prefetcher
/// gave 0.69x the queries/s, A/B in one cluster). The line
/// pointer is read without the content lock, as a hint only: a concurrent
/// change can at worst send the prefetch to the wrong address; the item is
/// read for real under the lock.
///
/// # Safety
/// `page` must be a pinned buffer's page.
unsafe fn prefetch_item(page: pg_sys::Page, offset: u16) {
    let Some(line) = line_pointer(page, offset) else {
        return;
    };
    // ItemIdData: lp_off is the low 15 bits, lp_len the top 15.
    let word = std::ptr::read_volatile(line);
    let off = (word & 0x7FFF) as usize;
    let len = (word >> 17) as usize;
    if off + len <= page::BLOCK_SIZE {
        prefetch_bytes((page as *const u8).add(off), len);
    }
}

/// Bytes of item `offset` on `page`, checked against the line pointer array.
///
/// # Safety
/// `page` must be a valid, locked page that outlives the returned slice.
pub unsafe fn item<'a>(
    page: pg_sys::Page,
    block: u32,
    offset: u16,
) -> Result<&'a mut [u8], PageError> {
    let at = Tid { block, offset };
    let max = pg_sys::PageGetMaxOffsetNumber(page);
    if offset == 0 || offset > max {
        return err(at, format!("no such item (the page has {max})"));
    }
    let id = pg_sys::PageGetItemId(page, offset);
    if (*id).lp_flags() != pg_sys::LP_NORMAL {
        return err(at, "unused line pointer");
    }
    let (off, len) = ((*id).lp_off() as usize, (*id).lp_len() as usize);
    if off + len > page::BLOCK_SIZE {
        return err(at, "line pointer runs past the page");
    }
    Ok(std::slice::from_raw_parts_mut(
        (page as *mut u8).add(off),
        len,
    ))
}

/// Free bytes between the line pointers and the items.
///
/// # Safety
/// `page` must be a valid, locked page.
pub unsafe fn free_space(page: pg_sys::Page) -> usize {
    let header = page as *const pg_sys::PageHeaderData;
    usize::from((*header).pd_upper).saturating_sub(usize::from((*header).pd_lower))
}

/// Adds `bytes` as the next item of `page`; errors if Postgres put it at
/// another offset than `expect` (the layout would then lie).
///
/// # Safety
/// `page` must be a page image being modified under an exclusive lock.
pub unsafe fn add_item(page: pg_sys::Page, expect: Tid, bytes: &[u8]) -> Result<(), PageError> {
    let got = pg_sys::PageAddItemExtended(
        page,
        bytes.as_ptr() as pg_sys::Item,
        bytes.len(),
        pg_sys::InvalidOffsetNumber,
        0,
    );
    if got != expect.offset {
        return err(expect, format!("Postgres placed the item at offset {got}"));
    }
    Ok(())
}

/// Writes `bytes` over item `at` of `page`, which may change its size.
///
/// # Safety
/// `page` must be a page image being modified under an exclusive lock.
pub unsafe fn overwrite_item(page: pg_sys::Page, at: Tid, bytes: &[u8]) -> Result<(), PageError> {
    if !pg_sys::PageIndexTupleOverwrite(
        page,
        at.offset,
        bytes.as_ptr() as pg_sys::Item,
        bytes.len(),
    ) {
        return err(at, "no room to overwrite the item");
    }
    Ok(())
}

/// Initialises a data page (inside a WAL record's page image).
///
/// # Safety
/// `page` must be a page image being modified under an exclusive lock.
pub unsafe fn init_page(page: pg_sys::Page, kind: u16) {
    pg_sys::PageInit(page, page::BLOCK_SIZE, page::SPECIAL_SIZE);
    let special = std::slice::from_raw_parts_mut(pg_sys::PageGetSpecialPointer(page) as *mut u8, 8);
    Opaque {
        page_id: PAGE_ID,
        kind,
    }
    .write(special);
}

/// Writes the meta record into a meta page image.
///
/// # Safety
/// `page` must be the meta page image being modified under an exclusive lock.
pub unsafe fn write_meta(page: pg_sys::Page, meta: &Meta) {
    let contents = pg_sys::PageGetContents(page) as *mut u8;
    meta.encode(std::slice::from_raw_parts_mut(contents, META_SIZE));
    let header = page as *mut pg_sys::PageHeaderData;
    (*header).pd_lower = (contents.offset_from(page as *mut u8) as usize + META_SIZE) as u16;
}

/// Reads the meta page.
pub fn read_meta(rel: pg_sys::Relation) -> Meta {
    let locked = Locked::share(rel, META_BLOCK);
    // SAFETY: locked page; the meta record sits at the start of its contents.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            pg_sys::PageGetContents(locked.page()) as *const u8,
            META_SIZE,
        )
    };
    match Meta::decode(bytes) {
        Ok(m) => m,
        Err(e) => corrupted(&e),
    }
}

/// One generic WAL record over up to four pages. Pages are modified through
/// the images `register` returns; `finish` applies and logs them at once.
pub struct Wal {
    state: *mut pg_sys::GenericXLogState,
    held: Vec<Locked>,
}

impl Wal {
    pub fn start(rel: pg_sys::Relation) -> Wal {
        // SAFETY: rel is an open index.
        Wal {
            state: unsafe { pg_sys::GenericXLogStart(rel) },
            held: Vec::with_capacity(4),
        }
    }

    /// Registers an exclusively locked buffer; `full` logs a whole image
    /// (for new pages). Returns the image to modify.
    pub fn register(&mut self, locked: Locked, full: bool) -> pg_sys::Page {
        let flags = if full {
            pg_sys::GENERIC_XLOG_FULL_IMAGE as i32
        } else {
            0
        };
        // SAFETY: state is live; the buffer is exclusively locked.
        let page = unsafe { pg_sys::GenericXLogRegisterBuffer(self.state, locked.buf, flags) };
        self.held.push(locked);
        page
    }

    pub fn finish(mut self) {
        // SAFETY: every registered buffer is still locked (held).
        unsafe { pg_sys::GenericXLogFinish(self.state) };
        self.state = std::ptr::null_mut();
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        if !self.state.is_null() {
            // SAFETY: an unfinished record: discard the images, change nothing.
            unsafe { pg_sys::GenericXLogAbort(self.state) };
        }
        // `held` unlocks after the record is finished or aborted.
    }
}

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

/// Held from [`PageStore::next_id`] until the element is written, so that
/// inserts running side by side plan different slots.
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

/// Where an insert's two items go: new items, or over the two items of a
/// removed element (`reuse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Placement {
    element: Tid,
    neighbours: Tid,
    reuse: bool,
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

/// The graph over an index's pages.
pub struct PageStore {
    rel: pg_sys::Relation,
    pub meta: Meta,
    /// Where the next `insert_element` writes, for which heap row, and the
    /// placement lock that keeps the slot ours: set by
    /// [`PageStore::next_id`], taken (and the lock let go) by `insert_element`.
    pending: Cell<Option<(Placement, Tid, PlacementLock)>>,
    /// The entry point comes from `meta` as read at open, not from a fresh
    /// read of the meta page: see [`PageStore::open_for_scan`].
    entry_from_open: bool,
    /// The element this store last inserted and its code (coded indexes).
    inserted: Cell<Option<(Tid, Code)>>,
}

impl PageStore {
    pub fn open(rel: pg_sys::Relation) -> PageStore {
        PageStore {
            rel,
            meta: read_meta(rel),
            pending: Cell::new(None),
            entry_from_open: false,
            inserted: Cell::new(None),
        }
    }

    /// A store for one index scan, which reads the meta page once: every
    /// scan of every backend starts there, so under many clients its buffer
    /// is the hottest in the index. Starting from the entry point read at
    /// open is the race a fresh read has anyway: the page is let go before
    /// the search begins, so an insert or vacuum may move the entry point
    /// either way.
    pub fn open_for_scan(rel: pg_sys::Relation) -> PageStore {
        PageStore {
            entry_from_open: true,
            ..PageStore::open(rel)
        }
    }

    pub fn params(&self) -> Params {
        self.meta.params()
    }

    fn nblocks(&self) -> u32 {
        // SAFETY: rel is open.
        unsafe {
            pg_sys::RelationGetNumberOfBlocksInFork(self.rel, pg_sys::ForkNumber::MAIN_FORKNUM)
        }
    }

    /// Where an element of `level` would go now. Deterministic while the
    /// caller holds the [`PlacementLock`]: only its holder adds items.
    fn plan(&self, level: usize) -> Placement {
        let (elen, nlen) = (
            element_size(self.meta.dims as usize, self.meta.encoding),
            self.meta.lists().size(level),
        );
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

    /// The element's header (heap TID, flags, ...).
    pub fn header(&self, id: Tid) -> Result<ElementHeader, PageError> {
        let locked = Locked::share(self.rel, id.block);
        // SAFETY: locked page, slice dropped before the lock.
        let bytes = unsafe { item(locked.page(), id.block, id.offset)? };
        ElementHeader::decode(bytes).map_err(|e| PageError(format!("item {id:?}: {e}")))
    }

    /// Calls `read` with element `id`'s neighbour item, on the element's
    /// page when it is there (one lock), else on its own; not at all for a
    /// removed element, which has no links.
    fn with_neighbour_item(
        &self,
        id: Tid,
        read: impl FnOnce(&[u8]) -> Result<(), String>,
    ) -> Result<(), PageError> {
        let locked = Locked::share(self.rel, id.block);
        // SAFETY: locked page.
        let bytes = unsafe { item(locked.page(), id.block, id.offset)? };
        let h = ElementHeader::decode(bytes).map_err(|e| PageError(format!("item {id:?}: {e}")))?;
        if h.removed() {
            return Ok(());
        }
        let at = h.neighbours;
        let other;
        let page = if at.block == id.block {
            locked.page()
        } else {
            drop(locked);
            other = Locked::share(self.rel, at.block);
            other.page()
        };
        // SAFETY: `page` is locked while `read` runs.
        let bytes = unsafe { item(page, at.block, at.offset)? };
        read(bytes).map_err(|e| PageError(format!("item {at:?}: {e}")))
    }

    /// The code of element `id` (layout version 3), from its item.
    fn code(&self, id: Tid) -> Result<Code, PageError> {
        let locked = Locked::share(self.rel, id.block);
        // SAFETY: locked page, slice dropped before the lock.
        let bytes = unsafe { item(locked.page(), id.block, id.offset)? };
        ElementHeader::decode(bytes)
            .and_then(|_| page::element_code(bytes))
            .map_err(|e| PageError(format!("item {id:?}: {e}")))
    }

    /// Writes `new` as `id`'s list on `layer`, if the list is still
    /// `expected` when given; whether it did.
    ///
    /// On layer 0 of a coded index each link needs its element's code. The
    /// ones the list already holds are copied from it; the others are read
    /// from their element items, which takes other pages' locks, so not
    /// while this page is held: the write is let go unfinished (the page is
    /// left as it was), the codes read, and the write tried again. An
    /// insert's own code comes along with it (`fresh`), so its links to
    /// the new element need no retry.
    fn write_list(
        &mut self,
        id: Tid,
        layer: usize,
        expected: Option<&[Tid]>,
        new: &[Tid],
        fresh: Option<(Tid, Code)>,
    ) -> Result<bool, PageError> {
        let at = self.header(id)?.neighbours;
        let lists = self.meta.lists();
        let coded = lists.coded && layer == 0;
        let mut known: Vec<(Tid, Code)> = fresh.into_iter().collect();
        let (mut current, mut current_codes, mut codes) = (Vec::new(), Vec::new(), Vec::new());
        let corrupt = |e: String| PageError(format!("item {at:?}: {e}"));
        loop {
            let mut wal = Wal::start(self.rel);
            let page = wal.register(Locked::exclusive(self.rel, at.block), false);
            // SAFETY: page image under the WAL record, exclusively locked.
            let bytes = unsafe { item(page, at.block, at.offset)? };
            if expected.is_some() || coded {
                lists.read(bytes, layer, &mut current).map_err(corrupt)?;
            }
            if expected.is_some_and(|e| e != current) {
                // Dropping `wal` unfinished aborts it: the page is left as it was.
                return Ok(false);
            }
            codes.clear();
            let mut missing = Vec::new();
            if coded {
                lists
                    .read_codes(bytes, &mut current_codes)
                    .map_err(corrupt)?;
                for n in new {
                    let found = current
                        .iter()
                        .position(|c| c == n)
                        .and_then(|i| current_codes.get(i))
                        .or_else(|| known.iter().find(|k| k.0 == *n).map(|k| &k.1));
                    match found {
                        Some(&code) => codes.push(code),
                        None => missing.push(*n),
                    }
                }
            }
            if missing.is_empty() {
                lists.write(bytes, layer, new, &codes).map_err(corrupt)?;
                wal.finish();
                return Ok(true);
            }
            drop(wal);
            for n in missing {
                known.push((n, self.code(n)?));
            }
        }
    }

    fn set_flag(&mut self, id: Tid, flag: u8) -> Result<(), PageError> {
        let mut wal = Wal::start(self.rel);
        let page = wal.register(Locked::exclusive(self.rel, id.block), false);
        // SAFETY: page image under the WAL record, exclusively locked.
        let bytes = unsafe { item(page, id.block, id.offset)? };
        let mut h =
            ElementHeader::decode(bytes).map_err(|e| PageError(format!("item {id:?}: {e}")))?;
        h.flags |= flag;
        h.encode(bytes);
        wal.finish();
        Ok(())
    }

    /// Marks every element whose heap row `dead` reports gone as deleted, a
    /// page (one WAL record) at a time. Returns the deleted-but-not-removed
    /// elements (new and from earlier, interrupted vacuums), the live count,
    /// and the pages holding elements removed before, for vacuum to offer
    /// for reuse again with the ones it removes now
    /// ([`PageStore::remember_removed`]): the free space map is a hint, and
    /// vacuums by builds before slots were reused (stop 40) never recorded them.
    pub fn mark_dead(&mut self, mut dead: impl FnMut(Tid) -> bool) -> (Vec<Tid>, usize, Vec<u32>) {
        let (mut deleted, mut live) = (Vec::new(), 0);
        let mut with_removed = Vec::new();
        for block in 1..self.nblocks() {
            // SAFETY: plain function, checks for cancel and applies vacuum_cost_delay.
            unsafe { pg_sys::vacuum_delay_point() };
            let mut wal = Wal::start(self.rel);
            let page = wal.register(Locked::exclusive(self.rel, block), false);
            let mut changed = false;
            // SAFETY: page image under the WAL record, exclusively locked.
            let max = unsafe { pg_sys::PageGetMaxOffsetNumber(page) };
            for offset in 1..=max {
                let at = Tid { block, offset };
                // SAFETY: as above.
                let Ok(bytes) = (unsafe { item(page, block, offset) }) else {
                    continue;
                };
                if bytes.first() != Some(&KIND_ELEMENT) {
                    continue;
                }
                let Ok(mut h) = ElementHeader::decode(bytes) else {
                    continue;
                };
                if h.removed() {
                    if with_removed.last() != Some(&block) {
                        with_removed.push(block);
                    }
                    continue;
                }
                if !h.deleted() && dead(h.heap) {
                    h.flags |= FLAG_DELETED;
                    h.encode(bytes);
                    changed = true;
                }
                if h.deleted() {
                    deleted.push(at);
                } else {
                    live += 1;
                }
            }
            if changed {
                wal.finish();
            }
        }
        (deleted, live, with_removed)
    }

    /// Calls `f` with the metadata and the vector as stored of element
    /// `id`, on a page `locked` holds.
    fn visit_stored<R>(
        &self,
        locked: &Locked,
        id: Tid,
        f: impl FnOnce(ElementMeta, VectorRef<'_>) -> R,
    ) -> Result<R, PageError> {
        // SAFETY: the slice lives while `locked` does, and f returns before it drops.
        let bytes = unsafe { item(locked.page(), id.block, id.offset)? };
        let h = ElementHeader::decode(bytes).map_err(|e| PageError(format!("item {id:?}: {e}")))?;
        let (dims, encoding) = (self.meta.dims as usize, self.meta.encoding);
        let body = bytes.get(encoding.vector_at()..).unwrap_or_default();
        let meta = ElementMeta {
            level: usize::from(h.level),
            deleted: h.deleted(),
        };
        let ptr = body.as_ptr();
        match encoding {
            Encoding::F32
                if body.len() >= 4 * dims && (ptr as usize).is_multiple_of(align_of::<f32>()) =>
            {
                // SAFETY: in bounds and aligned (items are MAXALIGNed, the header is 16 bytes).
                let v = unsafe { std::slice::from_raw_parts(ptr as *const f32, dims) };
                Ok(f(meta, VectorRef::F32(v)))
            }
            Encoding::UnitF16 | Encoding::UnitF16Coded
                if body.len() >= 2 * dims && (ptr as usize).is_multiple_of(align_of::<u16>()) =>
            {
                // SAFETY: as above, for halves.
                let v = unsafe { std::slice::from_raw_parts(ptr as *const u16, dims) };
                Ok(f(meta, VectorRef::F16(v)))
            }
            _ => {
                let mut v = Vec::new();
                page::element_vector(bytes, dims, encoding, &mut v)
                    .map_err(|e| PageError(format!("item {id:?}: {e}")))?;
                Ok(f(meta, VectorRef::F32(&v)))
            }
        }
    }

    /// [`GraphStore::with_element`] on a page `locked` holds: halves are
    /// widened for the algorithm's f32 code (inserts, repair, checks; a
    /// search scores halves as they are, in [`GraphStore::with_elements`]).
    fn visit<R>(
        &self,
        locked: &Locked,
        id: Tid,
        f: impl FnOnce(ElementMeta, &[f32]) -> R,
    ) -> Result<R, PageError> {
        self.visit_stored(locked, id, |meta, v| f(meta, &v.to_f32()))
    }
}

impl GraphStore for PageStore {
    type Id = Tid;
    type Error = PageError;

    fn entry_point(&self) -> Result<Option<EntryPoint<Tid>>, PageError> {
        let meta = if self.entry_from_open {
            self.meta
        } else {
            read_meta(self.rel)
        };
        Ok(meta.entry.map(|(id, level)| EntryPoint {
            id,
            level: level as usize,
        }))
    }

    fn with_element<R>(
        &self,
        id: Tid,
        f: impl FnOnce(ElementMeta, &[f32]) -> R,
    ) -> Result<R, PageError> {
        self.visit(&Locked::share(self.rel, id.block), id, f)
    }

    fn with_elements(&self, ids: &[Tid], f: &mut ElementVisitor<'_, Tid>) -> Result<(), PageError> {
        // A rolling pipeline, so each element's misses overlap the work on
        // the ones before it: element `i + 2 * LAG` is pinned and its line
        // pointer prefetched, element `i + LAG` (its line pointer here by
        // now) has its item prefetched, element `i` is read and let go.
        // At most `2 * LAG + 1` pins at once: a backend keeps its first
        // eight in an array and the rest in a hash table, which would cost
        // more than it saves.
        const LAG: usize = 2;
        const RING: usize = 2 * LAG + 1;
        const NONE: pg_sys::Buffer = pg_sys::InvalidBuffer as pg_sys::Buffer;
        let mut pinned = [NONE; RING];
        let mut outcome = Ok(());
        for step in 0..ids.len() + 2 * LAG {
            if let (Some(id), true) = (ids.get(step), outcome.is_ok()) {
                let buf = pin(self.rel, id.block);
                pinned[step % RING] = buf;
                // SAFETY: the buffer is pinned.
                let page = unsafe { pg_sys::BufferGetPage(buf) };
                if let Some(line) = line_pointer(page, id.offset) {
                    prefetch(line as *const u8);
                }
            }
            if let Some(i) = step.checked_sub(LAG).filter(|&i| i < ids.len()) {
                let buf = pinned[i % RING];
                if buf != NONE {
                    // SAFETY: the buffer is pinned.
                    unsafe { prefetch_item(pg_sys::BufferGetPage(buf), ids[i].offset) };
                }
            }
            if let Some(i) = step.checked_sub(2 * LAG).filter(|&i| i < ids.len()) {
                let buf = std::mem::replace(&mut pinned[i % RING], NONE);
                if buf != NONE {
                    // Locked and let go here, also after an error.
                    let locked = Locked::pinned(buf, pg_sys::BUFFER_LOCK_SHARE);
                    if outcome.is_ok() {
                        let id = ids[i];
                        outcome = self.visit_stored(&locked, id, |meta, v| f(id, meta, v));
                    }
                }
            }
        }
        outcome
    }

    fn neighbours(&self, id: Tid, layer: usize, out: &mut Vec<Tid>) -> Result<(), PageError> {
        out.clear();
        self.with_neighbour_item(id, |bytes| self.meta.lists().read(bytes, layer, out))
    }

    /// Vacuum's pause: the server's cancel requests and the vacuum cost
    /// delay, as vacuum's own passes over the pages take them.
    fn pause_point(&self) {
        // SAFETY: plain function, checks for cancel and applies vacuum_cost_delay.
        unsafe { pg_sys::vacuum_delay_point() };
    }

    fn keeps_codes(&self) -> bool {
        self.meta.encoding.coded()
    }

    fn element_code(&self, id: Tid) -> Result<Option<Code>, PageError> {
        match self.meta.encoding.coded() {
            true => self.code(id).map(Some),
            false => Ok(None),
        }
    }

    fn neighbours_coded(
        &self,
        id: Tid,
        out: &mut Vec<Tid>,
        codes: &mut Vec<Code>,
    ) -> Result<(), PageError> {
        out.clear();
        codes.clear();
        let lists = self.meta.lists();
        self.with_neighbour_item(id, |bytes| {
            lists.read(bytes, 0, out)?;
            lists.read_codes(bytes, codes)
        })
    }

    fn for_each_element(&self, f: &mut dyn FnMut(Tid, ElementMeta)) -> Result<(), PageError> {
        let mut found = Vec::new();
        for block in 1..self.nblocks() {
            found.clear();
            {
                let locked = Locked::share(self.rel, block);
                let page = locked.page();
                // SAFETY: locked page.
                let max = unsafe { pg_sys::PageGetMaxOffsetNumber(page) };
                for offset in 1..=max {
                    // SAFETY: as above.
                    let bytes = unsafe { item(page, block, offset)? };
                    if bytes.first() != Some(&KIND_ELEMENT) {
                        continue;
                    }
                    let at = Tid { block, offset };
                    let h = ElementHeader::decode(bytes)
                        .map_err(|e| PageError(format!("item {at:?}: {e}")))?;
                    if !h.removed() {
                        found.push((
                            at,
                            ElementMeta {
                                level: usize::from(h.level),
                                deleted: h.deleted(),
                            },
                        ));
                    }
                }
            }
            for &(at, meta) in &found {
                f(at, meta);
            }
        }
        Ok(())
    }

    fn insert_element(
        &mut self,
        id: Tid,
        level: usize,
        vector: &[f32],
        neighbours: &[Vec<Tid>],
    ) -> Result<(), PageError> {
        let Some((plan, heap, _placing)) = self.pending.take().filter(|(p, ..)| p.element == id)
        else {
            return err(
                id,
                "no slot was planned for this element (PageStore::next_id)",
            );
        };
        // Codes of the new links, read before any page of this write is held.
        let mut codes = Vec::new();
        if self.meta.encoding.coded() {
            for &n in neighbours.first().map_or(&[][..], |l| &l[..]) {
                codes.push(self.code(n)?);
            }
        }
        let neighbour_item = self
            .meta
            .lists()
            .encode(neighbours, &codes)
            .map_err(|e| PageError(format!("item {id:?}: {e}")))?;
        let header = ElementHeader {
            level: level as u8,
            flags: 0,
            heap,
            neighbours: plan.neighbours,
        };
        let element_item = page::encode_element(&header, vector, self.meta.encoding);
        if self.meta.encoding.coded() {
            // Links back to it (replace_neighbours) need its code.
            let code = page::element_code(&element_item)
                .map_err(|e| PageError(format!("item {id:?}: {e}")))?;
            self.inserted.set(Some((id, code)));
        }
        if plan.reuse {
            // The element's page first, then its neighbour item's (the same
            // or a later one): the order every writer of two pages keeps.
            let mut wal = Wal::start(self.rel);
            let epage = wal.register(Locked::exclusive(self.rel, id.block), false);
            // SAFETY: page image under the WAL record, exclusively locked.
            let old = unsafe { item(epage, id.block, id.offset)? };
            let h =
                ElementHeader::decode(old).map_err(|e| PageError(format!("item {id:?}: {e}")))?;
            if !h.removed() || h.neighbours != plan.neighbours {
                return err(id, "the removed element planned for reuse changed");
            }
            let npage = if plan.neighbours.block == id.block {
                epage
            } else {
                wal.register(Locked::exclusive(self.rel, plan.neighbours.block), false)
            };
            // SAFETY: page images under the WAL record, exclusively locked;
            // the element item keeps its size.
            unsafe {
                overwrite_item(epage, id, &element_item)?;
                overwrite_item(npage, plan.neighbours, &neighbour_item)?;
            }
            wal.finish();
            return Ok(());
        }
        let nblocks = self.nblocks();
        let mut wal = Wal::start(self.rel);
        let open = |wal: &mut Wal, block: u32| -> pg_sys::Page {
            if block >= nblocks {
                let locked = Locked::extend(self.rel);
                if locked.block() != block {
                    pgrx::error!(
                        "vigil_hnsw: the index grew to block {} while block {block} was planned",
                        locked.block()
                    );
                }
                let page = wal.register(locked, true);
                // SAFETY: a new page's image, ours alone.
                unsafe { init_page(page, PAGE_DATA) };
                page
            } else {
                wal.register(Locked::exclusive(self.rel, block), false)
            }
        };
        let epage = open(&mut wal, id.block);
        // SAFETY: page images under the WAL record, exclusively locked.
        unsafe { add_item(epage, id, &element_item)? };
        let npage = if plan.neighbours.block == id.block {
            epage
        } else {
            open(&mut wal, plan.neighbours.block)
        };
        // SAFETY: as above.
        unsafe { add_item(npage, plan.neighbours, &neighbour_item)? };
        if self.meta.insert_block != plan.neighbours.block {
            self.meta.insert_block = plan.neighbours.block;
            let mpage = wal.register(Locked::exclusive(self.rel, META_BLOCK), false);
            let mut on_disk = read_meta_image(mpage)?;
            on_disk.insert_block = plan.neighbours.block;
            // SAFETY: meta page image under the WAL record.
            unsafe { write_meta(mpage, &on_disk) };
        }
        wal.finish();
        Ok(())
    }

    fn set_neighbours(
        &mut self,
        id: Tid,
        layer: usize,
        neighbours: &[Tid],
    ) -> Result<(), PageError> {
        self.write_list(id, layer, None, neighbours, None).map(drop)
    }

    fn replace_neighbours(
        &mut self,
        id: Tid,
        layer: usize,
        expected: &[Tid],
        neighbours: &[Tid],
    ) -> Result<bool, PageError> {
        let fresh = self.inserted.get();
        self.write_list(id, layer, Some(expected), neighbours, fresh)
    }

    fn mark_deleted(&mut self, id: Tid) -> Result<(), PageError> {
        self.set_flag(id, FLAG_DELETED)
    }

    fn remove_element(&mut self, id: Tid) -> Result<(), PageError> {
        self.set_flag(id, FLAG_DELETED | FLAG_REMOVED)
    }

    fn set_entry_point(&mut self, entry: Option<EntryPoint<Tid>>) -> Result<(), PageError> {
        let entry = entry.map(|e| (e.id, e.level as u32));
        update_meta(self.rel, |meta| meta.entry = entry);
        self.meta.entry = entry;
        Ok(())
    }
}

/// Decodes the meta record of a locked meta page image.
fn read_meta_image(page: pg_sys::Page) -> Result<Meta, PageError> {
    // SAFETY: the caller holds the page locked; the record is at its contents' start.
    let bytes = unsafe {
        std::slice::from_raw_parts(pg_sys::PageGetContents(page) as *const u8, META_SIZE)
    };
    Meta::decode(bytes).map_err(PageError)
}

/// Changes the meta record in one WAL record.
pub fn update_meta(rel: pg_sys::Relation, change: impl FnOnce(&mut Meta)) {
    let mut wal = Wal::start(rel);
    let page = wal.register(Locked::exclusive(rel, META_BLOCK), false);
    let mut meta = read_meta_image(page).unwrap_or_else(|e| corrupted(&e));
    change(&mut meta);
    // SAFETY: meta page image under the WAL record.
    unsafe { write_meta(page, &meta) };
    wal.finish();
}

/// Writes a fresh meta page as block 0 of an empty fork.
pub fn create_meta(rel: pg_sys::Relation, meta: &Meta) {
    let mut wal = Wal::start(rel);
    let page = wal.register(Locked::extend(rel), true);
    // SAFETY: the new page's image, ours alone.
    unsafe {
        init_page(page, PAGE_META);
        write_meta(page, meta);
    }
    wal.finish();
}
