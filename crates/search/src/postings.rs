//! Posting lists in blocks, and BM25's top k over them.
//!
//! A term's postings (record id, term frequency, record length) are kept in
//! blocks of up to [`BLOCK`] postings, sorted by id, each block one row of
//! `vigil.vector_postings`. A keyword query reads the blocks of its terms and
//! nothing else: the frequency and the length a score needs are in the
//! posting, so no record is read to rank it.
//!
//! Block bytes: a fixed header (a version byte, then little-endian: posting
//! count `u32`, first and last id `i64`, largest term frequency `u16`,
//! shortest record length `u32`), then per posting three LEB128 varints: the
//! id's distance from the previous id (from `first` for the first posting),
//! the term frequency, the record length. The header's maximum frequency and
//! minimum length bound what any posting of the block can score, so a query
//! passes over a block without decoding it when that bound cannot reach its
//! current top k (block-max pruning, Ding and Suel 2011).
//!
//! Writers append to a term's newest block ([`append`]) and take postings out
//! of the block holding them ([`remove`]). Transactions allocate ids before
//! they commit in some order, so a block may receive an id below another
//! block's last: blocks of a term may overlap, and [`top_k`] merges
//! overlapping blocks before it walks them.
//!
//! [`top_k`] is MaxScore (Turtle and Flood, 1995) document at a time: terms
//! whose upper bounds together cannot lift a record into the top k are only
//! probed for records the others found, skipping whole blocks by their last
//! id; it is exact, ties broken by the smaller id.
//!
//! Malformed bytes are an error, never a panic.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::bm25;
use crate::tsvector::Malformed;

/// Most postings in one block: small enough that rewriting a term's newest
/// block on every insert is cheap (under a kilobyte), large enough that a
/// common term is a few hundred rows.
pub const BLOCK: usize = 128;

const VERSION: u8 = 1;
const HEADER: usize = 1 + 4 + 8 + 8 + 2 + 4;

/// One record holding a term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posting {
    pub id: i64,
    /// Occurrences of the term in the record (at least 1).
    pub tf: u16,
    /// The record's length in tokens (BM25's document length).
    pub length: u32,
}

/// What a block's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub count: u32,
    pub first: i64,
    pub last: i64,
    pub max_tf: u16,
    pub min_length: u32,
}

/// Reads a block's header.
pub fn header(bytes: &[u8]) -> Result<Header, Malformed> {
    let h = bytes
        .get(..HEADER)
        .ok_or(Malformed("posting block shorter than its header"))?;
    if h[0] != VERSION {
        return Err(Malformed("posting block of an unknown version"));
    }
    let count = u32::from_le_bytes([h[1], h[2], h[3], h[4]]);
    let first = i64::from_le_bytes(h[5..13].try_into().unwrap_or_default());
    let last = i64::from_le_bytes(h[13..21].try_into().unwrap_or_default());
    let max_tf = u16::from_le_bytes([h[21], h[22]]);
    let min_length = u32::from_le_bytes([h[23], h[24], h[25], h[26]]);
    if count == 0 || first > last {
        return Err(Malformed("posting block header out of order"));
    }
    Ok(Header {
        count,
        first,
        last,
        max_tf,
        min_length,
    })
}

/// Encodes postings sorted by strictly increasing id, at least one.
pub fn encode(postings: &[Posting]) -> Vec<u8> {
    debug_assert!(!postings.is_empty());
    debug_assert!(postings.windows(2).all(|w| w[0].id < w[1].id));
    let first = postings.first().map_or(0, |p| p.id);
    let last = postings.last().map_or(0, |p| p.id);
    let max_tf = postings.iter().map(|p| p.tf).max().unwrap_or(0);
    let min_length = postings.iter().map(|p| p.length).min().unwrap_or(0);
    let mut out = Vec::with_capacity(HEADER + postings.len() * 4);
    out.push(VERSION);
    out.extend_from_slice(&(postings.len() as u32).to_le_bytes());
    out.extend_from_slice(&first.to_le_bytes());
    out.extend_from_slice(&last.to_le_bytes());
    out.extend_from_slice(&max_tf.to_le_bytes());
    out.extend_from_slice(&min_length.to_le_bytes());
    let mut previous = first;
    for p in postings {
        put_varint(&mut out, p.id.wrapping_sub(previous) as u64);
        put_varint(&mut out, u64::from(p.tf));
        put_varint(&mut out, u64::from(p.length));
        previous = p.id;
    }
    out
}

