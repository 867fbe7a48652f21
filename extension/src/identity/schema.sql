-- Identity checks: every assessment of an identity-document image.
--
-- vigil.assess_id (Rust, SECURITY DEFINER) looks the image's perceptual hash up
-- here and records the assessment in the same transaction; the application
-- role reaches this table only through that function. The image itself is kept
-- only when vigil.identity_keep_images is on.

CREATE TABLE vigil.identity_assessments (
    id          uuid PRIMARY KEY,
    -- The clock, not the transaction's start: "the earliest assessment of this
    -- picture" must hold for several assessments in one transaction too.
    assessed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- The API key that asked (vigil.api_keys.id); not a foreign key, as for transactions.
    api_key_id  bigint,
    sha256      bytea NOT NULL CHECK (length(sha256) = 32),
    -- 256-bit DCT perceptual hash of the document (or the frame).
    phash       bytea NOT NULL CHECK (length(phash) = 32),
    -- Its sixteen 16-bit bands as (band << 16 | value): multi-index hashing,
    -- so "which earlier images share a band" is one GIN lookup of 16 keys.
    phash_bands integer[] GENERATED ALWAYS AS (vigil._phash_bands(phash)) STORED,
    result      vigil.risk_result_value NOT NULL,
    level       vigil.risk_level_value NOT NULL,
    score       vigil.risk_score_value NOT NULL,
    confidence  vigil.risk_confidence_value NOT NULL,
    decision    text NOT NULL CHECK (decision IN ('accept', 'review', 'resubmit', 'decline')),
    reasons     text[] NOT NULL,            -- reason codes, in the answer's order
    format      text NOT NULL,
    width       integer NOT NULL,
    height      integer NOT NULL,
    bytes       integer NOT NULL,
    response    jsonb NOT NULL,             -- the answer as given
    image       bytea,                      -- only with vigil.identity_keep_images
    -- Whose it is (0.17.0): duplicates are looked for among the account's own.
    account     text COLLATE "C" NOT NULL
);
-- fastupdate off: every insert goes straight into the index, so a lookup never
-- scans a pending list (which would grow with the inserts between vacuums).
CREATE INDEX identity_assessments_phash ON vigil.identity_assessments
    USING gin (phash_bands) WITH (fastupdate = off);
CREATE INDEX identity_assessments_sha256 ON vigil.identity_assessments (sha256);
CREATE INDEX identity_assessments_assessed ON vigil.identity_assessments USING brin (assessed_at);
-- JPEG, PNG and WebP are compressed already.
ALTER TABLE vigil.identity_assessments ALTER image SET STORAGE EXTERNAL;
-- In backups (keys/schema.sql says why).
SELECT pg_catalog.pg_extension_config_dump('vigil.identity_assessments', '');
-- An account's assessments, to a role that entered it (risk/schema.sql).
ALTER TABLE vigil.identity_assessments ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_account ON vigil.identity_assessments USING (account = vigil.current_account());

-- The earlier assessment a perceptual hash repeats among those of the same
-- account: the closest within max_distance bits, then the earliest, with how
-- many matched. Per account, so that one account's uploads tell nothing of
-- another's (issues 60 and 61; per API key in 0.15.0 and 0.16.0). Multi-index
-- hashing: the GIN index gives the rows sharing a band key, and only those
-- are compared bit by bit. vigil.assess_id and make bench-identity call it.
-- Everything is schema-qualified and there is no SET clause, so the planner
-- inlines it into the caller's query (and keeps the GIN index).
CREATE FUNCTION vigil._identity_duplicate(hash bytea, max_distance integer, account text)
RETURNS TABLE (id uuid, distance integer, matches bigint)
LANGUAGE sql STABLE
AS $$
    SELECT c.id, c.distance, pg_catalog.count(*) OVER ()
    FROM (SELECT a.id, a.assessed_at, vigil._phash_distance(a.phash, $1) AS distance
          FROM vigil.identity_assessments a
          WHERE a.phash_bands OPERATOR(pg_catalog.&&) vigil._phash_bands($1)
            AND a.account OPERATOR(pg_catalog.=) $3) AS c
    WHERE c.distance <= $2
    ORDER BY c.distance, c.assessed_at, c.id
    LIMIT 1
$$;
-- Identity hashes are the owner's to compare (vigil.assess_id runs as it).
REVOKE EXECUTE ON FUNCTION vigil._identity_duplicate(bytea, integer, text) FROM PUBLIC;
