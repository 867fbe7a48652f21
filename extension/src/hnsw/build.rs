//! `CREATE INDEX` and `REINDEX`: read the table, build the graph in memory
//! on every core ([`vigil_hnsw::build`]), lay it out (linked elements on the
//! same pages, [`vigil_hnsw::layout`]) and write it page by page.
//!
//! The in-memory build holds the vectors once plus the graph's lists; its
//! size is estimated before each row is added
//! ([`vigil_hnsw::build::estimate_build_memory`]). When the next row would
//! pass `maintenance_work_mem`, a NOTICE says so, the rows gathered so far
//! are built and written, and the rest are inserted one at a time through
//! the pages, as `INSERT` does: slower, but never out of memory.
//!
//! Progress shows in `pg_stat_progress_create_index` (phases below, and
//! tuples done of total while writing and inserting).

use pgrx::pg_sys;
use pgrx::prelude::*;
use vigil_hnsw::build::{build, estimate_build_memory, BuildVector, Graph, UnitHalves};
use vigil_hnsw::codes::Code;
use vigil_hnsw::Params;
use vigil_hnsw_page::{
    self as page, element_size, DirectoryItem, Encoding, Meta, Tid, META_BLOCK, PAGE_DATA,
};

use super::buffer::{Locked, Wal};
use super::directory;
use super::items::{add_item, init_page};
use super::meta::{self, write_meta};
use super::{insert, new_params, ops, raise, relation_name};

const PHASE_LOAD: i64 = 2;
const PHASE_BUILD: i64 = 3;
const PHASE_WRITE: i64 = 4;
const PHASE_INSERT: i64 = 5;

#[pg_guard]
pub unsafe extern "C-unwind" fn ambuildphasename(phase: i64) -> *mut std::ffi::c_char {
    let name: &'static std::ffi::CStr = match phase {
        PHASE_LOAD => c"loading tuples",
        PHASE_BUILD => c"building graph in memory",
        PHASE_WRITE => c"writing pages",
        PHASE_INSERT => c"inserting tuples (maintenance_work_mem exhausted)",
        _ => return std::ptr::null_mut(),
    };
    name.as_ptr() as *mut std::ffi::c_char
}

fn progress(param: u32, value: i64) {
    // SAFETY: plain statistics update for the current command.
    unsafe { pg_sys::pgstat_progress_update_param(param as i32, value) }
}

/// The rows gathered for the in-memory build, their vectors held in the
/// form the index stores: a cosine index's as unit halves (half the memory
/// of f32: at 384 dimensions about 1.5 times the rows fit in
/// `maintenance_work_mem`; and the build scores what the pages will hold),
/// the others as given.
enum Rows {
    F32(Vec<(Tid, Vec<f32>)>),
    Halves(Vec<(Tid, UnitHalves)>),
}

impl Rows {
    fn new(encoding: Encoding) -> Rows {
        match encoding {
            Encoding::F32 => Rows::F32(Vec::new()),
            Encoding::UnitF16 | Encoding::UnitF16Coded => Rows::Halves(Vec::new()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Rows::F32(r) => r.len(),
            Rows::Halves(r) => r.len(),
        }
    }

    /// Bytes the build of `n` of them takes at most.
    fn estimate(&self, n: usize, params: &Params) -> usize {
        match self {
            Rows::F32(_) => estimate_build_memory::<Vec<f32>>(n, params.dims, params.m),
            Rows::Halves(_) => estimate_build_memory::<UnitHalves>(n, params.dims, params.m),
        }
    }

    fn push(&mut self, index: pg_sys::Relation, params: &Params, heap: Tid, vector: &[f32]) {
        match self {
            Rows::F32(r) => r.push((heap, vector.to_vec())),
            Rows::Halves(r) => {
                let halves = UnitHalves::of::<usize>(params, vector)
                    .unwrap_or_else(|e| raise(index, format!("row {heap:?}: {e}")));
                r.push((heap, halves));
            }
        }
    }
}

/// What the heap scan callback accumulates.
struct BuildState {
    index: pg_sys::Relation,
    params: Params,
    /// Heap TIDs and vectors of the rows not yet written.
    rows: Rows,
    /// Their keys, in a partitioned index (one per row of `rows`).
    keys: Option<Vec<i64>>,
    limit: usize,
    /// False once memory ran out: rows go straight to the pages.
    in_memory: bool,
    indexed: f64,
}

#[pg_guard]
pub unsafe extern "C-unwind" fn ambuild(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    index_info: *mut pg_sys::IndexInfo,
) -> *mut pg_sys::IndexBuildResult {
    if pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM) != 0 {
        error!(
            "vigil_hnsw: index \"{}\" already contains data",
            relation_name(index)
        );
    }
    let params = new_params(index);
    let partitioned = super::partitioned(index);
    // A partitioned index's first column is its key, read as a bigint.
    if (*(*index).rd_index).indnkeyatts > 2
        || (partitioned && *(*index).rd_opcintype != pg_sys::INT8OID)
    {
        error!("vigil_hnsw indexes one column (a vector) or two (a bigint key, then a vector)");
    }
    meta::create_meta(index, &empty_meta(&params, partitioned));
    let mut state = BuildState {
        index,
        params,
        rows: Rows::new(Encoding::for_index(params.metric, params.dims)),
        keys: partitioned.then(Vec::new),
        limit: (pg_sys::maintenance_work_mem as usize).saturating_mul(1024),
        in_memory: true,
        indexed: 0.0,
    };
    progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_LOAD);
    let heap_tuples = pg_sys::table_index_build_scan(
        heap,
        index,
        index_info,
        true,
        true,
        Some(build_callback),
        &mut state as *mut BuildState as *mut std::ffi::c_void,
        std::ptr::null_mut(),
    );
    if state.in_memory {
        write_graph(&mut state);
    } else {
        // The in-memory build links them itself.
        let _ = super::vacuum::link_unreached(index, state.indexed as usize);
    }
    let mut result = PgBox::<pg_sys::IndexBuildResult>::alloc0();
    result.heap_tuples = heap_tuples;
    result.index_tuples = state.indexed;
    result.into_pg()
}

