//! Keyword ranking for Vigil's vector databases, without Postgres.
//!
//! Records' words come from PostgreSQL's text search (a `tsvector` per
//! record); this crate keeps them in a keyword index of its own and ranks
//! like BM25, which PostgreSQL's own `ts_rank` does not (it ignores how rare
//! a word is and saturates nothing).
//!
//! - [`tsvector`]: reads the on-disk `tsvector` layout, for term frequencies
//!   and document length.
//! - [`bm25`]: the scoring function.
//! - [`postings`]: the keyword index's posting blocks and the exact top k
//!   over them (MaxScore with block-max bounds), reading no record.
//! - [`cache`]: a backend's copy of the posting blocks its searches read,
//!   per database version, within a budget.
//! - [`fusion`]: hybrid search's fusion of the keyword and vector rankings
//!   (Reciprocal Rank Fusion, or a convex combination of normalised scores).
//! - [`opening`]: a record's first sentence, which hybrid search reads
//!   it by besides its whole text.
//! - [`tokens`]: exact tokens (`XK-42`, `a.b@c.org`, `foo_bar`) that
//!   PostgreSQL's parser would split, kept whole so they match whole.

pub mod bm25;
pub mod cache;
pub mod fusion;
pub mod opening;
pub mod postings;
pub mod tokens;
pub mod tsvector;
