//! Vacuum repair: unlinking deleted elements so they can be removed.
//!
//! For each live element whose list on some layer points at an element
//! being removed, the list is re-selected by the heuristic from its
//! remaining neighbours plus the removed neighbours' neighbours on that
//! layer; if that pool is smaller than the list's capacity it is topped up
//! by an `ef_construction` search on the layer (the graph is still whole
//! while repairing, removed elements are only traversed). Lists of elements
//! that are deleted but not removed in this pass just drop the links. Then
//! the entry point is moved if it is being removed, and the elements are
//! removed from the store.

use crate::distance::Query;
use crate::error::StoreError;
use crate::ids::IdSet;
use crate::insert::reselect;
use crate::params::Params;
use crate::search::{descend, search_layer};
use crate::store::{ElementMeta, EntryPoint, GraphStore};

/// What [`repair`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RepairReport {
    /// Neighbour lists of live elements re-selected.
    pub lists_repaired: usize,
    /// Of those, lists whose candidate pool was topped up by a search.
    pub searches: usize,
    /// Elements removed from the store.
    pub removed: usize,
    /// Whether the entry point had to move.
    pub entry_moved: bool,
}

/// Removes `removed` from the graph, repairing links first; see the module
/// doc. Elements are marked deleted first if they are not already, so a
/// crash half-way leaves a graph that searches still handle.
pub fn repair<S: GraphStore>(
    store: &mut S,
    params: &Params,
    removed: &[S::Id],
) -> Result<RepairReport, StoreError<S>> {
    params.validate().map_err(StoreError::<S>::InvalidParams)?;
    let gone: IdSet<S::Id> = removed.iter().copied().collect();
    let mut report = RepairReport::default();
    for &id in &gone {
        let meta = store
            .with_element(id, |m, _| m)
            .map_err(StoreError::<S>::Storage)?;
        if !meta.deleted {
            store.mark_deleted(id).map_err(StoreError::<S>::Storage)?;
        }
    }
    let mut all: Vec<(S::Id, ElementMeta)> = Vec::new();
    store
        .for_each_element(&mut |id, m| all.push((id, m)))
        .map_err(StoreError::<S>::Storage)?;
    all.sort_unstable_by_key(|(id, _)| *id);

    let mut list = Vec::new();
    let mut other = Vec::new();
    for &(id, meta) in &all {
        if gone.contains(&id) {
            continue;
        }
        for layer in 0..=meta.level {
            store
                .neighbours(id, layer, &mut list)
                .map_err(StoreError::<S>::Storage)?;
            if !list.iter().any(|n| gone.contains(n)) {
                continue;
            }
            if meta.deleted {
                list.retain(|n| !gone.contains(n));
                store
                    .set_neighbours(id, layer, &list)
                    .map_err(StoreError::<S>::Storage)?;
                continue;
            }
            let mut pool: Vec<S::Id> = Vec::with_capacity(2 * list.len());
            for &n in &list {
                if gone.contains(&n) {
                    store
                        .neighbours(n, layer, &mut other)
                        .map_err(StoreError::<S>::Storage)?;
                    pool.extend(other.iter().filter(|x| !gone.contains(x) && **x != id));
                } else {
                    pool.push(n);
                }
            }
            pool.sort_unstable();
            pool.dedup();
            if pool.len() < params.capacity(layer) {
                report.searches += 1;
                pool.extend(search_pool(store, params, id, layer, &gone)?);
            }
            let list = reselect(&*store, params, id, layer, &pool)?;
            store
                .set_neighbours(id, layer, &list)
                .map_err(StoreError::<S>::Storage)?;
            report.lists_repaired += 1;
        }
    }

    let entry = store.entry_point().map_err(StoreError::<S>::Storage)?;
    if entry.is_some_and(|e| gone.contains(&e.id)) {
        // Highest level first, live before deleted, then smallest id.
        let best = all
            .iter()
            .filter(|(id, _)| !gone.contains(id))
            .min_by_key(|(id, m)| (std::cmp::Reverse(m.level), m.deleted, *id))
            .map(|&(id, m)| EntryPoint { id, level: m.level });
        store
            .set_entry_point(best)
            .map_err(StoreError::<S>::Storage)?;
        report.entry_moved = true;
    }
    for &id in &gone {
        store.remove_element(id).map_err(StoreError::<S>::Storage)?;
        report.removed += 1;
    }
    Ok(report)
}

/// Candidates for `id` on `layer` found by an `ef_construction` search from
/// the current entry point, excluding removed elements.
fn search_pool<S: GraphStore>(
    store: &S,
    params: &Params,
    id: S::Id,
    layer: usize,
    gone: &IdSet<S::Id>,
) -> Result<Vec<S::Id>, StoreError<S>> {
    let Some(entry) = store.entry_point().map_err(StoreError::<S>::Storage)? else {
        return Ok(Vec::new());
    };
    if entry.level < layer {
        return Ok(Vec::new());
    }
    let vector = crate::insert::read_vector(store, params, id)?;
    let query = Query::new(params.metric, &vector);
    let entries = descend(store, &query, entry, layer)?;
    let found = search_layer(
        store,
        &query,
        None,
        &entries,
        params.ef_construction,
        layer,
        true,
    )?;
    Ok(found
        .into_iter()
        .map(|s| s.id)
        .filter(|x| *x != id && !gone.contains(x))
        .collect())
}