/// An unlogged index's init fork: just the meta page.
#[pg_guard]
pub unsafe extern "C-unwind" fn ambuildempty(index: pg_sys::Relation) {
    let params = new_params(index);
    let buf = pg_sys::ReadBufferExtended(
        index,
        pg_sys::ForkNumber::INIT_FORKNUM,
        pg_sys::InvalidBlockNumber,
        pg_sys::ReadBufferMode::RBM_NORMAL,
        std::ptr::null_mut(),
    );
    pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_EXCLUSIVE as i32);
    let page = pg_sys::BufferGetPage(buf);
    // As ginbuildempty: change, dirty and log the page in one critical section.
    pg_sys::CritSectionCount += 1;
    init_page(page, page::PAGE_META);
    write_meta(page, &empty_meta(&params, super::partitioned(index)));
    pg_sys::MarkBufferDirty(buf);
    pg_sys::log_newpage_buffer(buf, true);
    pg_sys::CritSectionCount -= 1;
    pg_sys::UnlockReleaseBuffer(buf);
}

fn empty_meta(params: &Params, partitioned: bool) -> Meta {
    Meta {
        partitioned,
        directory: 0,
        directory_version: 0,
        dims: params.dims as u32,
        metric: params.metric,
        m: params.m as u32,
        ef_construction: params.ef_construction as u32,
        entry: None,
        insert_block: META_BLOCK,
        encoding: Encoding::for_index(params.metric, params.dims),
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn build_callback(
    _index: pg_sys::Relation,
    tid: pg_sys::ItemPointer,
    values: *mut pg_sys::Datum,
    isnull: *mut bool,
    _alive: bool,
    state: *mut std::ffi::c_void,
) {
    let state = &mut *(state as *mut BuildState);
    let Some((key, datum)) = super::row_key(state.index, values, isnull) else {
        return;
    };
    let (block, offset) = pgrx::itemptr::item_pointer_get_both(*tid);
    let heap = Tid { block, offset };
    let vector = ops::vector_from_datum(datum)
        .unwrap_or_else(|e| raise(state.index, format!("row {heap:?}: {e}")));
    if state.params.dims == 0 {
        state.params.dims = vector.len();
    }
    if vector.len() != state.params.dims {
        raise(
            state.index,
            format!(
                "row {heap:?} has {} dimensions, earlier rows {}: every vector in one index must have the same dimensions",
                vector.len(),
                state.params.dims
            ),
        );
    }
    if vector.len() > page::MAX_DIMS {
        raise(
            state.index,
            format!(
                "vectors of {} dimensions exceed the maximum of {}",
                vector.len(),
                page::MAX_DIMS
            ),
        );
    }
    if !state.params.indexes(vector) {
        return;
    }
    if !state.in_memory {
        insert::insert_vector(state.index, heap, key, vector);
        state.indexed += 1.0;
        return;
    }
    let need = state.rows.estimate(state.rows.len() + 1, &state.params);
    if need > state.limit {
        notice!(
            "vigil_hnsw graph no longer fits into maintenance_work_mem after {} rows; the rest are inserted one at a time (slower). Raise maintenance_work_mem to build in memory.",
            state.rows.len()
        );
        write_graph(state);
        state.in_memory = false;
        progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_INSERT);
        insert::insert_vector(state.index, heap, key, vector);
        state.indexed += 1.0;
        return;
    }
    state.rows.push(state.index, &state.params, heap, vector);
    if let (Some(keys), Some(key)) = (state.keys.as_mut(), key) {
        keys.push(key);
    }
}

/// Builds the gathered rows' graph and writes it after the meta page.
fn write_graph(state: &mut BuildState) {
    let encoding = Encoding::for_index(state.params.metric, state.params.dims);
    let keys = state.keys.take();
    state.indexed += match std::mem::replace(&mut state.rows, Rows::new(encoding)) {
        Rows::F32(rows) => build_and_write(state.index, state.params, rows, keys),
        Rows::Halves(rows) => build_and_write(state.index, state.params, rows, keys),
    } as f64;
}

/// Graphs smaller than this are built on one thread: most keys of a
/// partitioned index are small, and threads would cost more than they give.
const PARALLEL_FROM: usize = 10_000;

/// Builds the graph of `rows` and writes it; the number of rows written.
fn build_and_write<V: BuildVector + ElementBytes>(
    index: pg_sys::Relation,
    params: Params,
    rows: Vec<(Tid, V)>,
    keys: Option<Vec<i64>>,
) -> usize {
    if rows.is_empty() {
        return 0;
    }
    meta::update_meta(index, |meta| {
        if meta.dims == 0 {
            meta.encoding = meta.encoding.settle(params.dims);
        }
        meta.dims = params.dims as u32;
    });
    progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_BUILD);
    let mut heap_tids = Vec::with_capacity(rows.len());
    let items: Vec<(usize, V)> = rows
        .into_iter()
        .enumerate()
        .map(|(i, (heap, v))| {
            heap_tids.push(heap);
            (i, v)
        })
        .collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let encoding = Encoding::for_index(params.metric, params.dims);
    let per_page = page::elements_per_page(params.dims, params.m, encoding);
    let Some(keys) = keys else {
        let mut graph = build(&params, items, threads).unwrap_or_else(|e| raise(index, e));
        graph.order_for_locality(per_page);
        progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_WRITE);
        progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_TOTAL, graph.len() as i64);
        write_pages(index, &params, graph, &heap_tids, None);
        return heap_tids.len();
    };
    // One graph per key, laid out one after another.
    let mut groups: std::collections::BTreeMap<i64, Vec<(usize, V)>> = Default::default();
    for (i, v) in items {
        groups.entry(keys[i]).or_default().push((i, v));
    }
    let mut all = Graph {
        params,
        entry: None,
        elements: Vec::with_capacity(heap_tids.len()),
    };
    let mut entries = Vec::with_capacity(groups.len());
    for (key, group) in groups {
        pgrx::check_for_interrupts!();
        let threads = if group.len() >= PARALLEL_FROM {
            threads
        } else {
            1
        };
        let mut graph = build(&params, group, threads).unwrap_or_else(|e| raise(index, e));
        graph.order_for_locality(per_page);
        entries.push((key, graph.entry));
        all.elements.extend(graph.elements);
    }
    progress(pg_sys::PROGRESS_CREATEIDX_SUBPHASE, PHASE_WRITE);
    progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_TOTAL, all.len() as i64);
    let by_id = write_pages(index, &params, all, &heap_tids, Some(&keys));
    let items: Vec<DirectoryItem> = entries
        .into_iter()
        .map(|(key, entry)| DirectoryItem {
            key,
            entry: entry.map(|e| (by_id[e.id], e.level as u32)),
        })
        .collect();
    directory::write_all(index, &items);
    heap_tids.len()
}

