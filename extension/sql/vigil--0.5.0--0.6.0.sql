-- vigil 0.5.0 -> 0.6.0: recording an assessment is cheaper.
--
-- Recorded transactions' jsonb columns are compressed with lz4 rather than
-- pglz where the server has lz4 (pglz was 6% of an assessment in a profile;
-- see risk/schema.sql). Rows already stored keep their compression until
-- they are rewritten; every row stays readable either way.
DO $$
BEGIN
    ALTER TABLE vigil.transactions ALTER COLUMN request SET COMPRESSION lz4,
                                   ALTER COLUMN features SET COMPRESSION lz4,
                                   ALTER COLUMN reasons SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'vigil: this server has no lz4; vigil.transactions keeps pglz compression';
END
$$;
