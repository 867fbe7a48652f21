#!/usr/bin/env bash
# `make bench-risk`: the transaction risk engine's speed, on a cluster of its own
# (.vigil/bench-risk, port 28817) holding BENCH_HISTORY (default 1,000,000)
# recorded transactions.
#
# 1. In the database, one backend (one core): SELECT vigil.risk_score(...) over
#    BENCH_FRESH (default 10,000) new transactions, BENCH_PASSES (default 5)
#    times with the median reported, each against the baseline of
#    inserting the same rows into vigil.transactions one statement at a time
#    (the cost of recording alone), measured in the same transaction, which is
#    rolled back.
# 2. Over HTTP: wrk, 64 connections, BENCH_SECONDS (default 20) per run, on
#    POST /api/transaction with a different customer per request, against the
#    baseline of GET /healthz (one database round trip) on the same sidecar,
#    which holds BENCH_POOL (default 8) database connections.
#
# The cluster has shared_buffers 1GB, max_wal_size 8GB and checkpoint_timeout
# 30min (so no checkpoint falls in a run), its relations are prewarmed, and it
# is stopped at the end.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

history="${BENCH_HISTORY:-1000000}"
fresh="${BENCH_FRESH:-10000}"
passes="${BENCH_PASSES:-5}"
seconds="${BENCH_SECONDS:-20}"
pool="${BENCH_POOL:-8}"
port="${BENCH_PG_PORT:-28817}"
dir="$VIGIL_STATE/bench-risk"
mkdir -p "$VIGIL_STATE"

if ! command -v wrk >/dev/null; then
    step "installing wrk"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi

# A cluster made by an older build of the extension is remade (its data is synthetic).
cluster_up() {
    cluster="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port")" || {
        "$VIGIL_ROOT/scripts/pg-cluster.sh" remove "$dir"
        cluster="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port")"
    }
}
cluster_up
sidecar=""
trap '[ -z "$sidecar" ] || kill "$sidecar" 2>/dev/null || true; "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT
database_url="$(sed -n 's/^DATABASE_URL=//p' <<<"$cluster")"
export VIGIL_ADMIN_DATABASE_URL="$(sed -n 's/^ADMIN_DATABASE_URL=//p' <<<"$cluster")"
psql() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At "$@"; }

# Sized for the data (history and indexes fit in shared buffers), and no
# checkpoint during a run: each figure is the steady state, not a checkpoint's
# burst of full-page writes. The rest is PostgreSQL's defaults, durable commits
# included.
if [ "$(psql -c "SHOW shared_buffers")" != "1GB" ]; then
    step "tuning the bench cluster (shared_buffers 1GB, max_wal_size 8GB, checkpoint_timeout 30min; restart)"
    psql -c "ALTER SYSTEM SET shared_buffers = '1GB'" -c "ALTER SYSTEM SET max_wal_size = '8GB'" \
         -c "ALTER SYSTEM SET checkpoint_timeout = '30min'"
    "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"
    cluster_up
fi

loaded="$(psql -c "SELECT count(*) FROM vigil.transactions")"
if [ "$loaded" -lt "$history" ]; then
    step "loading $history history rows (once; kept in $dir)"
    psql <<SQL
TRUNCATE vigil.transactions CASCADE;
-- 200k customers, 150k devices, 100k IPs, 150k cards over the last 30 days.
INSERT INTO vigil.transactions (received_at, occurred_at, request, features, score, level, result, confidence,
                                reasons, email, device, ip, card, amount)
SELECT at, at, '{}', '{}', s, 4, 'Passed', 'Medium', '[]',
       'user' || (random() * 200000)::int || '@example.com',
       'device-' || (random() * 150000)::int,
       '10.' || (random() * 255)::int || '.' || (random() * 255)::int || '.' || (random() * 255)::int,
       'card-' || (random() * 150000)::int,
       round((exp(random() * 6))::numeric, 2)
FROM (SELECT (random() * 100)::real AS s, now() - random() * interval '30 days' AS at
      FROM generate_series(1, $history)) g;
VACUUM ANALYZE vigil.transactions;
CHECKPOINT;
SQL
fi
psql -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" \
     -c "SELECT pg_prewarm(c.oid) FROM pg_class c WHERE c.oid = 'vigil.transactions'::regclass
           OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'vigil.transactions'::regclass)" >/dev/null

