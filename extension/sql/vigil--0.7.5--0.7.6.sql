-- vigil 0.7.5 -> 0.7.6: a vigil_hnsw index under cosine keeps each vector at
-- unit length in half precision (layout version 2): half the bytes per
-- element, so a search reads half the memory, and PostgreSQL re-ranks the
-- index's candidates by their exact distances from the table (README,
-- "Vector search: vigil_hnsw"). Indexes built before keep working as they
-- are (layout version 1, f32) until rebuilt. The vector database's own index
-- is rebuilt here (27 s for 101,000 records at the default maintenance_work_mem,
-- 17 s at 512MB); any other cosine vigil_hnsw
-- index is named in a notice, for its owner to REINDEX when convenient. L2
-- and inner-product indexes are unchanged.
--
-- Also: vigil._nearest runs with JIT off. 0.7.5 plans it with sorts off,
-- which costs its exact path (small databases) a disable_cost above
-- jit_above_cost, and compiling that statement took 75 to 290 ms of a search
-- that runs in 1 ms (README, version table).

ALTER FUNCTION vigil._nearest(bigint, real[], integer) SET jit = off;

REINDEX INDEX vigil.vector_records_embedding;

DO $$
DECLARE
    others text;
BEGIN
    SELECT string_agg(c.oid::regclass::text, ', ' ORDER BY c.oid::regclass::text) INTO others
    FROM pg_class c
    JOIN pg_am a ON a.oid = c.relam
    JOIN pg_index i ON i.indexrelid = c.oid
    JOIN pg_opclass o ON o.oid = i.indclass[0]
    WHERE a.amname = 'vigil_hnsw' AND o.opcname = 'cosine_ops'
      AND c.oid <> 'vigil.vector_records_embedding'::regclass;
    IF others IS NOT NULL THEN
        RAISE NOTICE 'vigil 0.7.6: rebuild these cosine vigil_hnsw indexes to store their vectors in half precision (half the size, faster searches): %', others
            USING HINT = 'REINDEX INDEX name (or REINDEX INDEX CONCURRENTLY name) for each.';
    END IF;
END
$$;
