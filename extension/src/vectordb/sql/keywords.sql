-- The keyword index kept as records change: the tables a trigger writes
-- (vigil._colocated, for Citus) and the triggers themselves.

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
