#!/usr/bin/env bash
# A/B of two or more builds of vigil.so on the bench-vectordb cluster over
# HTTP: each round installs each .so in turn into PostgreSQL's lib directory,
# rebuilds the vector database's index with it (REINDEX, so a build that
# lays the index out differently is measured on its own layout) and runs
# `BENCH_REUSE=1 bench/vectordb/bench.sh`, printing its RESULT lines for
# the 100,000-record database. Needs a finished `make bench-vectordb` (its
# stored records). Save each build first, for example
#   . scripts/lib.sh && install_extension && cp "$("$PG_CONFIG" --pkglibdir)/vigil.so" /tmp/b.so
# then: bench/vectordb/ab.sh /tmp/a.so /tmp/b.so
# AB_ROUNDS (2) rounds alternate the builds, in the order named in odd rounds
# and the other way round in even ones (the second of two runs in a row
# tends to be faster on this machine). The last .so named stays installed,
# with the index as it built it.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
[ $# -ge 1 ] || die "usage: bench/vectordb/ab.sh A.so B.so ..."
dir="$VIGIL_STATE/bench-vectordb"
[ -d "$dir" ] || die "no $dir: run make bench-vectordb first"
lib="$("$PG_CONFIG" --pkglibdir)"
port="${BENCH_PG_PORT:-28818}"
builds=("$@")
for so in "${builds[@]}"; do [ -f "$so" ] || die "no $so"; done

for round in $(seq 1 "${AB_ROUNDS:-2}"); do
    order=("${builds[@]}")
    if [ $((round % 2)) -eq 0 ]; then
        order=()
        for ((i = ${#builds[@]} - 1; i >= 0; i--)); do order+=("${builds[$i]}"); done
    fi
    for so in "${order[@]}"; do
        step "round $round: $so"
        install -m 0755 "$so" "$lib/vigil.so"
        "$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port" > /dev/null
        "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$dir" -X -q -At -c \
            "SET maintenance_work_mem = '1GB'; REINDEX INDEX vigil.vector_records_embedding" \
            -c "SELECT 'index: ' || (vigil.hnsw_check('vigil.vector_records_embedding')->>'vectors')"
        "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"
        BENCH_REUSE=1 "$VIGIL_ROOT/bench/vectordb/bench.sh" 2>&1 \
            | grep '^RESULT /.* over 100000 records' | sed "s|^|$(basename "$so") |"
    done
done
