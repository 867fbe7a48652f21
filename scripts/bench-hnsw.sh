#!/usr/bin/env bash
# `make bench-hnsw`: the vigil_hnsw index against an exact scan, on a cluster of its
# own (.vigil/bench-hnsw, port 28818; shared_buffers 2GB, maintenance_work_mem 2GB,
# jit off, one backend per query: no parallel workers).
#
# Datasets (BENCH_DATASETS, default real,random):
#   real    Debian package short descriptions (apt-cache dumpavail, deduplicated),
#           embedded in the database with vigil.embed (all-MiniLM-L6-v2, 384 dims):
#           BENCH_QUERIES (default 1000) held out as queries, up to BENCH_ROWS
#           (default 100000) as rows; fewer when there are fewer descriptions.
#           Embeddings are kept in the cluster (table bench.embed_cache) and in
#           .vigil/bench-hnsw-cache/, so only new texts are embedded on a rerun.
#   random  as many rows and queries, 384 dims, each coordinate uniform in [-1, 1):
#           no structure for a graph to use, so recall is low for any HNSW
#           (faiss's IndexHNSWFlat, same m and ef's, scores lower still).
#
# For each, in one run and one backend, with `SELECT id FROM items ORDER BY v <=> q
# LIMIT 10` timed in a PL/pgSQL loop (queries/s: the best of BENCH_PASSES, default
# 3, passes, against the noise of a shared machine):
#   - the exact scan (enable_indexscan off) over BENCH_EXACT_QUERIES (default 50)
#     queries, and the exact top 10 of every query (ground truth; kept while the
#     data is unchanged);
#   - CREATE INDEX ... USING vigil_hnsw (v) WITH (m = BENCH_M (16),
#     ef_construction = BENCH_EF_CONSTRUCTION (64)): build time (the fastest of
#     BENCH_BUILDS, default 2), size against the raw vectors (rows * 384 * 4 bytes);
#   - for vigil.hnsw_ef_search in BENCH_EF_SEARCH (default "10 20 40 80 160"):
#     recall@10 against the ground truth, ties counted (a returned row is a hit when
#     its exact distance is at most the 10th exact distance), queries per second
#     over all queries (enable_seqscan off) and the speed-up over the exact scan.
# The same for pgvector's hnsw (built from PGVECTOR_SRC, default
# ../shared/baselines/pgvector-0.8.6.tar.gz, into this PostgreSQL; a baseline to
# measure against, never a dependency) on the same rows as vector(384), same m,
# ef_construction and queries, with hnsw.ef_search over the same list; then the
# ratio of vigil_hnsw's queries/s to pgvector's at equal recall (interpolated on
# pgvector's curve), one client and then BENCH_CLIENTS (16) clients at once
# (pgbench, prepared, ef_search 40; BENCH_CLIENT_ROUNDS (5) rounds of
# BENCH_CLIENT_SECONDS (8) s each, the median ratios side by side, so a loss
# under concurrency shows), and BENCH_INSERTS (2000)
# rows inserted one statement
# at a time into each built index by one session and by two at once. Without the
# source the comparison is skipped, saying so. With pgvector, every step runs
# for vigil_hnsw and then at once for pgvector (builds alternating, each point
# of the curve in turn), so a slow spell of a shared machine falls on both.
# The summary is printed and written to .vigil/bench-hnsw/results.txt. The cluster
# is stopped when the script ends; its data (and the caches) stay.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

rows="${BENCH_ROWS:-100000}"
queries="${BENCH_QUERIES:-1000}"
datasets="${BENCH_DATASETS:-real,random}"
exact_n="${BENCH_EXACT_QUERIES:-50}"
passes="${BENCH_PASSES:-3}"
builds="${BENCH_BUILDS:-2}"
ef_list="${BENCH_EF_SEARCH:-10 20 40 80 160}"
m="${BENCH_M:-16}"
ef_construction="${BENCH_EF_CONSTRUCTION:-64}"
threads="${BENCH_THREADS:-2}"
shared_buffers="${BENCH_SHARED_BUFFERS:-2GB}"
port="${BENCH_PG_PORT:-28818}"
clients="${BENCH_CLIENTS:-16}"
client_rounds="${BENCH_CLIENT_ROUNDS:-5}"
client_seconds="${BENCH_CLIENT_SECONDS:-8}"
inserts="${BENCH_INSERTS:-2000}"
pgvector_src="${PGVECTOR_SRC:-$VIGIL_ROOT/../shared/baselines/pgvector-0.8.6.tar.gz}"
dir="$VIGIL_STATE/bench-hnsw"
cache="$VIGIL_STATE/bench-hnsw-cache"
dims=384
mkdir -p "$cache"

for ds in ${datasets//,/ }; do
    case "$ds" in real|random) ;; *) die "BENCH_DATASETS: unknown dataset '$ds' (real, random)" ;; esac
