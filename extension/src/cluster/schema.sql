-- Scaling out (docs/scaling-out.md): on a Citus coordinator with workers,
-- vigil.distribute() moves an installation's vector databases onto the
-- workers, keeping every row:
--   accounts, user_keys          reference tables: a copy on every server,
--                                so a database's row can refer to its account
--   vector_databases, _records,  distributed by account, colocated: one
--   _terms, _postings            account's databases, records and keyword
--                                index on one worker, so each search and
--                                write of a database runs there
--   everything else              on the coordinator: API keys, and the risk
--                                and identity tables, whose history signals
--                                read across every customer
-- Citus is a separate extension (AGPL-3.0) the user installs; none of this
-- runs without it, and vigil works unchanged where it is absent.

-- On a worker about to hold vigil's distributed tables, before Citus makes
-- its own: the empty tables CREATE EXTENSION vigil made there leave (with
-- the view over one of them). Refuses when they hold rows: a worker must be
-- a new server. Nothing to do where they are gone, or are Citus's.
CREATE FUNCTION vigil._make_room_for_citus() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
DECLARE
    t text;
    n bigint;
BEGIN
    IF to_regclass('vigil.vector_records') IS NULL
       OR NOT EXISTS (SELECT FROM pg_depend WHERE classid = 'pg_class'::regclass
                      AND objid = to_regclass('vigil.vector_records') AND deptype = 'e') THEN
        RETURN;
    END IF;
    FOREACH t IN ARRAY ARRAY['vigil.accounts', 'vigil.user_keys', 'vigil.vector_databases',
                             'vigil.vector_records', 'vigil.vector_terms', 'vigil.vector_postings'] LOOP
        EXECUTE format('SELECT count(*) FROM %s', t) INTO n;
        IF n > 0 THEN
            RAISE EXCEPTION 'this server''s own % holds % rows: a new worker must be an empty server', t, n;
        END IF;
    END LOOP;
    ALTER EXTENSION vigil DROP VIEW vigil.user_key_list;
    DROP VIEW vigil.user_key_list;
    ALTER EXTENSION vigil DROP SEQUENCE vigil.user_keys_id_seq;
    ALTER EXTENSION vigil DROP SEQUENCE vigil.vector_databases_id_seq;
    ALTER EXTENSION vigil DROP SEQUENCE vigil.vector_records_id_seq;
    FOREACH t IN ARRAY ARRAY['vigil.vector_postings', 'vigil.vector_terms', 'vigil.vector_records',
                             'vigil.vector_databases', 'vigil.user_keys', 'vigil.accounts'] LOOP
        EXECUTE format('ALTER EXTENSION vigil DROP TABLE %s', t);
        EXECUTE format('DROP TABLE %s', t);
    END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION vigil._make_room_for_citus() FROM PUBLIC;

