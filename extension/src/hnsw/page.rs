//! The on-disk layout of a `vigil_hnsw` index: the one place it is described.
//!
//! Every page is a standard Postgres page (24-byte header, line pointers,
//! items growing down from the end) with an 8-byte special space
//! [`Opaque`], so `pageinspect` and full-page images treat it normally.
//!
//! ```text
//! block 0      meta page: a Meta record right after the page header
//!              (pd_lower ends after it, so full-page images skip the hole)
//! block 1..    data pages: element items and neighbour items, in any mix
//! ```
//!
//! **Meta** (ten native-endian `u32`): magic `VHNS`, layout version, dims
//! (0 until the first vector arrives), metric, m, ef_construction, entry
//! point block and offset (offset 0 = empty graph), entry level, and the
//! insert block (the last data page, where new items go).
//!
//! The layout version says how element items hold their vectors
//! ([`Encoding`]): version 1, the vector as given in f32 (L2 and inner
//! product, and cosine indexes built before 0.7.6); version 2, cosine only,
//! the vector scaled to unit length in IEEE half precision, half the bytes,
//! whose distances the scan reports as lower bounds for PostgreSQL to
//! re-rank by the exact ones; version 3 (cosine indexes from 0.7.9), as
//! version 2 plus neighbour codes ([`vigil_hnsw::codes`]): each element
//! item carries its own 16-byte code, and each layer-0 link carries the
//! code of the element it links to, so a search estimates a neighbour's
//! distance from the list it has already read and reads only neighbours
//! that could enter its beam. All three are read and written by this build.
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
//! new element (`store.rs`, `vacuum.rs`).
//! The element and its neighbour item are split so a 2,000-dimension vector
//! (8,016 bytes) still fits on a page, and so small neighbour items fill the
//! gaps that vectors leave.
//!
//! A bulk build writes elements in the order of
//! [`vigil_hnsw::build::Graph::order_for_locality`], a page's worth of
//! mutually linked elements at a time ([`elements_per_page`]), so a search
//! finds the next elements it scores on pages it has just read. Elements
//! inserted later go wherever there is room.
//!
//! Every change goes through generic WAL ([`super::store`]), so pages are
//! crash-safe and reach physical replicas.

use std::borrow::Cow;

use vigil_hnsw::codes::{Code, Directions, CODE_BYTES};
use vigil_hnsw::distance::{unit_halves, widen_halves};
use vigil_hnsw::{Metric, Params, MAX_LEVEL};

pub const BLOCK_SIZE: usize = pgrx::pg_sys::BLCKSZ as usize;
pub const META_BLOCK: u32 = 0;
pub const MAGIC: u32 = u32::from_be_bytes(*b"VHNS");
/// Marks our pages in the special space (like btree's `BTP_` ids).
pub const PAGE_ID: u16 = 0xF1A7;
pub const PAGE_META: u16 = 1;
pub const PAGE_DATA: u16 = 2;

pub const PAGE_HEADER: usize = 24;
const LINE_POINTER: usize = 4;
pub const SPECIAL_SIZE: usize = 8;
pub const ELEMENT_HEADER: usize = 16;
const NEIGHBOUR_HEADER: usize = 4;
const SLOT: usize = 6;
/// Where an element item's code is, in layout version 3.
const CODE_AT: usize = ELEMENT_HEADER;

pub const KIND_ELEMENT: u8 = 1;
pub const KIND_NEIGHBOURS: u8 = 2;
pub const FLAG_DELETED: u8 = 1;
pub const FLAG_REMOVED: u8 = 2;

/// Room for items on an empty data page.
pub const PAGE_CAPACITY: usize = BLOCK_SIZE - PAGE_HEADER - SPECIAL_SIZE;
/// Largest vector an element item can hold on one page.
pub const MAX_DIMS: usize = (maxalign_down(PAGE_CAPACITY - LINE_POINTER) - ELEMENT_HEADER) / 4;

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

/// A TID: inside the index it is an element's id in the graph (printed
/// `(block,offset)` in messages, as `ctid` is); in an element it is the heap row.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tid {
    pub block: u32,
    pub offset: u16,
}

impl std::fmt::Debug for Tid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({},{})", self.block, self.offset)
    }
}

impl std::hash::Hash for Tid {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.id());
    }
}

impl Tid {
    pub fn id(self) -> u64 {
        (u64::from(self.block) << 16) | u64::from(self.offset)
    }

    pub fn from_id(id: u64) -> Tid {
        Tid {
            block: (id >> 16) as u32,
            offset: (id & 0xFFFF) as u16,
        }
    }

