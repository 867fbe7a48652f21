#!/usr/bin/env bash
# `make bench-hnsw`: the vigil_hnsw index against in-memory HNSW libraries from
# PyPI and an exact scan, on the same rows, queries, graph parameters and
# threads, in one run; on a cluster of its own (.vigil/bench-hnsw, port 28818;
# shared_buffers 2GB, maintenance_work_mem 2GB, jit off, one backend per
# query: no parallel workers).
#
# Datasets (BENCH_DATASETS, default real,random):
#   real    Debian package short descriptions (apt-cache dumpavail, deduplicated),
#           embedded in the database with vigil.embed (all-MiniLM-L6-v2, 384 dims):
#           BENCH_QUERIES (default 1000) held out as queries, up to BENCH_ROWS
#           (default 100000) as rows; fewer when there are fewer descriptions.
#           Embeddings are kept in the cluster (table bench.embed_cache) and in
#           .vigil/bench-hnsw-cache/, so only new texts are embedded on a rerun.
#   random  as many rows and queries, 384 dims, each coordinate uniform in [-1, 1):
#           no structure for a graph to use, so recall is low for any HNSW.
#
# What is compared, each with m = BENCH_M (16) links per element (twice as many
# on the bottom layer) and a build beam ef_construction = BENCH_EF_CONSTRUCTION
# (64), built on BENCH_THREADS threads (default: every core, as vigil_hnsw's
# build uses every core the server has) and queried on one thread:
#   vigil_hnsw  CREATE INDEX ... USING vigil_hnsw (v) WITH (m, ef_construction);
#               `SELECT id FROM items ORDER BY v <=> q LIMIT 10` timed in a
#               PL/pgSQL loop in one backend, vigil.hnsw_ef_search set to each
#               of BENCH_EF_SEARCH ("5 10 15 20 30 40 60 80 120 160 240 320":
#               points close enough for the curves to be interpolated).
#   faiss       faiss-cpu's IndexHNSWFlat (f32 vectors, inner product of unit
#               vectors: cosine), efSearch over the same list;
#   usearch     usearch's HNSW (cosine, f16 vectors: the 2 bytes a dimension
#               vigil_hnsw's cosine index keeps), expansion_search over the list.
#               Both libraries come from PyPI, pinned by hash in
#               bench/hnsw/requirements.txt and installed (prebuilt
#               wheels only) into a venv in .vigil/cache/bench-hnsw-venv; they
#               run in bench/hnsw/libraries.py over the rows and queries
#               exported from the cluster (binary COPY, bit for bit), all
#               queries in one call of the library on one thread.
#   exact       the exact scan in SQL (enable_indexscan off) over
#               BENCH_EXACT_QUERIES (50) queries, which also gives the exact top
#               10 of every query (ground truth; kept while the data is
#               unchanged); and an exact search in memory (faiss's IndexFlatIP,
#               one query at a time), whose recall checks the export (below
#               0.999 the bench stops: the libraries would not have the rows).
#   pgvector    only where pgvector is already installed in this PostgreSQL
#               (vector.control in `pg_config --sharedir`/extension, put there
#               by whoever runs the bench: no script installs it): its hnsw on
#               the same rows as vector(384), built by its leader and
#               max_parallel_maintenance_workers = BENCH_THREADS - 1 workers,
#               hnsw.ef_search over the list; then
#               also pgbench with one and BENCH_CLIENTS (16) clients
#               (BENCH_CLIENT_ROUNDS (5) rounds of BENCH_CLIENT_SECONDS (8) s,
#               ef_search 40) and BENCH_INSERTS rows inserted into each.
# An in-memory library is the limit an index inside PostgreSQL approaches:
# the ratio of vigil_hnsw's figures to a library's tells what PostgreSQL's
# buffers, locks, tuple fetches and executor cost a query, a build and a row.
#
# Recall@10 of every side is scored the same way, in SQL against the exact top
# 10, ties counted (a returned row is a hit when its exact distance is at most
# the 10th exact distance). Queries/s: the best of BENCH_PASSES (3) passes
# over all queries, after a warm-up; builds: the fastest of BENCH_BUILDS (2);
# size: the index's relation (pg_relation_size) or the library's saved index
# (its vectors and links, what it holds in memory). Every step runs for each
# side in turn (builds alternating, each point of the curve in turn), so a slow
# spell of a shared machine falls on all. The summary gives queries/s at equal
# recall (BENCH_RECALLS, "0.90 0.95 0.99", interpolated linearly on each curve's
# frontier; n/a outside the curve), build time and size, each as vigil_hnsw's
# over the other's.
# vigil_hnsw also takes BENCH_INSERTS (2000) rows one statement at a time, by
# one session and by two at once, and `vigil.hnsw_check` counts the rows no
# search reaches after the build, the inserts and VACUUM.
# The summary (its tables made by bench/hnsw/report.py from each dataset's
# key=value results, .vigil/bench-hnsw/<dataset>.txt) is printed and written to
# .vigil/bench-hnsw/results.txt. The cluster is stopped when the script ends;
# its data (and the caches) stay.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

