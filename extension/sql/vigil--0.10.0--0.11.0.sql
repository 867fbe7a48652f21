-- 0.10.0 -> 0.11.0: hybrid search reads a record by its opening too, and
-- fuses by a min-max convex combination by default; a database of more
-- than 50,000 records is searched with a wider beam (300 up to 200,000).
--
-- vector_records.opening: the content's first sentence as read within the
-- record, pooled from the same model call as the record's embedding
-- (vigil._embed_records). Records stored before this version keep a NULL
-- opening, read by their whole text alone, until vigil.fill_openings()
-- reads them (docs/operations.md); every record is kept as it is.

ALTER TABLE vigil.vector_records ADD COLUMN opening real[] CHECK (cardinality(opening) = 384);
ALTER TABLE vigil.vector_records ALTER COLUMN opening SET STORAGE MAIN;

CREATE FUNCTION vigil._embed_records(titles text[], contents text[])
RETURNS TABLE (embedding real[], opening real[])
STRICT STABLE PARALLEL SAFE
LANGUAGE c AS 'MODULE_PATHNAME', 'embed_records_wrapper';

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
    -- An update that changes no record's words or database (vigil.fill_openings
    -- writing openings) leaves the counts and postings as they are.
    -- (Nested: the transition tables exist only for their own events.)
    IF TG_OP = 'UPDATE' THEN
        IF NOT EXISTS (SELECT FROM old_rows o JOIN new_rows n ON n.id = o.id
                       WHERE n.terms IS DISTINCT FROM o.terms OR n.db <> o.db) THEN
            RETURN NULL;
        END IF;
    END IF;
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

CREATE OR REPLACE FUNCTION vigil.store_records(records jsonb, db text DEFAULT NULL)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz)
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    db_id bigint := vigil._database(db);
    acct text := vigil.current_account();
    n integer;
    i integer := 0;
    r jsonb;
BEGIN
    IF records IS NULL OR jsonb_typeof(records) <> 'array' THEN
        PERFORM vigil._refuse('records', 'records must be an array of {title, content, metadata}');
    END IF;
    n := jsonb_array_length(records);
    IF n NOT BETWEEN 1 AND 1000 THEN
        PERFORM vigil._refuse('records', format('records must hold 1 to 1,000 records, not %s', n));
    END IF;
    FOR r IN SELECT e FROM jsonb_array_elements(records) AS e LOOP
        IF jsonb_typeof(r) <> 'object' THEN
            PERFORM vigil._refuse(format('records[%s]', i), format('records[%s] must be an object', i));
        END IF;
        IF jsonb_typeof(r -> 'title') NOT IN ('string', 'null') THEN
            PERFORM vigil._refuse(format('records[%s].title', i), format('records[%s].title must be a string', i));
        END IF;
        IF jsonb_typeof(r -> 'content') NOT IN ('string', 'null') THEN
            PERFORM vigil._refuse(format('records[%s].content', i), format('records[%s].content must be a string', i));
        END IF;
        PERFORM vigil._check_record(format('records[%s].', i), r ->> 'title', r ->> 'content',
                                    nullif(r -> 'metadata', 'null'));
        i := i + 1;
    END LOOP;
    RETURN QUERY
    WITH given AS (
        SELECT e.ord, e.r ->> 'title' AS title, e.r ->> 'content' AS content,
               coalesce(nullif(e.r -> 'metadata', 'null'), '{}') AS metadata
        FROM jsonb_array_elements(records) WITH ORDINALITY AS e (r, ord)
    ), vectors AS (
        SELECT v.ord, v.embedding, v.opening
        FROM vigil._embed_records(ARRAY(SELECT g.title FROM given g ORDER BY g.ord),
                                  ARRAY(SELECT g.content FROM given g ORDER BY g.ord))
             WITH ORDINALITY AS v (embedding, opening, ord)
    ), stored AS (
        INSERT INTO vector_records AS s (db, account, title, content, metadata, embedding, opening)
        SELECT db_id, acct, g.title, g.content, g.metadata, v.embedding, v.opening
        FROM given g JOIN vectors v USING (ord)
        ORDER BY g.ord
        RETURNING s.id, s.title, s.content, s.metadata, s.created_at
    )
    SELECT * FROM stored ORDER BY stored.id;
END
$$;

