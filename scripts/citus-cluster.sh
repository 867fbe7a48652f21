#!/usr/bin/env bash
# A Citus cluster with vigil on this machine (issue 47): a coordinator and
# workers on loopback, each a PostgreSQL 15 made as scripts/pg-cluster.sh makes
# one (same initdb options, settings, roles, database `vigil` with the
# extension), with Citus preloaded and created in `vigil`, the workers added
# to the coordinator. Needs Citus 13 installed by hand (docs/scaling-out.md).
#
#   citus-cluster.sh up DIR [PORT]   create (first time) and start the coordinator
#                                    in DIR/coordinator on PORT (default 28880)
#                                    and CITUS_WORKERS workers (default 2) in
#                                    DIR/workerN on the ports after it; prints the
#                                    coordinator's DATABASE_URL=... and
#                                    ADMIN_DATABASE_URL=...
#   citus-cluster.sh down DIR        stop every node
#   citus-cluster.sh remove DIR      stop every node and delete DIR
#   citus-cluster.sh psql DIR ARGS   psql as the superuser on the coordinator
#   citus-cluster.sh add-worker DIR [PORT]
#                                    one more worker (on PORT, default the next
#                                    port), added to the coordinator
#                                    (vigil.add_worker), for rebalancing
#
# The nodes reach each other over 127.0.0.1 as the superuser with a password
# (scram-sha-256, as every TCP connection of a vigil cluster), read from a
# password file that only the server's user can read (PGPASSFILE in each
# server's environment).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,22p' "$0" >&2; exit 2; }

require_citus

# Starts (creating it the first time) the node in DIR/NAME on PORT and
# makes its database (node_setup).
node_up() {
    server_up "$@"
    node_setup "$1" "$1/$2"
}

# Starts (creating it the first time) the server of the node in DIR/NAME on PORT.
server_up() {
    local root="$1" name="$2" port="$3" dir
    dir="$root/$name"
    prepare_dir "$dir"
    if ! as_pg test -f "$dir/data/PG_VERSION"; then
        step "creating Citus node $name in $dir (port $port)"
        as_pg mkdir -p "$dir/data" "$dir/run"
        as_pg "$PG_BIN/initdb" -D "$dir/data" -U "$(pg_user)" "${VIGIL_INITDB_OPTIONS[@]}" >/dev/null
        {
            echo "# vigil (scripts/citus-cluster.sh)"
            vigil_server_conf "$dir"
            # Citus first in the list, as it asks.
            echo "shared_preload_libraries = 'citus'"
            # Distributed transactions of the cluster commit in two phases.
            echo "max_prepared_transactions = 100"
            echo "wal_level = logical"
        } | as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
        echo "$port" | as_pg tee "$dir/port" >/dev/null
    fi
    if ! as_pg "$PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_pg env PGPASSFILE="$root/pgpass" "$PG_BIN/pg_ctl" -D "$dir/data" -o "-p $(as_pg cat "$dir/port")" \
            -l "$dir/server.log" -w start >/dev/null
    fi
}

# The node's roles, database `vigil`, Citus and vigil in it (created, or
# updated to the installed version).
node_setup() {
    local root="$1" dir="$2"
    # The superuser's password, the same on every node, in the nodes' password file.
    psql_super "$dir" -d postgres -v password="$(role_password "$root" superuser_password)" >/dev/null <<'SQL'
SELECT format('ALTER ROLE %I PASSWORD %L', current_user, :'password') \gexec
SQL
    psql_super "$dir" -d postgres <<'SQL'
SELECT 'CREATE DATABASE vigil' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'vigil') \gexec
SQL
    psql_super "$dir" -d vigil -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS citus"
    vigil_database "$dir" "$root"
}

passfile() {
    local root="$1"
    if ! as_pg test -f "$root/pgpass"; then
        # Citus's background jobs (the rebalancer) reach the coordinator as localhost.
        printf '%s:*:*:%s:%s\n' 127.0.0.1 "$(pg_user)" "$(role_password "$root" superuser_password)" \
            localhost "$(pg_user)" "$(role_password "$root" superuser_password)" | as_pg tee "$root/pgpass" >/dev/null
        as_pg chmod 600 "$root/pgpass"
    fi
}

workers() { as_pg sh -c "ls -d '$1'/worker* 2>/dev/null" | sort -V || true; }

up() {
    local root port="${2:-28880}" count="${CITUS_WORKERS:-2}" i coordinator
    root="$(realpath -m "$1")"
    prepare_dir "$root"
    passfile "$root"
    # Every existing node's server first: the coordinator's update of vigil
    # reaches the workers (Citus propagates extension DDL), which must be up.
    local node
    for node in $(workers "$root"); do
        server_up "$root" "$(basename "$node")" "$(as_pg cat "$node/port")"
    done
    node_up "$root" coordinator "$port"
    coordinator="$root/coordinator"
    port="$(as_pg cat "$coordinator/port")"
    psql_super "$coordinator" -d vigil -c "SELECT citus_set_coordinator_host('127.0.0.1', $port)" >/dev/null
    for ((i = 1; i <= count; i++)); do
        add_worker "$root" "$i"
    done
    local password admin_password
    password="$(role_password "$root" app_password)"
    admin_password="$(role_password "$root" admin_password)"
    echo "DATABASE_URL=postgres://vigil_app:$password@127.0.0.1:$port/vigil"
    echo "ADMIN_DATABASE_URL=postgres://vigil_admin:$admin_password@127.0.0.1:$port/vigil"
}

# Worker number N (default: one more than there are) on PORT (default: the
# coordinator's port + N).
# A worker already in the cluster is only started: its schema is the
# coordinator's to change (Citus refuses DDL on a worker).
add_worker() {
    local root="$1" n="${2:-}" port="${3:-}"
    [ -n "$n" ] || n=$(($(workers "$root" | wc -l) + 1))
    [ -n "$port" ] || port="$(($(as_pg cat "$root/coordinator/port") + n))"
    if [ "$(psql_super "$root/coordinator" -d vigil -At -c "SELECT count(*) FROM pg_dist_node
            WHERE nodename = '127.0.0.1' AND nodeport = $port")" != 0 ]; then
        server_up "$root" "worker$n" "$port"
        return
    fi
    node_up "$root" "worker$n" "$port"
    psql_super "$root/coordinator" -d vigil -At -c "SELECT vigil.add_worker('127.0.0.1', $port)" >/dev/null
}

down() {
    local root node
    root="$(realpath -m "$1")"
    for node in $(workers "$root") "$root/coordinator"; do
        "$VIGIL_ROOT/scripts/pg-cluster.sh" down "$node"
    done
}

case "${1:-}" in
    up) [ $# -ge 2 ] && [ $# -le 3 ] || usage; up "$2" "${3:-}" ;;
    down) [ $# -eq 2 ] || usage; down "$2" ;;
    remove) [ $# -eq 2 ] || usage; down "$2"; as_pg rm -rf "$(realpath -m "$2")"/* ; rm -rf "$2" 2>/dev/null || as_pg rm -rf "$2" ;;
    add-worker) [ $# -ge 2 ] && [ $# -le 3 ] || usage; add_worker "$(realpath -m "$2")" "" "${3:-}" ;;
    psql) [ $# -ge 2 ] || usage; root="$(realpath -m "$2")"; shift 2; psql_super "$root/coordinator" -d vigil "$@" ;;
    *) usage ;;
esac
