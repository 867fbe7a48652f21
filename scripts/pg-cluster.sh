#!/usr/bin/env bash
# A local PostgreSQL 15 cluster with the vigil extension, for `make run` and tests.
#
#   pg-cluster.sh up DIR PORT [VERSION]
#                               create (first time) and start the cluster in DIR on
#                               127.0.0.1:PORT, database `vigil` with the extension,
#                               roles `vigil_app` and `vigil_admin`; prints
#                               DATABASE_URL=... and ADMIN_DATABASE_URL=... on stdout.
#                               An existing cluster's extension is upgraded
#                               (ALTER EXTENSION vigil UPDATE), keeping its data.
#                               With VERSION, a new cluster gets that earlier version
#                               of the extension, and no upgrade is made
#   pg-cluster.sh down DIR      stop it (fast shutdown); no-op when not running
#   pg-cluster.sh remove DIR    stop it and delete its files
#   pg-cluster.sh psql DIR ARGS psql as the superuser over the cluster's socket
#   pg-cluster.sh pgbench DIR ARGS
#                               pgbench as the superuser on database `vigil` (benches;
#                               PGOPTIONS is passed on)
#   pg-cluster.sh replica PRIMARY DIR PORT
#                               create (first time, by pg_basebackup -R from the running
#                               cluster in PRIMARY over 127.0.0.1) and start a streaming
#                               hot standby of it in DIR on 127.0.0.1:PORT; prints its
#                               URLs like `up`. down, remove and psql work on DIR as usual
#
# Local socket: peer authentication (the superuser is the OS user running the
# server: `postgres` when we are root). TCP: scram-sha-256 only; replication over
# 127.0.0.1 as the role `vigil_replication`, made by the first `replica`.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,21p' "$0" >&2; exit 2; }

up() {
    local dir="$1" port="$2" version="${3:-}"
    dir="$(realpath -m "$dir")"
    prepare_dir "$dir"
    if as_pg test -f "$dir/data/standby.signal"; then
        die "$dir holds a replica (read-only): start it with: scripts/pg-cluster.sh replica PRIMARY $dir PORT"
    fi
    if ! as_pg test -f "$dir/data/PG_VERSION"; then
        step "creating a PostgreSQL 15 cluster in $dir"
        as_pg mkdir -p "$dir/data" "$dir/run"
        as_pg "$PG_BIN/initdb" -D "$dir/data" -U "$(pg_user)" "${VIGIL_INITDB_OPTIONS[@]}" >/dev/null
        { echo "# vigil (scripts/pg-cluster.sh)"; vigil_server_conf "$dir"; } |
            as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
        as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -o "-p $port" -l "$dir/server.log" -w start >/dev/null
        echo "$port" | as_pg tee "$dir/port" >/dev/null
    elif ! as_pg "$PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -o "-p $port" -l "$dir/server.log" -w start >/dev/null
        echo "$port" | as_pg tee "$dir/port" >/dev/null
    fi
    port="$(as_pg cat "$dir/port")"
    vigil_database "$dir" "$dir" "$version"
    local password admin_password
    password="$(role_password "$dir" app_password)"
    admin_password="$(role_password "$dir" admin_password)"
    echo "DATABASE_URL=postgres://vigil_app:$password@127.0.0.1:$port/vigil"
    echo "ADMIN_DATABASE_URL=postgres://vigil_admin:$admin_password@127.0.0.1:$port/vigil"
}

# A standby streams from its primary as this role over 127.0.0.1, which the
# pg_hba.conf initdb writes already lets in (`host replication all 127.0.0.1/32`).
replica() {
    local primary dir port="$3" primary_port password
    primary="$(realpath -m "$1")" dir="$(realpath -m "$2")"
    prepare_dir "$dir"
    if ! as_pg test -f "$dir/data/PG_VERSION"; then
        as_pg "$PG_BIN/pg_ctl" -D "$primary/data" status >/dev/null 2>&1 \
            || die "no running cluster in $primary to replicate"
        as_pg grep -Eq '^host[[:space:]]+replication[[:space:]]+all[[:space:]]+127\.0\.0\.1/32[[:space:]]+scram-sha-256' \
            "$primary/data/pg_hba.conf" \
            || die "$primary/data/pg_hba.conf lets no replication in over 127.0.0.1"
        step "making a replica of $primary in $dir"
        primary_port="$(as_pg cat "$primary/port")"
        password="$(role_password "$primary" replication_password)"
        psql_super "$primary" -d postgres -v password="$password" >/dev/null <<'SQL'
SELECT format('CREATE ROLE vigil_replication LOGIN REPLICATION PASSWORD %L', :'password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'vigil_replication') \gexec
SQL
        as_pg mkdir -p "$dir/run"
        # -R writes primary_conninfo (with this password) and standby.signal.
        as_pg env PGPASSWORD="$password" "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$primary_port" \
            -U vigil_replication -D "$dir/data" -R -X stream --checkpoint=fast
        as_pg tee -a "$dir/data/postgresql.conf" >/dev/null <<CONF
# replica of $primary (scripts/pg-cluster.sh replica)
unix_socket_directories = '$dir/run'
CONF
        local file
        for file in app_password admin_password; do
            as_pg cp -p "$primary/$file" "$dir/$file"
        done
    fi
    if ! as_pg "$PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -o "-p $port" -l "$dir/server.log" -w start >/dev/null
        echo "$port" | as_pg tee "$dir/port" >/dev/null
    fi
    port="$(as_pg cat "$dir/port")"
    echo "DATABASE_URL=postgres://vigil_app:$(as_pg cat "$dir/app_password")@127.0.0.1:$port/vigil"
    echo "ADMIN_DATABASE_URL=postgres://vigil_admin:$(as_pg cat "$dir/admin_password")@127.0.0.1:$port/vigil"
}

down() {
    local dir; dir="$(realpath -m "$1")"
    stop_recorded_sidecar "$dir"
    if as_pg test -f "$dir/data/PG_VERSION" 2>/dev/null && as_pg "$PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    fi
}

remove() {
    local dir; dir="$(realpath -m "$1")"
    down "$dir"
    as_pg rm -rf "$dir/data" "$dir/run"
    rm -rf "$dir" 2>/dev/null || as_pg rm -rf "$dir"
    if [ -L "$1" ]; then rm -f "$1"; fi
}

case "${1:-}" in
    up) [ $# -eq 3 ] || [ $# -eq 4 ] || usage; up "$2" "$3" "${4:-}" ;;
    down) [ $# -eq 2 ] || usage; down "$2" ;;
    remove) [ $# -eq 2 ] || usage; remove "$2" ;;
    replica) [ $# -eq 4 ] || usage; replica "$2" "$3" "$4" ;;
    psql) [ $# -ge 2 ] || usage; dir="$(realpath -m "$2")"; shift 2; psql_super "$dir" -d vigil "$@" ;;
    pgbench)
        [ $# -ge 2 ] || usage; dir="$(realpath -m "$2")"; shift 2
        # PGOPTIONS passes on: settings for every connection, not every transaction.
        as_pg env PGOPTIONS="${PGOPTIONS:-}" "$PG_BIN/pgbench" -h "$dir/run" -p "$(cat "$dir/port")" -U "$(pg_user)" "$@" vigil ;;
    *) usage ;;
esac
