#!/usr/bin/env bash
# A highly available PostgreSQL 15 cluster with vigil on this machine, for
# `make run-ha` and the failover test: one etcd member and three nodes managed by
# Patroni, on loopback, with synchronous replication. docs/high-availability.md
# says what each setting is for and the recipe for three real hosts.
#
#   ha-cluster.sh up DIR        create (first time) and start etcd and the three
#                               nodes in DIR (DIR/etcd, DIR/node1..3), wait for a
#                               leader and its synchronous standby, make database
#                               `vigil` on the leader as scripts/pg-cluster.sh does
#                               (same roles, settings, extension); prints
#                               DATABASE_URL=... and ADMIN_DATABASE_URL=... naming
#                               the three nodes (target_session_attrs=read-write),
#                               and READ_DATABASE_URL=... for the sidecar's reads
#                               (target_session_attrs=read-only: a standby)
#   ha-cluster.sh down DIR      stop the nodes (Patroni stops its PostgreSQL), then etcd
#   ha-cluster.sh remove DIR    stop everything and delete DIR
#   ha-cluster.sh list DIR      `patronictl list`: each node's role, state, timeline, lag
#   ha-cluster.sh leader DIR    the directory of the node that leads now (DIR/nodeN)
#   ha-cluster.sh psql DIR ARGS psql as the superuser on database `vigil` of the leader
#
# Ports and timeouts are read from the environment the first time (then kept in
# DIR/ha.env): VIGIL_HA_PG_PORTS (28850,28851,28852), VIGIL_HA_API_PORTS (Patroni's
# REST API, 28860,28861,28862), VIGIL_HA_ETCD_PORTS (client,peer: 28870,28871),
# VIGIL_HA_TTL (10 s), VIGIL_HA_LOOP_WAIT (1 s), VIGIL_HA_RETRY_TIMEOUT (4 s),
# VIGIL_HA_PRIMARY_START_TIMEOUT (0 s: a crashed primary fails over at once),
# VIGIL_HA_SYNC_STRICT (true: with no synchronous standby, writes wait for one;
# false: the primary goes on alone, and what it acknowledges then is on it only).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,27p' "$0" >&2; exit 2; }

SCOPE=vigil-ha
NODES=(node1 node2 node3)

# Patroni and etcd, like PostgreSQL, run as `postgres` when we are root. Each
# runs in a session of its own (not stopped by the Ctrl-C that stops `make
# run-ha`'s sidecar) and writes its pid to PIDFILE.
daemon() {
    local pidfile="$1" log="$2"; shift 2
    local runner=()
    if is_root; then runner=(sudo -u postgres --); fi
    # shellcheck disable=SC2016
    setsid "${runner[@]}" sh -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$@" </dev/null >>"$log" 2>&1 &
}

running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# Started (its pid written) and gone since.
ended() { [ -s "$1" ] && ! running "$1"; }

# Stops the processes of PIDFILEs (SIGTERM to all, then waits up to a minute).
stop_pids() {
    local pidfile pids=() pid i
    for pidfile in "$@"; do
        running "$pidfile" || continue
        pid="$(cat "$pidfile")"
        kill -TERM "$pid" 2>/dev/null || true
        pids+=("$pid")
    done
    for pid in "${pids[@]}"; do
        for ((i = 0; i < 600; i++)); do
            kill -0 "$pid" 2>/dev/null || continue 2
            sleep 0.1
        done
        die "process $pid did not stop in a minute"
    done
}

# The settings of DIR: those of the environment the first time, kept in DIR/ha.env.
load_settings() {
    local dir="$1"
    if ! as_pg test -f "$dir/ha.env"; then
        as_pg tee "$dir/ha.env" >/dev/null <<ENV
PG_PORTS=${VIGIL_HA_PG_PORTS:-28850,28851,28852}
API_PORTS=${VIGIL_HA_API_PORTS:-28860,28861,28862}
ETCD_PORTS=${VIGIL_HA_ETCD_PORTS:-28870,28871}
TTL=${VIGIL_HA_TTL:-10}
LOOP_WAIT=${VIGIL_HA_LOOP_WAIT:-1}
RETRY_TIMEOUT=${VIGIL_HA_RETRY_TIMEOUT:-4}
PRIMARY_START_TIMEOUT=${VIGIL_HA_PRIMARY_START_TIMEOUT:-0}
SYNC_STRICT=${VIGIL_HA_SYNC_STRICT:-true}
ENV
    fi
    # shellcheck disable=SC1090
    . <(as_pg cat "$dir/ha.env")
    IFS=, read -r -a pg_ports <<<"$PG_PORTS"
    IFS=, read -r -a api_ports <<<"$API_PORTS"
    IFS=, read -r etcd_client etcd_peer <<<"$ETCD_PORTS"
    [ "${#pg_ports[@]}" -eq 3 ] && [ "${#api_ports[@]}" -eq 3 ] && [ -n "$etcd_peer" ] \
        || die "$dir/ha.env: three PostgreSQL ports, three API ports and two etcd ports are needed"
    SYNC_STRICT="${SYNC_STRICT:-true}"   # a cluster made before the setting was
    [[ "$SYNC_STRICT" =~ ^(true|false)$ ]] \
        || die "$dir/ha.env: SYNC_STRICT (VIGIL_HA_SYNC_STRICT) is true or false, not '$SYNC_STRICT'"
}

