-- pg_temp.beam_sweep(target, beams): recall@10 of database `target`'s graph
-- against an exact search of it, and p50/p99 of each search's time in this
-- backend, at each beam of `beams`, over the queries of the temporary table
-- t (v real[]: a query's embedding; kth float8: its 10th exact distance in
-- the database). A returned record is a hit when its exact distance is at
-- most kth (ties count). The graph serves the search because sequential
-- scans and sorts are off in the caller's session. Read by
-- bench/vectordb/beam-recall.sh and bench/vectordb/build-beam.sh.
CREATE FUNCTION pg_temp.beam_sweep(target bigint, beams int[])
RETURNS TABLE (beam int, recall float8, p50 float8, p99 float8)
LANGUAGE plpgsql AS $$
DECLARE
    ef int; q record; t0 timestamptz; got bigint[]; hits int; total int; times float8[];
BEGIN
    FOREACH ef IN ARRAY beams LOOP
        PERFORM set_config('vigil.hnsw_ef_search', ef::text, true);
        hits := 0; total := 0; times := '{}';
        FOR q IN SELECT * FROM t LOOP
            t0 := clock_timestamp();
            SELECT array_agg(s.id) INTO got FROM (SELECT r.id FROM vigil.vector_records r WHERE r.db = target
                                                  ORDER BY r.embedding OPERATOR(vigil.<=>) q.v LIMIT 10) s;
            times := times || extract(epoch FROM clock_timestamp() - t0) * 1000;
            hits := hits + (SELECT count(*) FROM vigil.vector_records r WHERE r.db = target AND r.id = ANY (got)
                            AND vigil.cosine_distance(r.embedding, q.v) <= q.kth + 1e-6);
            total := total + 10;
        END LOOP;
        RETURN QUERY SELECT ef, hits::float8 / total, percentile_cont(0.5) WITHIN GROUP (ORDER BY x),
                            percentile_cont(0.99) WITHIN GROUP (ORDER BY x) FROM unnest(times) x;
    END LOOP;
END
$$;
