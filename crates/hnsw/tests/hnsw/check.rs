//! `check` catches every corruption we can inject into the in-memory store;
//! the algorithms return errors (no panics) on corrupt graphs and bad input.

use crate::common::*;
use vigil_hnsw::{
    check, insert_with_level, search, CheckOptions, CorruptionKind, EntryPoint, Error, GraphStore,
    IterativeScan, MemStore, Metric, Params, ScanOrder,
};

type E = Error<u64, vigil_hnsw::MemError>;

fn graph() -> (MemStore<u64>, Params, Vec<Vec<f32>>) {
    let (data, _) = clustered(5, 400, 0, 8, 5);
    let params = Params {
        m: 4,
        ef_construction: 16,
        ..Params::new(8, Metric::L2)
    };
    let (store, _) = build_by_insert(&params, &data, 5);
    (store, params, data)
}

const STRICT: CheckOptions = CheckOptions {
    require_live_links: true,
    check_vectors: true,
};

/// Runs the check and returns the corruption it reports.
fn corruption(
    store: &MemStore<u64>,
    params: &Params,
    opts: CheckOptions,
) -> (Option<u64>, Option<usize>, CorruptionKind<u64>, String) {
    match check(store, params, opts) {
        Err(Error::Corrupt(c)) => {
            let msg = Error::<u64, vigil_hnsw::MemError>::Corrupt(c.clone()).to_string();
            (c.element, c.layer, c.kind, msg)
        }
        other => panic!("expected a corruption, got {other:?}"),
    }
}

/// An element with level >= 1 that is not the entry point, and the entry.
fn upper(store: &MemStore<u64>, n: usize) -> (u64, EntryPoint<u64>) {
    let entry = store.entry_point().unwrap().unwrap();
    let id = (0..n)
        .map(id_of)
        .find(|&id| id != entry.id && store.element(id).unwrap().level >= 1)
        .expect("an upper-layer element");
    (id, entry)
}

#[test]
fn clean_graph_passes() {
    let (store, params, _) = graph();
    let r = check(&store, &params, STRICT).unwrap();
    assert_eq!(r.elements, 400);
    assert_eq!(r.deleted, 0);
    assert!(r.levels.len() >= 2);
    assert!(r.links > 400);
}

#[test]
fn catches_link_corruptions() {
    let (store, params, _) = graph();
    let a = id_of(10);
    let b = id_of(11);
    let mut list = Vec::new();
    store.neighbours(a, 0, &mut list).unwrap();

    let mut s = store.clone();
    s.set_neighbours(a, 0, &[b, a]).unwrap();
    let (el, layer, kind, msg) = corruption(&s, &params, CheckOptions::default());
    assert_eq!(
        (el, layer, kind),
        (Some(a), Some(0), CorruptionKind::SelfLink)
    );
    assert!(msg.contains(&format!("element {a} layer 0")), "{msg}");

    let mut s = store.clone();
    s.set_neighbours(a, 0, &[b, b]).unwrap();
    let (el, layer, kind, _) = corruption(&s, &params, CheckOptions::default());
    assert_eq!(
        (el, layer, kind),
        (
            Some(a),
            Some(0),
            CorruptionKind::DuplicateLink { target: b }
        )
    );

    let mut s = store.clone();
    s.set_neighbours(a, 0, &[b, 999_999]).unwrap();
    let (el, layer, kind, _) = corruption(&s, &params, CheckOptions::default());
    let want = CorruptionKind::DanglingLink { target: 999_999 };
    assert_eq!((el, layer, kind), (Some(a), Some(0), want));

    // A removed element that others still point at.
    let mut s = store.clone();
    s.remove_element(list[0]).unwrap();
    let (_, _, kind, _) = corruption(&s, &params, CheckOptions::default());
    assert!(matches!(kind, CorruptionKind::DanglingLink { target } if target == list[0]));

    // Links to deleted elements: fine before vacuum, not after.
    let mut s = store.clone();
    s.mark_deleted(list[0]).unwrap();
    check(&s, &params, CheckOptions::default()).unwrap();
    let (_, _, kind, _) = corruption(&s, &params, STRICT);
    assert!(matches!(kind, CorruptionKind::LinkToDeleted { target } if target == list[0]));

    let mut s = store.clone();
    let too_many: Vec<u64> = (100..100 + 2 * params.m + 1).map(id_of).collect();
    s.set_neighbours(a, 0, &too_many).unwrap();
    let (el, layer, kind, _) = corruption(&s, &params, CheckOptions::default());
    let want = CorruptionKind::TooManyNeighbours {
        len: 9,
        capacity: 8,
    };
    assert_eq!((el, layer, kind), (Some(a), Some(0), want));

    // A layer-1 link to an element that is only on layer 0.
    let (u, _) = upper(&store, 400);
    let low = (0..400)
        .map(id_of)
        .find(|&id| store.element(id).unwrap().level == 0)
        .unwrap();
    let mut s = store.clone();
    s.set_neighbours(u, 1, &[low]).unwrap();
    let (el, layer, kind, msg) = corruption(&s, &params, CheckOptions::default());
    let want = CorruptionKind::LinkBelowLayer {
        target: low,
        target_level: 0,
    };
    assert_eq!((el, layer, kind), (Some(u), Some(1), want));
    assert!(msg.contains("layer 1"), "{msg}");
}

