#!/usr/bin/env bash
# `make run`: start (or reuse) the local cluster, write and print the credentials,
# then serve the sidecar in the foreground until Ctrl-C. Expects `make build` done.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port="${VIGIL_PG_PORT:-28815}"
http_addr="${VIGIL_HTTP_ADDR:-127.0.0.1:8080}"
creds="$VIGIL_STATE/credentials.env"

database_url="$("$VIGIL_ROOT/scripts/pg-cluster.sh" up "$VIGIL_STATE/pg" "$port" | sed -n 's/^DATABASE_URL=//p')"

# Demo credentials: keep those of an earlier run while the database still accepts
# them; otherwise make new ones through the admin functions (keys are shown once,
# so this file is where they live).
account="demo@vigil.local"
db="demo"
old() { [ -f "$creds" ] && sed -n "s/^$1=//p" "$creds" || true; }
# sql QUERY [psql -v options]: psql interpolates :'var' only in queries read from stdin.
sql() { local q="$1"; shift; printf '%s\n' "$q" | "$VIGIL_ROOT/scripts/pg-cluster.sh" psql "$VIGIL_STATE/pg" -At -v ON_ERROR_STOP=1 "$@"; }
api_key="$(old VIGIL_API_KEY)"
user_key="$(old VIGIL_USER_KEY)"
if [ "$(sql "SELECT outcome FROM vigil.authenticate_api_key(:'k', 'transaction', NULL)" -v k="$api_key")" != ok ]; then
    api_key="$(sql "SELECT key FROM vigil.create_api_key('demo (make run)')")"
fi
sql "SELECT vigil.create_account(:'a');
     INSERT INTO vigil.vector_databases (account, name) VALUES (:'a', :'d') ON CONFLICT DO NOTHING;" \
    -v a="$account" -v d="$db" >/dev/null
if [ "$(sql "SELECT vigil.enter_account(:'a', :'k', :'d')" -v a="$account" -v k="$user_key" -v d="$db")" != ok ]; then
    user_key="$(sql "SELECT key FROM vigil.create_user_key(:'a', 'demo (make run)')" -v a="$account")"
fi

umask 077
cat > "$creds" <<CREDS
# Written by \`make run\`. Source it: set -a; . .vigil/credentials.env; set +a
# The keys are real (see vigil.api_key_list and vigil.user_key_list); the sidecar
# starts checking them when the authenticated endpoints land.
DATABASE_URL=$database_url
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
  try:      curl -s http://$http_addr/healthz
  stop:     Ctrl-C stops the sidecar; \`make stop\` stops the database.

HELP
exec "$VIGIL_ROOT/target/release/vigil-sidecar" serve --listen "$http_addr" --database-url "$database_url"
