-- 0.13.0 -> 0.14.0: the vector database's graphs built with a beam of 128
-- (ef_construction; 64 before, the access method's default), and searched
-- with the narrower beams such graphs need for recall@10 0.99 against an
-- exact search (vigil._search_ef). Every record stays; the index is
-- rebuilt from them (REINDEX: a few seconds per 100,000 records, the table
-- locked against writes meanwhile).
--
-- A distributed installation (vigil.distribute()) holds its records in
-- Citus's shards, no longer the extension's: rebuild them from the
-- coordinator afterwards (docs/scaling-out.md, Limits: "Upgrades").

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_depend WHERE classid = 'pg_class'::regclass
               AND objid = to_regclass('vigil.vector_records') AND deptype = 'e') THEN
        ALTER INDEX vigil.vector_records_embedding SET (ef_construction = 128);
        REINDEX INDEX vigil.vector_records_embedding;
    ELSIF to_regclass('vigil.vector_records') IS NOT NULL THEN
        RAISE NOTICE 'vigil 0.14.0 searches graphs built with ef_construction 128: run on the coordinator '
                     '"ALTER INDEX vigil.vector_records_embedding SET (ef_construction = 128); '
                     'REINDEX INDEX vigil.vector_records_embedding;"';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION vigil._search_ef(k integer, records bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT least(greatest(k, CASE WHEN records <= 50000 THEN 80
                                  WHEN records <= 200000 THEN 120
                                  WHEN records <= 1000000 THEN 200
                                  ELSE 400 END), 1000)
$$;
