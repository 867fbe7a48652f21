#!/usr/bin/env bash
# `make bench-risk-quality`: how well the risk engine separates fraud, and
# whether feedback helps, on four months of simulated e-commerce traffic in
# five worlds (crates/risk-sim; the shop's parameters in params.rs, the
# worlds in scenario.rs, apart from the scorer's).
#
# Each world is replayed twice: without feedback, and with feedback as a shop
# sends it (each reported fraud's chargeback its world's delay after the
# purchase, vigil.risk_refit once a simulated week with unlabelled purchases
# older than 60 days counted as legitimate).
#
# 1. In process (the engine over an in-memory history, the extension's
#    feedback rules), with the tables per pattern (--detail).
# 2. Through the extension, on a cluster of its own (.vigil/bench-risk-quality,
#    port 28822): every purchase by SELECT vigil.risk_score(...) in time order,
#    chargebacks by vigil.transaction_feedback, refits by vigil.risk_refit.
#
# Figures are on days 30-120, after the first labels. BENCH_SEED (default 1)
# picks another simulated world; BENCH_WORLD one world (default all).
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

seed="${BENCH_SEED:-1}"
port="${BENCH_PG_PORT:-28822}"
dir="$VIGIL_STATE/bench-risk-quality"
geoip="$("$PG_CONFIG" --sharedir)/vigil/geoip/geo-whois-asn-country.mmdb"
[ -r "$geoip" ] || die "no IP-to-country database at $geoip (make setup installs it)"

step "building the simulator"
cargo build --locked --release -q -p vigil-risk-sim
sim="$VIGIL_ROOT/target/release/vigil-risk-sim"

step "in process"
"$sim" --geoip "$geoip" --seed "$seed" --world "${BENCH_WORLD:-all}" --in-process --detail

"$VIGIL_ROOT/scripts/pg-cluster.sh" remove "$dir" >/dev/null 2>&1 || true
"$VIGIL_ROOT/scripts/pg-cluster.sh" up "$dir" "$port" >/dev/null
trap '"$VIGIL_ROOT/scripts/pg-cluster.sh" down "$dir"' EXIT
step "through the extension (cluster $dir)"
# The superuser over the socket: the replay empties vigil.transactions first.
as_pg "$sim" --geoip "$geoip" --seed "$seed" \
    --world "${BENCH_WORLD:-all}" --db "host=$(realpath "$dir")/run port=$port user=$(is_root && echo postgres || id -un) dbname=vigil"