rows="${BENCH_ROWS:-100000}"
queries="${BENCH_QUERIES:-1000}"
datasets="${BENCH_DATASETS:-real,random}"
exact_n="${BENCH_EXACT_QUERIES:-50}"
passes="${BENCH_PASSES:-3}"
builds="${BENCH_BUILDS:-2}"
ef_list="${BENCH_EF_SEARCH:-5 10 15 20 30 40 60 80 120 160 240 320}"
recalls="${BENCH_RECALLS:-0.90 0.95 0.99}"
m="${BENCH_M:-16}"
ef_construction="${BENCH_EF_CONSTRUCTION:-64}"
threads="${BENCH_THREADS:-$(nproc)}"
shared_buffers="${BENCH_SHARED_BUFFERS:-2GB}"
port="${BENCH_PG_PORT:-28818}"
clients="${BENCH_CLIENTS:-16}"
client_rounds="${BENCH_CLIENT_ROUNDS:-5}"
client_seconds="${BENCH_CLIENT_SECONDS:-8}"
inserts="${BENCH_INSERTS:-2000}"
dir="$VIGIL_STATE/bench-hnsw"
cache="$VIGIL_STATE/bench-hnsw-cache"
venv="$VIGIL_STATE/cache/bench-hnsw-venv"
requirements="$VIGIL_ROOT/bench/hnsw/requirements.txt"
dims=384
mkdir -p "$cache"

for ds in ${datasets//,/ }; do
    case "$ds" in real|random) ;; *) die "BENCH_DATASETS: unknown dataset '$ds' (real, random)" ;; esac
done
[ "$exact_n" -le "$queries" ] || exact_n="$queries"
if [ "$threads" != "$(nproc)" ]; then
    echo "warning: BENCH_THREADS=$threads: the libraries build on $threads threads, vigil_hnsw on every core ($(nproc))" >&2
fi

# pgvector: a column of its own where it is installed, nothing otherwise.
pgvector_control="$("$PG_CONFIG" --sharedir)/extension/vector.control"
pgvector=0 pgvector_version=""
if [ -f "$pgvector_control" ]; then
    pgvector=1
    pgvector_version="$(sed -n "s/^default_version *= *'\(.*\)'.*/\1/p" "$pgvector_control")"
    echo "pgvector $pgvector_version is installed in this PostgreSQL: measuring it too" >&2
else
    echo "pgvector is not installed in this PostgreSQL ($pgvector_control): no pgvector column" >&2
fi
sides="vigil faiss usearch"
[ "$pgvector" = 0 ] || sides="$sides pgvector"

# The libraries' venv, made again whenever the requirements change.
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ "$(cat "$venv/installed" 2>/dev/null)" != "$want" ]; then
    step "installing faiss-cpu and usearch from PyPI into $venv ($(basename "$requirements"))"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --require-hashes --only-binary=:all: -r "$requirements"
    echo "$want" > "$venv/installed"
fi
libraries() { "$venv/bin/python" "$VIGIL_ROOT/bench/hnsw/libraries.py" "$@"; }

step "Debian package descriptions (apt-cache dumpavail)"
apt-cache dumpavail | sed -n 's/^Description: //p' | awk 'NF && !seen[$0]++' > "$cache/descriptions.txt"
unique="$(wc -l < "$cache/descriptions.txt")"
[ "$unique" -gt "$queries" ] || die "only $unique descriptions for $queries queries (run apt-get update?)"
if [ "$((unique - queries))" -lt "$rows" ]; then rows="$((unique - queries))"; fi
echo "$unique unique descriptions: $queries queries, $rows rows" >&2

psql() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At "$@"; }

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
-- pgvector, where installed (see above); in public, where the bench's queries find it.
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

