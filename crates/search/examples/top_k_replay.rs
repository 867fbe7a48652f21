//! Times [`postings::top_k`] on real keyword queries, without Postgres:
//! the terms and posting blocks of each query as a database holds them,
//! dumped by `bench/vectordb/keyword_replay.sh` (which runs this), one
//! JSON object a line:
//! `{"records": n, "average": len, "terms": [{"term", "records", "blocks": [hex, ...]}]}`.
//!
//! Terms are summed rarest first, ties by the term, as the extension's
//! `_bm25_search_kept` orders them. Prints the best of `PASSES` passes over
//! all queries, in microseconds a query, and a checksum of the answers so
//! two builds can be checked to rank alike.
//!
//! usage: top_k_replay FILE [K]

use std::time::Instant;

use vigil_search::bm25;
use vigil_search::postings::{self, QueryTerm};

const PASSES: usize = 5;

struct Term {
    name: String,
    records: u64,
    blocks: Vec<Vec<u8>>,
}

struct Query {
    records: u64,
    average: f32,
    terms: Vec<Term>,
}

fn hex(s: &str) -> Vec<u8> {
    let s = s.strip_prefix("\\x").unwrap_or(s);
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

fn read(path: &str) -> Vec<Query> {
    let text = std::fs::read_to_string(path).expect("read the dump");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let mut terms: Vec<Term> = v["terms"]
                .as_array()
                .map(|ts| {
                    ts.iter()
                        .map(|t| Term {
                            name: t["term"].as_str().unwrap_or_default().to_owned(),
                            records: t["records"].as_u64().unwrap_or(0),
                            blocks: t["blocks"]
                                .as_array()
                                .map(|bs| bs.iter().filter_map(|b| b.as_str()).map(hex).collect())
                                .unwrap_or_default(),
                        })
                        .filter(|t| t.records > 0)
                        .collect()
                })
                .unwrap_or_default();
            terms.sort_by(|a, b| (a.records, &a.name).cmp(&(b.records, &b.name)));
            Query {
                records: v["records"].as_u64().unwrap_or(0),
                average: v["average"].as_f64().unwrap_or(1.0) as f32,
                terms,
            }
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: top_k_replay FILE [K]");
    let k: usize = args.next().map_or(30, |a| a.parse().expect("K"));
    let queries = read(&path);
    let prepared: Vec<(Vec<QueryTerm<'_>>, f32)> = queries
        .iter()
        .map(|q| {
            let terms = q
                .terms
                .iter()
                .map(|t| QueryTerm {
                    idf: bm25::idf(q.records, t.records),
                    blocks: t.blocks.iter().map(Vec::as_slice).collect(),
                })
                .collect();
            (terms, q.average)
        })
        .collect();
    let postings: usize = queries
        .iter()
        .flat_map(|q| &q.terms)
        .flat_map(|t| &t.blocks)
        .map(|b| postings::header(b).map_or(0, |h| h.count as usize))
        .sum();
    let mut best = f64::INFINITY;
    let mut checksum = 0u64;
    for _ in 0..PASSES {
        let started = Instant::now();
        let mut sum = 0u64;
        for (terms, average) in &prepared {
            let top = postings::top_k(terms, *average, k).expect("well-formed blocks");
            for (rank, (id, score)) in top.iter().enumerate() {
                sum = sum
                    .wrapping_mul(31)
                    .wrapping_add(*id as u64 ^ (rank as u64) ^ u64::from(score.to_bits()));
            }
        }
        best = best.min(started.elapsed().as_secs_f64());
        checksum = sum;
    }
    println!(
        "RESULT top_k k {k}: {:.1} us a query over {} queries ({:.0} postings a query in their terms), best of {PASSES} passes; answers checksum {checksum:016x}",
        best * 1e6 / prepared.len() as f64,
        prepared.len(),
        postings as f64 / prepared.len().max(1) as f64,
    );
}
