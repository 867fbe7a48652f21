//! The storage trait the algorithm runs over, and an in-memory implementation.
//!
//! The trait is shaped for the Postgres access method: elements live in
//! fixed-size slots on pages, so
//! * every call can fail (the glue turns `ereport` into `Err`),
//! * reads copy or visit: [`GraphStore::with_element`] lends the vector only
//!   for the duration of a closure (the page stays pinned and locked for that
//!   long and no longer),
//! * writes are per element and per layer, each small enough to WAL-log,
//! * ids are chosen by the caller (a slot's block number and line offset can
//!   be computed before the element is written, because slots are fixed size).
//!
//! Concurrency is the glue's business (page locks); the algorithm calls the
//! store from one thread.

use std::fmt::Debug;
use std::hash::Hash;

pub use crate::codes::Code;
pub use crate::distance::VectorRef;

/// What an element id must be. In Postgres: block number and line offset
/// packed in a `u64`. Ids need not be dense.
pub trait ElementId: Copy + Eq + Ord + Hash + Debug {}
impl<T: Copy + Eq + Ord + Hash + Debug> ElementId for T {}

/// Per-element facts the algorithm needs besides the vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementMeta {
    /// Top layer the element is on (0 = bottom layer only).
    pub level: usize,
    /// Deleted elements are still traversed but never returned.
    pub deleted: bool,
}

/// Where every search starts: an element on the top layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryPoint<I> {
    pub id: I,
    /// The level of `id`, which is the top layer of the graph.
    pub level: usize,
}

/// What [`GraphStore::with_elements`] calls per element: id, metadata, and
/// the vector as stored (a store over pages may keep half-precision unit
/// vectors, scored without widening them first).
pub type ElementVisitor<'a, I> = dyn FnMut(I, ElementMeta, VectorRef<'_>) + 'a;

/// Storage of an HNSW graph. Small on purpose: five reads (one with a
/// default), six writes.
///
/// Neighbour lists have a fixed capacity (see [`crate::Params::capacity`]);
/// the algorithm never writes a longer list, and an implementation may
/// reject one.
pub trait GraphStore {
    type Id: ElementId;
    type Error: std::error::Error + Send + Sync + 'static;

    /// The entry point, or `None` for an empty graph.
    fn entry_point(&self) -> Result<Option<EntryPoint<Self::Id>>, Self::Error>;

    /// Calls `f` with the element's metadata and vector. The slice must not
    /// outlive the call; it is how pages are read without long-lived borrows.
    fn with_element<R>(
        &self,
        id: Self::Id,
        f: impl FnOnce(ElementMeta, &[f32]) -> R,
    ) -> Result<R, Self::Error>;

    /// Calls `f` for each of `ids`, in order, with its metadata and vector,
    /// as [`GraphStore::with_element`] would one by one (the default). A
    /// search scores a whole neighbour list at once through this, so a store
    /// over pages can fetch the next elements' memory while it computes.
    fn with_elements(
        &self,
        ids: &[Self::Id],
        f: &mut ElementVisitor<'_, Self::Id>,
    ) -> Result<(), Self::Error> {
        for &id in ids {
            self.with_element(id, |meta, v| f(id, meta, VectorRef::F32(v)))?;
        }
        Ok(())
    }

