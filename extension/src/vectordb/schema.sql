-- Vector databases: named per account, holding text records embedded by
-- vigil.embed and searched by similarity, by BM25 keywords, or both fused.
--
-- The functions run as their owner (SECURITY DEFINER) and name the account
-- in every statement: the account vigil.enter_account set for the
-- application role, or a superuser in psql sets as `vigil.account`. On a
-- Citus cluster that is what routes a statement to the one server holding
-- the account, and the owner's connections to the workers read the shards
-- there (the workers cannot know the coordinator's account setting, so
-- row-level security, which still guards the tables themselves, would hide
-- every row). Row-level security is not what confines them, so each
-- statement's `account = ` is.
-- Which database a call means, when not passed, comes from `vigil.db`.
--
-- Layout:
--   vector_databases  one row per (account, name), with the counts BM25 needs
--                     (records, total_length), kept by the records' triggers
--   vector_records    the records: text, metadata, the embedding (vigil_hnsw
--                     index), the keyword terms
--   vector_terms      per database and lexeme, how many records hold it (the
--                     IDF of BM25), kept by the same triggers
--   vector_postings   the keyword index: per database and lexeme, the
--                     records holding it, in blocks; kept by the same
--                     triggers, ranked from without reading a record
-- Each table carries `account` in every key, so the four can be spread over
-- a Citus cluster by account, colocated (vigil.distribute, cluster/schema.sql):
-- whatever one database's search or write touches is then on one server.

CREATE TABLE vigil.vector_databases (
    account      text NOT NULL REFERENCES vigil.accounts (account) ON DELETE CASCADE,
    name         text NOT NULL CHECK (vigil.valid_db_name(name)),
    created_at   timestamptz NOT NULL DEFAULT now(),
    id           bigint GENERATED ALWAYS AS IDENTITY,
    records      bigint NOT NULL DEFAULT 0,
    total_length bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (account, name),
    UNIQUE (id, account)
);

