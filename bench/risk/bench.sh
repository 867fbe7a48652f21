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
# With BENCH_BASE=REV (a git revision), the extension and sidecar as built at REV
# run beside this checkout's, in a relocated copy of the PostgreSQL installation
# (lib.sh: revision_pg) with a cluster of their own (.vigil/bench-risk-base, port
# 28823) holding the same history (the same random seed); the passes and the HTTP
# runs alternate between the two builds, so that the machine's drift falls on
# both, and each of this checkout's passes is also given as a ratio to the base's
# pass beside it. BENCH_HTTP_ROUNDS (default 1, or 2 with a base) rounds of HTTP.
#
# Each cluster has shared_buffers 1GB, max_wal_size 8GB and checkpoint_timeout
# 30min (so no checkpoint falls in a run), its relations are prewarmed, and it
# is stopped at the end.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

history="${BENCH_HISTORY:-1000000}"
fresh="${BENCH_FRESH:-10000}"
passes="${BENCH_PASSES:-5}"
seconds="${BENCH_SECONDS:-20}"
pool="${BENCH_POOL:-8}"
base="${BENCH_BASE:-}"
mkdir -p "$VIGIL_STATE"

if ! command -v wrk >/dev/null; then
    step "installing wrk"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi

# Per build: its cluster's directory and port, its pg_config, its sidecar.
declare -A DIR PORT CONFIG SIDECAR URL ADMIN_URL
builds=(current)
DIR[current]="$VIGIL_STATE/bench-risk" PORT[current]="${BENCH_PG_PORT:-28817}"
CONFIG[current]="$PG_CONFIG" SIDECAR[current]="$VIGIL_ROOT/target/release/vigil-sidecar"
if [ -n "$base" ]; then
    root="$(revision_pg "$base")"
    builds=(base current)
    DIR[base]="$VIGIL_STATE/bench-risk-base" PORT[base]="${BENCH_BASE_PG_PORT:-28823}"
    CONFIG[base]="$root/usr/lib/postgresql/15/bin/pg_config" SIDECAR[base]="$root/vigil-sidecar"
fi
rounds="${BENCH_HTTP_ROUNDS:-${#builds[@]}}"

cluster() { local b="$1"; shift; PG_CONFIG="${CONFIG[$b]}" "$VIGIL_ROOT/scripts/pg-cluster.sh" "$@"; }
psql() { local b="$1"; shift; cluster "$b" psql "${DIR[$b]}" -X -q -At "$@"; }

sidecar=""
cleanup() {
    [ -z "$sidecar" ] || kill "$sidecar" 2>/dev/null || true
    for b in "${builds[@]}"; do cluster "$b" down "${DIR[$b]}"; done
}
trap cleanup EXIT

