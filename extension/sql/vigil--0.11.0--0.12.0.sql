-- 0.11.0 -> 0.12.0: hybrid search's vector branch reads each record's
-- opening from the row its graph search fetches (vigil._nearest's new
-- `openings`), where a join back to vector_records for it took an eighth of
-- a hybrid search. Results are unchanged; no data moves.

DROP FUNCTION vigil._nearest(bigint, real[], integer);

CREATE FUNCTION vigil._nearest(db_id bigint, query_vector real[], k integer, openings boolean DEFAULT false)
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
            'SELECT r.id, greatest(1 - vigil.cosine_distance(r.embedding, $2),
                                  CASE WHEN $4 THEN 1 - vigil.cosine_distance(r.opening, $2) END)::real
             FROM vigil.vector_records r WHERE r.db = $1
             ORDER BY vigil.cosine_distance(r.embedding, $2), r.id
             LIMIT $3'
            USING db_id, query_vector, k, openings;
    ELSE
        PERFORM set_config('vigil.hnsw_ef_search', vigil._search_ef(k, in_db)::text, true);
        RETURN QUERY
        SELECT r.id, greatest(1 - (r.embedding <=> query_vector),
                              CASE WHEN openings THEN 1 - vigil.cosine_distance(r.opening, query_vector) END)::real
        FROM vector_records r WHERE r.db = db_id
        ORDER BY r.embedding <=> query_vector
        LIMIT k;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION vigil.hybrid_search(
    query text,
    k integer,
    db text DEFAULT NULL,
    fusion text DEFAULT 'convex',
    vector_weight real DEFAULT 1,
    keyword_weight real DEFAULT 1,
    query_vector real[] DEFAULT NULL
)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, score real)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    db_id bigint := vigil._database(db);
    fetched integer;
    qv real[];
    identifiers text[];
    vector_ids bigint[];
    similarities real[];
    keyword_ids bigint[];
    scores real[];
    identified bigint[];
BEGIN
    PERFORM vigil._check_search(query, k);
    IF fusion IS NULL OR fusion NOT IN ('rrf', 'convex') THEN
        PERFORM vigil._refuse('fusion', 'fusion must be ''rrf'' or ''convex''');
    END IF;
    IF vector_weight IS NULL OR keyword_weight IS NULL OR vector_weight < 0 OR keyword_weight < 0
       OR vector_weight + keyword_weight = 0 THEN
        PERFORM vigil._refuse('weights', 'vector_weight and keyword_weight must be 0 or more, not both 0');
    END IF;
    fetched := least(greatest(2 * k, 30), 2000);
    qv := vigil._query_vector(query, query_vector);
    SELECT array_agg(v.id), array_agg(v.similarity) INTO vector_ids, similarities
    FROM (SELECT n.id, n.similarity FROM vigil._nearest(db_id, qv, greatest(fetched, 100), true) n
          ORDER BY 2 DESC, 1 LIMIT fetched) v;
    SELECT array_agg(w.id), array_agg(w.score) INTO keyword_ids, scores
    FROM vigil._keyword_ranked(db_id, query, fetched) w;
    -- identifiers: with a digit or a joiner other than "-" (not "open-source")
    identifiers := ARRAY(SELECT t FROM unnest(vigil.exact_tokens(query)) AS t WHERE t ~ '[0-9@_/:#+.]');
    IF cardinality(identifiers) > 0 AND keyword_ids IS NOT NULL THEN
        SELECT array_agg(r.id) INTO identified
        FROM vector_records r WHERE r.id = ANY (keyword_ids) AND r.terms @@ vigil._any_term(identifiers);
    END IF;
    RETURN QUERY
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, f.score::real
    FROM vigil._fuse(vector_ids, similarities, keyword_ids, scores, identified, k, fusion,
                     vector_weight, keyword_weight) f
    JOIN vector_records r ON r.id = f.id
    ORDER BY f.score DESC, r.id;
END
$$;
