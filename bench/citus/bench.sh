#!/usr/bin/env bash
# `make bench-citus`: the vector database's searches on a Citus cluster
# against one server holding the same records (issue 47, docs/scaling-out.md).
#
# One server (.vigil/bench-citus/single, port 28890) and a loopback cluster (a
# coordinator and two workers, .vigil/bench-citus/cluster, ports 28891-28893)
# get the same BENCH_RECORDS records of the search corpus (bench/vectordb,
# default all 3,000) in one database of one account: embedded once on the
# single server, copied to the cluster, which vigil.distribute() has spread.
# pgbench then runs what the sidecar sends for a search (BEGIN,
# vigil.enter_account, the search with the query's embedding given, COMMIT),
# as the application role, over the 300 labelled queries, at 1 and 4 clients,
# BENCH_SECONDS (15) each, the two installations alternated twice.
#
# For each: searches a second and mean latency, and the CPU a search took on
# each server (its postmaster's processes, from /proc: the coordinator's and
# the workers' apart), from which the last lines work out what a coordinator
# and N workers would serve if each had the cores this machine has (loopback
# puts all three servers on the same 2 cores, so the cluster's own searches
# a second here are a floor, not its capacity).
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

root="$VIGIL_STATE/bench-citus"
seconds="${BENCH_SECONDS:-15}"
records="${BENCH_RECORDS:-3000}"
account="bench@example.com"
require_citus
mkdir -p "$root"
work="$(mktemp -d)"
chmod 1777 "$work"  # psql, run as the servers' user, writes the copies here
trap 'rm -rf "$work"' EXIT

single="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$root/single" 28890)"
cluster="$(CITUS_WORKERS=2 "$VIGIL_ROOT/scripts/citus-cluster.sh" up "$root/cluster" 28891)"
single_url="$(sed -n 's/^DATABASE_URL=//p' <<<"$single")"
cluster_url="$(sed -n 's/^DATABASE_URL=//p' <<<"$cluster")"
one() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$root/single" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
many() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$root/cluster/coordinator" -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# The records and the queries, embedded once on the single server.
if [ "$(one -c "SELECT count(*) FROM vigil.vector_records WHERE account = '$account'")" != "$records" ]; then
    step "storing $records records on the single server (embedding them)"
    gzip -dc "$VIGIL_ROOT/bench/vectordb/eval-corpus.jsonl.gz" | head -n "$records" | python3 -c '
import json, sys
docs = [json.loads(l) for l in sys.stdin]
print("SET client_min_messages = warning;")
print("SELECT vigil.delete_account(%s); SELECT vigil.create_account(%s);" % (repr(sys.argv[1]), repr(sys.argv[1])))
print("SET vigil.account = %s; SELECT created FROM vigil.create_database(%s);" % (repr(sys.argv[1]), repr("bench")))
for i in range(0, len(docs), 100):
    batch = [{"title": d["title"], "content": d["content"]} for d in docs[i:i + 100]]
    print("SELECT count(*) FROM vigil.store_records($j$%s$j$, %s);" % (json.dumps(batch), repr("bench")))
' "$account" > "$work/store.sql"
    one -f "$work/store.sql" >/dev/null
    "$VIGIL_ROOT/bench/vectordb/sql.sh" queries | one >/dev/null
fi

# The same rows on the cluster, distributed.
if [ "$(many -c "SELECT count(*) FROM vigil.vector_records WHERE account = '$account'" 2>/dev/null)" != "$records" ]; then
    step "copying them to the cluster and distributing it"
    one -c "\\copy (SELECT title, content, metadata, embedding, opening FROM vigil.vector_records WHERE account = '$account' ORDER BY id) TO '$work/records.tsv'"
    one -c "\\copy public.bench_queries TO '$work/queries.tsv'"
    many <<SQL
SET client_min_messages = warning;
SELECT vigil.delete_account('$account');
SELECT vigil.create_account('$account');
SELECT count(*) FROM vigil.distribute();
SET vigil.account = '$account';
SELECT created FROM vigil.create_database('bench');
CREATE TEMP TABLE incoming (title text, content text, metadata jsonb, embedding real[], opening real[]);
\\copy incoming FROM '$work/records.tsv'
INSERT INTO vigil.vector_records (db, account, title, content, metadata, embedding, opening)
SELECT (SELECT id FROM vigil.vector_databases WHERE account = '$account' AND name = 'bench'),
       '$account', title, content, metadata, embedding, opening FROM incoming;