#[test]
fn catches_element_corruptions() {
    let (store, params, _) = graph();
    let a = id_of(20);

    let mut s = store.clone();
    s.element_mut(a).unwrap().vector.push(1.0);
    let (el, _, kind, _) = corruption(&s, &params, CheckOptions::default());
    assert_eq!(
        (el, kind),
        (
            Some(a),
            CorruptionKind::VectorLength {
                len: 9,
                expected: 8
            }
        )
    );

    let mut s = store.clone();
    s.element_mut(a).unwrap().vector[3] = f32::NAN;
    let (el, _, kind, _) = corruption(&s, &params, CheckOptions::default());
    assert_eq!((el, kind), (Some(a), CorruptionKind::NonFiniteVector));

    let mut s = store.clone();
    let e = s.element_mut(a).unwrap();
    e.level = 16;
    e.neighbours.resize(17, Vec::new());
    let (el, _, kind, _) = corruption(&s, &params, CheckOptions::default());
    assert_eq!(
        (el, kind),
        (Some(a), CorruptionKind::LevelTooHigh { level: 16 })
    );
}

#[test]
fn catches_entry_point_corruptions() {
    let (store, params, _) = graph();
    let (u, entry) = upper(&store, 400);

    let mut s = store.clone();
    s.set_entry_point(None).unwrap();
    assert_eq!(
        corruption(&s, &params, CheckOptions::default()).2,
        CorruptionKind::NoEntryPoint
    );

    let mut s = store.clone();
    s.set_entry_point(Some(EntryPoint {
        id: 999_999,
        level: entry.level,
    }))
    .unwrap();
    let (el, _, kind, _) = corruption(&s, &params, CheckOptions::default());
    assert_eq!(
        (el, kind),
        (Some(999_999), CorruptionKind::EntryPointMissing)
    );

    let mut s = store.clone();
    s.set_entry_point(Some(EntryPoint {
        id: entry.id,
        level: entry.level + 1,
    }))
    .unwrap();
    let (_, _, kind, _) = corruption(&s, &params, CheckOptions::default());
    let want = CorruptionKind::EntryPointLevel {
        recorded: entry.level + 1,
        actual: entry.level,
    };
    assert_eq!(kind, want);

    let mut s = store.clone();
    let e = s.element_mut(u).unwrap();
    e.level = entry.level + 1;
    e.neighbours.resize(entry.level + 2, Vec::new());
    let (el, _, kind, msg) = corruption(&s, &params, CheckOptions::default());
    let want = CorruptionKind::EntryPointNotTop {
        entry_level: entry.level,
        higher: u,
        higher_level: entry.level + 1,
    };
    assert_eq!((el, kind), (Some(entry.id), want));
    assert!(msg.contains("entry point"), "{msg}");

    let mut s = store.clone();
    s.mark_deleted(entry.id).unwrap();
    check(&s, &params, CheckOptions::default()).unwrap();
    // Strict: the links to it are reported first; clear them to reach the
    // entry point check itself.
    for i in 0..400 {
        let id = id_of(i);
        let level = s.element(id).unwrap().level;
        for layer in 0..=level {
            let mut l = Vec::new();
            s.neighbours(id, layer, &mut l).unwrap();
            l.retain(|&x| x != entry.id);
            s.set_neighbours(id, layer, &l).unwrap();
        }
    }
    assert_eq!(
        corruption(&s, &params, STRICT).2,
        CorruptionKind::EntryPointDeleted
    );

    let mut s = MemStore::<u64>::new();
    s.set_entry_point(Some(entry)).unwrap();
    assert_eq!(
        corruption(&s, &params, CheckOptions::default()).2,
        CorruptionKind::EntryPointOnEmpty
    );
}

