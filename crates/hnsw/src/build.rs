//! Parallel bulk build: the crate's own insert on every core, in memory,
//! producing a plain [`Graph`].
//!
//! `CREATE INDEX` on a table that fits in `maintenance_work_mem` builds the
//! whole graph in memory and then writes it out page by page. The build runs
//! the very algorithm `INSERT` runs ([`plan_links`] then [`write_element`])
//! over [`BuildStore`], an in-memory [`GraphStore`] made for threads:
//!
//! * Vectors are read in place, never locked: every vector is known before
//!   the first insert and none changes during the build. An element becomes
//!   reachable only once a neighbour links to it, after its own lists are in.
//! * Each neighbour list sits behind its own mutex, held only to copy or to
//!   compare and replace it; link-backs that race are redone by
//!   [`write_element`] exactly as between two `INSERT`s.
//! * One read-write lock orders entry-point changes: an element whose level
//!   is above the entry point's is inserted alone, every other one beside the
//!   rest (what the access method does with its graph lock).
//! * At the end, elements no search could reach are linked
//!   ([`link_unreached`]), one thread, in memory.
//! * Levels are drawn up front from a [`LevelRng`] seeded by the row count,
//!   and so is the order rows are inserted in (a shuffle: input sorted by
//!   cluster built a worse graph), a shared counter handing each thread its
//!   next row. One thread gives the same graph every time.
//! * A cosine graph is built over unit vectors (cosine distance ignores
//!   length); the returned elements carry them. The vectors may come as
//!   [`UnitHalves`] instead of f32 ([`BuildVector`]): half the memory, half
//!   the bytes each distance waits on, and what a cosine index's pages hold,
//!   so the build scores what later searches score.
//!
//! This replaced a build with the `hnsw_rs` crate: that needed a copy of
//! every vector, an allocation per link, and a translation of its lists
//! (links above an element's level, lists shrunk by distance alone that
//! lost the links between clusters). Ours is the graph `INSERT` would build.

use std::convert::Infallible;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

use crate::codes::{Code, Directions};
use crate::distance::{normalize, prefetch_bytes, unit_halves, Metric};
use crate::error::{Error, StoreError};
use crate::ids::{IdMap, IdSet};
use crate::insert::{plan_links, write_element, LevelRng};
use crate::layout::{locality_order, Links};
use crate::params::Params;
use crate::reach::link_unreached;
use crate::store::{ElementId, ElementMeta, ElementVisitor, EntryPoint, GraphStore, VectorRef};

/// A vector as the bulk build holds it: as given, in f32, or as
/// [`UnitHalves`] (cosine only), half the memory and the very form a cosine
/// index keeps on its pages.
pub trait BuildVector: Clone + std::fmt::Debug + PartialEq + Send + Sync {
    /// Bytes a dimension takes.
    const BYTES_PER_DIM: usize;
    /// Its dimensions.
    fn dims(&self) -> usize;
    /// The vector as the build scores it.
    fn as_ref(&self) -> VectorRef<'_>;
    /// Checks it for `params` and brings it to the form the build scores
    /// (unit length under cosine).
    fn prepare<I: ElementId>(&mut self, params: &Params) -> Result<(), BuildError<I>>;
}

impl BuildVector for Vec<f32> {
    const BYTES_PER_DIM: usize = 4;

    fn dims(&self) -> usize {
        self.len()
    }

    fn as_ref(&self) -> VectorRef<'_> {
        VectorRef::F32(self)
    }

    fn prepare<I: ElementId>(&mut self, params: &Params) -> Result<(), BuildError<I>> {
        params.validate_vector::<I, Infallible>(self)?;
        if params.metric == Metric::Cosine {
            normalize(self);
        }
        Ok(())
    }
}

/// A vector scaled to unit length and rounded to IEEE half precision
/// ([`crate::distance::unit_halves`]): what a cosine build can hold instead
/// of the f32 vector, in half the memory, scored by the same kernel a scan
/// uses on a cosine index's pages.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitHalves(Vec<u16>, Code);

