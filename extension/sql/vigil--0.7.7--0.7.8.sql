-- vigil 0.7.7 -> 0.7.8: the keyword branch keeps each term's record count
-- (its IDF's input) in the backend with the term's posting blocks, under the
-- same database version, so a search of words a backend has kept reads no
-- table but the database's row: vigil._bm25_search_kept takes the query's
-- lexemes and the database's record count, and replaces vigil._bm25_top_kept,
-- to which vigil._keyword_ranked passed the terms' IDFs after a statement
-- reading vigil.vector_terms on every search. The read of the terms a backend
-- has not kept is planned once per backend. Same rankings. README, "Term
-- counts kept, and their read planned once".

-- vigil::vectordb::_bm25_search_kept
CREATE  FUNCTION "_bm25_search_kept"(
	"db_id" bigint, /* i64 */
	"xmin" bigint, /* i64 */
	"ctid" tid, /* pg_sys :: ItemPointerData */
	"lexemes" TEXT[], /* Vec < String > */
	"records" bigint, /* i64 */
	"average_length" real, /* f32 */
	"k" INT /* i32 */
) RETURNS TABLE (
	"id" bigint,  /* i64 */
	"score" real  /* f32 */
)
STRICT STABLE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'bm25_search_kept_wrapper';
-- Only _keyword_ranked, after its account check, reads the terms kept.
REVOKE EXECUTE ON FUNCTION vigil._bm25_search_kept(bigint, bigint, tid, text[], bigint, real, integer) FROM PUBLIC;

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
BEGIN
    SELECT d.records, d.total_length::real / greatest(d.records, 1), d.xmin::text::bigint, d.ctid
    INTO n, average, version_xmin, version_ctid
    FROM vector_databases d WHERE d.id = db_id AND d.account = vigil.current_account();
    IF NOT FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM vigil._bm25_search_kept(db_id, version_xmin, version_ctid,
        tsvector_to_array(vigil.search_terms(query)), n, average, k);
END
$$;

DROP FUNCTION vigil._bm25_top_kept(bigint, bigint, tid, text[], real[], real, integer);