/// An element item's bytes from a vector as the build holds it, and its
/// neighbour code where the index keeps codes.
trait ElementBytes {
    fn element_item(&self, header: &page::ElementHeader, encoding: Encoding) -> Vec<u8>;
    fn code(&self) -> Option<Code>;
}

impl ElementBytes for Vec<f32> {
    fn element_item(&self, header: &page::ElementHeader, encoding: Encoding) -> Vec<u8> {
        page::encode_element(header, self, encoding)
    }

    fn code(&self) -> Option<Code> {
        None
    }
}

impl ElementBytes for UnitHalves {
    fn element_item(&self, header: &page::ElementHeader, encoding: Encoding) -> Vec<u8> {
        // Rows are held in halves only for an index that stores halves.
        let code = encoding.coded().then(|| self.code());
        page::encode_halves_element(header, self.halves(), code)
    }

    fn code(&self) -> Option<Code> {
        Some(UnitHalves::code(self))
    }
}

/// Lays the graph out ([`page::pack`]) and writes each page as one
/// full-image WAL record, items in page and offset order; where each
/// element went, by id. In a partitioned index, `keys` (by id) go into the
/// element items, and the graph is every key's graph, one after another.
fn write_pages<V: BuildVector + ElementBytes>(
    index: pg_sys::Relation,
    params: &Params,
    graph: Graph<usize, V>,
    heap_tids: &[Tid],
    keys: Option<&[i64]>,
) -> Vec<Tid> {
    let encoding = Encoding::for_index(params.metric, params.dims);
    let lists = page::Lists {
        m: params.m,
        coded: encoding.coded(),
    };
    let lens: Vec<(usize, usize)> = graph
        .elements
        .iter()
        .map(|e| {
            let key = if keys.is_some() { page::KEY_BYTES } else { 0 };
            (
                element_size(params.dims, encoding) + key,
                lists.size(e.level),
            )
        })
        .collect();
    // Codes by element id, for the links to each.
    let mut codes = vec![Code::default(); if lists.coded { graph.len() } else { 0 }];
    if lists.coded {
        for e in &graph.elements {
            codes[e.id] = e.vector.code().unwrap_or_default();
        }
    }
    let placed = page::pack(META_BLOCK + 1, &lens);
    let mut by_id = vec![
        Tid {
            block: 0,
            offset: 0
        };
        graph.len()
    ];
    for (e, &(elem, _)) in graph.elements.iter().zip(&placed) {
        by_id[e.id] = elem;
    }
    let heap: Vec<Tid> = graph.elements.iter().map(|e| heap_tids[e.id]).collect();

    // Every item, by where it goes: (slot, element index, is the element).
    let mut items: Vec<(Tid, usize, bool)> = placed
        .iter()
        .enumerate()
        .flat_map(|(k, &(elem, neigh))| [(elem, k, true), (neigh, k, false)])
        .collect();
    items.sort_unstable_by_key(|&(at, _, _)| (at.block, at.offset));
    let mut page_writer = PageWriter::new(index);
    for (done, &(at, k, is_element)) in items.iter().enumerate() {
        let e = &graph.elements[k];
        let item = if is_element {
            let mut item = e.vector.element_item(
                &page::ElementHeader {
                    level: e.level as u8,
                    flags: 0,
                    heap: heap[k],
                    neighbours: placed[k].1,
                },
                encoding,
            );
            if let Some(keys) = keys {
                page::append_key(&mut item, keys[e.id]);
            }
            item
        } else {
            // Links by where their elements were placed, with their codes.
            let links: Vec<Vec<Tid>> = e
                .neighbours
                .iter()
                .map(|l| l.iter().map(|&j| by_id[j]).collect())
                .collect();
            let link_codes: Vec<Code> = match (lists.coded, e.neighbours.first()) {
                (true, Some(l)) => l.iter().map(|&j| codes[j]).collect(),
                _ => Vec::new(),
            };
            lists
                .encode(&links, &link_codes)
                .unwrap_or_else(|err| raise(index, err))
        };
        page_writer.add(at, &item);
        if done % 2048 == 0 {
            progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, (done / 2) as i64);
            pgrx::check_for_interrupts!();
        }
    }
    let last = page_writer.finish();

    meta::update_meta(index, |meta| {
        meta.entry = graph.entry.map(|e| (by_id[e.id], e.level as u32));
        meta.insert_block = last;
    });
    progress(pg_sys::PROGRESS_CREATEIDX_TUPLES_DONE, graph.len() as i64);
    by_id
}

