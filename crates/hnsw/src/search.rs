//! Searching the graph: the per-layer beam search shared with insert, top-k
//! [`search`], and the resumable [`IterativeScan`].

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::codes::{Code, CodedQuery, Directions, SKIP_MARGIN};
use crate::distance::{Metric, Query};
use crate::error::{Corruption, CorruptionKind, StoreError};
use crate::ids::IdSet;
use crate::params::Params;
use crate::store::{ElementMeta, EntryPoint, GraphStore};

/// An element with its distance to the query. Ordered by distance, then id,
/// so every heap and sort in the crate is deterministic.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scored<I> {
    pub dist: f32,
    pub id: I,
    pub deleted: bool,
}

impl<I: Ord> Ord for Scored<I> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.dist
            .total_cmp(&other.dist)
            .then_with(|| self.id.cmp(&other.id))
    }
}

impl<I: Ord> PartialOrd for Scored<I> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<I: Ord> PartialEq for Scored<I> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<I: Ord> Eq for Scored<I> {}

/// Distance from `query` to element `id`, with its metadata. A stored vector
/// of the wrong length is reported, not silently compared.
pub(crate) fn score<S: GraphStore>(
    store: &S,
    query: &Query<'_>,
    id: S::Id,
) -> Result<(Scored<S::Id>, ElementMeta), StoreError<S>> {
    let len = query.vector().len();
    let r = store
        .with_element(id, |meta, v| {
            (v.len() == len).then(|| (query.distance(v), meta))
        })
        .map_err(StoreError::<S>::Storage)?;
    match r {
        Some((dist, meta)) => Ok((
            Scored {
                dist,
                id,
                deleted: meta.deleted,
            },
            meta,
        )),
        None => Err(vector_length_error::<S>(store, id, len)),
    }
}

/// Scores every id of `ids` ([`GraphStore::with_elements`]), appending to
/// `out` in the same order. A stored vector of the wrong length is reported.
pub(crate) fn score_all<S: GraphStore>(
    store: &S,
    query: &Query<'_>,
    ids: &[S::Id],
    out: &mut Vec<Scored<S::Id>>,
) -> Result<(), StoreError<S>> {
    let len = query.vector().len();
    let mut wrong = None;
    store
        .with_elements(ids, &mut |id, meta, v| {
            if v.len() == len {
                out.push(Scored {
                    dist: query.distance_to(v),
                    id,
                    deleted: meta.deleted,
                });
            } else if wrong.is_none() {
                wrong = Some(id);
            }
        })
        .map_err(StoreError::<S>::Storage)?;
    match wrong {
        Some(id) => Err(vector_length_error::<S>(store, id, len)),
        None => Ok(()),
    }
}

/// Builds the corruption error for a stored vector of the wrong length.
fn vector_length_error<S: GraphStore>(store: &S, id: S::Id, expected: usize) -> StoreError<S> {
    match store.with_element(id, |_, v| v.len()) {
        Ok(len) => StoreError::<S>::Corrupt(Corruption {
            element: Some(id),
            layer: None,
            kind: CorruptionKind::VectorLength { len, expected },
        }),
        Err(e) => StoreError::<S>::Storage(e),
    }
}

/// An empty visited set sized for a beam of `ef`: a search visits some ten
/// to twenty elements per beam slot, and growing the table on the way was
/// 3% of a build's profile.
fn visited_set<I: crate::store::ElementId>(ef: usize) -> IdSet<I> {
    IdSet::with_capacity_and_hasher(visited_capacity(ef), Default::default())
}

fn visited_capacity(ef: usize) -> usize {
    ef.saturating_mul(16).clamp(64, 1 << 14)
}

/// The coded form of `query` when a search may pass over neighbours by
/// their codes: cosine, and a store that keeps codes.
/// `tables` is memory to reuse for it ([`CodedQuery::into_tables`]).
pub(crate) fn coded_query<S: GraphStore>(
    store: &S,
    params: &Params,
    query: &[f32],
    tables: Vec<f32>,
) -> Option<CodedQuery> {
    (params.metric == Metric::Cosine && store.keeps_codes())
        .then(|| Directions::for_dims(params.dims).query_in(query, tables))
}