done
[ "$exact_n" -le "$queries" ] || exact_n="$queries"

step "Debian package descriptions (apt-cache dumpavail)"
apt-cache dumpavail | sed -n 's/^Description: //p' | awk 'NF && !seen[$0]++' > "$cache/descriptions.txt"
unique="$(wc -l < "$cache/descriptions.txt")"
[ "$unique" -gt "$queries" ] || die "only $unique descriptions for $queries queries (run apt-get update?)"
if [ "$((unique - queries))" -lt "$rows" ]; then rows="$((unique - queries))"; fi
echo "$unique unique descriptions: $queries queries, $rows rows" >&2

psql() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At "$@"; }

# pgvector from its source tarball, built against this PostgreSQL and installed
# next to vigil (their names do not clash: hnsw/vector against vigil_hnsw/real[]).
pgvector=0
if [ -f "$pgvector_src" ]; then
    build_dir="$VIGIL_STATE/pgvector-build"
    stamp="$(sha256sum "$pgvector_src" | cut -c1-16)"
    if [ "$(cat "$build_dir/.stamp" 2>/dev/null)" != "$stamp" ] || \
       [ ! -f "$("$PG_CONFIG" --pkglibdir)/vector.so" ]; then
        step "building pgvector from $pgvector_src (the baseline)"
        rm -rf "$build_dir" && mkdir -p "$build_dir"
        tar -xzf "$pgvector_src" -C "$build_dir" --strip-components=1
        make -s -C "$build_dir" PG_CONFIG="$PG_CONFIG" -j"$(nproc)" >/dev/null
        "${SUDO[@]}" make -s -C "$build_dir" PG_CONFIG="$PG_CONFIG" install >/dev/null
        echo "$stamp" > "$build_dir/.stamp"
    fi
    pgvector=1
else
    echo "pgvector source not found at $pgvector_src (set PGVECTOR_SRC): measuring vigil_hnsw against the exact scan only" >&2
fi

# Writes bench.embed_cache to the cache file when it holds more than the file.
save_cache() {
    local n
    n="$(psql -c "SELECT count(*) FROM bench.embed_cache")"
    if [ "$n" -gt "$(cat "$cache/embed_cache.count" 2>/dev/null || echo 0)" ]; then
        step "saving $n embeddings to $cache/embed_cache.bin"
        psql -c "COPY bench.embed_cache TO STDOUT (FORMAT binary)" > "$cache/embed_cache.bin.tmp"
        mv "$cache/embed_cache.bin.tmp" "$cache/embed_cache.bin"
        echo "$n" > "$cache/embed_cache.count"
    fi
}

# A cluster made by an older build of the extension is remade (pg-cluster.sh has
# started it before refusing it, so the embeddings are saved first and restored below).
cluster_up() {
    "$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port" >/dev/null || {
        save_cache 2>/dev/null || true
        "$VIGIL_ROOT/scripts/pg-cluster.sh" remove "$dir"
        "$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port" >/dev/null
    }
}
cluster_up
trap '"$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT

if [ "$(psql -c "SHOW shared_buffers")" != "$shared_buffers" ]; then
    step "tuning the bench cluster (shared_buffers $shared_buffers; restart)"
    psql <<SQL
ALTER SYSTEM SET shared_buffers = '$shared_buffers';
ALTER SYSTEM SET maintenance_work_mem = '2GB';
ALTER SYSTEM SET max_wal_size = '8GB';
ALTER SYSTEM SET checkpoint_timeout = '30min';
ALTER SYSTEM SET jit = off;
ALTER SYSTEM SET max_parallel_workers_per_gather = 0;
SQL
    "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"
    cluster_up
fi
psql <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_prewarm;
-- pgvector, when built (see above); in public, where the bench's queries find it.
SELECT 'CREATE EXTENSION IF NOT EXISTS vector SCHEMA public'
WHERE EXISTS (SELECT FROM pg_available_extensions WHERE name = 'vector') \gexec
CREATE SCHEMA IF NOT EXISTS bench;
CREATE TABLE IF NOT EXISTS bench.embed_cache (txt text PRIMARY KEY, v real[] NOT NULL);
-- What each dataset's tables were made from: unchanged, they and their ground truth are kept.
CREATE TABLE IF NOT EXISTS bench.made (dataset text PRIMARY KEY, signature text NOT NULL);
SQL