impl UnitHalves {
    /// The unit halves of `v`, after the checks every indexed vector passes
    /// (dimensions, finite, not zero); cosine only.
    pub fn of<I: ElementId>(params: &Params, v: &[f32]) -> Result<UnitHalves, BuildError<I>> {
        cosine_only::<I>(params)?;
        params.validate_vector::<I, Infallible>(v)?;
        let mut halves = Vec::with_capacity(v.len());
        unit_halves(v, &mut halves);
        Ok(UnitHalves(halves, Directions::for_dims(v.len()).code(v)))
    }

    /// The vector's neighbour code ([`crate::codes`]), made from the f32
    /// vector as an insert makes it.
    pub fn code(&self) -> Code {
        self.1
    }

    /// The half-precision bit patterns.
    pub fn halves(&self) -> &[u16] {
        &self.0
    }
}

/// Refuses a metric other than cosine: halves are of the unit vector.
fn cosine_only<I: ElementId>(params: &Params) -> Result<(), BuildError<I>> {
    if params.metric == Metric::Cosine {
        Ok(())
    } else {
        Err(BuildError::<I>::Build(
            "unit halves hold cosine vectors only".into(),
        ))
    }
}

impl BuildVector for UnitHalves {
    const BYTES_PER_DIM: usize = 2;

    fn dims(&self) -> usize {
        self.0.len()
    }

    fn as_ref(&self) -> VectorRef<'_> {
        VectorRef::F16(&self.0)
    }

    fn prepare<I: ElementId>(&mut self, params: &Params) -> Result<(), BuildError<I>> {
        cosine_only::<I>(params)?;
        if self.0.len() != params.dims {
            return Err(BuildError::<I>::Dimensions {
                expected: params.dims,
                got: self.0.len(),
            });
        }
        Ok(())
    }
}

/// One element of a built graph.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphElement<I, V = Vec<f32>> {
    pub id: I,
    pub level: usize,
    pub vector: V,
    /// One list per layer `0..=level`, each within [`Params::capacity`].
    pub neighbours: Vec<Vec<I>>,
}

/// A complete graph held in memory, ready to be written to a store.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph<I, V = Vec<f32>> {
    pub params: Params,
    pub entry: Option<EntryPoint<I>>,
    pub elements: Vec<GraphElement<I, V>>,
}

impl<I: ElementId, V: BuildVector> Graph<I, V> {
    pub fn len(&self) -> usize {
        self.elements.len()
    }

    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// Writes every element, then the entry point, into `store` (which
    /// should be empty). Lists may name elements not yet written; a page
    /// store can take that because ids are slot addresses fixed in advance.
    pub fn load_into<S: GraphStore<Id = I>>(&self, store: &mut S) -> Result<(), StoreError<S>> {
        for e in &self.elements {
            store
                .insert_element(e.id, e.level, &e.vector.as_ref().to_f32(), &e.neighbours)
                .map_err(StoreError::<S>::Storage)?;
        }
        store
            .set_entry_point(self.entry)
            .map_err(StoreError::<S>::Storage)
    }

    /// Reorders the elements so that ones linked to each other come
    /// together, `window` at a time (see [`crate::layout`]): a store that
    /// lays elements out in this order, `window` to a page, has a search
    /// read fewer pages. The entry point comes first. The graph itself is
    /// unchanged.
    pub fn order_for_locality(&mut self, window: usize) {
        let position: IdMap<I, u32> = self
            .elements
            .iter()
            .enumerate()
            .map(|(k, e)| (e.id, k as u32))
            .collect();
        let links = Links::new(self.elements.iter().map(|e| {
            let layer0 = e.neighbours.first().map_or(&[][..], Vec::as_slice);
            layer0.iter().filter_map(|id| position.get(id).copied())
        }));
        let start = self
            .entry
            .and_then(|e| position.get(&e.id))
            .map_or(0, |&k| k as usize);
        drop(position);
        let order = locality_order(&links, start, window);
        drop(links);
        let mut slots: Vec<Option<GraphElement<I, V>>> = std::mem::take(&mut self.elements)
            .into_iter()
            .map(Some)
            .collect();
        self.elements = order.into_iter().filter_map(|k| slots[k].take()).collect();
    }
}

type BuildError<I> = Error<I, Infallible>;

