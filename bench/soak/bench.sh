#!/usr/bin/env bash
# `make bench-soak`: a mixed workload at a steady rate for BENCH_SOAK_SECONDS
# (default 1,800: 30 minutes) on a cluster of its own (.vigil/bench-soak, port
# 28825) and a sidecar in front of it (port 28826): risk assessments with
# feedback labels, identity checks, stores, searches and listings of several
# accounts, and refused requests (wrong keys, bad bodies), BENCH_SOAK_RATE
# (default 20) requests a second. Every BENCH_SOAK_SAMPLE seconds (default 60)
# it records the errors so far and the resident memory of the sidecar and of
# each database backend; at the end it prints the table and the growth after
# warm-up (the first sample). bench/soak/soak.py makes the requests.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

port="${BENCH_PG_PORT:-28825}"
http_port="${BENCH_HTTP_PORT:-28826}"
dir="$VIGIL_STATE/bench-soak"
mkdir -p "$VIGIL_STATE"

cluster="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port")"
sidecar=""
trap '[ -z "$sidecar" ] || kill "$sidecar" 2>/dev/null || true; "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT
export VIGIL_ADMIN_DATABASE_URL="$(sed -n 's/^ADMIN_DATABASE_URL=//p' <<<"$cluster")"
database_url="$(sed -n 's/^DATABASE_URL=//p' <<<"$cluster")"
bin="$VIGIL_ROOT/target/release/vigil-sidecar"

DATABASE_URL="$database_url" "$bin" serve --listen "127.0.0.1:$http_port" \
    --risk-refit-seconds 300 > "$dir.sidecar.out" 2> "$dir.sidecar.log" &
sidecar=$!
for _ in $(seq 100); do
    grep -q "listening" "$dir.sidecar.out" 2>/dev/null && break
    sleep 0.1
done

# The superuser's psql, for the backends' pids.
psql_cmd="$VIGIL_ROOT/scripts/pg-cluster.sh psql $dir -X -q -At"
api_key="$("$bin" keys create --name "soak $(date +%s)")"
accounts=()
for i in 1 2 3; do
    account="soak$i-$(date +%s)@example.com"
    "$bin" accounts create "$account" >/dev/null
    accounts+=("$account=$("$bin" user-keys create "$account")")
done

step "soak: ${BENCH_SOAK_SECONDS:-1800} s at ${BENCH_SOAK_RATE:-20} requests/s"
python3 "$VIGIL_ROOT/bench/soak/soak.py" \
    --base "http://127.0.0.1:$http_port" --api-key "$api_key" \
    --sidecar-pid "$sidecar" --psql "$psql_cmd" \
    --seconds "${BENCH_SOAK_SECONDS:-1800}" --rate "${BENCH_SOAK_RATE:-20}" \
    --sample "${BENCH_SOAK_SAMPLE:-60}" "${accounts[@]}"
