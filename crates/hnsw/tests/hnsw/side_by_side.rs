//! Inserts that run side by side: planned against the same graph, then
//! written one after the other, and a writer whose list changed under it
//! between reading and writing ([`GraphStore::replace_neighbours`] refusing).
//! In Postgres these are two sessions inserting at once.

use vigil_hnsw::{
    check, plan_links, search, write_element, CheckOptions, GraphStore, LevelRng, MemError,
    MemStore, Metric, Params,
};

use crate::common::{build_by_insert, clustered, id_of, pass_through_to};

/// A store where, just before one chosen list is replaced, another writer
/// adds a link to it, as a concurrent insert would between the read and
/// the write of a link-back.
struct Meddled {
    inner: MemStore<u64>,
    /// (list owner, layer, link another writer adds), used once.
    meddle: Option<(u64, usize, u64)>,
    refused: usize,
}

impl GraphStore for Meddled {
    type Id = u64;
    type Error = MemError;

    pass_through_to!(inner; insert_element, remove_element);

    fn replace_neighbours(
        &mut self,
        id: u64,
        layer: usize,
        expected: &[u64],
        new: &[u64],
    ) -> Result<bool, MemError> {
        if let Some((owner, l, extra)) = self.meddle {
            if (owner, l) == (id, layer) {
                self.meddle = None;
                let mut list = Vec::new();
                self.inner.neighbours(id, layer, &mut list)?;
                list.push(extra);
                self.inner.set_neighbours(id, layer, &list)?;
            }
        }
        let replaced = self.inner.replace_neighbours(id, layer, expected, new)?;
        self.refused += usize::from(!replaced);
        Ok(replaced)
    }
}

fn graph(n: usize) -> (MemStore<u64>, Params, Vec<Vec<f32>>) {
    let params = Params::new(16, Metric::Cosine);
    let (data, _) = clustered(11, n + 50, 0, 16, 8);
    let (store, _) = build_by_insert(&params, &data[..n], 5);
    (store, params, data)
}

fn strict() -> CheckOptions {
    CheckOptions {
        require_live_links: true,
        check_vectors: true,
    }
}

#[test]
fn a_link_added_between_read_and_write_is_kept() {
    // Few elements, so lists have room: the test is about the race, not pruning.
    let (mut store, params, data) = graph(20);
    let new_id = 1 << 40;
    let v = &data[20];
    let lists = plan_links(&store, &params, v, 0).unwrap();
    // The other writer's element is written and about to be linked back.
    let extra = (1 << 40) + 1;
    store
        .insert_element(extra, 0, &data[21], &[lists[0].clone()])
        .unwrap();
    // A neighbour with room for two more links: its list must end with both
    // the other writer's link and ours.
    let cap = params.capacity(0);
    let owner = *lists[0]
        .iter()
        .find(|&&n| store.element(n).unwrap().neighbours[0].len() + 2 <= cap)
        .expect("a neighbour with room in its list");
    let before = store.element(owner).unwrap().neighbours[0].clone();
    let mut meddled = Meddled {
        inner: store,
        meddle: Some((owner, 0, extra)),
        refused: 0,
    };
    write_element(&mut meddled, &params, new_id, v, 0, &lists).unwrap();
    assert_eq!(meddled.refused, 1, "the stale write was refused once");
    let after = &meddled.inner.element(owner).unwrap().neighbours[0];
    assert!(after.contains(&extra), "the other writer's link was lost");
    assert!(after.contains(&new_id), "our link was not retried");
    assert_eq!(after.len(), before.len() + 2);
}

#[test]
fn inserts_planned_against_the_same_graph_both_land() {
    let (mut store, params, data) = graph(500);
    let mut levels = LevelRng::new(3);
    // Twenty-five pairs: both elements of a pair plan before either writes, as
    // two sessions do under the shared graph lock.
    for pair in 0..25 {
        let (a, b) = (&data[500 + 2 * pair], &data[501 + 2 * pair]);
        let (ida, idb) = ((1 << 40) + 2 * pair as u64, (1 << 40) + 2 * pair as u64 + 1);
        // Below the entry point's level, as inserts that share the lock are.
        let top = store.entry_point().unwrap().unwrap().level;
        let (la, lb) = (
            levels.level(&params).min(top),
            levels.level(&params).min(top),
        );
        let plan_a = plan_links(&store, &params, a, la).unwrap();
        let plan_b = plan_links(&store, &params, b, lb).unwrap();
        write_element(&mut store, &params, ida, a, la, &plan_a).unwrap();
        write_element(&mut store, &params, idb, b, lb, &plan_b).unwrap();
    }
    let report = check(&store, &params, strict()).unwrap();
    assert_eq!(report.elements, 550);
    for pair in 0..50 {
        let id = (1 << 40) + pair as u64;
        let found = search(&store, &params, &data[500 + pair], 1, 64).unwrap();
        assert_eq!(found[0].1, id, "element {pair} does not find itself");
        let linked = (0..500)
            .map(id_of)
            .any(|n| store.element(n).unwrap().neighbours[0].contains(&id));
        assert!(linked, "nothing links to element {pair}");
    }
}