/// Appends items to new pages at the end of the index, one WAL record per page.
struct PageWriter {
    index: pg_sys::Relation,
    current: Option<(u32, Wal, pg_sys::Page)>,
    last: u32,
}

impl PageWriter {
    fn new(index: pg_sys::Relation) -> PageWriter {
        PageWriter {
            index,
            current: None,
            last: META_BLOCK,
        }
    }

    fn add(&mut self, at: Tid, item: &[u8]) {
        if self.current.as_ref().map(|c| c.0) != Some(at.block) {
            self.flush();
            let locked = Locked::extend(self.index);
            if locked.block() != at.block {
                raise(
                    self.index,
                    format!(
                        "page {} was laid out but the index grew to {}",
                        at.block,
                        locked.block()
                    ),
                );
            }
            let mut wal = Wal::start(self.index);
            let page = wal.register(locked, true);
            // SAFETY: a new page's image, ours alone.
            unsafe { init_page(page, PAGE_DATA) };
            self.current = Some((at.block, wal, page));
            self.last = at.block;
        }
        if let Some((_, _, page)) = &self.current {
            // SAFETY: the current page's image under its WAL record.
            unsafe { add_item(*page, at, item) }.unwrap_or_else(|e| raise(self.index, e));
        }
    }

    fn flush(&mut self) {
        if let Some((_, wal, _)) = self.current.take() {
            wal.finish();
        }
    }

    /// Writes the last page; returns the last block written.
    fn finish(mut self) -> u32 {
        self.flush();
        self.last
    }
}
