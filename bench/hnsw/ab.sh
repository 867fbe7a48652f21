#!/usr/bin/env bash
# A/B of two or more builds of vigil.so on the bench-hnsw cluster, with pgvector
# as the yardstick for the machine's drift: an A/B in one cluster, whose ratio is
# the figure to compare (docs/performance.md). Needs a finished `BENCH_DATASETS=real bench/hnsw/bench.sh`
# (its tables and both indexes) on a PostgreSQL where pgvector was installed by
# hand: this project never installs it (it is in none of the registries). Save each build first, for example
#   . scripts/lib.sh && install_extension && cp "$("$PG_CONFIG" --pkglibdir)/vigil.so" /tmp/a.so
# then: bench/hnsw/ab.sh [queries|build|clients] /tmp/a.so /tmp/b.so ...
# Each round installs each .so in turn into PostgreSQL's lib directory (as
# install_extension does) and restarts the cluster, then
#   queries: vigil_hnsw's queries/s at vigil.hnsw_ef_search $AB_EF (20; a
#            list such as "20 28 40" measures each) and pgvector's at
#            hnsw.ef_search 40 over the 1,000 held-out queries (best of 2
#            passes after a warm-up), their ratio, and vigil_hnsw's
#            recall@10 at that ef, so builds that trade recall for speed
#            compare at equal recall;
#   build:   the time of CREATE INDEX ... USING vigil_hnsw on the real rows;
#   clients: queries/s of vigil_hnsw and of pgvector (ef_search 40) at one
#            client and at each of AB_CLIENTS (16; a list such as "2 16"
#            also measures one client per core), pgbench as bench-hnsw runs it
#            (its clients*.sql, prepared, AB_SECONDS (8) s each), the two
#            ratios; with AB_CPU=1 also each run's server CPU per query:
#            the CPU time of the backends that served it (the kernel's own
#            count, which the postmaster collects as they exit) over the
#            queries answered.
# AB_ROUNDS (2) rounds alternate the builds, in the order named in odd rounds
# and the other way round in even ones. With AB_REINDEX=1 each build first
# rebuilds vigil_hnsw's index (builds that lay it out differently, or whose
# layout the other cannot read). The last .so named stays installed.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
mode="${1:-}"; shift || true
case "$mode" in queries|build|clients) ;; *) die "usage: bench/hnsw/ab.sh queries|build|clients A.so B.so ..." ;; esac
[ $# -ge 1 ] || die "name at least one vigil.so"
dir="$VIGIL_STATE/bench-hnsw"
[ -d "$dir" ] || die "no $dir: run BENCH_DATASETS=real bench/hnsw/bench.sh first"
lib="$("$PG_CONFIG" --pkglibdir)"
port="${BENCH_PG_PORT:-28818}"
psql() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At "$@"; }

qps() { # table suffix, ef setting, ef, vector type
    psql <<SQL
SET enable_seqscan = off; SET $2 = $3;
SELECT pg_prewarm('bench.real_items$1'), pg_prewarm('bench.real_items$1_v') \g /dev/null
CREATE FUNCTION pg_temp.qps() RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE q $4; t0 timestamptz; k int; best float8 := 0;
BEGIN
    FOR q IN SELECT v FROM bench.real_queries$1 ORDER BY id LIMIT 50 LOOP
        PERFORM id FROM bench.real_items$1 ORDER BY v <=> q LIMIT 10;
    END LOOP;
    FOR pass IN 1..2 LOOP
        k := 0; t0 := clock_timestamp();
        FOR q IN SELECT v FROM bench.real_queries$1 ORDER BY id LOOP
            PERFORM id FROM bench.real_items$1 ORDER BY v <=> q LIMIT 10; k := k + 1;
        END LOOP;
        best := greatest(best, k / extract(epoch FROM clock_timestamp() - t0));
    END LOOP;
    RETURN best;
END \$\$;
SELECT round(pg_temp.qps()::numeric);
SQL
}