# Tables bench.<ds>_items (id, v) and bench.<ds>_queries (id, v), ids from 1.
prepare_real() {
    # The cache file holds every embedding made so far (a remade cluster starts empty).
    if [ -s "$cache/embed_cache.bin" ] && \
       [ "$(psql -c "SELECT count(*) FROM bench.embed_cache")" -lt "$(cat "$cache/embed_cache.count" 2>/dev/null || echo 1)" ]; then
        step "restoring embeddings from $cache/embed_cache.bin"
        psql -c "CREATE TABLE IF NOT EXISTS bench.restore (LIKE bench.embed_cache)" -c "TRUNCATE bench.restore"
        psql -c "COPY bench.restore FROM STDIN (FORMAT binary)" < "$cache/embed_cache.bin"
        psql -c "INSERT INTO bench.embed_cache SELECT * FROM bench.restore ON CONFLICT (txt) DO NOTHING" \
             -c "DROP TABLE bench.restore"
    fi
    psql -c "SET client_min_messages = warning" -c "CREATE TABLE IF NOT EXISTS bench.texts (txt text)" \
         -c "TRUNCATE bench.texts"
    psql -c "COPY bench.texts FROM STDIN WITH (FORMAT csv, DELIMITER E'\x01', QUOTE E'\x02')" < "$cache/descriptions.txt"
    # Held-out queries and rows: the descriptions in md5 order (a fixed shuffle).
    psql > "$dir/real-prepare.txt" <<SQL
SET client_min_messages = warning;
CREATE TEMP TABLE wanted AS
SELECT row_number() OVER (ORDER BY md5(txt), txt) AS i, txt
FROM (SELECT DISTINCT txt FROM bench.texts WHERE txt <> '') t
ORDER BY md5(txt), txt LIMIT $((queries + rows));
SELECT 'todo=' || count(*) FROM wanted w WHERE NOT EXISTS (SELECT FROM bench.embed_cache c WHERE c.txt = w.txt);
SELECT 'signature=' || md5(string_agg(txt, E'\n' ORDER BY i)) || ':$queries:$rows' FROM wanted;
-- The texts to embed, shortest first, so each batch of 64 pads little.
CREATE TABLE IF NOT EXISTS bench.todo (i bigint, txt text);
TRUNCATE bench.todo;
INSERT INTO bench.todo
SELECT row_number() OVER (ORDER BY length(txt), txt), txt
FROM wanted w WHERE NOT EXISTS (SELECT FROM bench.embed_cache c WHERE c.txt = w.txt);
CREATE TABLE IF NOT EXISTS bench.real_wanted (i bigint, txt text);
TRUNCATE bench.real_wanted;
INSERT INTO bench.real_wanted SELECT i, txt FROM wanted;
SQL
    local todo signature
    todo="$(sed -n 's/^todo=//p' "$dir/real-prepare.txt")"
    signature="$(sed -n 's/^signature=//p' "$dir/real-prepare.txt")"
    if [ "$todo" -gt 0 ]; then
        step "embedding $todo descriptions with vigil.embed ($threads threads, batches of 64; once, then cached)"
        psql <<SQL
SET vigil.embed_threads = $threads;
DO \$\$
DECLARE n bigint; done_ bigint := 0; chunk int := 2048; t0 timestamptz := clock_timestamp(); secs float8;
BEGIN
    SELECT count(*) INTO n FROM bench.todo;
    WHILE done_ < n LOOP
        INSERT INTO bench.embed_cache (txt, v)
        SELECT b.a[e.ord::int], e.v
        FROM (SELECT array_agg(txt ORDER BY i) AS a FROM bench.todo
              WHERE i > done_ AND i <= done_ + chunk GROUP BY (i - 1) / 64) b,
             LATERAL vigil.embed(b.a) WITH ORDINALITY AS e(v, ord)
        ON CONFLICT (txt) DO NOTHING;
        done_ := least(done_ + chunk, n);
        COMMIT;
        secs := extract(epoch FROM clock_timestamp() - t0);
        RAISE NOTICE 'embedded % of % (% texts/s)', done_, n, round((done_ / secs)::numeric, 1);
    END LOOP;
END
\$\$;
TRUNCATE bench.todo;
SQL
        save_cache
    fi
    if [ "$(psql -c "SELECT signature FROM bench.made WHERE dataset = 'real'")" != "$signature" ]; then
        step "real: tables of $rows rows and $queries queries"
        psql <<SQL
SET client_min_messages = warning;
DELETE FROM bench.made WHERE dataset = 'real';
DROP TABLE IF EXISTS bench.real_items, bench.real_queries, bench.real_truth;
CREATE TABLE bench.real_queries AS
SELECT w.i::int AS id, c.v FROM bench.real_wanted w JOIN bench.embed_cache c USING (txt)
WHERE w.i <= $queries;
CREATE TABLE bench.real_items AS
SELECT (w.i - $queries)::int AS id, c.v FROM bench.real_wanted w JOIN bench.embed_cache c USING (txt)
WHERE w.i > $queries ORDER BY w.i;
VACUUM ANALYZE bench.real_queries, bench.real_items;
INSERT INTO bench.made VALUES ('real', '$signature');
SQL
    fi
}