val() { sed -n "s/^$2=//p" "$dir/$1.txt" | tail -n 1; }

# Appends `<key>=` to dataset <ds>'s results: the recall@10 of the `qid,id`
# lines of file <got> (what one side returned for each query), scored in SQL
# as the bench scores vigil_hnsw's (lib.sh: hnsw_recall_sql).
score() {
    local ds="$1" key="$2" got="$3"
    psql -c "SET client_min_messages = warning" -c "CREATE TEMP TABLE got (qid int, id int)" \
         -c "COPY got FROM STDIN (FORMAT csv)" -c "SELECT '$key=' || ($(hnsw_recall_sql "$ds"))" \
         < "$got" >> "$dir/$ds.txt"
}

run_dataset() {
    local ds="$1" out="$dir/$ds.txt" t b side ef
    : > "$out"
    ground_truth "$ds"
    echo "rows=$(psql -c "SELECT count(*) FROM bench.${ds}_items")" >> "$out"
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

    # The libraries' input: the very rows and queries of the tables, bit for bit.
    step "$ds: rows and queries exported for faiss and usearch (binary COPY to $cache)"
    for t in items queries; do
        psql -c "COPY (SELECT id::int4, v::real[] FROM bench.${ds}_$t ORDER BY id) TO STDOUT (FORMAT binary)" \
            > "$cache/$ds-$t.copy"
    done
    step "$ds: exact search in memory (faiss IndexFlatIP, one thread), checking the export"
    libraries exact "$cache/$ds" --got "$cache/$ds-exact.got" >> "$out"
    score "$ds" exact_mem_recall "$cache/$ds-exact.got"
    awk -v r="$(val "$ds" exact_mem_recall)" 'BEGIN { exit !(r >= 0.999) }' \
        || die "$ds: the exact search in memory found recall@10 $(val "$ds" exact_mem_recall), not 1: the exported vectors are not the tables'"

    if [ "$pgvector" = 1 ]; then
        step "$ds: pgvector: the same rows and queries as vector($dims)"
        psql >> "$out" <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS bench.${ds}_items_pgv, bench.${ds}_queries_pgv;
CREATE TABLE bench.${ds}_items_pgv AS SELECT id, v::public.vector($dims) AS v FROM bench.${ds}_items ORDER BY id;
CREATE TABLE bench.${ds}_queries_pgv AS SELECT id, v::public.vector($dims) AS v FROM bench.${ds}_queries ORDER BY id;
VACUUM ANALYZE bench.${ds}_items_pgv, bench.${ds}_queries_pgv;
CREATE UNIQUE INDEX ${ds}_queries_pgv_id ON bench.${ds}_queries_pgv (id);
SQL
    fi
    # pgbench's queries (inserts, many clients) fetch their vector by key:
    # without an index that was a sequential scan of the queries table, as
    # costly as a search (the `WHERE id = :q` lookups in the pgbench scripts below).
    psql -c "CREATE UNIQUE INDEX IF NOT EXISTS ${ds}_queries_id ON bench.${ds}_queries (id)" >/dev/null

    # Every step for each side in turn ($builds builds each, the fastest
    # counts; then each point of the curve), so a slow spell of a shared
    # machine does not fall on one side.
    for b in $(seq "$builds"); do
        for side in $sides; do build "$ds" "$side"; done
    done
    check_plan "$ds" ""
    [ "$pgvector" = 0 ] || check_plan "$ds" _pgv
    for ef in $ef_list; do
        for side in $sides; do curve "$ds" "$side" "$ef"; done
    done
    inserts "$ds" vigil
    if [ "$pgvector" = 1 ]; then
        inserts "$ds" pgvector
        throughput "$ds"
    fi
}

# The index of <side> on dataset <ds>, built with the bench's m, ef_construction
# and threads; appends `<side>_build_s=` and `<side>_index_bytes=` (the summary
# takes the fastest build).
build() {
    local ds="$1" side="$2" sfx="" how="USING vigil_hnsw (v)"
    case "$side" in
        faiss|usearch)
            step "$ds: $side: build, m $m, ef_construction $ef_construction, $threads threads"
            libraries build "$side" "$cache/$ds" "$cache/$ds-$side.index" \
                --m "$m" --ef-construction "$ef_construction" --threads "$threads" >> "$dir/$ds.txt"
            return ;;
        pgvector) sfx=_pgv how="USING hnsw (v public.vector_cosine_ops)" ;;
    esac
    step "$ds: CREATE INDEX ${ds}_items${sfx}_v $how WITH (m = $m, ef_construction = $ef_construction)"
    # pgvector's build runs its leader and max_parallel_maintenance_workers
    # processes: $threads in all, as vigil_hnsw's threads (the setting is
    # not vigil_hnsw's).
    psql >> "$dir/$ds.txt" <<SQL