    /// The element's vector as it is kept, for as long as the store is
    /// borrowed, from a store that keeps vectors in memory; `None` (the
    /// default) where vectors are only lent inside
    /// [`GraphStore::with_element`], as from pages. Lets the neighbour
    /// heuristic compare vectors without copying them.
    fn resident_vector(&self, id: Self::Id) -> Option<VectorRef<'_>> {
        let _ = id;
        None
    }

    /// Replaces `out` with the neighbour list of `id` on `layer`.
    /// `layer` must be at most the element's level.
    fn neighbours(
        &self,
        id: Self::Id,
        layer: usize,
        out: &mut Vec<Self::Id>,
    ) -> Result<(), Self::Error>;

    /// Called now and then by passes over the whole graph (the walk of
    /// [`crate::reach`]), so a store inside a database server can let it
    /// cancel or pace them. Does nothing by default.
    fn pause_point(&self) {}

    /// Whether the store keeps each layer-0 link's code ([`crate::codes`])
    /// and lends it with [`GraphStore::neighbours_coded`]. A cosine search
    /// then reads only the neighbours whose estimate could enter its beam.
    fn keeps_codes(&self) -> bool {
        false
    }

    /// The code element `id` keeps, from a store that keeps codes (`None`,
    /// the default, otherwise): what [`crate::check()`] compares each link's
    /// code with.
    fn element_code(&self, id: Self::Id) -> Result<Option<Code>, Self::Error> {
        let _ = id;
        Ok(None)
    }

    /// The layer-0 neighbours of `id` into `out` and, when the store keeps
    /// codes, their codes into `codes` in the same order (the default
    /// leaves `codes` empty: no neighbour is passed over).
    fn neighbours_coded(
        &self,
        id: Self::Id,
        out: &mut Vec<Self::Id>,
        codes: &mut Vec<Code>,
    ) -> Result<(), Self::Error> {
        codes.clear();
        self.neighbours(id, 0, out)
    }

    /// Visits every stored element (live and deleted), in any order.
    /// Used by vacuum repair and by the consistency check.
    fn for_each_element(&self, f: &mut dyn FnMut(Self::Id, ElementMeta))
        -> Result<(), Self::Error>;

    /// Stores a new element: its level, vector and one neighbour list per
    /// layer `0..=level` (`neighbours.len() == level + 1`).
    fn insert_element(
        &mut self,
        id: Self::Id,
        level: usize,
        vector: &[f32],
        neighbours: &[Vec<Self::Id>],
    ) -> Result<(), Self::Error>;

    /// Replaces the neighbour list of `id` on `layer`.
    fn set_neighbours(
        &mut self,
        id: Self::Id,
        layer: usize,
        neighbours: &[Self::Id],
    ) -> Result<(), Self::Error>;

    /// Replaces the neighbour list of `id` on `layer` with `new` only if it
    /// still equals `expected`, atomically; returns whether it did. Inserts
    /// that run side by side update each other's lists through this, so a
    /// list read, changed and written back never drops a link another
    /// writer added in between.
    fn replace_neighbours(
        &mut self,
        id: Self::Id,
        layer: usize,
        expected: &[Self::Id],
        new: &[Self::Id],
    ) -> Result<bool, Self::Error>;

    /// Marks an element deleted (its heap row is gone); it stays in the graph
    /// until vacuum has repaired the links pointing at it.
    fn mark_deleted(&mut self, id: Self::Id) -> Result<(), Self::Error>;

    /// Removes an element for good (after repair; its slot can be reused).
    fn remove_element(&mut self, id: Self::Id) -> Result<(), Self::Error>;

    /// Sets or clears the entry point.
    fn set_entry_point(&mut self, entry: Option<EntryPoint<Self::Id>>) -> Result<(), Self::Error>;
}

/// Errors of [`MemStore`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemError {
    #[error("element {0} does not exist")]
    NotFound(String),
    #[error("element {0} already exists")]
    Exists(String),
    #[error("element {id} has no layer {layer} (its level is {level})")]
    NoLayer {
        id: String,
        layer: usize,
        level: usize,
    },
    #[error("element {id}: {got} neighbour lists given for level {level}")]
    WrongLayerCount {
        id: String,
        got: usize,
        level: usize,
    },
}

/// One element of a [`MemStore`].
#[derive(Debug, Clone, PartialEq)]
pub struct MemElement<I> {
    pub level: usize,
    pub deleted: bool,
    pub vector: Vec<f32>,
    /// One list per layer `0..=level`.
    pub neighbours: Vec<Vec<I>>,
}

/// A `HashMap`-backed store for tests, tools and the bulk build.
///
/// It enforces only what it must to stay memory-safe (existing ids, layer
/// bounds); it deliberately accepts over-long lists, self links and wrong
/// vector lengths so tests can inject corruption for [`crate::check()`].
#[derive(Debug, Clone, PartialEq)]
pub struct MemStore<I: ElementId = u64> {
    elements: crate::ids::IdMap<I, MemElement<I>>,
    entry: Option<EntryPoint<I>>,
    /// Lends codes with layer-0 lists ([`MemStore::with_codes`]).
    codes: bool,
}

impl<I: ElementId> Default for MemStore<I> {
    fn default() -> Self {
        Self::new()
    }
}

impl<I: ElementId> MemStore<I> {
    pub fn new() -> Self {
        MemStore {
            elements: crate::ids::IdMap::default(),
            entry: None,
            codes: false,
        }
    }

    /// A store that keeps neighbour codes, as the index's pages do (it
    /// computes them when asked: tests and tools only).
    pub fn with_codes() -> Self {
        MemStore {
            codes: true,
            ..Self::new()
        }
    }

    /// Number of stored elements, live and deleted.
    pub fn len(&self) -> usize {
        self.elements.len()
    }

    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// Direct read access, for tests and tools.
    pub fn element(&self, id: I) -> Option<&MemElement<I>> {
        self.elements.get(&id)
    }

    /// Direct write access, for injecting corruption in tests.
    pub fn element_mut(&mut self, id: I) -> Option<&mut MemElement<I>> {
        self.elements.get_mut(&id)
    }

