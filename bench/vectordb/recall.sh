#!/usr/bin/env bash
# `make bench-vectordb-recall`: is a database's vector search as good as an
# exact search of that database, whatever else the installation holds?
# On a cluster of its own (.vigil/bench-recall, port 28840; shared_buffers
# 2GB, maintenance_work_mem 2GB), one account's databases in the layouts of
# issue 49 (sizes times BENCH_SCALE, default 1):
#   among-1000  a database of 5,000 records among 999 of 500
#   one-of-two  a database of 50,000 records beside another of 50,000
#   alone       a database of 1,000,000 records
#   among-100   a database of 100,000 records among 100 of 2,000
# BENCH_LAYOUTS (default all four, comma-separated) picks some.
#
# Records are real MiniLM embeddings (Debian package short descriptions,
# embedded once by vigil.embed and kept in .vigil/bench-hnsw-cache/, which
# `make bench-hnsw` shares); a database larger than the 60,000 or so real
# ones is filled with mixtures of two of them (crates/hnsw/examples/
# bench_vectors.rs). Queries: BENCH_QUERIES (200) held-out descriptions.
#
# For each layout's measured database, per query, one backend:
#   exact        the database's top 10 by a sequential scan (ground truth)
#   graph        vigil.query_embeddings(..., k 10, query_vector): the
#                product's path (its own graph in the partitioned index)
#   hybrid 30    the best 30 of vigil._nearest(db, q, 100): hybrid search's
#                vector branch (100 candidates, 30 kept for k 10), against
#                the exact top 30
#   ef_search N  the same graph at each beam of BENCH_EF_SEARCH
#                (default "40 60 80 120 200 400")
# and, for the layouts with other databases, the design it replaced on the
# same rows: one graph shared by the layout's databases (a copy of them in
# a table with a one-column index), searched with the old filter at
# ef_search 40, and with the beam scaled by the database's share
# (40 / share, at most 1,000). recall@10 counts ties (a returned record is
# a hit when its exact distance is at most the 10th exact distance); p50 and
# p99 are of each search's time in the backend (clock_timestamp).
# The table is printed and written to .vigil/bench-recall/results.txt, and
# then hybrid search's MRR@10 on the two labelled sets against its
# branches and the best plain fusions (BENCH_QUALITY=0 skips it).
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

scale="${BENCH_SCALE:-1}"
queries="${BENCH_QUERIES:-200}"
layouts="${BENCH_LAYOUTS:-among-1000,one-of-two,alone,among-100}"
ef_list="${BENCH_EF_SEARCH:-40 60 80 120 200 400}"
port="${BENCH_PG_PORT:-28840}"
dir="$VIGIL_STATE/bench-recall"
cache="$VIGIL_STATE/bench-hnsw-cache"
mkdir -p "$cache"
n() { awk -v x="$1" -v s="$scale" 'BEGIN { v = int(x * s); print (v < 1 ? 1 : v) }'; }

cargo build --locked --release -p vigil-hnsw --example bench_vectors >&2
gen="$VIGIL_ROOT/target/release/examples/bench_vectors"

cluster="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port")"
trap '"$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT
psql() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
if [ "$(psql -c "SHOW shared_buffers")" != "2GB" ]; then
    step "tuning the bench cluster (shared_buffers 2GB, maintenance_work_mem 2GB; restart)"
    psql -c "ALTER SYSTEM SET shared_buffers = '2GB'" -c "ALTER SYSTEM SET maintenance_work_mem = '2GB'" \
         -c "ALTER SYSTEM SET max_wal_size = '16GB'" -c "ALTER SYSTEM SET jit = off" \
         -c "ALTER SYSTEM SET max_parallel_workers_per_gather = 0"
    "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"
    cluster="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port")"
fi
: "$cluster"

