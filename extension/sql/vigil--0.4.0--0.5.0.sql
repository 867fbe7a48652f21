-- vigil 0.4.0 -> 0.5.0: risk quality.
--
-- Transactions get their event time (occurred_at: the request's `time`
-- unless later than received_at; for existing rows, received_at) and the
-- learned model's features (model_x; none for existing rows), and the
-- history's indexes are keyed by it; the card's index carries the e-mail, to
-- count the other customers of a card. New: the table of models learned from
-- feedback labels and vigil.risk_refit(). Existing rows and labels are kept.

ALTER TABLE vigil.transactions ADD COLUMN occurred_at timestamptz;
UPDATE vigil.transactions SET occurred_at = received_at;
ALTER TABLE vigil.transactions ALTER COLUMN occurred_at SET NOT NULL,
                               ALTER COLUMN occurred_at SET DEFAULT now();
ALTER TABLE vigil.transactions ADD COLUMN model_x real[];

DROP INDEX vigil.transactions_email, vigil.transactions_device, vigil.transactions_ip, vigil.transactions_card;
CREATE INDEX transactions_email ON vigil.transactions (email, occurred_at) INCLUDE (amount) WHERE email IS NOT NULL;
CREATE INDEX transactions_device ON vigil.transactions (device, occurred_at) INCLUDE (email) WHERE device IS NOT NULL;
CREATE INDEX transactions_ip ON vigil.transactions (ip, occurred_at) INCLUDE (email) WHERE ip IS NOT NULL;
CREATE INDEX transactions_card ON vigil.transactions (card, occurred_at) INCLUDE (email) WHERE card IS NOT NULL;
CREATE INDEX transactions_occurred ON vigil.transactions USING brin (occurred_at);

CREATE TABLE vigil.risk_models (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fitted_at        timestamptz NOT NULL DEFAULT now(),
    features         text[] NOT NULL,            -- names, in the order of weights
    weights          double precision[] NOT NULL,
    intercept        double precision NOT NULL,
    expert_intercept double precision NOT NULL,  -- the rules' alone, on the same labels
    frauds           integer NOT NULL,
    legit            integer NOT NULL
);
REVOKE ALL ON vigil.risk_models FROM PUBLIC;

-- vigil::risk::model::risk_refit
CREATE  FUNCTION "risk_refit"(
	"unlabelled_as_legit_after" interval DEFAULT NULL /* Option < pgrx::datum::Interval > */
) RETURNS jsonb /* Jsonb */
VOLATILE SECURITY DEFINER
SET search_path TO pg_catalog, vigil
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'risk_refit_wrapper';
REVOKE EXECUTE ON FUNCTION vigil.risk_refit(interval) FROM PUBLIC;
