-- Custom against generic plans for the searches in SQL, alternated in one
-- session: one client, 100,000 records, the query's embedding given (no
-- model), 200 calls a round. Run on the bench-vectordb cluster:
--   scripts/pg-cluster.sh up .vigil/bench-vectordb 28818
--   scripts/pg-cluster.sh psql .vigil/bench-vectordb -X -q -At -f bench/vectordb/plans.sql
-- Up to 0.7.1 the session's plan_cache_mode decides; from 0.7.2 the functions
-- set force_generic_plan themselves, so every round shows the generic cost.
SET vigil.account = 'bench@example.com';
CREATE TEMP TABLE qv AS SELECT i, q, vigil.embed(q) AS v FROM (SELECT row_number() OVER () AS i, q FROM (VALUES ('text editor for programmers'),('library for parsing xml documents'),('network monitoring tool with web interface'),('fonts for displaying japanese text'),('python module for image processing')) x(q)) y;
\timing off
DO $$
DECLARE t0 timestamptz; r record; n int := 0; mode text;
BEGIN
  FOREACH mode IN ARRAY ARRAY['auto','force_generic_plan','auto','force_generic_plan'] LOOP
    PERFORM set_config('plan_cache_mode', mode, true);
    FOR r IN SELECT * FROM qv LOOP PERFORM count(*) FROM vigil.hybrid_search(r.q, 10, 'bench', 'rrf', 1, 1, r.v); END LOOP;
    t0 := clock_timestamp();
    FOR i IN 1..40 LOOP
      FOR r IN SELECT * FROM qv LOOP PERFORM count(*) FROM vigil.hybrid_search(r.q, 10, 'bench', 'rrf', 1, 1, r.v); END LOOP;
    END LOOP;
    RAISE NOTICE 'hybrid % : % ms', mode, round((extract(epoch FROM clock_timestamp() - t0) * 1000 / 200)::numeric, 3);
    t0 := clock_timestamp();
    FOR i IN 1..40 LOOP
      FOR r IN SELECT * FROM qv LOOP PERFORM count(*) FROM vigil.query_embeddings(r.q, 'bench', 10, r.v); END LOOP;
    END LOOP;
    RAISE NOTICE 'query % : % ms', mode, round((extract(epoch FROM clock_timestamp() - t0) * 1000 / 200)::numeric, 3);
  END LOOP;
END $$;
-- The same answer under both modes.
SELECT (SELECT array_agg(id) FROM vigil.hybrid_search(q, 10, 'bench', 'rrf', 1, 1, v)) FROM qv WHERE i = 1;
SET plan_cache_mode = force_generic_plan;
SELECT (SELECT array_agg(id) FROM vigil.hybrid_search(q, 10, 'bench', 'rrf', 1, 1, v)) FROM qv WHERE i = 1;