SET client_min_messages = warning;
SET max_parallel_maintenance_workers = $((threads - 1));
DROP INDEX IF EXISTS bench.${ds}_items${sfx}_v;
CHECKPOINT;
SELECT clock_timestamp() AS t0 \gset
CREATE INDEX ${ds}_items${sfx}_v ON bench.${ds}_items${sfx} $how WITH (m = $m, ef_construction = $ef_construction);
SELECT '${side}_build_s=' || round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2);
SELECT '${side}_index_bytes=' || pg_relation_size('bench.${ds}_items${sfx}_v');
SQL
    [ "$side" != vigil ] || unreachable "$ds" built
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

# At ef_search <ef>: what <side>'s index returns for every query, its queries/s
# on one thread (in one backend for the indexes in PostgreSQL) and its
# recall@10 against the exact top 10; appends `<side>_qps_<ef>=`,
# `<side>_recall_<ef>=`, `<side>_short_<ef>=` (queries that got fewer than 10).
curve() {
    local ds="$1" side="$2" ef="$3" sfx="" type="real[]" setting=vigil.hnsw_ef_search
    case "$side" in
        faiss|usearch)
            step "$ds: $side ef $ef: recall@10 and queries/s over $queries queries, one thread"
            libraries search "$side" "$cache/$ds" "$cache/$ds-$side.index" --ef "$ef" --passes "$passes" \
                --got "$cache/$ds-$side.got" >> "$dir/$ds.txt"
            score "$ds" "${side}_recall_$ef" "$cache/$ds-$side.got"
            return ;;
        pgvector) sfx=_pgv type=public.vector setting=hnsw.ef_search ;;
    esac
    step "$ds: $side $setting $ef: recall@10 and queries/s over $queries queries, one backend"
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
SELECT '${side}_qps_$ef=' || round(pg_temp.qps(NULL)::numeric, 1);
RESET enable_seqscan;
SELECT '${side}_recall_$ef=' || ($(hnsw_recall_sql "$ds"));
SELECT '${side}_short_$ef=' || count(*) FROM bench.${ds}_queries q
WHERE (SELECT count(*) FROM got g WHERE g.qid = q.id) < 10;
SQL
}

# With pgvector: queries/s of one client and of $clients clients at once
# (pgbench, prepared statements, ef_search 40 set per connection through
# PGOPTIONS), random held-out queries, the index forced as in the one-backend
# loop (on a small table the planner may prefer a sort). $client_rounds rounds
# of $client_seconds s per run, each round running both sides at one client,
# then both at $clients (vigil_hnsw first in odd rounds, pgvector first in
# even ones: of two runs in a row the second tended to be the faster): the
# machine's drift moves each figure by up to 2x between minutes, so each
# round's ratios count, and the summary takes their median. Appends
# `<side>_client1_qps=` and `<side>_clients_qps=` per run and
# `client1_ratio=`, `clients_ratio=` per round. One client through pgbench,
# not the PL/pgSQL loop, is the baseline for the many: both then pay the same
# round trips per query.
throughput() {
    local ds="$1" nq side sfx c r tps key
    local -A got
    nq="$(psql -c "SELECT count(*) FROM bench.${ds}_queries")"
    for sfx in "" _pgv; do
        cat > "$dir/clients$sfx.sql" <<SQL
\set q random(1, $nq)
SELECT id FROM bench.${ds}_items$sfx ORDER BY v <=> (SELECT v FROM bench.${ds}_queries$sfx WHERE id = :q) LIMIT 10;
SQL
    done
    for r in $(seq "$client_rounds"); do
        for c in 1 "$clients"; do
            key=clients_qps; [ "$c" != 1 ] || key=client1_qps
            for side in $([ $((r % 2)) = 1 ] && echo vigil pgvector || echo pgvector vigil); do
                sfx=""; [ "$side" = vigil ] || sfx=_pgv
                step "$ds: $side: $c client(s) for $client_seconds s, round $r of $client_rounds (pgbench, ef_search 40)"
                tps="$(hnsw_pgbench "$dir" "$c" "$client_seconds" "$dir/clients$sfx.sql" 2>"$dir/pgbench.err" \
                    | sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
                [ -n "$tps" ] || die "pgbench failed: $(cat "$dir/pgbench.err")"
                echo "${side}_$key=$tps" >> "$dir/$ds.txt"
                got[$side]="$tps"
            done
            echo "${key%_qps}_ratio=$(awk -v a="${got[vigil]}" -v b="${got[pgvector]}" 'BEGIN { print a / b }')" >> "$dir/$ds.txt"
        done
    done
}

