#!/usr/bin/env bash
# `make run`: start (or reuse) the local cluster, write and print the credentials,
# then serve the sidecar in the foreground until Ctrl-C. Expects `make build` done.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port="${VIGIL_PG_PORT:-28815}"
http_addr="${VIGIL_HTTP_ADDR:-127.0.0.1:8080}"
# Browsers on this origin may call the API (a local front end); set it empty for none.
export VIGIL_CORS_ORIGINS="${VIGIL_CORS_ORIGINS-http://localhost:3000}"
creds="$VIGIL_STATE/credentials.env"

cluster="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$VIGIL_STATE/pg" "$port")"
database_url="$(sed -n 's/^DATABASE_URL=//p' <<<"$cluster")"
export VIGIL_ADMIN_DATABASE_URL="$(sed -n 's/^ADMIN_DATABASE_URL=//p' <<<"$cluster")"
demo_credentials "make run" "$creds" "$http_addr" "$database_url" \
    "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$VIGIL_STATE/pg"
cat <<HELP

  psql:     scripts/pg-cluster.sh psql .vigil/pg      (superuser)
            psql "\$DATABASE_URL"                      (as the application role)
  try:      set -a; . .vigil/credentials.env; set +a
            curl -s -H "x-api-key: \$VIGIL_API_KEY" http://$http_addr/api/key
            target/release/vigil-sidecar keys list
  stop:     Ctrl-C stops the sidecar; \`make stop\` stops it and the database.

HELP
# The URL holds the role's password: in the environment (which only this user
# and root can read, /proc/PID/environ), never on the command line, which `ps`
# shows every user.
record_sidecar "$VIGIL_STATE/pg"   # `make stop` stops it (exec keeps this pid)
DATABASE_URL="$database_url" exec "$VIGIL_ROOT/target/release/vigil-sidecar" serve --listen "$http_addr"
