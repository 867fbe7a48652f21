#!/usr/bin/env bash
# Recall@10 of a vector database's own graph against an exact search of it,
# at several beams, with the 300 labelled queries of queries.tsv: one
# backend, a PL/pgSQL loop timing each search (beam-sweep.sql). Run after `make
# bench-vectordb` (its cluster, .vigil/bench-vectordb, and its database
# `bench` of 100,000 real paragraphs):
#
#   bench/vectordb/beam-recall.sh [DB] [BEAMS]     (default: bench "40 80 120 200 300 400")
#
# Prints `beam|recall@10|p50 ms|p99 ms` (ties counted: a record is a hit when
# its exact distance is at most the 10th exact distance).
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
db="${1:-bench}"
beams="${2:-40 80 120 200 300 400}"
dir="$VIGIL_STATE/bench-vectordb"
"$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "${BENCH_PG_PORT:-28818}" >/dev/null
trap '"$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT
tail -n +2 "$VIGIL_ROOT/bench/vectordb/queries.tsv" | "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At -v ON_ERROR_STOP=1 \
    -c "CREATE TEMP TABLE lines (package text, query text)" \
    -c "COPY lines FROM STDIN WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x02')" \
    -c "SET client_min_messages = warning" \
    -c "CREATE TEMP TABLE qv AS SELECT vigil.embed(query) AS v FROM lines" \
    -c "CREATE TEMP TABLE t AS
        SELECT q.v, (SELECT max(d) FROM (SELECT vigil.cosine_distance(r.embedding, q.v) AS d FROM vigil.vector_records r
                     WHERE r.db = (SELECT id FROM vigil.vector_databases WHERE name = '$db' LIMIT 1) ORDER BY 1 LIMIT 10) x) AS kth
        FROM qv q" \
    -c "SET enable_seqscan = off" -c "SET enable_sort = off" \
    -f "$VIGIL_ROOT/bench/vectordb/beam-sweep.sql" \
    -c "SELECT s.beam, round(s.recall::numeric, 4), round(s.p50::numeric, 2), round(s.p99::numeric, 2)
        FROM pg_temp.beam_sweep((SELECT id FROM vigil.vector_databases WHERE name = '$db' LIMIT 1),
                                string_to_array('$beams', ' ')::int[]) s"
