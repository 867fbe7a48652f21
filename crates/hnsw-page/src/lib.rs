//! # vigil-hnsw-page: the bytes of a `vigil_hnsw` index's pages
//!
//! The layout is described once, in [`layout`]; the other modules encode
//! and decode its parts. Nothing here touches a buffer or needs a server:
//! the extension reads and writes these bytes on locked pages, and
//! `cargo test --release -p vigil-hnsw-page` tests the format on its own.
//!
//! * [`layout`]: the description, its constants and item sizes.
//! * `tid`: [`Tid`], an item's address.
//! * `encoding`: [`Encoding`], how element items hold vectors.
//! * `meta`: [`Opaque`] (every page's special space) and [`Meta`].
//! * `element`: element items ([`ElementHeader`], the vector, a key).
//! * `directory`: directory items ([`DirectoryItem`]), each key's entry point.
//! * `neighbours`: neighbour items ([`Lists`]).
//! * `fill`: where items land ([`Filler`], [`pack`]).

mod directory;
mod element;
mod encoding;
mod fill;
pub mod layout;
mod meta;
mod neighbours;
mod tid;

pub use directory::DirectoryItem;
pub use element::{
    append_key, element_code, element_key, element_size, element_vector, encode_element,
    encode_halves_element, ElementHeader,
};
pub use encoding::{Encoding, CODED_MIN_DIMS};
pub use fill::{elements_per_page, pack, Filler};
pub use layout::{
    item_footprint, maxalign, BLOCK_SIZE, DIRECTORY_ITEM, ELEMENT_HEADER, FLAG_DELETED,
    FLAG_REMOVED, KEY_BYTES, KIND_DIRECTORY, KIND_ELEMENT, KIND_NEIGHBOURS, LINE_POINTER, MAGIC,
    MAX_DIMS, META_BLOCK, META_SIZE, PAGE_CAPACITY, PAGE_DATA, PAGE_DIRECTORY, PAGE_HEADER,
    PAGE_ID, PAGE_META, SPECIAL_SIZE,
};
pub use meta::{Meta, Opaque};
pub use neighbours::{neighbour_level, Lists};
pub use tid::Tid;