/// Expansion's read of a neighbour list: the neighbours of `id` on `layer`
/// not visited yet into `buf`, each marked visited now. Given a coded query
/// and a `bound` (on layer 0, from a store that keeps codes), a neighbour
/// whose estimated distance is past `bound + SKIP_MARGIN` is left out
/// unread and unvisited, so another element may still lead to it; it is
/// pushed to `passed` when that is given.
fn unvisited_neighbours<S: GraphStore>(
    store: &S,
    id: S::Id,
    layer: usize,
    bound: Option<(&CodedQuery, f32)>,
    visited: &mut IdSet<S::Id>,
    (buf, codes): (&mut Vec<S::Id>, &mut Vec<Code>),
    mut passed: Option<&mut Vec<S::Id>>,
) -> Result<(), StoreError<S>> {
    let coded = bound.filter(|_| layer == 0);
    match coded {
        Some(_) => store.neighbours_coded(id, buf, codes),
        None => store.neighbours(id, layer, buf),
    }
    .map_err(StoreError::<S>::Storage)?;
    match coded {
        Some((query, bound)) if codes.len() == buf.len() => {
            let limit = bound + SKIP_MARGIN;
            let mut kept = 0;
            for i in 0..buf.len() {
                let n = buf[i];
                if visited.contains(&n) {
                    continue;
                }
                if query.estimate(&codes[i]) > limit {
                    if let Some(passed) = passed.as_deref_mut() {
                        passed.push(n);
                    }
                    continue;
                }
                visited.insert(n);
                buf[kept] = n;
                kept += 1;
            }
            buf.truncate(kept);
        }
        _ => buf.retain(|n| visited.insert(*n)),
    }
    Ok(())
}

/// Beam search on one layer (algorithm 2 of the paper).
///
/// Starts from `entries`, keeps the `ef` closest elements found and returns
/// them sorted ascending. With `live_only`, deleted elements are expanded
/// (they still connect the graph) but not kept as results, so they neither
/// take result slots nor tighten the stopping bound. With `coded` (see
/// [`coded_query`]), a full beam reads on layer 0 only the neighbours whose
/// estimate could enter it.
pub(crate) fn search_layer<S: GraphStore>(
    store: &S,
    query: &Query<'_>,
    coded: Option<&CodedQuery>,
    entries: &[Scored<S::Id>],
    ef: usize,
    layer: usize,
    live_only: bool,
) -> Result<Vec<Scored<S::Id>>, StoreError<S>> {
    let ef = ef.max(1);
    let mut visited: IdSet<S::Id> = visited_set(ef);
    let mut candidates: BinaryHeap<Reverse<Scored<S::Id>>> = BinaryHeap::new();
    let mut results: BinaryHeap<Scored<S::Id>> = BinaryHeap::new();
    for e in entries {
        if visited.insert(e.id) {
            candidates.push(Reverse(*e));
            if !(live_only && e.deleted) {
                results.push(*e);
            }
        }
    }
    while results.len() > ef {
        results.pop();
    }
    let (mut buf, mut codes, mut scored) = (Vec::new(), Vec::new(), Vec::new());
    while let Some(Reverse(c)) = candidates.pop() {
        if results.len() >= ef && results.peek().is_some_and(|f| c.dist > f.dist) {
            break;
        }
        let bound = coded
            .filter(|_| results.len() >= ef)
            .zip(results.peek().map(|f| f.dist));
        unvisited_neighbours(
            store,
            c.id,
            layer,
            bound,
            &mut visited,
            (&mut buf, &mut codes),
            None,
        )?;
        scored.clear();
        score_all(store, query, &buf, &mut scored)?;
        for &s in &scored {
            let admit = results.len() < ef || results.peek().is_some_and(|f| s.dist < f.dist);
            if admit {
                candidates.push(Reverse(s));
                if !(live_only && s.deleted) {
                    results.push(s);
                    if results.len() > ef {
                        results.pop();
                    }
                }
            }
        }
    }
    Ok(results.into_sorted_vec())
}