prepare_random() {
    local signature="uniform[-1,1):seed 0.5:$dims:$queries:$rows"
    if [ "$(psql -c "SELECT signature FROM bench.made WHERE dataset = 'random'")" != "$signature" ]; then
        step "random: $rows rows and $queries queries of $dims uniform random coordinates"
        psql <<SQL
SET client_min_messages = warning;
DELETE FROM bench.made WHERE dataset = 'random';
DROP TABLE IF EXISTS bench.random_items, bench.random_queries, bench.random_truth;
SELECT setseed(0.5) \g /dev/null
-- The subquery refers to i so that it runs once per row.
CREATE TABLE bench.random_queries AS
SELECT i AS id, (SELECT array_agg((random() * 2 - 1)::real) FROM generate_series(1, $dims) WHERE i > 0) AS v
FROM generate_series(1, $queries) i;
CREATE TABLE bench.random_items AS
SELECT i AS id, (SELECT array_agg((random() * 2 - 1)::real) FROM generate_series(1, $dims) WHERE i > 0) AS v
FROM generate_series(1, $rows) i;
VACUUM ANALYZE bench.random_queries, bench.random_items;
INSERT INTO bench.made VALUES ('random', '$signature');
SQL
    fi
}

# Exact top 10 of every query (rank 1..10), made once per dataset's tables.
ground_truth() {
    local ds="$1"
    if [ "$(psql -c "SELECT to_regclass('bench.${ds}_truth') IS NOT NULL")" = t ]; then return; fi
    step "$ds: exact top 10 of $queries queries (ground truth; once, then cached)"
    psql <<SQL
SET client_min_messages = warning;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
DROP TABLE IF EXISTS bench.${ds}_truth_tmp;
CREATE TABLE bench.${ds}_truth_tmp AS
SELECT q.id AS qid, s.id, s.d
FROM bench.${ds}_queries q,
     LATERAL (SELECT i.id, i.v <=> q.v AS d FROM bench.${ds}_items i ORDER BY 2 LIMIT 10) s;
CREATE TABLE bench.${ds}_truth AS
SELECT qid, row_number() OVER (PARTITION BY qid ORDER BY d, id)::int AS rank, id, d
FROM bench.${ds}_truth_tmp;
DROP TABLE bench.${ds}_truth_tmp;
ALTER TABLE bench.${ds}_truth ADD PRIMARY KEY (qid, rank);
SQL
}

# SQL for pg_temp.qps(n): queries/s of the top-10 query over the first n
# queries of dataset $ds (all when NULL), the best of $passes passes after a
# warm-up, in one backend; whatever plan the session's settings give.
qps_function() { # [table suffix, vector type]: vigil_hnsw's tables by default
    local items="bench.${ds}_items${1:-}" queries_t="bench.${ds}_queries${1:-}" type="${2:-real[]}"
    cat <<SQL
CREATE FUNCTION pg_temp.qps(n int) RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE q $type; t0 timestamptz; k int; best float8 := 0;
BEGIN
    FOR q IN SELECT v FROM $queries_t ORDER BY id LIMIT 3 LOOP
        PERFORM id FROM $items ORDER BY v <=> q LIMIT 10;
    END LOOP;
    FOR pass IN 1..$passes LOOP
        k := 0;
        t0 := clock_timestamp();
        FOR q IN SELECT v FROM $queries_t ORDER BY id LIMIT n LOOP
            PERFORM id FROM $items ORDER BY v <=> q LIMIT 10;
            k := k + 1;
        END LOOP;
        best := greatest(best, k / extract(epoch FROM clock_timestamp() - t0));
    END LOOP;
    RETURN best;
END
\$\$;
SQL
}