CREATE OR REPLACE FUNCTION vigil.store_record(title text, content text, metadata jsonb DEFAULT '{}', db text DEFAULT NULL)
RETURNS SETOF vigil.vector_record
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    db_id bigint := vigil._database(db);
BEGIN
    PERFORM vigil._check_record('', title, content, metadata);
    RETURN QUERY
    INSERT INTO vector_records AS s (db, account, title, content, metadata, embedding, opening)
    SELECT db_id, vigil.current_account(), store_record.title, store_record.content,
           coalesce(store_record.metadata, '{}'), v.embedding, v.opening
    FROM vigil._embed_records(ARRAY[store_record.title], ARRAY[store_record.content]) v
    RETURNING s.id, s.title, s.content, s.metadata, s.created_at;
END
$$;

-- Reads the opening (vector_records.opening) of at most `max_records`
-- records that lack one, oldest first: those stored before 0.11.0, of the
-- caller's account (row-level security; a superuser's, every account's).
-- Returns how many it read; call it until it returns 0, then VACUUM
-- vigil.vector_records (each record read is a new row version). Until then
-- hybrid search reads those records by their whole text alone.
CREATE FUNCTION vigil.fill_openings(max_records integer DEFAULT 1000) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
DECLARE
    filled bigint;
BEGIN
    IF max_records IS NULL OR max_records < 1 THEN
        PERFORM vigil._refuse('max_records', 'max_records must be 1 or more');
    END IF;
    WITH locked AS (
        SELECT r.id, r.title, r.content
        FROM vector_records r WHERE r.opening IS NULL
        ORDER BY r.id LIMIT max_records
        FOR UPDATE OF r SKIP LOCKED
    ), todo AS (
        SELECT l.*, row_number() OVER (ORDER BY l.id) AS ord FROM locked l
    ), vectors AS (
        SELECT v.ord, v.opening
        FROM vigil._embed_records(ARRAY(SELECT t.title FROM todo t ORDER BY t.ord),
                                  ARRAY(SELECT t.content FROM todo t ORDER BY t.ord))
             WITH ORDINALITY AS v (embedding, opening, ord)
    )
    UPDATE vector_records r SET opening = v.opening
    FROM todo t JOIN vectors v USING (ord)
    WHERE r.id = t.id;
    GET DIAGNOSTICS filled = ROW_COUNT;
    RETURN filled;
END
$$;

-- Keyword (BM25) and vector search fused, best first, ties by id.
-- The vector branch reads each record by its whole text and by its opening
-- (its content's first sentence, vector_records.opening), the better of the
-- two similarities counting: the database's graph gives the 100 (or more)
-- nearest by whole text, and the best of them re-scored so are the branch.
-- fusion 'convex' (the default): the weighted mean of each branch's scores
--   scaled to 0..1 within the branch (min-max; absent from a branch counts
--   0), records holding an identifier of the query (an exact token with a
--   digit or a joiner other than "-": a part number, an e-mail address)
--   adding the keyword weight again, so an identifier wins over meaning;
-- fusion 'rrf': Reciprocal Rank Fusion, each branch adding
--   weight / (60 + rank), the identifier records a third branch at the
--   keyword weight.
-- Each branch fetches more than `k` (2k, at least 30), so a record ranked
-- well by both but first by neither is still seen. `query_vector`, when given,
-- is taken as the query's embedding. vigil._fuse (vigil_search::fusion)
-- fuses the branches' rankings, where a join of the two in SQL, with its
-- window functions and sorts, took a fifth of a search (README).
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
    FROM (SELECT n.id, greatest(n.similarity, (1 - vigil.cosine_distance(r.opening, qv))::real) AS similarity
          FROM vigil._nearest(db_id, qv, greatest(fetched, 100)) n JOIN vector_records r ON r.id = n.id
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

-- The beam of a search for `k` records in a database of `records`: wide
-- enough for recall@10 of 0.99 against an exact search, which takes a wider
-- beam as a graph grows (make bench-vectordb-recall, docs/performance.md:
-- 120 reaches 0.994 at 50,000 records; at 100,000 among 100 other
-- databases, 400 queries, 120 reaches 0.988, 200 0.990, 300 0.993; at
-- 1,000,000 records 400 reaches 0.990 and 600 0.993), or `k` when larger;
-- at most 1,000 (the scan goes on past it, vigil.hnsw_iterative_scan, for a
-- hybrid search's 2,000). Each step up costs every search of such a
-- database: at 100,000 records 300 takes 1.3 ms where 120 takes 0.6.
CREATE OR REPLACE FUNCTION vigil._search_ef(k integer, records bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT least(greatest(k, CASE WHEN records <= 50000 THEN 120
                                  WHEN records <= 200000 THEN 300
                                  WHEN records <= 500000 THEN 400
                                  ELSE 600 END), 1000)
$$;
