#!/usr/bin/env bash
# `make bench-identity`: identity checks on a 2-megapixel JPEG of a synthetic
# card, on a cluster of its own (.vigil/bench-identity, port 28820) with a
# sidecar in front (28821):
#   1. in-process on one thread: decoding alone (the baseline) against the
#      whole assessment (crates/identity/examples/identity_bench.rs);
#   2. vigil.assess_id in SQL, one backend (pgbench, BENCH_RUNS transactions),
#      with the MRZ read and without (vigil.model_dir set where no recogniser
#      is, so the zone is not looked for), on the card and on a photo of a
#      passport's data page of the same size;
#   3. POST /assess-id over HTTP, one client (curl, BENCH_RUNS requests);
#   4. the duplicate lookup among BENCH_HASHES (default 1,000,000) stored
#      hashes: hits (a stored hash with one bit changed) and misses, against an
#      exact scan of every stored hash in the same run.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

port="${BENCH_PG_PORT:-28820}"
http_port="${BENCH_HTTP_PORT:-28821}"
runs="${BENCH_RUNS:-50}"
hashes="${BENCH_HASHES:-1000000}"
dir="$VIGIL_STATE/bench-identity"
mkdir -p "$VIGIL_STATE"
# pg_read_binary_file runs as the server's user: the image sits where it can read it.
image="$(mktemp /tmp/vigil-bench-identity-XXXXXX.jpg)"
passport="$(mktemp /tmp/vigil-bench-passport-XXXXXX.jpg)"
chmod 644 "$image" "$passport"

step "in-process, one thread"
BENCH_PASSPORT="$passport" cargo run --locked --release -q -p vigil-identity --features synthetic --example identity_bench -- "$image" "$runs"