/// Greedy descent (`ef = 1`) from the entry point through the layers above
/// `down_to`; returns the entry set for layer `down_to`.
pub(crate) fn descend<S: GraphStore>(
    store: &S,
    query: &Query<'_>,
    entry: EntryPoint<S::Id>,
    down_to: usize,
) -> Result<Vec<Scored<S::Id>>, StoreError<S>> {
    let (start, _) = score(store, query, entry.id)?;
    let mut cur = vec![start];
    let mut layer = entry.level;
    while layer > down_to {
        let next = search_layer(store, query, None, &cur, 1, layer, false)?;
        if !next.is_empty() {
            cur = next;
        }
        layer -= 1;
    }
    Ok(cur)
}

/// The `k` nearest live elements to `query`, as `(distance, id)` sorted
/// ascending. `ef` is the beam width on layer 0 (raised to `k` if smaller).
pub fn search<S: GraphStore>(
    store: &S,
    params: &Params,
    query: &[f32],
    k: usize,
    ef: usize,
) -> Result<Vec<(f32, S::Id)>, StoreError<S>> {
    params.validate().map_err(StoreError::<S>::InvalidParams)?;
    params.validate_vector::<S::Id, S::Error>(query)?;
    if k == 0 {
        return Ok(Vec::new());
    }
    let Some(entry) = store.entry_point().map_err(StoreError::<S>::Storage)? else {
        return Ok(Vec::new());
    };
    let coded = coded_query(store, params, query, Vec::new());
    let query = Query::new(params.metric, query);
    let entries = descend(store, &query, entry, 0)?;
    let found = search_layer(store, &query, coded.as_ref(), &entries, ef.max(k), 0, true)?;
    Ok(found.into_iter().take(k).map(|s| (s.dist, s.id)).collect())
}

/// A distance ordered by `total_cmp`, for max-heaps of bounds.
#[derive(Debug, Clone, Copy)]
struct Dist(f32);

