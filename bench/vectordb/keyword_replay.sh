#!/usr/bin/env bash
# The keyword branch's top k without PostgreSQL: dumps, for the 300
# labelled queries and the same with a common word added (as bench.py's new
# hybrid queries), each query's terms with their record counts and posting
# blocks as the bench database holds them, then times
# vigil_search::postings::top_k over them (crates/search/examples/
# top_k_replay.rs: microseconds a query, best of 5 passes, and a checksum
# of the answers, equal for two builds that rank alike). Run on the
# bench-vectordb cluster after `make bench-vectordb` has stored its records:
#
#   bench/vectordb/keyword_replay.sh
#
# BENCH_K (30, what hybrid search fetches for k 10) is the top k.
set -euo pipefail
. "$(dirname "$0")/cluster.sh"
dump="$VIGIL_STATE/bench-vectordb/keyword-replay.jsonl"
psql > "$dump" <<SQL
WITH q AS (
    SELECT q FROM (SELECT split_part(line, E'\t', 2) AS q
                   FROM unnest(string_to_array(\$tsv\$$(tail -n +2 "$VIGIL_ROOT/bench/vectordb/queries.tsv")\$tsv\$, E'\n')) AS line) x
    WHERE q <> ''
), asked AS (
    SELECT row_number() OVER () AS i, q FROM (
        SELECT q FROM q
        UNION ALL
        SELECT q || ' ' || (ARRAY['fast','easy','small','good','best','latest','useful','common','basic','simple','modern','portable'])[1 + (row_number() OVER () % 12)::int] FROM q
    ) y
), d AS (
    SELECT id, records, total_length::real / greatest(records, 1) AS average
    FROM vigil.vector_databases WHERE account = '$account' AND name = 'bench'
)
SELECT json_build_object('records', d.records, 'average', d.average, 'terms',
       (SELECT coalesce(json_agg(json_build_object('term', t.term, 'records', t.records, 'blocks',
               (SELECT coalesce(json_agg(p.postings), '[]') FROM vigil.vector_postings p WHERE p.db = d.id AND p.term = t.term))), '[]')
        FROM vigil.vector_terms t
        WHERE t.db = d.id AND t.term = ANY (SELECT DISTINCT unnest(tsvector_to_array(vigil.search_terms(a.q))))))
FROM asked a, d ORDER BY a.i;
SQL
cargo run --quiet --release -p vigil-search --example top_k_replay -- "$dump" "${BENCH_K:-30}"