# The base: the real embeddings (the cache `make bench-hnsw` keeps), made now
# for the descriptions it lacks.
step "Debian package descriptions (apt-cache dumpavail)"
apt-cache dumpavail | sed -n 's/^Description: //p' | awk 'NF && !seen[$0]++' > "$dir/descriptions.txt"
psql <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS bench;
CREATE TABLE IF NOT EXISTS bench.embed_cache (txt text PRIMARY KEY, v real[] NOT NULL);
CREATE TABLE IF NOT EXISTS bench.texts (txt text);
TRUNCATE bench.texts;
SQL
if [ -s "$cache/embed_cache.bin" ] && [ "$(psql -c "SELECT count(*) FROM bench.embed_cache")" = 0 ]; then
    step "restoring embeddings from $cache/embed_cache.bin"
    psql -c "COPY bench.embed_cache FROM STDIN (FORMAT binary)" < "$cache/embed_cache.bin"
fi
psql -c "COPY bench.texts FROM STDIN WITH (FORMAT csv, DELIMITER E'\x01', QUOTE E'\x02')" < "$dir/descriptions.txt"
todo="$(psql -c "SELECT count(*) FROM (SELECT DISTINCT txt FROM bench.texts t WHERE txt <> '' AND NOT EXISTS (SELECT FROM bench.embed_cache c WHERE c.txt = t.txt)) x")"
if [ "$todo" -gt 0 ]; then
    step "embedding $todo descriptions with vigil.embed (once, then cached)"
    psql <<'SQL'
SET vigil.embed_threads = 2;
CREATE TEMP TABLE todo AS
SELECT row_number() OVER (ORDER BY length(txt), txt) AS i, txt
FROM (SELECT DISTINCT txt FROM bench.texts t WHERE txt <> ''
      AND NOT EXISTS (SELECT FROM bench.embed_cache c WHERE c.txt = t.txt)) x;
DO $$
DECLARE n bigint; done_ bigint := 0; chunk int := 2048;
BEGIN
    SELECT count(*) INTO n FROM todo;
    WHILE done_ < n LOOP
        INSERT INTO bench.embed_cache (txt, v)
        SELECT b.a[e.ord::int], e.v
        FROM (SELECT array_agg(txt ORDER BY i) AS a FROM todo
              WHERE i > done_ AND i <= done_ + chunk GROUP BY (i - 1) / 64) b,
             LATERAL vigil.embed(b.a) WITH ORDINALITY AS e(v, ord)
        ON CONFLICT (txt) DO NOTHING;
        done_ := least(done_ + chunk, n);
        COMMIT;
        RAISE NOTICE 'embedded % of %', done_, n;
    END LOOP;
END
$$;
SQL
    psql -c "COPY bench.embed_cache TO STDOUT (FORMAT binary)" > "$cache/embed_cache.bin.tmp"
    mv "$cache/embed_cache.bin.tmp" "$cache/embed_cache.bin"
    psql -c "SELECT count(*) FROM bench.embed_cache" > "$cache/embed_cache.count"
fi
# Queries: the first BENCH_QUERIES descriptions in md5 order; the base: the rest.
psql <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS bench.queries, bench.base;
CREATE TABLE bench.queries AS
SELECT row_number() OVER (ORDER BY md5(txt), txt) AS qid, txt, v FROM bench.embed_cache
ORDER BY md5(txt), txt LIMIT $queries;
CREATE TABLE bench.base AS
SELECT c.v FROM bench.embed_cache c WHERE NOT EXISTS (SELECT FROM bench.queries q WHERE q.txt = c.txt)
ORDER BY md5(c.txt), c.txt;
SQL
psql -c "COPY bench.base (v) TO STDOUT" > "$dir/base.txt"

# The databases: name, size, and the layout whose target it is (or other).
declare -a specs=()
add() { specs+=("$1|$2|$3"); }
for layout in ${layouts//,/ }; do
    case "$layout" in
        among-1000) add among-1000 "$(n 5000)" target
                    size="$(n 500)"
                    for i in $(seq 999); do add "among-1000-other-$i" "$size" among-1000; done ;;
        one-of-two) add one-of-two "$(n 50000)" target; add one-of-two-other "$(n 50000)" one-of-two ;;
        alone)      add alone "$(n 1000000)" target ;;
        among-100)  add among-100 "$(n 100000)" target
                    size="$(n 2000)"
                    for i in $(seq 100); do add "among-100-other-$i" "$size" among-100; done ;;
        *) die "BENCH_LAYOUTS: unknown layout '$layout'" ;;
    esac