# Queries/s of pgbench with $1 clients on bench-hnsw's script $2, and with
# AB_CPU=1 the server CPU per query in ms after it.
clients_run() {
    local c="$1" script="$dir/$2" tps n before=0 after
    [ -f "$script" ] || die "no $script: run BENCH_DATASETS=real bench/hnsw/bench.sh first"
    [ "${AB_CPU:-0}" = 1 ] && before="$(children_cpu_ticks)"
    hnsw_pgbench "$dir" "$c" "${AB_SECONDS:-8}" "$script" > "$dir/ab-pgbench.out" 2>&1 \
        || die "pgbench failed: $(cat "$dir/ab-pgbench.out")"
    tps="$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$dir/ab-pgbench.out")"
    if [ "${AB_CPU:-0}" = 1 ]; then
        # The backends' CPU reaches the postmaster's count once each has exited.
        while [ "$(psql -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")" != 1 ]; do
            sleep 0.05
        done
        after="$(children_cpu_ticks)"
        n="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$dir/ab-pgbench.out")"
        echo "$tps $(awk -v t="$((after - before))" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { printf "%.3f", t / hz * 1000 / n }')"
    else
        echo "$tps"
    fi
}

# User and system CPU ticks of the postmaster's exited children (backends).
children_cpu_ticks() {
    awk '{ print $16 + $17 }' "/proc/$(head -1 "$dir/data/postmaster.pid")/stat"
}

builds=("$@")
for r in $(seq "${AB_ROUNDS:-2}"); do
    # Odd rounds run the builds in the order named, even rounds the other way
    # round (and pgvector before vigil_hnsw in `clients`): of two runs in a
    # row the second tended to be the faster, whichever build it was
    # (the performance log, "Term counts kept", stop 37), so a fixed order favours one side.
    order=("${builds[@]}")
    if [ $((r % 2)) = 0 ]; then
        order=()
        for ((i = ${#builds[@]} - 1; i >= 0; i--)); do order+=("${builds[i]}"); done
    fi
    for so in "${order[@]}"; do
        [ -f "$so" ] || die "no such file: $so"
        install -m 0755 "$so" "$lib/vigil.so"
        "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir" >/dev/null
        "$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port" >/dev/null
        if [ "${AB_REINDEX:-0}" = 1 ]; then
            psql -c "SET maintenance_work_mem = '2GB'" -c "REINDEX INDEX bench.real_items_v"
        fi
        if [ "$mode" = clients ]; then
            psql -c "SELECT pg_prewarm('bench.real_items'), pg_prewarm('bench.real_items_v'), pg_prewarm('bench.real_items_pgv'), pg_prewarm('bench.real_items_pgv_v')" >/dev/null
            line="$so:"
            for c in 1 ${AB_CLIENTS:-16}; do
                if [ $((r % 2)) = 1 ]; then
                    v="$(clients_run "$c" clients.sql)"; p="$(clients_run "$c" clients_pgv.sql)"
                else
                    p="$(clients_run "$c" clients_pgv.sql)"; v="$(clients_run "$c" clients.sql)"
                fi
                line="$line $c client(s): $(awk -v v="$v" -v p="$p" 'BEGIN {
                    split(v, a, " "); split(p, b, " ")
                    printf "vigil %.0f q/s", a[1]; if (a[2] != "") printf " (%s ms CPU/query)", a[2]
                    printf ", pgvector %.0f q/s", b[1]; if (b[2] != "") printf " (%s ms CPU/query)", b[2]
                    printf ", ratio %.3f;", a[1] / b[1] }')"
            done
            echo "$line"
        elif [ "$mode" = queries ]; then
            p="$(qps _pgv hnsw.ef_search 40 public.vector)"
            for ef in ${AB_EF:-20}; do
                v="$(qps "" vigil.hnsw_ef_search "$ef" "real[]")"
                recall="$(psql <<SQL
SET enable_seqscan = off; SET vigil.hnsw_ef_search = $ef;
CREATE TEMP TABLE got AS SELECT q.id AS qid, s.id
FROM bench.real_queries q, LATERAL (SELECT id FROM bench.real_items ORDER BY v <=> q.v LIMIT 10) s;
RESET enable_seqscan;
$(hnsw_recall_sql real);
SQL
)"
                echo "$so: ef $ef: vigil $v q/s (recall@10 $recall), pgvector $p q/s, ratio $(awk -v a="$v" -v b="$p" 'BEGIN { printf "%.3f", a / b }')"
            done
        else
            psql -c "SELECT pg_prewarm('bench.real_items')" >/dev/null
            ms="$(psql <<'SQL' 2>&1 | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
SET maintenance_work_mem = '2GB';
DROP INDEX IF EXISTS bench.real_items_ab;
\timing on
CREATE INDEX real_items_ab ON bench.real_items USING vigil_hnsw (v);
\timing off
DROP INDEX bench.real_items_ab;
SQL
)"
            echo "$so: build $ms ms"
        fi
    done
done
"$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir" >/dev/null
install -m 0755 "${builds[${#builds[@]} - 1]}" "$lib/vigil.so"
