#!/usr/bin/env bash
# /docker-entrypoint-initdb.d/10-vigil.sh in the extension image. The official
# entrypoint runs it once, on an empty data directory, as the `postgres` OS user
# against its temporary server (Unix socket only). It makes what
# scripts/pg-cluster.sh `up` makes: database `vigil` with the extension and
# `vigil` on its search path, and the roles `vigil_app` and `vigil_admin`
# (sql/bootstrap.sql).
#
# Passwords: VIGIL_APP_PASSWORD and VIGIL_ADMIN_PASSWORD, or VIGIL_APP_PASSWORD_FILE
# and VIGIL_ADMIN_PASSWORD_FILE (Docker secrets). They reach psql through its
# environment (\getenv), never its command line, and are never printed.
set -Eeuo pipefail

# The value of $1, or the contents of the file named by ${1}_FILE; not both.
secret() {
    local var="$1" file_var="${1}_FILE"
    if [ -n "${!var:-}" ] && [ -n "${!file_var:-}" ]; then
        echo "vigil: set $var or $file_var, not both" >&2
        exit 1
    fi
    if [ -n "${!file_var:-}" ]; then
        cat -- "${!file_var}"
    else
        printf '%s' "${!var:-}"
    fi
}

app_password="$(secret VIGIL_APP_PASSWORD)"
admin_password="$(secret VIGIL_ADMIN_PASSWORD)"
if [ -z "$app_password" ] || [ -z "$admin_password" ]; then
    echo "vigil: set VIGIL_APP_PASSWORD and VIGIL_ADMIN_PASSWORD (or their _FILE variants)" >&2
    exit 1
fi

# As docker_process_sql does: the temporary server's socket, as the superuser.
psql=(env PGHOST= PGHOSTADDR= psql -X -q -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --no-password)

if [ -z "$("${psql[@]}" -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'vigil'")" ]; then
    "${psql[@]}" -d postgres -c "CREATE DATABASE vigil"
fi
"${psql[@]}" -d vigil -c "SET client_min_messages = warning" \
    -c "CREATE EXTENSION IF NOT EXISTS vigil" \
    -c "ALTER DATABASE vigil SET search_path = vigil, public"

# A failing statement would be logged with its text, passwords included: not here.
VIGIL_APP_PASSWORD="$app_password" VIGIL_ADMIN_PASSWORD="$admin_password" \
    "${psql[@]}" -d vigil -v bootstrap="${VIGIL_BOOTSTRAP_SQL:-/usr/local/share/vigil/bootstrap.sql}" >/dev/null <<'SQL'
\set VERBOSITY terse
\set SHOW_CONTEXT never
SET log_min_error_statement = panic;
SET log_statement = 'none';
\getenv app_password VIGIL_APP_PASSWORD
\getenv admin_password VIGIL_ADMIN_PASSWORD
\i :bootstrap
SQL
unset app_password admin_password

echo "vigil: database vigil ready (extension vigil $("${psql[@]}" -d vigil -Atc "SELECT extversion FROM pg_extension WHERE extname = 'vigil'"), roles vigil_app and vigil_admin)"