#[test]
fn algorithms_return_errors_not_panics() {
    let (store, params, data) = graph();

    // Wrong query dimensions.
    let r = search(&store, &params, &[1.0; 7], 5, 10);
    assert!(matches!(
        r,
        Err(E::Dimensions {
            expected: 8,
            got: 7
        })
    ));
    let mut s = store.clone();
    let r = insert_with_level(&mut s, &params, 1 << 40, &[1.0; 9], 0);
    assert!(matches!(
        r,
        Err(E::Dimensions {
            expected: 8,
            got: 9
        })
    ));
    let r = insert_with_level(&mut s, &params, 1 << 40, &[f32::NAN; 8], 0);
    assert!(matches!(r, Err(E::InvalidVector(_))));
    let cos = Params {
        metric: Metric::Cosine,
        ..params
    };
    let r = search(&store, &cos, &[0.0; 8], 5, 10);
    assert!(matches!(r, Err(E::InvalidVector(_))));
    let bad = Params { m: 1, ..params };
    assert!(matches!(
        search(&store, &bad, &data[0], 5, 10),
        Err(E::InvalidParams(_))
    ));
    // Duplicate id.
    let r = insert_with_level(&mut s, &params, id_of(3), &data[3], 0);
    assert!(matches!(
        r,
        Err(E::Storage(vigil_hnsw::MemError::Exists(_)))
    ));

    // A dangling link met during search or insert is a storage error.
    let mut s = store.clone();
    let entry = s.entry_point().unwrap().unwrap();
    let mut list = Vec::new();
    s.neighbours(entry.id, 0, &mut list).unwrap();
    list.push(999_999);
    let top: Vec<u64> = (0..400)
        .map(id_of)
        .filter(|&id| id != entry.id)
        .take(2)
        .collect();
    for layer in 0..=entry.level {
        let l = if layer == 0 {
            list.clone()
        } else {
            vec![999_999, top[0]]
        };
        s.set_neighbours(entry.id, layer, &l).unwrap();
    }
    let r = search(&s, &params, &data[0], 5, 400);
    assert!(
        matches!(r, Err(E::Storage(vigil_hnsw::MemError::NotFound(_)))),
        "{r:?}"
    );
    let r = IterativeScan::new(&s, &params, &data[0], 10, ScanOrder::Strict);
    assert!(r.is_err());

    // A stored vector of the wrong length is reported as corruption.
    let mut s = store.clone();
    s.element_mut(entry.id).unwrap().vector.pop();
    let r = search(&s, &params, &data[0], 5, 10);
    assert!(
        matches!(r, Err(E::Corrupt(ref c)) if c.element == Some(entry.id)),
        "{r:?}"
    );
}