    fn read(bytes: &[u8]) -> Tid {
        Tid {
            block: u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            offset: u16::from_ne_bytes([bytes[4], bytes[5]]),
        }
    }

    fn write(self, bytes: &mut [u8]) {
        bytes[..4].copy_from_slice(&self.block.to_ne_bytes());
        bytes[4..6].copy_from_slice(&self.offset.to_ne_bytes());
    }
}

/// Special space of every page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opaque {
    pub page_id: u16,
    pub kind: u16,
}

impl Opaque {
    pub fn read(bytes: &[u8]) -> Opaque {
        Opaque {
            page_id: u16::from_ne_bytes([bytes[0], bytes[1]]),
            kind: u16::from_ne_bytes([bytes[2], bytes[3]]),
        }
    }

    pub fn write(self, bytes: &mut [u8]) {
        bytes[..2].copy_from_slice(&self.page_id.to_ne_bytes());
        bytes[2..4].copy_from_slice(&self.kind.to_ne_bytes());
        bytes[4..8].fill(0);
    }
}

/// How element items hold their vectors; the meta page's layout version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Version 1: the vector as given, f32.
    F32,
    /// Version 2 (cosine only): the vector at unit length in half precision
    /// ([`vigil_hnsw::distance::unit_halves`]); distances computed from it
    /// are within [`vigil_hnsw::distance::unit_half_cosine_error`] of exact.
    UnitF16,
    /// Version 3 (cosine only): as version 2, with neighbour codes.
    UnitF16Coded,
}

/// Fewest dimensions for which a new cosine index keeps neighbour codes.
/// Below it an element's halves take less room than the codes of its
/// layer-0 links (2 x 128 B against 32 x 16 B): a page would hold half as
/// many elements, and reading a vector costs about what skipping it saves.
pub const CODED_MIN_DIMS: usize = 256;

impl Encoding {
    /// What a new index of `metric` over vectors of `dims` uses: halves
    /// where only the direction counts (cosine), with neighbour codes from
    /// [`CODED_MIN_DIMS`] (and while `dims` is not known yet, 0: the first
    /// vector settles it, [`Encoding::settle`]). Under L2 and inner product
    /// a vector's length matters and the error bound would depend on it, so
    /// those keep f32.
    pub fn for_index(metric: Metric, dims: usize) -> Encoding {
        match metric {
            Metric::Cosine if dims == 0 || dims >= CODED_MIN_DIMS => Encoding::UnitF16Coded,
            Metric::Cosine => Encoding::UnitF16,
            Metric::L2 | Metric::InnerProduct => Encoding::F32,
        }
    }

    /// The encoding of an empty index once its first vector fixes `dims`.
    pub fn settle(self, dims: usize) -> Encoding {
        match self {
            Encoding::UnitF16Coded if dims < CODED_MIN_DIMS => Encoding::UnitF16,
            other => other,
        }
    }

    /// How `vigil.hnsw_check` names it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::F32 => "f32",
            Encoding::UnitF16 => "unit half",
            Encoding::UnitF16Coded => "unit half, coded",
        }
    }

    fn layout_version(self) -> u32 {
        match self {
            Encoding::F32 => 1,
            Encoding::UnitF16 => 2,
            Encoding::UnitF16Coded => 3,
        }
    }

    fn bytes_per_dim(self) -> usize {
        match self {
            Encoding::F32 => 4,
            Encoding::UnitF16 | Encoding::UnitF16Coded => 2,
        }
    }

    /// Whether elements and layer-0 links carry codes (version 3).
    pub fn coded(self) -> bool {
        self == Encoding::UnitF16Coded
    }

    /// Where an element item's vector starts.
    pub fn vector_at(self) -> usize {
        if self.coded() {
            ELEMENT_HEADER + CODE_BYTES
        } else {
            ELEMENT_HEADER
        }
    }

    /// `v` as the index will hold it, widened back to f32: an insert
    /// compares its vector with stored ones in this form, so an exact copy
    /// of a stored vector is at distance 0 from it.
    pub fn stored_form(self, v: &[f32]) -> Cow<'_, [f32]> {
        match self {
            Encoding::F32 => Cow::Borrowed(v),
            Encoding::UnitF16 | Encoding::UnitF16Coded => {
                let (mut halves, mut wide) = (Vec::new(), Vec::new());
                unit_halves(v, &mut halves);
                widen_halves(&halves, &mut wide);
                Cow::Owned(wide)
            }
        }
    }
}

/// The meta page's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub dims: u32,
    pub metric: Metric,
    pub m: u32,
    pub ef_construction: u32,
    pub entry: Option<(Tid, u32)>,
    pub insert_block: u32,
    pub encoding: Encoding,
}

pub const META_SIZE: usize = 40;

