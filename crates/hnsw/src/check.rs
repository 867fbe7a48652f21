//! Structural consistency check, the basis of SQL `vigil.hnsw_check`.
//!
//! Reads every element once and every neighbour list once; stops at the
//! first problem with a [`Corruption`] naming the element and layer.

use crate::error::{Corruption, CorruptionKind, StoreError};
use crate::ids::{IdMap, IdSet};
use crate::params::{Params, MAX_LEVEL};
use crate::store::{ElementMeta, GraphStore};

/// What [`check`] insists on beyond the always-checked invariants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckOptions {
    /// Live elements may link only to live elements and the entry point must
    /// be live (true right after vacuum repair; between a delete and vacuum
    /// links to deleted elements are normal).
    pub require_live_links: bool,
    /// Also read each vector and check its length and finiteness.
    pub check_vectors: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            require_live_links: false,
            check_vectors: true,
        }
    }
}

/// Statistics of a graph that passed the check.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckReport {
    pub elements: usize,
    pub deleted: usize,
    /// Number of elements per level (index = level).
    pub levels: Vec<usize>,
    /// Total links over all layers.
    pub links: usize,
}

fn corrupt<S: GraphStore>(
    element: Option<S::Id>,
    layer: Option<usize>,
    kind: CorruptionKind<S::Id>,
) -> StoreError<S> {
    StoreError::<S>::Corrupt(Corruption {
        element,
        layer,
        kind,
    })
}

/// Each layer-0 link's code is the one its element keeps.
fn check_codes<S: GraphStore>(
    store: &S,
    id: S::Id,
    list: &[S::Id],
    codes: &[crate::codes::Code],
) -> Result<(), StoreError<S>> {
    if codes.len() != list.len() {
        let kind = CorruptionKind::WrongCode { target: None };
        return Err(corrupt::<S>(Some(id), Some(0), kind));
    }
    for (&target, code) in list.iter().zip(codes) {
        let kept = store
            .element_code(target)
            .map_err(StoreError::<S>::Storage)?;
        if kept.is_some_and(|k| k != *code) {
            let kind = CorruptionKind::WrongCode {
                target: Some(target),
            };
            return Err(corrupt::<S>(Some(id), Some(0), kind));
        }
    }
    Ok(())
}

/// Verifies the graph: every link points at an existing element (a live
/// one, with `require_live_links`), whose level reaches the link's layer;
/// no element links to itself or twice to the same element; lists are
/// within capacity; levels are at most [`MAX_LEVEL`]; vectors have the
/// index's dimensions and are finite; the entry point exists, its recorded
/// level is its level, and no element has a higher level; in a store that
/// keeps codes, each layer-0 link's code is its element's.
pub fn check<S: GraphStore>(
    store: &S,
    params: &Params,
    opts: CheckOptions,
) -> Result<CheckReport, StoreError<S>> {
    params.validate().map_err(StoreError::<S>::InvalidParams)?;
    let mut metas: IdMap<S::Id, ElementMeta> = IdMap::default();
    store
        .for_each_element(&mut |id, m| {
            metas.insert(id, m);
        })
        .map_err(StoreError::<S>::Storage)?;
    let mut ids: Vec<S::Id> = metas.keys().copied().collect();
    ids.sort_unstable();

    let mut report = CheckReport {
        elements: ids.len(),
        ..CheckReport::default()
    };
    let mut list = Vec::new();
    let (mut codes, coded) = (Vec::new(), store.keeps_codes());
    let mut seen: IdSet<S::Id> = IdSet::default();
    for &id in &ids {
        let meta = metas[&id];
        if meta.level > MAX_LEVEL {
            return Err(corrupt::<S>(
                Some(id),
                None,
                CorruptionKind::LevelTooHigh { level: meta.level },
            ));
        }
        if report.levels.len() <= meta.level {
            report.levels.resize(meta.level + 1, 0);
        }
        report.levels[meta.level] += 1;
        report.deleted += usize::from(meta.deleted);
        if opts.check_vectors {
            let (len, finite) = store
                .with_element(id, |_, v| (v.len(), v.iter().all(|x| x.is_finite())))
                .map_err(StoreError::<S>::Storage)?;
            if len != params.dims {
                let kind = CorruptionKind::VectorLength {
                    len,
                    expected: params.dims,
                };
                return Err(corrupt::<S>(Some(id), None, kind));
            }
            if !finite {
                return Err(corrupt::<S>(
                    Some(id),
                    None,
                    CorruptionKind::NonFiniteVector,
                ));
            }
        }
        for layer in 0..=meta.level {
            let with_codes = coded && layer == 0;
            if with_codes {
                store.neighbours_coded(id, &mut list, &mut codes)
            } else {
                store.neighbours(id, layer, &mut list)
            }
            .map_err(StoreError::<S>::Storage)?;
            let capacity = params.capacity(layer);
            if list.len() > capacity {
                let kind = CorruptionKind::TooManyNeighbours {
                    len: list.len(),
                    capacity,
                };
                return Err(corrupt::<S>(Some(id), Some(layer), kind));
            }
            seen.clear();
            for &target in &list {
                let bad = |kind| Err(corrupt::<S>(Some(id), Some(layer), kind));
                if target == id {
                    return bad(CorruptionKind::SelfLink);
                }
                if !seen.insert(target) {
                    return bad(CorruptionKind::DuplicateLink { target });
                }
                let Some(t) = metas.get(&target) else {
                    return bad(CorruptionKind::DanglingLink { target });
                };
                if t.level < layer {
                    return bad(CorruptionKind::LinkBelowLayer {
                        target,
                        target_level: t.level,
                    });
                }
                if opts.require_live_links && t.deleted && !meta.deleted {
                    return bad(CorruptionKind::LinkToDeleted { target });
                }
            }
            if with_codes {
                // Every target exists by now, so each has a code to compare.
                check_codes(store, id, &list, &codes)?;
            }
            report.links += list.len();
        }
    }

    let entry = store.entry_point().map_err(StoreError::<S>::Storage)?;
    let Some(entry) = entry else {
        if ids.is_empty() {
            return Ok(report);
        }
        return Err(corrupt::<S>(None, None, CorruptionKind::NoEntryPoint));
    };
    let here = Some(entry.id);
    let Some(em) = metas.get(&entry.id) else {
        let kind = if ids.is_empty() {
            CorruptionKind::EntryPointOnEmpty
        } else {
            CorruptionKind::EntryPointMissing
        };
        return Err(corrupt::<S>(here, None, kind));
    };
    if em.level != entry.level {
        let kind = CorruptionKind::EntryPointLevel {
            recorded: entry.level,
            actual: em.level,
        };
        return Err(corrupt::<S>(here, None, kind));
    }
    if let Some(&higher) = ids.iter().find(|i| metas[*i].level > em.level) {
        let kind = CorruptionKind::EntryPointNotTop {
            entry_level: em.level,
            higher,
            higher_level: metas[&higher].level,
        };
        return Err(corrupt::<S>(here, None, kind));
    }
    if opts.require_live_links && em.deleted && report.deleted < ids.len() {
        return Err(corrupt::<S>(here, None, CorruptionKind::EntryPointDeleted));
    }
    Ok(report)
}
