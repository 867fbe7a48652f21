-- 0.14.0 -> 0.15.0 (issue 60): nothing of one tenant's reaches another.
-- No data changes; functions only.

-- A user key limited to some databases limits the whole transaction it
-- entered: vigil.enter_account records its databases (vigil.databases, a
-- superuser-only setting), and every vector function checks the database it
-- is given against them (vigil._require_granted), as HTTP does. Before, a
-- key entered with db NULL could use every database of its account.
CREATE FUNCTION vigil."_database_granted"(
	"db" TEXT /* & str */
) RETURNS bool /* bool */
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'database_granted_wrapper';

CREATE OR REPLACE FUNCTION vigil.enter_account(account text, user_key text, db text)
RETURNS TABLE (key_id bigint, outcome text, rate_per_second real, burst integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    k vigil.user_keys;
    p text;
BEGIN
    IF coalesce(user_key, '') = '' THEN
        outcome := 'missing';
        RETURN NEXT;
        RETURN;
    END IF;
    p := vigil._key_prefix('user', user_key);
    IF p IS NOT NULL THEN
        SELECT * INTO k FROM vigil.user_keys u WHERE u.prefix = p;
    END IF;
    IF k.id IS NULL OR NOT vigil._verify_key(user_key, k.hash) THEN
        outcome := 'unknown';
        RETURN NEXT;
        RETURN;
    END IF;
    key_id := k.id;
    outcome := vigil._key_status(k.revoked_at, k.expires_at);
    IF k.account IS DISTINCT FROM enter_account.account THEN
        outcome := 'account';
    ELSIF outcome = 'active' THEN
        outcome := CASE WHEN db IS NOT NULL AND k.databases IS NOT NULL AND NOT (db = ANY (k.databases))
                        THEN 'database' ELSE 'ok' END;
    END IF;
    IF outcome = 'ok' THEN
        PERFORM set_config('vigil.account', k.account, true);
        -- The key's databases limit the rest of the transaction, whichever
        -- `db` the vector functions are given (vigil._database).
        PERFORM set_config('vigil.databases', coalesce(array_to_string(k.databases, ','), ''), true);
        rate_per_second := k.rate_per_second;
        burst := k.burst;
        IF k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute' THEN
            UPDATE vigil.user_keys u SET last_used_at = now() WHERE u.id = k.id;
        END IF;
    END IF;
    RETURN NEXT;
END
$$;

CREATE FUNCTION vigil._require_granted(db text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF NOT vigil._database_granted(db) THEN
        RAISE EXCEPTION 'the user key is limited to other databases than "%"', db
            USING ERRCODE = 'insufficient_privilege', COLUMN = 'dbName';
    END IF;
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
        RAISE EXCEPTION 'no database "%" in account %', wanted, acct
            USING ERRCODE = 'no_data_found', COLUMN = 'dbName',
                  HINT = 'create it with vigil.create_database or POST /createDatabase';
    END IF;
    RETURN found_id;
END
$$;

-- Identity duplicates are looked for among the same API key's assessments
-- only: an upload no longer tells its sender that another key sent it.
DROP FUNCTION vigil._identity_duplicate(bytea, integer);
CREATE FUNCTION vigil._identity_duplicate(hash bytea, max_distance integer, api_key bigint)
RETURNS TABLE (id uuid, distance integer, matches bigint)
LANGUAGE sql STABLE
AS $$
    SELECT c.id, c.distance, pg_catalog.count(*) OVER ()
    FROM (SELECT a.id, a.assessed_at, vigil._phash_distance(a.phash, $1) AS distance
          FROM vigil.identity_assessments a
          WHERE a.phash_bands OPERATOR(pg_catalog.&&) vigil._phash_bands($1)
            AND a.api_key_id IS NOT DISTINCT FROM $3) AS c
    WHERE c.distance <= $2
    ORDER BY c.distance, c.assessed_at, c.id
    LIMIT 1
$$;
REVOKE EXECUTE ON FUNCTION vigil._identity_duplicate(bytea, integer, bigint) FROM PUBLIC;

-- The structural check of an index reads every tenant's rows of it: the
-- owner's and the superuser's, no longer the application role's.
REVOKE EXECUTE ON FUNCTION vigil.hnsw_check(regclass) FROM PUBLIC;

-- A search's query is at most 1,000 characters (the sidecar refuses longer
-- ones before embedding them): a 1 MB query of distinct words overflowed the
-- keyword index's tsvector, and long ones cost seconds of CPU.
CREATE OR REPLACE FUNCTION vigil._check_search(query text, k integer) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF query IS NULL THEN
        PERFORM vigil._refuse('query', 'query is required');
    ELSIF query !~ '\S' THEN
        PERFORM vigil._refuse('query', 'query is blank: give words to search for');
    ELSIF pg_catalog.char_length(query) > 1000 THEN
        PERFORM vigil._refuse('query', pg_catalog.format(
            'query is %s characters; at most 1000 are searched for', pg_catalog.char_length(query)));
    END IF;
    PERFORM vigil._check_limit(k);
END
$$;
