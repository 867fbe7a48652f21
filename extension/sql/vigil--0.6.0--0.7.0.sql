-- vigil 0.6.0 -> 0.7.0: keyword search from an index of its own; searches
-- take the query's embedding when the caller has it.
--
-- vigil.vector_postings holds, per vector database and term, the records
-- holding the term in blocks of postings (record id, term frequency, record
-- length); the records' trigger keeps it, and keyword and hybrid search rank
-- from it alone, exactly, instead of reading every matching record found
-- through the GIN index, which goes. Existing records' postings are built
-- here, from the terms they already hold.

CREATE  FUNCTION "_postings_block_size"() RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'postings_block_size_wrapper';

CREATE  FUNCTION "_postings_append"(
	"tail" bytea, /* Option < & [u8] > */
	"ids" bigint[], /* Vec < i64 > */
	"tfs" INT[], /* Vec < i32 > */
	"lengths" INT[] /* Vec < i32 > */
) RETURNS TABLE (
	"first_id" bigint,  /* i64 */
	"last_id" bigint,  /* i64 */
	"size" INT,  /* i32 */
	"postings" bytea  /* Vec < u8 > */
)
IMMUTABLE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'postings_append_wrapper';

CREATE  FUNCTION "_postings_holds_any"(
	"block" bytea, /* & [u8] */
	"ids" bigint[] /* Vec < i64 > */
) RETURNS bool /* bool */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'postings_holds_any_wrapper';

CREATE  FUNCTION "_postings_remove"(
	"block" bytea, /* & [u8] */
	"ids" bigint[] /* Vec < i64 > */
) RETURNS TABLE (
	"first_id" bigint,  /* i64 */
	"last_id" bigint,  /* i64 */
	"size" INT,  /* i32 */
	"postings" bytea  /* Vec < u8 > */
)
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'postings_remove_wrapper';

CREATE  FUNCTION "_bm25_top"(
	"block_terms" INT[], /* Vec < i32 > */
	"blocks" bytea[], /* Array < '_, & '_ [u8] > */
	"idfs" real[], /* Vec < f32 > */
	"average_length" real, /* f32 */
	"k" INT /* i32 */
) RETURNS TABLE (
	"id" bigint,  /* i64 */
	"score" real  /* f32 */
)
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'bm25_top_wrapper';

DROP FUNCTION vigil.bm25_essential_terms(bigint[], bigint);
DROP FUNCTION vigil.bm25_upper_bound(real);
DROP INDEX vigil.vector_records_terms;

-- Blocks of up to vigil._postings_block_size() postings (record id, term
-- frequency, record length), sorted by id, in the layout of
-- vigil_search::postings; `size` is how many. New postings go to a term's
-- newest block (largest first_id) while it has room. A GIN index on `terms`
-- would find the records but not rank them: BM25 then reads and parses
-- every matching record, 25.9 ms at p50 and 205 ms at p99 over 100,000
-- records where a query's words are common (README, search figures).
CREATE TABLE vigil.vector_postings (
    db       bigint NOT NULL REFERENCES vigil.vector_databases (id) ON DELETE CASCADE,
    term     text NOT NULL,
    first_id bigint NOT NULL,
    last_id  bigint NOT NULL,
    size     integer NOT NULL,
    postings bytea NOT NULL,
    PRIMARY KEY (db, term, first_id)
);

REVOKE ALL ON vigil.vector_postings FROM PUBLIC;

ALTER TABLE vigil.vector_postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE vigil.vector_postings FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.vector_postings
    USING (EXISTS (SELECT FROM vigil.vector_databases d WHERE d.id = db))
    WITH CHECK (EXISTS (SELECT FROM vigil.vector_databases d WHERE d.id = db));

