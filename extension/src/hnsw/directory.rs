//! The directory of a partitioned index: each key's entry point, on
//! directory pages chained from the meta page ([`vigil_hnsw_page::layout`]).
//!
//! A scan looks its key up in the copy this backend keeps, read again only
//! when the meta page's `directory_version` has moved since (a new key, an
//! entry point raised by an insert or moved by vacuum: rare next to scans).
//! Writers change it under the graph writers' exclusive lock
//! ([`super::lock::GraphLock`]), one WAL record per change with the
//! meta page's version, so a standby's backends see the change with it.

use std::cell::RefCell;
use std::collections::HashMap;

use pgrx::pg_sys;
use vigil_hnsw_page::{
    item_footprint, DirectoryItem, Meta, Opaque, Tid, DIRECTORY_ITEM, META_BLOCK, PAGE_CAPACITY,
    PAGE_DIRECTORY,
};

use super::buffer::{Locked, Wal};
use super::items::{add_item, free_space, init_page, item, overwrite_item, PageError};
use super::meta::{read_meta_image, write_meta};

/// Where a key's directory item is, and what it says.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    pub at: Tid,
    pub entry: Option<(Tid, u32)>,
}

/// A directory as read at one version.
#[derive(Debug, Default)]
pub struct Directory {
    pub version: u32,
    pub keys: HashMap<i64, Slot>,
    /// The last directory page, where a new key goes (0: none yet).
    pub last_page: u32,
}

thread_local! {
    /// Per index (by its file), the directory as last read.
    static KEPT: RefCell<Vec<(pg_sys::RelFileNode, Directory)>> = const { RefCell::new(Vec::new()) };
}

/// Indexes whose directory a backend keeps.
const KEPT_INDEXES: usize = 8;

fn same(a: &pg_sys::RelFileNode, b: &pg_sys::RelFileNode) -> bool {
    (a.spcNode, a.dbNode, a.relNode) == (b.spcNode, b.dbNode, b.relNode)
}

/// Reads every directory item from the pages (as of `meta`).
pub fn read(rel: pg_sys::Relation, meta: &Meta) -> Result<Directory, PageError> {
    let mut dir = Directory {
        version: meta.directory_version,
        ..Directory::default()
    };
    let mut block = meta.directory;
    let mut seen = 0u32;
    while block != 0 {
        seen += 1;
        // SAFETY: rel is open.
        let nblocks = unsafe {
            pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM)
        };
        if block >= nblocks || seen > nblocks {
            return Err(PageError(format!(
                "the directory chain reaches block {block} of {nblocks}"
            )));
        }
        let locked = Locked::share(rel, block);
        let page = locked.page();
        // SAFETY: locked page; its special space is our 8 bytes.
        let opaque = unsafe {
            Opaque::read(std::slice::from_raw_parts(
                pg_sys::PageGetSpecialPointer(page) as *const u8,
                8,
            ))
        };
        if opaque.kind != PAGE_DIRECTORY {
            return Err(PageError(format!("block {block} is not a directory page")));
        }
        // SAFETY: as above.
        let max = unsafe { pg_sys::PageGetMaxOffsetNumber(page) };
        for offset in 1..=max {
            let at = Tid { block, offset };
            // SAFETY: as above; the slice is dropped before the lock.
            let bytes = unsafe { item(page, block, offset)? };
            let d = DirectoryItem::decode(bytes).map_err(|e| PageError(format!("{at:?}: {e}")))?;
            dir.keys.insert(d.key, Slot { at, entry: d.entry });
        }
        dir.last_page = block;
        block = opaque.next;
    }
    Ok(dir)
}

/// Calls `f` with this backend's copy of the directory, read again first
/// if `meta` (just read) says it changed.
pub fn with_kept<R>(
    rel: pg_sys::Relation,
    meta: &Meta,
    f: impl FnOnce(&Directory) -> R,
) -> Result<R, PageError> {
    // SAFETY: rel is open.
    let node = unsafe { (*rel).rd_node };
    let fresh = KEPT.with_borrow(|kept| {
        kept.iter()
            .any(|(n, d)| same(n, &node) && d.version == meta.directory_version)
    });
    if !fresh {
        let dir = read(rel, meta)?;
        KEPT.with_borrow_mut(|kept| {
            kept.retain(|(n, _)| !same(n, &node));
            if kept.len() >= KEPT_INDEXES {
                kept.remove(0);
            }
            kept.push((node, dir));
        });
    }
    KEPT.with_borrow(|kept| {
        let dir = kept
            .iter()
            .find(|(n, _)| same(n, &node))
            .map(|(_, d)| d)
            .ok_or_else(|| PageError("the directory was not kept".into()))?;
        Ok(f(dir))
    })
}

/// The entry point of `key`'s graph (`None`: no element yet).
pub fn entry(
    rel: pg_sys::Relation,
    meta: &Meta,
    key: i64,
) -> Result<Option<(Tid, u32)>, PageError> {
    with_kept(rel, meta, |dir| dir.keys.get(&key).and_then(|s| s.entry))
}