# Starts build B's cluster, tuned and loaded (once), and prewarmed.
prepare() {
    local b="$1" out
    # A cluster made by an older build of the extension is remade (its data is synthetic).
    up() {
        out="$(cluster "$b" up "${DIR[$b]}" "${PORT[$b]}")" || {
            cluster "$b" remove "${DIR[$b]}"
            out="$(cluster "$b" up "${DIR[$b]}" "${PORT[$b]}")"
        }
    }
    up
    # Sized for the data (history and indexes fit in shared buffers), and no
    # checkpoint during a run: each figure is the steady state, not a checkpoint's
    # burst of full-page writes. The rest is PostgreSQL's defaults, durable commits
    # included.
    if [ "$(psql "$b" -c "SHOW shared_buffers")" != "1GB" ]; then
        step "tuning the $b build's bench cluster (shared_buffers 1GB, max_wal_size 8GB, checkpoint_timeout 30min; restart)"
        psql "$b" -c "ALTER SYSTEM SET shared_buffers = '1GB'" -c "ALTER SYSTEM SET max_wal_size = '8GB'" \
             -c "ALTER SYSTEM SET checkpoint_timeout = '30min'"
        cluster "$b" down "${DIR[$b]}"
        up
    fi
    URL[$b]="$(sed -n 's/^DATABASE_URL=//p' <<<"$out")"
    ADMIN_URL[$b]="$(sed -n 's/^ADMIN_DATABASE_URL=//p' <<<"$out")"

    local loaded occurred account_col account_val
    # A history loaded before the seed was fixed is loaded again.
    loaded="$(psql "$b" -c "SELECT CASE WHEN to_regclass('public.bench_seeded') IS NULL THEN 0
                                        ELSE (SELECT count(*) FROM vigil.transactions) END")"
    if [ "$loaded" -lt "$history" ]; then
        step "loading $history history rows into the $b build's cluster (once; kept in ${DIR[$b]})"
        # Event time is recorded from 0.5.0 on; the same seed gives every build the same history.
        occurred="$(psql "$b" -c "SELECT count(*) FROM pg_attribute
                                   WHERE attrelid = 'vigil.transactions'::regclass AND attname = 'occurred_at'")"
        IFS='|' read -r account_col account_val <<<"$(account_column "$b")"
        psql "$b" <<SQL
TRUNCATE vigil.transactions CASCADE;
SELECT setseed(0.25);
-- 200k customers, 150k devices, 100k IPs, 150k cards over the last 30 days.
INSERT INTO vigil.transactions (received_at, $([ "$occurred" = 1 ] && echo "occurred_at,") request, features, score,
                                level, result, confidence, reasons, email, device, ip, card, amount$account_col)
SELECT at, $([ "$occurred" = 1 ] && echo "at,") '{}', '{}', s, 4, 'Passed', 'Medium', '[]',
       'user' || (random() * 200000)::int || '@example.com',
       'device-' || (random() * 150000)::int,
       '10.' || (random() * 255)::int || '.' || (random() * 255)::int || '.' || (random() * 255)::int,
       'card-' || (random() * 150000)::int,
       round((exp(random() * 6))::numeric, 2)$account_val
FROM (SELECT (random() * 100)::real AS s, now() - random() * interval '30 days' AS at
      FROM generate_series(1, $history)) g;
CREATE TABLE IF NOT EXISTS public.bench_seeded ();
VACUUM ANALYZE vigil.transactions;
CHECKPOINT;
SQL
    fi
    # The fresh transactions of every pass, the same in every build's cluster.
    psql "$b" <<SQL
DROP TABLE IF EXISTS public.bench_inputs;
SELECT setseed(0.5);
CREATE TABLE public.bench_inputs AS
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
CREATE EXTENSION IF NOT EXISTS pg_prewarm;
SELECT count(pg_prewarm(c.oid)) FROM pg_class c WHERE c.oid = 'vigil.transactions'::regclass
    OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'vigil.transactions'::regclass) \g /dev/null
SQL
}

# `, account` and `, <the default account>` where vigil.transactions has it
# (0.17.0 on; tenants), else nothing: the column and the value to insert.
account_column() {
    local b="$1" has
    has="$(psql "$b" -c "SELECT count(*) FROM pg_attribute
                          WHERE attrelid = 'vigil.transactions'::regclass AND attname = 'account'")"
    if [ "$has" = 1 ]; then echo ", account|, vigil.default_account()"; else echo "|"; fi
}