impl Ord for Dist {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl PartialOrd for Dist {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Dist {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Dist {}

/// What an [`IterativeScan`] does with an element discovered only after a
/// farther one was already returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScanOrder {
    /// Skip it, so results are never out of order (what `ORDER BY ... LIMIT`
    /// needs). Skipped elements are counted in [`IterativeScan::skipped`].
    #[default]
    Strict,
    /// Return it as soon as it is found: no element is lost, but the order
    /// may be slightly off (the caller re-sorts if it cares).
    Relaxed,
}

/// A resumable layer-0 search, for scans with a selective filter (SQL
/// `WHERE` clauses are applied after the index, so a scan may need many
/// more than `ef` rows to produce `k` that pass).
///
/// Rounds: round `r` runs the ordinary beam-search expansion with a bound of
/// `t = 2 * ef * 2^r` (stop when the closest unexpanded element is farther
/// than the `t`-th best live element found) and then returns results up to
/// rank `t / 2`. Expanding twice as far as it returns is what makes late
/// discoveries rare: the first `ef` results are exactly the top `ef` of
/// [`search`] with `2 * ef`. Nothing is forgotten between rounds: the
/// visited set, the frontier of discovered but unexpanded elements
/// (including those an ordinary search would discard) and the discovered but
/// unreturned live elements are all kept, so each round continues where the
/// last one stopped.
///
/// Guarantee: each live element is returned at most once and deleted ones
/// never; under [`ScanOrder::Strict`] distances are non-decreasing; the scan
/// ends (`None`) only when every element reachable on layer 0 from where
/// the descent landed has been expanded. By then every reachable live
/// element has been returned (Relaxed) or returned or skipped (Strict).
/// A skip happens only when a later round uncovers an element closer than
/// one already returned, which the graph cannot rule out (a greedy route
/// can pass through a farther element); in the tests it never happens with
/// L2 or cosine and for under 1% of elements with inner product.
pub struct IterativeScan<I> {
    metric: Metric,
    /// What [`Query`] computes once (`q . q` for cosine), kept with the
    /// owned vector so each round borrows a ready query.
    self_dot: f32,
    order: ScanOrder,
    /// The current round's expansion rank; it returns up to `target / 2`
    /// (the first round up to `target` with [`IterativeScan::return_whole_first_beam`]).
    target: usize,
    whole_first_beam: bool,
    first_target: usize,
    last: Option<f32>,
    skipped: usize,
    /// The query's coded form, when the store keeps neighbour codes.
    coded: Option<CodedQuery>,
    /// The query, the visited set, the heaps and buffers: what the next
    /// scan can start in ([`IterativeScan::into_memory`]).
    mem: ScanMemory<I>,
}

/// The memory of a finished [`IterativeScan`], empty, for the next one
/// ([`IterativeScan::reusing`]): its visited set, heaps and buffers keep
/// their capacity, so a caller running one scan after another (a backend
/// answering queries) allocates and grows nothing per scan. A scan
/// allocates some 40 KB in a dozen pieces and regrows its heaps as it
/// goes; under 16 clients on 2 cores that was 3% of the machine in a
/// profile (docs/performance.md, "Vector search").
pub struct ScanMemory<I> {
    /// The scan's own copy of the query vector.
    query: Vec<f32>,
    visited: IdSet<I>,
    /// Discovered, not yet expanded.
    frontier: BinaryHeap<Reverse<Scored<I>>>,
    /// Discovered live elements not yet returned.
    pending: BinaryHeap<Reverse<Scored<I>>>,
    /// Discovered beyond the round's bound: this round can neither expand
    /// nor return them (the bound only tightens within a round), so they
    /// wait here, unsorted, until the next round moves them into `frontier`
    /// and `pending`. Most scans never need a second round, and most of
    /// what a round discovers lands here: a push instead of two heap pushes.
    deferred: Vec<Scored<I>>,
    /// The `target` smallest distances among all discovered live elements
    /// (returned or not): its max is the round's stopping bound.
    best: BinaryHeap<Dist>,
    returned_dists: Vec<f32>,
    /// Neighbours passed over by their codes this round, unread: the next
    /// round reads them (those nothing else led to), so no element is lost.
    passed: Vec<I>,
    /// A neighbour list, its codes and its scores, reused between expansions.
    buf: (Vec<I>, Vec<Code>, Vec<Scored<I>>),
    /// The coded query's tables, between scans.
    tables: Vec<f32>,
}

impl<I> Default for ScanMemory<I> {
    fn default() -> Self {
        ScanMemory {
            query: Vec::new(),
            visited: IdSet::default(),
            frontier: BinaryHeap::new(),
            pending: BinaryHeap::new(),
            deferred: Vec::new(),
            best: BinaryHeap::new(),
            returned_dists: Vec::new(),
            passed: Vec::new(),
            buf: (Vec::new(), Vec::new(), Vec::new()),
            tables: Vec::new(),
        }
    }
}

impl<I: crate::store::ElementId> ScanMemory<I> {
    /// Empties it, keeping its capacity (the tables are overwritten whole).
    fn clear(&mut self) {
        self.query.clear();
        self.visited.clear();
        self.frontier.clear();
        self.pending.clear();
        self.deferred.clear();
        self.best.clear();
        self.returned_dists.clear();
        self.passed.clear();
        self.buf.0.clear();
        self.buf.1.clear();
        self.buf.2.clear();
    }

    /// Bytes held, roughly: what a caller keeping it between scans keeps.
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        let scored = size_of::<Scored<I>>();
        self.query.capacity() * 4
            + self.visited.capacity() * (size_of::<I>() + 1)
            + (self.frontier.capacity()
                + self.pending.capacity()
                + self.deferred.capacity()
                + self.buf.2.capacity())
                * scored
            + (self.best.capacity() + self.returned_dists.capacity() + self.tables.capacity()) * 4
            + (self.passed.capacity() + self.buf.0.capacity()) * size_of::<I>()
            + self.buf.1.capacity() * size_of::<Code>()
    }
}

impl<I: crate::store::ElementId> IterativeScan<I> {
    /// Starts a scan: validates the query and descends to layer 0.
    pub fn new<S: GraphStore<Id = I>>(
        store: &S,
        params: &Params,
        query: &[f32],
        ef: usize,
        order: ScanOrder,
    ) -> Result<Self, StoreError<S>> {
        Self::reusing(ScanMemory::default(), store, params, query, ef, order)
    }