fn metric_code(m: Metric) -> u32 {
    match m {
        Metric::L2 => 1,
        Metric::Cosine => 2,
        Metric::InnerProduct => 3,
    }
}

impl Meta {
    /// The shape of its neighbour items.
    pub fn lists(&self) -> Lists {
        Lists {
            m: self.m as usize,
            coded: self.encoding.coded(),
        }
    }

    pub fn params(&self) -> Params {
        Params {
            dims: self.dims as usize,
            metric: self.metric,
            m: self.m as usize,
            ef_construction: self.ef_construction as usize,
        }
    }

    pub fn encode(&self, out: &mut [u8]) {
        let (eb, eo, el) = match self.entry {
            Some((t, l)) => (t.block, u32::from(t.offset), l),
            None => (0, 0, 0),
        };
        let words = [
            MAGIC,
            self.encoding.layout_version(),
            self.dims,
            metric_code(self.metric),
            self.m,
            self.ef_construction,
            eb,
            eo,
            el,
            self.insert_block,
        ];
        for (i, w) in words.iter().enumerate() {
            out[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Meta, String> {
        let w = |i: usize| {
            u32::from_ne_bytes([
                bytes[i * 4],
                bytes[i * 4 + 1],
                bytes[i * 4 + 2],
                bytes[i * 4 + 3],
            ])
        };
        if bytes.len() < META_SIZE || w(0) != MAGIC {
            return Err("the meta page is not a vigil_hnsw meta page".into());
        }
        let metric = match w(3) {
            1 => Metric::L2,
            2 => Metric::Cosine,
            3 => Metric::InnerProduct,
            other => return Err(format!("the meta page names unknown metric {other}")),
        };
        let encoding = match (w(1), metric) {
            (1, _) => Encoding::F32,
            (2, Metric::Cosine) => Encoding::UnitF16,
            (3, Metric::Cosine) => Encoding::UnitF16Coded,
            (2 | 3, _) => return Err("layout versions 2 and 3 are for cosine indexes only".into()),
            (other, _) => {
                return Err(format!(
                    "the index has layout version {other}, this build reads 1 to 3; REINDEX it"
                ))
            }
        };
        let entry = (w(7) != 0).then(|| {
            (
                Tid {
                    block: w(6),
                    offset: w(7) as u16,
                },
                w(8),
            )
        });
        Ok(Meta {
            dims: w(2),
            metric,
            m: w(4),
            ef_construction: w(5),
            entry,
            insert_block: w(9),
            encoding,
        })
    }
}

/// The fixed part of an element item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementHeader {
    pub level: u8,
    pub flags: u8,
    pub heap: Tid,
    pub neighbours: Tid,
}

pub fn element_size(dims: usize, encoding: Encoding) -> usize {
    encoding.vector_at() + encoding.bytes_per_dim() * dims
}

impl ElementHeader {
    pub fn deleted(&self) -> bool {
        self.flags & (FLAG_DELETED | FLAG_REMOVED) != 0
    }

    pub fn removed(&self) -> bool {
        self.flags & FLAG_REMOVED != 0
    }

    pub fn decode(item: &[u8]) -> Result<ElementHeader, String> {
        if item.len() < ELEMENT_HEADER || item[0] != KIND_ELEMENT {
            return Err("item is not an element".into());
        }
        Ok(ElementHeader {
            level: item[1],
            flags: item[2],
            heap: Tid::read(&item[4..10]),
            neighbours: Tid {
                block: u32::from_ne_bytes([item[12], item[13], item[14], item[15]]),
                offset: u16::from_ne_bytes([item[10], item[11]]),
            },
        })
    }

    /// Writes the header into the first 16 bytes of `item`.
    pub fn encode(&self, item: &mut [u8]) {
        item[0] = KIND_ELEMENT;
        item[1] = self.level;
        item[2] = self.flags;
        item[3] = 0;
        self.heap.write(&mut item[4..10]);
        item[10..12].copy_from_slice(&self.neighbours.offset.to_ne_bytes());
        item[12..16].copy_from_slice(&self.neighbours.block.to_ne_bytes());
    }
}

/// Builds a whole element item.
pub fn encode_element(header: &ElementHeader, vector: &[f32], encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::F32 => {
            let mut item = vec![0u8; element_size(vector.len(), encoding)];
            header.encode(&mut item);
            for (chunk, x) in item[ELEMENT_HEADER..].chunks_exact_mut(4).zip(vector) {
                chunk.copy_from_slice(&x.to_ne_bytes());
            }
            item
        }
        Encoding::UnitF16 | Encoding::UnitF16Coded => {
            let mut halves = Vec::with_capacity(vector.len());
            unit_halves(vector, &mut halves);
            let code = encoding
                .coded()
                .then(|| Directions::for_dims(vector.len()).code(vector));
            encode_halves_element(header, &halves, code)
        }
    }
}

/// An element item of unit halves, made already ([`unit_halves`]; a bulk
/// build holds them): layout version 3 with a `code`, else version 2.
pub fn encode_halves_element(
    header: &ElementHeader,
    halves: &[u16],
    code: Option<Code>,
) -> Vec<u8> {
    let encoding = match code {
        Some(_) => Encoding::UnitF16Coded,
        None => Encoding::UnitF16,
    };
    let mut item = vec![0u8; element_size(halves.len(), encoding)];
    header.encode(&mut item);
    if let Some(code) = code {
        item[CODE_AT..CODE_AT + CODE_BYTES].copy_from_slice(&code.to_bytes());
    }
    for (chunk, h) in item[encoding.vector_at()..].chunks_exact_mut(2).zip(halves) {
        chunk.copy_from_slice(&h.to_ne_bytes());
    }
    item
}

/// The code of a version-3 element item.
pub fn element_code(item: &[u8]) -> Result<Code, String> {
    item.get(CODE_AT..CODE_AT + CODE_BYTES)
        .and_then(Code::from_bytes)
        .ok_or_else(|| format!("element item of {} bytes has no code", item.len()))
}

/// Copies the vector of an element item into `out` (cleared first), widened
/// to f32 if it is stored in halves.
pub fn element_vector(
    item: &[u8],
    dims: usize,
    encoding: Encoding,
    out: &mut Vec<f32>,
) -> Result<(), String> {
    let body = item
        .get(encoding.vector_at()..element_size(dims, encoding))
        .ok_or_else(|| {
            format!(
                "element item of {} bytes is too short for {dims} dimensions",
                item.len()
            )
        })?;
    out.clear();
    match encoding {
        Encoding::F32 => out.extend(
            body.chunks_exact(4)
                .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])),
        ),
        Encoding::UnitF16 | Encoding::UnitF16Coded => {
            let halves: Vec<u16> = body
                .chunks_exact(2)
                .map(|c| u16::from_ne_bytes([c[0], c[1]]))
                .collect();
            widen_halves(&halves, out);
        }
    }
    Ok(())
}