run_dataset() {
    local ds="$1" out="$dir/$ds.txt" plan
    : > "$out"
    ground_truth "$ds"
    local n
    n="$(psql -c "SELECT count(*) FROM bench.${ds}_items")"
    echo "rows=$n" >> "$out"
    echo "queries=$(psql -c "SELECT count(*) FROM bench.${ds}_queries")" >> "$out"

    step "$ds: exact scan, $exact_n queries, one backend"
    psql >> "$out" <<SQL
SET client_min_messages = warning;
DROP INDEX IF EXISTS bench.${ds}_items_v;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT pg_prewarm('bench.${ds}_items') \g /dev/null
$(qps_function)
SELECT 'exact_qps=' || round(pg_temp.qps($exact_n)::numeric, 1);
SQL

    if [ "$pgvector" = 1 ]; then
        step "$ds: pgvector: the same rows and queries as vector($dims)"
        psql >> "$out" <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS bench.${ds}_items_pgv, bench.${ds}_queries_pgv;
CREATE TABLE bench.${ds}_items_pgv AS SELECT id, v::public.vector($dims) AS v FROM bench.${ds}_items ORDER BY id;
CREATE TABLE bench.${ds}_queries_pgv AS SELECT id, v::public.vector($dims) AS v FROM bench.${ds}_queries ORDER BY id;
VACUUM ANALYZE bench.${ds}_items_pgv, bench.${ds}_queries_pgv;
SQL
    fi
    # pgbench's queries (many clients, inserts) fetch their vector by key:
    # without an index that was a sequential scan of the queries table
    # (all 200 of its pages, every query), as costly as a search and the
    # same for both sides, which diluted both ratios, and at 16 clients its
    # buffer table lookups inflated every query (`git show 9307556:docs/performance-log.md`, stop 38).
    for sfx in "" _pgv; do
        [ -z "$sfx" ] || [ "$pgvector" = 1 ] || continue
        psql -c "CREATE UNIQUE INDEX IF NOT EXISTS ${ds}_queries${sfx}_id ON bench.${ds}_queries$sfx (id)" >/dev/null
    done
    # Builds alternate between the two indexes, $builds times each (the best
    # counts), so a slow spell of a shared machine does not fall on one side.
    local b
    for b in $(seq "$builds"); do
        build "$ds" "" "USING vigil_hnsw (v)"
        [ "$pgvector" = 0 ] || build "$ds" _pgv "USING hnsw (v public.vector_cosine_ops)"
    done
    check_plan "$ds" ""
    [ "$pgvector" = 0 ] || check_plan "$ds" _pgv

    # Each point of the curve, the many-client run and the inserts: vigil_hnsw
    # then pgvector, side by side in time for the same reason.
    local ef
    for ef in $ef_list; do
        curve "$ds" "" "real[]" vigil.hnsw_ef_search "$ef"
        [ "$pgvector" = 0 ] || curve "$ds" _pgv public.vector hnsw.ef_search "$ef"
    done
    throughput "$ds"
    inserts "$ds" ""
    [ "$pgvector" = 0 ] || inserts "$ds" _pgv
}

# CREATE INDEX <sfx's prefix>_v on bench.<ds>_items<sfx> <how> with the bench's m
# and ef_construction, after a checkpoint; appends `[pgv_]build_s=` and
# `[pgv_]index_bytes=` (the summary takes the fastest build).
build() {
    local ds="$1" sfx="$2" how="$3" prefix=""
    [ -z "$sfx" ] || prefix="pgv_"
    step "$ds: CREATE INDEX ${ds}_items${sfx}_v $how WITH (m = $m, ef_construction = $ef_construction)"
    psql >> "$dir/$ds.txt" <<SQL
SET client_min_messages = warning;
DROP INDEX IF EXISTS bench.${ds}_items${sfx}_v;
CHECKPOINT;
SELECT clock_timestamp() AS t0 \gset
CREATE INDEX ${ds}_items${sfx}_v ON bench.${ds}_items${sfx} $how WITH (m = $m, ef_construction = $ef_construction);
SELECT '${prefix}build_s=' || round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2);
SELECT '${prefix}index_bytes=' || pg_relation_size('bench.${ds}_items${sfx}_v');
SQL
    [ -n "$prefix" ] || unreachable "$ds" built
}

# Appends `unreachable_<when>=`: the elements of vigil_hnsw's index on
# bench.<ds>_items that no search can reach (`vigil.hnsw_check`).
unreachable() {
    psql -c "SELECT 'unreachable_$2=' || (vigil.hnsw_check('bench.$1_items_v') ->> 'unreachable')" >> "$dir/$1.txt"
}

# Dies unless the top-10 query over bench.<ds>_items<sfx> uses its index.
check_plan() {
    local ds="$1" sfx="$2" plan
    plan="$(psql -c "SET enable_seqscan = off" -c "EXPLAIN (COSTS OFF) SELECT s.id FROM bench.${ds}_queries$sfx q,
        LATERAL (SELECT id FROM bench.${ds}_items$sfx ORDER BY v <=> q.v LIMIT 10) s")"
    grep -q "Index Scan using ${ds}_items${sfx}_v" <<<"$plan" || die "$ds: the queries do not use the index ${ds}_items${sfx}_v:
$plan"
}

