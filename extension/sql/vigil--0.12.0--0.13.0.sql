-- vigil 0.12.0 -> 0.13.0: the vector tables ready to be spread over a Citus
-- cluster by account (vigil.distribute, docs/scaling-out.md). Every key of
-- vector_terms and vector_postings now holds the account (a column filled
-- from the records' databases), vector_records' key is (id, account), and
-- vector_databases' id is unique with its account only (ids come from one
-- sequence). The vector functions run as their owner and name the account
-- in every statement; the trigger keeping the keyword index writes the
-- tables beside the one it fires on. No record moves.

\echo Use "ALTER EXTENSION vigil UPDATE TO '0.13.0'" to load this file. \quit

ALTER TABLE vigil.vector_terms DROP CONSTRAINT vector_terms_db_fkey;
ALTER TABLE vigil.vector_postings DROP CONSTRAINT vector_postings_db_fkey;
ALTER TABLE vigil.vector_databases DROP CONSTRAINT vector_databases_id_key;

ALTER TABLE vigil.vector_records DROP CONSTRAINT vector_records_pkey;
ALTER TABLE vigil.vector_records ADD PRIMARY KEY (id, account);

ALTER TABLE vigil.vector_terms ADD COLUMN account text;
UPDATE vigil.vector_terms t SET account = d.account FROM vigil.vector_databases d WHERE d.id = t.db;
ALTER TABLE vigil.vector_terms ALTER COLUMN account SET NOT NULL;
ALTER TABLE vigil.vector_terms DROP CONSTRAINT vector_terms_pkey;
ALTER TABLE vigil.vector_terms ADD PRIMARY KEY (db, term, account);
ALTER TABLE vigil.vector_terms ADD FOREIGN KEY (db, account)
    REFERENCES vigil.vector_databases (id, account) ON DELETE CASCADE;

ALTER TABLE vigil.vector_postings ADD COLUMN account text;
UPDATE vigil.vector_postings p SET account = d.account FROM vigil.vector_databases d WHERE d.id = p.db;
ALTER TABLE vigil.vector_postings ALTER COLUMN account SET NOT NULL;
ALTER TABLE vigil.vector_postings DROP CONSTRAINT vector_postings_pkey;
ALTER TABLE vigil.vector_postings ADD PRIMARY KEY (db, term, first_id, account);
ALTER TABLE vigil.vector_postings ADD FOREIGN KEY (db, account)
    REFERENCES vigil.vector_databases (id, account) ON DELETE CASCADE;

DROP POLICY own_account ON vigil.vector_terms;
CREATE POLICY own_account ON vigil.vector_terms
    USING (account = vigil.current_account())
    WITH CHECK (account = vigil.current_account());
DROP POLICY own_account ON vigil.vector_postings;
CREATE POLICY own_account ON vigil.vector_postings
    USING (account = vigil.current_account())
    WITH CHECK (account = vigil.current_account());

