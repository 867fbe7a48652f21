//! The on-disk layout of a `vigil_hnsw` index: the one place it is described.
//!
//! Every page is a standard Postgres page (24-byte header, line pointers,
//! items growing down from the end) with an 8-byte special space
//! ([`Opaque`](crate::Opaque)), so `pageinspect` and full-page images treat
//! it normally.
//!
//! ```text
//! block 0      meta page: a Meta record right after the page header
//!              (pd_lower ends after it, so full-page images skip the hole)
//! block 1..    data pages: element items and neighbour items, in any mix;
//!              in a partitioned index, directory pages among them
//! ```
//!
//! **Meta** (thirteen native-endian `u32`): magic `VHNS`, layout version,
//! dims (0 until the first vector arrives), metric, m, ef_construction,
//! entry point block and offset (offset 0 = empty graph), entry level, the
//! insert block (the last data page, where new items go), then (from 0.10.0;
//! zero in older pages) partitioned (0 or 1), the first directory page (0 =
//! none) and the directory's version.
//!
//! **Partitioned indexes** (`USING vigil_hnsw (key, vector)`, `key` a
//! `bigint`): one graph per key value, sharing the pages. Every link stays
//! within its key's graph, so a scan for `key = k` walks the graph of `k`'s
//! rows alone: it is the graph those rows would have in an index of their
//! own, whatever else the index holds (a search restricted by a filter on a
//! shared graph loses recall as the filter's share shrinks). The meta
//! record's entry point is unused; each key's entry point is a **directory
//! item** (16 bytes: kind = 3 u8, entry level u8, entry block u32 and
//! offset u16 (offset 0: the key has no element now), the key i64) on a
//! directory page (page kind 3), whose special space holds the next
//! directory page (0 = the last). Each element item carries its key in 8
//! bytes after the vector, which vacuum and the check read.
//!
//! The layout version says how element items hold their vectors
//! ([`Encoding`](crate::Encoding)): version 1, the vector as given in f32 (L2
//! and inner product, and cosine indexes built before 0.7.6); version 2,
//! cosine only, the vector scaled to unit length in IEEE half precision, half
//! the bytes, whose distances the scan reports as lower bounds for PostgreSQL
//! to re-rank by the exact ones; version 3 (cosine indexes from 0.7.9), as
//! version 2 plus neighbour codes ([`vigil_hnsw::codes`]): each element item
//! carries its own 16-byte code, and each layer-0 link carries the code of
//! the element it links to, so a search estimates a neighbour's distance from
//! the list it has already read and reads only neighbours that could enter
//! its beam. All three are read and written by this build.
//!
//! **Element item**, one per indexed heap row (16-byte header, the code in
//! version 3, then the vector, f32 or half by the layout version):
//!
//! ```text
//! 0  kind = 1        u8
//! 1  level           u8   top layer of the element (0..=15)
//! 2  flags           u8   1 = deleted (heap row dead), 2 = removed (unlinked)
//! 3  (zero)          u8
//! 4  heap block      u32  \ the heap row's TID
//! 8  heap offset     u16  /
//! 10 neighbour off.  u16  \ where its neighbour item is
//! 12 neighbour block u32  /
//! 16 code            16 bytes, version 3 only
//! 16 or 32 vector    f32 x dims (version 1) or half x dims (versions 2, 3)
//! ```
//!
//! **Neighbour item**, one per element, written with the element and then
//! only overwritten in place (its size changes only when a new element
//! takes a removed one's slot):
//!
//! ```text
//! 0  kind = 2        u8
//! 1  level           u8
//! 2  (zero)          u16
//! 4  counts          u16 x (level+1)   links in use on each layer
//! .. slots           6 bytes x capacity per layer, layer 0 first:
//!                    block u32 + offset u16 of the linked element
//! .. codes           version 3: 16 bytes x 2*m, the code of each layer-0
//!                    link's element, in the order of the slots
//! ```
//!
//! Layer 0 holds `2*m` slots, every higher layer `m`. An element's id in the
//! graph is its item's TID packed as `block << 16 | offset`: line pointers
//! are never freed, so an id always names an element item. Once vacuum has
//! unlinked a removed element (flag 2), a later insert may write its own
//! element and neighbour items over the removed one's, and the id names the
//! new element (the extension's `hnsw/slots.rs` and `hnsw/vacuum.rs`).
//! The element and its neighbour item are split so a 2,000-dimension vector
//! (8,016 bytes) still fits on a page, and so small neighbour items fill the
//! gaps that vectors leave.
//!
//! A bulk build writes elements in the order of
//! [`vigil_hnsw::build::Graph::order_for_locality`], a page's worth of
//! mutually linked elements at a time
//! ([`elements_per_page`](crate::elements_per_page)), so a search finds the
//! next elements it scores on pages it has just read. Elements inserted
//! later go wherever there is room.
//!
//! Every change goes through generic WAL (the extension's `hnsw/buffer.rs`),
//! so pages are crash-safe and reach physical replicas.
//!
//! The sizes Postgres fixes (block, page header, line pointer, alignment)
//! are constants here, so the layout is tested without a server; the
//! extension checks them against its server's headers when it compiles.

