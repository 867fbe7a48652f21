-- 0.16.0 -> 0.17.0 (issue 61): tenants for risk and identity. Every API key
-- belongs to an account, and each account's transactions, labels, confirmed
-- fraud, blocklist, models and identity assessments are its own.
--
-- What changed:
-- - vigil.default_account() ('default@localhost'), made here: it gets every
--   API key, transaction, label, model, blocklist entry and identity
--   assessment there was, so a single-shop installation sees no change;
-- - vigil.api_keys.account; vigil.create_api_key(..., account);
--   vigil.enter_api_key(key), which the sidecar calls in the statement that
--   acts for a key; vigil._acting_account();
-- - `account` on vigil.transactions, feedback, fraud_identities, blocklist,
--   risk_models and identity_assessments, first in every key the history
--   reads (its indexes are built again: a scan of each table);
-- - row-level security on those tables for roles that entered an account;
-- - vigil.transaction_feedback labels only the acting account's
--   transactions; the blocklist functions take an account;
--   vigil.blocklist_list(account); vigil.risk_refit acts for the acting
--   account and vigil.risk_refit_accounts() refits each; identity duplicates
--   are looked for within the account (vigil._identity_duplicate(hash,
--   max_distance, account)).

-- The account of what is done without one (issue 61): API keys made without
-- `--account`, and SQL callers that enter none (a single-shop installation
-- keeps working as before tenants). The upgrade to 0.17.0 gave it every key,
-- transaction, label, model and assessment there was.
CREATE FUNCTION vigil.default_account() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT 'default@localhost'::text $$;
INSERT INTO vigil.accounts (account) VALUES (vigil.default_account()) ON CONFLICT DO NOTHING;
SELECT pg_catalog.pg_extension_config_dump('vigil.accounts', 'WHERE account <> ''default@localhost''');

ALTER TABLE vigil.accounts ADD COLUMN share_risk_signals boolean NOT NULL DEFAULT false;
-- "Does this account share?": one descent per assessment (risk/history.rs).
CREATE INDEX accounts_sharing ON vigil.accounts (account) WHERE share_risk_signals;

ALTER TABLE vigil.api_keys
    ADD COLUMN account text NOT NULL DEFAULT vigil.default_account()
        REFERENCES vigil.accounts (account) ON DELETE CASCADE;

DROP FUNCTION vigil.create_api_key(text, text[], timestamptz, cidr[], real, integer);
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

CREATE OR REPLACE VIEW vigil.api_key_list AS
SELECT id, name, prefix, scopes, allowed_ips, rate_per_second, burst, created_at, expires_at, revoked_at,
       last_used_at, rotated_from, vigil._key_status(revoked_at, expires_at) AS status, account
FROM vigil.api_keys;

-- Deletes the account with its keys, vector databases, transactions, labels,
-- models, blocklist and identity assessments; false if none. The default
-- account stays: what is done without an account is its.
CREATE OR REPLACE FUNCTION vigil.delete_account(account text) RETURNS boolean
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

