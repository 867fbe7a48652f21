-- 0.9.0 -> 0.10.0: one graph per vector database. The records' vigil_hnsw
-- index becomes partitioned by database (`(db, embedding)`): a search of a
-- database walks a graph of its own records, whatever else the table holds.
-- The index is built again from the records (every record kept: the table
-- is not touched).

CREATE OPERATOR CLASS vigil.int8_ops DEFAULT FOR TYPE bigint USING vigil_hnsw AS
    OPERATOR 1 pg_catalog.= (bigint, bigint),
    OPERATOR 1 pg_catalog.= (bigint, integer),
    OPERATOR 1 pg_catalog.= (bigint, smallint);

DROP INDEX vigil.vector_records_embedding;
CREATE INDEX vector_records_embedding ON vigil.vector_records
    USING vigil_hnsw (db vigil.int8_ops, embedding vigil.cosine_ops);

-- The beam of a search for `k` records in a database of `records`: wide
-- enough for recall@10 of 0.99 against an exact search, which takes a wider
-- beam as a graph grows (docs/performance.md: 120 reaches 0.994 at 50,000
-- records and 0.993 at 100,000 real ones, 0.989 on the bench's harder 100,000,
-- where 400 reaches 0.997; 1,000,000 records 400 for 0.990 and 600 for
-- 0.993), or `k` when larger; at most 1,000 (the scan goes on past it,
-- vigil.hnsw_iterative_scan, for a hybrid search's 2,000). Each step up
-- costs every search of such a database: at 100,000 records 400 takes 1.8 ms
-- where 120 takes 0.6.
CREATE FUNCTION vigil._search_ef(k integer, records bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT least(greatest(k, CASE WHEN records <= 200000 THEN 120
                                  WHEN records <= 500000 THEN 400
                                  ELSE 600 END), 1000)
$$;

CREATE OR REPLACE FUNCTION vigil._nearest(db_id bigint, query_vector real[], k integer)
RETURNS TABLE (id bigint, similarity real)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
SET enable_sort = off SET enable_seqscan = off SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    in_db bigint;
BEGIN
    SELECT d.records INTO in_db FROM vector_databases d WHERE d.id = db_id;
    IF in_db <= 2000 THEN
        RETURN QUERY EXECUTE
            'SELECT r.id, (1 - vigil.cosine_distance(r.embedding, $2))::real
             FROM vigil.vector_records r WHERE r.db = $1
             ORDER BY vigil.cosine_distance(r.embedding, $2), r.id
             LIMIT $3'
            USING db_id, query_vector, k;
    ELSE
        PERFORM set_config('vigil.hnsw_ef_search', vigil._search_ef(k, in_db)::text, true);
        RETURN QUERY
        SELECT r.id, (1 - (r.embedding <=> query_vector))::real
        FROM vector_records r WHERE r.db = db_id
        ORDER BY r.embedding <=> query_vector
        LIMIT k;
    END IF;
END
$$;
