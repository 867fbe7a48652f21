-- The three searches (vigil.query_embeddings, vigil.keyword_search,
-- vigil.hybrid_search) and the branches they are made of.

-- The `k` records of database `db_id` nearest to `query_vector`, with
-- their cosine similarity, or with `openings` the better of it and their
-- opening's (hybrid search's vector branch): read from the row the search
-- fetches anyway, where a join back to the table for the opening cost 0.45
-- of the 3.5 ms a hybrid search takes at 100,000 records with 4 clients on
-- 2 cores (docs/performance.md). From the database's own graph in the
-- partitioned index (`db = db_id` picks it), whose beam is
-- vigil._search_ef(k, records) wide; a database too small for a graph to pay is
-- scanned exactly instead (a function call the index cannot serve, instead
-- of the operator).
--
-- Plans: the exact path is planned on each call (EXECUTE), for its
-- database's size. The graph path's statement is planned once per
-- connection (a generic plan: 12 to 15% more hybrid searches a second than
-- planning every call, docs/performance.md), and only the graph can serve
-- it: with sorts and sequential scans off while it is planned the index is
-- the one plan left. Otherwise a plan made while the table was small could
-- sort the whole database on every call once it is large. JIT is off:
-- sorting switched off costs the exact path's sort a disable_cost, which
-- passes jit_above_cost, and compiling the statement took 75 to 290 ms of
-- a search that runs in 1 (a database of 1,000 records answered 39
-- searches a second over HTTP).
-- The beam of a search for `k` records in a database of `records`: wide
-- enough for recall@10 of 0.99 against an exact search, with a margin, in
-- graphs built with a beam of 128 (make bench-vectordb-recall,
-- docs/performance.md, 200 held-out queries: 80 reaches 0.9945 at 50,000
-- records; 120 reaches 0.994 at 100,000 among 100 other databases; 200
-- reaches 0.9935 at 1,000,000, 400 0.9945), or `k` when larger; at most
-- 1,000 (the scan goes on past it, vigil.hnsw_iterative_scan, for a hybrid
-- search's 2,000). Each step up costs every search of such a database: at
-- 100,000 records 120 takes 0.5 ms where 400 takes 1.5.
CREATE FUNCTION vigil._search_ef(k integer, records bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT least(greatest(k, CASE WHEN records <= 50000 THEN 80
                                  WHEN records <= 200000 THEN 120
                                  WHEN records <= 1000000 THEN 200
                                  ELSE 400 END), 1000)
$$;

CREATE FUNCTION vigil._nearest(db_id bigint, query_vector real[], k integer, openings boolean DEFAULT false)
RETURNS TABLE (id bigint, similarity real)
LANGUAGE plpgsql VOLATILE -- it SETs the beam (a statement no STABLE function may run)
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
SET enable_sort = off SET enable_seqscan = off SET jit = off
SET citus.propagate_set_commands = 'local'
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    in_db bigint;
BEGIN
    SELECT d.records INTO in_db FROM vector_databases d WHERE d.account = acct AND d.id = db_id;
    IF NOT FOUND THEN
        -- Called directly with an id the caller cannot see (the searches
        -- look the database up by name first).
        PERFORM vigil._no_database(format('#%s', db_id));
    END IF;
    IF k IS NULL OR k NOT BETWEEN 1 AND 2000 THEN
        PERFORM vigil._refuse('k', format('k must be 1 to 2000, not %s', coalesce(k::text, 'null')));
    END IF;
    IF cardinality(query_vector) IS DISTINCT FROM 384 THEN
        PERFORM vigil._refuse('query_vector', 'query_vector must be 384 numbers');
    END IF;
    IF in_db <= 2000 THEN
        RETURN QUERY EXECUTE
            'SELECT r.id, greatest(1 - vigil.cosine_distance(r.embedding, $2),
                                  CASE WHEN $4 THEN 1 - vigil.cosine_distance(r.opening, $2) END)::real
             FROM vigil.vector_records r WHERE r.account = $5 AND r.db = $1
             ORDER BY vigil.cosine_distance(r.embedding, $2), r.id
             LIMIT $3'
            USING db_id, query_vector, k, openings, acct;
    ELSE
        -- A statement, not set_config: on a cluster, Citus passes SET LOCAL
        -- on to the worker that runs the search (in a transaction block,
        -- as the sidecar's are).
        EXECUTE format('SET LOCAL vigil.hnsw_ef_search = %s', vigil._search_ef(k, in_db));
        RETURN QUERY
        SELECT r.id, greatest(1 - (r.embedding <=> query_vector),
                              CASE WHEN openings THEN 1 - vigil.cosine_distance(r.opening, query_vector) END)::real
        FROM vector_records r WHERE r.account = acct AND r.db = db_id
        ORDER BY r.embedding <=> query_vector
        LIMIT k;
    END IF;
END
$$;

-- The `k` records of database `db_id` ranked highest by BM25 for `query`,
-- any of its terms matching, ties by id: exact, from vector_terms and the
-- blocks of vector_postings alone (vigil_search::postings::top_k, MaxScore
-- with block-max bounds). Terms go rarest first, the order scores are summed
-- in. The terms' record counts and blocks are read by vigil._bm25_search_kept,
-- which keeps them in the backend for the next search of the same version of
-- the database (the row version of its counts, which every write of its
-- postings replaces): a common word's blocks are a few hundred rows, read
-- once, not every search, and a search of words the backend knows reads no
-- table but the database's row.
--
-- SECURITY DEFINER, checking itself that `db_id` is a database of the
-- current account: row-level security on vector_postings would make every
-- block read check its database again, and the caller's database is all
-- this reads. Postings carry their database, whose account the check
-- confines the read to.
CREATE FUNCTION vigil._keyword_ranked(db_id bigint, query text, k integer)
RETURNS TABLE (id bigint, score real)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    n bigint;
    average real;
    version_xmin bigint;
    version_ctid tid;
BEGIN
    SELECT d.records, d.total_length::real / greatest(d.records, 1), d.xmin::text::bigint, d.ctid
    INTO n, average, version_xmin, version_ctid
    FROM vector_databases d WHERE d.account = acct AND d.id = db_id;
    IF NOT FOUND THEN
        PERFORM vigil._no_database(format('#%s', db_id));
    END IF;
    RETURN QUERY SELECT * FROM vigil._bm25_search_kept(db_id, acct, version_xmin,
        version_ctid, tsvector_to_array(vigil.search_terms(query)), n, average, k);
END
$$;

-- The terms a backend keeps are those of the accounts whose searches read
-- them, and pooled connections change accounts: only _keyword_ranked,
-- running as the owner after its account check, reads them.
REVOKE EXECUTE ON FUNCTION vigil._bm25_search_kept(bigint, text, bigint, tid, text[], bigint, real, integer) FROM PUBLIC;

-- A tsquery matching any of `lexemes`, taken as they are (not stemmed again).
CREATE FUNCTION vigil._any_term(lexemes text[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | ')::tsquery
    FROM unnest(lexemes) AS l
$$;

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

-- The three searches run with generic plans (plan_cache_mode, which the
-- functions they call inherit): each statement is planned once per
-- connection, not on every call, where custom plans had a fifth of a hybrid
-- search's time in SQL going to the planner. Their plans do not depend on
-- the values (ids, terms, a database's own statistics), except in
-- _nearest's exact path, which plans for its database each call: a generic
-- plan guesses a database's share of all records, and guessed a small
-- database large enough to scan every record (57 searches/s where custom
-- plans answer 1,500). Its graph path has one plan whatever the database.

-- The records most similar in meaning to `query`, with cosine `similarity`.
-- `query_vector`, when given, is taken as the query's embedding.
CREATE FUNCTION vigil.query_embeddings(query text, db text DEFAULT NULL, k integer DEFAULT 10,
                                       query_vector real[] DEFAULT NULL)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, similarity real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
    ids bigint[];
    similarities real[];
BEGIN
    PERFORM vigil._check_search(query, k);
    -- The nearest first, then their rows: on a cluster a statement that
    -- reads the records must not call a function that reads them too.
    SELECT array_agg(x.id), array_agg(x.similarity) INTO ids, similarities
    FROM vigil._nearest(db_id, vigil._query_vector(query, query_vector), k) x;
    RETURN QUERY
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, x.similarity
    FROM unnest(ids, similarities) AS x (id, similarity)
    JOIN vector_records r ON r.id = x.id
    WHERE r.account = acct
    ORDER BY x.similarity DESC, r.id;
END
$$;

-- The records ranked highest by BM25 for `query` (any of its words), with `score`.
CREATE FUNCTION vigil.keyword_search(query text, k integer DEFAULT 10, db text DEFAULT NULL)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, score real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
    ids bigint[];
    scores real[];
BEGIN
    PERFORM vigil._check_search(query, k);
    SELECT array_agg(x.id), array_agg(x.score) INTO ids, scores
    FROM vigil._keyword_ranked(db_id, query, k) x;
    RETURN QUERY
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, x.score
    FROM unnest(ids, scores) AS x (id, score) JOIN vector_records r ON r.id = x.id
    WHERE r.account = acct
    ORDER BY x.score DESC, r.id;
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
CREATE FUNCTION vigil.hybrid_search(
    query text,
    k integer,
    db text DEFAULT NULL,
    fusion text DEFAULT 'convex',
    vector_weight real DEFAULT 1,
    keyword_weight real DEFAULT 1,
    query_vector real[] DEFAULT NULL
)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, score real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
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
    -- Named as the request names them (vectorWeight, keywordWeight).
    IF vector_weight IS NULL OR vector_weight < 0 THEN
        PERFORM vigil._refuse('vectorWeight', format('vectorWeight must be 0 or more, not %s',
                                                     coalesce(vector_weight::text, 'null')));
    ELSIF keyword_weight IS NULL OR keyword_weight < 0 THEN
        PERFORM vigil._refuse('keywordWeight', format('keywordWeight must be 0 or more, not %s',
                                                      coalesce(keyword_weight::text, 'null')));
    ELSIF vector_weight + keyword_weight = 0 THEN
        PERFORM vigil._refuse('vectorWeight',
            'vectorWeight and keywordWeight are both 0: at least one must be above 0');
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
        FROM vector_records r
        WHERE r.account = acct AND r.id = ANY (keyword_ids) AND r.terms @@ vigil._any_term(identifiers);
    END IF;
    RETURN QUERY
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, f.score::real
    FROM vigil._fuse(vector_ids, similarities, keyword_ids, scores, identified, k, fusion,
                     vector_weight, keyword_weight) f
    JOIN vector_records r ON r.id = f.id
    WHERE r.account = acct
    ORDER BY f.score DESC, r.id;
END
$$;