start_etcd() {
    local dir="$1"
    running "$dir/etcd.pid" && return 0
    as_pg mkdir -p "$dir/etcd"
    as_pg chmod 0700 "$dir/etcd"
    daemon "$dir/etcd.pid" "$dir/etcd.log" /usr/bin/etcd --name etcd1 --data-dir "$dir/etcd" \
        --listen-client-urls "http://127.0.0.1:$etcd_client" \
        --advertise-client-urls "http://127.0.0.1:$etcd_client" \
        --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-cluster "etcd1=http://127.0.0.1:$etcd_peer" \
        --initial-cluster-token "$SCOPE" --initial-cluster-state new
    local i
    for ((i = 0; i < 300; i++)); do
        curl -fsS "http://127.0.0.1:$etcd_client/health" 2>/dev/null | grep -q '"health":"true"' && return 0
        ended "$dir/etcd.pid" && break
        sleep 0.1
    done
    die "etcd did not start; see $dir/etcd.log"
}

# Patroni's configuration of node I (0..2). The bootstrap section is read once,
# by the node that initialises the cluster, and then lives in etcd (`patronictl
# edit-config` changes it); the rest is each node's own.
node_config() {
    local dir="$1" i="$2" superuser="$3" replication="$4"
    local node="$dir/${NODES[$i]}"
    local initdb
    initdb="$(printf '    - %s\n' "${VIGIL_INITDB_OPTIONS[@]#--}" | sed 's/=/: /')"
    cat <<YAML
scope: $SCOPE
namespace: /vigil/
name: ${NODES[$i]}
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${api_ports[$i]}
  connect_address: 127.0.0.1:${api_ports[$i]}
etcd3:
  hosts: 127.0.0.1:$etcd_client
watchdog:
  mode: off
bootstrap:
  dcs:
    ttl: $TTL
    loop_wait: $LOOP_WAIT
    retry_timeout: $RETRY_TIMEOUT
    primary_start_timeout: $PRIMARY_START_TIMEOUT
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: $SYNC_STRICT
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_log_hints: 'on'
        hot_standby: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 256MB
  initdb:
$initdb
    - data-checksums
postgresql:
  listen: 127.0.0.1:${pg_ports[$i]}
  connect_address: 127.0.0.1:${pg_ports[$i]}
  data_dir: $node/data
  bin_dir: $PG_BIN
  pgpass: $node/pgpass
  custom_conf: $node/vigil.conf
  use_unix_socket: true
  authentication:
    superuser:
      username: $(pg_user)
      password: '$superuser'
    replication:
      username: vigil_replication
      password: '$replication'
  parameters:
    unix_socket_directories: '$node/run'
  pg_hba:
    - local all all peer
    - host all all 127.0.0.1/32 scram-sha-256
    - host replication all 127.0.0.1/32 scram-sha-256
  remove_data_directory_on_rewind_failure: false
  remove_data_directory_on_diverged_timelines: false
YAML
}

start_node() {
    local dir="$1" i="$2"
    local node="$dir/${NODES[$i]}"
    running "$node/patroni.pid" && return 0
    as_pg mkdir -p "$node/run"
    as_pg chmod 0700 "$node"
    echo "${pg_ports[$i]}" | as_pg tee "$node/port" >/dev/null
    # The settings every vigil cluster has (scripts/lib.sh); Patroni's own
    # (listen, port, replication) come after them and win.
    { echo "# vigil (scripts/ha-cluster.sh)"; vigil_server_conf "$node"; } | as_pg tee "$node/vigil.conf" >/dev/null
    node_config "$dir" "$i" "$(role_password "$dir" superuser_password)" \
        "$(role_password "$dir" replication_password)" | as_pg tee "$node/patroni.yml" >/dev/null
    as_pg chmod 0600 "$node/patroni.yml"
    daemon "$node/patroni.pid" "$node/patroni.log" /usr/bin/patroni "$node/patroni.yml"
}

# The members as Patroni's REST API reports them (GET /cluster of the first
# node that answers), one line each: name role state port.
members() {
    local port
    for port in "${api_ports[@]}"; do
        curl -fsS --max-time 2 "http://127.0.0.1:$port/cluster" 2>/dev/null |
            jq -r '.members[] | "\(.name) \(.role) \(.state) \(.port)"' 2>/dev/null && return 0
    done
    return 1
}

# The directory of the node that leads and runs now, if any.
leader_dir() {
    local dir="$1" i
    for i in 0 1 2; do
        if curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:${api_ports[$i]}/primary" 2>/dev/null; then
            echo "$dir/${NODES[$i]}"
            return 0
        fi
    done
    return 1
}

# Waits (up to PATIENCE seconds) for a running leader and a synchronous
# standby: then every commit is on two servers before it is acknowledged.
wait_ready() {
    local dir="$1" patience="${2:-180}" start=$SECONDS list
    while ((SECONDS - start < patience)); do
        list="$(members || true)"
        if grep -Eq ' (leader|master|primary) running ' <<<"$list" &&
            grep -Eq ' sync_standby (running|streaming) ' <<<"$list" &&
            leader_dir "$dir" >/dev/null; then
            return 0
        fi
        sleep 0.5
    done
    die "no leader with a synchronous standby after ${patience}s; see $dir/node*/patroni.log: $(members || echo 'no member answers')"
}

urls() {
    local dir="$1" hosts="" port
    for port in "${pg_ports[@]}"; do hosts+="${hosts:+,}127.0.0.1:$port"; done
    echo "DATABASE_URL=postgres://vigil_app:$(role_password "$dir" app_password)@$hosts/vigil?target_session_attrs=read-write"
    echo "ADMIN_DATABASE_URL=postgres://vigil_admin:$(role_password "$dir" admin_password)@$hosts/vigil?target_session_attrs=read-write"
    echo "READ_DATABASE_URL=postgres://vigil_app:$(role_password "$dir" app_password)@$hosts/vigil?target_session_attrs=read-only&load_balance_hosts=random"
}

up() {
    local dir i leader
    dir="$(realpath -m "$1")"
    command -v patroni >/dev/null && command -v etcd >/dev/null \
        || die "patroni and etcd are not installed: scripts/setup-ha.sh installs them"
    prepare_dir "$dir"
    load_settings "$dir"
    start_etcd "$dir"
    if ! as_pg test -f "$dir/node1/data/PG_VERSION"; then
        step "creating a Patroni cluster of three PostgreSQL 15 nodes in $dir"
        # The first node initialises the cluster alone; the others then copy it.
        start_node "$dir" 0
        local start=$SECONDS
        until leader_dir "$dir" >/dev/null; do
            ((SECONDS - start < 120)) || die "node1 did not initialise; see $dir/node1/patroni.log"
            ended "$dir/node1/patroni.pid" && die "Patroni on node1 stopped; see $dir/node1/patroni.log"
            sleep 0.3
        done
    fi
    for i in 0 1 2; do start_node "$dir" "$i"; done
    wait_ready "$dir"
    leader="$(leader_dir "$dir")"
    vigil_database "$leader" "$dir"
    urls "$dir"
}

down() {
    local dir i
    dir="$(realpath -m "$1")"
    [ -d "$dir" ] || return 0
    stop_recorded_sidecar "$dir"
    # Replicas first, so the leader's going does not make one of them promote.
    local leader replicas=()
    leader="$( (load_settings "$dir" && leader_dir "$dir") 2>/dev/null || true)"
    for i in 0 1 2; do
        [ "$dir/${NODES[$i]}" = "$leader" ] || replicas+=("$dir/${NODES[$i]}/patroni.pid")
    done
    stop_pids "${replicas[@]}"
    [ -z "$leader" ] || stop_pids "$leader/patroni.pid"
    # A PostgreSQL left behind (Patroni killed): stop it too.
    for i in 0 1 2; do
        if as_pg test -f "$dir/${NODES[$i]}/data/postmaster.pid" 2>/dev/null; then
            as_pg "$PG_BIN/pg_ctl" -D "$dir/${NODES[$i]}/data" -m fast -w stop >/dev/null 2>&1 || true
        fi
    done
    stop_pids "$dir/etcd.pid"
}

remove() {
    local dir; dir="$(realpath -m "$1")"
    down "$dir"
    as_pg rm -rf "$dir/etcd" "$dir/node1" "$dir/node2" "$dir/node3" 2>/dev/null || true
    rm -rf "$dir" 2>/dev/null || as_pg rm -rf "$dir"
    if [ -L "$1" ]; then rm -f "$1"; fi
}

case "${1:-}" in
    up) [ $# -eq 2 ] || usage; up "$2" ;;
    down) [ $# -eq 2 ] || usage; down "$2" ;;
    remove) [ $# -eq 2 ] || usage; remove "$2" ;;
    list) [ $# -eq 2 ] || usage; dir="$(realpath -m "$2")"
        as_pg patronictl -c "$dir/node1/patroni.yml" list ;;
    leader) [ $# -eq 2 ] || usage; dir="$(realpath -m "$2")"; load_settings "$dir"
        leader_dir "$dir" || die "no node leads now" ;;
    psql) [ $# -ge 2 ] || usage; dir="$(realpath -m "$2")"; shift 2; load_settings "$dir"
        leader="$(leader_dir "$dir")" || die "no node leads now"
        psql_super "$leader" -d vigil "$@" ;;
    *) usage ;;
esac