    fn get(&self, id: I) -> Result<&MemElement<I>, MemError> {
        self.elements
            .get(&id)
            .ok_or_else(|| MemError::NotFound(format!("{id:?}")))
    }

    fn layer_mut(&mut self, id: I, layer: usize) -> Result<&mut Vec<I>, MemError> {
        let e = self
            .elements
            .get_mut(&id)
            .ok_or_else(|| MemError::NotFound(format!("{id:?}")))?;
        let level = e.level;
        e.neighbours.get_mut(layer).ok_or(MemError::NoLayer {
            id: format!("{id:?}"),
            layer,
            level,
        })
    }
}

impl<I: ElementId> GraphStore for MemStore<I> {
    type Id = I;
    type Error = MemError;

    fn entry_point(&self) -> Result<Option<EntryPoint<I>>, MemError> {
        Ok(self.entry)
    }

    fn with_element<R>(
        &self,
        id: I,
        f: impl FnOnce(ElementMeta, &[f32]) -> R,
    ) -> Result<R, MemError> {
        let e = self.get(id)?;
        Ok(f(
            ElementMeta {
                level: e.level,
                deleted: e.deleted,
            },
            &e.vector,
        ))
    }

    fn resident_vector(&self, id: I) -> Option<VectorRef<'_>> {
        self.elements.get(&id).map(|e| VectorRef::F32(&e.vector))
    }

    fn neighbours(&self, id: I, layer: usize, out: &mut Vec<I>) -> Result<(), MemError> {
        let e = self.get(id)?;
        let list = e.neighbours.get(layer).ok_or(MemError::NoLayer {
            id: format!("{id:?}"),
            layer,
            level: e.level,
        })?;
        out.clear();
        out.extend_from_slice(list);
        Ok(())
    }

    fn keeps_codes(&self) -> bool {
        self.codes
    }

    fn element_code(&self, id: I) -> Result<Option<Code>, MemError> {
        let v = &self.get(id)?.vector;
        Ok(self
            .codes
            .then(|| crate::codes::Directions::for_dims(v.len()).code(v)))
    }

    fn neighbours_coded(
        &self,
        id: I,
        out: &mut Vec<I>,
        codes: &mut Vec<Code>,
    ) -> Result<(), MemError> {
        self.neighbours(id, 0, out)?;
        codes.clear();
        for &n in out.iter() {
            codes.extend(self.element_code(n)?);
        }
        Ok(())
    }

    fn for_each_element(&self, f: &mut dyn FnMut(I, ElementMeta)) -> Result<(), MemError> {
        for (id, e) in &self.elements {
            f(
                *id,
                ElementMeta {
                    level: e.level,
                    deleted: e.deleted,
                },
            );
        }
        Ok(())
    }

    fn insert_element(
        &mut self,
        id: I,
        level: usize,
        vector: &[f32],
        neighbours: &[Vec<I>],
    ) -> Result<(), MemError> {
        if neighbours.len() != level + 1 {
            return Err(MemError::WrongLayerCount {
                id: format!("{id:?}"),
                got: neighbours.len(),
                level,
            });
        }
        if self.elements.contains_key(&id) {
            return Err(MemError::Exists(format!("{id:?}")));
        }
        self.elements.insert(
            id,
            MemElement {
                level,
                deleted: false,
                vector: vector.to_vec(),
                neighbours: neighbours.to_vec(),
            },
        );
        Ok(())
    }

    fn set_neighbours(&mut self, id: I, layer: usize, neighbours: &[I]) -> Result<(), MemError> {
        let list = self.layer_mut(id, layer)?;
        list.clear();
        list.extend_from_slice(neighbours);
        Ok(())
    }

    fn replace_neighbours(
        &mut self,
        id: I,
        layer: usize,
        expected: &[I],
        new: &[I],
    ) -> Result<bool, MemError> {
        let list = self.layer_mut(id, layer)?;
        if list.as_slice() != expected {
            return Ok(false);
        }
        list.clear();
        list.extend_from_slice(new);
        Ok(true)
    }

    fn mark_deleted(&mut self, id: I) -> Result<(), MemError> {
        self.elements
            .get_mut(&id)
            .ok_or_else(|| MemError::NotFound(format!("{id:?}")))?
            .deleted = true;
        Ok(())
    }

    fn remove_element(&mut self, id: I) -> Result<(), MemError> {
        self.elements
            .remove(&id)
            .map(|_| ())
            .ok_or_else(|| MemError::NotFound(format!("{id:?}")))
    }

    fn set_entry_point(&mut self, entry: Option<EntryPoint<I>>) -> Result<(), MemError> {
        self.entry = entry;
        Ok(())
    }
}
