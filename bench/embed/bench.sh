#!/usr/bin/env bash
# `make bench-embed`: texts per second of vigil.embed through SQL, one at a time and
# in batches of 32, against raw ONNX Runtime (Python) on the same model file, the
# same texts and the same thread count, in one run; and a backend's memory with
# each model loaded.
#
# Texts: Debian package short descriptions (apt-cache dumpavail), the first
# BENCH_TEXTS (default 2000). Threads: BENCH_THREADS (default 2).
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

n="${BENCH_TEXTS:-2000}"
threads="${BENCH_THREADS:-2}"
port="${VIGIL_PG_PORT:-28815}"
dir="$VIGIL_STATE/bench"
mkdir -p "$dir"
chmod 755 "$VIGIL_STATE" "$dir"

texts="$dir/descriptions.txt"
apt-cache dumpavail | sed -n 's/^Description: //p' | awk '!seen[$0]++' > "$dir/all-descriptions.txt"
head -n "$n" "$dir/all-descriptions.txt" > "$texts"
chmod 644 "$texts"
count="$(wc -l < "$texts")"

if [ ! -x "$dir/venv/bin/python" ]; then
    step "Python venv with onnxruntime for the baseline"
    python3 -m venv "$dir/venv"
    "$dir/venv/bin/pip" install --quiet onnxruntime==1.31.1 tokenizers==0.22.1 numpy
fi

"$VIGIL_ROOT/scripts/pg-cluster.sh" up "$VIGIL_STATE/pg" "$port" >/dev/null
step "in-database: $count texts, $threads threads"
"$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$VIGIL_STATE/pg" -At <<SQL > "$dir/db.txt"
SET vigil.embed_threads = $threads;
CREATE TEMP TABLE bench_texts (i int GENERATED ALWAYS AS IDENTITY, txt text);
\copy bench_texts (txt) FROM '$texts' WITH (FORMAT csv, DELIMITER E'\x01', QUOTE E'\x02')
SELECT count(*) FROM vigil.embed('warm up') \g /dev/null
CREATE FUNCTION pg_temp.rate(batch int) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; n bigint; secs float8;
BEGIN
    t0 := clock_timestamp();
    IF batch = 1 THEN
        SELECT count(vigil.embed(txt)) INTO n FROM bench_texts;
    ELSE
        SELECT count(*) INTO n
        FROM (SELECT array_agg(txt ORDER BY i) AS a FROM bench_texts GROUP BY (i - 1) / batch) b,
             LATERAL vigil.embed(b.a) e;
    END IF;
    secs := extract(epoch FROM clock_timestamp() - t0);
    RETURN format('db batch=%s texts=%s seconds=%s texts_per_s=%s', batch, n, round(secs::numeric, 3), round((n / secs)::numeric, 1));
END \$\$;
SELECT pg_temp.rate(1);
SELECT pg_temp.rate(32);
SQL
cat "$dir/db.txt"

# Memory: a backend's resident set after loading each model (the int8 rewrite
# the extension prefers, and the published model), read from its own /proc.
published="$(published_model_dir)"
for model in "" "$published"; do
    "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$VIGIL_STATE/pg" -At <<SQL
SET vigil.model_dir = '$model';
SELECT count(*) FROM vigil.embed('load the model') \g /dev/null
SELECT 'RESULT backend with the ' || CASE WHEN '$model' = '' THEN 'default (int8)' ELSE 'published' END
       || ' model loaded: resident ' || round(substring(s FROM 'VmRSS:\s+(\d+)')::numeric / 1024)
       || ' MB, of which anonymous ' || round(substring(s FROM 'RssAnon:\s+(\d+)')::numeric / 1024) || ' MB'
FROM pg_read_file('/proc/self/status') AS s;
SQL
done | tee "$dir/memory.txt"

step "raw ONNX Runtime (Python): $count texts, $threads threads"
"$dir/venv/bin/python" "$VIGIL_ROOT/bench/embed/raw.py" "$(vigil_model_dir)" "$texts" "$threads" 1 32 | tee "$dir/raw.txt"

rate() { sed -n "s/^$1 batch=$2 .*texts_per_s=//p" "$dir/$3.txt"; }
echo
printf '| mode | vigil.embed (texts/s) | raw ONNX Runtime (texts/s) | ratio |\n|---|---|---|---|\n'
for b in 1 32; do
    db="$(rate db "$b" db)"; raw="$(rate raw "$b" raw)"
    printf '| batch %s | %s | %s | %.2fx |\n' "$b" "$db" "$raw" "$(awk -v a="$db" -v b="$raw" 'BEGIN { print a / b }')"
done
