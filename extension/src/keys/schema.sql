-- Accounts, API keys, user keys and vector databases.
--
-- Only the SHA-256 of a key is stored; the key is returned once, by the function
-- that makes it. The key tables are readable by their owner (the superuser that
-- created the extension) only. The application role reaches them through the two
-- SECURITY DEFINER checks at the end: vigil.authenticate_api_key and
-- vigil.enter_account. Vector data is isolated per account by row-level
-- security on vigil.current_account(), which only vigil.enter_account can set.

CREATE TABLE vigil.api_keys (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    prefix       text NOT NULL UNIQUE,
    hash         bytea NOT NULL CHECK (length(hash) = 32),
    scopes       text[] NOT NULL CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['transaction', 'identity']),
    allowed_ips  cidr[],                -- NULL: any client address
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,           -- NULL: never
    revoked_at   timestamptz,
    last_used_at timestamptz,
    rotated_from bigint REFERENCES vigil.api_keys (id)
);

CREATE TABLE vigil.accounts (
    account    text PRIMARY KEY CHECK (length(account) <= 320 AND account ~ '^[^@\s]+@[^@\s]+$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE vigil.user_keys (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account      text NOT NULL REFERENCES vigil.accounts (account) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    prefix       text NOT NULL UNIQUE,
    hash         bytea NOT NULL CHECK (length(hash) = 32),
    databases    text[],                -- NULL: every database of the account
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    rotated_from bigint REFERENCES vigil.user_keys (id)
);
CREATE INDEX ON vigil.user_keys (account);

CREATE TABLE vigil.vector_databases (
    account    text NOT NULL REFERENCES vigil.accounts (account) ON DELETE CASCADE,
    name       text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account, name)
);

REVOKE ALL ON vigil.api_keys, vigil.accounts, vigil.user_keys, vigil.vector_databases FROM PUBLIC;

-- The account this transaction acts for: NULL until vigil.enter_account succeeds.
CREATE FUNCTION vigil.current_account() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT nullif(current_setting('vigil.account', true), '') $$;

ALTER TABLE vigil.vector_databases ENABLE ROW LEVEL SECURITY;
ALTER TABLE vigil.vector_databases FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.vector_databases
    USING (account = vigil.current_account())
    WITH CHECK (account = vigil.current_account());

