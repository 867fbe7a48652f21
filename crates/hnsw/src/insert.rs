//! Inserting one element (algorithm 1 of the paper), the neighbour-selection
//! heuristic (algorithm 4) and level sampling.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use crate::distance::{widen_halves, Metric, Query, VectorRef};
use crate::error::{Corruption, CorruptionKind, StoreError};
use crate::params::{Params, MAX_LEVEL};
use crate::search::{descend, score, search_layer, Scored};
use crate::store::{EntryPoint, GraphStore};

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

/// Distance at or under which a candidate is an exact copy of the base: 0
/// under L2, and under cosine the rounding of 1 - cos for equal vectors.
const COPY_DISTANCE: f32 = 8.0 * f32::EPSILON;

/// Neighbour selection heuristic (algorithm 4, without
/// `keepPrunedConnections`).
///
/// `candidates` are sorted by distance to the base element. A candidate is
/// kept if it is closer to the base than to every candidate kept so far
/// (so links spread in different directions), up to `cap`.
///
/// Under L2 and cosine, pruned candidates are not used to fill the list, as
/// in hnswlib: on 30,000 clustered 384-dim vectors (`examples/build_speed`,
/// cosine, m 16, ef_construction 64, ef_search 40), filling gave recall@10
/// 0.958 and a 7.1 s build on one thread, leaving the lists short 0.990 in
/// 1.65 s, and a shorter list is also fewer distances per visited element
/// in every search. Inner product is no metric: the test can prune all but a few
/// links of an element among large-norm ones, leaving others unreachable,
/// so there the pruned candidates fill the list (`keepPrunedConnections`).
///
/// Exact copies of the base (the same text stored twice embeds to the same
/// vector) are kept, at most half a list (unless nothing but copies is at
/// hand), and prune nothing: a copy is as
/// far from every candidate as the base is, so the strict test would let
/// the first copy prune every other link, and a full list would shrink to
/// its copies alone, an island a search cannot leave (a vector database of
/// 100,000 records, 1,000 of them stored twice, returned 1 or 2 results for
/// 7 of 3,600 queries asking 10). Likewise a copy of a kept neighbour is
/// kept beside it, once: every other element would link to the first copy
/// alone, and a copy its own insert did not find (the search is
/// approximate) would be reached by nothing. Under inner product a copy is
/// not at distance 0 and the pruned candidates fill the list anyway.
///
/// Vectors are read through the store: a store that keeps them in memory
/// lends them ([`GraphStore::resident_vector`]), otherwise only the kept
/// ones are copied (at most `cap`).
pub(crate) fn select_from_store<S: GraphStore>(
    store: &S,
    candidates: &[Scored<S::Id>],
    cap: usize,
    metric: Metric,
) -> Result<Vec<S::Id>, StoreError<S>> {
    // Kept candidates, each with whether a copy of it was kept beside it.
    let mut kept: Vec<(S::Id, Kept<'_>, bool)> = Vec::with_capacity(cap);
    // A candidate kept in halves, widened to be the query.
    let mut wide = Vec::new();
    let mut pruned: Vec<S::Id> = Vec::new();
    let copy_metric = metric != Metric::InnerProduct;
    let (copies, candidates) = if copy_metric {
        candidates.split_at(candidates.partition_point(|c| c.dist <= COPY_DISTANCE))
    } else {
        candidates.split_at(0)
    };
    // Half a list, so links lead out of a group of copies; the whole list
    // when no other candidate is at hand (a vector stored more times than
    // a beam holds), where halving a full list of copies would drop half
    // their links at once and leave some copy linked from nowhere.
    let limit = if candidates.is_empty() {
        cap
    } else {
        (cap / 2).max(1)
    };
    let copies = some_copies(copies, limit);
    for c in candidates {
        if kept.len() + copies.len() >= cap {
            break;
        }
        // None: pruned; Some(twin): kept, as the copy of kept[twin] if any.
        let verdict = |v: &[f32]| -> Option<Option<usize>> {
            let q = Query::new(metric, v);
            let mut twin = None;
            for (i, (_, k, has_twin)) in kept.iter().enumerate() {
                let k = k.as_ref();
                if k.len() != v.len() {
                    return None;
                }
                let d = q.distance_to(k);
                if copy_metric && d <= COPY_DISTANCE && !has_twin && twin.is_none() {
                    twin = Some(i);
                } else if c.dist >= d {
                    return None;
                }
            }
            Some(twin)
        };
        let keep = match store.resident_vector(c.id) {
            Some(r @ VectorRef::F32(v)) => verdict(v).map(|twin| (twin, Kept::Lent(r))),
            Some(r @ VectorRef::F16(h)) => {
                widen_halves(h, &mut wide);
                verdict(&wide).map(|twin| (twin, Kept::Lent(r)))
            }
            None => store
                .with_element(c.id, |_, v| {
                    verdict(v).map(|twin| (twin, Kept::Copied(v.to_vec())))
                })
                .map_err(StoreError::<S>::Storage)?,
        };
        match keep {
            Some((twin, v)) => {
                if let Some(i) = twin {
                    kept[i].2 = true;
                }
                kept.push((c.id, v, twin.is_some()));
            }
            None => pruned.push(c.id),
        }
    }
    let mut out = copies;
    out.extend(kept.into_iter().map(|(id, _, _)| id));
    if metric == Metric::InnerProduct {
        let room = cap.saturating_sub(out.len());
        out.extend(pruned.into_iter().take(room));
    }
    Ok(out)
}

/// A kept candidate's vector: lent by a store that keeps it in memory (as
/// it keeps it, so halves are scored without widening), else copied.
enum Kept<'s> {
    Lent(VectorRef<'s>),
    Copied(Vec<f32>),
}

impl Kept<'_> {
    fn as_ref(&self) -> VectorRef<'_> {
        match self {
            Kept::Lent(r) => *r,
            Kept::Copied(v) => VectorRef::F32(v),
        }
    }
}