    /// [`IterativeScan::new`] in the memory a finished scan left
    /// ([`IterativeScan::into_memory`]).
    pub fn reusing<S: GraphStore<Id = I>>(
        memory: ScanMemory<I>,
        store: &S,
        params: &Params,
        query: &[f32],
        ef: usize,
        order: ScanOrder,
    ) -> Result<Self, StoreError<S>> {
        params.validate().map_err(StoreError::<S>::InvalidParams)?;
        params.validate_vector::<S::Id, S::Error>(query)?;
        let prepared = Query::new(params.metric, query);
        // Empty already: a ScanMemory is made only by `default` and
        // `into_memory`, which clears it (clearing the visited set again
        // would write its whole control array a second time a scan).
        let mut mem = memory;
        let coded = coded_query(store, params, query, std::mem::take(&mut mem.tables));
        mem.query.extend_from_slice(query);
        let wanted = visited_capacity(2 * ef.max(1));
        if mem.visited.capacity() > 4 * wanted {
            // A long iterative scan grew it: clearing costs its whole size.
            mem.visited = visited_set(2 * ef.max(1));
        } else {
            mem.visited.reserve(wanted);
        }
        let mut scan = IterativeScan {
            metric: params.metric,
            self_dot: prepared.self_dot(),
            order,
            target: 2 * ef.max(1),
            whole_first_beam: false,
            first_target: 2 * ef.max(1),
            last: None,
            skipped: 0,
            coded,
            mem,
        };
        if let Some(entry) = store.entry_point().map_err(StoreError::<S>::Storage)? {
            for s in descend(store, &prepared, entry, 0)? {
                if scan.mem.visited.insert(s.id) {
                    scan.discover(s);
                }
            }
        }
        Ok(scan)
    }

    /// The scan's memory, emptied, for the next scan ([`IterativeScan::reusing`]).
    pub fn into_memory(self) -> ScanMemory<I> {
        let mut mem = self.mem;
        mem.clear();
        mem.tables = self.coded.map(CodedQuery::into_tables).unwrap_or_default();
        mem
    }

    /// Lets the first round return its whole beam (`2 * ef` elements) where
    /// it would return `ef`. For a caller that re-ranks the rows it gets
    /// and so reads a few past the `k` it keeps (PostgreSQL re-ranking a
    /// lossy index's rows by exact distance reads on until one cannot come
    /// first): otherwise at `ef = k` those few would start a second round,
    /// which costs as much as the first. The first round's beam is the
    /// search [`search`] runs with `2 * ef`, so they are as good as its.
    pub fn return_whole_first_beam(&mut self) {
        self.whole_first_beam = true;
    }

    /// Elements visited so far (distance computed); lets the caller cap work,
    /// like pgvector's `hnsw.max_scan_tuples`.
    pub fn visited(&self) -> usize {
        self.mem.visited.len()
    }

    /// Elements skipped to keep strict order.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// Takes in a newly visited element.
    fn discover(&mut self, s: Scored<I>) {
        if self.mem.best.len() >= self.target && self.mem.best.peek().is_some_and(|f| s.dist > f.0)
        {
            self.mem.deferred.push(s);
            return;
        }
        self.mem.frontier.push(Reverse(s));
        if !s.deleted {
            self.mem.pending.push(Reverse(s));
            self.mem.best.push(Dist(s.dist));
            if self.mem.best.len() > self.target {
                self.mem.best.pop();
            }
        }
    }

    /// Expands the frontier until the round's stopping rule holds: the
    /// closest unexpanded element is farther than the `target`-th best.
    fn expand<S: GraphStore<Id = I>>(&mut self, store: &S) -> Result<(), StoreError<S>> {
        self.with_query(|scan, query| scan.expand_with(store, query))
    }