-- The keyword reader takes the account (its statement names it).
DROP FUNCTION vigil._bm25_search_kept(bigint, bigint, tid, text[], bigint, real, integer);
CREATE FUNCTION vigil."_bm25_search_kept"(
	"db_id" bigint, /* i64 */
	"account" TEXT, /* & str */
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
REVOKE EXECUTE ON FUNCTION vigil._bm25_search_kept(bigint, text, bigint, tid, text[], bigint, real, integer) FROM PUBLIC;

-- The trigger and the functions, as 0.13.0 writes them.
CREATE OR REPLACE FUNCTION vigil._colocated(fired_on text, wanted text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, vigil
AS $$
DECLARE
    shard bigint := substring(fired_on FROM '^vector_records_([0-9]+)$')::bigint;
    found bigint;
BEGIN
    IF shard IS NULL THEN
        RETURN format('vigil.%I', wanted);
    END IF;
    -- pg_dist_shard exists only where Citus is: read dynamically.
    EXECUTE 'SELECT s.shardid FROM pg_dist_shard s JOIN pg_dist_shard r ON r.shardminvalue = s.shardminvalue
             WHERE r.shardid = $1 AND s.logicalrelid = $2::regclass'
    INTO found USING shard, format('vigil.%I', wanted);
    IF found IS NULL THEN
        RAISE EXCEPTION 'no shard of vigil.% beside shard % of vigil.vector_records', wanted, shard
            USING HINT = 'vigil.distribute() colocates the vector tables';
    END IF;
    RETURN format('vigil.%I', wanted || '_' || found);
END
$$;

CREATE OR REPLACE FUNCTION vigil._count_terms() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    terms text := vigil._colocated(TG_TABLE_NAME, 'vector_terms');
    postings text := vigil._colocated(TG_TABLE_NAME, 'vector_postings');
    dbs text := vigil._colocated(TG_TABLE_NAME, 'vector_databases');
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
        EXECUTE format($q$
            UPDATE %1$s v SET records = v.records - g.n
            FROM (SELECT o.db, o.account, t.term, count(*) AS n
                  FROM old_rows o, unnest(tsvector_to_array(o.terms)) AS t (term)
                  WHERE EXISTS (SELECT FROM %2$s d WHERE d.id = o.db AND d.account = o.account)
                  GROUP BY o.db, o.account, t.term) g
            WHERE v.db = g.db AND v.term = g.term AND v.account = g.account$q$, terms, dbs);
        EXECUTE format($q$
            DELETE FROM %1$s v
            USING (SELECT DISTINCT o.db, o.account, t.term
                   FROM old_rows o, unnest(tsvector_to_array(o.terms)) AS t (term)) g
            WHERE v.db = g.db AND v.term = g.term AND v.account = g.account AND v.records <= 0$q$, terms);
        -- Their postings, out of the blocks holding them.
        EXECUTE format($q$
            WITH gone AS (
                SELECT o.db, o.account, u.lexeme AS term, array_agg(o.id) AS ids,
                       min(o.id) AS low, max(o.id) AS high
                FROM old_rows o, unnest(o.terms) AS u
                WHERE EXISTS (SELECT FROM %2$s d WHERE d.id = o.db AND d.account = o.account)
                GROUP BY o.db, o.account, u.lexeme
            ), hit AS (
                DELETE FROM %1$s p USING gone g
                WHERE p.db = g.db AND p.term = g.term AND p.account = g.account
                  AND p.first_id <= g.high AND p.last_id >= g.low
                  AND vigil._postings_holds_any(p.postings, g.ids)
                RETURNING p.db, p.account, p.term, p.postings, g.ids
            )
            INSERT INTO %1$s (db, account, term, first_id, last_id, size, postings)
            SELECT h.db, h.account, h.term, b.first_id, b.last_id, b.size, b.postings
            FROM hit h, vigil._postings_remove(h.postings, h.ids) AS b$q$, postings, dbs);
        EXECUTE format($q$
            UPDATE %1$s d
            SET records = d.records - s.n, total_length = d.total_length - s.length
            FROM (SELECT o.db, o.account, count(*) AS n, sum(vigil.bm25_length(o.terms)) AS length
                  FROM old_rows o GROUP BY o.db, o.account) s
            WHERE d.id = s.db AND d.account = s.account$q$, dbs);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        EXECUTE format($q$
            INSERT INTO %1$s AS v (db, account, term, records)
            SELECT n.db, n.account, t.term, count(*)
            FROM new_rows n, unnest(tsvector_to_array(n.terms)) AS t (term)
            GROUP BY n.db, n.account, t.term
            ORDER BY n.db, t.term, n.account
            ON CONFLICT (db, term, account) DO UPDATE SET records = v.records + excluded.records$q$, terms);
        -- Their postings, merged into each term's newest block while it has
        -- room, then into new blocks.
        EXECUTE format($q$
            WITH added AS (
                SELECT n.db, n.account, u.lexeme AS term,
                       array_agg(n.id ORDER BY n.id) AS ids,
                       array_agg(greatest(cardinality(u.positions), 1) ORDER BY n.id) AS tfs,
                       array_agg(n.length ORDER BY n.id) AS lengths
                FROM (SELECT r.id, r.db, r.account, r.terms, vigil.bm25_length(r.terms) AS length
                      FROM new_rows r) n,
                     unnest(n.terms) AS u
                GROUP BY n.db, n.account, u.lexeme
            ), tails AS (
                DELETE FROM %1$s p USING added a
                WHERE p.db = a.db AND p.term = a.term AND p.account = a.account
                  AND p.size < vigil._postings_block_size()
                  AND p.first_id = (SELECT max(q.first_id) FROM %1$s q
                                    WHERE q.db = a.db AND q.term = a.term AND q.account = a.account)
                RETURNING p.db, p.account, p.term, p.postings
            )
            INSERT INTO %1$s (db, account, term, first_id, last_id, size, postings)
            SELECT a.db, a.account, a.term, b.first_id, b.last_id, b.size, b.postings
            FROM added a LEFT JOIN tails t ON t.db = a.db AND t.term = a.term AND t.account = a.account,
                 vigil._postings_append(t.postings, a.ids, a.tfs, a.lengths) AS b$q$, postings);
        EXECUTE format($q$
            UPDATE %1$s d
            SET records = d.records + s.n, total_length = d.total_length + s.length
            FROM (SELECT n.db, n.account, count(*) AS n, sum(vigil.bm25_length(n.terms)) AS length
                  FROM new_rows n GROUP BY n.db, n.account) s
            WHERE d.id = s.db AND d.account = s.account$q$, dbs);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION vigil.create_database(db text)
RETURNS TABLE (account text, name text, created_at timestamptz, created boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
BEGIN
    account := vigil._require_account();
    IF db IS NULL OR NOT vigil.valid_db_name(db) THEN
        RAISE EXCEPTION 'dbName must be 1 to 63 letters, digits, "_", "." or "-", starting with a letter or digit'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'dbName';
    END IF;
    name := db;
    INSERT INTO vigil.vector_databases AS d (account, name) VALUES (create_database.account, db)
    ON CONFLICT DO NOTHING
    RETURNING d.created_at INTO created_at;
    created := FOUND;
    IF NOT created THEN
        SELECT d.created_at INTO created_at FROM vigil.vector_databases d
        WHERE d.account = create_database.account AND d.name = db;
    END IF;
    RETURN NEXT;
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
    SELECT d.id INTO found_id FROM vector_databases d WHERE d.account = acct AND d.name = wanted;
    IF found_id IS NULL THEN
        RAISE EXCEPTION 'no database "%" in account %', wanted, acct
            USING ERRCODE = 'no_data_found', COLUMN = 'dbName',
                  HINT = 'create it with vigil.create_database or POST /createDatabase';
    END IF;
    RETURN found_id;
END
$$;

CREATE OR REPLACE FUNCTION vigil.drop_database(db text DEFAULT NULL)
RETURNS TABLE (name text, records bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
BEGIN
    RETURN QUERY
    DELETE FROM vector_databases d WHERE d.account = acct AND d.id = db_id
    RETURNING d.name, d.records;
    -- Another transaction dropped it after _database found it (two drops at once).
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no database "%" in account %', coalesce(db, current_setting('vigil.db', true)),
            vigil.current_account()
            USING ERRCODE = 'no_data_found', COLUMN = 'dbName';
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
END
$$;

CREATE OR REPLACE FUNCTION vigil.list_records(start bigint DEFAULT 0, lim integer DEFAULT 10, db text DEFAULT NULL)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, embedding real[])
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
BEGIN
    PERFORM vigil._check_limit(lim);
    IF start IS NULL OR start < 0 THEN
        PERFORM vigil._refuse('start', format('start must be 0 or more, not %s', coalesce(start::text, 'null')));
    END IF;
    RETURN QUERY
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, r.embedding
    FROM vector_records r WHERE r.account = acct AND r.db = db_id
    ORDER BY r.id OFFSET start LIMIT lim;
END
$$;

CREATE OR REPLACE FUNCTION vigil.delete_record(id bigint, db text DEFAULT NULL)
RETURNS SETOF vigil.vector_record
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
BEGIN
    RETURN QUERY
    DELETE FROM vector_records r
    WHERE r.account = acct AND r.db = db_id AND r.id = delete_record.id
    RETURNING r.id, r.title, r.content, r.metadata, r.created_at;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no record % in database %', delete_record.id, coalesce(db, current_setting('vigil.db', true))
            USING ERRCODE = 'no_data_found', COLUMN = 'id';
    END IF;
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
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM vigil._bm25_search_kept(db_id, acct, version_xmin,
        version_ctid, tsvector_to_array(vigil.search_terms(query)), n, average, k);
END
$$;

CREATE OR REPLACE FUNCTION vigil.query_embeddings(query text, db text DEFAULT NULL, k integer DEFAULT 10,
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

CREATE OR REPLACE FUNCTION vigil.keyword_search(query text, k integer DEFAULT 10, db text DEFAULT NULL)
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

-- The account list, through a function running as its owner.
CREATE OR REPLACE FUNCTION vigil._account_list()
RETURNS TABLE (account text, created_at timestamptz, active_user_keys bigint, databases text[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
    WITH keys AS MATERIALIZED (
        SELECT u.account, count(*) AS n FROM user_keys u
        WHERE vigil._key_status(u.revoked_at, u.expires_at) = 'active'
        GROUP BY u.account
    ), dbs AS MATERIALIZED (
        SELECT d.account, array_agg(d.name ORDER BY d.name) AS names FROM vector_databases d
        GROUP BY d.account
    )
    SELECT a.account, a.created_at, coalesce(k.n, 0), coalesce(d.names, '{}')
    FROM accounts a LEFT JOIN keys k ON k.account = a.account LEFT JOIN dbs d ON d.account = a.account
$$;
REVOKE EXECUTE ON FUNCTION vigil._account_list() FROM PUBLIC;
CREATE OR REPLACE VIEW vigil.account_list AS SELECT * FROM vigil._account_list();

-- Scaling out (cluster/schema.sql).
CREATE FUNCTION vigil._make_room_for_citus() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
DECLARE
    t text;
    n bigint;
BEGIN
    IF to_regclass('vigil.vector_records') IS NULL
       OR NOT EXISTS (SELECT FROM pg_depend WHERE classid = 'pg_class'::regclass
                      AND objid = to_regclass('vigil.vector_records') AND deptype = 'e') THEN
        RETURN;
    END IF;
    FOREACH t IN ARRAY ARRAY['vigil.accounts', 'vigil.user_keys', 'vigil.vector_databases',
                             'vigil.vector_records', 'vigil.vector_terms', 'vigil.vector_postings'] LOOP
        EXECUTE format('SELECT count(*) FROM %s', t) INTO n;
        IF n > 0 THEN
            RAISE EXCEPTION 'this server''s own % holds % rows: a new worker must be an empty server', t, n;
        END IF;
    END LOOP;
    ALTER EXTENSION vigil DROP VIEW vigil.user_key_list;
    DROP VIEW vigil.user_key_list;
    ALTER EXTENSION vigil DROP SEQUENCE vigil.user_keys_id_seq;
    ALTER EXTENSION vigil DROP SEQUENCE vigil.vector_databases_id_seq;
    ALTER EXTENSION vigil DROP SEQUENCE vigil.vector_records_id_seq;
    FOREACH t IN ARRAY ARRAY['vigil.vector_postings', 'vigil.vector_terms', 'vigil.vector_records',
                             'vigil.vector_databases', 'vigil.user_keys', 'vigil.accounts'] LOOP
        EXECUTE format('ALTER EXTENSION vigil DROP TABLE %s', t);
        EXECUTE format('DROP TABLE %s', t);
    END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION vigil._make_room_for_citus() FROM PUBLIC;

CREATE FUNCTION vigil.distribute(shard_count integer DEFAULT 32)
RETURNS TABLE (relation regclass, kind text, rows_kept bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
DECLARE
    shared CONSTANT text[] := ARRAY['vigil.accounts', 'vigil.user_keys'];
    spread CONSTANT text[] := ARRAY['vigil.vector_databases', 'vigil.vector_records',
                                    'vigil.vector_terms', 'vigil.vector_postings'];
    t text;
    keys text[];
    failed text;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'vigil.distribute() needs Citus in this database'
            USING HINT = 'CREATE EXTENSION citus on every server, add the workers (citus_add_node), then call it again: docs/scaling-out.md';
    END IF;
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE EXCEPTION 'vigil.distribute() must be run by a superuser' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF shard_count IS NULL OR shard_count NOT BETWEEN 1 AND 64000 THEN
        PERFORM vigil._refuse('shard_count', 'shard_count must be 1 to 64000');
    END IF;
    -- Citus's functions are called by EXECUTE: they exist only where it is.
    EXECUTE 'SELECT NOT citus_is_coordinator()' INTO STRICT failed;
    IF failed::boolean THEN
        RAISE EXCEPTION 'vigil.distribute() runs on the coordinator';
    END IF;
    EXECUTE $q$SELECT count(*) = 0 FROM pg_dist_node
               WHERE noderole = 'primary' AND isactive AND shouldhaveshards$q$ INTO STRICT failed;
    IF failed::boolean THEN
        RAISE EXCEPTION 'this coordinator has no workers'
            USING HINT = 'add them first: SELECT citus_add_node(host, port)';
    END IF;
    -- One connection a worker: the tables refer to the reference tables,
    -- which Citus cannot read and change over several at once.
    SET LOCAL citus.multi_shard_modify_mode = 'sequential';
    EXECUTE 'SELECT to_regclass(''vigil.vector_records'') IN (SELECT logicalrelid FROM pg_dist_partition)'
        INTO STRICT failed;
    IF NOT failed::boolean THEN
        EXECUTE 'SELECT string_agg(format(''%s:%s: %s'', nodename, nodeport, result), ''; '')
                 FROM run_command_on_workers(''SELECT vigil._make_room_for_citus()'') WHERE NOT success'
            INTO failed;
        IF failed IS NOT NULL THEN
            RAISE EXCEPTION 'could not make room on the workers: %', failed;
        END IF;
        -- Users' tables from now on, not the extension's: Citus distributes
        -- only those, and creates them on the workers itself.
        ALTER EXTENSION vigil DROP VIEW vigil.user_key_list;
        FOREACH t IN ARRAY shared || spread LOOP
            EXECUTE format('ALTER EXTENSION vigil DROP TABLE %s', t);
        END LOOP;
        ALTER EXTENSION vigil DROP SEQUENCE vigil.user_keys_id_seq;
        ALTER EXTENSION vigil DROP SEQUENCE vigil.vector_databases_id_seq;
        ALTER EXTENSION vigil DROP SEQUENCE vigil.vector_records_id_seq;
        -- The rows are copied as they are: the counts and the keyword index
        -- travel with them, so the triggers that would count them again
        -- stay off while they are copied.
        ALTER TABLE vigil.vector_records DISABLE TRIGGER USER;
        ALTER TABLE vigil.vector_databases DISABLE TRIGGER USER;
        -- The foreign keys between them go while the tables move and come
        -- back after (Citus would otherwise take a table that refers to one
        -- it has moved for a local table of its own, which it cannot move).
        SELECT array_agg(format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.conrelid::regclass, c.conname,
                                pg_get_constraintdef(c.oid)) ORDER BY c.conrelid::regclass::text <> 'vigil.accounts',
                         c.conrelid, c.conname)
        INTO keys
        FROM pg_constraint c
        WHERE c.contype = 'f' AND c.conrelid = ANY ((shared || spread)::regclass[]);
        FOR t IN SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', c.conrelid::regclass, c.conname)
                 FROM pg_constraint c
                 WHERE c.contype = 'f' AND c.conrelid = ANY ((shared || spread)::regclass[]) LOOP
            EXECUTE t;
        END LOOP;
        SET LOCAL citus.enable_unsafe_triggers = on;
        EXECUTE format('SET LOCAL citus.shard_count = %s', shard_count);
        FOREACH t IN ARRAY shared LOOP
            EXECUTE 'SELECT create_reference_table($1)' USING t;
        END LOOP;
        EXECUTE 'SELECT create_distributed_table($1, ''account'')' USING spread[1];
        FOREACH t IN ARRAY spread[2:] LOOP
            EXECUTE 'SELECT create_distributed_table($1, ''account'', colocate_with => $2)' USING t, spread[1];
        END LOOP;
        FOREACH t IN ARRAY keys LOOP
            EXECUTE t;
        END LOOP;
        ALTER TABLE vigil.vector_records ENABLE TRIGGER USER;
        ALTER TABLE vigil.vector_databases ENABLE TRIGGER USER;
    END IF;
    -- Citus moves a shard by logical replication, as a role that is a member
    -- of the tables' owner; a table whose owner is held to its row-level
    -- security (FORCE) refuses that role's rows. Its owner here is a
    -- superuser, which row-level security never holds, so FORCE changes
    -- nothing else.
    FOREACH t IN ARRAY spread LOOP
        EXECUTE format('ALTER TABLE %s NO FORCE ROW LEVEL SECURITY', t);
    END LOOP;
    -- Citus plans a statement naming a distributed table with its
    -- parameters' values; the generic plans the vector searches keep on one
    -- server (vectordb/schema.sql) it cannot make. Again after each
    -- ALTER EXTENSION vigil UPDATE, which writes the functions anew.
    FOR t IN SELECT p.oid::regprocedure::text FROM pg_proc p
             WHERE p.pronamespace = 'vigil'::regnamespace
               AND 'plan_cache_mode=force_generic_plan' = ANY (p.proconfig) LOOP
        EXECUTE format('ALTER FUNCTION %s SET plan_cache_mode = auto', t);
    END LOOP;
    FOREACH t IN ARRAY shared || spread LOOP
        relation := t::regclass;
        kind := CASE WHEN t = ANY (shared) THEN 'reference' ELSE 'distributed by account' END;
        EXECUTE format('SELECT count(*) FROM %s', t) INTO rows_kept;
        RETURN NEXT;
    END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION vigil.distribute(integer) FROM PUBLIC;

-- Adds the server at host:port as a worker (citus_add_node), first making
-- room there for the distributed tables when vigil.distribute() has run
-- (vigil._make_room_for_citus, over Citus's own connection as the caller).
-- Then SELECT citus_rebalance_start() moves shards onto it. The server
-- needs vigil and Citus created in this database first, as every node.
CREATE FUNCTION vigil.add_worker(host text, port integer DEFAULT 5432) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
DECLARE
    ok boolean;
    said text;
    node integer;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'vigil.add_worker() needs Citus in this database';
    END IF;
    IF host IS NULL OR port IS NULL THEN
        PERFORM vigil._refuse('host', 'host and port are required');
    END IF;
    EXECUTE 'SELECT to_regclass(''vigil.vector_records'') IN (SELECT logicalrelid FROM pg_dist_partition)'
        INTO STRICT ok;
    IF ok THEN
        EXECUTE 'SELECT success, result FROM master_run_on_worker(ARRAY[$1], ARRAY[$2], ARRAY[$3], false)'
            INTO STRICT ok, said USING host, port, 'SELECT vigil._make_room_for_citus()';
        IF NOT ok THEN
            RAISE EXCEPTION 'could not make room on %:%: %', host, port, said;
        END IF;
    END IF;
    EXECUTE 'SELECT citus_add_node($1, $2)' INTO STRICT node USING host, port;
    RETURN node;
END
$$;
REVOKE EXECUTE ON FUNCTION vigil.add_worker(text, integer) FROM PUBLIC;