/// `limit` of the base's `copies`, the same ones for the same candidates
/// but a different draw for another set: were it always the lowest ids,
/// every list would link the same few copies of a vector stored many times
/// and the others would be linked from nowhere.
fn some_copies<I: Hash + Copy>(copies: &[Scored<I>], limit: usize) -> Vec<I> {
    let hash = |salt: u64, id: I| {
        let mut h = DefaultHasher::new();
        (salt, id).hash(&mut h);
        h.finish()
    };
    let mut ids: Vec<I> = copies.iter().map(|c| c.id).collect();
    if ids.len() > limit {
        let salt = ids.iter().fold(0, |salt, &id| salt ^ hash(0, id));
        ids.sort_by_cached_key(|&id| hash(salt, id));
        ids.truncate(limit);
    }
    ids
}

/// Copies an element's vector, checking its length.
pub(crate) fn read_vector<S: GraphStore>(
    store: &S,
    params: &Params,
    id: S::Id,
) -> Result<Vec<f32>, StoreError<S>> {
    let v = match store.resident_vector(id) {
        Some(r) => r.to_f32().into_owned(),
        None => store
            .with_element(id, |_, v| v.to_vec())
            .map_err(StoreError::<S>::Storage)?,
    };
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

/// `base`'s neighbours on `layer` chosen from `candidates` (plus nothing
/// else) by the heuristic, dropping deleted ones and `base` itself. Used
/// when a list overflows and by vacuum repair, which write it.
pub(crate) fn reselect<S: GraphStore>(
    store: &S,
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
        let (s, _) = score(store, &base_query, c)?;
        if !s.deleted {
            scored.push(s);
        }
    }
    scored.sort_unstable();
    scored.dedup_by_key(|s| s.id);
    select_from_store(store, &scored, params.capacity(layer), params.metric)
}