# One in-database pass on build B: prints "assessments/s recording-alone/s".
# In one transaction that is rolled back, so runs leave the history as loaded;
# the first 50 assessments of a session (loading the library) are not timed.
db_pass() {
    local b="$1" p="$2" account_col account_val
    IFS='|' read -r account_col account_val <<<"$(account_column "$b")"
    psql "$b" <<SQL 2>&1 | sed -n 's/^NOTICE: *RESULT //p'
BEGIN;
SELECT vigil.risk_score(body) FROM public.bench_inputs WHERE pass = $p LIMIT 50 \g /dev/null
DO \$\$
DECLARE t0 timestamptz; score_secs float8; insert_secs float8; r record;
BEGIN
    t0 := clock_timestamp();
    PERFORM vigil.risk_score(body) FROM public.bench_inputs WHERE pass = $p;
    score_secs := extract(epoch FROM clock_timestamp() - t0);
    t0 := clock_timestamp();
    -- The same rows into the same table, one statement each as risk_score
    -- records them: the cost of recording alone.
    FOR r IN SELECT body FROM public.bench_inputs WHERE pass = $p LOOP
        INSERT INTO vigil.transactions (request, features, score, level, result, confidence, reasons,
                                        email, device, ip, card, amount$account_col)
        VALUES (r.body, '{}', 50, 4, 'Passed', 'Medium', '[]', r.body->>'customerEmail', r.body->>'deviceFingerprint',
                r.body->>'ipAddress', 'card-x', (r.body->>'amount')::float8$account_val);
    END LOOP;
    insert_secs := extract(epoch FROM clock_timestamp() - t0);
    RAISE NOTICE 'RESULT % %', round($fresh / score_secs), round($fresh / insert_secs);
END
\$\$;
ROLLBACK;
SQL
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

for b in "${builds[@]}"; do prepare "$b"; done

step "in-database: $passes passes of $fresh fresh transactions, one backend${base:+, alternating with the base ($base)}"
# This machine's speed wanders by a third from one pass to the next, so each
# pass has its own baseline and the median pass is the figure.
results="${DIR[current]}/db.txt"
: > "$results"
for p in $(seq "$passes"); do
    for b in "${builds[@]}"; do
        read -r rate alone < <(db_pass "$b" "$p")
        [ -n "${alone:-}" ] || die "pass $p on the $b build gave no result"
        echo "$b $p $rate $alone" >> "$results"
        printf '%-8s pass %2d: risk_score %6s per second; recording alone %6s per second; ratio %s\n' \
            "$b" "$p" "$rate" "$alone" "$(awk -v r="$rate" -v a="$alone" 'BEGIN { printf "%.3f", r / a }')"
    done
done
for b in "${builds[@]}"; do
    printf '%-8s median: risk_score %s per second; recording alone %s per second; ratio %s (median of passes)\n' "$b" \
        "$(awk -v b="$b" '$1 == b { print $3 }' "$results" | median)" \
        "$(awk -v b="$b" '$1 == b { print $4 }' "$results" | median)" \
        "$(awk -v b="$b" '$1 == b { printf "%.4f\n", $3 / $4 }' "$results" | median)"
done
if [ -n "$base" ]; then
    # Each pass of this checkout against the base's pass just before it.
    ratios="$(awk '$1 == "base" { r[$2] = $3 } $1 == "current" { printf "%.4f\n", $3 / r[$2] }' "$results" | sort -n)"
    printf 'current / base, pass by pass: median %s (lowest %s, highest %s, %s pairs)\n' \
        "$(median <<<"$ratios")" "$(head -1 <<<"$ratios")" "$(tail -1 <<<"$ratios")" "$(wc -l <<<"$ratios")"
fi
# The rolled-back rows are dead tuples in the table and its indexes: cleared
# now, or autovacuum would clear them in the middle of the HTTP run.
for b in "${builds[@]}"; do psql "$b" -c "VACUUM vigil.transactions"; done

step "HTTP: wrk, 64 connections, ${seconds}s each, $rounds round(s)"
summary() {
    local f="$1"
    printf '%-8s %-22s %10s req/s   p50 %8s   p99 %8s   non-2xx %s\n' "$2" "$3" \
        "$(awk '/Requests\/sec/ {print $2}' "$f")" \
        "$(awk '$1 == "50%" {print $2}' "$f")" "$(awk '$1 == "99%" {print $2}' "$f")" \
        "$(awk '/Non-2xx/ {print $NF}' "$f" | grep . || echo 0)"
}
http_run() {
    local b="$1" dir="${DIR[$1]}" key_name key base_url
    key_name="bench $(date +%s%N)"
    key="$(VIGIL_ADMIN_DATABASE_URL="${ADMIN_URL[$b]}" "${SIDECAR[$b]}" keys create --name "$key_name" \
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
    VIGIL_ADMIN_DATABASE_URL="${ADMIN_URL[$b]}" DATABASE_URL="${URL[$b]}" "${SIDECAR[$b]}" serve \
        --listen 127.0.0.1:0 --pool-size "$pool" > "$dir/sidecar.out" 2> "$dir/sidecar.log" &
    sidecar=$!
    # Up to 30 s: at start the sidecar loads the model for its query
    # embedders, which on a busy machine took longer than 5 s.
    for _ in $(seq 300); do grep -q listening "$dir/sidecar.out" && break; sleep 0.1; done
    base_url="$(sed -n 's/^vigil-sidecar listening on //p' "$dir/sidecar.out")"
    [ -n "$base_url" ] || die "the $b build's sidecar did not start: $(cat "$dir/sidecar.log")"
    wrk -t2 -c64 -d"${seconds}s" --latency "$base_url/healthz" > "$dir/wrk-healthz.txt"
    wrk -t2 -c64 -d"${seconds}s" --latency -s "$dir/post.lua" "$base_url/api/transaction" > "$dir/wrk-transaction.txt"
    kill "$sidecar"; wait "$sidecar" 2>/dev/null || true; sidecar=""
    summary "$dir/wrk-healthz.txt" "$b" "GET /healthz"
    summary "$dir/wrk-transaction.txt" "$b" "POST /api/transaction"
    # The requests' records go, so that the next run starts from the same history.
    psql "$b" -c "DELETE FROM vigil.transactions WHERE api_key_id = (SELECT id FROM vigil.api_keys WHERE name = '$key_name')" \
         -c "VACUUM ANALYZE vigil.transactions"
}
for _ in $(seq "$rounds"); do
    for b in "${builds[@]}"; do http_run "$b"; done
done
