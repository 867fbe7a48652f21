-- vigil 0.7.3 -> 0.7.4: vigil_hnsw keeps exact copies of a vector linked
-- (README, "Vector search: vigil_hnsw"). Before, a row whose vector equals
-- another's (the same text stored twice) could leave a neighbour list
-- holding the copy alone, and a search that entered such a pair returned
-- fewer rows than its LIMIT. New links are made right from now on; links
-- made before stay until the index is rebuilt. The vector database's own
-- index is rebuilt here (seconds per 100,000 records); any other vigil_hnsw
-- index is named in a notice, for its owner to REINDEX when convenient.

REINDEX INDEX vigil.vector_records_embedding;

DO $$
DECLARE
    others text;
BEGIN
    SELECT string_agg(c.oid::regclass::text, ', ' ORDER BY c.oid::regclass::text) INTO others
    FROM pg_class c JOIN pg_am a ON a.oid = c.relam
    WHERE a.amname = 'vigil_hnsw' AND c.oid <> 'vigil.vector_records_embedding'::regclass;
    IF others IS NOT NULL THEN
        RAISE NOTICE 'vigil 0.7.4: rebuild these vigil_hnsw indexes to relink rows stored more than once: %', others
            USING HINT = 'REINDEX INDEX name (or REINDEX INDEX CONCURRENTLY name) for each.';
    END IF;
END
$$;