/// How many times [`link_back`] rereads a list another writer changed under
/// it before it leaves the link out. Each retry means a concurrent insert
/// linked into the same list in the few microseconds between read and
/// write; losing eight in a row does not happen in practice, and a link
/// left out only costs the graph one back edge (the new element keeps its
/// own links, so it is still found).
const LINK_ATTEMPTS: usize = 8;

/// Adds `new` to `n`'s list on `layer`, shrinking by the heuristic if full.
/// The list is written back only if no other writer changed it meanwhile
/// ([`GraphStore::replace_neighbours`]); otherwise it is read again.
fn link_back<S: GraphStore>(
    store: &mut S,
    params: &Params,
    n: S::Id,
    layer: usize,
    new: S::Id,
    dropped: &mut Vec<S::Id>,
) -> Result<(), StoreError<S>> {
    let mut list = Vec::new();
    for _ in 0..LINK_ATTEMPTS {
        store
            .neighbours(n, layer, &mut list)
            .map_err(StoreError::<S>::Storage)?;
        if list.contains(&new) {
            return Ok(());
        }
        let mut next = list.clone();
        next.push(new);
        if next.len() > params.capacity(layer) {
            next = reselect(&*store, params, n, layer, &next)?;
        }
        if store
            .replace_neighbours(n, layer, &list, &next)
            .map_err(StoreError::<S>::Storage)?
        {
            dropped.extend(list.iter().filter(|x| !next.contains(x)));
            return Ok(());
        }
    }
    Ok(())
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

/// Inserts `vector` under `id` on layers `0..=level`: [`plan_links`] then
/// [`write_element`].
pub fn insert_with_level<S: GraphStore>(
    store: &mut S,
    params: &Params,
    id: S::Id,
    vector: &[f32],
    level: usize,
) -> Result<(), StoreError<S>> {
    let lists = plan_links(&*store, params, vector, level)?;
    write_element(store, params, id, vector, level, &lists)
}

/// The neighbour lists, one per layer `0..=level`, that a new element gets.
///
/// Descends greedily to `level`, then on each layer from `level` down runs
/// an `ef_construction` beam search and selects neighbours by the heuristic
/// (deleted elements are traversed but not linked to, unless nothing else
/// was found). Only reads the store, so it is the part of an insert that
/// can run beside other inserts; an empty graph gives empty lists.
pub fn plan_links<S: GraphStore>(
    store: &S,
    params: &Params,
    vector: &[f32],
    level: usize,
) -> Result<Vec<Vec<S::Id>>, StoreError<S>> {
    check_insert::<S>(params, vector, level)?;
    let metric = params.metric;
    let mut lists: Vec<Vec<S::Id>> = vec![Vec::new(); level + 1];
    let Some(entry) = store.entry_point().map_err(StoreError::<S>::Storage)? else {
        return Ok(lists);
    };
    let top = level.min(entry.level);
    let query = Query::new(metric, vector);
    let mut entries = descend(store, &query, entry, top)?;
    for layer in (0..=top).rev() {
        let found = search_layer(
            store,
            &query,
            None,
            &entries,
            params.ef_construction,
            layer,
            false,
        )?;
        let mut pool: Vec<Scored<S::Id>> = found.iter().filter(|s| !s.deleted).copied().collect();
        if pool.is_empty() {
            pool.clone_from(&found);
        }
        lists[layer] = select_from_store(store, &pool, params.capacity(layer), metric)?;
        if !found.is_empty() {
            entries = found;
        }
    }
    Ok(lists)
}

/// Writes a new element with the lists [`plan_links`] chose, links back
/// from each neighbour (shrinking full lists by the heuristic) and raises
/// the entry point if the new element is the highest (or the first).
///
/// Side by side with other writers, the caller must keep the entry point
/// from changing (in Postgres: one writer at a time whenever `level` is above
/// the entry point's); link updates are safe against each other by
/// [`GraphStore::replace_neighbours`].
pub fn write_element<S: GraphStore>(
    store: &mut S,
    params: &Params,
    id: S::Id,
    vector: &[f32],
    level: usize,
    lists: &[Vec<S::Id>],
) -> Result<(), StoreError<S>> {
    check_insert::<S>(params, vector, level)?;
    if lists.len() != level + 1 {
        return Err(StoreError::<S>::InvalidParams(format!(
            "{} neighbour lists for level {level}",
            lists.len()
        )));
    }
    store
        .insert_element(id, level, vector, lists)
        .map_err(StoreError::<S>::Storage)?;
    let mut dropped = Vec::new();
    for (layer, list) in lists.iter().enumerate() {
        dropped.clear();
        for &n in list {
            link_back(store, params, n, layer, id, &mut dropped)?;
        }
        if !dropped.is_empty() {
            keep_copies_linked(store, params, id, vector, layer, list, &dropped)?;
        }
    }
    let entry = store.entry_point().map_err(StoreError::<S>::Storage)?;
    if entry.is_none_or(|e| level > e.level) {
        store
            .set_entry_point(Some(EntryPoint { id, level }))
            .map_err(StoreError::<S>::Storage)?;
    }
    Ok(())
}

/// Makes the new element `id` link to the exact copies of it that its
/// link-backs took out of a full list ([`link_back`]), in place of copies
/// it links to that lost nothing: a copy's link is moved, not lost.
///
/// A vector stored many more times than a beam holds: each new copy links
/// to the copies its search finds, the well linked ones, while a full list
/// of copies drops one at random to take it in, so the rarely found ones
/// lost their links one by one until none was left, and no scan could
/// return them (the crate's `duplicates` tests: 14 and 37 of 241 and 481
/// copies inserted one at a time were linked from no list). Every copy
/// this element links to was found by its search, so had a link before it
/// came; one that was not also dropped here still has it. `planned` is the
/// list [`plan_links`] gave it, copies first ([`select_from_store`]): an
/// element with no copy reads one vector here and moves nothing.
fn keep_copies_linked<S: GraphStore>(
    store: &mut S,
    params: &Params,
    id: S::Id,
    vector: &[f32],
    layer: usize,
    planned: &[S::Id],
    dropped: &[S::Id],
) -> Result<(), StoreError<S>> {
    if params.metric == Metric::InnerProduct {
        return Ok(());
    }
    let query = Query::new(params.metric, vector);
    let is_copy = |store: &S, c: S::Id| -> Result<bool, StoreError<S>> {
        let (s, _) = score(store, &query, c)?;
        Ok(!s.deleted && s.dist <= COPY_DISTANCE)
    };
    match planned.first() {
        Some(&first) if is_copy(store, first)? => {}
        _ => return Ok(()),
    }
    let mut list = Vec::new();
    for _ in 0..LINK_ATTEMPTS {
        store
            .neighbours(id, layer, &mut list)
            .map_err(StoreError::<S>::Storage)?;
        let mut homeless = Vec::new();
        for &d in dropped {
            if d != id && !list.contains(&d) && !homeless.contains(&d) && is_copy(store, d)? {
                homeless.push(d);
            }
        }
        if homeless.is_empty() {
            return Ok(());
        }
        let mut next = list.clone();
        let mut homeless = homeless.into_iter();
        for slot in next.iter_mut() {
            if dropped.contains(slot) || !is_copy(store, *slot)? {
                continue;
            }
            match homeless.next() {
                Some(d) => *slot = d,
                None => break,
            }
        }
        if store
            .replace_neighbours(id, layer, &list, &next)
            .map_err(StoreError::<S>::Storage)?
        {
            return Ok(());
        }
    }
    Ok(())
}

fn check_insert<S: GraphStore>(
    params: &Params,
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
    Ok(())
}
