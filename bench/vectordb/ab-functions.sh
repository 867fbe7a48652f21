#!/usr/bin/env bash
# The searches' SQL functions of an earlier version against this one's, on
# one installation (the bench-vectordb cluster, after `make bench-vectordb`
# has stored its records): the earlier full script's vigil._nearest,
# vigil.query_embeddings and vigil.hybrid_search are made again in a schema
# `old`, beside the installed ones, and pgbench runs each search as the
# sidecar sends it (sql.sh search), 4 clients, BENCH_SECONDS (12) each, the
# old and new alternated BENCH_ROUNDS (4) times. Same records, same server,
# same build: only the functions differ. For example, 0.13.0's:
#
#   bench/vectordb/ab-functions.sh extension/sql/vigil--0.13.0.sql
#   git show e4d4608:extension/sql/vigil--0.12.0.sql > /tmp/old.sql   # one no longer kept
#
# The earlier functions must call only what this version still has.
set -euo pipefail
old_script="$(realpath "${1:?usage: ab-functions.sh EARLIER_FULL_SCRIPT.sql}")"
work="$(mktemp -d)"
cleanup() { psql -c "DROP SCHEMA IF EXISTS old CASCADE" >/dev/null 2>&1 || true; rm -rf "$work"; }
. "$(dirname "$0")/cluster.sh"
python3 - "$old_script" > "$work/old.sql" <<'PY'
import re, sys
full = open(sys.argv[1]).read()
print("CREATE SCHEMA IF NOT EXISTS old; GRANT USAGE ON SCHEMA old TO vigil_app;")
for name in ["_nearest", "query_embeddings", "hybrid_search"]:
    found = re.search(r"^CREATE FUNCTION vigil\." + name + r"\(.*?^\$\$;\n", full, re.S | re.M)
    if not found:
        sys.exit(f"{sys.argv[1]} has no vigil.{name}")
    print(found.group(0).replace("CREATE FUNCTION vigil." + name, "CREATE OR REPLACE FUNCTION old." + name, 1)
          .replace("vigil._nearest(", "old._nearest("))
PY
psql < "$work/old.sql" >/dev/null
bench_queries >/dev/null
n="$(psql -c "SELECT count(*) FROM public.bench_queries")"
for schema in old vigil; do
    for kind in hybrid query; do
        if [ "$kind" = hybrid ]; then search="$schema.hybrid_search(b.q, 10, 'bench', 'rrf', 1, 1, b.v)"; else
            search="$schema.query_embeddings(b.q, 'bench', 10, b.v)"; fi
        "$VIGIL_ROOT/bench/vectordb/sql.sh" search "$account" "$key" "$n" "$search" > "$work/$kind-$schema.sql"
    done
done
echo "earlier: $old_script; installed: $(psql -c "SELECT extversion FROM pg_extension WHERE extname = 'vigil'")"
for round in $(seq "${BENCH_ROUNDS:-4}"); do
    for kind in hybrid query; do
        for schema in old vigil; do
            "$PG_BIN/pgbench" -n -M prepared -c 4 -j 2 -T "${BENCH_SECONDS:-12}" -f "$work/$kind-$schema.sql" \
                "$DATABASE_URL" > "$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
            echo "RESULT round $round, $kind, $([ "$schema" = old ] && echo earlier || echo installed): $(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/out") searches/s"
        done
    done
done