/// A block's postings, in id order.
pub fn decode(bytes: &[u8]) -> Result<Vec<Posting>, Malformed> {
    let h = header(bytes)?;
    let mut body = &bytes[HEADER..];
    let count = h.count as usize;
    if count > body.len() {
        return Err(Malformed("posting block shorter than its count"));
    }
    let mut out = Vec::with_capacity(count);
    let mut id = h.first;
    for i in 0..count {
        let delta = take_varint(&mut body)?;
        let tf = take_varint(&mut body)?;
        let length = take_varint(&mut body)?;
        if i > 0 && delta == 0 {
            return Err(Malformed("posting block ids out of order"));
        }
        id = id
            .checked_add_unsigned(delta)
            .ok_or(Malformed("posting block id out of range"))?;
        out.push(Posting {
            id,
            tf: u16::try_from(tf).map_err(|_| Malformed("term frequency out of range"))?,
            length: u32::try_from(length).map_err(|_| Malformed("record length out of range"))?,
        });
    }
    if id != h.last || !body.is_empty() {
        return Err(Malformed(
            "posting block does not end where its header says",
        ));
    }
    Ok(out)
}

/// Postings sorted by id in blocks of at most [`BLOCK`].
pub fn blocks(postings: &[Posting]) -> Vec<Vec<u8>> {
    postings.chunks(BLOCK).map(encode).collect()
}

/// The blocks that replace a term's newest block `tail` (none for a new
/// term) once `new` postings are added: `tail`'s postings and `new` merged
/// by id, a posting of `new` replacing one of the same id.
pub fn append(tail: Option<&[u8]>, new: &[Posting]) -> Result<Vec<Vec<u8>>, Malformed> {
    let mut new = new.to_vec();
    new.sort_by_key(|p| p.id);
    new.dedup_by_key(|p| p.id);
    let old = match tail {
        Some(bytes) => decode(bytes)?,
        None => Vec::new(),
    };
    let mut merged = Vec::with_capacity(old.len() + new.len());
    let (mut a, mut b) = (old.into_iter().peekable(), new.into_iter().peekable());
    while a.peek().is_some() || b.peek().is_some() {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.id.cmp(&y.id) {
                Ordering::Less => a.next(),
                Ordering::Greater => b.next(),
                Ordering::Equal => {
                    a.next();
                    b.next()
                }
            },
            (Some(_), None) => a.next(),
            _ => b.next(),
        };
        merged.extend(next);
    }
    Ok(blocks(&merged))
}

/// Whether `block` holds any of `ids`.
pub fn holds_any(block: &[u8], ids: &[i64]) -> Result<bool, Malformed> {
    let h = header(block)?;
    if !ids.iter().any(|id| (h.first..=h.last).contains(id)) {
        return Ok(false);
    }
    Ok(decode(block)?.iter().any(|p| ids.contains(&p.id)))
}

/// `block` without the postings of `ids`: `None` when nothing is left.
pub fn remove(block: &[u8], ids: &[i64]) -> Result<Option<Vec<u8>>, Malformed> {
    let mut postings = decode(block)?;
    postings.retain(|p| !ids.contains(&p.id));
    Ok((!postings.is_empty()).then(|| encode(&postings)))
}

/// One query term: its IDF and the blocks of its posting list, in any order.
pub struct QueryTerm<'a> {
    pub idf: f32,
    pub blocks: Vec<&'a [u8]>,
}