/// The shape of an index's neighbour items: `m`, and whether layer 0
/// carries codes (layout version 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lists {
    pub m: usize,
    pub coded: bool,
}

impl Lists {
    /// Slots of layers `0..layers` together: `2m` on layer 0, `m` above.
    fn slots_below(self, layers: usize) -> usize {
        match layers {
            0 => 0,
            n => 2 * self.m + self.m * (n - 1),
        }
    }

    fn capacity(self, layer: usize) -> usize {
        if layer == 0 {
            2 * self.m
        } else {
            self.m
        }
    }

    /// Bytes of a neighbour item of an element of `level`.
    pub fn size(self, level: usize) -> usize {
        self.codes_at(level)
            + if self.coded {
                CODE_BYTES * 2 * self.m
            } else {
                0
            }
    }

    /// Byte offset of `layer`'s first slot.
    fn slots_at(self, level: usize, layer: usize) -> usize {
        COUNTS_AT + 2 * (level + 1) + SLOT * self.slots_below(layer)
    }

    /// Byte offset of the layer-0 codes (version 3), after every slot.
    fn codes_at(self, level: usize) -> usize {
        self.slots_at(level, level + 1)
    }

    /// The level of `item`, checked against its size.
    fn level_of(self, item: &[u8]) -> Result<usize, String> {
        let level = neighbour_level(item)?;
        if item.len() != self.size(level) {
            return Err(format!(
                "neighbour item of level {level} is {} bytes, expected {}",
                item.len(),
                self.size(level)
            ));
        }
        Ok(level)
    }

    /// Builds a neighbour item with the given lists (each within capacity)
    /// and, when coded, the codes of layer 0's links.
    pub fn encode(self, lists: &[Vec<Tid>], codes: &[Code]) -> Result<Vec<u8>, String> {
        let level = lists
            .len()
            .checked_sub(1)
            .ok_or("an element needs layer 0")?;
        if level > MAX_LEVEL {
            return Err(format!("level {level} is above the maximum {MAX_LEVEL}"));
        }
        let mut item = vec![0u8; self.size(level)];
        item[0] = KIND_NEIGHBOURS;
        item[1] = level as u8;
        for (layer, list) in lists.iter().enumerate() {
            self.write(&mut item, layer, list, if layer == 0 { codes } else { &[] })?;
        }
        Ok(item)
    }

