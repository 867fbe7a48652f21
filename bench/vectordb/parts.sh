#!/usr/bin/env bash
# The parts of a search in SQL, one backend, the query's embedding given:
# vigil.hybrid_search (k 10) against vigil.query_embeddings (k 10) and the two
# branches hybrid search fetches, vigil._nearest and vigil._keyword_ranked
# (30 each, as for k 10), the latter also with a common word added to each
# query as bench.py's new hybrid queries have. Milliseconds a query, the best
# of 4 passes over the 300 labelled queries, as the application role. Run on
# the bench-vectordb cluster after `make bench-vectordb` has stored its
# records:
#
#   bench/vectordb/parts.sh
set -euo pipefail
. "$(dirname "$0")/cluster.sh"
psql <<SQL
DROP TABLE IF EXISTS public.bench_parts;
CREATE TABLE public.bench_parts AS
SELECT q, q || ' ' || (ARRAY['fast','easy','small','good','best','latest','useful','common','basic','simple','modern','portable'])[1 + (row_number() OVER () % 12)::int] AS q_common,
       vigil.embed(q) AS v
FROM (SELECT split_part(line, E'\t', 2) AS q
      FROM unnest(string_to_array(\$tsv\$$(tail -n +2 "$VIGIL_ROOT/bench/vectordb/queries.tsv")\$tsv\$, E'\n')) AS line) x
WHERE q <> '';
GRANT SELECT ON public.bench_parts TO vigil_app;
SQL
"$PG_BIN/psql" "$DATABASE_URL" -X -q -At <<SQL
BEGIN;
SELECT 1 FROM vigil.enter_account('$account', '$key', 'bench') \g /dev/null
CREATE FUNCTION pg_temp.ms(kind text) RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; n int; r record; best float8 := 'infinity'; db bigint := vigil._database('bench');
BEGIN
    FOR pass IN 1..4 LOOP
        t0 := clock_timestamp(); n := 0;
        FOR r IN SELECT q, q_common, v FROM public.bench_parts LOOP
            CASE kind
            WHEN 'hybrid_search' THEN PERFORM count(*) FROM vigil.hybrid_search(r.q, 10, 'bench', 'rrf', 1, 1, r.v);
            WHEN 'query_embeddings' THEN PERFORM count(*) FROM vigil.query_embeddings(r.q, 'bench', 10, r.v);
            WHEN '_nearest 30' THEN PERFORM count(*) FROM vigil._nearest(db, r.v, 30);
            WHEN '_keyword_ranked 30' THEN PERFORM count(*) FROM vigil._keyword_ranked(db, r.q, 30);
            WHEN '_keyword_ranked 30, a common word added' THEN PERFORM count(*) FROM vigil._keyword_ranked(db, r.q_common, 30);
            END CASE;
            n := n + 1;
        END LOOP;
        best := least(best, extract(epoch FROM clock_timestamp() - t0) * 1000 / n);
    END LOOP;
    RETURN best;
END \$\$;
SELECT 'RESULT ' || k || ': ' || round(pg_temp.ms(k)::numeric, 3) || ' ms a query'
FROM unnest(ARRAY['hybrid_search', 'query_embeddings', '_nearest 30', '_keyword_ranked 30',
                  '_keyword_ranked 30, a common word added']) WITH ORDINALITY AS t(k, i)
ORDER BY i;
ROLLBACK;
SQL
psql -c "DROP TABLE public.bench_parts"