-- The words a record is found by: English stems (stop words dropped, with
-- positions, so term frequencies and length count) plus its exact tokens,
-- kept whole. The same function turns a query into its terms.
CREATE FUNCTION vigil.search_terms(text text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT to_tsvector('pg_catalog.english', text) || array_to_tsvector(vigil.exact_tokens(text)) $$;

CREATE TABLE vigil.vector_records (
    id         bigint GENERATED ALWAYS AS IDENTITY,
    db         bigint NOT NULL,
    account    text NOT NULL,
    title      text NOT NULL,
    content    text NOT NULL,
    metadata   jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    embedding  real[] NOT NULL CHECK (cardinality(embedding) = 384),
    terms      tsvector NOT NULL GENERATED ALWAYS AS (vigil.search_terms(title || ' ' || content)) STORED,
    -- The content's first sentence as read within the record (vigil._embed_records),
    -- which hybrid search reads the record by too; NULL for records stored
    -- before 0.11.0 until vigil.fill_openings reads them.
    opening    real[] CHECK (cardinality(opening) = 384),
    PRIMARY KEY (id, account),
    FOREIGN KEY (db, account) REFERENCES vigil.vector_databases (id, account) ON DELETE CASCADE
);
-- Embeddings stay in the row (a 1.5 kB array does not compress) so a scan
-- reads no TOAST; long content moves out instead.
ALTER TABLE vigil.vector_records ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE vigil.vector_records ALTER COLUMN opening SET STORAGE MAIN;
CREATE INDEX vector_records_db ON vigil.vector_records (db, id);
-- One graph per database (a partitioned vigil_hnsw index, keyed by `db`): a
-- search of one database walks a graph of its records alone, as good as if
-- it were the only database (docs/hnsw.md, partitioned indexes). Built
-- with a beam of 128 (the access method's default is 64, pgvector's): the
-- better graph reaches recall@10 0.99 at a beam a third as wide, so every
-- search costs less for inserts costing a quarter more (make
-- bench-vectordb-recall, docs/performance.md, "The graph's build beam").
CREATE INDEX vector_records_embedding ON vigil.vector_records
    USING vigil_hnsw (db vigil.int8_ops, embedding vigil.cosine_ops) WITH (ef_construction = 128);

CREATE TABLE vigil.vector_terms (
    db      bigint NOT NULL,
    term    text NOT NULL,
    records bigint NOT NULL,
    account text NOT NULL,
    PRIMARY KEY (db, term, account),
    FOREIGN KEY (db, account) REFERENCES vigil.vector_databases (id, account) ON DELETE CASCADE
);

-- Blocks of up to vigil._postings_block_size() postings (record id, term
-- frequency, record length), sorted by id, in the layout of
-- vigil_search::postings; `size` is how many. New postings go to a term's
-- newest block (largest first_id) while it has room. A GIN index on `terms`
-- would find the records but not rank them: BM25 then reads and parses
-- every matching record, 25.9 ms at p50 and 205 ms at p99 over 100,000
-- records where a query's words are common (README, search figures).
CREATE TABLE vigil.vector_postings (
    db       bigint NOT NULL,
    term     text NOT NULL,
    first_id bigint NOT NULL,
    last_id  bigint NOT NULL,
    size     integer NOT NULL,
    postings bytea NOT NULL,
    account  text NOT NULL,
    PRIMARY KEY (db, term, first_id, account),
    FOREIGN KEY (db, account) REFERENCES vigil.vector_databases (id, account) ON DELETE CASCADE
);

REVOKE ALL ON vigil.vector_databases, vigil.vector_records, vigil.vector_terms, vigil.vector_postings FROM PUBLIC;

ALTER TABLE vigil.vector_databases ENABLE ROW LEVEL SECURITY;
ALTER TABLE vigil.vector_databases FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.vector_databases
    USING (account = vigil.current_account())
    WITH CHECK (account = vigil.current_account());

ALTER TABLE vigil.vector_records ENABLE ROW LEVEL SECURITY;
ALTER TABLE vigil.vector_records FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.vector_records
    USING (account = vigil.current_account())
    WITH CHECK (account = vigil.current_account());

-- Term counts reveal words, so they are the account's too.
ALTER TABLE vigil.vector_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE vigil.vector_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.vector_terms
    USING (account = vigil.current_account())
    WITH CHECK (account = vigil.current_account());

ALTER TABLE vigil.vector_postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE vigil.vector_postings FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.vector_postings
    USING (account = vigil.current_account())
    WITH CHECK (account = vigil.current_account());

-- In backups (keys/schema.sql says why): the databases and their records.
-- vector_terms, vector_postings and the databases' counts are derived from
-- the records, so they are not dumped: restoring the records fires the
-- triggers below, which build them again, and a database starts with
-- counts of zero however its row arrives (reset_counts), so a restored
-- row's dumped counts are not added to twice.
SELECT pg_catalog.pg_extension_config_dump('vigil.vector_databases', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.vector_databases_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.vector_records', '');
SELECT pg_catalog.pg_extension_config_dump('vigil.vector_records_id_seq', '');

-- Admin: every account, its live user keys and its databases. Read by a
-- function running as its owner, in statements Citus can plan: on a cluster
-- the databases are on the workers, which the owner's connections reach
-- (the view's reader's would not, and row-level security there would hide
-- every row from them).
CREATE FUNCTION vigil._account_list()
RETURNS TABLE (account text, created_at timestamptz, active_user_keys bigint, databases text[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
    WITH keys AS MATERIALIZED (
        SELECT u.account, count(*) AS n FROM user_keys u
        WHERE vigil._key_status(u.revoked_at, u.expires_at) = 'active'
        GROUP BY u.account
    ), dbs AS MATERIALIZED (
        SELECT d.account, array_agg(d.name ORDER BY d.name) AS names FROM vector_databases d
        GROUP BY d.account
    )
    SELECT a.account, a.created_at, coalesce(k.n, 0), coalesce(d.names, '{}')
    FROM accounts a LEFT JOIN keys k ON k.account = a.account LEFT JOIN dbs d ON d.account = a.account
$$;
REVOKE EXECUTE ON FUNCTION vigil._account_list() FROM PUBLIC;
CREATE VIEW vigil.account_list AS SELECT * FROM vigil._account_list();
REVOKE ALL ON vigil.account_list FROM PUBLIC;

-- The table `wanted` (vector_terms, vector_postings, vector_databases) that a
-- trigger on `fired_on` writes: the table itself on one server; on a Citus
-- worker, where the trigger fires on vector_records_<shard id>, the shard of
-- `wanted` holding the same hash range (colocated shards share their
-- ranges, also after a split).
CREATE FUNCTION vigil._colocated(fired_on text, wanted text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, vigil
AS $$
DECLARE
    shard bigint := substring(fired_on FROM '^vector_records_([0-9]+)$')::bigint;
    found bigint;
BEGIN
    IF shard IS NULL THEN
        RETURN format('vigil.%I', wanted);
    END IF;
    -- pg_dist_shard exists only where Citus is: read dynamically.
    EXECUTE 'SELECT s.shardid FROM pg_dist_shard s JOIN pg_dist_shard r ON r.shardminvalue = s.shardminvalue
             WHERE r.shardid = $1 AND s.logicalrelid = $2::regclass'
    INTO found USING shard, format('vigil.%I', wanted);
    IF found IS NULL THEN
        RAISE EXCEPTION 'no shard of vigil.% beside shard % of vigil.vector_records', wanted, shard
            USING HINT = 'vigil.distribute() colocates the vector tables';
    END IF;
    RETURN format('vigil.%I', wanted || '_' || found);
END
$$;

-- Keeps vector_terms, vector_postings and the databases' counts current as
-- records come, go or change: one statement-level pass over the transition
-- tables, terms upserted in key order so concurrent writers lock them in
-- the same order. A term's postings change only after its vector_terms row
-- is locked, so writers of one term take turns, each statement seeing the
-- blocks the one before committed. Records that leave with their database
-- (a cascade) are skipped: their counts and postings leave with it.
-- SECURITY DEFINER: the writer's own statement already passed row-level
-- security, and everything here follows from the rows it wrote, so the
-- application role needs no grant on the index tables.
-- On a Citus cluster the trigger fires on a shard of vector_records
-- (vector_records_<shard id>) on the worker holding it, and writes the
-- shards beside it that hold the same accounts (vigil._colocated): plain
-- tables of that server, as the transition tables are, which a query
-- through the distributed tables could not join.
CREATE FUNCTION vigil._count_terms() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    terms text := vigil._colocated(TG_TABLE_NAME, 'vector_terms');
    postings text := vigil._colocated(TG_TABLE_NAME, 'vector_postings');
    dbs text := vigil._colocated(TG_TABLE_NAME, 'vector_databases');
BEGIN
    -- An update that changes no record's words or database (vigil.fill_openings
    -- writing openings) leaves the counts and postings as they are.
    -- (Nested: the transition tables exist only for their own events.)
    IF TG_OP = 'UPDATE' THEN
        IF NOT EXISTS (SELECT FROM old_rows o JOIN new_rows n ON n.id = o.id
                       WHERE n.terms IS DISTINCT FROM o.terms OR n.db <> o.db) THEN
            RETURN NULL;
        END IF;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        -- Two statements: one cannot delete the rows it has just updated.
        EXECUTE format($q$
            UPDATE %1$s v SET records = v.records - g.n
            FROM (SELECT o.db, o.account, t.term, count(*) AS n
                  FROM old_rows o, unnest(tsvector_to_array(o.terms)) AS t (term)
                  WHERE EXISTS (SELECT FROM %2$s d WHERE d.id = o.db AND d.account = o.account)
                  GROUP BY o.db, o.account, t.term) g
            WHERE v.db = g.db AND v.term = g.term AND v.account = g.account$q$, terms, dbs);
        EXECUTE format($q$
            DELETE FROM %1$s v
            USING (SELECT DISTINCT o.db, o.account, t.term
                   FROM old_rows o, unnest(tsvector_to_array(o.terms)) AS t (term)) g
            WHERE v.db = g.db AND v.term = g.term AND v.account = g.account AND v.records <= 0$q$, terms);
        -- Their postings, out of the blocks holding them.
        EXECUTE format($q$
            WITH gone AS (
                SELECT o.db, o.account, u.lexeme AS term, array_agg(o.id) AS ids,
                       min(o.id) AS low, max(o.id) AS high
                FROM old_rows o, unnest(o.terms) AS u
                WHERE EXISTS (SELECT FROM %2$s d WHERE d.id = o.db AND d.account = o.account)
                GROUP BY o.db, o.account, u.lexeme
            ), hit AS (
                DELETE FROM %1$s p USING gone g
                WHERE p.db = g.db AND p.term = g.term AND p.account = g.account
                  AND p.first_id <= g.high AND p.last_id >= g.low
                  AND vigil._postings_holds_any(p.postings, g.ids)
                RETURNING p.db, p.account, p.term, p.postings, g.ids
            )
            INSERT INTO %1$s (db, account, term, first_id, last_id, size, postings)
            SELECT h.db, h.account, h.term, b.first_id, b.last_id, b.size, b.postings
            FROM hit h, vigil._postings_remove(h.postings, h.ids) AS b$q$, postings, dbs);
        EXECUTE format($q$
            UPDATE %1$s d
            SET records = d.records - s.n, total_length = d.total_length - s.length
            FROM (SELECT o.db, o.account, count(*) AS n, sum(vigil.bm25_length(o.terms)) AS length
                  FROM old_rows o GROUP BY o.db, o.account) s
            WHERE d.id = s.db AND d.account = s.account$q$, dbs);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        EXECUTE format($q$
            INSERT INTO %1$s AS v (db, account, term, records)
            SELECT n.db, n.account, t.term, count(*)
            FROM new_rows n, unnest(tsvector_to_array(n.terms)) AS t (term)
            GROUP BY n.db, n.account, t.term
            ORDER BY n.db, t.term, n.account
            ON CONFLICT (db, term, account) DO UPDATE SET records = v.records + excluded.records$q$, terms);
        -- Their postings, merged into each term's newest block while it has
        -- room, then into new blocks.
        EXECUTE format($q$
            WITH added AS (
                SELECT n.db, n.account, u.lexeme AS term,
                       array_agg(n.id ORDER BY n.id) AS ids,
                       array_agg(greatest(cardinality(u.positions), 1) ORDER BY n.id) AS tfs,
                       array_agg(n.length ORDER BY n.id) AS lengths
                FROM (SELECT r.id, r.db, r.account, r.terms, vigil.bm25_length(r.terms) AS length
                      FROM new_rows r) n,
                     unnest(n.terms) AS u
                GROUP BY n.db, n.account, u.lexeme
            ), tails AS (
                DELETE FROM %1$s p USING added a
                WHERE p.db = a.db AND p.term = a.term AND p.account = a.account
                  AND p.size < vigil._postings_block_size()
                  AND p.first_id = (SELECT max(q.first_id) FROM %1$s q
                                    WHERE q.db = a.db AND q.term = a.term AND q.account = a.account)
                RETURNING p.db, p.account, p.term, p.postings
            )
            INSERT INTO %1$s (db, account, term, first_id, last_id, size, postings)
            SELECT a.db, a.account, a.term, b.first_id, b.last_id, b.size, b.postings
            FROM added a LEFT JOIN tails t ON t.db = a.db AND t.term = a.term AND t.account = a.account,
                 vigil._postings_append(t.postings, a.ids, a.tfs, a.lengths) AS b$q$, postings);
        EXECUTE format($q$
            UPDATE %1$s d
            SET records = d.records + s.n, total_length = d.total_length + s.length
            FROM (SELECT n.db, n.account, count(*) AS n, sum(vigil.bm25_length(n.terms)) AS length
                  FROM new_rows n GROUP BY n.db, n.account) s
            WHERE d.id = s.db AND d.account = s.account$q$, dbs);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER count_terms_insert AFTER INSERT ON vigil.vector_records
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION vigil._count_terms();
CREATE TRIGGER count_terms_update AFTER UPDATE ON vigil.vector_records
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION vigil._count_terms();
CREATE TRIGGER count_terms_delete AFTER DELETE ON vigil.vector_records
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION vigil._count_terms();

-- A new database holds no records, so its counts start at zero whatever the
-- inserted row says: a restore loads each database's row (with the counts it
-- had) before its records, whose triggers count them again.
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

-- `t` as the API's `createdAt`: nanoseconds since the Unix epoch, 19 digits.
CREATE FUNCTION vigil.epoch_ns(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT lpad((extract(epoch FROM t) * 1000000000)::bigint::text, 19, '0') $$;

-- The account a vector function acts for; an error naming the fix when none.
CREATE FUNCTION vigil._require_account() RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    acct text := vigil.current_account();
BEGIN
    IF acct IS NULL THEN
        RAISE EXCEPTION 'no account selected'
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'call vigil.enter_account(account, user_key, db) first, or as a superuser SET vigil.account';
    END IF;
    RETURN acct;
END
$$;

-- ERROR 42501 naming dbName when the user key that entered the account is
-- limited to other databases (vigil.enter_account), as HTTP answers 403.
CREATE FUNCTION vigil._require_granted(db text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF NOT vigil._database_granted(db) THEN
        RAISE EXCEPTION 'the user key is limited to other databases than "%"', vigil._echo(db)
            USING ERRCODE = 'insufficient_privilege', COLUMN = 'dbName';
    END IF;
END
$$;

-- ERROR 22023 naming `field`, as every refusal of a bad value is.
CREATE FUNCTION vigil._refuse(field text, message text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    RAISE EXCEPTION '%', message USING ERRCODE = 'invalid_parameter_value', COLUMN = field;
END
$$;

-- A name the caller gave, as an error message repeats it: at most 64
-- characters, so a 5,000-character name is not sent back whole.
CREATE FUNCTION vigil._echo(given text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT CASE WHEN pg_catalog.char_length(given) <= 64 THEN given
                ELSE pg_catalog.left(given, 63) || '…' END
$$;

-- Whether `t` holds nothing to see: only white space, Unicode's included
-- (no-break, ideographic, line and paragraph separators), and characters
-- that print nothing (zero-width spaces and joiners, direction marks, the
-- byte-order mark, soft hyphens, Hangul and braille fillers). `\s` alone
-- knows ASCII's only under the C locale.
CREATE FUNCTION vigil._blank(t text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT t !~ '[^\s\u0085\u00a0\u00ad\u034f\u115f\u1160\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2800\u3000\u3164\uffa0\ufeff]'
$$;

-- ERROR P0002 naming dbName: the account has no database `db` (or none of
-- that id: an internal function given one it cannot see, or one deleted
-- while a statement used it).
CREATE FUNCTION vigil._no_database(db text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RAISE EXCEPTION 'no database "%" in account %', vigil._echo(db), vigil.current_account()
        USING ERRCODE = 'no_data_found', COLUMN = 'dbName',
              HINT = 'create it with vigil.create_database or POST /createDatabase';
END
$$;

-- Creates the database `db` of the current account; `created` is false when it
-- already existed (creating is idempotent).
CREATE FUNCTION vigil.create_database(db text)
RETURNS TABLE (account text, name text, created_at timestamptz, created boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
BEGIN
    account := vigil._require_account();
    IF db IS NULL OR NOT vigil.valid_db_name(db) THEN
        RAISE EXCEPTION 'dbName must be 1 to 63 letters, digits, "_", "." or "-", starting with a letter or digit'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'dbName';
    END IF;
    PERFORM vigil._require_granted(db);
    name := db;
    INSERT INTO vigil.vector_databases AS d (account, name) VALUES (create_database.account, db)
    ON CONFLICT DO NOTHING
    RETURNING d.created_at INTO created_at;
    created := FOUND;
    IF NOT created THEN
        SELECT d.created_at INTO created_at FROM vigil.vector_databases d
        WHERE d.account = create_database.account AND d.name = db;
    END IF;
    RETURN NEXT;
END
$$;

-- The id of the current account's database `db` (NULL: the setting
-- vigil.db); 22023 naming dbName when none is given, P0002 when unknown.
CREATE FUNCTION vigil._database(db text) RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    acct text := vigil._require_account();
    wanted text := coalesce(db, nullif(current_setting('vigil.db', true), ''));
    found_id bigint;
BEGIN
    IF wanted IS NULL THEN
        PERFORM vigil._refuse('dbName', 'dbName is required (pass it, or SET vigil.db)');
    END IF;
    PERFORM vigil._require_granted(wanted);
    SELECT d.id INTO found_id FROM vector_databases d WHERE d.account = acct AND d.name = wanted;
    IF found_id IS NULL THEN
        PERFORM vigil._no_database(wanted);
    END IF;
    RETURN found_id;
END
$$;

-- Deletes the database `db` with all its records; P0002 when unknown.
CREATE FUNCTION vigil.drop_database(db text DEFAULT NULL)
RETURNS TABLE (name text, records bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
BEGIN
    RETURN QUERY
    DELETE FROM vector_databases d WHERE d.account = acct AND d.id = db_id
    RETURNING d.name, d.records;
    -- Another transaction dropped it after _database found it (two drops at once).
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no database "%" in account %', coalesce(db, current_setting('vigil.db', true)),
            vigil.current_account()
            USING ERRCODE = 'no_data_found', COLUMN = 'dbName';
    END IF;
END
$$;

-- A checked record for the store functions: 22023 naming `prefix`||field
-- when `title` or `content` is missing or too long, or `metadata` is not an object.
CREATE FUNCTION vigil._check_record(prefix text, title text, content text, metadata jsonb) RETURNS void
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
    ELSIF vigil._blank(title || content) THEN
        PERFORM vigil._refuse(prefix || 'content', prefix || 'title and content are both empty: nothing to store');
    ELSIF metadata IS NOT NULL AND jsonb_typeof(metadata) <> 'object' THEN
        PERFORM vigil._refuse(prefix || 'metadata', prefix || 'metadata must be a JSON object');
    END IF;
END
$$;

-- A record as the store and delete functions return it (a type, not OUT
-- columns, so their parameters can be called title, content and id).
CREATE TYPE vigil.vector_record AS (id bigint, title text, content text, metadata jsonb, created_at timestamptz);

-- Stores records given as a JSON array of {title, content, metadata}: all of
-- them or, when one is refused, none. One model call embeds them all, each
-- as its title and content. Returns them in the order given.
CREATE FUNCTION vigil.store_records(records jsonb, db text DEFAULT NULL)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    db_id bigint := vigil._database(db);
    acct text := vigil.current_account();
    n integer;
    i integer := 0;
    r jsonb;
BEGIN
    IF records IS NULL OR jsonb_typeof(records) <> 'array' THEN
        PERFORM vigil._refuse('records', 'records must be an array of {title, content, metadata}');
    END IF;
    n := jsonb_array_length(records);
    IF n NOT BETWEEN 1 AND 1000 THEN
        PERFORM vigil._refuse('records', format('records must hold 1 to 1,000 records, not %s', n));
    END IF;
    FOR r IN SELECT e FROM jsonb_array_elements(records) AS e LOOP
        IF jsonb_typeof(r) <> 'object' THEN
            PERFORM vigil._refuse(format('records[%s]', i), format('records[%s] must be an object', i));
        END IF;
        IF jsonb_typeof(r -> 'title') NOT IN ('string', 'null') THEN
            PERFORM vigil._refuse(format('records[%s].title', i), format('records[%s].title must be a string', i));
        END IF;
        IF jsonb_typeof(r -> 'content') NOT IN ('string', 'null') THEN
            PERFORM vigil._refuse(format('records[%s].content', i), format('records[%s].content must be a string', i));
        END IF;
        PERFORM vigil._check_record(format('records[%s].', i), r ->> 'title', r ->> 'content',
                                    nullif(r -> 'metadata', 'null'));
        i := i + 1;
    END LOOP;
    RETURN QUERY
    WITH given AS (
        SELECT e.ord, e.r ->> 'title' AS title, e.r ->> 'content' AS content,
               coalesce(nullif(e.r -> 'metadata', 'null'), '{}') AS metadata
        FROM jsonb_array_elements(records) WITH ORDINALITY AS e (r, ord)
    ), vectors AS (
        SELECT v.ord, v.embedding, v.opening
        FROM vigil._embed_records(ARRAY(SELECT g.title FROM given g ORDER BY g.ord),
                                  ARRAY(SELECT g.content FROM given g ORDER BY g.ord))
             WITH ORDINALITY AS v (embedding, opening, ord)
    ), stored AS (
        INSERT INTO vector_records AS s (db, account, title, content, metadata, embedding, opening)
        SELECT db_id, acct, g.title, g.content, g.metadata, v.embedding, v.opening
        FROM given g JOIN vectors v USING (ord)
        ORDER BY g.ord
        RETURNING s.id, s.title, s.content, s.metadata, s.created_at
    )
    SELECT * FROM stored ORDER BY stored.id;
EXCEPTION WHEN foreign_key_violation THEN
    -- The database was deleted after it was looked up (a delete that
    -- committed while the records were embedded): it is gone, as a store
    -- after the delete would be told.
    PERFORM vigil._no_database(coalesce(db, current_setting('vigil.db', true)));
END
$$;

-- Stores one record (see vigil.store_records).
CREATE FUNCTION vigil.store_record(title text, content text, metadata jsonb DEFAULT '{}', db text DEFAULT NULL)
RETURNS SETOF vigil.vector_record
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    db_id bigint := vigil._database(db);
BEGIN
    PERFORM vigil._check_record('', title, content, metadata);
    RETURN QUERY
    INSERT INTO vector_records AS s (db, account, title, content, metadata, embedding, opening)
    SELECT db_id, vigil.current_account(), store_record.title, store_record.content,
           coalesce(store_record.metadata, '{}'), v.embedding, v.opening
    FROM vigil._embed_records(ARRAY[store_record.title], ARRAY[store_record.content]) v
    RETURNING s.id, s.title, s.content, s.metadata, s.created_at;
EXCEPTION WHEN foreign_key_violation THEN
    -- Deleted after it was looked up (see vigil.store_records).
    PERFORM vigil._no_database(coalesce(db, current_setting('vigil.db', true)));
END
$$;

-- Reads the opening (vector_records.opening) of at most `max_records`
-- records that lack one, oldest first: those stored before 0.11.0, of the
-- caller's account (row-level security; a superuser's, every account's).
-- Returns how many it read; call it until it returns 0, then VACUUM
-- vigil.vector_records (each record read is a new row version). Until then
-- hybrid search reads those records by their whole text alone.
CREATE FUNCTION vigil.fill_openings(max_records integer DEFAULT 1000) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, vigil
AS $$
DECLARE
    filled bigint;
BEGIN
    IF max_records IS NULL OR max_records < 1 THEN
        PERFORM vigil._refuse('max_records', 'max_records must be 1 or more');
    END IF;
    WITH locked AS (
        SELECT r.id, r.title, r.content
        FROM vector_records r WHERE r.opening IS NULL
        ORDER BY r.id LIMIT max_records
        FOR UPDATE OF r SKIP LOCKED
    ), todo AS (
        SELECT l.*, row_number() OVER (ORDER BY l.id) AS ord FROM locked l
    ), vectors AS (
        SELECT v.ord, v.opening
        FROM vigil._embed_records(ARRAY(SELECT t.title FROM todo t ORDER BY t.ord),
                                  ARRAY(SELECT t.content FROM todo t ORDER BY t.ord))
             WITH ORDINALITY AS v (embedding, opening, ord)
    )
    UPDATE vector_records r SET opening = v.opening
    FROM todo t JOIN vectors v USING (ord)
    WHERE r.id = t.id;
    GET DIAGNOSTICS filled = ROW_COUNT;
    RETURN filled;
END
$$;

-- 22023 naming `field` unless 1 <= k <= 1000.
CREATE FUNCTION vigil._check_limit(k integer, field text DEFAULT 'limit') RETURNS integer
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF k IS NULL OR k NOT BETWEEN 1 AND 1000 THEN
        PERFORM vigil._refuse(field, format('%s must be 1 to 1000, not %s', field, coalesce(k::text, 'null')));
    END IF;
    RETURN k;
END
$$;

-- 22023 naming the field unless a search has a query of words, at most
-- 1,000 characters (the sidecar's MAX_QUERY_CHARS), and 1 <= k <= 1000.
CREATE FUNCTION vigil._check_search(query text, k integer) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF query IS NULL THEN
        PERFORM vigil._refuse('query', 'query is required');
    ELSIF vigil._blank(query) THEN
        PERFORM vigil._refuse('query', 'query is blank: give words to search for');
    ELSIF pg_catalog.char_length(query) > 1000 THEN
        PERFORM vigil._refuse('query', pg_catalog.format(
            'query is %s characters; at most 1000 are searched for', pg_catalog.char_length(query)));
    END IF;
    PERFORM vigil._check_limit(k);
END
$$;

-- Records of the database in the order they were stored, `lim` of them
-- from position `start` (0 is the first), with their embeddings.
CREATE FUNCTION vigil.list_records(start bigint DEFAULT 0, lim integer DEFAULT 10, db text DEFAULT NULL)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, embedding real[])
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
BEGIN
    PERFORM vigil._check_limit(lim);
    IF start IS NULL OR start < 0 THEN
        PERFORM vigil._refuse('start', format('start must be 0 or more, not %s', coalesce(start::text, 'null')));
    END IF;
    RETURN QUERY
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, r.embedding
    FROM vector_records r WHERE r.account = acct AND r.db = db_id
    ORDER BY r.id OFFSET start LIMIT lim;
END
$$;

-- Deletes record `id` of the database and returns it; P0002 naming `id` when
-- the database has no such record.
CREATE FUNCTION vigil.delete_record(id bigint, db text DEFAULT NULL)
RETURNS SETOF vigil.vector_record
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
BEGIN
    RETURN QUERY
    DELETE FROM vector_records r
    WHERE r.account = acct AND r.db = db_id AND r.id = delete_record.id
    RETURNING r.id, r.title, r.content, r.metadata, r.created_at;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no record % in database %', delete_record.id, coalesce(db, current_setting('vigil.db', true))
            USING ERRCODE = 'no_data_found', COLUMN = 'id';
    END IF;
END
$$;

-- The `k` records of database `db_id` nearest to `query_vector`, with
-- their cosine similarity, or with `openings` the better of it and their
-- opening's (hybrid search's vector branch): read from the row the search
-- fetches anyway, where a join back to the table for the opening cost 0.45
-- of the 3.5 ms a hybrid search takes at 100,000 records with 4 clients on
-- 2 cores (docs/performance.md). From the database's own graph in the
-- partitioned index (`db = db_id` picks it), whose beam is
-- vigil._search_ef(k, records) wide; a database too small for a graph to pay is
-- scanned exactly instead (a function call the index cannot serve, instead
-- of the operator).
--
-- Plans: the exact path is planned on each call (EXECUTE), for its
-- database's size. The graph path's statement is planned once per
-- connection (a generic plan: 12 to 15% more hybrid searches a second than
-- planning every call, docs/performance.md), and only the graph can serve
-- it: with sorts and sequential scans off while it is planned the index is
-- the one plan left. Otherwise a plan made while the table was small could
-- sort the whole database on every call once it is large. JIT is off:
-- sorting switched off costs the exact path's sort a disable_cost, which
-- passes jit_above_cost, and compiling the statement took 75 to 290 ms of
-- a search that runs in 1 (a database of 1,000 records answered 39
-- searches a second over HTTP).
-- The beam of a search for `k` records in a database of `records`: wide
-- enough for recall@10 of 0.99 against an exact search, with a margin, in
-- graphs built with a beam of 128 (make bench-vectordb-recall,
-- docs/performance.md, 200 held-out queries: 80 reaches 0.9945 at 50,000
-- records; 120 reaches 0.994 at 100,000 among 100 other databases; 200
-- reaches 0.9935 at 1,000,000, 400 0.9945), or `k` when larger; at most
-- 1,000 (the scan goes on past it, vigil.hnsw_iterative_scan, for a hybrid
-- search's 2,000). Each step up costs every search of such a database: at
-- 100,000 records 120 takes 0.5 ms where 400 takes 1.5.
CREATE FUNCTION vigil._search_ef(k integer, records bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT least(greatest(k, CASE WHEN records <= 50000 THEN 80
                                  WHEN records <= 200000 THEN 120
                                  WHEN records <= 1000000 THEN 200
                                  ELSE 400 END), 1000)
$$;

CREATE FUNCTION vigil._nearest(db_id bigint, query_vector real[], k integer, openings boolean DEFAULT false)
RETURNS TABLE (id bigint, similarity real)
LANGUAGE plpgsql VOLATILE -- it SETs the beam (a statement no STABLE function may run)
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
SET enable_sort = off SET enable_seqscan = off SET jit = off
SET citus.propagate_set_commands = 'local'
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    in_db bigint;
BEGIN
    SELECT d.records INTO in_db FROM vector_databases d WHERE d.account = acct AND d.id = db_id;
    IF NOT FOUND THEN
        -- Called directly with an id the caller cannot see (the searches
        -- look the database up by name first).
        PERFORM vigil._no_database(format('#%s', db_id));
    END IF;
    IF k IS NULL OR k NOT BETWEEN 1 AND 2000 THEN
        PERFORM vigil._refuse('k', format('k must be 1 to 2000, not %s', coalesce(k::text, 'null')));
    END IF;
    IF cardinality(query_vector) IS DISTINCT FROM 384 THEN
        PERFORM vigil._refuse('query_vector', 'query_vector must be 384 numbers');
    END IF;
    IF in_db <= 2000 THEN
        RETURN QUERY EXECUTE
            'SELECT r.id, greatest(1 - vigil.cosine_distance(r.embedding, $2),
                                  CASE WHEN $4 THEN 1 - vigil.cosine_distance(r.opening, $2) END)::real
             FROM vigil.vector_records r WHERE r.account = $5 AND r.db = $1
             ORDER BY vigil.cosine_distance(r.embedding, $2), r.id
             LIMIT $3'
            USING db_id, query_vector, k, openings, acct;
    ELSE
        -- A statement, not set_config: on a cluster, Citus passes SET LOCAL
        -- on to the worker that runs the search (in a transaction block,
        -- as the sidecar's are).
        EXECUTE format('SET LOCAL vigil.hnsw_ef_search = %s', vigil._search_ef(k, in_db));
        RETURN QUERY
        SELECT r.id, greatest(1 - (r.embedding <=> query_vector),
                              CASE WHEN openings THEN 1 - vigil.cosine_distance(r.opening, query_vector) END)::real
        FROM vector_records r WHERE r.account = acct AND r.db = db_id
        ORDER BY r.embedding <=> query_vector
        LIMIT k;
    END IF;
END
$$;

-- The `k` records of database `db_id` ranked highest by BM25 for `query`,
-- any of its terms matching, ties by id: exact, from vector_terms and the
-- blocks of vector_postings alone (vigil_search::postings::top_k, MaxScore
-- with block-max bounds). Terms go rarest first, the order scores are summed
-- in. The terms' record counts and blocks are read by vigil._bm25_search_kept,
-- which keeps them in the backend for the next search of the same version of
-- the database (the row version of its counts, which every write of its
-- postings replaces): a common word's blocks are a few hundred rows, read
-- once, not every search, and a search of words the backend knows reads no
-- table but the database's row.
--
-- SECURITY DEFINER, checking itself that `db_id` is a database of the
-- current account: row-level security on vector_postings would make every
-- block read check its database again, and the caller's database is all
-- this reads. Postings carry their database, whose account the check
-- confines the read to.
CREATE FUNCTION vigil._keyword_ranked(db_id bigint, query text, k integer)
RETURNS TABLE (id bigint, score real)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    n bigint;
    average real;
    version_xmin bigint;
    version_ctid tid;
BEGIN
    SELECT d.records, d.total_length::real / greatest(d.records, 1), d.xmin::text::bigint, d.ctid
    INTO n, average, version_xmin, version_ctid
    FROM vector_databases d WHERE d.account = acct AND d.id = db_id;
    IF NOT FOUND THEN
        PERFORM vigil._no_database(format('#%s', db_id));
    END IF;
    RETURN QUERY SELECT * FROM vigil._bm25_search_kept(db_id, acct, version_xmin,
        version_ctid, tsvector_to_array(vigil.search_terms(query)), n, average, k);
END
$$;

-- The terms a backend keeps are those of the accounts whose searches read
-- them, and pooled connections change accounts: only _keyword_ranked,
-- running as the owner after its account check, reads them.
REVOKE EXECUTE ON FUNCTION vigil._bm25_search_kept(bigint, text, bigint, tid, text[], bigint, real, integer) FROM PUBLIC;

-- A tsquery matching any of `lexemes`, taken as they are (not stemmed again).
CREATE FUNCTION vigil._any_term(lexemes text[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | ')::tsquery
    FROM unnest(lexemes) AS l
$$;

-- `query`'s embedding: `given` when the caller has it already (the sidecar
-- keeps the embeddings of queries it has seen, so a query that comes again
-- runs no model), else computed now.
CREATE FUNCTION vigil._query_vector(query text, given real[]) RETURNS real[]
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF given IS NULL THEN
        RETURN vigil.embed(query);
    END IF;
    IF cardinality(given) <> 384 OR array_position(given, NULL) IS NOT NULL THEN
        PERFORM vigil._refuse('query_vector', 'query_vector must be 384 numbers, the embedding of query');
    END IF;
    RETURN given;
END
$$;

-- The three searches run with generic plans (plan_cache_mode, which the
-- functions they call inherit): each statement is planned once per
-- connection, not on every call, where custom plans had a fifth of a hybrid
-- search's time in SQL going to the planner. Their plans do not depend on
-- the values (ids, terms, a database's own statistics), except in
-- _nearest's exact path, which plans for its database each call: a generic
-- plan guesses a database's share of all records, and guessed a small
-- database large enough to scan every record (57 searches/s where custom
-- plans answer 1,500). Its graph path has one plan whatever the database.

-- The records most similar in meaning to `query`, with cosine `similarity`.
-- `query_vector`, when given, is taken as the query's embedding.
CREATE FUNCTION vigil.query_embeddings(query text, db text DEFAULT NULL, k integer DEFAULT 10,
                                       query_vector real[] DEFAULT NULL)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, similarity real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
    ids bigint[];
    similarities real[];
BEGIN
    PERFORM vigil._check_search(query, k);
    -- The nearest first, then their rows: on a cluster a statement that
    -- reads the records must not call a function that reads them too.
    SELECT array_agg(x.id), array_agg(x.similarity) INTO ids, similarities
    FROM vigil._nearest(db_id, vigil._query_vector(query, query_vector), k) x;
    RETURN QUERY
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, x.similarity
    FROM unnest(ids, similarities) AS x (id, similarity)
    JOIN vector_records r ON r.id = x.id
    WHERE r.account = acct
    ORDER BY x.similarity DESC, r.id;
END
$$;

-- The records ranked highest by BM25 for `query` (any of its words), with `score`.
CREATE FUNCTION vigil.keyword_search(query text, k integer DEFAULT 10, db text DEFAULT NULL)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, score real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
    ids bigint[];
    scores real[];
BEGIN
    PERFORM vigil._check_search(query, k);
    SELECT array_agg(x.id), array_agg(x.score) INTO ids, scores
    FROM vigil._keyword_ranked(db_id, query, k) x;
    RETURN QUERY
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, x.score
    FROM unnest(ids, scores) AS x (id, score) JOIN vector_records r ON r.id = x.id
    WHERE r.account = acct
    ORDER BY x.score DESC, r.id;
END
$$;

-- Keyword (BM25) and vector search fused, best first, ties by id.
-- The vector branch reads each record by its whole text and by its opening
-- (its content's first sentence, vector_records.opening), the better of the
-- two similarities counting: the database's graph gives the 100 (or more)
-- nearest by whole text, and the best of them re-scored so are the branch.
-- fusion 'convex' (the default): the weighted mean of each branch's scores
--   scaled to 0..1 within the branch (min-max; absent from a branch counts
--   0), records holding an identifier of the query (an exact token with a
--   digit or a joiner other than "-": a part number, an e-mail address)
--   adding the keyword weight again, so an identifier wins over meaning;
-- fusion 'rrf': Reciprocal Rank Fusion, each branch adding
--   weight / (60 + rank), the identifier records a third branch at the
--   keyword weight.
-- Each branch fetches more than `k` (2k, at least 30), so a record ranked
-- well by both but first by neither is still seen. `query_vector`, when given,
-- is taken as the query's embedding. vigil._fuse (vigil_search::fusion)
-- fuses the branches' rankings, where a join of the two in SQL, with its
-- window functions and sorts, took a fifth of a search (README).
CREATE FUNCTION vigil.hybrid_search(
    query text,
    k integer,
    db text DEFAULT NULL,
    fusion text DEFAULT 'convex',
    vector_weight real DEFAULT 1,
    keyword_weight real DEFAULT 1,
    query_vector real[] DEFAULT NULL
)
RETURNS TABLE (id bigint, title text, content text, metadata jsonb, created_at timestamptz, score real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, vigil SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    acct text := vigil.current_account();
    db_id bigint := vigil._database(db);
    fetched integer;
    qv real[];
    identifiers text[];
    vector_ids bigint[];
    similarities real[];
    keyword_ids bigint[];
    scores real[];
    identified bigint[];
BEGIN
    PERFORM vigil._check_search(query, k);
    IF fusion IS NULL OR fusion NOT IN ('rrf', 'convex') THEN
        PERFORM vigil._refuse('fusion', 'fusion must be ''rrf'' or ''convex''');
    END IF;
    -- Named as the request names them (vectorWeight, keywordWeight).
    IF vector_weight IS NULL OR vector_weight < 0 THEN
        PERFORM vigil._refuse('vectorWeight', format('vectorWeight must be 0 or more, not %s',
                                                     coalesce(vector_weight::text, 'null')));
    ELSIF keyword_weight IS NULL OR keyword_weight < 0 THEN
        PERFORM vigil._refuse('keywordWeight', format('keywordWeight must be 0 or more, not %s',
                                                      coalesce(keyword_weight::text, 'null')));
    ELSIF vector_weight + keyword_weight = 0 THEN
        PERFORM vigil._refuse('vectorWeight',
            'vectorWeight and keywordWeight are both 0: at least one must be above 0');
    END IF;
    fetched := least(greatest(2 * k, 30), 2000);
    qv := vigil._query_vector(query, query_vector);
    SELECT array_agg(v.id), array_agg(v.similarity) INTO vector_ids, similarities
    FROM (SELECT n.id, n.similarity FROM vigil._nearest(db_id, qv, greatest(fetched, 100), true) n
          ORDER BY 2 DESC, 1 LIMIT fetched) v;
    SELECT array_agg(w.id), array_agg(w.score) INTO keyword_ids, scores
    FROM vigil._keyword_ranked(db_id, query, fetched) w;
    -- identifiers: with a digit or a joiner other than "-" (not "open-source")
    identifiers := ARRAY(SELECT t FROM unnest(vigil.exact_tokens(query)) AS t WHERE t ~ '[0-9@_/:#+.]');
    IF cardinality(identifiers) > 0 AND keyword_ids IS NOT NULL THEN
        SELECT array_agg(r.id) INTO identified
        FROM vector_records r
        WHERE r.account = acct AND r.id = ANY (keyword_ids) AND r.terms @@ vigil._any_term(identifiers);
    END IF;
    RETURN QUERY
    SELECT r.id, r.title, r.content, r.metadata, r.created_at, f.score::real
    FROM vigil._fuse(vector_ids, similarities, keyword_ids, scores, identified, k, fusion,
                     vector_weight, keyword_weight) f
    JOIN vector_records r ON r.id = f.id
    WHERE r.account = acct
    ORDER BY f.score DESC, r.id;
END
$$;
