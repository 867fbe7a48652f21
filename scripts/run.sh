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
sidecar="$VIGIL_ROOT/target/release/vigil-sidecar"

# Demo credentials: keep those of an earlier run while they are still active;
# otherwise make new ones with the admin command (keys are shown once, so this
# file is where they live).
account="demo@vigil.local"
db="demo"
old() { [ -f "$creds" ] && sed -n "s/^$1=//p" "$creds" || true; }
active() { [ -n "$1" ] && [ "$("$sidecar" keys status "${1:0:11}" 2>/dev/null)" = active ]; }
api_key="$(old VIGIL_API_KEY)"
user_key="$(old VIGIL_USER_KEY)"
active "$api_key" || api_key="$("$sidecar" keys create --name 'demo (make run)')"
"$sidecar" accounts create "$account"
active "$user_key" || user_key="$("$sidecar" user-keys create "$account" --name 'demo (make run)')"
# The demo database, made as the account (a superuser may select it directly).
printf "SET vigil.account = :'a';\nSELECT FROM vigil.create_database(:'d');\n" |
    "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$VIGIL_STATE/pg" -q -v a="$account" -v d="$db" >/dev/null

umask 077
cat > "$creds" <<CREDS
# Written by \`make run\`. Source it: set -a; . .vigil/credentials.env; set +a
# Manage keys with target/release/vigil-sidecar keys|accounts|user-keys (docs/reference/admin-command.md).
DATABASE_URL=$database_url
VIGIL_ADMIN_DATABASE_URL=$VIGIL_ADMIN_DATABASE_URL
VIGIL_HTTP=http://$http_addr
VIGIL_API_KEY=$api_key
VIGIL_USER_KEY=$user_key
VIGIL_ACCOUNT=$account
VIGIL_DB=$db
CREDS

step "credentials (also in $creds)"
grep -v '^#' "$creds"
cat <<HELP

  psql:     scripts/pg-cluster.sh psql .vigil/pg      (superuser)
            psql "\$DATABASE_URL"                      (as the application role)
  try:      set -a; . .vigil/credentials.env; set +a
            curl -s -H "x-api-key: \$VIGIL_API_KEY" http://$http_addr/api/key
            target/release/vigil-sidecar keys list
  stop:     Ctrl-C stops the sidecar; \`make stop\` stops the database.

HELP
# The URL holds the role's password: in the environment (which only this user
# and root can read, /proc/PID/environ), never on the command line, which `ps`
# shows every user.
DATABASE_URL="$database_url" exec "$VIGIL_ROOT/target/release/vigil-sidecar" serve --listen "$http_addr"