CREATE FUNCTION vigil.distribute(shard_count integer DEFAULT 32)
RETURNS TABLE (relation regclass, kind text, rows_kept bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
DECLARE
    shared CONSTANT text[] := ARRAY['vigil.accounts', 'vigil.user_keys'];
    spread CONSTANT text[] := ARRAY['vigil.vector_databases', 'vigil.vector_records',
                                    'vigil.vector_terms', 'vigil.vector_postings'];
    t text;
    keys text[];
    failed text;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'vigil.distribute() needs Citus in this database'
            USING HINT = 'CREATE EXTENSION citus on every server, add the workers (citus_add_node), then call it again: docs/scaling-out.md';
    END IF;
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE EXCEPTION 'vigil.distribute() must be run by a superuser' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF shard_count IS NULL OR shard_count NOT BETWEEN 1 AND 64000 THEN
        PERFORM vigil._refuse('shard_count', 'shard_count must be 1 to 64000');
    END IF;
    -- Citus's functions are called by EXECUTE: they exist only where it is.
    EXECUTE 'SELECT NOT citus_is_coordinator()' INTO STRICT failed;
    IF failed::boolean THEN
        RAISE EXCEPTION 'vigil.distribute() runs on the coordinator';
    END IF;
    EXECUTE $q$SELECT count(*) = 0 FROM pg_dist_node
               WHERE noderole = 'primary' AND isactive AND shouldhaveshards$q$ INTO STRICT failed;
    IF failed::boolean THEN
        RAISE EXCEPTION 'this coordinator has no workers'
            USING HINT = 'add them first: SELECT citus_add_node(host, port)';
    END IF;
    -- One connection a worker: the tables refer to the reference tables,
    -- which Citus cannot read and change over several at once.
    SET LOCAL citus.multi_shard_modify_mode = 'sequential';
    EXECUTE 'SELECT to_regclass(''vigil.vector_records'') IN (SELECT logicalrelid FROM pg_dist_partition)'
        INTO STRICT failed;
    IF NOT failed::boolean THEN
        EXECUTE 'SELECT string_agg(format(''%s:%s: %s'', nodename, nodeport, result), ''; '')
                 FROM run_command_on_workers(''SELECT vigil._make_room_for_citus()'') WHERE NOT success'
            INTO failed;
        IF failed IS NOT NULL THEN
            RAISE EXCEPTION 'could not make room on the workers: %', failed;
        END IF;
        -- Users' tables from now on, not the extension's: Citus distributes
        -- only those, and creates them on the workers itself.
        ALTER EXTENSION vigil DROP VIEW vigil.user_key_list;
        FOREACH t IN ARRAY shared || spread LOOP
            EXECUTE format('ALTER EXTENSION vigil DROP TABLE %s', t);
        END LOOP;
        ALTER EXTENSION vigil DROP SEQUENCE vigil.user_keys_id_seq;
        ALTER EXTENSION vigil DROP SEQUENCE vigil.vector_databases_id_seq;
        ALTER EXTENSION vigil DROP SEQUENCE vigil.vector_records_id_seq;
        -- The rows are copied as they are: the counts and the keyword index
        -- travel with them, so the triggers that would count them again
        -- stay off while they are copied.
        ALTER TABLE vigil.vector_records DISABLE TRIGGER USER;
        ALTER TABLE vigil.vector_databases DISABLE TRIGGER USER;
        -- The foreign keys between them go while the tables move and come
        -- back after (Citus would otherwise take a table that refers to one
        -- it has moved for a local table of its own, which it cannot move).
        SELECT array_agg(format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.conrelid::regclass, c.conname,
                                pg_get_constraintdef(c.oid)) ORDER BY c.conrelid::regclass::text <> 'vigil.accounts',
                         c.conrelid, c.conname)
        INTO keys
        FROM pg_constraint c
        WHERE c.contype = 'f' AND c.conrelid = ANY ((shared || spread)::regclass[]);
        FOR t IN SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', c.conrelid::regclass, c.conname)
                 FROM pg_constraint c
                 WHERE c.contype = 'f' AND c.conrelid = ANY ((shared || spread)::regclass[]) LOOP
            EXECUTE t;
        END LOOP;
        SET LOCAL citus.enable_unsafe_triggers = on;
        EXECUTE format('SET LOCAL citus.shard_count = %s', shard_count);
        FOREACH t IN ARRAY shared LOOP
            EXECUTE 'SELECT create_reference_table($1)' USING t;
        END LOOP;
        EXECUTE 'SELECT create_distributed_table($1, ''account'')' USING spread[1];
        FOREACH t IN ARRAY spread[2:] LOOP
            EXECUTE 'SELECT create_distributed_table($1, ''account'', colocate_with => $2)' USING t, spread[1];
        END LOOP;
        FOREACH t IN ARRAY keys LOOP
            EXECUTE t;
        END LOOP;
        ALTER TABLE vigil.vector_records ENABLE TRIGGER USER;
        ALTER TABLE vigil.vector_databases ENABLE TRIGGER USER;
    END IF;
    -- Citus moves a shard by logical replication, as a role that is a member
    -- of the tables' owner; a table whose owner is held to its row-level
    -- security (FORCE) refuses that role's rows. Its owner here is a
    -- superuser, which row-level security never holds, so FORCE changes
    -- nothing else.
    FOREACH t IN ARRAY spread LOOP
        EXECUTE format('ALTER TABLE %s NO FORCE ROW LEVEL SECURITY', t);
    END LOOP;
    -- Citus plans a statement naming a distributed table with its
    -- parameters' values; the generic plans the vector searches keep on one
    -- server (vectordb/schema.sql) it cannot make. Again after each
    -- ALTER EXTENSION vigil UPDATE, which writes the functions anew.
    FOR t IN SELECT p.oid::regprocedure::text FROM pg_proc p
             WHERE p.pronamespace = 'vigil'::regnamespace
               AND 'plan_cache_mode=force_generic_plan' = ANY (p.proconfig) LOOP
        EXECUTE format('ALTER FUNCTION %s SET plan_cache_mode = auto', t);
    END LOOP;
    FOREACH t IN ARRAY shared || spread LOOP
        relation := t::regclass;
        kind := CASE WHEN t = ANY (shared) THEN 'reference' ELSE 'distributed by account' END;
        EXECUTE format('SELECT count(*) FROM %s', t) INTO rows_kept;
        RETURN NEXT;
    END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION vigil.distribute(integer) FROM PUBLIC;

-- Adds the server at host:port as a worker (citus_add_node), first making
-- room there for the distributed tables when vigil.distribute() has run
-- (vigil._make_room_for_citus, over Citus's own connection as the caller).
-- Then SELECT citus_rebalance_start() moves shards onto it. The server
-- needs vigil and Citus created in this database first, as every node.
CREATE FUNCTION vigil.add_worker(host text, port integer DEFAULT 5432) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
DECLARE
    ok boolean;
    said text;
    node integer;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'vigil.add_worker() needs Citus in this database';
    END IF;
    IF host IS NULL OR port IS NULL THEN
        PERFORM vigil._refuse('host', 'host and port are required');
    END IF;
    EXECUTE 'SELECT to_regclass(''vigil.vector_records'') IN (SELECT logicalrelid FROM pg_dist_partition)'
        INTO STRICT ok;
    IF ok THEN
        EXECUTE 'SELECT success, result FROM master_run_on_worker(ARRAY[$1], ARRAY[$2], ARRAY[$3], false)'
            INTO STRICT ok, said USING host, port, 'SELECT vigil._make_room_for_citus()';
        IF NOT ok THEN
            RAISE EXCEPTION 'could not make room on %:%: %', host, port, said;
        END IF;
    END IF;
    EXECUTE 'SELECT citus_add_node($1, $2)' INTO STRICT node USING host, port;
    RETURN node;
END
$$;
REVOKE EXECUTE ON FUNCTION vigil.add_worker(text, integer) FROM PUBLIC;
