//! Every live element reachable: the elements no search can reach are linked
//! from their nearest reachable neighbour.
//!
//! The selection heuristic keeps a list diverse: it drops a candidate that a
//! kept neighbour is closer to than the list's owner is, trusting that the
//! kept one links to it. When none does and the dropped element had no other
//! link, it is linked from no list, and no search returns it (an exact scan
//! still does). It happens to rows far from all others: a handful in a build
//! of the 59,004 rows of `make bench-hnsw`, and among rows inserted one at a
//! time, where each later insert that fills the one list that linked such a
//! row prunes it again. HNSW libraries leave them; we link them.
//!
//! [`link_unreached`] walks layer 0 from the entry point, the layer every
//! element is in and every search ends on, keeping for each element it
//! reaches the link it was first reached by: those links form a tree that
//! reaches everything reached. Each live element the walk did not reach is
//! then searched for as an insert searches (so what is found is reachable)
//! and added to the list of the nearest found element that can take it: into
//! a free slot, or in place of that list's link farthest from its owner
//! among those not in the tree, so every element reached stays reached, and
//! the new link joins the tree with what the element reaches. A second walk
//! checks. The bulk build runs it at its end, vacuum after its repair; lists
//! are written by compare and replace, so concurrent inserts lose nothing.

use crate::distance::Query;
use crate::error::StoreError;
use crate::ids::{IdMap, IdSet};
use crate::insert::read_vector;
use crate::params::Params;
use crate::search::{descend, score, search_layer};
use crate::store::GraphStore;

/// Lists a walk reads between calls to [`GraphStore::pause_point`].
const PAUSE_EVERY: usize = 1024;

/// Walks after which [`link_unreached`] stops even if some element is still
/// unreached: two unless a concurrent insert strands one meanwhile.
const MAX_WALKS: usize = 4;

/// What [`link_unreached`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReachReport {
    /// Live elements, the entry point included.
    pub live: usize,
    /// Live elements the first walk from the entry point did not reach.
    pub unreached: usize,
    /// Links added to reachable lists.
    pub linked: usize,
    /// Live elements the last walk did not reach: 0 unless every list found
    /// for one was full of tree links, or a concurrent insert stranded one.
    pub left: usize,
    /// Walks over the graph's layer 0.
    pub walks: usize,
}

/// The live elements no search can reach (not reached by a walk on layer 0
/// from the entry point), in id order. Reads every reachable list once.
pub fn unreached<S: GraphStore>(store: &S) -> Result<Vec<S::Id>, StoreError<S>> {
    let Some(entry) = store.entry_point().map_err(StoreError::<S>::Storage)? else {
        return Ok(Vec::new());
    };
    let live = live_ids(store)?;
    Ok(Walk::from(store, entry.id)?.not_reached(&live))
}

/// Links every live element that no search can reach; see the module doc.
/// Each walk reads every reachable layer-0 list once and holds a set and a
/// map entry per element; each unreached element costs one search.
pub fn link_unreached<S: GraphStore>(
    store: &mut S,
    params: &Params,
) -> Result<ReachReport, StoreError<S>> {
    params.validate().map_err(StoreError::<S>::InvalidParams)?;
    let mut report = ReachReport::default();
    let Some(entry) = store.entry_point().map_err(StoreError::<S>::Storage)? else {
        return Ok(report);
    };
    let live = live_ids(&*store)?;
    report.live = live.len();
    loop {
        let mut walk = Walk::from(&*store, entry.id)?;
        report.walks += 1;
        let unreached = walk.not_reached(&live);
        if report.walks == 1 {
            report.unreached = unreached.len();
        }
        report.left = unreached.len();
        if unreached.is_empty() || report.walks == MAX_WALKS {
            return Ok(report);
        }
        let mut progress = false;
        for x in unreached {
            store.pause_point();
            // Reached already through an element linked before it?
            if !walk.reached.contains(&x) && link_one(store, params, &mut walk, entry, x)? {
                report.linked += 1;
                progress = true;
                walk.reach(&*store, x)?;
            }
        }
        if !progress {
            return Ok(report);
        }
    }
}

/// The ids of the live elements, sorted.
fn live_ids<S: GraphStore>(store: &S) -> Result<Vec<S::Id>, StoreError<S>> {
    let mut live = Vec::new();
    store
        .for_each_element(&mut |id, meta| {
            if !meta.deleted {
                live.push(id);
            }
        })
        .map_err(StoreError::<S>::Storage)?;
    live.sort_unstable();
    Ok(live)
}