# At ef_search <ef>: what the index (of tables bench.<ds>_items<sfx>, vectors of
# type <type>, its ef setting <setting>) returns for every query, its queries/s
# in one backend and its recall@10 against the exact top 10 (ties counted: a row
# is a hit when its exact distance is at most the 10th exact one); appends
# `[pgv_]qps_<ef>=`, `recall_<ef>=`, `short_<ef>=`.
curve() {
    local ds="$1" sfx="$2" type="$3" setting="$4" ef="$5" prefix=""
    [ -z "$sfx" ] || prefix="pgv_"
    {
        step "$ds: ${prefix:-vigil_}$setting $ef: recall@10 and queries/s over $queries queries, one backend"
        psql >> "$dir/$ds.txt" <<SQL
SET client_min_messages = warning;
SET enable_seqscan = off;
SET $setting = $ef;
SELECT pg_prewarm('bench.${ds}_items${sfx}_v') \g /dev/null
-- What the index returns for every query (this also warms the caches).
CREATE TEMP TABLE got AS
SELECT q.id AS qid, s.id
FROM bench.${ds}_queries$sfx q, LATERAL (SELECT id FROM bench.${ds}_items$sfx ORDER BY v <=> q.v LIMIT 10) s;
$(qps_function "$sfx" "$type")
SELECT '${prefix}qps_$ef=' || round(pg_temp.qps(NULL)::numeric, 1);
RESET enable_seqscan;
SELECT '${prefix}recall_$ef=' || ($(hnsw_recall_sql "$ds"));
SELECT '${prefix}short_$ef=' || count(*) FROM bench.${ds}_queries q
WHERE (SELECT count(*) FROM got g WHERE g.qid = q.id) < 10;
SQL
    }
}

# Queries/s of one client and of $clients clients at once (pgbench, prepared
# statements, ef_search 40 set per connection through PGOPTIONS), random
# held-out queries, the index forced as in the one-backend loop (on a small
# table the planner may prefer a sort). $client_rounds rounds of
# $client_seconds s per run, each round running both at one client, then
# both at $clients (vigil_hnsw first in odd rounds, pgvector first in even
# ones): the machine's drift moves each
# figure by up to 2x between minutes, so each round's ratios count, and the
# summary takes their median. Appends `[pgv_]client1_qps=` and
# `[pgv_]clients_qps=` per run and `client1_ratio=`, `clients_ratio=` per
# round. One client through pgbench, not the PL/pgSQL loop, is the baseline
# for the many: both then pay the same round trips per query.
throughput() {
    local ds="$1" nq sfx c r tps key prefix v p sides
    nq="$(psql -c "SELECT count(*) FROM bench.${ds}_queries")"
    for sfx in "" _pgv; do
        [ -z "$sfx" ] || [ "$pgvector" = 1 ] || continue
        cat > "$dir/clients$sfx.sql" <<SQL
\set q random(1, $nq)
SELECT id FROM bench.${ds}_items$sfx ORDER BY v <=> (SELECT v FROM bench.${ds}_queries$sfx WHERE id = :q) LIMIT 10;
SQL
    done
    for r in $(seq "$client_rounds"); do
        for c in 1 "$clients"; do
            key=clients_qps; [ "$c" != 1 ] || key=client1_qps
            v=""; p=""
            # vigil_hnsw first in odd rounds, pgvector first in even ones: of
            # two runs in a row the second tended to be the faster.
            sides=("" _pgv); [ $((r % 2)) = 1 ] || sides=(_pgv "")
            for sfx in "${sides[@]}"; do
                [ -z "$sfx" ] || [ "$pgvector" = 1 ] || continue
                prefix=""; [ -z "$sfx" ] || prefix="pgv_"
                step "$ds: ${prefix:-vigil_}$c client(s) for $client_seconds s, round $r of $client_rounds (pgbench, ef_search 40)"
                tps="$(hnsw_pgbench "$dir" "$c" "$client_seconds" "$dir/clients$sfx.sql" 2>"$dir/pgbench.err" \
                    | sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
                [ -n "$tps" ] || die "pgbench failed: $(cat "$dir/pgbench.err")"
                echo "${prefix}$key=$tps" >> "$dir/$ds.txt"
                if [ -z "$sfx" ]; then v="$tps"; else p="$tps"; fi
            done
            if [ -n "$p" ]; then
                echo "${key%_qps}_ratio=$(awk -v a="$v" -v b="$p" 'BEGIN { print a / b }')" >> "$dir/$ds.txt"
            fi
        done
    done
}

# Rows inserted one statement (and transaction) at a time into the built index,
# by one session and then by two at once (pgbench, BENCH_INSERTS rows each time,
# held-out query vectors drawn at random, synchronous_commit off so the commit's
# flush does not hide the index's work); appends `<prefix>insert1_rps=` and
# `<prefix>insert2_rps=`. The rows are deleted and the table vacuumed after.
inserts() {
    local ds="$1" sfx="$2" prefix="" script="$dir/insert$2.sql" nq tps c
    [ -z "$sfx" ] || prefix="pgv_"
    nq="$(psql -c "SELECT count(*) FROM bench.${ds}_queries")"
    cat > "$script" <<SQL
\set q random(1, $nq)
SET synchronous_commit = off;
INSERT INTO bench.${ds}_items$sfx (id, v) SELECT -id, v FROM bench.${ds}_queries$sfx WHERE id = :q;
SQL
    for c in 1 2; do
        step "$ds: ${prefix:-vigil_}$inserts rows inserted one at a time by $c session(s) (pgbench)"
        tps="$("$VIGIL_ROOT/scripts/pg-cluster.sh" pgbench "$dir" -n -c "$c" -j "$c" -t "$((inserts / c))" -f "$script" 2>"$dir/pgbench.err" \
            | sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
        [ -n "$tps" ] || die "pgbench failed: $(cat "$dir/pgbench.err")"
        echo "${prefix}insert${c}_rps=$tps" >> "$dir/$ds.txt"
    done
    [ -n "$prefix" ] || unreachable "$ds" inserted
    psql -c "DELETE FROM bench.${ds}_items$sfx WHERE id < 0" -c "VACUUM bench.${ds}_items$sfx"
    [ -n "$prefix" ] || unreachable "$ds" vacuumed
}

