-- vigil 0.7.4 -> 0.7.5: vigil._nearest plans its graph path once per
-- connection (a generic plan), where it planned every call: 12 to 15% more
-- hybrid searches a second in SQL at 100,000 records (README, version
-- table). The graph path filters on `db + 0`, which the database's b-tree
-- cannot serve, and is planned with sorts and sequential scans off, so its
-- one plan walks the graph whatever the table's size when it was made; the
-- exact path (small databases) is planned on each call through EXECUTE.
-- Same arguments, same answers.

CREATE OR REPLACE FUNCTION vigil._nearest(db_id bigint, query_vector real[], k integer)
RETURNS TABLE (id bigint, similarity real)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
SET enable_sort = off SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    in_db bigint;
    in_all real;
BEGIN
    SELECT d.records INTO in_db FROM vector_databases d WHERE d.id = db_id;
    SELECT greatest(c.reltuples, 1) INTO in_all FROM pg_class c WHERE c.oid = 'vigil.vector_records'::regclass;
    IF in_db <= 2000
       OR k::real * in_all / greatest(in_db, 1) > current_setting('vigil.hnsw_max_scan_tuples')::real / 4 THEN
        RETURN QUERY EXECUTE
            'SELECT r.id, (1 - vigil.cosine_distance(r.embedding, $2))::real
             FROM vigil.vector_records r WHERE r.db = $1
             ORDER BY vigil.cosine_distance(r.embedding, $2), r.id
             LIMIT $3'
            USING db_id, query_vector, k;
    ELSE
        PERFORM set_config('vigil.hnsw_ef_search', greatest(k, 40)::text, true);
        RETURN QUERY
        SELECT r.id, (1 - (r.embedding <=> query_vector))::real
        FROM vector_records r WHERE (r.db + 0) = db_id
        ORDER BY r.embedding <=> query_vector
        LIMIT k;
    END IF;
END
$$;
