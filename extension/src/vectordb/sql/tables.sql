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