load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
for ds in ${datasets//,/ }; do
    "prepare_$ds"
    run_dataset "$ds"
done

val() { sed -n "s/^$2=//p" "$dir/$1.txt" | tail -n 1; }
# The q/s at recall $1 on a curve of "recall q/s" lines sorted by recall, linear
# between the two points around it; n/a outside the curve.
interpolate() {
    awk -v r="$1" '{ x[NR] = $1; y[NR] = $2 } END {
        for (i = 1; i < NR; i++) if (r >= x[i] && r <= x[i + 1]) {
            if (x[i + 1] == x[i]) { print y[i]; exit }
            print y[i] + (y[i + 1] - y[i]) * (r - x[i]) / (x[i + 1] - x[i]); exit }
        if (NR == 1 && r == x[1]) { print y[1]; exit }
        print "n/a" }' <<<"$2"
}
round1() { if [ "$1" = n/a ]; then echo n/a; else awk -v a="$1" 'BEGIN { printf "%.1f", a }'; fi; }
fastest() { sed -n "s/^$2=//p" "$dir/$1.txt" | sort -g | head -n 1; }
# The median of every value of key $2 in dataset $1's results.
median() {
    sed -n "s/^$2=//p" "$dir/$1.txt" | sort -g \
        | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
{
    echo "vigil_hnsw benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
    echo "BENCH_ROWS=${BENCH_ROWS:-100000} BENCH_QUERIES=$queries BENCH_DATASETS=$datasets BENCH_EXACT_QUERIES=$exact_n BENCH_PASSES=$passes;" \
         "m=$m ef_construction=$ef_construction; cosine; shared_buffers $shared_buffers; one backend, PL/pgSQL loop"
    so="$("$PG_CONFIG" --pkglibdir)/vigil.so"
    echo "load average (1, 5, 15 min): $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    echo "vigil.so sha256 $(sha256sum "$so" | cut -c1-12), installed $(date -u -r "$so" '+%Y-%m-%d %H:%M:%S UTC'); git $(git -C "$VIGIL_ROOT" rev-parse --short HEAD)"
    echo
    printf '| dataset | rows | queries | build (s) | index (MB) | raw vectors (MB) | index/raw | exact scan (q/s) |\n'
    printf '|---|---|---|---|---|---|---|---|\n'
    for ds in ${datasets//,/ }; do
        n="$(val "$ds" rows)"; bytes="$(val "$ds" index_bytes)"
        printf '| %s | %s | %s | %s | %.1f | %.1f | %.2f | %s |\n' "$ds" "$n" "$(val "$ds" queries)" \
            "$(fastest "$ds" build_s)" "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')" \
            "$(awk -v n="$n" -v d="$dims" 'BEGIN { print n * d * 4 / 1e6 }')" \
            "$(awk -v b="$bytes" -v n="$n" -v d="$dims" 'BEGIN { print b / (n * d * 4) }')" \
            "$(val "$ds" exact_qps)"
    done
    echo
    for ds in ${datasets//,/ }; do
        echo "$ds: vigil_hnsw elements no search reaches (hnsw_check): $(val "$ds" unreachable_built) after the last build," \
             "$(val "$ds" unreachable_inserted) after the inserts, $(val "$ds" unreachable_vacuumed) after VACUUM"
    done
    echo
    printf '| dataset | ef_search | recall@10 | q/s | speed-up vs exact |\n|---|---|---|---|---|\n'
    for ds in ${datasets//,/ }; do
        exact="$(val "$ds" exact_qps)"
        for ef in $ef_list; do
            qps="$(val "$ds" "qps_$ef")"
            short="$(val "$ds" "short_$ef")"
            note=""; [ "$short" = 0 ] || note=" ($short queries got fewer than 10 rows)"
            printf '| %s | %s | %s | %s | %.1fx |%s\n' "$ds" "$ef" "$(val "$ds" "recall_$ef")" "$qps" \
                "$(awk -v a="$qps" -v b="$exact" 'BEGIN { print a / b }')" "$note"
        done
    done
    if [ "$pgvector" = 1 ]; then
        echo
        echo "Against pgvector $(basename "$pgvector_src" .tar.gz) in the same cluster and run (same rows, queries, m, ef_construction):"
        echo
        printf '| dataset | build vigil / pgvector (s) | index vigil / pgvector (MB) | %s clients vigil / pgvector (q/s) | ratio | one client (pgbench) vigil / pgvector (q/s) | ratio |\n|---|---|---|---|---|---|---|\n' "$clients"
        for ds in ${datasets//,/ }; do
            printf '| %s | %s / %s | %.1f / %.1f | %.0f / %.0f | %.2fx | %.0f / %.0f | %.2fx |\n' "$ds" \
                "$(fastest "$ds" build_s)" "$(fastest "$ds" pgv_build_s)" \
                "$(awk -v b="$(val "$ds" index_bytes)" 'BEGIN { print b / 1e6 }')" \
                "$(awk -v b="$(val "$ds" pgv_index_bytes)" 'BEGIN { print b / 1e6 }')" \
                "$(median "$ds" clients_qps)" "$(median "$ds" pgv_clients_qps)" "$(median "$ds" clients_ratio)" \
                "$(median "$ds" client1_qps)" "$(median "$ds" pgv_client1_qps)" "$(median "$ds" client1_ratio)"
        done
        echo
        echo "(q/s and ratios: medians over $client_rounds rounds; each round's ratio, one client then $clients:"
        for ds in ${datasets//,/ }; do
            echo "$ds: $(sed -n 's/^client1_ratio=//p' "$dir/$ds.txt" | xargs printf '%.2f ') / $(sed -n 's/^clients_ratio=//p' "$dir/$ds.txt" | xargs printf '%.2f ')"
        done
        echo ")"
        echo
        printf '| dataset | inserts/s, one session: vigil / pgvector | ratio | two sessions: vigil / pgvector | two over one: vigil / pgvector |\n|---|---|---|---|---|\n'
        for ds in ${datasets//,/ }; do
            i1="$(val "$ds" insert1_rps)"; i2="$(val "$ds" insert2_rps)"
            p1="$(val "$ds" pgv_insert1_rps)"; p2="$(val "$ds" pgv_insert2_rps)"
            printf '| %s | %.0f / %.0f | %.2fx | %.0f / %.0f | %.2fx / %.2fx |\n' "$ds" "$i1" "$p1" \
                "$(awk -v a="$i1" -v b="$p1" 'BEGIN { print a / b }')" "$i2" "$p2" \
                "$(awk -v a="$i2" -v b="$i1" 'BEGIN { print a / b }')" "$(awk -v a="$p2" -v b="$p1" 'BEGIN { print a / b }')"
        done
        echo
        printf '| dataset | ef_search | pgvector recall@10 | pgvector q/s |\n|---|---|---|---|\n'
        for ds in ${datasets//,/ }; do
            for ef in $ef_list; do
                printf '| %s | %s | %s | %s |\n' "$ds" "$ef" "$(val "$ds" "pgv_recall_$ef")" "$(val "$ds" "pgv_qps_$ef")"
            done
        done
        echo
        echo "Queries/s at equal recall, each side's points against the other's curve interpolated linearly (n/a outside it):"
        echo
        printf '| dataset | at the point of | ef_search | recall@10 | vigil q/s | pgvector q/s | vigil / pgvector |\n|---|---|---|---|---|---|---|\n'
        for ds in ${datasets//,/ }; do
            vcurve="$(for ef in $ef_list; do echo "$(val "$ds" "recall_$ef") $(val "$ds" "qps_$ef")"; done | sort -n)"
            pcurve="$(for ef in $ef_list; do echo "$(val "$ds" "pgv_recall_$ef") $(val "$ds" "pgv_qps_$ef")"; done | sort -n)"
            for side in vigil pgvector; do
                for ef in $ef_list; do
                    if [ "$side" = vigil ]; then
                        r="$(val "$ds" "recall_$ef")"; v="$(val "$ds" "qps_$ef")"; p="$(interpolate "$r" "$pcurve")"
                    else
                        r="$(val "$ds" "pgv_recall_$ef")"; p="$(val "$ds" "pgv_qps_$ef")"; v="$(interpolate "$r" "$vcurve")"
                    fi
                    ratio="n/a"
                    if [ "$v" != n/a ] && [ "$p" != n/a ]; then
                        ratio="$(awk -v a="$v" -v b="$p" 'BEGIN { printf "%.2fx", a / b }')"
                    fi
                    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$ds" "$side" "$ef" "$r" "$(round1 "$v")" "$(round1 "$p")" "$ratio"
                done
            done
        done
    fi
} > "$dir/results.tmp"
mv "$dir/results.tmp" "$dir/results.txt"
echo
cat "$dir/results.txt"
