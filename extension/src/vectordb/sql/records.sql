-- Databases and records: the checks every vector function makes, and the
-- functions that create, store, list and delete.

-- `t` as the API's `createdAt`: nanoseconds since the Unix epoch, 19 digits.
CREATE FUNCTION vigil.epoch_ns(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT lpad((extract(epoch FROM t) * 1000000000)::bigint::text, 19, '0') $$;

-- The account a vector function acts for; an error naming the fix when none.
CREATE FUNCTION vigil._require_account() RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    acct text := vigil.current_account();
BEGIN
    IF acct IS NULL THEN
        RAISE EXCEPTION 'no account selected'
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'call vigil.enter_account(account, user_key, db) first, or as a superuser SET vigil.account';
    END IF;
    RETURN acct;
END
$$;

-- ERROR 42501 naming dbName when the user key that entered the account is
-- limited to other databases (vigil.enter_account), as HTTP answers 403.
CREATE FUNCTION vigil._require_granted(db text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF NOT vigil._database_granted(db) THEN
        RAISE EXCEPTION 'the user key is limited to other databases than "%"', vigil._echo(db)
            USING ERRCODE = 'insufficient_privilege', COLUMN = 'dbName';
    END IF;
END
$$;

-- ERROR 22023 naming `field`, as every refusal of a bad value is.
CREATE FUNCTION vigil._refuse(field text, message text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    RAISE EXCEPTION '%', message USING ERRCODE = 'invalid_parameter_value', COLUMN = field;
END
$$;

-- A name the caller gave, as an error message repeats it: at most 64
-- characters, so a 5,000-character name is not sent back whole.
CREATE FUNCTION vigil._echo(given text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT CASE WHEN pg_catalog.char_length(given) <= 64 THEN given
                ELSE pg_catalog.left(given, 63) || '…' END
$$;

-- Whether `t` holds nothing to see: only white space, Unicode's included
-- (no-break, ideographic, line and paragraph separators), and characters
-- that print nothing (zero-width spaces and joiners, direction marks, the
-- byte-order mark, soft hyphens, Hangul and braille fillers). `\s` alone
-- knows ASCII's only under the C locale.
CREATE FUNCTION vigil._blank(t text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT t !~ '[^\s\u0085\u00a0\u00ad\u034f\u115f\u1160\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2800\u3000\u3164\uffa0\ufeff]'
$$;

-- ERROR P0002 naming dbName: the account has no database `db` (or none of
-- that id: an internal function given one it cannot see, or one deleted
-- while a statement used it).
CREATE FUNCTION vigil._no_database(db text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RAISE EXCEPTION 'no database "%" in account %', vigil._echo(db), vigil.current_account()
        USING ERRCODE = 'no_data_found', COLUMN = 'dbName',
              HINT = 'create it with vigil.create_database or POST /createDatabase';
END
$$;

-- Creates the database `db` of the current account; `created` is false when it
-- already existed (creating is idempotent).
CREATE FUNCTION vigil.create_database(db text)
RETURNS TABLE (account text, name text, created_at timestamptz, created boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
BEGIN
    account := vigil._require_account();
    IF db IS NULL OR NOT vigil.valid_db_name(db) THEN
        RAISE EXCEPTION 'dbName must be 1 to 63 letters, digits, "_", "." or "-", starting with a letter or digit'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'dbName';
    END IF;
    PERFORM vigil._require_granted(db);
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

-- The id of the current account's database `db` (NULL: the setting
-- vigil.db); 22023 naming dbName when none is given, P0002 when unknown.
CREATE FUNCTION vigil._database(db text) RETURNS bigint
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

-- Deletes the database `db` with all its records; P0002 when unknown.
CREATE FUNCTION vigil.drop_database(db text DEFAULT NULL)
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

-- A checked record for the store functions: 22023 naming `prefix`||field
-- when `title` or `content` is missing or too long, or `metadata` is not an object.
CREATE FUNCTION vigil._check_record(prefix text, title text, content text, metadata jsonb) RETURNS void
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

-- A record as the store and delete functions return it (a type, not OUT
-- columns, so their parameters can be called title, content and id).
CREATE TYPE vigil.vector_record AS (id bigint, title text, content text, metadata jsonb, created_at timestamptz);

-- Stores records given as a JSON array of {title, content, metadata}: all of
-- them or, when one is refused, none. One model call embeds them all, each
-- as its title and content. Returns them in the order given.
CREATE FUNCTION vigil.store_records(records jsonb, db text DEFAULT NULL)
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

-- Stores one record (see vigil.store_records).
CREATE FUNCTION vigil.store_record(title text, content text, metadata jsonb DEFAULT '{}', db text DEFAULT NULL)
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

-- 22023 naming `field` unless 1 <= k <= 1000.
CREATE FUNCTION vigil._check_limit(k integer, field text DEFAULT 'limit') RETURNS integer
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF k IS NULL OR k NOT BETWEEN 1 AND 1000 THEN
        PERFORM vigil._refuse(field, format('%s must be 1 to 1000, not %s', field, coalesce(k::text, 'null')));
    END IF;
    RETURN k;
END
$$;

-- 22023 naming the field unless a search has a query of words, at most
-- 1,000 characters (the sidecar's MAX_QUERY_CHARS), and 1 <= k <= 1000.
CREATE FUNCTION vigil._check_search(query text, k integer) RETURNS void
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

-- Records of the database in the order they were stored, `lim` of them
-- from position `start` (0 is the first), with their embeddings.
CREATE FUNCTION vigil.list_records(start bigint DEFAULT 0, lim integer DEFAULT 10, db text DEFAULT NULL)
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

-- Deletes record `id` of the database and returns it; P0002 naming `id` when
-- the database has no such record.
CREATE FUNCTION vigil.delete_record(id bigint, db text DEFAULT NULL)
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
