//! [`PageStore`]: the graph algorithm's storage trait over the index's pages.
//!
//! Reads pin and share-lock one page at a time and never hold two, so they
//! cannot deadlock with anything; every write is one WAL record
//! ([`Wal`]). A list another insert may be changing is updated by compare
//! and replace under the page's exclusive lock
//! ([`GraphStore::replace_neighbours`]), so no link is lost. Searches take
//! no heavyweight lock ([`super::lock`]): they see each page either before
//! or after a write, and a graph half-way through an insert is still a valid
//! graph (the new element is written before anything links to it).

use std::cell::Cell;
use std::collections::HashMap;

use pgrx::pg_sys;
use vigil_hnsw::distance::prefetch;
use vigil_hnsw::store::{Code, ElementVisitor, VectorRef};
use vigil_hnsw::{ElementMeta, EntryPoint, GraphStore, Params};
use vigil_hnsw_page::{
    self as page, ElementHeader, Encoding, Meta, Tid, FLAG_DELETED, FLAG_REMOVED, KIND_ELEMENT,
    META_BLOCK, PAGE_DATA,
};

use super::buffer::{pin, Locked, Wal};
use super::directory;
use super::items::{
    add_item, err, init_page, item, line_pointer, overwrite_item, prefetch_item, PageError,
};
use super::lock::PlacementLock;
use super::meta::{read_meta, read_meta_image, update_meta, write_meta};
use super::slots::Placement;

/// What [`PageStore::visit_elements`] calls per element: its id, metadata
/// and item bytes, under the page's share lock.
type ItemVisitor<'a> = dyn FnMut(Tid, ElementMeta, &[u8]) -> Result<(), PageError> + 'a;

/// The graph over an index's pages.
pub struct PageStore {
    pub(super) rel: pg_sys::Relation,
    pub meta: Meta,
    /// Where the next `insert_element` writes, for which heap row, and the
    /// placement lock that keeps the slot ours: set by
    /// [`PageStore::next_id`], taken (and the lock let go) by `insert_element`.
    pub(super) pending: Cell<Option<(Placement, Tid, PlacementLock)>>,
    /// The entry point comes from `meta` as read at open, not from a fresh
    /// read of the meta page: see [`PageStore::open_for_scan`].
    entry_from_open: bool,
    /// The element this store last inserted and its code (coded indexes).
    inserted: Cell<Option<(Tid, Code)>>,
    /// In a partitioned index, the key whose graph this store is: its
    /// entry point is the key's, its new elements carry the key.
    key: Option<i64>,
    /// The key's entry point as read at [`PageStore::scoped`], for a scan.
    key_entry: Option<(Tid, u32)>,
    /// The key's elements, when the caller has listed them already (vacuum
    /// and the check list every key's in one pass): what
    /// [`GraphStore::for_each_element`] visits instead of every page.
    members: Option<Vec<(Tid, ElementMeta)>>,
}

impl PageStore {
    pub fn open(rel: pg_sys::Relation) -> PageStore {
        PageStore {
            rel,
            meta: read_meta(rel),
            pending: Cell::new(None),
            entry_from_open: false,
            inserted: Cell::new(None),
            key: None,
            key_entry: None,
            members: None,
        }
    }

    /// This store as the graph of `key` in a partitioned index (with its
    /// elements, when listed already). A store for a scan takes the key's
    /// entry point now, as it takes the meta page's at open.
    pub fn scoped(
        mut self,
        key: i64,
        members: Option<Vec<(Tid, ElementMeta)>>,
    ) -> Result<PageStore, PageError> {
        self.key = Some(key);
        self.members = members;
        if self.entry_from_open {
            self.key_entry = directory::entry(self.rel, &self.meta, key)?;
        }
        Ok(self)
    }

    /// The entry point as of the meta page this store read at open (a
    /// partitioned index's: its key's, from the backend's copy of the
    /// directory), for an insert deciding whether it must run alone.
    pub fn entry_as_opened(&self) -> Result<Option<(Tid, u32)>, PageError> {
        match (self.meta.partitioned, self.key) {
            (false, _) => Ok(self.meta.entry),
            (true, None) => Ok(None),
            (true, Some(key)) => directory::entry(self.rel, &self.meta, key),
        }
    }

