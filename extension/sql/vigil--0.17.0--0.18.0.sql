-- 0.17.0 -> 0.18.0 (issue 61, its last parts): entering an API key's account
-- costs a fraction of what it did, and each account may set its own review budget.
--
-- What changed:
-- - vigil.enter_api_key(key) is in Rust (keys/enter.rs), replaced in place so
--   that its grants stay, without a SET search_path clause: each backend keeps
--   the live keys it read, and vigil.api_keys' trigger api_keys_changed
--   (vigil._forget_api_keys) tells every backend to forget them on a change;
-- - vigil.accounts.review_rate, set by vigil.set_risk_review_rate(account,
--   rate): the share of the account's transactions its people can review,
--   which each refit of its model moves its Review cut-off to (NULL: the
--   installation's vigil.risk_review_rate, as before);
-- - vigil.account_risk_settings(), which `accounts list` shows.

CREATE OR REPLACE FUNCTION vigil."enter_api_key"(
	"key" TEXT /* core::option::Option<&str> */
) RETURNS bigint /* i64 */
VOLATILE SECURITY DEFINER
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'enter_api_key_wrapper';

ALTER TABLE vigil.accounts
    ADD COLUMN review_rate real CHECK (review_rate > 0 AND review_rate <= 0.5);

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

-- Backends keep the live API keys they read (keys/enter.rs: vigil.enter_api_key
-- runs on every request); a change to the table tells every backend to forget
-- them when it commits.
CREATE  FUNCTION vigil."_forget_api_keys"(
	"table" oid /* pgrx_pg_sys::submodules::oids::Oid */
) RETURNS void
STRICT VOLATILE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'forget_api_keys_wrapper';
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
REVOKE EXECUTE ON FUNCTION vigil._forget_api_keys(oid), vigil._api_keys_changed() FROM PUBLIC;
