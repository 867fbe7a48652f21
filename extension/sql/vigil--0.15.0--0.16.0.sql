-- 0.15.0 -> 0.16.0 (issue 60, part 4): limits and codes. No data changes;
-- functions only.

-- What changed:
-- - names the caller gave are repeated in errors cut to 64 characters
--   (vigil._echo): a 5,000-character dbName came back whole in a 404;
-- - a title, content or query of only Unicode white space or zero-width
--   characters is blank (vigil._blank), as one of ASCII spaces was;
-- - a store racing a delete of its database answers P0002 "no database"
--   (404 on HTTP), not the foreign key's 23503 (400);
-- - _nearest and _keyword_ranked given a database id the caller cannot see
--   say so (P0002), where _nearest raised a syntax error;
-- - hybrid_search names the weight at fault as the request does
--   (vectorWeight, keywordWeight), not a field "weights" no request has.

CREATE FUNCTION vigil._echo(given text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT CASE WHEN pg_catalog.char_length(given) <= 64 THEN given
                ELSE pg_catalog.left(given, 63) || '…' END
$$;

CREATE FUNCTION vigil._blank(t text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT t !~ '[^\s\u0085\u00a0\u00ad\u034f\u115f\u1160\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2800\u3000\u3164\uffa0\ufeff]'
$$;

CREATE FUNCTION vigil._no_database(db text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RAISE EXCEPTION 'no database "%" in account %', vigil._echo(db), vigil.current_account()
        USING ERRCODE = 'no_data_found', COLUMN = 'dbName',
              HINT = 'create it with vigil.create_database or POST /createDatabase';
END
$$;

CREATE OR REPLACE FUNCTION vigil._check_record(prefix text, title text, content text, metadata jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF title IS NULL THEN
        PERFORM vigil._refuse(prefix || 'title', prefix || 'title is required (a string, may be empty)');
    ELSIF length(title) > 1000 THEN
        PERFORM vigil._refuse(prefix || 'title', prefix || 'title is longer than 1,000 characters');
    ELSIF content IS NULL THEN
        PERFORM vigil._refuse(prefix || 'content', prefix || 'content is required (a string)');
    ELSIF length(content) > 100000 THEN
        PERFORM vigil._refuse(prefix || 'content', prefix || 'content is longer than 100,000 characters');
    ELSIF vigil._blank(title || content) THEN
        PERFORM vigil._refuse(prefix || 'content', prefix || 'title and content are both empty: nothing to store');
    ELSIF metadata IS NOT NULL AND jsonb_typeof(metadata) <> 'object' THEN
        PERFORM vigil._refuse(prefix || 'metadata', prefix || 'metadata must be a JSON object');
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION vigil.store_records(records jsonb, db text DEFAULT NULL)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
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
EXCEPTION WHEN foreign_key_violation THEN
    -- The database was deleted after it was looked up (a delete that
    -- committed while the records were embedded): it is gone, as a store
    -- after the delete would be told.
    PERFORM vigil._no_database(coalesce(db, current_setting('vigil.db', true)));
END
$$;

CREATE OR REPLACE FUNCTION vigil.store_record(title text, content text, metadata jsonb DEFAULT '{}', db text DEFAULT NULL)
RETURNS SETOF vigil.vector_record
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
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
EXCEPTION WHEN foreign_key_violation THEN
    -- Deleted after it was looked up (see vigil.store_records).
    PERFORM vigil._no_database(coalesce(db, current_setting('vigil.db', true)));
END
$$;

CREATE OR REPLACE FUNCTION vigil._nearest(db_id bigint, query_vector real[], k integer, openings boolean DEFAULT false)
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

CREATE OR REPLACE FUNCTION vigil._keyword_ranked(db_id bigint, query text, k integer)
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

CREATE OR REPLACE FUNCTION vigil._require_granted(db text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF NOT vigil._database_granted(db) THEN
        RAISE EXCEPTION 'the user key is limited to other databases than "%"', vigil._echo(db)
            USING ERRCODE = 'insufficient_privilege', COLUMN = 'dbName';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION vigil._database(db text) RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    acct text := vigil._require_account();
    wanted text := coalesce(db, nullif(current_setting('vigil.db', true), ''));
    found_id bigint;
BEGIN
    IF wanted IS NULL THEN
        PERFORM vigil._refuse('dbName', 'dbName is required (pass it, or SET vigil.db)');
    END IF;
    PERFORM vigil._require_granted(wanted);
    SELECT d.id INTO found_id FROM vector_databases d WHERE d.account = acct AND d.name = wanted;
    IF found_id IS NULL THEN
        PERFORM vigil._no_database(wanted);
    END IF;
    RETURN found_id;
END
$$;

CREATE OR REPLACE FUNCTION vigil._check_search(query text, k integer) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF query IS NULL THEN
        PERFORM vigil._refuse('query', 'query is required');
    ELSIF vigil._blank(query) THEN
        PERFORM vigil._refuse('query', 'query is blank: give words to search for');
    ELSIF pg_catalog.char_length(query) > 1000 THEN
        PERFORM vigil._refuse('query', pg_catalog.format(
            'query is %s characters; at most 1000 are searched for', pg_catalog.char_length(query)));
    END IF;
    PERFORM vigil._check_limit(k);
END
$$;