# Rows inserted one statement (and transaction) at a time into <side>'s built
# index, by one session and then by two at once (pgbench, BENCH_INSERTS rows
# each time, held-out query vectors drawn at random, synchronous_commit off so
# the commit's flush does not hide the index's work); appends
# `<side>_insert1_rps=` and `<side>_insert2_rps=`. The rows are deleted and
# the table vacuumed after.
inserts() {
    local ds="$1" side="$2" sfx="" nq tps c script
    [ "$side" = vigil ] || sfx=_pgv
    script="$dir/insert$sfx.sql"
    nq="$(psql -c "SELECT count(*) FROM bench.${ds}_queries")"
    cat > "$script" <<SQL
\set q random(1, $nq)
SET synchronous_commit = off;
INSERT INTO bench.${ds}_items$sfx (id, v) SELECT -id, v FROM bench.${ds}_queries$sfx WHERE id = :q;
SQL
    for c in 1 2; do
        step "$ds: $side: $inserts rows inserted one at a time by $c session(s) (pgbench)"
        tps="$("$VIGIL_ROOT/scripts/pg-cluster.sh" pgbench "$dir" -n -c "$c" -j "$c" -t "$((inserts / c))" -f "$script" 2>"$dir/pgbench.err" \
            | sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
        [ -n "$tps" ] || die "pgbench failed: $(cat "$dir/pgbench.err")"
        echo "${side}_insert${c}_rps=$tps" >> "$dir/$ds.txt"
    done
    [ "$side" != vigil ] || unreachable "$ds" inserted
    psql -c "DELETE FROM bench.${ds}_items$sfx WHERE id < 0" -c "VACUUM bench.${ds}_items$sfx"
    [ "$side" != vigil ] || unreachable "$ds" vacuumed
}

load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
for ds in ${datasets//,/ }; do
    "prepare_$ds"
    run_dataset "$ds"
done

# The header says what ran where; bench/hnsw/report.py computes the rest from
# the results (queries/s at equal recall, ratios, fastest builds, medians).
report_args=(--datasets "$datasets" --ef-search "$ef_list" --recalls "$recalls" --threads "$threads"
             --dims "$dims" --clients "$clients" --client-rounds "$client_rounds")
[ "$pgvector" = 0 ] || report_args+=(--pgvector "$pgvector_version")
{
    echo "vigil_hnsw benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
    echo "BENCH_ROWS=${BENCH_ROWS:-100000} BENCH_QUERIES=$queries BENCH_DATASETS=$datasets BENCH_EXACT_QUERIES=$exact_n BENCH_PASSES=$passes BENCH_BUILDS=$builds BENCH_THREADS=$threads;" \
         "m=$m ef_construction=$ef_construction; cosine; shared_buffers $shared_buffers"
    so="$("$PG_CONFIG" --pkglibdir)/vigil.so"
    echo "load average (1, 5, 15 min): $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    echo "vigil.so sha256 $(sha256sum "$so" | cut -c1-12), installed $(date -u -r "$so" '+%Y-%m-%d %H:%M:%S UTC'); git $(git -C "$VIGIL_ROOT" rev-parse --short HEAD)"
    echo "$(grep -E '^(faiss-cpu|usearch|numpy)==' "$requirements" | cut -d' ' -f1 | xargs) (PyPI, ${requirements#"$VIGIL_ROOT/"});" \
         "pgvector: $([ "$pgvector" = 1 ] && echo "$pgvector_version, installed in this PostgreSQL by hand" || echo "not installed, not measured")"
    echo
    python3 "$VIGIL_ROOT/bench/hnsw/report.py" "$dir" "${report_args[@]}"
} > "$dir/results.tmp"
mv "$dir/results.tmp" "$dir/results.txt"
echo
cat "$dir/results.txt"
