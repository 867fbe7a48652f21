#!/usr/bin/env bash
# `make run`: start (or reuse) the local cluster, write and print the credentials,
# then serve the sidecar in the foreground until Ctrl-C. Expects `make build` done.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port="${VIGIL_PG_PORT:-28815}"
http_addr="${VIGIL_HTTP_ADDR:-127.0.0.1:8080}"
creds="$VIGIL_STATE/credentials.env"

database_url="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$VIGIL_STATE/pg" "$port" | sed -n 's/^DATABASE_URL=//p')"

# Keep the demo credentials of an earlier run; make them on the first.
old() { [ -f "$creds" ] && sed -n "s/^$1=//p" "$creds" || true; }
random_hex() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
api_key="$(old VIGIL_API_KEY)"; api_key="${api_key:-vk_$(random_hex)}"
user_key="$(old VIGIL_USER_KEY)"; user_key="${user_key:-vu_$(random_hex)}"

umask 077
cat > "$creds" <<CREDS
# Written by \`make run\`. Source it: set -a; . .vigil/credentials.env; set +a
# BOOTSTRAP: VIGIL_API_KEY and VIGIL_USER_KEY are demo values that the sidecar
# does not check yet; the accounts-and-keys work replaces them with real keys.
DATABASE_URL=$database_url
VIGIL_HTTP=http://$http_addr
VIGIL_API_KEY=$api_key
VIGIL_USER_KEY=$user_key
VIGIL_ACCOUNT=demo@vigil.local
VIGIL_DB=demo
CREDS

step "credentials (also in $creds)"
grep -v '^#' "$creds"
cat <<HELP

  psql:     scripts/pg-cluster.sh psql .vigil/pg      (superuser)
            psql "\$DATABASE_URL"                      (as the application role)
  try:      curl -s http://$http_addr/healthz
  stop:     Ctrl-C stops the sidecar; \`make stop\` stops the database.

HELP
exec "$VIGIL_ROOT/target/release/vigil-sidecar" serve --listen "$http_addr" --database-url "$database_url"
