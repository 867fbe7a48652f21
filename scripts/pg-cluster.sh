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

# As root the server runs as `postgres`, which must reach DIR: if DIR's parents are
# closed to it (a checkout under /root), keep the data under /var/lib/postgresql and
# leave a symlink at DIR.
prepare_dir() {
    local dir="$1"
    if ! is_root; then mkdir -p "$dir"; return; fi
    if [ -L "$dir" ] || sudo -u postgres test -d "$dir" -a -w "$dir" 2>/dev/null; then return; fi
    mkdir -p "$(dirname "$dir")"
    if sudo -u postgres test -x "$(dirname "$dir")"; then
        install -d -o postgres -g postgres -m 0700 "$dir"
    else
        local real="/var/lib/postgresql/vigil/$(echo -n "$dir" | sha256sum | cut -c1-16)"
        install -d -o postgres -g postgres -m 0700 "$real"
        ln -sfn "$real" "$dir"
    fi
}

# The password of a role, made once and kept beside the data, readable by its owner only.
role_password() {
    local file="$1/$2"
    if ! as_pg test -f "$file"; then
        head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' | as_pg tee "$file" >/dev/null
        as_pg chmod 600 "$file"
    fi
    as_pg cat "$file"
}

# After `ALTER EXTENSION vigil UPDATE` the database must hold the version the
# installed control file names; otherwise no upgrade path leads there from the
# cluster's version (a version never released, or an installation older than the
# cluster), and the cluster is left as it is rather than used half-upgraded.
check_version() {
    local dir="$1" have want
    have="$(psql_super "$dir" -d vigil -Atc "SELECT extversion FROM pg_extension WHERE extname = 'vigil'")"
    want="$(psql_super "$dir" -d vigil -Atc "SELECT default_version FROM pg_available_extensions WHERE name = 'vigil'")"
    if [ "$have" != "$want" ]; then
        die "the cluster in $dir holds vigil $have and no upgrade script leads from it to the installed $want; install a build that has one, or recreate the cluster (this deletes its data): scripts/pg-cluster.sh remove $dir   (or: make reset)"
    fi
    # Clusters made before versioned upgrades remembered a hash of their script.
    as_pg rm -f "$dir/schema.sha256"
}

pg_user() { if is_root; then echo postgres; else id -un; fi; }

psql_super() {
    local dir="$1"; shift
    as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/run" -p "$(cat "$dir/port")" -U "$(pg_user)" "$@"
}

up() {
    local dir="$1" port="$2" version="${3:-}" fresh=""
    dir="$(realpath -m "$dir")"
    prepare_dir "$dir"
    if as_pg test -f "$dir/data/standby.signal"; then
        die "$dir holds a replica (read-only): start it with: scripts/pg-cluster.sh replica PRIMARY $dir PORT"
    fi
    if ! as_pg test -f "$dir/data/PG_VERSION"; then
        fresh=1
        step "creating a PostgreSQL 15 cluster in $dir"
        as_pg mkdir -p "$dir/data" "$dir/run"
        as_pg "$PG_BIN/initdb" -D "$dir/data" -U "$(pg_user)" --auth-local=peer --auth-host=scram-sha-256 \
            --encoding=UTF8 --locale=C.UTF-8 >/dev/null
        as_pg tee -a "$dir/data/postgresql.conf" >/dev/null <<CONF
# vigil (scripts/pg-cluster.sh)
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir/run'
password_encryption = 'scram-sha-256'
logging_collector = off
CONF
        as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -o "-p $port" -l "$dir/server.log" -w start >/dev/null
        echo "$port" | as_pg tee "$dir/port" >/dev/null
        psql_super "$dir" -d postgres -c "CREATE DATABASE vigil"
    elif ! as_pg "$PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -o "-p $port" -l "$dir/server.log" -w start >/dev/null
        echo "$port" | as_pg tee "$dir/port" >/dev/null
    fi
    port="$(as_pg cat "$dir/port")"
    local password admin_password
    password="$(role_password "$dir" app_password)"
    admin_password="$(role_password "$dir" admin_password)"
    if [ -n "$version" ]; then
        # A cluster of an earlier version, as an upgrade test needs: made, not updated.
        psql_super "$dir" -d vigil -c "SET client_min_messages = warning" \
            -c "CREATE EXTENSION IF NOT EXISTS vigil VERSION '$version'" \
            -c "ALTER DATABASE vigil SET search_path = vigil, public"
    else
        psql_super "$dir" -d vigil -c "SET client_min_messages = warning" \
            -c "CREATE EXTENSION IF NOT EXISTS vigil" -c "ALTER EXTENSION vigil UPDATE" \
            -c "ALTER DATABASE vigil SET search_path = vigil, public"
        check_version "$dir"
    fi
    psql_super "$dir" -d vigil -v app_password="$password" -v admin_password="$admin_password" \
        -f "$VIGIL_ROOT/sql/bootstrap.sql" >/dev/null
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