-- A new key with the same owner, name, scopes and limits, expiring at
-- `new_key_expires_at` (NULL: never); the old one keeps working until
-- `old_key_lives` from now (or its own earlier expiry), then stops.
CREATE OR REPLACE FUNCTION vigil.rotate_key(
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

-- The API key's account for the rest of the transaction, and the key's id:
-- what the sidecar calls within the statement that acts for the key
-- (`SELECT vigil.risk_score($1, vigil.enter_api_key($2))`), having checked
-- its scope and address with vigil.authenticate_api_key. A key that is not
-- live (revoked or expired since) raises 28000.
CREATE FUNCTION vigil.enter_api_key(key text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    k vigil.api_keys;
    p text := vigil._key_prefix('api', key);
BEGIN
    IF p IS NOT NULL THEN
        SELECT * INTO k FROM vigil.api_keys a WHERE a.prefix = p;
    END IF;
    IF k.id IS NULL OR NOT vigil._verify_key(key, k.hash)
       OR vigil._key_status(k.revoked_at, k.expires_at) <> 'active' THEN
        RAISE EXCEPTION 'the API key is not valid'
            USING ERRCODE = 'invalid_authorization_specification';
    END IF;
    PERFORM set_config('vigil.account', k.account, true);
    PERFORM set_config('vigil.databases', '', true);
    RETURN k.id;
END
$$;

-- The account the risk and identity functions act for: the one entered
-- (vigil.enter_api_key, vigil.enter_account), else the default account.
CREATE FUNCTION vigil._acting_account() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT coalesce(vigil.current_account(), vigil.default_account()) $$;

REVOKE EXECUTE ON FUNCTION
    vigil.create_api_key(text, text[], timestamptz, cidr[], real, integer, text),
    vigil.enter_api_key(text)
FROM PUBLIC;

-- Every row so far is the default account's. A constant default fills the
-- column without rewriting the table; it is dropped at once, as a fresh
-- install has none (each insert names its account).
ALTER TABLE vigil.transactions ADD COLUMN account text COLLATE "C" NOT NULL DEFAULT 'default@localhost';
ALTER TABLE vigil.transactions ALTER COLUMN account DROP DEFAULT;
ALTER TABLE vigil.feedback ADD COLUMN account text COLLATE "C" NOT NULL DEFAULT 'default@localhost';
ALTER TABLE vigil.feedback ALTER COLUMN account DROP DEFAULT;
ALTER TABLE vigil.fraud_identities ADD COLUMN account text COLLATE "C" NOT NULL DEFAULT 'default@localhost';
ALTER TABLE vigil.fraud_identities ALTER COLUMN account DROP DEFAULT;
ALTER TABLE vigil.blocklist ADD COLUMN account text COLLATE "C" NOT NULL DEFAULT 'default@localhost';
ALTER TABLE vigil.blocklist ALTER COLUMN account DROP DEFAULT;
ALTER TABLE vigil.risk_models ADD COLUMN account text COLLATE "C" NOT NULL DEFAULT 'default@localhost';
ALTER TABLE vigil.risk_models ALTER COLUMN account DROP DEFAULT;
ALTER TABLE vigil.identity_assessments ADD COLUMN account text COLLATE "C" NOT NULL DEFAULT 'default@localhost';
ALTER TABLE vigil.identity_assessments ALTER COLUMN account DROP DEFAULT;

-- The history's keys, the account first.
DROP INDEX vigil.transactions_email, vigil.transactions_device, vigil.transactions_ip, vigil.transactions_card;
CREATE INDEX transactions_email ON vigil.transactions (account, email, occurred_at) INCLUDE (amount) WHERE email IS NOT NULL;
CREATE INDEX transactions_device ON vigil.transactions (account, device, occurred_at) INCLUDE (email) WHERE device IS NOT NULL;
CREATE INDEX transactions_ip ON vigil.transactions (account, ip, occurred_at) INCLUDE (email) WHERE ip IS NOT NULL;
CREATE INDEX transactions_card ON vigil.transactions (account, card, occurred_at) INCLUDE (email) WHERE card IS NOT NULL;
ALTER TABLE vigil.fraud_identities DROP CONSTRAINT fraud_identities_pkey,
    ADD PRIMARY KEY (account, kind, value, transaction_id) INCLUDE (occurred_at);
ALTER TABLE vigil.blocklist DROP CONSTRAINT blocklist_pkey,
    ADD PRIMARY KEY (account, kind, value) INCLUDE (expires_at);
CREATE INDEX risk_models_account ON vigil.risk_models (account, id);

-- An account's rows, to a role that entered it; the owner's functions name
-- the account themselves.
ALTER TABLE vigil.transactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.transactions USING (account = vigil.current_account());
ALTER TABLE vigil.feedback ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.feedback USING (account = vigil.current_account());
ALTER TABLE vigil.fraud_identities ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.fraud_identities USING (account = vigil.current_account());
ALTER TABLE vigil.blocklist ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.blocklist USING (account = vigil.current_account());
ALTER TABLE vigil.risk_models ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.risk_models USING (account = vigil.current_account());

-- The network layer (issue 61): identities confirmed as fraud by accounts
-- that opted in to share risk signals (vigil.accounts.share_risk_signals),
-- each as the SHA-256 of "kind:value" in hex (vigil._network_hash,
-- vigil_risk::network_hash): what is shared is the hash, never the value. An
-- assessment in another sharing account reads how many accounts confirmed
-- each of its e-mail, device and card (NETWORK_FRAUD_LINK, bounded, never a
-- failure alone). IP addresses are not shared: too many honest people share one.
CREATE TABLE vigil.network_fraud (
    kind           text COLLATE "C" NOT NULL CHECK (kind IN ('email', 'device', 'card')),
    hash           text COLLATE "C" NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
    account        text COLLATE "C" NOT NULL,
    transaction_id uuid NOT NULL REFERENCES vigil.transactions (id) ON DELETE CASCADE,
    PRIMARY KEY (kind, hash, account, transaction_id)
);
CREATE INDEX ON vigil.network_fraud (transaction_id);
CREATE INDEX ON vigil.network_fraud (account);

CREATE FUNCTION vigil._network_hash(kind text, value text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(kind || ':' || value, 'UTF8')), 'hex') $$;

-- An account's assessments, to a role that entered it (risk/schema.sql).
ALTER TABLE vigil.identity_assessments ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.identity_assessments USING (account = vigil.current_account());

REVOKE ALL ON vigil.network_fraud FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('vigil.network_fraud', '');

DROP VIEW vigil.transaction_labels;
-- The latest label of each transaction. As its reader (security_invoker), so
-- row-level security holds through it.
CREATE VIEW vigil.transaction_labels WITH (security_invoker = true) AS
SELECT DISTINCT ON (transaction_id) transaction_id, label, note, created_at, account
FROM vigil.feedback
ORDER BY transaction_id, created_at DESC, id DESC;

-- Records a label for a transaction of the acting account; `fraud` and
-- `chargeback` mark its identities (e-mail and card: hard rules; device and
-- IP: graded links) for that account, `legit` withdraws them. Returns the
-- marks as they now stand. Another account's transaction is not found, as
-- one that does not exist is (never a refusal that confirms it exists).
CREATE OR REPLACE FUNCTION vigil.transaction_feedback(transaction_id uuid, label text, note text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    t vigil.transactions;
    acct text := vigil._acting_account();
BEGIN
    IF label IS NULL OR label NOT IN ('fraud', 'legit', 'chargeback') THEN
        RAISE EXCEPTION 'label must be fraud, legit or chargeback'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'label';
    END IF;
    IF length(note) > 1000 THEN
        RAISE EXCEPTION 'note must be at most 1000 characters'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'note';
    END IF;
    SELECT * INTO t FROM vigil.transactions x
    WHERE x.id = transaction_feedback.transaction_id AND x.account = acct;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no transaction %', transaction_feedback.transaction_id
            USING ERRCODE = 'no_data_found', COLUMN = 'transactionId';
    END IF;
    INSERT INTO vigil.feedback (transaction_id, label, note, account) VALUES (t.id, label, note, acct);
    IF label = 'legit' THEN
        DELETE FROM vigil.fraud_identities f WHERE f.transaction_id = t.id AND f.account = acct;
        DELETE FROM vigil.network_fraud n WHERE n.transaction_id = t.id;
    ELSE
        INSERT INTO vigil.fraud_identities (kind, value, transaction_id, occurred_at, account)
        SELECT i.kind, i.value, t.id, t.occurred_at, acct
        FROM (VALUES ('email', t.email), ('device', t.device), ('ip', t.ip), ('card', t.card)) AS i (kind, value)
        WHERE i.value IS NOT NULL
        ON CONFLICT DO NOTHING;
        -- Shared with the network when the account opted in: hashes only.
        INSERT INTO vigil.network_fraud (kind, hash, account, transaction_id)
        SELECT i.kind, vigil._network_hash(i.kind, i.value), acct, t.id
        FROM (VALUES ('email', t.email), ('device', t.device), ('card', t.card)) AS i (kind, value)
        WHERE i.value IS NOT NULL
          AND EXISTS (SELECT FROM vigil.accounts a WHERE a.account = acct AND a.share_risk_signals)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN jsonb_build_object('transactionId', t.id, 'label', label,
                              'hardRules', (SELECT coalesce(jsonb_agg(f.kind ORDER BY f.kind), '[]') FROM vigil.fraud_identities f
                                            WHERE f.transaction_id = t.id AND f.account = acct AND f.kind IN ('email', 'card')),
                              'linked', (SELECT coalesce(jsonb_agg(f.kind ORDER BY f.kind), '[]') FROM vigil.fraud_identities f
                                         WHERE f.transaction_id = t.id AND f.account = acct AND f.kind IN ('device', 'ip')));
END
$$;

DROP FUNCTION vigil.blocklist_add(text, text, text, timestamptz), vigil.blocklist_remove(text, text);
-- Admin: an account's blocklist (`account` NULL: the default account's).
-- Values are normalised as the history normalises them (vigil._identity), so
-- 'Bob@Example.com ' blocks bob@example.com.
CREATE FUNCTION vigil.blocklist_add(kind text, value text, reason text DEFAULT NULL, expires_at timestamptz DEFAULT NULL,
                                    account text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    normalised text := vigil._identity(kind, value);
    owner text := coalesce(blocklist_add.account, vigil.default_account());
BEGIN
    IF NOT EXISTS (SELECT FROM vigil.accounts a WHERE a.account = owner) THEN
        RAISE EXCEPTION 'no account "%"', vigil._echo(owner)
            USING ERRCODE = 'no_data_found', COLUMN = 'account';
    END IF;
    INSERT INTO vigil.blocklist AS b (kind, value, reason, expires_at, account)
    VALUES (kind, normalised, reason, expires_at, owner)
    ON CONFLICT ON CONSTRAINT blocklist_pkey
    DO UPDATE SET reason = excluded.reason, expires_at = excluded.expires_at;
    RETURN normalised;
END
$$;

CREATE FUNCTION vigil.blocklist_remove(kind text, value text, account text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
BEGIN
    DELETE FROM vigil.blocklist b
    WHERE b.account = coalesce(blocklist_remove.account, vigil.default_account())
      AND b.kind = blocklist_remove.kind AND b.value = vigil._identity(blocklist_remove.kind, blocklist_remove.value);
    RETURN FOUND;
END
$$;

REVOKE EXECUTE ON FUNCTION
    vigil.blocklist_add(text, text, text, timestamptz, text), vigil.blocklist_remove(text, text, text)
FROM PUBLIC;

-- Admin: the blocklist of one account, or of all (`account` NULL), as the
-- admin command lists it; row-level security would show its role none.
CREATE FUNCTION vigil.blocklist_list(account text DEFAULT NULL)
RETURNS TABLE (account text, kind text, value text, reason text, created_at timestamptz, expires_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
    SELECT b.account, b.kind, b.value, b.reason, b.created_at, b.expires_at
    FROM vigil.blocklist b
    WHERE blocklist_list.account IS NULL OR b.account = blocklist_list.account
    ORDER BY b.account, b.kind, b.value
$$;
REVOKE EXECUTE ON FUNCTION vigil.blocklist_list(text) FROM PUBLIC;

DROP FUNCTION vigil._identity_duplicate(bytea, integer, bigint);
-- The earlier assessment a perceptual hash repeats among those of the same
-- account: the closest within max_distance bits, then the earliest, with how
-- many matched. Per account, so that one account's uploads tell nothing of
-- another's (issues 60 and 61; per API key in 0.15.0 and 0.16.0). Multi-index
-- hashing: the GIN index gives the rows sharing a band key, and only those
-- are compared bit by bit. vigil.assess_id and make bench-identity call it.
-- Everything is schema-qualified and there is no SET clause, so the planner
-- inlines it into the caller's query (and keeps the GIN index).
CREATE FUNCTION vigil._identity_duplicate(hash bytea, max_distance integer, account text)
RETURNS TABLE (id uuid, distance integer, matches bigint)
LANGUAGE sql STABLE
AS $$
    SELECT c.id, c.distance, pg_catalog.count(*) OVER ()
    FROM (SELECT a.id, a.assessed_at, vigil._phash_distance(a.phash, $1) AS distance
          FROM vigil.identity_assessments a
          WHERE a.phash_bands OPERATOR(pg_catalog.&&) vigil._phash_bands($1)
            AND a.account OPERATOR(pg_catalog.=) $3) AS c
    WHERE c.distance <= $2
    ORDER BY c.distance, c.assessed_at, c.id
    LIMIT 1
$$;
REVOKE EXECUTE ON FUNCTION vigil._identity_duplicate(bytea, integer, text) FROM PUBLIC;

-- Admin: whether `account` shares risk signals with the other accounts that
-- do (the network layer). On, its confirmed frauds so far join the network
-- as hashes; off, they leave it. False when there is no such account.
CREATE FUNCTION vigil.set_risk_sharing(account text, share boolean) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
BEGIN
    IF share IS NULL THEN
        RAISE EXCEPTION 'share must be true or false'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'share';
    END IF;
    UPDATE vigil.accounts a SET share_risk_signals = share WHERE a.account = set_risk_sharing.account;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DELETE FROM vigil.network_fraud n WHERE n.account = set_risk_sharing.account;
    IF share THEN
        INSERT INTO vigil.network_fraud (kind, hash, account, transaction_id)
        SELECT f.kind, vigil._network_hash(f.kind, f.value), f.account, f.transaction_id
        FROM vigil.fraud_identities f
        WHERE f.account = set_risk_sharing.account AND f.kind IN ('email', 'device', 'card')
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN true;
END
$$;
REVOKE EXECUTE ON FUNCTION vigil.set_risk_sharing(text, boolean) FROM PUBLIC;

-- Every account with labels refits its own model (risk/model.rs).
CREATE FUNCTION vigil."risk_refit_accounts"(
	"unlabelled_as_legit_after" interval DEFAULT NULL, /* Option < pgrx :: datum :: Interval > */
	"as_of" timestamp with time zone DEFAULT now() /* Option < pgrx :: datum :: TimestampWithTimeZone > */
) RETURNS TABLE (
	"account" TEXT,  /* alloc :: string :: String */
	"outcome" jsonb  /* crate :: pg :: jsonb :: Jsonb */
)
VOLATILE SECURITY DEFINER
SET search_path TO pg_catalog, vigil
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'risk_refit_accounts_wrapper';
REVOKE EXECUTE ON FUNCTION vigil.risk_refit_accounts(interval, timestamptz) FROM PUBLIC;
