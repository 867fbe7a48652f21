-- Accounts, API keys and user keys (vector databases: vectordb/sql/).
--
-- Only the SHA-256 of a key is stored; the key is returned once, by the function
-- that makes it. The key tables are readable by their owner (the superuser that
-- created the extension) only. The application role reaches them through the two
-- SECURITY DEFINER checks at the end: vigil.authenticate_api_key and
-- vigil.enter_account. Vector data is isolated per account by row-level
-- security on vigil.current_account() (in Rust: see keys/mod.rs for why), which
-- only vigil.enter_account can set.

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
    rotated_from bigint REFERENCES vigil.api_keys (id),
    -- Token bucket of this key in the sidecar; NULL: the sidecar's defaults.
    rate_per_second real CHECK (rate_per_second > 0),
    burst        integer CHECK (burst > 0)
);

-- Backends keep the live API keys they read (keys/enter.rs: vigil.enter_api_key
-- runs on every request); a change to the table tells every backend to forget
-- them when it commits.
CREATE FUNCTION vigil._api_keys_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
BEGIN
    PERFORM vigil._forget_api_keys(TG_RELID);
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE OR TRUNCATE ON vigil.api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION vigil._api_keys_changed();

CREATE TABLE vigil.accounts (
    account    text PRIMARY KEY CHECK (length(account) <= 320 AND account ~ '^[^@\s]+@[^@\s]+$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    -- The network layer (0.17.0, risk/schema.sql): the account contributes its
    -- confirmed frauds' identities, as hashes, and receives other sharing
    -- accounts'. Off unless set (vigil.set_risk_sharing).
    share_risk_signals boolean NOT NULL DEFAULT false,
    -- The share of the account's transactions its people can review (0.18.0,
    -- vigil.set_risk_review_rate): each refit of its model moves its Review
    -- cut-off to it. NULL: the installation's vigil.risk_review_rate.
    review_rate real CHECK (review_rate > 0 AND review_rate <= 0.5)
);
-- "Does this account share?": one descent per assessment (risk/history.rs).
CREATE INDEX accounts_sharing ON vigil.accounts (account) WHERE share_risk_signals;

-- The account of what is done without one (issue 61): API keys made without
-- `--account`, and SQL callers that enter none (a single-shop installation
-- keeps working as before tenants). The upgrade to 0.17.0 gave it every key,
-- transaction, label, model and assessment there was.
CREATE FUNCTION vigil.default_account() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT 'default@localhost'::text $$;
INSERT INTO vigil.accounts (account) VALUES (vigil.default_account());

-- The account an API key reads and writes: its transactions, labels, models,
-- blocklist and identity assessments are that account's alone.
ALTER TABLE vigil.api_keys
    ADD COLUMN account text NOT NULL DEFAULT vigil.default_account()
        REFERENCES vigil.accounts (account) ON DELETE CASCADE;

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
    rotated_from bigint REFERENCES vigil.user_keys (id),
    rate_per_second real CHECK (rate_per_second > 0),
    burst        integer CHECK (burst > 0)
);
CREATE INDEX ON vigil.user_keys (account);

