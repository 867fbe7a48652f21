-- vigil_hnsw: distance operators on real[] and the HNSW index access method.
-- The functions are C functions of this module (src/hnsw/ops.rs, mod.rs).

-- Exact distances; these also back the operators when no index is used. COST
-- reflects a few hundred multiply-adds, so the planner weighs a sequential scan
-- that computes one per row against the index's few hundred per query.
CREATE FUNCTION vigil.l2_distance(real[], real[]) RETURNS float8
    AS 'MODULE_PATHNAME', 'vigil_l2_distance' LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 10;
CREATE FUNCTION vigil.cosine_distance(real[], real[]) RETURNS float8
    AS 'MODULE_PATHNAME', 'vigil_cosine_distance' LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 10;
CREATE FUNCTION vigil.negative_inner_product(real[], real[]) RETURNS float8
    AS 'MODULE_PATHNAME', 'vigil_negative_inner_product' LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 10;
CREATE FUNCTION vigil.inner_product(real[], real[]) RETURNS float8
    AS 'MODULE_PATHNAME', 'vigil_inner_product' LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 10;

COMMENT ON FUNCTION vigil.l2_distance(real[], real[]) IS 'Euclidean distance; the <-> operator';
COMMENT ON FUNCTION vigil.cosine_distance(real[], real[]) IS '1 - cosine similarity; the <=> operator';
COMMENT ON FUNCTION vigil.negative_inner_product(real[], real[]) IS '-(a . b); the <#> operator';

CREATE OPERATOR vigil.<-> (
    LEFTARG = real[], RIGHTARG = real[], FUNCTION = vigil.l2_distance,
    COMMUTATOR = OPERATOR(vigil.<->)
);
CREATE OPERATOR vigil.<=> (
    LEFTARG = real[], RIGHTARG = real[], FUNCTION = vigil.cosine_distance,
    COMMUTATOR = OPERATOR(vigil.<=>)
);
CREATE OPERATOR vigil.<#> (
    LEFTARG = real[], RIGHTARG = real[], FUNCTION = vigil.negative_inner_product,
    COMMUTATOR = OPERATOR(vigil.<#>)
);

CREATE FUNCTION vigil.vigil_hnsw_handler(internal) RETURNS index_am_handler
    AS 'MODULE_PATHNAME', 'vigil_hnsw_handler' LANGUAGE c;
CREATE ACCESS METHOD vigil_hnsw TYPE INDEX HANDLER vigil.vigil_hnsw_handler;
COMMENT ON ACCESS METHOD vigil_hnsw IS 'HNSW approximate nearest-neighbour index over real[]';

-- Support function 1 names the metric the index is built with.
CREATE OPERATOR CLASS vigil.cosine_ops DEFAULT FOR TYPE real[] USING vigil_hnsw AS
    OPERATOR 1 vigil.<=> (real[], real[]) FOR ORDER BY pg_catalog.float_ops,
    FUNCTION 1 vigil.cosine_distance(real[], real[]);
CREATE OPERATOR CLASS vigil.l2_ops FOR TYPE real[] USING vigil_hnsw AS
    OPERATOR 1 vigil.<-> (real[], real[]) FOR ORDER BY pg_catalog.float_ops,
    FUNCTION 1 vigil.l2_distance(real[], real[]);
CREATE OPERATOR CLASS vigil.ip_ops FOR TYPE real[] USING vigil_hnsw AS
    OPERATOR 1 vigil.<#> (real[], real[]) FOR ORDER BY pg_catalog.float_ops,
    FUNCTION 1 vigil.negative_inner_product(real[], real[]);
-- The key of a partitioned index, `USING vigil_hnsw (key, vector)`: one graph
-- per key value, which a scan for `key = $1` walks alone (src/hnsw/directory.rs).
CREATE OPERATOR CLASS vigil.int8_ops DEFAULT FOR TYPE bigint USING vigil_hnsw AS
    OPERATOR 1 pg_catalog.= (bigint, bigint),
    OPERATOR 1 pg_catalog.= (bigint, integer),
    OPERATOR 1 pg_catalog.= (bigint, smallint);