/// The `k` records scoring highest by BM25 over `terms`, best first, ties
/// by smaller id; records average `average_length` tokens. A record's score
/// sums its terms' contributions in the order of `terms`, as
/// [`bm25::score`] does.
pub fn top_k(
    terms: &[QueryTerm<'_>],
    average_length: f32,
    k: usize,
) -> Result<Vec<(i64, f32)>, Malformed> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let mut cursors = terms
        .iter()
        .map(|t| Cursor::new(t, average_length))
        .collect::<Result<Vec<_>, _>>()?;
    // Terms by upper bound, smallest first: the non-essential ones are a prefix.
    let mut order: Vec<usize> = (0..cursors.len()).collect();
    order.sort_by(|&a, &b| cursors[a].bound.total_cmp(&cursors[b].bound));
    // below[i]: the sum of the bounds of order[..i].
    let mut below = vec![0f32; order.len() + 1];
    for (i, &t) in order.iter().enumerate() {
        below[i + 1] = below[i] + cursors[t].bound;
    }
    let mut best: BinaryHeap<Reverse<Ranked>> = BinaryHeap::with_capacity(k + 1);
    let mut threshold = f32::NEG_INFINITY;
    // order[essential..] are the terms a record must hold to enter the top k.
    let mut essential = 0;
    let mut contributions = vec![0f32; terms.len()];
    while let Some(id) = order[essential..]
        .iter()
        .filter_map(|&t| cursors[t].current())
        .min()
    {
        contributions.iter_mut().for_each(|c| *c = 0.0);
        let mut partial = 0.0;
        for &t in &order[essential..] {
            if cursors[t].current() == Some(id) {
                let c = cursors[t].score(average_length);
                contributions[t] = c;
                partial += c;
                cursors[t].advance()?;
            }
        }
        // The non-essential terms, largest bound first, while they can still
        // lift this record over the threshold; each bounded by the block
        // that could hold the record, read without decoding.
        let mut admitted = true;
        let mut remaining: f32 = order[..essential]
            .iter()
            .map(|&t| cursors[t].block_bound(id))
            .sum();
        for i in (0..essential).rev() {
            if !reaches(partial + remaining.min(below[i + 1]), threshold) {
                admitted = false;
                break;
            }
            let t = order[i];
            let block_bound = cursors[t].block_bound(id);
            remaining -= block_bound;
            if block_bound > 0.0 && cursors[t].seek(id)? {
                let c = cursors[t].score(average_length);
                contributions[t] = c;
                partial += c;
            }
        }
        if !admitted || !reaches(partial, threshold) {
            continue;
        }
        let candidate = Ranked {
            score: contributions.iter().sum(),
            id,
        };
        if best.len() < k {
            best.push(Reverse(candidate));
        } else if best.peek().is_some_and(|w| candidate > w.0) {
            best.pop();
            best.push(Reverse(candidate));
        }
        if best.len() == k {
            threshold = best.peek().map_or(threshold, |w| w.0.score);
            while essential < order.len() && !reaches(below[essential + 1], threshold) {
                essential += 1;
            }
        }
    }
    let mut out: Vec<Ranked> = best.into_iter().map(|r| r.0).collect();
    out.sort_by(|a, b| b.cmp(a));
    Ok(out.into_iter().map(|r| (r.id, r.score)).collect())
}

/// Whether a record bounded by `bound` could still enter a top k whose
/// worst score is `threshold`: a record scoring the threshold exactly comes
/// later in id order and loses the tie, but sums taken in another order may
/// differ in the last bits, so the comparison keeps a margin.
fn reaches(bound: f32, threshold: f32) -> bool {
    bound * (1.0 + 1e-5) + 1e-6 >= threshold
}

/// A scored record, ordered from worse to better: lower score, then larger id.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ranked {
    score: f32,
    id: i64,
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.id.cmp(&self.id))
    }
}