    /// Overwrites `layer`'s list in a neighbour item, in place; on layer 0
    /// of a coded item `codes` are the links' codes, one each.
    pub fn write(
        self,
        item: &mut [u8],
        layer: usize,
        list: &[Tid],
        codes: &[Code],
    ) -> Result<(), String> {
        let level = self.level_of(item)?;
        if layer > level {
            return Err(format!(
                "neighbour item has no layer {layer} (level {level})"
            ));
        }
        let cap = self.capacity(layer);
        if list.len() > cap {
            return Err(format!(
                "{} links on layer {layer}, capacity {cap}",
                list.len()
            ));
        }
        let coded = self.coded && layer == 0;
        if coded && codes.len() != list.len() {
            return Err(format!(
                "{} codes for {} links on layer 0",
                codes.len(),
                list.len()
            ));
        }
        let c = COUNTS_AT + 2 * layer;
        item[c..c + 2].copy_from_slice(&(list.len() as u16).to_ne_bytes());
        let start = self.slots_at(level, layer);
        for (i, t) in list.iter().enumerate() {
            t.write(&mut item[start + SLOT * i..start + SLOT * (i + 1)]);
        }
        if coded {
            let start = self.codes_at(level);
            for (i, code) in codes.iter().enumerate() {
                let at = start + CODE_BYTES * i;
                item[at..at + CODE_BYTES].copy_from_slice(&code.to_bytes());
            }
        }
        Ok(())
    }

    /// Reads `layer`'s list from a neighbour item into `out` (cleared first).
    pub fn read(self, item: &[u8], layer: usize, out: &mut Vec<Tid>) -> Result<(), String> {
        let (level, count) = self.count(item, layer)?;
        let start = self.slots_at(level, layer);
        out.clear();
        out.extend((0..count).map(|i| Tid::read(&item[start + SLOT * i..])));
        Ok(())
    }

    /// Reads the codes of layer 0's links into `out` (cleared first; left
    /// empty for an item without codes).
    pub fn read_codes(self, item: &[u8], out: &mut Vec<Code>) -> Result<(), String> {
        out.clear();
        if !self.coded {
            return Ok(());
        }
        let (level, count) = self.count(item, 0)?;
        let start = self.codes_at(level);
        out.extend(
            item[start..start + CODE_BYTES * count]
                .chunks_exact(CODE_BYTES)
                .map(|c| Code::from_bytes(c).unwrap_or_default()),
        );
        Ok(())
    }

    /// The item's level and the links in use on `layer`.
    fn count(self, item: &[u8], layer: usize) -> Result<(usize, usize), String> {
        let level = self.level_of(item)?;
        if layer > level {
            return Err(format!(
                "neighbour item of level {level} has no layer {layer}"
            ));
        }
        let c = COUNTS_AT + 2 * layer;
        let count = usize::from(u16::from_ne_bytes([item[c], item[c + 1]]));
        let cap = self.capacity(layer);
        if count > cap {
            return Err(format!(
                "layer {layer} claims {count} links, capacity {cap}"
            ));
        }
        Ok((level, count))
    }
}

/// Byte offset of the per-layer link counts.
const COUNTS_AT: usize = NEIGHBOUR_HEADER;

/// Level recorded in a neighbour item.
pub fn neighbour_level(item: &[u8]) -> Result<usize, String> {
    if item.len() < NEIGHBOUR_HEADER || item[0] != KIND_NEIGHBOURS {
        return Err("item is not a neighbour list".into());
    }
    Ok(usize::from(item[1]))
}

/// Where the next items land, computed without touching a page: the build
/// lays out every element before writing, so links can name TIDs of
/// elements not yet written. Mirrors `PageAddItem` on pages whose line
/// pointers are never freed.
#[derive(Debug, Clone, Copy)]
pub struct Filler {
    pub block: u32,
    free: usize,
    next_offset: u16,
}

impl Filler {
    /// An empty page at `block`.
    pub fn new(block: u32) -> Filler {
        Filler {
            block,
            free: PAGE_CAPACITY,
            next_offset: 1,
        }
    }

    /// A page at `block` that already has `max_offset` items and `free` bytes
    /// between pd_lower and pd_upper.
    pub fn resume(block: u32, max_offset: u16, free: usize) -> Filler {
        Filler {
            block,
            free,
            next_offset: max_offset + 1,
        }
    }

    /// A page at `block` that takes nothing more: the next item starts `block + 1`.
    pub fn full(block: u32) -> Filler {
        Filler {
            block,
            free: 0,
            next_offset: 1,
        }
    }

    pub fn fits(&self, len: usize) -> bool {
        item_footprint(len) <= self.free
    }

