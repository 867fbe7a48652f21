//! Inserting one element (algorithm 1 of the paper), the neighbour-selection
//! heuristic (algorithm 4, with kept pruned connections) and level sampling.

use crate::distance::Query;
use crate::search::{descend, score, search_layer, Scored};
use crate::store::{ElementId, EntryPoint, GraphStore};
use crate::{Corruption, CorruptionKind, Metric, Params, StoreError, MAX_LEVEL};

/// Level sampler: a splitmix64 generator.
///
/// Our own (eight lines) rather than `rand`: the state is one `u64` that the
/// access method can seed per index (or per backend) and so builds are
/// reproducible from a seed, with no global state, no OS entropy and no
/// dependency whose stream might change between versions.
#[derive(Debug, Clone)]
pub struct LevelRng {
    state: u64,
}

impl LevelRng {
    pub fn new(seed: u64) -> Self {
        LevelRng { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A level drawn as `floor(-ln(u) * mL)` with `u` uniform in `(0, 1]`
    /// and `mL = 1/ln(m)`, capped at [`MAX_LEVEL`].
    pub fn level(&mut self, params: &Params) -> usize {
        let u = ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        let l = (-u.ln() * params.level_multiplier()).floor();
        if l.is_finite() && l >= 0.0 {
            (l as usize).min(MAX_LEVEL)
        } else {
            0
        }
    }
}

/// Neighbour selection heuristic (algorithm 4, `keepPrunedConnections`).
///
/// `candidates` are sorted by distance to the base element. A candidate is
/// kept if it is closer to the base than to every candidate kept so far
/// (so links spread in different directions); pruned candidates then fill
/// the remaining slots in order. `visit` lends a candidate's vector; only
/// kept vectors are copied (at most `cap` of them).
pub(crate) fn select_heuristic<I: ElementId, X>(
    candidates: &[Scored<I>],
    cap: usize,
    metric: Metric,
    mut visit: impl FnMut(I, &mut dyn FnMut(&[f32])) -> Result<(), X>,
) -> Result<Vec<I>, X> {
    let mut kept: Vec<(I, Vec<f32>)> = Vec::with_capacity(cap);
    let mut pruned: Vec<I> = Vec::new();
    for c in candidates {
        if kept.len() >= cap {
            break;
        }
        let mut copy = None;
        visit(c.id, &mut |v| {
            let diverse = kept
                .iter()
                .all(|(_, k)| k.len() == v.len() && c.dist < metric.distance(v, k));
            if diverse {
                copy = Some(v.to_vec());
            }
        })?;
        match copy {
            Some(v) => kept.push((c.id, v)),
            None => pruned.push(c.id),
        }
    }
    let mut out: Vec<I> = kept.into_iter().map(|(id, _)| id).collect();
    let room = cap.saturating_sub(out.len());
    out.extend(pruned.into_iter().take(room));
    Ok(out)
}

/// [`select_heuristic`] reading vectors from a store.
pub(crate) fn select_from_store<S: GraphStore>(
    store: &S,
    candidates: &[Scored<S::Id>],
    cap: usize,
    metric: Metric,
) -> Result<Vec<S::Id>, StoreError<S>> {
    select_heuristic(candidates, cap, metric, |id, f| {
        store.with_element(id, |_, v| f(v)).map(|_| ())
    })
    .map_err(StoreError::<S>::Storage)
}

/// Copies an element's vector, checking its length.
pub(crate) fn read_vector<S: GraphStore>(
    store: &S,
    params: &Params,
    id: S::Id,
) -> Result<Vec<f32>, StoreError<S>> {
    let v = store
        .with_element(id, |_, v| v.to_vec())
        .map_err(StoreError::<S>::Storage)?;
    if v.len() != params.dims {
        return Err(StoreError::<S>::Corrupt(Corruption {
            element: Some(id),
            layer: None,
            kind: CorruptionKind::VectorLength {
                len: v.len(),
                expected: params.dims,
            },
        }));
    }
    Ok(v)
}

/// Re-selects `base`'s neighbours on `layer` from `candidates` (plus nothing
/// else) by the heuristic, dropping deleted ones and `base` itself, and
/// writes the list. Used when a list overflows and by vacuum repair.
pub(crate) fn reselect<S: GraphStore>(
    store: &mut S,
    params: &Params,
    base: S::Id,
    layer: usize,
    candidates: &[S::Id],
) -> Result<Vec<S::Id>, StoreError<S>> {
    let base_vec = read_vector(store, params, base)?;
    let base_query = Query::new(params.metric, &base_vec);
    let mut scored = Vec::with_capacity(candidates.len());
    for &c in candidates {
        if c == base {
            continue;
        }
        let (s, _) = score(&*store, &base_query, c)?;
        if !s.deleted {
            scored.push(s);
        }
    }
    scored.sort_unstable();
    scored.dedup_by_key(|s| s.id);
    let list = select_from_store(&*store, &scored, params.capacity(layer), params.metric)?;
    store
        .set_neighbours(base, layer, &list)
        .map_err(StoreError::<S>::Storage)?;
    Ok(list)
}

/// Adds `new` to `n`'s list on `layer`, shrinking by the heuristic if full.
fn link_back<S: GraphStore>(
    store: &mut S,
    params: &Params,
    n: S::Id,
    layer: usize,
    new: S::Id,
) -> Result<(), StoreError<S>> {
    let mut list = Vec::new();
    store
        .neighbours(n, layer, &mut list)
        .map_err(StoreError::<S>::Storage)?;
    if list.contains(&new) {
        return Ok(());
    }
    list.push(new);
    if list.len() <= params.capacity(layer) {
        return store
            .set_neighbours(n, layer, &list)
            .map_err(StoreError::<S>::Storage);
    }
    reselect(store, params, n, layer, &list).map(|_| ())
}

/// Inserts `vector` under `id` with a level drawn from `rng`.
pub fn insert<S: GraphStore>(
    store: &mut S,
    params: &Params,
    id: S::Id,
    vector: &[f32],
    rng: &mut LevelRng,
) -> Result<(), StoreError<S>> {
    let level = rng.level(params);
    insert_with_level(store, params, id, vector, level)
}

/// Inserts `vector` under `id` on layers `0..=level`.
///
/// Descends greedily to `level`, then on each layer from `level` down runs
/// an `ef_construction` beam search, selects neighbours by the heuristic
/// (deleted elements are traversed but not linked to, unless nothing else
/// was found), writes the element, links back from each neighbour
/// (shrinking full lists by the heuristic) and finally raises the entry
/// point if the new element is the highest.
pub fn insert_with_level<S: GraphStore>(
    store: &mut S,
    params: &Params,
    id: S::Id,
    vector: &[f32],
    level: usize,
) -> Result<(), StoreError<S>> {
    params.validate().map_err(StoreError::<S>::InvalidParams)?;
    params.validate_vector::<S::Id, S::Error>(vector)?;
    if level > MAX_LEVEL {
        return Err(StoreError::<S>::InvalidParams(format!(
            "level {level} exceeds the maximum {MAX_LEVEL}"
        )));
    }
    let metric = params.metric;
    let mut lists: Vec<Vec<S::Id>> = vec![Vec::new(); level + 1];
    let entry = store.entry_point().map_err(StoreError::<S>::Storage)?;
    if let Some(entry) = entry {
        let top = level.min(entry.level);
        let query = Query::new(metric, vector);
        let mut entries = descend(&*store, &query, entry, top)?;
        for layer in (0..=top).rev() {
            let found = search_layer(
                &*store,
                &query,
                &entries,
                params.ef_construction,
                layer,
                false,
            )?;
            let others = found.iter().filter(|s| s.id != id);
            let mut pool: Vec<Scored<S::Id>> =
                others.clone().filter(|s| !s.deleted).copied().collect();
            if pool.is_empty() {
                pool = others.copied().collect();
            }
            lists[layer] = select_from_store(&*store, &pool, params.capacity(layer), metric)?;
            if !found.is_empty() {
                entries = found;
            }
        }
    }
    store
        .insert_element(id, level, vector, &lists)
        .map_err(StoreError::<S>::Storage)?;
    for (layer, list) in lists.iter().enumerate() {
        for &n in list {
            link_back(store, params, n, layer, id)?;
        }
    }
    if entry.is_none_or(|e| level > e.level) {
        store
            .set_entry_point(Some(EntryPoint { id, level }))
            .map_err(StoreError::<S>::Storage)?;
    }
    Ok(())
}
