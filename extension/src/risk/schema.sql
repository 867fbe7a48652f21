-- Transaction risk: every assessment, the feedback on it, identities with
-- confirmed fraud, and the blocklist.
--
-- vigil.risk_score (Rust, SECURITY DEFINER) reads the history through the
-- per-identity indexes and records the assessment in the same transaction; the
-- application role writes these tables only through the functions here.
--
-- Every row is an account's (issue 61): its `account`, the first key of every
-- index the history reads, so velocity, reuse, confirmed fraud, the blocklist
-- and the model are each account's own. The functions act for
-- vigil._acting_account() and name it in every statement (they run as the
-- owner); row-level security lets a role that entered an account read that
-- account's rows and no other (an analyst in psql, sql/bootstrap.sql).

-- The assessment's value ranges are domains rather than CHECK constraints: a
-- table's CHECK expressions are parsed and planned again for every execution of
-- the prepared INSERT (they live in the executor state), which a profile put at
-- 7% of an assessment; a domain's checks are cached with the type.
CREATE DOMAIN vigil.risk_score_value AS real CHECK (VALUE BETWEEN 0 AND 100);
CREATE DOMAIN vigil.risk_level_value AS smallint CHECK (VALUE BETWEEN 0 AND 7);
CREATE DOMAIN vigil.risk_result_value AS text CHECK (VALUE IN ('Passed', 'Review', 'Failed'));
CREATE DOMAIN vigil.risk_confidence_value AS text CHECK (VALUE IN ('Low', 'Medium', 'High'));

CREATE TABLE vigil.transactions (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    received_at timestamptz NOT NULL DEFAULT now(),
    -- The API key that asked (vigil.api_keys.id). Not a foreign key: keys are
    -- revoked, never deleted, and checking one would lock the key's row for
    -- every assessment, which all of a key's concurrent calls contend on.
    api_key_id  bigint,
    request     jsonb NOT NULL,             -- normalised: one shape for forms A and B
    features    jsonb NOT NULL,             -- what the signals were computed from
    score       vigil.risk_score_value NOT NULL,
    level       vigil.risk_level_value NOT NULL,
    result      vigil.risk_result_value NOT NULL,
    confidence  vigil.risk_confidence_value NOT NULL,
    reasons     jsonb NOT NULL,             -- [{"code","points","detail"}]
    -- Identities, normalised as the history and the hard rules look them up.
    -- Opaque keys, compared for equality: byte order (COLLATE "C") rather than
    -- the database's linguistic collation, whose strcoll comparisons were 8%
    -- of a recording in a profile.
    email       text COLLATE "C",
    device      text COLLATE "C",
    ip          text COLLATE "C",
    card        text COLLATE "C",
    amount      double precision,
    -- When the purchase happened: its `time` unless later than received_at
    -- (vigil_risk::Request::event_time_us). History windows are in this time,
    -- so a replay or backfill of old purchases sees each as it was. Last
    -- because 0.5.0 added it (upgrades and fresh installs keep one layout).
    occurred_at timestamptz NOT NULL DEFAULT now(),
    -- The learned model's features (vigil_risk::model::FEATURE_NAMES), for
    -- vigil.risk_refit: a real[] of 24 is a third of the size of the jsonb.
    model_x     real[],
    -- Whose it is (0.17.0). Not a foreign key, for the reason api_key_id is not.
    account     text COLLATE "C" NOT NULL
);
-- A typical record is past the 2 kB at which PostgreSQL compresses a row, so
-- every insert compresses its largest jsonb: with the default pglz that was 6%
-- of an assessment in a profile, with lz4 (from 0.6.0) 1.3%, at 8% less saving.
-- Servers built without lz4 keep pglz.
DO $$
BEGIN
    ALTER TABLE vigil.transactions ALTER COLUMN request SET COMPRESSION lz4,
                                   ALTER COLUMN features SET COMPRESSION lz4,
                                   ALTER COLUMN reasons SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'vigil: this server has no lz4; vigil.transactions keeps pglz compression';
END
$$;
-- Velocity and reuse: "this identity in the last hour / day / 90 days before the
-- purchase" is one index range, and "first seen" the start of one.
-- The history reads the e-mail's amounts and the e-mails seen on a device or IP;
-- carried in the index (INCLUDE), those ranges need no heap visits once vacuum
-- has marked the pages all-visible (a profile showed the heap fetches at 14% of
-- an assessment), hence the low insert threshold for autovacuum below.
CREATE INDEX transactions_email ON vigil.transactions (account, email, occurred_at) INCLUDE (amount) WHERE email IS NOT NULL;
CREATE INDEX transactions_device ON vigil.transactions (account, device, occurred_at) INCLUDE (email) WHERE device IS NOT NULL;
CREATE INDEX transactions_ip ON vigil.transactions (account, ip, occurred_at) INCLUDE (email) WHERE ip IS NOT NULL;
CREATE INDEX transactions_card ON vigil.transactions (account, card, occurred_at) INCLUDE (email) WHERE card IS NOT NULL;
-- Analysis by day: rows arrive in time order, so a BRIN index is tiny and enough.
CREATE INDEX transactions_received ON vigil.transactions USING brin (received_at);
CREATE INDEX transactions_occurred ON vigil.transactions USING brin (occurred_at);
ALTER TABLE vigil.transactions SET (autovacuum_vacuum_insert_scale_factor = 0.01);