"$VIGIL_ROOT/scripts/pg-cluster.sh" remove "$dir" >/dev/null 2>&1 || true
cluster="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port")"
sidecar=""
trap 'rm -f "$image" "$passport"; [ -z "$sidecar" ] || kill "$sidecar" 2>/dev/null || true; "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT
psql() { "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At "$@"; }
pgbench_latency() { # script file, then pgbench options; prints the average latency in ms
    "$VIGIL_ROOT/scripts/pg-cluster.sh" pgbench "$dir" -n -f "$@" 2>"$dir/pgbench.err" \
        | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p'
}

step "vigil.assess_id in SQL, one backend, $runs assessments"
psql -c "CREATE TABLE bench_image AS SELECT pg_read_binary_file('$image') AS bytes" \
     -c "CREATE TABLE bench_passport AS SELECT pg_read_binary_file('$passport') AS bytes"
cat >"$dir/assess.sql" <<'SQL'
SELECT vigil.assess_id(bytes) FROM bench_image;
SQL
# Without the MRZ: no recogniser where vigil.model_dir points (a check of a
# file's existence an assessment), so the zone is not looked for.
cat >"$dir/assess-no-mrz.sql" <<'SQL'
SET vigil.model_dir = '/nonexistent';
SELECT vigil.assess_id(bytes) FROM bench_image;
SQL
sed 's/bench_image/bench_passport/' "$dir/assess.sql" >"$dir/passport.sql"
sed 's/bench_image/bench_passport/' "$dir/assess-no-mrz.sql" >"$dir/passport-no-mrz.sql"
sed 's/^SET .*/SET vigil.identity_mrz_threads = 2;/' "$dir/passport-no-mrz.sql" >"$dir/passport-2-threads.sql"
mrz="$(psql -c "SELECT vigil.assess_id(bytes)->'checks'->'mrz'->>'outcome' FROM bench_image" \
            -c "SELECT vigil.assess_id(bytes)->'checks'->'mrz'->'metrics'->>'allCheckDigitsValid' FROM bench_passport")"
sql_ms="$(pgbench_latency "$dir/assess.sql" -c 1 -t "$runs")"
sql_no_mrz_ms="$(pgbench_latency "$dir/assess-no-mrz.sql" -c 1 -t "$runs")"
passport_ms="$(pgbench_latency "$dir/passport.sql" -c 1 -t "$runs")"
passport_no_mrz_ms="$(pgbench_latency "$dir/passport-no-mrz.sql" -c 1 -t "$runs")"
passport_2_ms="$(pgbench_latency "$dir/passport-2-threads.sql" -c 1 -t "$runs")"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
echo "  vigil.assess_id: $sql_ms ms per assessment (pgbench average, one client)"
echo "    without the MRZ read: $sql_no_mrz_ms ms ($(ratio "$sql_ms" "$sql_no_mrz_ms")x with it; the card's mrz check: $(sed -n 1p <<<"$mrz"))"
echo "  a passport page: $passport_ms ms, without the MRZ read $passport_no_mrz_ms ms ($(ratio "$passport_ms" "$passport_no_mrz_ms")x; every check digit read: $(sed -n 2p <<<"$mrz"))"
echo "    the recogniser on 2 threads (vigil.identity_mrz_threads): $passport_2_ms ms ($(ratio "$passport_2_ms" "$passport_no_mrz_ms")x without the read)"
sql2_ms="$(pgbench_latency "$dir/assess.sql" -c 2 -j 2 -t "$runs")"
echo "  two clients on the 2 cores: $sql2_ms ms average latency, $(awk -v l="$sql2_ms" 'BEGIN{printf "%.1f", 2000/l}') assessments/s"

step "POST /assess-id over HTTP, one client, $runs requests"
export DATABASE_URL="$(sed -n 's/^DATABASE_URL=//p' <<<"$cluster")"
export VIGIL_ADMIN_DATABASE_URL="$(sed -n 's/^ADMIN_DATABASE_URL=//p' <<<"$cluster")"
bin="$VIGIL_ROOT/target/release/vigil-sidecar"
key="$("$bin" keys create --name bench --scope identity --rate-per-second 100000 --burst 100000)"
VIGIL_HTTP_ADDR="127.0.0.1:$http_port" "$bin" serve 2>"$dir/sidecar.log" &
sidecar=$!
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$http_port/healthz" >/dev/null && break; sleep 0.2; done
for _ in $(seq "$runs"); do
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "x-api-key: $key" \
        -F "image=@$image;type=image/jpeg" "http://127.0.0.1:$http_port/assess-id"
done >"$dir/http.txt"
if grep -qv '^200 ' "$dir/http.txt"; then echo "  some requests failed:"; sort "$dir/http.txt" | uniq -c | head; exit 1; fi
awk '{print $2 * 1000}' "$dir/http.txt" | sort -n | awk '{a[NR]=$1} END {printf "  /assess-id: p50 %.1f ms, p90 %.1f ms per request\n", a[int(NR*0.5)+1], a[int(NR*0.9)+1]}'

step "duplicate lookup among $hashes stored hashes"
psql -c "DELETE FROM vigil.identity_assessments" \
     -c "DROP INDEX vigil.identity_assessments_phash" \
     -c "INSERT INTO vigil.identity_assessments
             (id, sha256, phash, result, level, score, confidence, decision, reasons,
              format, width, height, bytes, response, account)
         SELECT gen_random_uuid(), sha256(i::text::bytea), sha256(i::text::bytea),
                'Passed', 5, 0, 'High', 'accept', '{}', 'JPEG', 1, 1, 1, '{}', vigil.default_account()
         FROM generate_series(1, $hashes) i" \
     -c "CREATE INDEX identity_assessments_phash ON vigil.identity_assessments
             USING gin (phash_bands) WITH (fastupdate = off)" \
     -c "VACUUM ANALYZE vigil.identity_assessments"
# The lookup vigil.assess_id makes (vigil._identity_duplicate, identity/schema.sql).
lookup() { # the hash expression
    printf '\\set i random(1, %s)\nSELECT * FROM vigil._identity_duplicate(%s, 24, vigil.default_account());\n' "$hashes" "$1"
}
hit="set_bit(sha256(:i::text::bytea), 5, 1 - get_bit(sha256(:i::text::bytea), 5))"
lookup "$hit" >"$dir/hit.sql"
lookup "sha256(('miss ' || :i)::bytea)" >"$dir/miss.sql"
hit_ms="$(pgbench_latency "$dir/hit.sql" -c 1 -T 10)"
miss_ms="$(pgbench_latency "$dir/miss.sql" -c 1 -T 10)"
found="$(psql -c "SELECT distance FROM vigil._identity_duplicate(set_bit(sha256('77'::bytea), 5, 1 - get_bit(sha256('77'::bytea), 5)), 24, vigil.default_account())")"
[ "$found" = 1 ] || { echo "the lookup did not find a stored hash one bit away (got '$found')"; exit 1; }
scan_start=$(date +%s%N)
psql -c "SELECT min(vigil._phash_distance(phash, sha256('miss'::bytea))) FROM vigil.identity_assessments" >/dev/null
scan_ms=$(( ($(date +%s%N) - scan_start) / 1000000 ))
echo "  band-index lookup: hit $hit_ms ms, miss $miss_ms ms (pgbench average, 10 s each)"
echo "  exact scan of every stored hash: $scan_ms ms ($(awk -v s="$scan_ms" -v m="$miss_ms" 'BEGIN{printf "%.0f", s/m}')x the lookup)"