-- 'revoked', 'expired' or 'active': the one definition of a live key, used by
-- the listings and by both checks.
CREATE FUNCTION vigil._key_status(revoked_at timestamptz, expires_at timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN revoked_at IS NOT NULL THEN 'revoked'
                WHEN expires_at <= now() THEN 'expired'
                ELSE 'active' END
$$;

-- Admin: API keys. Each returns the new key once, with the prefix that names it.

CREATE FUNCTION vigil.create_api_key(
    name text,
    scopes text[] DEFAULT ARRAY['transaction', 'identity'],
    expires_at timestamptz DEFAULT NULL,
    allowed_ips cidr[] DEFAULT NULL
) RETURNS TABLE (id bigint, key text, prefix text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    k record;
BEGIN
    SELECT * INTO k FROM vigil._new_key('api');
    INSERT INTO vigil.api_keys AS a (name, prefix, hash, scopes, expires_at, allowed_ips)
    VALUES (create_api_key.name, k.prefix, k.hash, create_api_key.scopes, create_api_key.expires_at, create_api_key.allowed_ips)
    RETURNING a.id INTO id;
    key := k.secret;
    prefix := k.prefix;
    RETURN NEXT;
END
$$;

-- A new key with the same name, scopes and limits; the old one keeps working
-- until `old_key_lives` from now (or its own earlier expiry), then stops.
CREATE FUNCTION vigil.rotate_api_key(key_prefix text, old_key_lives interval DEFAULT interval '24 hours')
RETURNS TABLE (id bigint, key text, prefix text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    old vigil.api_keys;
    k record;
BEGIN
    SELECT * INTO old FROM vigil.api_keys a WHERE a.prefix = rotate_api_key.key_prefix AND a.revoked_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no live API key with prefix "%"', rotate_api_key.key_prefix USING ERRCODE = 'no_data_found';
    END IF;
    SELECT * INTO k FROM vigil._new_key('api');
    INSERT INTO vigil.api_keys AS a (name, prefix, hash, scopes, expires_at, allowed_ips, rotated_from)
    VALUES (old.name, k.prefix, k.hash, old.scopes, old.expires_at, old.allowed_ips, old.id)
    RETURNING a.id INTO id;
    UPDATE vigil.api_keys a SET expires_at = least(coalesce(a.expires_at, 'infinity'), now() + old_key_lives)
    WHERE a.id = old.id;
    key := k.secret;
    prefix := k.prefix;
    RETURN NEXT;
END
$$;

-- Everything about the keys but their hashes.
CREATE VIEW vigil.api_key_list AS
SELECT id, name, prefix, scopes, allowed_ips, created_at, expires_at, revoked_at, last_used_at, rotated_from,
       vigil._key_status(revoked_at, expires_at) AS status
FROM vigil.api_keys;

-- Admin: accounts and their user keys.

CREATE FUNCTION vigil.create_account(account text) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
    INSERT INTO vigil.accounts (account) VALUES (create_account.account)
    ON CONFLICT DO NOTHING;
    SELECT create_account.account;
$$;

CREATE FUNCTION vigil.create_user_key(
    account text,
    name text DEFAULT 'default',
    databases text[] DEFAULT NULL,
    expires_at timestamptz DEFAULT NULL
) RETURNS TABLE (id bigint, key text, prefix text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    k record;
BEGIN
    IF NOT EXISTS (SELECT FROM vigil.accounts a WHERE a.account = create_user_key.account) THEN
        RAISE EXCEPTION 'no account "%"', create_user_key.account USING ERRCODE = 'no_data_found';
    END IF;
    SELECT * INTO k FROM vigil._new_key('user');
    INSERT INTO vigil.user_keys AS u (account, name, prefix, hash, databases, expires_at)
    VALUES (create_user_key.account, create_user_key.name, k.prefix, k.hash, create_user_key.databases, create_user_key.expires_at)
    RETURNING u.id INTO id;
    key := k.secret;
    prefix := k.prefix;
    RETURN NEXT;
END
$$;

-- Revokes the live key, API or user (its prefix says which); false if none.
CREATE FUNCTION vigil.revoke_key(prefix text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
BEGIN
    IF starts_with(prefix, 'vk_') THEN
        UPDATE vigil.api_keys a SET revoked_at = now() WHERE a.prefix = revoke_key.prefix AND a.revoked_at IS NULL;
    ELSE
        UPDATE vigil.user_keys u SET revoked_at = now() WHERE u.prefix = revoke_key.prefix AND u.revoked_at IS NULL;
    END IF;
    RETURN FOUND;
END
$$;

CREATE VIEW vigil.user_key_list AS
SELECT id, account, name, prefix, databases, created_at, expires_at, revoked_at, last_used_at, rotated_from,
       vigil._key_status(revoked_at, expires_at) AS status
FROM vigil.user_keys;

-- Checks the sidecar calls, as the application role.

-- Outcome: ok, missing, unknown (401); revoked, expired, scope, ip (403).
CREATE FUNCTION vigil.authenticate_api_key(key text, scope text, client inet)
RETURNS TABLE (key_id bigint, outcome text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    k vigil.api_keys;
    p text;
BEGIN
    IF coalesce(key, '') = '' THEN
        RETURN QUERY SELECT NULL::bigint, 'missing';
        RETURN;
    END IF;
    p := vigil._key_prefix('api', key);
    IF p IS NOT NULL THEN
        SELECT * INTO k FROM vigil.api_keys a WHERE a.prefix = p;
    END IF;
    IF k.id IS NULL OR NOT vigil._verify_key(key, k.hash) THEN
        RETURN QUERY SELECT NULL::bigint, 'unknown';
        RETURN;
    END IF;
    outcome := vigil._key_status(k.revoked_at, k.expires_at);
    IF outcome = 'active' THEN
        outcome := CASE
            WHEN NOT (scope = ANY (k.scopes)) THEN 'scope'
            WHEN k.allowed_ips IS NOT NULL AND (client IS NULL OR NOT client <<= ANY (k.allowed_ips)) THEN 'ip'
            ELSE 'ok' END;
    END IF;
    IF outcome = 'ok' AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute') THEN
        UPDATE vigil.api_keys a SET last_used_at = now() WHERE a.id = k.id;
    END IF;
    RETURN QUERY SELECT k.id, outcome;
END
$$;

-- Checks `user_key` for `account` and `db`; on success the rest of the
-- transaction acts for `account` (vigil.current_account()).
-- Outcome: ok, missing, unknown (401); account, revoked, expired, database (403).
CREATE FUNCTION vigil.enter_account(account text, user_key text, db text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    k vigil.user_keys;
    p text;
    status text;
BEGIN
    IF coalesce(user_key, '') = '' THEN
        RETURN 'missing';
    END IF;
    p := vigil._key_prefix('user', user_key);
    IF p IS NOT NULL THEN
        SELECT * INTO k FROM vigil.user_keys u WHERE u.prefix = p;
    END IF;
    IF k.id IS NULL OR NOT vigil._verify_key(user_key, k.hash) THEN
        RETURN 'unknown';
    END IF;
    status := vigil._key_status(k.revoked_at, k.expires_at);
    IF k.account IS DISTINCT FROM enter_account.account THEN
        RETURN 'account';
    ELSIF status <> 'active' THEN
        RETURN status;
    ELSIF db IS NOT NULL AND k.databases IS NOT NULL AND NOT (db = ANY (k.databases)) THEN
        RETURN 'database';
    END IF;
    PERFORM set_config('vigil.account', k.account, true);
    IF k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute' THEN
        UPDATE vigil.user_keys u SET last_used_at = now() WHERE u.id = k.id;
    END IF;
    RETURN 'ok';
END
$$;

-- The primitives and the admin functions are for the owner only; the checks and
-- vigil.current_account() are granted to the application role by sql/bootstrap.sql.
REVOKE EXECUTE ON FUNCTION
    vigil._new_key(text), vigil._key_prefix(text, text), vigil._verify_key(text, bytea),
    vigil.create_api_key(text, text[], timestamptz, cidr[]), vigil.rotate_api_key(text, interval),
    vigil.revoke_key(text), vigil.create_account(text),
    vigil.create_user_key(text, text, text[], timestamptz),
    vigil.authenticate_api_key(text, text, inet), vigil.enter_account(text, text, text)
FROM PUBLIC;
REVOKE ALL ON vigil.api_key_list, vigil.user_key_list FROM PUBLIC;
