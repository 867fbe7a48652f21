#!/usr/bin/env bash
# `make bench-vectordb`: the vector database over real HTTP, on a cluster of its
# own (.vigil/bench-vectordb, port 28818, shared_buffers 1GB) and a sidecar in
# front of it: storing BENCH_RECORDS (default 100,000) records through
# /storeEmbeddings against the raw vigil.embed batch throughput, then p50/p99
# of /queryEmbeddings and /hybridSearch with 16 concurrent clients, in the big
# database and in one holding 1% as many records. bench/vectordb/bench.py says
# how each figure is made (BENCH_MODEL, below, picks the model file;
# BENCH_POOL_SIZE, when set, is the sidecar's --pool-size, else its default;
# BENCH_SIDECAR, when set, is the sidecar binary to run, to compare builds).
# Storing 100,000 records embeds them all: on 2 cores, 7 to 15 minutes.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

port="${BENCH_PG_PORT:-28818}"
http_port="${BENCH_HTTP_PORT:-28819}"
dir="$VIGIL_STATE/bench-vectordb"
mkdir -p "$VIGIL_STATE"

# The records are paragraphs of Debian's package descriptions, whose long text
# is in apt's English translation index (this image's apt leaves it out).
if ! ls /var/lib/apt/lists/*_i18n_Translation-en* >/dev/null 2>&1; then
    step "fetching apt's English package descriptions (apt-get update -o Acquire::Languages=en)"
    "${SUDO[@]}" apt-get update -qq -o Acquire::Languages=en >/dev/null
fi

# The 16 clients of the timed searches are wrk's (a C event loop: a few
# percent of one core, where Python's threads took a sixth to a quarter of
# one of the two the server runs on); BENCH_DRIVER=python uses those threads.
if [ "${BENCH_DRIVER:-wrk}" = wrk ] && ! command -v wrk >/dev/null; then
    step "installing wrk"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi

cluster="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port")"
sidecar=""
trap '[ -z "$sidecar" ] || kill "$sidecar" 2>/dev/null || true; "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT
psql() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At "$@"; }
if [ "$(psql -c "SHOW shared_buffers")" != "1GB" ]; then
    step "tuning the bench cluster (shared_buffers 1GB, max_wal_size 8GB; restart)"
    psql -c "ALTER SYSTEM SET shared_buffers = '1GB'" -c "ALTER SYSTEM SET max_wal_size = '8GB'"
    "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"
    cluster="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port")"
fi
# BENCH_MODEL=published runs every embedding (stores and searches) on the
# published model.onnx rather than the int8 rewrite the extension prefers, to
# measure one against the other; unset, the cluster uses the default.
if [ "${BENCH_MODEL:-}" = published ]; then
    published="$(published_model_dir)"
    psql -c "LOAD 'vigil'" -c "ALTER SYSTEM SET vigil.model_dir = '$published'"
else
    [ -z "${BENCH_MODEL:-}" ] || die "BENCH_MODEL is 'published' or unset"
    psql -c "LOAD 'vigil'" -c "ALTER SYSTEM RESET vigil.model_dir"
fi
psql -c "SELECT pg_reload_conf()" >/dev/null
psql -f "$VIGIL_ROOT/bench/vectordb/prewarm.sql" >/dev/null
export DATABASE_URL="$(sed -n 's/^DATABASE_URL=//p' <<<"$cluster")"
export VIGIL_ADMIN_DATABASE_URL="$(sed -n 's/^ADMIN_DATABASE_URL=//p' <<<"$cluster")"
bin="${BENCH_SIDECAR:-$VIGIL_ROOT/target/release/vigil-sidecar}"

account="bench@example.com"
"$bin" accounts create "$account" >/dev/null
# A key whose own rate limit does not throttle the 16 clients.
VIGIL_USER_KEY="$("$bin" user-keys create --rate-per-second 100000 --burst 100000 "$account")"
export VIGIL_USER_KEY VIGIL_ACCOUNT="$account" VIGIL_HTTP="http://127.0.0.1:$http_port"
export PSQL="$VIGIL_ROOT/scripts/pg-cluster.sh psql $dir -X -q -At"

VIGIL_HTTP_ADDR="127.0.0.1:$http_port" "$bin" serve ${BENCH_POOL_SIZE:+--pool-size "$BENCH_POOL_SIZE"} 2>"$dir/sidecar.log" &
sidecar=$!
for _ in $(seq 50); do curl -fs "$VIGIL_HTTP/healthz" >/dev/null && break; sleep 0.2; done

python3 "$VIGIL_ROOT/bench/vectordb/bench.py" | tee "$dir/result.txt"