-- A database name: 1 to 63 letters, digits, '_', '.' or '-', starting with a letter or digit.
CREATE FUNCTION vigil.valid_db_name(name text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$' $$;

REVOKE ALL ON vigil.api_keys, vigil.accounts, vigil.user_keys FROM PUBLIC;

-- Users' data, not the extension's: pg_dump dumps the rows of a table the
-- extension creates only when it is registered here, and an identity
-- column's sequence must be registered too for new rows of a restored
-- installation to get new ids (docs: backups). Every capability's schema
-- registers its own tables the same way.
SELECT pg_catalog.pg_extension_config_dump('vigil.api_keys', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.api_keys_id_seq', '');
-- The default account is made by CREATE EXTENSION, so a dump leaves it out.
SELECT pg_catalog.pg_extension_config_dump('vigil.accounts', 'WHERE account <> ''default@localhost''');
SELECT pg_catalog.pg_extension_config_dump('vigil.user_keys', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.user_keys_id_seq', '');

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

-- `account` NULL: the default account.
CREATE FUNCTION vigil.create_api_key(
    name text,
    scopes text[] DEFAULT ARRAY['transaction', 'identity'],
    expires_at timestamptz DEFAULT NULL,
    allowed_ips cidr[] DEFAULT NULL,
    rate_per_second real DEFAULT NULL,
    burst integer DEFAULT NULL,
    account text DEFAULT NULL
) RETURNS TABLE (id bigint, key text, prefix text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    k record;
    owner text := coalesce(create_api_key.account, vigil.default_account());
BEGIN
    IF NOT EXISTS (SELECT FROM vigil.accounts a WHERE a.account = owner) THEN
        RAISE EXCEPTION 'no account "%"', vigil._echo(owner)
            USING ERRCODE = 'no_data_found', COLUMN = 'account';
    END IF;
    SELECT * INTO k FROM vigil._new_key('api');
    INSERT INTO vigil.api_keys AS a (name, prefix, hash, scopes, expires_at, allowed_ips, rate_per_second, burst, account)
    VALUES (create_api_key.name, k.prefix, k.hash, create_api_key.scopes, create_api_key.expires_at,
            create_api_key.allowed_ips, create_api_key.rate_per_second, create_api_key.burst, owner)
    RETURNING a.id INTO id;
    key := k.secret;
    prefix := k.prefix;
    RETURN NEXT;
END
$$;

-- Everything about the keys but their hashes.
CREATE VIEW vigil.api_key_list AS
SELECT id, name, prefix, scopes, allowed_ips, rate_per_second, burst, created_at, expires_at, revoked_at,
       last_used_at, rotated_from, vigil._key_status(revoked_at, expires_at) AS status, account
FROM vigil.api_keys;

-- Admin: accounts and their user keys.

CREATE FUNCTION vigil.create_account(account text) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
    INSERT INTO vigil.accounts (account) VALUES (create_account.account)
    ON CONFLICT DO NOTHING;
    SELECT create_account.account;
$$;

-- Deletes the account with its keys, vector databases, transactions, labels,
-- models, blocklist and identity assessments; false if none. The default
-- account stays: what is done without an account is its.
CREATE FUNCTION vigil.delete_account(account text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
BEGIN
    IF delete_account.account = vigil.default_account() THEN
        RAISE EXCEPTION 'the default account cannot be deleted'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'account';
    END IF;
    DELETE FROM vigil.accounts a WHERE a.account = delete_account.account;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- Not foreign keys: an assessment's insert would lock the account's row.
    DELETE FROM vigil.transactions t WHERE t.account = delete_account.account;
    DELETE FROM vigil.blocklist b WHERE b.account = delete_account.account;
    DELETE FROM vigil.risk_models m WHERE m.account = delete_account.account;
    DELETE FROM vigil.identity_assessments i WHERE i.account = delete_account.account;
    RETURN true;
END
$$;

CREATE FUNCTION vigil.create_user_key(
    account text,
    name text DEFAULT 'default',
    databases text[] DEFAULT NULL,
    expires_at timestamptz DEFAULT NULL,
    rate_per_second real DEFAULT NULL,
    burst integer DEFAULT NULL
) RETURNS TABLE (id bigint, key text, prefix text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    k record;
BEGIN
    IF NOT EXISTS (SELECT FROM vigil.accounts a WHERE a.account = create_user_key.account) THEN
        RAISE EXCEPTION 'no account "%"', create_user_key.account
            USING ERRCODE = 'no_data_found', COLUMN = 'account';
    END IF;
    SELECT * INTO k FROM vigil._new_key('user');
    INSERT INTO vigil.user_keys AS u (account, name, prefix, hash, databases, expires_at, rate_per_second, burst)
    VALUES (create_user_key.account, create_user_key.name, k.prefix, k.hash, create_user_key.databases,
            create_user_key.expires_at, create_user_key.rate_per_second, create_user_key.burst)
    RETURNING u.id INTO id;
    key := k.secret;
    prefix := k.prefix;
    RETURN NEXT;
END
$$;

CREATE VIEW vigil.user_key_list AS
SELECT id, account, name, prefix, databases, rate_per_second, burst, created_at, expires_at, revoked_at,
       last_used_at, rotated_from, vigil._key_status(revoked_at, expires_at) AS status
FROM vigil.user_keys;

-- Admin: any key, API or user, named by its prefix (`vk_` or `vu_` says which).

-- 'active', 'revoked' or 'expired'; NULL when no key has this prefix.
CREATE FUNCTION vigil.key_status(prefix text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
    SELECT vigil._key_status(a.revoked_at, a.expires_at) FROM vigil.api_keys a WHERE a.prefix = key_status.prefix
    UNION ALL
    SELECT vigil._key_status(u.revoked_at, u.expires_at) FROM vigil.user_keys u WHERE u.prefix = key_status.prefix
$$;

-- A new key with the same owner, name, scopes and limits, expiring at
-- `new_key_expires_at` (NULL: never); the old one keeps working until
-- `old_key_lives` from now (or its own earlier expiry), then stops.
CREATE FUNCTION vigil.rotate_key(
    key_prefix text,
    old_key_lives interval DEFAULT interval '24 hours',
    new_key_expires_at timestamptz DEFAULT NULL
)
RETURNS TABLE (id bigint, key text, prefix text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    kind text := CASE WHEN starts_with(key_prefix, 'vk_') THEN 'api' ELSE 'user' END;
    old_id bigint;
    k record;
BEGIN
    IF old_key_lives IS NULL OR old_key_lives < interval '0' THEN
        RAISE EXCEPTION 'invalid old_key_lives: must be zero or more'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'old_key_lives';
    END IF;
    SELECT * INTO k FROM vigil._new_key(kind);
    IF kind = 'api' THEN
        UPDATE vigil.api_keys a SET expires_at = least(coalesce(a.expires_at, 'infinity'), now() + old_key_lives)
        WHERE a.prefix = rotate_key.key_prefix AND vigil._key_status(a.revoked_at, a.expires_at) = 'active'
        RETURNING a.id INTO old_id;
        INSERT INTO vigil.api_keys AS a (name, prefix, hash, scopes, expires_at, allowed_ips, rate_per_second, burst, rotated_from, account)
        SELECT o.name, k.prefix, k.hash, o.scopes, new_key_expires_at, o.allowed_ips, o.rate_per_second, o.burst, o.id, o.account
        FROM vigil.api_keys o WHERE o.id = old_id
        RETURNING a.id INTO id;
    ELSE
        UPDATE vigil.user_keys u SET expires_at = least(coalesce(u.expires_at, 'infinity'), now() + old_key_lives)
        WHERE u.prefix = rotate_key.key_prefix AND vigil._key_status(u.revoked_at, u.expires_at) = 'active'
        RETURNING u.id INTO old_id;
        INSERT INTO vigil.user_keys AS u (account, name, prefix, hash, databases, expires_at, rate_per_second, burst, rotated_from)
        SELECT o.account, o.name, k.prefix, k.hash, o.databases, new_key_expires_at, o.rate_per_second, o.burst, o.id
        FROM vigil.user_keys o WHERE o.id = old_id
        RETURNING u.id INTO id;
    END IF;
    IF old_id IS NULL THEN
        RAISE EXCEPTION 'no active key with prefix "%"', rotate_key.key_prefix
            USING ERRCODE = 'no_data_found', COLUMN = 'key_prefix';
    END IF;
    key := k.secret;
    prefix := k.prefix;
    RETURN NEXT;
END
$$;

-- Revokes the live key; false if none.
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

-- Checks the sidecar calls, as the application role. Both return the key's id
-- and its rate-limit overrides with the outcome, so the sidecar needs one round trip.

-- Outcome: ok, missing, unknown (401); revoked, expired, scope, ip (403).
-- A NULL scope checks everything but the scope. On `ok` the key's public
-- description (name, prefix, scopes, expiry) comes too.
CREATE FUNCTION vigil.authenticate_api_key(key text, scope text, client inet)
RETURNS TABLE (key_id bigint, outcome text, name text, prefix text, scopes text[], expires_at timestamptz,
               rate_per_second real, burst integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    k vigil.api_keys;
    p text;
BEGIN
    IF coalesce(key, '') = '' THEN
        outcome := 'missing';
        RETURN NEXT;
        RETURN;
    END IF;
    p := vigil._key_prefix('api', key);
    IF p IS NOT NULL THEN
        SELECT * INTO k FROM vigil.api_keys a WHERE a.prefix = p;
    END IF;
    IF k.id IS NULL OR NOT vigil._verify_key(key, k.hash) THEN
        outcome := 'unknown';
        RETURN NEXT;
        RETURN;
    END IF;
    key_id := k.id;
    outcome := vigil._key_status(k.revoked_at, k.expires_at);
    IF outcome = 'active' THEN
        outcome := CASE
            WHEN scope IS NOT NULL AND NOT (scope = ANY (k.scopes)) THEN 'scope'
            WHEN k.allowed_ips IS NOT NULL AND (client IS NULL OR NOT client <<= ANY (k.allowed_ips)) THEN 'ip'
            ELSE 'ok' END;
    END IF;
    IF outcome = 'ok' THEN
        SELECT k.name, k.prefix, k.scopes, k.expires_at, k.rate_per_second, k.burst
        INTO name, prefix, scopes, expires_at, rate_per_second, burst;
        IF k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute' THEN
            UPDATE vigil.api_keys a SET last_used_at = now() WHERE a.id = k.id;
        END IF;
    END IF;
    RETURN NEXT;
END
$$;

-- vigil.enter_api_key(key), the API key's account for the rest of the
-- transaction, is in Rust (keys/enter.rs): the sidecar calls it on every request.

-- The account the risk and identity functions act for: the one entered
-- (vigil.enter_api_key, vigil.enter_account), else the default account.
CREATE FUNCTION vigil._acting_account() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT coalesce(vigil.current_account(), vigil.default_account()) $$;

-- Checks `user_key` for `account` and `db`; on success the rest of the
-- transaction acts for `account` (vigil.current_account()), within the
-- databases the key is limited to, if it is (vigil._database_granted).
-- Outcome: ok, missing, unknown (401); account, revoked, expired, database (403).
CREATE FUNCTION vigil.enter_account(account text, user_key text, db text)
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

-- The primitives and the admin functions are for the owner only (sql/bootstrap.sql
-- grants the admin ones to `vigil_admin`); the checks and vigil.current_account()
-- are granted to the application role by the same file.
REVOKE EXECUTE ON FUNCTION
    vigil._new_key(text), vigil._key_prefix(text, text), vigil._verify_key(text, bytea),
    vigil.create_api_key(text, text[], timestamptz, cidr[], real, integer, text),
    vigil.create_account(text), vigil.delete_account(text),
    vigil.create_user_key(text, text, text[], timestamptz, real, integer),
    vigil.key_status(text), vigil.rotate_key(text, interval, timestamptz), vigil.revoke_key(text),
    vigil.authenticate_api_key(text, text, inet), vigil.enter_account(text, text, text),
    vigil.enter_api_key(text), vigil._forget_api_keys(oid), vigil._api_keys_changed()
FROM PUBLIC;
REVOKE ALL ON vigil.api_key_list, vigil.user_key_list FROM PUBLIC;
