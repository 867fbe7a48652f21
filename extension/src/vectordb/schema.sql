-- Vector databases: named per account (the table, with its row-level security,
-- is in the keys schema, since access control keys on it).
--
-- These functions run as the caller (SECURITY INVOKER), so row-level security
-- decides what they see: the application role acts for the account that
-- vigil.enter_account set; a superuser in psql sets `vigil.account` itself.

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

-- Creates the database `db` of the current account; `created` is false when it
-- already existed (creating is idempotent).
CREATE FUNCTION vigil.create_database(db text)
RETURNS TABLE (account text, name text, created_at timestamptz, created boolean)
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
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
