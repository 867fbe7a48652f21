-- Run by scripts/pg-cluster.sh as the cluster's superuser, in database `vigil`,
-- after CREATE EXTENSION vigil. Idempotent. psql variable :app_password.

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
                          vigil.enter_account(text, text, text) TO vigil_app;
GRANT SELECT, INSERT, DELETE ON vigil.vector_databases TO vigil_app;
ALTER ROLE vigil_app IN DATABASE vigil SET search_path = vigil, public;