done
# The index as the extension makes it (its build parameters included), read
# while it stands: the rows are inserted without it, then it is made again so.
index_def="$(psql -c "SELECT pg_get_indexdef(to_regclass('vigil.vector_records_embedding'))")"
if [ -n "$index_def" ]; then
    echo "$index_def" > "$dir/index.sql"
fi
[ -s "$dir/index.sql" ] || die "vigil.vector_records_embedding is missing and $dir/index.sql was never written: remove $dir"
signature="$(printf '%s\n' "${specs[@]}" | md5sum | cut -c1-16):$(md5sum < "$dir/base.txt" | cut -c1-16):$(md5sum < "$dir/index.sql" | cut -c1-16)"
if [ "$(cat "$dir/made" 2>/dev/null)" != "$signature" ]; then
    step "storing ${#specs[@]} databases"
    psql <<'SQL'
SET client_min_messages = warning;
SET vigil.account = 'bench@example.com';
INSERT INTO vigil.accounts (account) VALUES ('bench@example.com') ON CONFLICT DO NOTHING;
DELETE FROM vigil.vector_databases WHERE account = 'bench@example.com';
DROP INDEX IF EXISTS vigil.vector_records_embedding;
DO $$
DECLARE t text;
BEGIN
    FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'bench' AND tablename LIKE 'shared\_%' LOOP
        EXECUTE format('DROP TABLE bench.%I', t);
    END LOOP;
END
$$;
CREATE TABLE IF NOT EXISTS bench.stage (db bigint, embedding real[]);
TRUNCATE bench.stage;
CREATE TABLE IF NOT EXISTS bench.dbs (name text PRIMARY KEY, id bigint, size bigint, layout text);
TRUNCATE bench.dbs;
SQL
    printf '%s\n' "${specs[@]}" | psql -c "CREATE TEMP TABLE s (name text, size bigint, layout text)" \
        -c "COPY s FROM STDIN WITH (FORMAT csv, DELIMITER '|')" \
        -c "SET vigil.account = 'bench@example.com'" \
        -c "SELECT count(*) FROM s, vigil.create_database(s.name)" \
        -c "INSERT INTO bench.dbs SELECT s.name, d.id, s.size, s.layout FROM s JOIN vigil.vector_databases d ON d.account = 'bench@example.com' AND d.name = s.name" >/dev/null
    args="$(psql -c "SELECT string_agg(id || ':' || size, ' ' ORDER BY id) FROM bench.dbs")"
    # shellcheck disable=SC2086
    "$gen" "$dir/base.txt" $args | psql -c "COPY bench.stage FROM STDIN (FORMAT binary)"
    step "inserting $(psql -c "SELECT count(*) FROM bench.stage") records, then building the index"
    # The keyword index is not measured here: its trigger is off while the
    # rows go in, and the databases' counts (which choose the exact path for
    # small ones) are set after.
    psql <<'SQL'
SET vigil.account = 'bench@example.com';
ALTER TABLE vigil.vector_records DISABLE TRIGGER count_terms_insert;
INSERT INTO vigil.vector_records (db, account, title, content, embedding)
SELECT s.db, 'bench@example.com', 'record', '', s.embedding FROM bench.stage s;
ALTER TABLE vigil.vector_records ENABLE TRIGGER count_terms_insert;
UPDATE vigil.vector_databases d SET records = c.n
FROM (SELECT db, count(*) AS n FROM vigil.vector_records GROUP BY db) c WHERE c.db = d.id;
SQL
    start=$(date +%s.%N)
    psql -f "$dir/index.sql"
    echo "partitioned index build: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s" > "$dir/build.txt"
    psql -c "VACUUM ANALYZE vigil.vector_records" -c "TRUNCATE bench.stage"
    echo "$signature" > "$dir/made"
fi

