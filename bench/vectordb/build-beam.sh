#!/usr/bin/env bash
# What the graph's build beam (ef_construction) buys: for each SPECS entry
# (m:ef_construction, default "16:64 16:128 16:200") the graph of one
# database of the rows `make bench-vectordb-recall` stored (its cluster,
# .vigil/bench-recall), the database of layout LAYOUT (default among-100:
# 100,000 records beside 100 of 2,000), is built again in place of the
# vector database's index, inside a transaction rolled back at the end: a
# graph of that database's records alone (a partial index), which is what
# the partitioned index holds for it (a key's graph links only its own
# records). Measured:
#   - the build's time (maintenance_work_mem 2GB),
#   - recall@10 against an exact search of the database, with p50 and p99 of
#     each search in the backend, at each beam of BEAMS (default
#     "60 80 100 120 200 300"), the bench's held-out queries,
#   - the time of an insert: 2,000 of the database's own vectors inserted
#     again, one statement each (the graph's work; the keyword index is
#     not involved: no title or content).
#
#   bench/vectordb/build-beam.sh                 after make bench-vectordb-recall
#   SPECS="16:128" BEAMS="80 100" bench/vectordb/build-beam.sh
#
# Prints `m|ef_construction|beam|recall@10|p50 ms|p99 ms`, then the build and
# insert times of each.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
layout="${LAYOUT:-among-100}"
beams="${BEAMS:-60 80 100 120 200 300}"
dir="$VIGIL_STATE/bench-recall"
[ -s "$dir/made" ] || die "run make bench-vectordb-recall first (it stores the layouts in $dir)"
"$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "${BENCH_PG_PORT:-28840}" >/dev/null
trap '"$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT
psql() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
target="$(psql -c "SELECT id FROM bench.dbs WHERE name = '$layout'")"
[ -n "$target" ] || die "no database of layout $layout in $dir (BENCH_LAYOUTS left it out?)"
for spec in ${SPECS:-16:64 16:128 16:200}; do
    m="${spec%%:*}"
    efc="${spec##*:}"
    psql -c "SET client_min_messages = warning" \
        -c "SET vigil.account = 'bench@example.com'" \
        -c "CREATE TEMP TABLE t AS SELECT q.v, (SELECT max(d) FROM (SELECT vigil.cosine_distance(r.embedding, q.v) AS d
                FROM vigil.vector_records r WHERE r.db = $target ORDER BY 1 LIMIT 10) x) AS kth FROM bench.queries q" \
        -c "CREATE TEMP TABLE again AS SELECT db, account, embedding FROM vigil.vector_records
            WHERE db = $target ORDER BY md5(id::text) LIMIT 2000" \
        -c "BEGIN" -c "SET LOCAL maintenance_work_mem = '2GB'" \
        -c "DROP INDEX vigil.vector_records_embedding" \
        -c "CREATE TEMP TABLE timing (what text, ms float8)" \
        -c "DO \$\$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    CREATE INDEX vector_records_embedding ON vigil.vector_records
        USING vigil_hnsw (embedding vigil.cosine_ops) WITH (m = $m, ef_construction = $efc)
        WHERE db = $target;
    INSERT INTO timing VALUES ('build s', extract(epoch FROM clock_timestamp() - t0));
END \$\$" \
        -c "SET LOCAL enable_seqscan = off" -c "SET LOCAL enable_sort = off" \
        -f "$VIGIL_ROOT/bench/vectordb/beam-sweep.sql" \
        -c "CREATE TEMP TABLE res AS SELECT * FROM pg_temp.beam_sweep($target, string_to_array('$beams', ' ')::int[])" \
        -c "ALTER TABLE vigil.vector_records DISABLE TRIGGER USER" \
        -c "DO \$\$
DECLARE r record; t0 timestamptz := clock_timestamp();
BEGIN
    FOR r IN SELECT * FROM again LOOP
        INSERT INTO vigil.vector_records (db, account, title, content, embedding)
        VALUES (r.db, r.account, '', '', r.embedding);
    END LOOP;
    INSERT INTO timing VALUES ('insert ms', extract(epoch FROM clock_timestamp() - t0) * 1000 / 2000);
END \$\$" \
        -c "SELECT '$m|$efc|' || beam || '|' || round(recall::numeric, 4) || '|' || round(p50::numeric, 2)
                   || '|' || round(p99::numeric, 2) FROM res ORDER BY beam" \
        -c "SELECT 'm $m, ef_construction $efc: ' || string_agg(what || ' ' || round(ms::numeric, 2), ', ') FROM timing" \
        -c "ROLLBACK"
done