-- Every record's postings, in blocks, as the trigger would have left them
-- had it kept them from the start.
INSERT INTO vigil.vector_postings (db, term, first_id, last_id, size, postings)
SELECT g.db, g.term, b.first_id, b.last_id, b.size, b.postings
FROM (SELECT n.db, u.lexeme AS term,
             array_agg(n.id ORDER BY n.id) AS ids,
             array_agg(greatest(cardinality(u.positions), 1) ORDER BY n.id) AS tfs,
             array_agg(n.length ORDER BY n.id) AS lengths
      FROM (SELECT r.id, r.db, r.terms, vigil.bm25_length(r.terms) AS length
            FROM vigil.vector_records r) n,
           unnest(n.terms) AS u
      GROUP BY n.db, u.lexeme) g,
     vigil._postings_append(NULL, g.ids, g.tfs, g.lengths) AS b;

-- Keeps vector_terms, vector_postings and the databases' counts current as
-- records come, go or change: one statement-level pass over the transition
-- tables, terms upserted in key order so concurrent writers lock them in
-- the same order. A term's postings change only after its vector_terms row
-- is locked, so writers of one term take turns, each statement seeing the
-- blocks the one before committed. Records that leave with their database
-- (a cascade) are skipped: their counts and postings leave with it.
-- SECURITY DEFINER: the writer's own statement already passed row-level
-- security, and everything here follows from the rows it wrote, so the
-- application role needs no grant on the index tables.
CREATE OR REPLACE FUNCTION vigil._count_terms() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        -- Two statements: one cannot delete the rows it has just updated.
        UPDATE vector_terms v SET records = v.records - g.n
        FROM (SELECT o.db, t.term, count(*) AS n
              FROM old_rows o, unnest(tsvector_to_array(o.terms)) AS t (term)
              WHERE EXISTS (SELECT FROM vector_databases d WHERE d.id = o.db)
              GROUP BY o.db, t.term) g
        WHERE v.db = g.db AND v.term = g.term;
        DELETE FROM vector_terms v
        USING (SELECT DISTINCT o.db, t.term
               FROM old_rows o, unnest(tsvector_to_array(o.terms)) AS t (term)) g
        WHERE v.db = g.db AND v.term = g.term AND v.records <= 0;
        -- Their postings, out of the blocks holding them.
        WITH gone AS (
            SELECT o.db, u.lexeme AS term, array_agg(o.id) AS ids, min(o.id) AS low, max(o.id) AS high
            FROM old_rows o, unnest(o.terms) AS u
            WHERE EXISTS (SELECT FROM vector_databases d WHERE d.id = o.db)
            GROUP BY o.db, u.lexeme
        ), hit AS (
            DELETE FROM vector_postings p USING gone g
            WHERE p.db = g.db AND p.term = g.term AND p.first_id <= g.high AND p.last_id >= g.low
              AND vigil._postings_holds_any(p.postings, g.ids)
            RETURNING p.db, p.term, p.postings, g.ids
        )
        INSERT INTO vector_postings (db, term, first_id, last_id, size, postings)
        SELECT h.db, h.term, b.first_id, b.last_id, b.size, b.postings
        FROM hit h, vigil._postings_remove(h.postings, h.ids) AS b;
        UPDATE vector_databases d
        SET records = d.records - s.n, total_length = d.total_length - s.length
        FROM (SELECT o.db, count(*) AS n, sum(vigil.bm25_length(o.terms)) AS length
              FROM old_rows o GROUP BY o.db) s
        WHERE d.id = s.db;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO vector_terms AS v (db, term, records)
        SELECT n.db, t.term, count(*)
        FROM new_rows n, unnest(tsvector_to_array(n.terms)) AS t (term)
        GROUP BY n.db, t.term
        ORDER BY n.db, t.term
        ON CONFLICT (db, term) DO UPDATE SET records = v.records + excluded.records;
        -- Their postings, merged into each term's newest block while it has
        -- room, then into new blocks.
        WITH added AS (
            SELECT n.db, u.lexeme AS term,
                   array_agg(n.id ORDER BY n.id) AS ids,
                   array_agg(greatest(cardinality(u.positions), 1) ORDER BY n.id) AS tfs,
                   array_agg(n.length ORDER BY n.id) AS lengths
            FROM (SELECT r.id, r.db, r.terms, vigil.bm25_length(r.terms) AS length FROM new_rows r) n,
                 unnest(n.terms) AS u
            GROUP BY n.db, u.lexeme
        ), tails AS (
            DELETE FROM vector_postings p USING added a
            WHERE p.db = a.db AND p.term = a.term AND p.size < vigil._postings_block_size()
              AND p.first_id = (SELECT max(q.first_id) FROM vector_postings q
                                WHERE q.db = a.db AND q.term = a.term)
            RETURNING p.db, p.term, p.postings
        )
        INSERT INTO vector_postings (db, term, first_id, last_id, size, postings)
        SELECT a.db, a.term, b.first_id, b.last_id, b.size, b.postings
        FROM added a LEFT JOIN tails t ON t.db = a.db AND t.term = a.term,
             vigil._postings_append(t.postings, a.ids, a.tfs, a.lengths) AS b;
        UPDATE vector_databases d
        SET records = d.records + s.n, total_length = d.total_length + s.length
        FROM (SELECT n.db, count(*) AS n, sum(vigil.bm25_length(n.terms)) AS length
              FROM new_rows n GROUP BY n.db) s
        WHERE d.id = s.db;
    END IF;
    RETURN NULL;