/// Bytes [`build`] needs at its peak for `n` vectors of `dims` dimensions
/// held as `V`,
/// to compare with `maintenance_work_mem` before choosing the in-memory
/// build. Counts the caller's vectors (moved, never copied), per element a
/// lock and list per layer at full capacity (4-byte ids), and our output
/// lists (8-byte ids, built while the working lists still exist); about 10%
/// is added for allocator slack. Deliberately on the high side. Ordering the
/// result for locality ([`Graph::order_for_locality`]) comes after the
/// working lists are freed and needs less than they did
/// (`tests/build_memory.rs` measures both).
pub fn estimate_build_memory<V: BuildVector>(n: usize, dims: usize, m: usize) -> usize {
    let vector = 24 + V::BYTES_PER_DIM * dims;
    // Layer 0 holds up to 2m ids; upper layers add about 1/(m-1) of m more.
    let ids = 2 * m + 2;
    // Boxed slice of layers, one mutex-guarded Vec per layer (about 1.1).
    let working = 16 + 2 * 32 + ids * 4;
    // Output: list headers and ids.
    let output = 2 * 24 + ids * 8;
    // Level, input tuple, output element header.
    let fixed = 1 + 32 + 64;
    let total = n.saturating_mul(vector + working + output + fixed);
    total.saturating_add(total / 10)
}

/// Builds a graph over `items` on `threads` threads.
///
/// The vectors are moved into the result (no copy). Errors: invalid
/// parameters, a bad vector or a duplicate id.
pub fn build<I: ElementId + Send + Sync, V: BuildVector>(
    params: &Params,
    items: Vec<(I, V)>,
    threads: usize,
) -> Result<Graph<I, V>, BuildError<I>> {
    params.validate().map_err(BuildError::<I>::InvalidParams)?;
    let mut items = items;
    let mut ids: IdSet<I> = IdSet::default();
    for (id, v) in &mut items {
        v.prepare::<I>(params)?;
        if !ids.insert(*id) {
            return Err(BuildError::<I>::Build(format!(
                "duplicate element id {id:?}"
            )));
        }
    }
    drop(ids);
    let n = items.len();
    if n == 0 {
        return Ok(Graph {
            params: *params,
            entry: None,
            elements: Vec::new(),
        });
    }
    if u32::try_from(n).is_err() {
        return Err(BuildError::<I>::Build(format!(
            "{n} elements: at most {} in one build",
            u32::MAX
        )));
    }
    let mut rng = LevelRng::new(0x5EED_0000_0000_0000 ^ n as u64);
    let levels: Vec<u8> = (0..n).map(|_| rng.level(params) as u8).collect();
    let order = shuffled(n, &mut rng);
    let (vectors, ids): (Vec<V>, Vec<I>) = items.into_iter().map(|(id, v)| (v, id)).unzip();
    let store = BuildStore::new(&vectors, levels);
    catch_unwind(AssertUnwindSafe(|| {
        store.insert_all(params, &order, threads)
    }))
    .map_err(|p| BuildError::<I>::Build(panic_message(&*p)))?
    .map_err(BuildError::<I>::Build)?;
    link_unreached(&mut View(&store), params).map_err(|e| BuildError::<I>::Build(e.to_string()))?;
    let (levels, lists, entry) = store.into_parts();
    let entry = entry.map(|e| EntryPoint {
        id: ids[e.id as usize],
        level: e.level,
    });
    let elements = vectors
        .into_iter()
        .zip(levels)
        .zip(lists)
        .zip(&ids)
        .map(|(((vector, level), layers), &id)| GraphElement {
            id,
            level: usize::from(level),
            vector,
            neighbours: layers
                .into_iter()
                .map(|l| l.into_iter().map(|j| ids[j as usize]).collect())
                .collect(),
        })
        .collect();
    Ok(Graph {
        params: *params,
        entry,
        elements,
    })
}

/// `0..n` in an order drawn from `rng`: the order the rows are inserted in.
/// Input order is often sorted by something the vectors follow (a table
/// loaded per category, per tenant, per day); inserted that way, each
/// cluster links mostly within itself before the next arrives, and
/// searches missed 3.6% of 3,000 clustered elements sorted by cluster
/// (`tests/hnsw/build.rs`), where a random order misses none.
fn shuffled(n: usize, rng: &mut LevelRng) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// One element's neighbour lists, one per layer.
type Layers = Vec<Vec<u32>>;