/// The elements reached from the entry point on layer 0, and the element
/// whose list each was first reached from (none for where walks began).
struct Walk<I> {
    reached: IdSet<I>,
    parent: IdMap<I, I>,
    list: Vec<I>,
    queue: Vec<I>,
}

impl<I> Default for Walk<I> {
    fn default() -> Self {
        Walk {
            reached: IdSet::default(),
            parent: IdMap::default(),
            list: Vec::new(),
            queue: Vec::new(),
        }
    }
}

impl<I: crate::store::ElementId> Walk<I> {
    /// The walk from `start`.
    fn from<S: GraphStore<Id = I>>(store: &S, start: I) -> Result<Self, StoreError<S>> {
        let mut walk = Walk::default();
        walk.reach(store, start)?;
        Ok(walk)
    }

    /// Those of `ids` not reached.
    fn not_reached(&self, ids: &[I]) -> Vec<I> {
        ids.iter()
            .copied()
            .filter(|id| !self.reached.contains(id))
            .collect()
    }

    /// Marks `from` reached, then everything reachable from it on layer 0
    /// that was not reached yet, each with its parent.
    fn reach<S: GraphStore<Id = I>>(&mut self, store: &S, from: I) -> Result<(), StoreError<S>> {
        if !self.reached.insert(from) {
            return Ok(());
        }
        self.queue.push(from);
        let mut read = 0usize;
        while let Some(id) = self.queue.pop() {
            read += 1;
            if read.is_multiple_of(PAUSE_EVERY) {
                store.pause_point();
            }
            store
                .neighbours(id, 0, &mut self.list)
                .map_err(StoreError::<S>::Storage)?;
            for &t in &self.list {
                if self.reached.insert(t) {
                    self.parent.insert(t, id);
                    self.queue.push(t);
                }
            }
        }
        Ok(())
    }

    /// Whether `owner`'s link to `id` is the one the walk reached `id` by.
    fn in_tree(&self, owner: I, id: I) -> bool {
        self.parent.get(&id) == Some(&owner)
    }
}

/// Links the unreached element `x` from the nearest reached element whose
/// list can take it; false when none of those found could.
fn link_one<S: GraphStore>(
    store: &mut S,
    params: &Params,
    walk: &mut Walk<S::Id>,
    entry: crate::store::EntryPoint<S::Id>,
    x: S::Id,
) -> Result<bool, StoreError<S>> {
    let vector = read_vector(&*store, params, x)?;
    let query = Query::new(params.metric, &vector);
    let entries = descend(&*store, &query, entry, 0)?;
    let found = search_layer(
        &*store,
        &query,
        None,
        &entries,
        params.ef_construction,
        0,
        false,
    )?;
    let capacity = params.capacity(0);
    let mut list = Vec::new();
    for y in found {
        if y.deleted || y.id == x || !walk.reached.contains(&y.id) {
            continue;
        }
        store
            .neighbours(y.id, 0, &mut list)
            .map_err(StoreError::<S>::Storage)?;
        let mut next = list.clone();
        if next.len() < capacity {
            next.push(x);
        } else {
            let Some(slot) = farthest_spare_link(&*store, params, walk, y.id, &next)? else {
                continue;
            };
            next[slot] = x;
        }
        // A list changed by a concurrent insert since it was read is passed
        // over; the next nearest serves as well.
        if store
            .replace_neighbours(y.id, 0, &list, &next)
            .map_err(StoreError::<S>::Storage)?
        {
            walk.parent.insert(x, y.id);
            return Ok(true);
        }
    }
    Ok(false)
}

/// The position in `owner`'s full `list` of the link farthest from `owner`
/// that is not in the walk's tree.
fn farthest_spare_link<S: GraphStore>(
    store: &S,
    params: &Params,
    walk: &Walk<S::Id>,
    owner: S::Id,
    list: &[S::Id],
) -> Result<Option<usize>, StoreError<S>> {
    let vector = read_vector(store, params, owner)?;
    let query = Query::new(params.metric, &vector);
    let mut best: Option<(f32, usize)> = None;
    for (k, &t) in list.iter().enumerate() {
        if walk.in_tree(owner, t) {
            continue;
        }
        let (s, _) = score(store, &query, t)?;
        if best.is_none_or(|(d, _)| s.dist > d) {
            best = Some((s.dist, k));
        }
    }
    Ok(best.map(|(_, k)| k))
}
