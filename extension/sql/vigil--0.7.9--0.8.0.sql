-- vigil 0.7.9 -> 0.8.0: backups hold users' data. Until now pg_dump saw
-- every table of the extension as part of the extension and dumped its
-- definition only, so a dump of an installation restored no key, account,
-- transaction, label, model, identity assessment, vector database or
-- record. Those tables and their identity sequences are now registered
-- with pg_extension_config_dump, so pg_dump dumps their rows and the
-- sequences' positions. The keyword index (vector_terms, vector_postings)
-- and a database's record counts are derived from the records and rebuilt
-- by the records' triggers when a dump is restored; a database's row starts
-- with counts of zero however it is inserted (trigger reset_counts), so a
-- restored row's counts are not added to twice. No data changes.

SELECT pg_catalog.pg_extension_config_dump('vigil.api_keys', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.api_keys_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.accounts', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.user_keys', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.user_keys_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.transactions', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.feedback', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.feedback_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.fraud_identities', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.blocklist', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.risk_models', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.risk_models_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.identity_assessments', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.vector_databases', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.vector_databases_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.vector_records', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.vector_records_id_seq', '');

CREATE FUNCTION vigil._reset_counts() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
BEGIN
    NEW.records := 0;
    NEW.total_length := 0;
    RETURN NEW;
END
$$;
CREATE TRIGGER reset_counts BEFORE INSERT ON vigil.vector_databases
    FOR EACH ROW EXECUTE FUNCTION vigil._reset_counts();