DROP TABLE IF EXISTS public.bench_queries;
CREATE TABLE public.bench_queries (i bigint, q text, v real[]);
\\copy public.bench_queries FROM '$work/queries.tsv'
GRANT SELECT ON public.bench_queries TO vigil_app;
SQL
fi
key_one="$(VIGIL_ADMIN_DATABASE_URL="$(sed -n 's/^ADMIN_DATABASE_URL=//p' <<<"$single")" \
    "$VIGIL_ROOT/target/release/vigil-sidecar" user-keys create --rate-per-second 100000 --burst 100000 "$account" 2>/dev/null)"
key_many="$(VIGIL_ADMIN_DATABASE_URL="$(sed -n 's/^ADMIN_DATABASE_URL=//p' <<<"$cluster")" \
    "$VIGIL_ROOT/target/release/vigil-sidecar" user-keys create --rate-per-second 100000 --burst 100000 "$account" 2>/dev/null)"
n="$(one -c "SELECT count(*) FROM public.bench_queries")"

# CPU ticks (user + system) of a server's processes: its postmaster's own,
# its live children's, and its exited children's.
ticks() {
    local pid
    pid="$(as_pg head -n 1 "$1/data/postmaster.pid")"
    {
        awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pid/stat"
        for child in $(pgrep -P "$pid"); do
            awk '{ print $14 + $15 }' "/proc/$child/stat" 2>/dev/null || true
        done
    } | awk '{ s += $1 } END { print s }'
}

hz="$(getconf CLK_TCK)"
echo "records: $records in one database; queries: $n; $(nproc) cores; extension $(one -c "SELECT extversion FROM pg_extension WHERE extname = 'vigil'")"
for kind in hybrid query; do
    if [ "$kind" = hybrid ]; then
        search="vigil.hybrid_search(b.q, 10, 'bench', 'convex', 1, 1, b.v)"
    else
        search="vigil.query_embeddings(b.q, 'bench', 10, b.v)"
    fi
    "$VIGIL_ROOT/bench/vectordb/sql.sh" search "$account" "$key_one" "$n" "$search" > "$work/one.sql"
    "$VIGIL_ROOT/bench/vectordb/sql.sh" search "$account" "$key_many" "$n" "$search" > "$work/many.sql"
    for clients in 1 4; do
        for round in 1 2; do
            for side in one many; do
                if [ "$side" = one ]; then url="$single_url"; nodes=("$root/single"); else
                    url="$cluster_url"; nodes=("$root/cluster/coordinator" "$root/cluster/worker1" "$root/cluster/worker2"); fi
                before=(); for node in "${nodes[@]}"; do before+=("$(ticks "$node")"); done
                "$PG_BIN/pgbench" -n -M prepared -c "$clients" -j "$((clients < 2 ? 1 : 2))" -T "$seconds" \
                    -f "$work/$side.sql" "$url" > "$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
                tps="$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/out")"
                latency="$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$work/out")"
                done_="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")"
                cpu=""
                for i in "${!nodes[@]}"; do
                    after="$(ticks "${nodes[$i]}")"
                    cpu+=" $(basename "${nodes[$i]}") $(awk -v a="$after" -v b="${before[$i]}" -v n="$done_" -v hz="$hz" \
                        'BEGIN { printf "%.3f", (a - b) * 1000 / hz / n }') ms"
                done
                echo "RESULT $kind, $clients clients, round $round, $([ "$side" = one ] && echo "one server" || echo "cluster"): $tps searches/s, latency $latency ms; CPU a search:$cpu"
            done
        done
    done
done
echo "What a coordinator and N workers, each with this machine's $(nproc) cores, would serve: searches/s = min(cores / coordinator CPU a search, N x cores / worker CPU a search), the accounts spread evenly; from the 4-client rounds' CPU above."