step "in-database: $passes passes of $fresh fresh transactions, one backend"
# In one transaction that is rolled back, so runs leave the history as loaded.
# This machine's speed wanders by a third from one pass to the next, so each
# pass has its own baseline and the median pass is the figure.
psql <<SQL > "$dir/db.txt" 2>&1
CREATE TEMP TABLE inputs AS
SELECT p AS pass, jsonb_build_object(
    'customerEmail', 'user' || (random() * 250000)::int || '@example.com',
    'amount', round((exp(random() * 7))::numeric, 2),
    'deviceFingerprint', 'device-' || (random() * 160000)::int,
    'ipAddress', '10.' || (random() * 255)::int || '.' || (random() * 255)::int || '.' || (random() * 255)::int,
    'paymentMethod', 'credit card', 'customerName', 'Customer ' || i,
    'billingAddress', i || ' Main St, Springfield, USA', 'shippingAddress', i || ' Main St, Springfield, USA',
    'isVPN', random() < 0.1, 'accountAge', (random() * 2000)::int, 'orderQuantity', 1 + (random() * 3)::int,
    'time', to_char(now() - random() * interval '1 day', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'strictness', 50) AS body
FROM generate_series(1, $passes) p, generate_series(1, $fresh) i;
BEGIN;
SELECT vigil.risk_score(body) FROM inputs LIMIT 50 \g /dev/null
DO \$\$
DECLARE t0 timestamptz; score_secs float8; insert_secs float8; r record;
        rates float8[] := '{}'; baselines float8[] := '{}';
BEGIN
    FOR p IN 1..$passes LOOP
        t0 := clock_timestamp();
        PERFORM vigil.risk_score(body) FROM inputs WHERE pass = p;
        score_secs := extract(epoch FROM clock_timestamp() - t0);
        t0 := clock_timestamp();
        -- The same rows into the same table, one statement each as risk_score
        -- records them: the cost of recording alone.
        FOR r IN SELECT body FROM inputs WHERE pass = p LOOP
            INSERT INTO vigil.transactions (request, features, score, level, result, confidence, reasons,
                                            email, device, ip, card, amount)
            VALUES (r.body, '{}', 50, 4, 'Passed', 'Medium', '[]', r.body->>'customerEmail', r.body->>'deviceFingerprint',
                    r.body->>'ipAddress', 'card-x', (r.body->>'amount')::float8);
        END LOOP;
        insert_secs := extract(epoch FROM clock_timestamp() - t0);
        rates := rates || ($fresh / score_secs);
        baselines := baselines || ($fresh / insert_secs);
        RAISE NOTICE 'RESULT pass %: risk_score % per second; recording alone % per second; ratio %', p,
            round($fresh / score_secs), round($fresh / insert_secs), round((insert_secs / score_secs)::numeric, 3);
    END LOOP;
    RAISE NOTICE 'RESULT median: risk_score % per second; recording alone % per second',
        round((SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(rates) x)::numeric),
        round((SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(baselines) x)::numeric);
END
\$\$;
ROLLBACK;
SQL
grep -h RESULT "$dir/db.txt" | sed 's/^NOTICE: *RESULT //'
# The rolled-back rows are dead tuples in the table and its five indexes:
# cleared now, or autovacuum would clear them in the middle of the HTTP run.
psql -c "VACUUM vigil.transactions"

step "HTTP: wrk, 64 connections, ${seconds}s each"
key_name="bench $(date +%s)"
key="$("$VIGIL_ROOT/target/release/vigil-sidecar" keys create --name "$key_name" \
       --rate-per-second 1000000 --burst 1000000 2>/dev/null)"
cat > "$dir/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["x-api-key"] = "$key"
local n = 0
request = function()
    n = n + 1
    local body = string.format('{"customerEmail":"wrk%d-%d@example.com","amount":%d,"deviceFingerprint":"device-%d","ipAddress":"10.1.%d.%d","paymentMethod":"credit card","isVPN":%s,"accountAge":%d,"strictness":50}',
        math.random(1, 1000000), n, math.random(1, 2000), math.random(1, 160000),
        math.random(0, 255), math.random(0, 255), tostring(math.random() < 0.1), math.random(0, 2000))
    return wrk.format(nil, nil, nil, body)
end
LUA
"$VIGIL_ROOT/target/release/vigil-sidecar" serve --listen 127.0.0.1:0 --database-url "$database_url" \
    --pool-size "$pool" > "$dir/sidecar.out" 2> "$dir/sidecar.log" &
sidecar=$!
for _ in $(seq 50); do grep -q listening "$dir/sidecar.out" && break; sleep 0.1; done
base="$(sed -n 's/^vigil-sidecar listening on //p' "$dir/sidecar.out")"
wrk -t2 -c64 -d"${seconds}s" --latency "$base/healthz" > "$dir/wrk-healthz.txt"
wrk -t2 -c64 -d"${seconds}s" --latency -s "$dir/post.lua" "$base/api/transaction" > "$dir/wrk-transaction.txt"
summary() {
    local f="$1"
    printf '%-22s %10s req/s   p50 %8s   p99 %8s   non-2xx %s\n' "$2" \
        "$(awk '/Requests\/sec/ {print $2}' "$f")" \
        "$(awk '$1 == "50%" {print $2}' "$f")" "$(awk '$1 == "99%" {print $2}' "$f")" \
        "$(awk '/Non-2xx/ {print $NF}' "$f" | grep . || echo 0)"
}
summary "$dir/wrk-healthz.txt" "GET /healthz"
summary "$dir/wrk-transaction.txt" "POST /api/transaction"

# The requests' records go, so that the next run starts from the same history.
psql -c "DELETE FROM vigil.transactions WHERE api_key_id = (SELECT id FROM vigil.api_keys WHERE name = '$key_name')" \
     -c "VACUUM ANALYZE vigil.transactions"
