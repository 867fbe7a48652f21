#!/usr/bin/env bash
# The SQL the benches that time searches' SQL pipe into psql or pgbench:
#
#   sql.sh queries                      makes public.bench_queries: the 300
#                                       labelled queries (queries.tsv) with
#                                       their embeddings, so a timed search
#                                       runs no model
#   sql.sh search ACCOUNT KEY N EXPR    a pgbench script of one search as the
#                                       sidecar sends it: BEGIN,
#                                       vigil.enter_account, EXPR (a search
#                                       of b.q with the embedding b.v given)
#                                       on a random one of the N queries, COMMIT
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
case "${1:-}" in
    queries)
        cat <<SQL
DROP TABLE IF EXISTS public.bench_queries;
CREATE TABLE public.bench_queries AS
SELECT row_number() OVER () AS i, q, vigil.embed(q) AS v
FROM (SELECT split_part(line, E'\t', 2) AS q
      FROM unnest(string_to_array(\$tsv\$$(tail -n +2 "$root/bench/vectordb/queries.tsv")\$tsv\$, E'\n')) AS line) x
WHERE q <> '';
GRANT SELECT ON public.bench_queries TO vigil_app;
SQL
        ;;
    search)
        [ $# -eq 5 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
        cat <<SQL
\set i random(1, $4)
BEGIN;
SELECT key_id, outcome FROM vigil.enter_account('$2', '$3', 'bench');
SELECT count(*) FROM public.bench_queries b, LATERAL $5 WHERE b.i = :i;
COMMIT;
SQL
        ;;
    *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
