#!/usr/bin/env bash
# The searches' SQL as the sidecar sends it, without HTTP or the model:
# pgbench runs BEGIN, vigil.enter_account, the search with the query's
# embedding given, COMMIT, as the application role, over the 300 labelled
# queries (embedded once, beforehand), at 2 and 16 clients, 15 s each.
# Run on the bench-vectordb cluster after `make bench-vectordb` has stored
# its records:
#
#   bench/vectordb/pgbench.sh
#
# BENCH_CLIENTS and BENCH_SECONDS change the defaults ("2 16", 15).
# BENCH_CPU=1 also gives the CPU a search took: both cores' busy time
# (from /proc/stat, every process: the backends, pgbench, the kernel) over
# the searches pgbench answered, so run it on an otherwise idle machine.
# BENCH_PIPELINE=1 also runs each search with its four statements sent
# together (pgbench's \startpipeline), as the sidecar sends a search admitted
# early: the difference is what the round trips cost.
set -euo pipefail
work="$(mktemp -d)"
cleanup() { rm -rf "$work"; }
. "$(dirname "$0")/cluster.sh"
bench_queries
n="$(psql -c "SELECT count(*) FROM public.bench_queries")"
search() { "$VIGIL_ROOT/bench/vectordb/sql.sh" search "$account" "$key" "$n" "$1"; }
search "vigil.hybrid_search(b.q, 10, 'bench', 'rrf', 1, 1, b.v)" > "$work/hybrid.sql"
search "vigil.query_embeddings(b.q, 'bench', 10, b.v)" > "$work/query.sql"
kinds=(hybrid query)
if [ "${BENCH_PIPELINE:-0}" = 1 ]; then
    for kind in hybrid query; do
        { head -n 1 "$work/$kind.sql"; echo '\startpipeline'; tail -n +2 "$work/$kind.sql"; echo '\endpipeline'; } \
            > "$work/$kind, one round trip.sql"
    done
    kinds+=("hybrid, one round trip" "query, one round trip")
fi
echo "extension $(psql -c "SELECT extversion FROM pg_extension WHERE extname = 'vigil'")"
# Busy CPU ticks of the whole machine (user, nice, system, irq, softirq).
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
for clients in ${BENCH_CLIENTS:-2 16}; do
    for kind in "${kinds[@]}"; do
        before="$(busy_ticks)"
        "$PG_BIN/pgbench" -n -M prepared -c "$clients" -j "$((clients < 2 ? 1 : 2))" -T "${BENCH_SECONDS:-15}" \
            -f "$work/$kind.sql" "$DATABASE_URL" > "$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
        after="$(busy_ticks)"
        tps="$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/out")"
        cpu=""
        if [ "${BENCH_CPU:-0}" = 1 ]; then
            n="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")"
            cpu="$(awk -v t="$((after - before))" -v hz="$(getconf CLK_TCK)" -v n="$n" \
                'BEGIN { printf ", %.3f ms of CPU a search", t / hz * 1000 / n }')"
        fi
        echo "RESULT ${kind}, $clients clients: $tps searches/s$cpu"
    done
done
psql -c "DROP TABLE public.bench_queries"
