-- The stored records, their TOAST, the keyword index and every index read
-- into shared buffers, so the first searches do not time the disk (or the
-- OS cache). Used by bench/vectordb/bench.sh and bench/vectordb/pgbench.sh.
CREATE EXTENSION IF NOT EXISTS pg_prewarm;
SELECT count(pg_prewarm(c.oid)) FROM pg_class c
WHERE c.oid IN ('vigil.vector_records'::regclass, 'vigil.vector_postings'::regclass, 'vigil.vector_terms'::regclass)
   OR c.oid IN (SELECT reltoastrelid FROM pg_class WHERE oid = 'vigil.vector_records'::regclass)
   OR c.oid IN (SELECT indexrelid FROM pg_index
                WHERE indrelid IN ('vigil.vector_records'::regclass, 'vigil.vector_postings'::regclass,
                                   'vigil.vector_terms'::regclass));