    /// Calls `f` with the scan and its query, ready: the vector is lent to
    /// the query for the call and always put back.
    fn with_query<R>(&mut self, f: impl FnOnce(&mut Self, &Query<'_>) -> R) -> R {
        let vector = std::mem::take(&mut self.mem.query);
        let query = Query::with_self_dot(self.metric, &vector, self.self_dot);
        let outcome = f(self, &query);
        self.mem.query = vector;
        outcome
    }

    fn expand_with<S: GraphStore<Id = I>>(
        &mut self,
        store: &S,
        query: &Query<'_>,
    ) -> Result<(), StoreError<S>> {
        while let Some(Reverse(c)) = self.mem.frontier.peek().copied() {
            if self.mem.best.len() >= self.target
                && self.mem.best.peek().is_some_and(|f| c.dist > f.0)
            {
                return Ok(());
            }
            self.mem.frontier.pop();
            let (mut buf, mut codes, scored) = std::mem::take(&mut self.mem.buf);
            let bound = self
                .coded
                .as_ref()
                .filter(|_| self.mem.best.len() >= self.target)
                .zip(self.mem.best.peek().map(|f| f.0));
            let outcome = unvisited_neighbours(
                store,
                c.id,
                0,
                bound,
                &mut self.mem.visited,
                (&mut buf, &mut codes),
                Some(&mut self.mem.passed),
            );
            let outcome = outcome.and_then(|()| self.score(store, query, &buf, scored));
            self.mem.buf.0 = buf;
            self.mem.buf.1 = codes;
            outcome?;
        }
        Ok(())
    }

    /// Scores `ids` (already marked visited) and takes each in; `scored`
    /// is the reused buffer, put back.
    fn score<S: GraphStore<Id = I>>(
        &mut self,
        store: &S,
        query: &Query<'_>,
        ids: &[I],
        mut scored: Vec<Scored<I>>,
    ) -> Result<(), StoreError<S>> {
        scored.clear();
        let outcome = score_all(store, query, ids, &mut scored);
        for &s in &scored {
            self.discover(s);
        }
        self.mem.buf.2 = scored;
        outcome
    }

    /// Reads the neighbours passed over by their codes in the last round
    /// that nothing since has led to: a new round's wider bound may take
    /// them in, and when none do the scan has still seen every element.
    fn read_passed<S: GraphStore<Id = I>>(&mut self, store: &S) -> Result<(), StoreError<S>> {
        let mut passed = std::mem::take(&mut self.mem.passed);
        passed.retain(|n| self.mem.visited.insert(*n));
        let scored = std::mem::take(&mut self.mem.buf.2);
        let outcome = self.with_query(|scan, query| scan.score(store, query, &passed, scored));
        passed.clear();
        self.mem.passed = passed;
        outcome
    }

    /// Starts the next round: doubles the target and recomputes the bound
    /// from every live element discovered so far, returned or not.
    fn grow(&mut self) {
        // Double at least once, and until the round can return something.
        self.target = self.target.saturating_mul(2);
        while self.target / 2 <= self.mem.returned_dists.len() && self.target < usize::MAX / 2 {
            self.target *= 2;
        }
        for s in self.mem.deferred.drain(..) {
            self.mem.frontier.push(Reverse(s));
            if !s.deleted {
                self.mem.pending.push(Reverse(s));
            }
        }
        let mut dists: Vec<f32> = self.mem.returned_dists.clone();
        dists.extend(self.mem.pending.iter().map(|r| r.0.dist));
        dists.sort_unstable_by(f32::total_cmp);
        dists.truncate(self.target);
        self.mem.best = dists.into_iter().map(Dist).collect();
    }

    /// The next result, or `None` when the reachable graph is exhausted.
    pub fn next<S: GraphStore<Id = I>>(
        &mut self,
        store: &S,
    ) -> Result<Option<(f32, I)>, StoreError<S>> {
        loop {
            self.expand(store)?;
            let limit = if self.whole_first_beam && self.target == self.first_target {
                self.target
            } else {
                self.target / 2
            };
            while self.mem.returned_dists.len() < limit {
                let Some(Reverse(s)) = self.mem.pending.pop() else {
                    break;
                };
                if self.order == ScanOrder::Strict && self.last.is_some_and(|l| s.dist < l) {
                    self.skipped += 1;
                    // Count it as consumed so rounds still make progress.
                    self.mem.returned_dists.push(s.dist);
                    continue;
                }
                self.mem.returned_dists.push(s.dist);
                self.last = Some(self.last.map_or(s.dist, |l| l.max(s.dist)));
                return Ok(Some((s.dist, s.id)));
            }
            if self.mem.frontier.is_empty()
                && self.mem.pending.is_empty()
                && self.mem.deferred.is_empty()
                && self.mem.passed.is_empty()
            {
                return Ok(None);
            }
            self.grow();
            self.read_passed(store)?;
        }
    }
}
