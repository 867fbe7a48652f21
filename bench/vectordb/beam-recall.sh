#!/usr/bin/env bash
# Recall@10 of a vector database's own graph against an exact search of it,
# at several beams, with the 300 labelled queries of queries.tsv: one
# backend, a PL/pgSQL loop timing each search. Run after `make
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
    -c "CREATE TEMP TABLE res (beam int, recall float8, p50 float8, p99 float8)" \
    -c "DO \$\$
DECLARE beam int; q record; t0 timestamptz; got bigint[]; hits int; total int; times float8[];
    target bigint := (SELECT id FROM vigil.vector_databases WHERE name = '$db' LIMIT 1);
BEGIN
  FOREACH beam IN ARRAY string_to_array('$beams', ' ')::int[] LOOP
    PERFORM set_config('vigil.hnsw_ef_search', beam::text, false);
    hits := 0; total := 0; times := '{}';
    FOR q IN SELECT * FROM t LOOP
      t0 := clock_timestamp();
      SELECT array_agg(id) INTO got FROM (SELECT id FROM vigil.vector_records r WHERE r.db = target
                                          ORDER BY r.embedding OPERATOR(vigil.<=>) q.v LIMIT 10) s;
      times := times || extract(epoch FROM clock_timestamp() - t0) * 1000;
      hits := hits + (SELECT count(*) FROM vigil.vector_records r WHERE r.db = target AND r.id = ANY (got)
                      AND vigil.cosine_distance(r.embedding, q.v) <= q.kth + 1e-6);
      total := total + 10;
    END LOOP;
    INSERT INTO res SELECT beam, hits::float8 / total, percentile_cont(0.5) WITHIN GROUP (ORDER BY x),
                           percentile_cont(0.99) WITHIN GROUP (ORDER BY x) FROM unnest(times) x;
  END LOOP;
END \$\$" \
    -c "SELECT beam, round(recall::numeric, 4), round(p50::numeric, 2), round(p99::numeric, 2) FROM res ORDER BY beam"