    /// Takes room for an item; the caller checked [`Filler::fits`].
    pub fn take(&mut self, len: usize) -> Tid {
        self.free -= item_footprint(len);
        let t = Tid {
            block: self.block,
            offset: self.next_offset,
        };
        self.next_offset += 1;
        t
    }

    /// Where an element and its neighbour item go: the element on this page
    /// or the next, the neighbours right after it if they fit. Returns the
    /// two TIDs and how many new pages were started (0, 1 or 2).
    pub fn place(&mut self, element_len: usize, neighbour_len: usize) -> (Tid, Tid, u32) {
        let mut new_pages = 0;
        if !self.fits(element_len) {
            *self = Filler::new(self.block + 1);
            new_pages += 1;
        }
        let e = self.take(element_len);
        if !self.fits(neighbour_len) {
            *self = Filler::new(self.block + 1);
            new_pages += 1;
        }
        let n = self.take(neighbour_len);
        (e, n, new_pages)
    }
}

/// How many elements of layer 0 (with their neighbour items) one page
/// holds, at least one: the run a bulk build keeps linked elements in
/// ([`vigil_hnsw::build::Graph::order_for_locality`]).
pub fn elements_per_page(dims: usize, m: usize, encoding: Encoding) -> usize {
    let room = BLOCK_SIZE - PAGE_HEADER - SPECIAL_SIZE;
    let lists = Lists {
        m,
        coded: encoding.coded(),
    };
    let pair = element_size(dims, encoding) + lists.size(0) + 2 * LINE_POINTER;
    (room / pair).max(1)
}

