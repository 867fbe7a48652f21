-- 0.8.0 -> 0.9.0: feedback that helps.
--
-- A confirmed fraud's device and IP become graded evidence that fades from
-- the fraud's own time, so each mark keeps that time (filled here from the
-- transaction it marks) and the index the history reads includes it. A refit
-- judges a new model against the scoring in force and keeps the one that
-- wins; a model row records its features' ranges, the link weights, whether
-- it was adopted and how it fared. No data is lost: every mark and every
-- model stays (models fitted before have no ranges and no link weights, and
-- are used as they were).

ALTER TABLE vigil.fraud_identities ADD COLUMN occurred_at timestamptz;
UPDATE vigil.fraud_identities f SET occurred_at = t.occurred_at
FROM vigil.transactions t WHERE t.id = f.transaction_id;
ALTER TABLE vigil.fraud_identities DROP CONSTRAINT fraud_identities_pkey,
    ADD CONSTRAINT fraud_identities_pkey PRIMARY KEY (kind, value, transaction_id) INCLUDE (occurred_at);

-- `adopted` is added without a default and then filled, so the table's
-- catalog is a fresh install's (a default at ADD COLUMN leaves a "missing
-- value" behind).
ALTER TABLE vigil.risk_models
    ADD COLUMN ranges double precision[],
    ADD COLUMN link_weights double precision[],
    ADD COLUMN adopted boolean,
    ADD COLUMN validation jsonb,
    ADD COLUMN review_cutoff double precision;
UPDATE vigil.risk_models SET adopted = true;
ALTER TABLE vigil.risk_models ALTER COLUMN adopted SET DEFAULT true, ALTER COLUMN adopted SET NOT NULL;

-- The marks as they now stand: hard rules (e-mail, card) and links (device, IP).
CREATE OR REPLACE FUNCTION vigil.transaction_feedback(transaction_id uuid, label text, note text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    t vigil.transactions;
BEGIN
    IF label IS NULL OR label NOT IN ('fraud', 'legit', 'chargeback') THEN
        RAISE EXCEPTION 'label must be fraud, legit or chargeback'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'label';
    END IF;
    IF length(note) > 1000 THEN
        RAISE EXCEPTION 'note must be at most 1000 characters'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'note';
    END IF;
    SELECT * INTO t FROM vigil.transactions x WHERE x.id = transaction_feedback.transaction_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no transaction %', transaction_feedback.transaction_id
            USING ERRCODE = 'no_data_found', COLUMN = 'transactionId';
    END IF;
    INSERT INTO vigil.feedback (transaction_id, label, note) VALUES (t.id, label, note);
    IF label = 'legit' THEN
        DELETE FROM vigil.fraud_identities f WHERE f.transaction_id = t.id;
    ELSE
        INSERT INTO vigil.fraud_identities (kind, value, transaction_id, occurred_at)
        SELECT i.kind, i.value, t.id, t.occurred_at
        FROM (VALUES ('email', t.email), ('device', t.device), ('ip', t.ip), ('card', t.card)) AS i (kind, value)
        WHERE i.value IS NOT NULL
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN jsonb_build_object('transactionId', t.id, 'label', label,
                              'hardRules', (SELECT coalesce(jsonb_agg(f.kind ORDER BY f.kind), '[]') FROM vigil.fraud_identities f
                                            WHERE f.transaction_id = t.id AND f.kind IN ('email', 'card')),
                              'linked', (SELECT coalesce(jsonb_agg(f.kind ORDER BY f.kind), '[]') FROM vigil.fraud_identities f
                                         WHERE f.transaction_id = t.id AND f.kind IN ('device', 'ip')));
END
$$;

-- risk_refit gains `as_of`: the time a refit is as of (a replay's, say).
DROP FUNCTION vigil.risk_refit(interval);
CREATE FUNCTION vigil."risk_refit"(
	"unlabelled_as_legit_after" interval DEFAULT NULL,
	"as_of" timestamp with time zone DEFAULT now()
) RETURNS jsonb
VOLATILE SECURITY DEFINER
SET search_path TO pg_catalog, vigil
LANGUAGE c
AS 'MODULE_PATHNAME', 'risk_refit_wrapper';
REVOKE EXECUTE ON FUNCTION vigil.risk_refit(interval, timestamptz) FROM PUBLIC;