step "measuring"
psql <<SQL | tee "$dir/results.txt"
SET client_min_messages = warning;
SET vigil.account = 'bench@example.com';
CREATE TEMP TABLE results (layout text, design text, records bigint, share real, recall real, p50 real, p99 real);
-- The exact top k of database db for vector q: ids and the k-th distance.
CREATE FUNCTION pg_temp.exact(db_id bigint, q real[], k int, OUT ids bigint[], OUT kth float8) LANGUAGE sql AS \$\$
    SELECT array_agg(id ORDER BY d, id), max(d) FROM (
        SELECT r.id, vigil.cosine_distance(r.embedding, q) AS d FROM vigil.vector_records r
        WHERE r.db = db_id ORDER BY 2, 1 LIMIT k) t
\$\$;
-- Of ids, how many are at most kth from q (ties count).
CREATE FUNCTION pg_temp.hits(db_id bigint, q real[], ids bigint[], kth float8) RETURNS int LANGUAGE sql AS \$\$
    SELECT count(*)::int FROM vigil.vector_records r
    WHERE r.db = db_id AND r.id = ANY (ids) AND vigil.cosine_distance(r.embedding, q) <= kth + 1e-6
\$\$;
-- Times each query of \`search\` (a statement returning ids, \$1 the database id,
-- \$2 the query vector, \$3 k) and scores it against the exact top k.
CREATE FUNCTION pg_temp.measure(lay text, design text, db_id bigint, search text, k int, truth_table text)
RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
    q record; t0 timestamptz; ids bigint[]; times float8[] := '{}'; hit int := 0; total int := 0;
    truth record; size bigint; everything real;
BEGIN
    -- One search first, untimed: the first plans the statements it runs.
    EXECUTE 'SELECT array_agg(x) FROM (' || search || ') s(x)' INTO ids
        USING db_id, (SELECT v FROM bench.queries ORDER BY qid DESC LIMIT 1), k;
    FOR q IN SELECT qid, v FROM bench.queries ORDER BY qid LOOP
        t0 := clock_timestamp();
        EXECUTE 'SELECT array_agg(x) FROM (' || search || ') s(x)' INTO ids USING db_id, q.v, k;
        times := times || extract(epoch FROM clock_timestamp() - t0) * 1000;
        EXECUTE format('SELECT ids, kth FROM %I WHERE qid = \$1 AND k = \$2', truth_table) INTO truth USING q.qid, k;
        hit := hit + pg_temp.hits(db_id, q.v, ids, truth.kth);
        total := total + k;
    END LOOP;
    SELECT d.records INTO size FROM vigil.vector_databases d WHERE d.id = db_id;
    SELECT greatest(c.reltuples, 1) INTO everything FROM pg_class c WHERE c.oid = 'vigil.vector_records'::regclass;
    INSERT INTO results SELECT lay, design, size, size / everything,
        hit::real / total,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY t), percentile_cont(0.99) WITHIN GROUP (ORDER BY t)
    FROM unnest(times) t;
END
\$\$;
DO \$\$
DECLARE
    l record; k int; ef int; shared text; everything bigint;
BEGIN
    FOR l IN SELECT d.name AS layout, d.id, d.size FROM bench.dbs d WHERE d.layout = 'target' ORDER BY d.size LOOP
        -- Ground truth, k 10 and 30.
        DROP TABLE IF EXISTS truth;
        CREATE TEMP TABLE truth (qid bigint, k int, ids bigint[], kth float8);
        FOREACH k IN ARRAY ARRAY[10, 30] LOOP
            INSERT INTO truth SELECT q.qid, k, e.ids, e.kth FROM bench.queries q, pg_temp.exact(l.id, q.v, k) e;
        END LOOP;
        PERFORM pg_temp.measure(l.layout, 'exact scan', l.id,
            'SELECT id FROM vigil.vector_records r WHERE r.db = \$1 ORDER BY vigil.cosine_distance(r.embedding, \$2), id LIMIT \$3', 10, 'truth');
        PERFORM pg_temp.measure(l.layout, 'query_embeddings (its own graph)', l.id,
            'SELECT id FROM vigil.query_embeddings(''q'', (SELECT name FROM vigil.vector_databases WHERE id = \$1), \$3, \$2)', 10, 'truth');
        PERFORM pg_temp.measure(l.layout, 'hybrid''s vector branch, top 30 of 100', l.id,
            'SELECT n.id FROM vigil._nearest(\$1, \$2, greatest(\$3, 100)) n ORDER BY n.similarity DESC, n.id LIMIT \$3', 30, 'truth');
        -- Its own graph at other beams (the default is vigil._search_ef).
        SET enable_seqscan = off; SET enable_sort = off;
        FOREACH ef IN ARRAY string_to_array('$ef_list', ' ')::int[] LOOP
            PERFORM set_config('vigil.hnsw_ef_search', ef::text, false);
            PERFORM pg_temp.measure(l.layout, format('its own graph, ef_search %s', ef), l.id,
                'SELECT id FROM vigil.vector_records r WHERE r.db = \$1 ORDER BY r.embedding <=> \$2 LIMIT \$3', 10, 'truth');
        END LOOP;
        RESET enable_seqscan; RESET enable_sort; RESET vigil.hnsw_ef_search;
        -- The design it replaced: one graph for the layout's databases.
        IF EXISTS (SELECT FROM bench.dbs o WHERE o.layout = l.layout) THEN
            shared := 'shared_' || replace(l.layout, '-', '_');
            IF to_regclass('bench.' || shared) IS NULL THEN
                EXECUTE format('CREATE TABLE bench.%I AS SELECT r.id, r.db, r.embedding FROM vigil.vector_records r
                                WHERE r.db IN (SELECT id FROM bench.dbs WHERE name = %L OR layout = %L)', shared, l.layout, l.layout);
                EXECUTE format('CREATE INDEX ON bench.%I USING vigil_hnsw (embedding vigil.cosine_ops)', shared);
                EXECUTE format('ANALYZE bench.%I', shared);
            END IF;
            EXECUTE format('SELECT count(*) FROM bench.%I', shared) INTO everything;
            SET enable_seqscan = off; SET enable_sort = off;
            SET vigil.hnsw_ef_search = 40;
            -- 0.9.0 scanned a database exactly when it held at most 2,000
            -- records or k / share passed vigil.hnsw_max_scan_tuples / 4.
            IF l.size > 2000 AND 10.0 * everything / l.size <= 5000 THEN
                PERFORM pg_temp.measure(l.layout, 'shared graph, ef_search 40 (0.9.0)', l.id,
                    format('SELECT id FROM bench.%I r WHERE (r.db + 0) = \$1 ORDER BY r.embedding <=> \$2 LIMIT \$3', shared), 10, 'truth');
            END IF;
            ef := least(1000, ceil(40 * everything / l.size::float8));
            RAISE NOTICE '% of % records: ef %', l.size, everything, ef;
            PERFORM set_config('vigil.hnsw_ef_search', ef::text, false);
            PERFORM pg_temp.measure(l.layout, format('shared graph, ef_search %s (40 / share)', ef), l.id,
                format('SELECT id FROM bench.%I r WHERE (r.db + 0) = \$1 ORDER BY r.embedding <=> \$2 LIMIT \$3', shared), 10, 'truth');
            RESET enable_seqscan; RESET enable_sort; RESET vigil.hnsw_ef_search;
        END IF;
    END LOOP;
END
\$\$;
\pset format aligned
\pset tuples_only off
SELECT layout, design, records, round(share::numeric, 4) AS share, round(recall::numeric, 4) AS "recall@10",
       round(p50::numeric, 2) AS "p50 ms", round(p99::numeric, 2) AS "p99 ms"
FROM results;
SQL
cat "$dir/build.txt" 2>/dev/null | tee -a "$dir/results.txt"

# Hybrid search's quality on the labelled sets, against both branches and
# the best plain fusions of the exact branches tuned on each set: the
# e2e test that checks it in `make test` prints the tables (a cluster and a
# sidecar of its own). BENCH_QUALITY=0 skips it.
if [ "${BENCH_QUALITY:-1}" != 0 ]; then
    step "hybrid search MRR@10 on the labelled sets (tests/tests/e2e/search_quality.rs)"
    cargo test --locked --release -p vigil-e2e --test e2e search_quality:: -- --nocapture 2>&1 |
        grep -E '^(eval|known)|^\|' | tee -a "$dir/results.txt"
fi