END
$$;

-- The `k` records of database `db_id` ranked highest by BM25 for `query`,
-- any of its terms matching, ties by id: exact, from the blocks of
-- vector_postings alone (vigil_search::postings::top_k, MaxScore with
-- block-max bounds). Terms go rarest first, the order scores are summed in.
--
-- SECURITY DEFINER, checking itself that `db_id` is a database of the
-- current account: row-level security on vector_postings would make every
-- block read check its database again, and the caller's database is all
-- this reads. Postings carry their database, whose account the check
-- confines the read to.
CREATE OR REPLACE FUNCTION vigil._keyword_ranked(db_id bigint, query text, k integer)
RETURNS TABLE (id bigint, score real)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    n bigint;
    average real;
    lexemes text[];
    idfs real[];
    block_terms integer[];
    blocks bytea[];
BEGIN
    SELECT d.records, d.total_length::real / greatest(d.records, 1) INTO n, average
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
    SELECT array_agg(array_position(lexemes, p.term)), array_agg(p.postings)
    INTO block_terms, blocks
    FROM vector_postings p
    WHERE p.db = db_id AND p.term = ANY (lexemes);
    IF blocks IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM vigil._bm25_top(block_terms, blocks, idfs, average, k);
END
$$;


-- Searches take the query's embedding when the caller has it (the sidecar's
-- cache of query embeddings): one more argument each.
DROP FUNCTION vigil.query_embeddings(text, text, integer);
DROP FUNCTION vigil.hybrid_search(text, integer, text, text, real, real);

-- `query`'s embedding: `given` when the caller has it already (the sidecar
-- keeps the embeddings of queries it has seen, so a query that comes again
-- runs no model), else computed now.
CREATE FUNCTION vigil._query_vector(query text, given real[]) RETURNS real[]
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF given IS NULL THEN
        RETURN vigil.embed(query);
    END IF;
    IF cardinality(given) <> 384 OR array_position(given, NULL) IS NOT NULL THEN
        PERFORM vigil._refuse('query_vector', 'query_vector must be 384 numbers, the embedding of query');
    END IF;
    RETURN given;
END
$$;

-- The records most similar in meaning to `query`, with cosine `similarity`.
-- `query_vector`, when given, is taken as the query's embedding.
CREATE FUNCTION vigil.query_embeddings(query text, db text DEFAULT NULL, k integer DEFAULT 10,
                                       query_vector real[] DEFAULT NULL)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, similarity real)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    db_id bigint := vigil._database(db);
