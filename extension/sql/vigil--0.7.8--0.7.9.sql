-- vigil 0.7.8 -> 0.7.9: a vigil_hnsw index under cosine over vectors of 256
-- dimensions or more keeps neighbour codes (layout version 3): 128 sign bits
-- of each element, kept beside every bottom-layer link to it, from which a
-- search estimates a neighbour's distance and reads only the neighbours
-- that could enter its beam (README, "Vector search: vigil_hnsw"). Indexes
-- built before keep working as they are (layout version 2 or 1) until
-- rebuilt. The vector database's own index is rebuilt here (16 s for the
-- bench's 101,000 records at maintenance_work_mem 1GB); any other cosine
-- vigil_hnsw index is named in a notice, for its owner to REINDEX when
-- convenient. L2 and inner-product indexes are unchanged. No SQL object
-- changes.

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
        RAISE NOTICE 'vigil 0.7.9: rebuild these cosine vigil_hnsw indexes to keep neighbour codes (vectors of 256 dimensions or more; faster searches): %', others
            USING HINT = 'REINDEX INDEX name (or REINDEX INDEX CONCURRENTLY name) for each.';
    END IF;
END
$$;
