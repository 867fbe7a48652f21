#!/usr/bin/env bash
# `make bench-risk-quality`: how well the risk engine separates fraud, on four
# months of simulated e-commerce traffic (crates/risk-sim; its parameters are
# in crates/risk-sim/src/params.rs, apart from the scorer's).
#
# 1. In process (the engine over an in-memory history): rules alone, and rules
#    plus a model fitted on the first month's labels.
# 2. Through the extension, on a cluster of its own (.vigil/bench-risk-quality,
#    port 28822): every purchase by SELECT vigil.risk_score(...) in time order,
#    then again with the first month's fraud reported as chargebacks and
#    vigil.risk_refit() run before the later months.
#
# Figures are on days 30-120, which no fitting sees. BENCH_SEED (default 1)
# picks another simulated world.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

seed="${BENCH_SEED:-1}"
port="${BENCH_PG_PORT:-28822}"
dir="$VIGIL_STATE/bench-risk-quality"
geoip="$("$PG_CONFIG" --sharedir)/vigil/geoip/geo-whois-asn-country.mmdb"
[ -r "$geoip" ] || die "no IP-to-country database at $geoip (make setup installs it)"

step "building the simulator"
cargo build --locked --release -q -p vigil-risk-sim
sim="$VIGIL_ROOT/target/release/vigil-risk-sim"

step "in process"
"$sim" --geoip "$geoip" --seed "$seed" --in-process

"$VIGIL_ROOT/scripts/pg-cluster.sh" remove "$dir" >/dev/null 2>&1 || true
"$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port" >/dev/null
trap '"$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT
step "through the extension (cluster $dir)"
# The superuser over the socket: the replay empties vigil.transactions first.
as_pg "$sim" --geoip "$geoip" --seed "$seed" \
    --db "host=$(realpath "$dir")/run port=$port user=$(is_root && echo postgres || id -un) dbname=vigil"
