//! The meta page (block 0): read, changed and created, each change one WAL
//! record. A meta page that does not decode is `ERROR` index_corrupted.

use pgrx::pg_sys;
use pgrx::prelude::*;
use vigil_hnsw_page::{Meta, META_BLOCK, META_SIZE, PAGE_META};

use super::buffer::{Locked, Wal};
use super::items::{init_page, PageError};

/// ERROR XX002 (index_corrupted): the metapage does not hold what it must.
fn corrupted(e: &dyn std::fmt::Display) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
        format!("vigil_hnsw: {e}")
    );
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

/// Decodes the meta record of a locked meta page image.
pub(super) fn read_meta_image(page: pg_sys::Page) -> Result<Meta, PageError> {
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