CREATE TABLE vigil.feedback (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transaction_id uuid NOT NULL REFERENCES vigil.transactions (id) ON DELETE CASCADE,
    label          text NOT NULL CHECK (label IN ('fraud', 'legit', 'chargeback')),
    note           text CHECK (length(note) <= 1000),
    created_at     timestamptz NOT NULL DEFAULT now(),
    account        text COLLATE "C" NOT NULL    -- the transaction's
);
CREATE INDEX ON vigil.feedback (transaction_id, created_at);

-- Identities of transactions labelled fraud or chargeback, until a later
-- `legit` label on that transaction: the e-mail and card are hard rules
-- (level 2) for later transactions; the device and IP graded evidence that
-- fades from the fraud's own time, `occurred_at` (risk/history.rs reads it
-- from the index).
CREATE TABLE vigil.fraud_identities (
    kind           text COLLATE "C" NOT NULL CHECK (kind IN ('email', 'device', 'ip', 'card')),
    value          text COLLATE "C" NOT NULL,
    transaction_id uuid NOT NULL REFERENCES vigil.transactions (id) ON DELETE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    occurred_at    timestamptz,
    account        text COLLATE "C" NOT NULL,   -- the transaction's
    PRIMARY KEY (account, kind, value, transaction_id) INCLUDE (occurred_at)
);
CREATE INDEX ON vigil.fraud_identities (transaction_id);

CREATE TABLE vigil.blocklist (
    kind       text COLLATE "C" NOT NULL CHECK (kind IN ('email', 'device', 'ip', 'card')),
    value      text COLLATE "C" NOT NULL CHECK (length(value) BETWEEN 1 AND 1000),
    reason     text CHECK (length(reason) <= 1000),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    account    text COLLATE "C" NOT NULL,
    -- The history reads the expiry from the index (risk/history.rs).
    PRIMARY KEY (account, kind, value) INCLUDE (expires_at)
);

-- Models fitted on the labels by vigil.risk_refit(); risk_score uses the
-- newest (risk/model.rs). Deleting the rows turns learning off.
CREATE TABLE vigil.risk_models (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fitted_at        timestamptz NOT NULL DEFAULT now(),
    features         text[] NOT NULL,            -- names, in the order of weights
    weights          double precision[] NOT NULL,
    intercept        double precision NOT NULL,
    expert_intercept double precision NOT NULL,  -- the rules' alone, on the same labels
    frauds           integer NOT NULL,
    legit            integer NOT NULL,
    -- Each feature's least and greatest value in the fitted rows, in pairs
    -- (NULL: unbounded, as for models fitted before 0.9.0).
    ranges           double precision[],
    -- How much a link to confirmed fraud weighs here: {device, ip}.
    link_weights     double precision[],
    -- Whether this refit's fit became the model (else the row carries the
    -- model in force before it, with the new link weights), and how it fared
    -- against the scoring in force on the newest labels.
    adopted          boolean NOT NULL DEFAULT true,
    validation       jsonb,
    -- The Review cut-off a review budget set (vigil.risk_review_rate), as a
    -- score at strictness 50 in place of 60; NULL: the default cut-offs.
    review_cutoff    double precision,
    -- Whose labels it was fitted on and whose transactions it scores.
    account          text COLLATE "C" NOT NULL
);
-- An account's newest model: one descent (risk/model.rs).
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

REVOKE ALL ON vigil.transactions, vigil.feedback, vigil.fraud_identities, vigil.blocklist, vigil.risk_models,
              vigil.network_fraud FROM PUBLIC;

-- In backups (keys/schema.sql says why).
SELECT pg_catalog.pg_extension_config_dump('vigil.transactions', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.feedback', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.feedback_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.fraud_identities', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.blocklist', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.risk_models', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.risk_models_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.network_fraud', '');

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
CREATE FUNCTION vigil.transaction_feedback(transaction_id uuid, label text, note text DEFAULT NULL)
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
    vigil.transaction_feedback(uuid, text, text),
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

-- Admin: the share of `account`'s transactions its people can review, its
-- review budget (0.18.0): each refit of the account's model then moves the
-- account's Review cut-off so that about that share scores at or above it,
-- and judges candidates by the fraud they catch at that share. NULL: the
-- installation's vigil.risk_review_rate. False when there is no such account.
CREATE FUNCTION vigil.set_risk_review_rate(account text, rate real) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
BEGIN
    IF rate IS NOT NULL AND NOT (rate > 0 AND rate <= 0.5) THEN
        RAISE EXCEPTION 'invalid rate: the share of transactions reviewed, above 0 and at most 0.5 (NULL: the installation''s vigil.risk_review_rate)'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'rate';
    END IF;
    UPDATE vigil.accounts a SET review_rate = rate WHERE a.account = set_risk_review_rate.account;
    RETURN FOUND;
END
$$;
REVOKE EXECUTE ON FUNCTION vigil.set_risk_review_rate(text, real) FROM PUBLIC;

-- Admin: each account's risk settings, as `accounts list` shows them.
CREATE FUNCTION vigil.account_risk_settings()
RETURNS TABLE (account text, share_risk_signals boolean, review_rate real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
    SELECT a.account, a.share_risk_signals, a.review_rate FROM vigil.accounts a ORDER BY a.account
$$;
REVOKE EXECUTE ON FUNCTION vigil.account_risk_settings() FROM PUBLIC;
