//! Items on a locked Postgres page: the layout of `vigil-hnsw-page` on real
//! pages, through Postgres' own page functions, and the check that the sizes
//! that crate takes from Postgres' headers are this server's.

use pgrx::pg_sys;
use vigil_hnsw::distance::prefetch_bytes;
use vigil_hnsw_page::{self as page, Opaque, Tid, PAGE_HEADER, PAGE_ID};

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

pub(super) fn err<T>(at: Tid, what: impl std::fmt::Display) -> Result<T, PageError> {
    Err(PageError(format!("item {at:?}: {what}")))
}

/// The address of item `offset`'s line pointer on `page`, if in range.
pub(super) fn line_pointer(page: pg_sys::Page, offset: u16) -> Option<*const u32> {
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
pub(super) unsafe fn prefetch_item(page: pg_sys::Page, offset: u16) {
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
        next: 0,
    }
    .write(special);
}