BEGIN
    PERFORM vigil._check_search(query, k);
    RETURN QUERY
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, x.similarity
    FROM vigil._nearest(db_id, vigil._query_vector(query, query_vector), k) x
    JOIN vector_records r ON r.id = x.id
    ORDER BY x.similarity DESC, r.id;
END
$$;

-- Keyword (BM25) and vector search fused, best first, ties by id.
-- fusion 'rrf' (the default): Reciprocal Rank Fusion, each branch adding
--   weight / (60 + rank); records holding an identifier of the query (an
--   exact token with a digit or a joiner other than "-": a part number, an
--   e-mail address) form a third branch, at the keyword weight, so an
--   identifier wins over meaning;
-- fusion 'convex': weighted mean of each branch's score divided by its best
--   (similarity below 0 counts 0), absent from a branch counting 0.
-- Each branch fetches more than `k` (at least 50), so a record ranked well
-- by both but first by neither is still seen. `query_vector`, when given,
-- is taken as the query's embedding.
CREATE FUNCTION vigil.hybrid_search(
    query text,
    k integer,
    db text DEFAULT NULL,
    fusion text DEFAULT 'rrf',
    vector_weight real DEFAULT 1,
    keyword_weight real DEFAULT 1,
    query_vector real[] DEFAULT NULL
)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, score real)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    db_id bigint := vigil._database(db);
    fetched integer;
BEGIN
    PERFORM vigil._check_search(query, k);
    IF fusion IS NULL OR fusion NOT IN ('rrf', 'convex') THEN
        PERFORM vigil._refuse('fusion', 'fusion must be ''rrf'' or ''convex''');
    END IF;
    IF vector_weight IS NULL OR keyword_weight IS NULL OR vector_weight < 0 OR keyword_weight < 0
       OR vector_weight + keyword_weight = 0 THEN
        PERFORM vigil._refuse('weights', 'vector_weight and keyword_weight must be 0 or more, not both 0');
    END IF;
    fetched := least(greatest(2 * k, 50), 2000);
    RETURN QUERY
    WITH by_vector AS (
        SELECT v.id, v.similarity, row_number() OVER (ORDER BY v.similarity DESC, v.id) AS rank
        FROM vigil._nearest(db_id, vigil._query_vector(query, query_vector), fetched) v
    ), by_keyword AS (
        SELECT w.id, w.score, row_number() OVER (ORDER BY w.score DESC, w.id) AS rank
        FROM vigil._keyword_ranked(db_id, query, fetched) w
    ), by_exact_token AS (
        SELECT w.id, row_number() OVER (ORDER BY w.score DESC, w.id) AS rank
        FROM by_keyword w JOIN vector_records r ON r.id = w.id
        WHERE r.terms @@ vigil._any_term(ARRAY(
                  -- identifiers: with a digit or a joiner other than "-" (not "open-source")
                  SELECT t FROM unnest(vigil.exact_tokens(query)) AS t WHERE t ~ '[0-9@_/:#+.]'))
    ), fused AS (
        SELECT coalesce(v.id, w.id) AS id,
               CASE fusion
               WHEN 'rrf' THEN coalesce(vector_weight / (60 + v.rank), 0)
                             + coalesce(keyword_weight / (60 + w.rank), 0)
                             + coalesce(keyword_weight / (60 + e.rank), 0)
               ELSE (vector_weight * coalesce(greatest(v.similarity, 0) / nullif(max(v.similarity) OVER (), 0), 0)
                   + keyword_weight * coalesce(w.score / nullif(max(w.score) OVER (), 0), 0))
                   / (vector_weight + keyword_weight)
               END AS score
        FROM by_vector v FULL JOIN by_keyword w ON v.id = w.id
        LEFT JOIN by_exact_token e ON e.id = w.id
    )
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, f.score::real
    FROM fused f JOIN vector_records r ON r.id = f.id
    ORDER BY f.score DESC, r.id
    LIMIT k;
END
$$;