/// Postgres' `BLCKSZ` (its default, which the extension checks).
pub const BLOCK_SIZE: usize = 8192;
pub const META_BLOCK: u32 = 0;
pub const MAGIC: u32 = u32::from_be_bytes(*b"VHNS");
/// Marks our pages in the special space (like btree's `BTP_` ids).
pub const PAGE_ID: u16 = 0xF1A7;
pub const PAGE_META: u16 = 1;
pub const PAGE_DATA: u16 = 2;
pub const PAGE_DIRECTORY: u16 = 3;

/// `SizeOfPageHeaderData` and `sizeof(ItemIdData)`.
pub const PAGE_HEADER: usize = 24;
pub const LINE_POINTER: usize = 4;
pub const SPECIAL_SIZE: usize = 8;
pub const ELEMENT_HEADER: usize = 16;
pub(crate) const NEIGHBOUR_HEADER: usize = 4;
pub(crate) const SLOT: usize = 6;
/// Where an element item's code is, in layout version 3.
pub(crate) const CODE_AT: usize = ELEMENT_HEADER;
/// Byte offset of a neighbour item's per-layer link counts.
pub(crate) const COUNTS_AT: usize = NEIGHBOUR_HEADER;
/// Bytes of the meta record (40 before 0.10.0, zeros after it then).
pub const META_SIZE: usize = 52;
/// Bytes of a partitioned index's key, after an element item's vector.
pub const KEY_BYTES: usize = 8;
/// Bytes of a directory item.
pub const DIRECTORY_ITEM: usize = 16;

pub const KIND_ELEMENT: u8 = 1;
pub const KIND_NEIGHBOURS: u8 = 2;
pub const KIND_DIRECTORY: u8 = 3;
pub const FLAG_DELETED: u8 = 1;
pub const FLAG_REMOVED: u8 = 2;

/// Room for items on an empty data page.
pub const PAGE_CAPACITY: usize = BLOCK_SIZE - PAGE_HEADER - SPECIAL_SIZE;
/// Largest vector an element item can hold on one page.
pub const MAX_DIMS: usize = (maxalign_down(PAGE_CAPACITY - LINE_POINTER) - ELEMENT_HEADER) / 4;

/// `MAXALIGN`: items start on 8-byte boundaries (`MAXIMUM_ALIGNOF`).
pub const fn maxalign(n: usize) -> usize {
    (n + 7) & !7
}

const fn maxalign_down(n: usize) -> usize {
    n & !7
}

/// Space an item of `len` bytes takes on a page, line pointer included.
pub const fn item_footprint(len: usize) -> usize {
    maxalign(len) + LINE_POINTER
}