/// Where a bulk build puts each element and its neighbour item, given their
/// lengths in element order, from block `start` on.
///
/// Each element is followed by its neighbour item, as [`Filler::place`]
/// does, but when the next element no longer fits a page, the rest of the
/// page takes the neighbour items of the elements that open the next page
/// instead of staying empty. With 384 dimensions four element and neighbour
/// pairs fill a page to within 1,120 bytes, an eighth of it, which is room
/// for five more neighbour items; packed, the index of 59,004 real
/// embeddings takes 12% fewer pages (106.3 MB, 120.8 MB before). An
/// element whose neighbour item went ahead costs a second page only when a
/// search expands it (reads its links), not when it scores it.
pub fn pack(start: u32, lens: &[(usize, usize)]) -> Vec<(Tid, Tid)> {
    let unset = Tid {
        block: 0,
        offset: 0,
    };
    let mut out = vec![(unset, unset); lens.len()];
    let mut filler = Filler::new(start);
    // Elements before `ahead` have their neighbour item placed.
    let mut ahead = 0;
    for (i, &(element_len, neighbour_len)) in lens.iter().enumerate() {
        if !filler.fits(element_len) {
            ahead = ahead.max(i);
            while let Some(&(_, len)) = lens.get(ahead) {
                if !filler.fits(len) {
                    break;
                }
                out[ahead].1 = filler.take(len);
                ahead += 1;
            }
            filler = Filler::new(filler.block + 1);
        }
        out[i].0 = filler.take(element_len);
        if i >= ahead {
            if !filler.fits(neighbour_len) {
                filler = Filler::new(filler.block + 1);
            }
            out[i].1 = filler.take(neighbour_len);
            ahead = i + 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Lists = Lists {
        m: 16,
        coded: false,
    };

    #[test]
    fn a_page_holds_eight_halves_of_384_dims_or_four_f32s() {
        assert_eq!(elements_per_page(384, 16, Encoding::UnitF16), 8);
        // With codes: 32 more bytes an element, 512 more a neighbour item.
        assert_eq!(elements_per_page(384, 16, Encoding::UnitF16Coded), 5);
        assert_eq!(
            Encoding::for_index(Metric::Cosine, 384),
            Encoding::UnitF16Coded
        );
        assert_eq!(Encoding::for_index(Metric::Cosine, 64), Encoding::UnitF16);
        assert_eq!(
            Encoding::for_index(Metric::Cosine, 0).settle(64),
            Encoding::UnitF16
        );
        assert_eq!(
            Encoding::for_index(Metric::Cosine, 0).settle(300),
            Encoding::UnitF16Coded
        );
        assert_eq!(
            Encoding::for_index(Metric::L2, 384).settle(384),
            Encoding::F32
        );
        assert_eq!(elements_per_page(384, 16, Encoding::F32), 4);
        assert_eq!(elements_per_page(2000, 16, Encoding::F32), 1);
    }

    #[test]
    fn pack_fills_pages_and_places_every_item_once() {
        let (e, n) = (element_size(384, Encoding::F32), PLAIN.size(0));
        let upper = PLAIN.size(2);
        let lens: Vec<(usize, usize)> = (0..1000)
            .map(|i| (e, if i % 16 == 0 { upper } else { n }))
            .collect();
        let placed = pack(1, &lens);
        let mut all: Vec<Tid> = placed.iter().flat_map(|&(a, b)| [a, b]).collect();
        all.sort_unstable_by_key(|t| (t.block, t.offset));
        let before = all.len();
        all.dedup();
        assert_eq!(all.len(), before, "no slot given twice");
        assert!(all.iter().all(|t| t.block >= 1 && t.offset >= 1));
        // Offsets on each page run 1, 2, 3, ... and the bytes fit the page.
        let mut used = std::collections::BTreeMap::new();
        for (k, &(a, b)) in placed.iter().enumerate() {
            *used.entry(a.block).or_insert(0) += item_footprint(lens[k].0);
            *used.entry(b.block).or_insert(0) += item_footprint(lens[k].1);
        }
        for (block, bytes) in &used {
            assert!(*bytes <= PAGE_CAPACITY, "page {block}: {bytes} bytes");
            let count = all.iter().filter(|t| t.block == *block).count();
            let max = all
                .iter()
                .filter(|t| t.block == *block)
                .map(|t| t.offset)
                .max();
            assert_eq!(
                max,
                Some(count as u16),
                "page {block}: offsets without gaps"
            );
        }
        // Fewer pages than one element with its neighbours at a time.
        let mut filler = Filler::new(1);
        let mut last = 1;
        for &(a, b) in &lens {
            let (_, nb, _) = filler.place(a, b);
            last = nb.block;
        }
        let packed_last = all.last().map(|t| t.block).unwrap_or(1);
        assert!(
            packed_last * 100 < last * 90,
            "packed {packed_last} pages, placed {last}"
        );
    }

    #[test]
    fn two_thousand_dimensions_fit_a_page() {
        const { assert!(MAX_DIMS >= 2000) };
        assert!(item_footprint(element_size(MAX_DIMS, Encoding::F32)) <= PAGE_CAPACITY);
    }

    #[test]
    fn neighbour_items_round_trip() {
        let lists = vec![
            (1..=5)
                .map(|i| Tid {
                    block: i,
                    offset: 3,
                })
                .collect::<Vec<_>>(),
            vec![Tid {
                block: 9,
                offset: 1,
            }],
        ];
        let mut item = PLAIN.encode(&lists, &[]).unwrap();
        let mut out = Vec::new();
        PLAIN.read(&item, 0, &mut out).unwrap();
        assert_eq!(out, lists[0]);
        PLAIN
            .write(
                &mut item,
                1,
                &[
                    Tid {
                        block: 7,
                        offset: 2,
                    },
                    Tid {
                        block: 8,
                        offset: 4,
                    },
                ],
                &[],
            )
            .unwrap();
        PLAIN.read(&item, 1, &mut out).unwrap();
        assert_eq!(
            out,
            vec![
                Tid {
                    block: 7,
                    offset: 2
                },
                Tid {
                    block: 8,
                    offset: 4
                }
            ]
        );
        assert!(PLAIN
            .write(
                &mut item,
                1,
                &[Tid {
                    block: 1,
                    offset: 1
                }; 17],
                &[],
            )
            .is_err());
        assert!(PLAIN.read(&item, 2, &mut out).is_err());
    }

    #[test]
    fn coded_neighbour_items_keep_a_code_per_layer_0_link() {
        let coded = Lists { m: 16, coded: true };
        assert_eq!(coded.size(1), PLAIN.size(1) + 32 * 16);
        let tid = |block| Tid { block, offset: 1 };
        let code = |k: u64| Code([k, !k]);
        let lists = vec![vec![tid(1), tid(2)], vec![tid(3)]];
        let mut item = coded.encode(&lists, &[code(1), code(2)]).unwrap();
        let (mut out, mut codes) = (Vec::new(), Vec::new());
        coded.read(&item, 0, &mut out).unwrap();
        coded.read_codes(&item, &mut codes).unwrap();
        assert_eq!(out, lists[0]);
        assert_eq!(codes, vec![code(1), code(2)]);
        // A layer-0 list is written with its codes or not at all.
        assert!(coded.write(&mut item, 0, &[tid(4)], &[]).is_err());
        coded
            .write(
                &mut item,
                0,
                &[tid(4), tid(5), tid(6)],
                &[code(4), code(5), code(6)],
            )
            .unwrap();
        coded.read_codes(&item, &mut codes).unwrap();
        assert_eq!(codes, vec![code(4), code(5), code(6)]);
        // Upper layers carry none, and leave layer 0's alone.
        coded.write(&mut item, 1, &[tid(7)], &[]).unwrap();
        coded.read_codes(&item, &mut codes).unwrap();
        assert_eq!(codes.len(), 3);
        // An item of the other shape is refused, not misread.
        assert!(PLAIN.read(&item, 0, &mut out).is_err());
    }

    #[test]
    fn elements_and_meta_round_trip() {
        let h = ElementHeader {
            level: 3,
            flags: FLAG_DELETED,
            heap: Tid {
                block: 70_000,
                offset: 12,
            },
            neighbours: Tid {
                block: 5,
                offset: 9,
            },
        };
        let item = encode_element(&h, &[1.0, -2.5, 3.25], Encoding::F32);
        assert_eq!(ElementHeader::decode(&item).unwrap(), h);
        let mut v = Vec::new();
        element_vector(&item, 3, Encoding::F32, &mut v).unwrap();
        assert_eq!(v, vec![1.0, -2.5, 3.25]);
        assert!(element_vector(&item, 4, Encoding::F32, &mut v).is_err());
        // Halves: half the bytes, the direction kept, the length dropped.
        let item = encode_element(&h, &[3.0, 0.0, -4.0], Encoding::UnitF16);
        assert_eq!(item.len(), ELEMENT_HEADER + 6);
        assert_eq!(ElementHeader::decode(&item).unwrap(), h);
        element_vector(&item, 3, Encoding::UnitF16, &mut v).unwrap();
        // 0.6 and -0.8 rounded to half precision: 4,916 and -6,552 2^-13ths.
        let halves = vec![4_916.0 / 8_192.0, 0.0, -6_552.0 / 8_192.0];
        assert_eq!(v, halves);
        assert_eq!(&*Encoding::UnitF16.stored_form(&[3.0, 0.0, -4.0]), &v[..]);
        assert!(element_vector(&item, 4, Encoding::UnitF16, &mut v).is_err());
        // Version 3: the code between header and vector.
        let coded = encode_element(&h, &[3.0, 0.0, -4.0], Encoding::UnitF16Coded);
        assert_eq!(coded.len(), ELEMENT_HEADER + CODE_BYTES + 6);
        assert_eq!(ElementHeader::decode(&coded).unwrap(), h);
        assert_eq!(
            element_code(&coded).unwrap(),
            Directions::for_dims(3).code(&[3.0, 0.0, -4.0])
        );
        element_vector(&coded, 3, Encoding::UnitF16Coded, &mut v).unwrap();
        assert_eq!(v, halves);
        let meta = Meta {
            dims: 384,
            metric: Metric::Cosine,
            m: 16,
            ef_construction: 64,
            entry: Some((
                Tid {
                    block: 3,
                    offset: 2,
                },
                4,
            )),
            insert_block: 99,
            encoding: Encoding::UnitF16,
        };
        let mut bytes = [0u8; META_SIZE];
        meta.encode(&mut bytes);
        assert_eq!(Meta::decode(&bytes).unwrap(), meta);
        // Version 1 (every index before 0.7.6) reads as f32, of any metric.
        let old = Meta {
            encoding: Encoding::F32,
            ..meta
        };
        old.encode(&mut bytes);
        assert_eq!(bytes[4..8], 1u32.to_ne_bytes());
        assert_eq!(Meta::decode(&bytes).unwrap(), old);
        // Halves under L2 would make wrong lower bounds: refused.
        let l2 = Meta {
            metric: Metric::L2,
            ..meta
        };
        l2.encode(&mut bytes);
        assert!(Meta::decode(&bytes).is_err());
        let coded = Meta {
            encoding: Encoding::UnitF16Coded,
            ..meta
        };
        coded.encode(&mut bytes);
        assert_eq!(Meta::decode(&bytes).unwrap(), coded);
        bytes[4..8].copy_from_slice(&4u32.to_ne_bytes());
        assert!(Meta::decode(&bytes).unwrap_err().contains("REINDEX"));
    }

    #[test]
    fn filler_packs_sequentially() {
        let mut f = Filler::new(1);
        let (e, n, pages) = f.place(element_size(384, Encoding::F32), PLAIN.size(0));
        assert_eq!(
            (e, n, pages),
            (
                Tid {
                    block: 1,
                    offset: 1
                },
                Tid {
                    block: 1,
                    offset: 2
                },
                0
            )
        );
        // 2,000 dimensions: the element fills a page, its neighbours go to the next.
        let mut f = Filler::new(1);
        let (e, n, pages) = f.place(element_size(2000, Encoding::F32), PLAIN.size(0));
        assert_eq!((e.block, n.block, pages), (1, 2, 1));
    }
}
