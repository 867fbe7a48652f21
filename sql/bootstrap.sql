-- Run by scripts/pg-cluster.sh as the cluster's superuser, in database `vigil`,
-- after CREATE EXTENSION vigil. Idempotent. psql variables :app_password and
-- :admin_password.

-- The role the sidecar connects as: never a superuser, never BYPASSRLS, so the
-- database's own row-level security applies to everything it does.
SELECT format('CREATE ROLE vigil_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD %L', :'app_password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'vigil_app') \gexec
ALTER ROLE vigil_app LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD :'app_password';

GRANT CONNECT ON DATABASE vigil TO vigil_app;
GRANT USAGE ON SCHEMA vigil TO vigil_app;
-- Exactly what the sidecar calls: the two checks, and the account-scoped tables
-- (row-level security decides which rows). Admin functions stay with the owner.
GRANT EXECUTE ON FUNCTION vigil.authenticate_api_key(text, text, inet),
                          vigil.enter_account(text, text, text),
                          vigil.risk_score(jsonb, bigint),
                          vigil.transaction_feedback(uuid, text, text) TO vigil_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON vigil.vector_databases TO vigil_app;
-- The records and their term counts (from 0.3.0; a cluster made at an earlier
-- version for an upgrade test gets them when `up` runs again after updating).
DO $$
BEGIN
    IF to_regclass('vigil.vector_records') IS NOT NULL THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON vigil.vector_records, vigil.vector_terms TO vigil_app;
    END IF;
END
$$;
-- Identity checks (from 0.4.0).
DO $$
BEGIN
    IF to_regprocedure('vigil.assess_id(bytea, bigint)') IS NOT NULL THEN
        GRANT EXECUTE ON FUNCTION vigil.assess_id(bytea, bigint) TO vigil_app;
    END IF;
END
$$;
-- Refitting the risk model on the labels, on the sidecar's schedule (from
-- 0.5.0; with `as_of` from 0.9.0).
DO $$
BEGIN
    IF to_regprocedure('vigil.risk_refit(interval)') IS NOT NULL THEN
        GRANT EXECUTE ON FUNCTION vigil.risk_refit(interval) TO vigil_app;
    END IF;
    IF to_regprocedure('vigil.risk_refit(interval, timestamptz)') IS NOT NULL THEN
        GRANT EXECUTE ON FUNCTION vigil.risk_refit(interval, timestamptz) TO vigil_app;
    END IF;
END
$$;
-- Tenants (from 0.17.0): the sidecar enters an API key's account in the
-- statement that acts for it and refits each account's model; a role that
-- entered an account (an analyst in psql) reads that account's risk and
-- identity rows, row-level security hiding every other account's.
DO $$
BEGIN
    IF to_regprocedure('vigil.enter_api_key(text)') IS NOT NULL THEN
        GRANT EXECUTE ON FUNCTION vigil.enter_api_key(text),
                                  vigil.risk_refit_accounts(interval, timestamptz) TO vigil_app;
        GRANT SELECT ON vigil.transactions, vigil.feedback, vigil.transaction_labels,
                        vigil.fraud_identities, vigil.blocklist, vigil.risk_models,
                        vigil.identity_assessments TO vigil_app;
    END IF;
END
$$;
ALTER ROLE vigil_app IN DATABASE vigil SET search_path = vigil, public;

-- The role of `vigil-sidecar keys|accounts|user-keys`: the admin functions and
-- listings, nothing else (no table, no superuser).
SELECT format('CREATE ROLE vigil_admin LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD %L', :'admin_password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'vigil_admin') \gexec
ALTER ROLE vigil_admin LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD :'admin_password';

GRANT CONNECT ON DATABASE vigil TO vigil_admin;
GRANT USAGE ON SCHEMA vigil TO vigil_admin;
GRANT EXECUTE ON FUNCTION
    vigil.create_account(text), vigil.delete_account(text),
    vigil.create_user_key(text, text, text[], timestamptz, real, integer),
    vigil.key_status(text), vigil.rotate_key(text, interval, timestamptz), vigil.revoke_key(text)
TO vigil_admin;
-- API keys and the blocklist of an account (from 0.17.0; before, of the one
-- installation).
DO $$
BEGIN
    IF to_regprocedure('vigil.blocklist_list(text)') IS NOT NULL THEN
        GRANT EXECUTE ON FUNCTION
            vigil.create_api_key(text, text[], timestamptz, cidr[], real, integer, text),
            vigil.blocklist_add(text, text, text, timestamptz, text), vigil.blocklist_remove(text, text, text),
            vigil.blocklist_list(text), vigil.set_risk_sharing(text, boolean)
        TO vigil_admin;
    ELSE
        GRANT EXECUTE ON FUNCTION
            vigil.create_api_key(text, text[], timestamptz, cidr[], real, integer),
            vigil.blocklist_add(text, text, text, timestamptz), vigil.blocklist_remove(text, text)
        TO vigil_admin;
    END IF;
END
$$;
-- The blocklist's rows: through vigil.blocklist_list from 0.17.0 (row-level
-- security would show this role none), read directly before.
DO $$
BEGIN
    IF to_regprocedure('vigil.blocklist_list(text)') IS NOT NULL THEN
        REVOKE SELECT ON vigil.blocklist FROM vigil_admin;
    ELSE
        GRANT SELECT ON vigil.blocklist TO vigil_admin;
    END IF;
END
$$;
-- Each account's review budget (from 0.18.0).
DO $$
BEGIN
    IF to_regprocedure('vigil.set_risk_review_rate(text, real)') IS NOT NULL THEN
        GRANT EXECUTE ON FUNCTION vigil.set_risk_review_rate(text, real),
                                  vigil.account_risk_settings() TO vigil_admin;
    END IF;
END
$$;
GRANT SELECT ON vigil.api_key_list, vigil.user_key_list, vigil.account_list TO vigil_admin;
-- The account list reads through a function running as its owner (from 0.13.0).
DO $$
BEGIN
    IF to_regprocedure('vigil._account_list()') IS NOT NULL THEN
        GRANT EXECUTE ON FUNCTION vigil._account_list() TO vigil_admin;
    END IF;
END
$$;
