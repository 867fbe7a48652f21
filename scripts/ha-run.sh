#!/usr/bin/env bash
# `make run-ha`: `make run` with a highly available database. Installs Patroni and
# etcd when missing (scripts/setup-ha.sh), starts (or reuses) one etcd member and
# three PostgreSQL nodes under Patroni in .vigil/ha (scripts/ha-cluster.sh), writes
# and prints the same credentials as `make run` (to .vigil/credentials-ha.env),
# then serves the sidecar in front of all three nodes in the foreground until
# Ctrl-C. Beside `make run`: its own ports (PostgreSQL 28850-28852, Patroni's REST
# API 28860-28862, etcd 28870-28871, HTTP 127.0.0.1:8081). Expects `make build` done.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$VIGIL_ROOT/scripts/setup-ha.sh"
http_addr="${VIGIL_HA_HTTP_ADDR:-127.0.0.1:8081}"
# Browsers on this origin may call the API (a local front end); set it empty for none.
export VIGIL_CORS_ORIGINS="${VIGIL_CORS_ORIGINS-http://localhost:3000}"
dir="$VIGIL_STATE/ha"
creds="$VIGIL_STATE/credentials-ha.env"

cluster="$("$VIGIL_ROOT/scripts/ha-cluster.sh" up "$dir")"
database_url="$(sed -n 's/^DATABASE_URL=//p' <<<"$cluster")"
# Searches and record listings from the standbys (docs/high-availability.md,
# "Reads from replicas"); set VIGIL_READ_DATABASE_URL empty to keep them on the primary.
read_url="${VIGIL_READ_DATABASE_URL-$(sed -n 's/^READ_DATABASE_URL=//p' <<<"$cluster")}"
export VIGIL_ADMIN_DATABASE_URL="$(sed -n 's/^ADMIN_DATABASE_URL=//p' <<<"$cluster")"
demo_credentials "make run-ha" "$creds" "$http_addr" "$database_url" \
    "$VIGIL_ROOT/scripts/ha-cluster.sh" psql "$dir"
"$VIGIL_ROOT/scripts/ha-cluster.sh" list "$dir"
cat <<HELP

  nodes:    scripts/ha-cluster.sh list .vigil/ha     (patronictl list: leader, sync standby, lag)
  psql:     scripts/ha-cluster.sh psql .vigil/ha     (superuser, on the leader)
            psql "\$DATABASE_URL"                     (as the application role, on the primary)
  try:      set -a; . .vigil/credentials-ha.env; set +a
            curl -s -H "x-api-key: \$VIGIL_API_KEY" http://$http_addr/api/key
  reads:    searches and listings are served by the standbys (VIGIL_READ_DATABASE_URL;
            metric vigil_db_reads_total says which server answered)
  failover: kill -9 \$(head -1 "\$(scripts/ha-cluster.sh leader .vigil/ha)/data/postmaster.pid")
            (a replica is promoted within seconds; the sidecar follows it)
  stop:     Ctrl-C stops the sidecar; \`make stop-ha\` stops it, the nodes and etcd.

HELP
# The URL holds the role's password: in the environment, never on the command line.
if [ -n "$read_url" ]; then export VIGIL_READ_DATABASE_URL="$read_url"; else unset VIGIL_READ_DATABASE_URL; fi
record_sidecar "$dir"   # `make stop-ha` stops it (exec keeps this pid)
DATABASE_URL="$database_url" exec "$VIGIL_ROOT/target/release/vigil-sidecar" serve --listen "$http_addr"
