# Sourced by the scripts that run SQL on the bench-vectordb cluster after
# `make bench-vectordb` has stored its records (pgbench.sh, parts.sh): starts
# it (stopped again on exit, after the caller's own `cleanup`, if defined),
# prewarms it, and sets `psql` (superuser), DATABASE_URL (the application
# role), `account` (the bench's) and `key` (a fresh user key of it, not rate
# limited). `bench_queries` makes public.bench_queries: the 300 labelled
# queries with their embeddings, so a timed search runs no model.
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
dir="$VIGIL_STATE/bench-vectordb"
port="${BENCH_PG_PORT:-28818}"
cluster="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port")"
trap 'if declare -F cleanup >/dev/null; then cleanup; fi; "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT
psql() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At "$@"; }
export DATABASE_URL="$(sed -n 's/^DATABASE_URL=//p' <<<"$cluster")"
export VIGIL_ADMIN_DATABASE_URL="$(sed -n 's/^ADMIN_DATABASE_URL=//p' <<<"$cluster")"
psql -f "$VIGIL_ROOT/bench/vectordb/prewarm.sql" >/dev/null
account="bench@example.com"
key="$("$VIGIL_ROOT/target/release/vigil-sidecar" user-keys create --rate-per-second 100000 --burst 100000 "$account" 2>/dev/null)"

bench_queries() { "$VIGIL_ROOT/bench/vectordb/sql.sh" queries | psql; }
