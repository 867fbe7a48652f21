-- vigil 0.7.6 -> 0.7.7: hybrid search fuses its two branches in Rust
-- (vigil._fuse, vigil_search::fusion) rather than in one SQL statement
-- joining them with window functions and sorts: the same rankings and scores
-- bit for bit. The keyword branch keeps the posting blocks it reads in the
-- backend (vigil._bm25_top_kept, `vigil.keyword_cache`), for the next search
-- of the same version of the database. A hybrid search of limit over 500,
-- whose vector branch fetches up to 2,000 records, no longer asks for an
-- ef_search past its largest (1,000): vigil._nearest caps it, and the scan
-- goes on past it. README, "Fusion in Rust, and the keyword index kept".

-- vigil::vectordb::_bm25_top_kept
CREATE  FUNCTION "_bm25_top_kept"(
	"db_id" bigint, /* i64 */
	"xmin" bigint, /* i64 */
	"ctid" tid, /* pg_sys :: ItemPointerData */
	"lexemes" TEXT[], /* Vec < String > */
	"idfs" real[], /* Vec < f32 > */
	"average_length" real, /* f32 */
	"k" INT /* i32 */
) RETURNS TABLE (
	"id" bigint,  /* i64 */
	"score" real  /* f32 */
)
STRICT STABLE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'bm25_top_kept_wrapper';
REVOKE EXECUTE ON FUNCTION vigil._bm25_top_kept(bigint, bigint, tid, text[], real[], real, integer) FROM PUBLIC;

-- vigil::vectordb::_fuse
CREATE  FUNCTION "_fuse"(
	"vector_ids" bigint[], /* :: std :: option :: Option < Vec < i64 > > */
	"similarities" real[], /* :: std :: option :: Option < Vec < f32 > > */
	"keyword_ids" bigint[], /* :: std :: option :: Option < Vec < i64 > > */
	"scores" real[], /* :: std :: option :: Option < Vec < f32 > > */
	"identified" bigint[], /* :: std :: option :: Option < Vec < i64 > > */
	"k" INT, /* i32 */
	"fusion" TEXT, /* & str */
	"vector_weight" real, /* f32 */
	"keyword_weight" real /* f32 */
) RETURNS TABLE (
	"id" bigint,  /* i64 */
	"score" double precision  /* f64 */
)
IMMUTABLE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'fuse_wrapper';

CREATE OR REPLACE FUNCTION vigil._nearest(db_id bigint, query_vector real[], k integer)
RETURNS TABLE (id bigint, similarity real)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
SET enable_sort = off SET enable_seqscan = off SET jit = off
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
        -- ef_search stops at its largest (1,000): the scan goes on past it
        -- (vigil.hnsw_iterative_scan) for a hybrid search's 2,000.
        PERFORM set_config('vigil.hnsw_ef_search', least(greatest(k, 40), 1000)::text, true);
        RETURN QUERY
        SELECT r.id, (1 - (r.embedding <=> query_vector))::real
        FROM vector_records r WHERE (r.db + 0) = db_id
        ORDER BY r.embedding <=> query_vector
        LIMIT k;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION vigil._keyword_ranked(db_id bigint, query text, k integer)
RETURNS TABLE (id bigint, score real)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    n bigint;
    average real;
    version_xmin bigint;
    version_ctid tid;
    lexemes text[];
    idfs real[];
BEGIN
    SELECT d.records, d.total_length::real / greatest(d.records, 1), d.xmin::text::bigint, d.ctid
    INTO n, average, version_xmin, version_ctid
    FROM vector_databases d WHERE d.id = db_id AND d.account = vigil.current_account();
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT array_agg(t.term ORDER BY t.records, t.term),
           array_agg(vigil.bm25_idf(n, t.records) ORDER BY t.records, t.term)
    INTO lexemes, idfs
    FROM vector_terms t
    WHERE t.db = db_id AND t.term = ANY (tsvector_to_array(vigil.search_terms(query))) AND t.records > 0;
    IF lexemes IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM vigil._bm25_top_kept(db_id, version_xmin, version_ctid, lexemes, idfs, average, k);
END
$$;

CREATE OR REPLACE FUNCTION vigil.hybrid_search(
    query text,
    k integer,
    db text DEFAULT NULL,
    fusion text DEFAULT 'rrf',
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
    SELECT array_agg(v.id), array_agg(v.similarity) INTO vector_ids, similarities
    FROM vigil._nearest(db_id, vigil._query_vector(query, query_vector), fetched) v;
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
