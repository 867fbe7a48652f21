//! Keyword ranking for Vigil's vector databases, without Postgres.
//!
//! Records are matched through a GIN index on a `tsvector` (PostgreSQL finds
//! the candidates); this crate ranks them like BM25, which PostgreSQL's own
//! `ts_rank` does not (it ignores how rare a word is and saturates nothing).
//!
//! - [`tsvector`]: reads the on-disk `tsvector` layout, for term frequencies
//!   and document length.
//! - [`bm25`]: the scoring function and the per-term upper bounds that let
//!   the query plan stop early ([`bm25::essential_terms`], MaxScore).
//! - [`tokens`]: exact tokens (`XK-42`, `a.b@c.org`, `foo_bar`) that
//!   PostgreSQL's parser would split, kept whole so they match whole.

pub mod bm25;
pub mod postings;
pub mod tokens;
pub mod tsvector;