/// The graph under construction, shared by the build threads; see the
/// module docs for what is locked and why. Ids are input positions.
struct BuildStore<'a, V> {
    vectors: &'a [V],
    levels: Vec<u8>,
    /// Per element, one list per layer `0..=level`.
    lists: Vec<Box<[Mutex<Vec<u32>>]>>,
    entry: Mutex<Option<EntryPoint<u32>>>,
    /// Shared by inserts below the entry point, exclusive for one above.
    graph: RwLock<()>,
}

/// What the build's store can report: an id it does not hold (only a bug
/// would ask), or a request the build never makes.
#[derive(Debug, thiserror::Error)]
enum BuildStoreError {
    #[error("element {0} is not in the build")]
    Unknown(u32),
    #[error("element {id} has no layer {layer}")]
    NoLayer { id: u32, layer: usize },
    #[error("{0} is not part of a build")]
    Unsupported(&'static str),
}

impl<'a, V: BuildVector> BuildStore<'a, V> {
    fn new(vectors: &'a [V], levels: Vec<u8>) -> Self {
        let lists = levels
            .iter()
            .map(|&l| (0..=l).map(|_| Mutex::new(Vec::new())).collect())
            .collect();
        BuildStore {
            vectors,
            levels,
            lists,
            entry: Mutex::new(None),
            graph: RwLock::new(()),
        }
    }

    /// Inserts every element, in `order`, on `threads` threads; the first
    /// error stops all.
    fn insert_all(&self, params: &Params, order: &[u32], threads: usize) -> Result<(), String> {
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let first_error = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..threads.max(1) {
                s.spawn(|| {
                    while !failed.load(Ordering::Relaxed) {
                        let Some(&id) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        if let Err(e) = self.insert_one(params, id) {
                            failed.store(true, Ordering::Relaxed);
                            first_error
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .get_or_insert(e);
                        }
                    }
                });
            }
        });
        match first_error
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Inserts element `id`: beside other inserts while its level is at most
    /// the entry point's (checked under the shared lock, so no raise can
    /// happen meanwhile), otherwise alone under the exclusive lock, where
    /// [`write_element`] raises the entry point.
    fn insert_one(&self, params: &Params, id: u32) -> Result<(), String> {
        let level = usize::from(self.levels[id as usize]);
        let vector = &*self.vectors[id as usize].as_ref().to_f32();
        let run = || {
            let mut view = View(self);
            let lists = plan_links(&view, params, vector, level).map_err(|e| e.to_string())?;
            write_element(&mut view, params, id, vector, level, &lists).map_err(|e| e.to_string())
        };
        {
            let _shared = self.graph.read().unwrap_or_else(PoisonError::into_inner);
            let entry = *self.entry.lock().unwrap_or_else(PoisonError::into_inner);
            if entry.is_some_and(|e| level <= e.level) {
                return run();
            }
        }
        let _exclusive = self.graph.write().unwrap_or_else(PoisonError::into_inner);
        run()
    }

    /// The list of `id` on `layer`, locked.
    fn list(&self, id: u32, layer: usize) -> Result<MutexGuard<'_, Vec<u32>>, BuildStoreError> {
        let layers = self
            .lists
            .get(id as usize)
            .ok_or(BuildStoreError::Unknown(id))?;
        let list = layers
            .get(layer)
            .ok_or(BuildStoreError::NoLayer { id, layer })?;
        Ok(list.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Levels, lists (per element, per layer) and the entry point.
    fn into_parts(self) -> (Vec<u8>, Vec<Layers>, Option<EntryPoint<u32>>) {
        let lists = self
            .lists
            .into_iter()
            .map(|layers| {
                layers
                    .into_vec()
                    .into_iter()
                    .map(|l| l.into_inner().unwrap_or_else(PoisonError::into_inner))
                    .collect()
            })
            .collect();
        let entry = self
            .entry
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        (self.levels, lists, entry)
    }
}

/// One thread's handle on the [`BuildStore`]: the algorithm's writes take
/// `&mut self`, the store is shared.
struct View<'s, 'a, V>(&'s BuildStore<'a, V>);

impl<V: BuildVector> View<'_, '_, V> {
    /// The vector and what is known of element `id`.
    fn element(&self, id: u32) -> Result<(&V, ElementMeta), BuildStoreError> {
        let i = id as usize;
        let (Some(v), Some(&level)) = (self.0.vectors.get(i), self.0.levels.get(i)) else {
            return Err(BuildStoreError::Unknown(id));
        };
        let meta = ElementMeta {
            level: usize::from(level),
            deleted: false,
        };
        Ok((v, meta))
    }
}

impl<V: BuildVector> GraphStore for View<'_, '_, V> {
    type Id = u32;
    type Error = BuildStoreError;