    /// Every element (removed ones left out) by key, in one pass over the
    /// pages: the partitioned index's graphs, for vacuum and the check.
    pub fn elements_by_key(&self) -> Result<HashMap<i64, Vec<(Tid, ElementMeta)>>, PageError> {
        let mut by_key: HashMap<i64, Vec<(Tid, ElementMeta)>> = HashMap::new();
        let len = self.meta.element_len();
        self.visit_elements(&mut |at, meta, bytes| {
            let key = page::element_key(bytes, len)
                .map_err(|e| PageError(format!("item {at:?}: {e}")))?;
            by_key.entry(key).or_default().push((at, meta));
            Ok(())
        })?;
        Ok(by_key)
    }

    /// Calls `f` with every element not removed, its metadata and its item.
    fn visit_elements(&self, f: &mut ItemVisitor<'_>) -> Result<(), PageError> {
        for block in 1..self.nblocks() {
            self.visit_page_elements(block, f)?;
        }
        Ok(())
    }

    /// [`PageStore::visit_elements`] on one page, under its share lock
    /// (so `f` must not read other pages).
    fn visit_page_elements(&self, block: u32, f: &mut ItemVisitor<'_>) -> Result<(), PageError> {
        let locked = Locked::share(self.rel, block);
        let page = locked.page();
        // SAFETY: locked page.
        let max = unsafe { pg_sys::PageGetMaxOffsetNumber(page) };
        for offset in 1..=max {
            // SAFETY: as above; the slice is dropped before the lock.
            let bytes = unsafe { item(page, block, offset)? };
            if bytes.first() != Some(&KIND_ELEMENT) {
                continue;
            }
            let at = Tid { block, offset };
            let h =
                ElementHeader::decode(bytes).map_err(|e| PageError(format!("item {at:?}: {e}")))?;
            if !h.removed() {
                let meta = ElementMeta {
                    level: usize::from(h.level),
                    deleted: h.deleted(),
                };
                f(at, meta, bytes)?;
            }
        }
        Ok(())
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

    pub(super) fn nblocks(&self) -> u32 {
        // SAFETY: rel is open.
        unsafe {
            pg_sys::RelationGetNumberOfBlocksInFork(self.rel, pg_sys::ForkNumber::MAIN_FORKNUM)
        }
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
        let entry = match (self.meta.partitioned, self.key) {
            (false, _) if self.entry_from_open => self.meta.entry,
            (false, _) => read_meta(self.rel).entry,
            // A partitioned index's own graph is empty: every element is
            // in a key's.
            (true, None) => None,
            (true, Some(_)) if self.entry_from_open => self.key_entry,
            (true, Some(key)) => directory::entry(self.rel, &read_meta(self.rel), key)?,
        };
        Ok(entry.map(|(id, level)| EntryPoint {
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
        if let Some(members) = &self.members {
            for &(at, meta) in members {
                f(at, meta);
            }
            return Ok(());
        }
        // Called back after each page's lock is let go: `f` may read pages.
        let mut found = Vec::new();
        for block in 1..self.nblocks() {
            found.clear();
            self.visit_page_elements(block, &mut |at, meta, _| {
                found.push((at, meta));
                Ok(())
            })?;
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
        let mut element_item = page::encode_element(&header, vector, self.meta.encoding);
        if self.meta.partitioned {
            let Some(key) = self.key else {
                return err(id, "an element of a partitioned index needs its key");
            };
            page::append_key(&mut element_item, key);
        }
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
        match (self.meta.partitioned, self.key) {
            (false, _) => {
                update_meta(self.rel, |meta| meta.entry = entry);
                self.meta.entry = entry;
                Ok(())
            }
            (true, Some(key)) => directory::set_entry(self.rel, key, entry),
            (true, None) => Err(PageError(
                "an entry point of a partitioned index needs its key".into(),
            )),
        }
    }
}