/// Sets the entry point of `key`'s graph, adding the key when new, in one
/// WAL record with the meta page's new version. The caller holds the
/// graph writers' exclusive lock.
pub fn set_entry(
    rel: pg_sys::Relation,
    key: i64,
    entry: Option<(Tid, u32)>,
) -> Result<(), PageError> {
    // The kept copy is current: it is checked against the meta page's
    // version, and directory writers take turns (the caller's lock).
    let (slot, last_page) = with_kept(rel, &super::meta::read_meta(rel), |dir| {
        (dir.keys.get(&key).copied(), dir.last_page)
    })?;
    let bytes = DirectoryItem { key, entry }.encode();
    // Directory pages first, the meta page last: the order every writer of
    // several pages keeps.
    let mut wal = Wal::start(rel);
    let mut new_head = None;
    match slot {
        Some(slot) => {
            let page = wal.register(Locked::exclusive(rel, slot.at.block), false);
            // SAFETY: page image under the WAL record; same size.
            unsafe { overwrite_item(page, slot.at, &bytes)? };
        }
        None => {
            let last =
                (last_page != 0).then(|| wal.register(Locked::exclusive(rel, last_page), false));
            // SAFETY: page images under the WAL record.
            let room =
                last.is_some_and(|p| unsafe { free_space(p) } >= item_footprint(DIRECTORY_ITEM));
            match last {
                Some(page) if room => {
                    // SAFETY: as above.
                    let max = unsafe { pg_sys::PageGetMaxOffsetNumber(page) };
                    let at = Tid {
                        block: last_page,
                        offset: max + 1,
                    };
                    // SAFETY: as above.
                    unsafe { add_item(page, at, &bytes)? };
                }
                _ => {
                    let locked = Locked::extend(rel);
                    let block = locked.block();
                    let page = wal.register(locked, true);
                    // SAFETY: the new page's image, ours alone; then the
                    // previous last page's link to it (or the meta's, below).
                    unsafe {
                        init_page(page, PAGE_DIRECTORY);
                        add_item(page, Tid { block, offset: 1 }, &bytes)?;
                        match last {
                            Some(prev) => set_next(prev, block),
                            None => new_head = Some(block),
                        }
                    }
                }
            }
        }
    }
    let meta_page = wal.register(Locked::exclusive(rel, META_BLOCK), false);
    let mut meta = read_meta_image(meta_page)?;
    if let Some(head) = new_head {
        meta.directory = head;
    }
    meta.directory_version = meta.directory_version.wrapping_add(1);
    // SAFETY: the meta page's image under the WAL record.
    unsafe { write_meta(meta_page, &meta) };
    wal.finish();
    Ok(())
}

/// Points directory page `page`'s chain at `next`.
///
/// # Safety
/// `page` is a directory page image being modified under an exclusive lock.
unsafe fn set_next(page: pg_sys::Page, next: u32) {
    let special = std::slice::from_raw_parts_mut(pg_sys::PageGetSpecialPointer(page) as *mut u8, 8);
    let mut opaque = Opaque::read(special);
    opaque.next = next;
    opaque.write(special);
}

/// Writes a new index's whole directory (a bulk build's keys and entry
/// points) on new pages at the end, one WAL record per page, and points
/// the meta page at it. Only for an index without a directory yet.
pub fn write_all(rel: pg_sys::Relation, items: &[DirectoryItem]) {
    if items.is_empty() {
        return;
    }
    let per_page = PAGE_CAPACITY / item_footprint(DIRECTORY_ITEM);
    let pages = items.len().div_ceil(per_page);
    // SAFETY: rel is open; a build is its only writer.
    let first =
        unsafe { pg_sys::RelationGetNumberOfBlocksInFork(rel, pg_sys::ForkNumber::MAIN_FORKNUM) };
    for (n, chunk) in items.chunks(per_page).enumerate() {
        let locked = Locked::extend(rel);
        let block = locked.block();
        if block != first + n as u32 {
            pgrx::error!("vigil_hnsw: the index grew while its directory was written");
        }
        let mut wal = Wal::start(rel);
        let page = wal.register(locked, true);
        // SAFETY: a new page's image, ours alone.
        unsafe {
            init_page(page, PAGE_DIRECTORY);
            if n + 1 < pages {
                set_next(page, block + 1);
            }
            for (k, d) in chunk.iter().enumerate() {
                let at = Tid {
                    block,
                    offset: k as u16 + 1,
                };
                add_item(page, at, &d.encode()).unwrap_or_else(|e| pgrx::error!("vigil_hnsw: {e}"));
            }
        }
        wal.finish();
    }
    super::meta::update_meta(rel, |meta| {
        meta.directory = first;
        meta.directory_version = meta.directory_version.wrapping_add(1);
    });
}
