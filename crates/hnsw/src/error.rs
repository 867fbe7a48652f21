//! What can go wrong: [`Error`] for every entry point of the crate, and
//! [`Corruption`], the structural problems [`crate::check()`] and the
//! algorithms report with the element and layer concerned.

use std::fmt;

use crate::params::MAX_LEVEL;
use crate::store::{ElementId, GraphStore};

/// Everything that can go wrong. `I` is the element id type, `E` the
/// store's error type.
#[derive(Debug, thiserror::Error)]
pub enum Error<I: ElementId, E: std::error::Error + 'static> {
    /// The store failed (in Postgres: an `ereport` caught by the glue).
    #[error("storage error: {0}")]
    Storage(#[source] E),
    #[error("vector has {got} dimensions, the index expects {expected}")]
    Dimensions { expected: usize, got: usize },
    #[error("invalid vector: {0}")]
    InvalidVector(&'static str),
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// The graph is inconsistent; names the element and layer.
    #[error("index is corrupt: {0}")]
    Corrupt(Corruption<I>),
    /// The bulk build failed (duplicate id, too many elements, a panic).
    #[error("build failed: {0}")]
    Build(String),
}

/// The [`Error`] for store `S`.
pub type StoreError<S> = Error<<S as GraphStore>::Id, <S as GraphStore>::Error>;

/// A structural problem found in the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Corruption<I> {
    /// The element whose data is wrong, if the problem belongs to one.
    pub element: Option<I>,
    /// The layer of the neighbour list concerned, if any.
    pub layer: Option<usize>,
    pub kind: CorruptionKind<I>,
}

/// What exactly is wrong; see [`crate::check()`].
#[derive(Debug, Clone, PartialEq)]
pub enum CorruptionKind<I> {
    SelfLink,
    DuplicateLink {
        target: I,
    },
    DanglingLink {
        target: I,
    },
    LinkToDeleted {
        target: I,
    },
    /// A link on layer `l` to an element whose level is below `l`.
    LinkBelowLayer {
        target: I,
        target_level: usize,
    },
    TooManyNeighbours {
        len: usize,
        capacity: usize,
    },
    VectorLength {
        len: usize,
        expected: usize,
    },
    /// A layer-0 link's code differs from the code its element keeps, or
    /// the list has not one code per link.
    WrongCode {
        target: Option<I>,
    },
    NonFiniteVector,
    LevelTooHigh {
        level: usize,
    },
    /// The store has elements but no entry point.
    NoEntryPoint,
    /// The entry point names an element that does not exist.
    EntryPointMissing,
    /// The entry point's recorded level differs from the element's level.
    EntryPointLevel {
        recorded: usize,
        actual: usize,
    },
    /// Some element has a higher level than the entry point.
    EntryPointNotTop {
        entry_level: usize,
        higher: I,
        higher_level: usize,
    },
    EntryPointDeleted,
    /// An empty store with an entry point.
    EntryPointOnEmpty,
}

impl<I: fmt::Debug> fmt::Display for Corruption<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(e) = &self.element {
            write!(f, "element {e:?}")?;
            if let Some(l) = self.layer {
                write!(f, " layer {l}")?;
            }
            write!(f, ": ")?;
        }
        match &self.kind {
            CorruptionKind::SelfLink => write!(f, "links to itself"),
            CorruptionKind::DuplicateLink { target } => write!(f, "links to {target:?} twice"),
            CorruptionKind::DanglingLink { target } => {
                write!(f, "links to {target:?}, which does not exist")
            }
            CorruptionKind::LinkToDeleted { target } => {
                write!(f, "links to {target:?}, which is deleted")
            }
            CorruptionKind::LinkBelowLayer {
                target,
                target_level,
            } => write!(
                f,
                "links to {target:?}, whose level {target_level} is below this layer"
            ),
            CorruptionKind::TooManyNeighbours { len, capacity } => {
                write!(f, "has {len} neighbours, capacity is {capacity}")
            }
            CorruptionKind::VectorLength { len, expected } => {
                write!(f, "vector has {len} dimensions, expected {expected}")
            }
            CorruptionKind::NonFiniteVector => write!(f, "vector contains NaN or infinity"),
            CorruptionKind::WrongCode {
                target: Some(target),
            } => {
                write!(
                    f,
                    "the code kept with the link to {target:?} is not that element's"
                )
            }
            CorruptionKind::WrongCode { target: None } => {
                write!(f, "the list does not keep one code per link")
            }
            CorruptionKind::LevelTooHigh { level } => {
                write!(f, "level {level} exceeds the maximum {MAX_LEVEL}")
            }
            CorruptionKind::NoEntryPoint => write!(f, "graph has elements but no entry point"),
            CorruptionKind::EntryPointMissing => write!(f, "entry point does not exist"),
            CorruptionKind::EntryPointLevel { recorded, actual } => write!(
                f,
                "entry point recorded at level {recorded}, element has level {actual}"
            ),
            CorruptionKind::EntryPointNotTop {
                entry_level,
                higher,
                higher_level,
            } => write!(
                f,
                "entry point has level {entry_level} but {higher:?} has level {higher_level}"
            ),
            CorruptionKind::EntryPointDeleted => write!(f, "entry point is deleted"),
            CorruptionKind::EntryPointOnEmpty => write!(f, "empty graph has an entry point"),
        }
    }
}
