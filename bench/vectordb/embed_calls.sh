#!/usr/bin/env bash
# The model's calls in SQL, one backend, as the sidecar and storing make
# them: vigil.embed(text[]) over the 300 labelled queries with one word
# added (as bench.py's new queries) in calls of 1, 4 and 8 texts, and over
# 1,000 of the stored records (title and content) in calls of 100; three
# passes after a warm-up pass, each printed. Run on the bench-vectordb
# cluster after `make bench-vectordb` has stored its records:
#
#   bench/vectordb/embed_calls.sh
#
# BENCH_MODEL_DIR, when set, is the vigil.model_dir to run (a directory
# holding model.onnx, tokenizer.json and perhaps model-int8.onnx), to compare
# model files; the vigil.so installed must be able to feed that file.
set -euo pipefail
. "$(dirname "$0")/cluster.sh"
psql <<SQL 2>&1 | sed -n 's/.*RESULT //p'
${BENCH_MODEL_DIR:+SET vigil.model_dir = '$BENCH_MODEL_DIR';}
SET vigil.account = '$account';
CREATE TEMP TABLE q AS
SELECT row_number() OVER () AS i, q || ' ' || (ARRAY['fast','easy','small','good','best','latest','useful','common','basic','simple','modern','portable'])[1 + (row_number() OVER () % 12)::int] AS q
FROM (SELECT split_part(line, E'\t', 2) AS q
      FROM unnest(string_to_array(\$tsv\$$(tail -n +2 "$VIGIL_ROOT/bench/vectordb/queries.tsv")\$tsv\$, E'\n')) AS line) x
WHERE q <> '';
CREATE TEMP TABLE calls AS
SELECT 'the labelled queries, calls of ' || n AS kind, (i - 1) / n AS call, array_agg(q ORDER BY i) AS texts
FROM q, (VALUES (1), (4), (8)) AS sizes(n) GROUP BY 1, 2
UNION ALL
SELECT '1,000 stored records, calls of 100', (i - 1) / 100, array_agg(t ORDER BY i)
FROM (SELECT row_number() OVER (ORDER BY id) AS i, title || E'\n' || content AS t
      FROM (SELECT id, title, content FROM vigil.vector_records ORDER BY id LIMIT 1000) r) x
GROUP BY 1, 2;
DO \$\$
DECLARE k text; r record; t0 timestamptz; n int; ms float8;
BEGIN
    FOR k IN SELECT DISTINCT kind FROM calls ORDER BY 1 LOOP
        FOR pass IN 0..3 LOOP
            t0 := clock_timestamp(); n := 0;
            FOR r IN SELECT texts FROM calls WHERE kind = k ORDER BY call LOOP
                PERFORM count(*) FROM vigil.embed(r.texts);
                n := n + cardinality(r.texts);
            END LOOP;
            ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
            IF pass > 0 THEN
                RAISE NOTICE 'RESULT %, pass %: % ms a text, % texts/s', k, pass,
                    round((ms / n)::numeric, 3), round((n / ms * 1000)::numeric, 1);
            END IF;
        END LOOP;
    END LOOP;
END
\$\$;
SQL