/// A run of a term's blocks whose id ranges overlap none outside it (most
/// often one block), with the bound of what its postings can score.
struct Segment<'a> {
    last: i64,
    first: i64,
    bound: f32,
    blocks: Vec<&'a [u8]>,
}

/// A position in one term's posting list, decoding a segment only when a
/// record in its range is wanted.
struct Cursor<'a> {
    idf: f32,
    segments: Vec<Segment<'a>>,
    /// The most any record can get from this term.
    bound: f32,
    segment: usize,
    decoded: Vec<Posting>,
    /// Index in `decoded`; `decoded` belongs to `segment` when not empty.
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(term: &QueryTerm<'a>, average_length: f32) -> Result<Self, Malformed> {
        let mut headed = term
            .blocks
            .iter()
            .map(|&b| header(b).map(|h| (h, b)))
            .collect::<Result<Vec<_>, _>>()?;
        headed.sort_by_key(|(h, _)| h.first);
        let mut segments: Vec<Segment<'a>> = Vec::new();
        for (h, bytes) in headed {
            let bound = bm25::term_score(
                term.idf,
                f32::from(h.max_tf.max(1)),
                h.min_length as f32,
                average_length,
            );
            match segments.last_mut() {
                Some(s) if h.first <= s.last => {
                    s.last = s.last.max(h.last);
                    s.bound = s.bound.max(bound);
                    s.blocks.push(bytes);
                }
                _ => segments.push(Segment {
                    first: h.first,
                    last: h.last,
                    bound,
                    blocks: vec![bytes],
                }),
            }
        }
        let bound = segments.iter().map(|s| s.bound).fold(0.0, f32::max);
        let mut cursor = Cursor {
            idf: term.idf,
            segments,
            bound,
            segment: 0,
            decoded: Vec::new(),
            at: 0,
        };
        cursor.load()?;
        Ok(cursor)
    }

    /// Decodes the current segment, if there is one and it is not decoded.
    fn load(&mut self) -> Result<(), Malformed> {
        if !self.decoded.is_empty() {
            return Ok(());
        }
        let Some(segment) = self.segments.get(self.segment) else {
            return Ok(());
        };
        let mut postings = Vec::new();
        for block in &segment.blocks {
            postings.extend(decode(block)?);
        }
        if segment.blocks.len() > 1 {
            postings.sort_by_key(|p| p.id);
            if postings.windows(2).any(|w| w[0].id == w[1].id) {
                return Err(Malformed("a record twice in one term's postings"));
            }
        }
        self.decoded = postings;
        self.at = 0;
        Ok(())
    }

    fn current(&self) -> Option<i64> {
        self.decoded.get(self.at).map(|p| p.id)
    }

    fn score(&self, average_length: f32) -> f32 {
        self.decoded.get(self.at).map_or(0.0, |p| {
            bm25::term_score(
                self.idf,
                f32::from(p.tf.max(1)),
                p.length as f32,
                average_length,
            )
        })
    }

    fn advance(&mut self) -> Result<(), Malformed> {
        self.at += 1;
        if self.at >= self.decoded.len() {
            self.next_segment(self.segment + 1)?;
        }
        Ok(())
    }

    fn next_segment(&mut self, segment: usize) -> Result<(), Malformed> {
        self.segment = segment;
        self.decoded.clear();
        self.at = 0;
        self.load()
    }

    /// Passes the segments that end before `id`, without decoding them.
    /// Records are asked for in increasing id order, so nothing is missed.
    fn skip_to(&mut self, id: i64) {
        let mut segment = self.segment;
        while self.segments.get(segment).is_some_and(|s| s.last < id) {
            segment += 1;
        }
        if segment != self.segment {
            self.segment = segment;
            self.decoded.clear();
            self.at = 0;
        }
    }

    /// The bound of the segment that could hold `id`, without decoding;
    /// 0 when no segment's range covers it.
    fn block_bound(&mut self, id: i64) -> f32 {
        self.skip_to(id);
        self.segments
            .get(self.segment)
            .filter(|s| s.first <= id)
            .map_or(0.0, |s| s.bound)
    }

    /// Moves to the first posting at or after `id`; whether it is `id`.
    fn seek(&mut self, id: i64) -> Result<bool, Malformed> {
        self.skip_to(id);
        self.load()?;
        let rest = self.decoded.get(self.at..).unwrap_or_default();
        self.at += rest.partition_point(|p| p.id < id);
        // The segment ends at or after `id`, so a posting was found unless
        // the list is exhausted.
        Ok(self.current() == Some(id))
    }
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn take_varint(bytes: &mut &[u8]) -> Result<u64, Malformed> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes
            .split_first()
            .ok_or(Malformed("posting block cut short"))?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(Malformed("posting block varint too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn posting(id: i64, tf: u16, length: u32) -> Posting {
        Posting { id, tf, length }
    }

    #[test]
    fn blocks_round_trip_and_say_their_bounds() {
        let postings = vec![
            posting(3, 1, 40),
            posting(4, 7, 12),
            posting(900, 2, 300),
            posting(1 << 40, 1, 9),
        ];
        let bytes = encode(&postings);
        assert_eq!(decode(&bytes).unwrap(), postings);
        let h = header(&bytes).unwrap();
        assert_eq!((h.count, h.first, h.last), (4, 3, 1 << 40));
        assert_eq!((h.max_tf, h.min_length), (7, 9));
    }

    #[test]
    fn malformed_blocks_are_errors_not_panics() {
        let bytes = encode(&[posting(1, 1, 5), posting(200, 3, 70_000)]);
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
        let mut version = bytes.clone();
        version[0] = 9;
        assert!(header(&version).is_err());
        let mut rng = Rng(7);
        for _ in 0..2_000 {
            let mut noisy = bytes.clone();
            let i = rng.below(noisy.len() as u64) as usize;
            noisy[i] ^= 1 << rng.below(8);
            let _ = decode(&noisy);
            let _ = top_k(
                &[QueryTerm {
                    idf: 1.0,
                    blocks: vec![&noisy],
                }],
                10.0,
                3,
            );
        }
    }

    #[test]
    fn appending_merges_by_id_and_splits_full_blocks() {
        let first: Vec<Posting> = (0..100).map(|i| posting(i * 2, 1, 10)).collect();
        let tail = encode(&first);
        // Later ids, one id below the tail's last (a transaction that took
        // its id earlier and committed later), one id already there.
        let mut new: Vec<Posting> = (0..60).map(|i| posting(1_000 + i, 2, 20)).collect();
        new.push(posting(7, 3, 30));
        new.push(posting(10, 5, 50));
        let out = append(Some(&tail), &new).unwrap();
        assert_eq!(out.len(), 2);
        let all: Vec<Posting> = out.iter().flat_map(|b| decode(b).unwrap()).collect();
        assert_eq!(all.len(), 161);
        assert_eq!(decode(&out[0]).unwrap().len(), BLOCK);
        assert!(all.windows(2).all(|w| w[0].id < w[1].id));
        assert!(all.contains(&posting(7, 3, 30)));
        assert!(
            all.contains(&posting(10, 5, 50)),
            "the new posting replaces the old"
        );
        assert_eq!(append(None, &[posting(5, 1, 1)]).unwrap().len(), 1);
    }

    #[test]
    fn removing_takes_out_only_the_ids_given() {
        let block = encode(&[posting(1, 1, 5), posting(2, 1, 5), posting(9, 1, 5)]);
        assert!(holds_any(&block, &[2, 50]).unwrap());
        assert!(!holds_any(&block, &[3, 50]).unwrap());
        let left = remove(&block, &[2, 50]).unwrap().unwrap();
        assert_eq!(
            decode(&left).unwrap(),
            vec![posting(1, 1, 5), posting(9, 1, 5)]
        );
        assert_eq!(remove(&block, &[1, 2, 9]).unwrap(), None);
    }

    /// Every record's score the slow way, best first, ties by id.
    fn exhaustive(lists: &[Vec<Posting>], idfs: &[f32], average: f32, k: usize) -> Vec<(i64, f32)> {
        let mut ids: Vec<i64> = lists.iter().flatten().map(|p| p.id).collect();
        ids.sort();
        ids.dedup();
        let mut scored: Vec<(i64, f32)> = ids
            .into_iter()
            .map(|id| {
                let score = lists
                    .iter()
                    .zip(idfs)
                    .filter_map(|(list, &idf)| {
                        list.iter().find(|p| p.id == id).map(|p| {
                            bm25::term_score(idf, f32::from(p.tf), p.length as f32, average)
                        })
                    })
                    .sum();
                (id, score)
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored
    }

    #[test]
    fn top_k_is_exact_whatever_the_blocks() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..300 {
            let records = 1 + rng.below(2_000) as i64;
            let term_count = 1 + rng.below(12) as usize;
            let lengths: Vec<u32> = (0..records).map(|_| 1 + rng.below(120) as u32).collect();
            let mut lists = Vec::new();
            let mut idfs = Vec::new();
            for _ in 0..term_count {
                // From rare to common.
                let share = 1 + rng.below(100);
                let mut list = Vec::new();
                for id in 0..records {
                    if rng.below(100) < share {
                        let tf = if rng.below(4) == 0 {
                            1 + rng.below(5)
                        } else {
                            1
                        };
                        list.push(posting(id, tf as u16, lengths[id as usize]));
                    }
                }
                idfs.push(bm25::idf(records as u64, list.len() as u64));
                lists.push(list);
            }
            // Blocks as writers leave them: mostly in order, some appended
            // out of order so that ranges overlap, some thinned by removals.
            let stored: Vec<Vec<Vec<u8>>> = lists
                .iter()
                .map(|list| {
                    let mut out: Vec<Vec<u8>> = Vec::new();
                    let mut rest: Vec<Posting> = list.clone();
                    if rest.len() > 3 && rng.below(3) == 0 {
                        let late = rest.remove(rng.below(rest.len() as u64) as usize);
                        out.extend(blocks(&rest));
                        let tail = out.pop();
                        out.extend(append(tail.as_deref(), &[late]).unwrap());
                    } else {
                        for chunk in rest.chunks(1 + rng.below(200) as usize) {
                            out.extend(blocks(chunk));
                        }
                    }
                    out
                })
                .collect();
            let average = lengths.iter().sum::<u32>() as f32 / records as f32;
            let query: Vec<QueryTerm> = stored
                .iter()
                .zip(&idfs)
                .map(|(b, &idf)| {
                    let mut blocks: Vec<&[u8]> = b.iter().map(Vec::as_slice).collect();
                    blocks.reverse();
                    QueryTerm { idf, blocks }
                })
                .collect();
            let k = [1, 3, 10, 50, 5_000][round % 5];
            let got = top_k(&query, average, k).unwrap();
            let want = exhaustive(&lists, &idfs, average, k);
            assert_eq!(got.len(), want.len(), "round {round}");
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    g.0 == w.0 || (g.1 - w.1).abs() <= 1e-5 * w.1,
                    "round {round}: {got:?} vs {want:?}"
                );
                assert!((g.1 - w.1).abs() <= 1e-5 * w.1.max(1.0), "round {round}");
            }
        }
    }

    #[test]
    fn no_terms_or_no_k_find_nothing() {
        assert!(top_k(&[], 10.0, 10).unwrap().is_empty());
        let block = encode(&[posting(1, 1, 5)]);
        let term = QueryTerm {
            idf: 1.0,
            blocks: vec![&block],
        };
        assert!(top_k(&[term], 10.0, 0).unwrap().is_empty());
    }
}
