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
-- restored row's counts are not added to twice. And a record whose title
-- and content are only white space (tabs, newlines: not only spaces) is
-- refused, as is a blank search query; and of two drops of one database at
-- once, the second is told it is gone (it returned no row, which the
-- sidecar answered 500). No data changes.

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

CREATE OR REPLACE FUNCTION vigil._check_record(prefix text, title text, content text, metadata jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF title IS NULL THEN
        PERFORM vigil._refuse(prefix || 'title', prefix || 'title is required (a string, may be empty)');
    ELSIF length(title) > 1000 THEN
        PERFORM vigil._refuse(prefix || 'title', prefix || 'title is longer than 1,000 characters');
    ELSIF content IS NULL THEN
        PERFORM vigil._refuse(prefix || 'content', prefix || 'content is required (a string)');
    ELSIF length(content) > 100000 THEN
        PERFORM vigil._refuse(prefix || 'content', prefix || 'content is longer than 100,000 characters');
    ELSIF (title || content) !~ '\S' THEN
        PERFORM vigil._refuse(prefix || 'content', prefix || 'title and content are both empty: nothing to store');
    ELSIF metadata IS NOT NULL AND jsonb_typeof(metadata) <> 'object' THEN
        PERFORM vigil._refuse(prefix || 'metadata', prefix || 'metadata must be a JSON object');
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION vigil._check_search(query text, k integer) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF query IS NULL THEN
        PERFORM vigil._refuse('query', 'query is required');
    ELSIF query !~ '\S' THEN
        PERFORM vigil._refuse('query', 'query is blank: give words to search for');
    END IF;
    PERFORM vigil._check_limit(k);
END
$$;

CREATE OR REPLACE FUNCTION vigil.drop_database(db text DEFAULT NULL)
RETURNS TABLE (name text, records bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
BEGIN
    RETURN QUERY
    DELETE FROM vector_databases d WHERE d.id = vigil._database(db)
    RETURNING d.name, d.records;
    -- Another transaction dropped it after _database found it (two drops at once).
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no database "%" in account %', coalesce(db, current_setting('vigil.db', true)),
            vigil.current_account()
            USING ERRCODE = 'no_data_found', COLUMN = 'dbName';
    END IF;
END
$$;