    fn entry_point(&self) -> Result<Option<EntryPoint<u32>>, BuildStoreError> {
        Ok(*self.0.entry.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn with_element<R>(
        &self,
        id: u32,
        f: impl FnOnce(ElementMeta, &[f32]) -> R,
    ) -> Result<R, BuildStoreError> {
        let (v, meta) = self.element(id)?;
        Ok(f(meta, &v.as_ref().to_f32()))
    }

    fn resident_vector(&self, id: u32) -> Option<VectorRef<'_>> {
        self.0.vectors.get(id as usize).map(BuildVector::as_ref)
    }

    fn with_elements(
        &self,
        ids: &[u32],
        f: &mut ElementVisitor<'_, u32>,
    ) -> Result<(), BuildStoreError> {
        for &id in ids {
            if let Some(v) = self.0.vectors.get(id as usize) {
                let (at, len) = match v.as_ref() {
                    VectorRef::F32(x) => (x.as_ptr() as *const u8, std::mem::size_of_val(x)),
                    VectorRef::F16(h) => (h.as_ptr() as *const u8, std::mem::size_of_val(h)),
                };
                prefetch_bytes(at, len);
            }
        }
        for &id in ids {
            let (v, meta) = self.element(id)?;
            f(id, meta, v.as_ref());
        }
        Ok(())
    }

    fn neighbours(&self, id: u32, layer: usize, out: &mut Vec<u32>) -> Result<(), BuildStoreError> {
        let list = self.0.list(id, layer)?;
        out.clear();
        out.extend_from_slice(&list);
        Ok(())
    }

    fn for_each_element(&self, f: &mut dyn FnMut(u32, ElementMeta)) -> Result<(), BuildStoreError> {
        for (i, &level) in self.0.levels.iter().enumerate() {
            let meta = ElementMeta {
                level: usize::from(level),
                deleted: false,
            };
            f(i as u32, meta);
        }
        Ok(())
    }

    fn insert_element(
        &mut self,
        id: u32,
        _level: usize,
        _vector: &[f32],
        neighbours: &[Vec<u32>],
    ) -> Result<(), BuildStoreError> {
        for (layer, list) in neighbours.iter().enumerate() {
            self.set_neighbours(id, layer, list)?;
        }
        Ok(())
    }

    fn set_neighbours(
        &mut self,
        id: u32,
        layer: usize,
        new: &[u32],
    ) -> Result<(), BuildStoreError> {
        let mut list = self.0.list(id, layer)?;
        list.clear();
        list.extend_from_slice(new);
        Ok(())
    }

    fn replace_neighbours(
        &mut self,
        id: u32,
        layer: usize,
        expected: &[u32],
        new: &[u32],
    ) -> Result<bool, BuildStoreError> {
        let mut list = self.0.list(id, layer)?;
        if list.as_slice() != expected {
            return Ok(false);
        }
        list.clear();
        list.extend_from_slice(new);
        Ok(true)
    }

    fn mark_deleted(&mut self, _id: u32) -> Result<(), BuildStoreError> {
        Err(BuildStoreError::Unsupported("deleting"))
    }

    fn remove_element(&mut self, _id: u32) -> Result<(), BuildStoreError> {
        Err(BuildStoreError::Unsupported("removing"))
    }

    fn set_entry_point(&mut self, entry: Option<EntryPoint<u32>>) -> Result<(), BuildStoreError> {
        *self.0.entry.lock().unwrap_or_else(PoisonError::into_inner) = entry;
        Ok(())
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("the build panicked: {msg}")
}
