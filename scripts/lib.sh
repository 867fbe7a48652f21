# Shared by the scripts in this folder: paths, privilege and logging helpers.
# Source it; it defines variables and functions and runs nothing.

VIGIL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Where the local clusters, credentials and logs live; another directory for a
# second installation from the same checkout (the e2e test of `make stop` uses one).
VIGIL_STATE="${VIGIL_STATE:-$VIGIL_ROOT/.vigil}"
PG_CONFIG="${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}"
# The server binaries beside PG_CONFIG: pointing PG_CONFIG at a relocated copy of the
# installation (private_pg, revision_pg) runs that copy.
PG_BIN="$(dirname "$PG_CONFIG")"
PGRX_VERSION="0.18.0"
MDBOOK_VERSION="0.4.52"
CARGO_FUZZ_VERSION="0.13.2"
export PATH="$HOME/.cargo/bin:$PATH"

step() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Root runs privileged steps directly; an ordinary user goes through sudo.
if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
is_root() { [ "$(id -u)" -eq 0 ]; }

# Postgres refuses to run as root: as root, server commands run as `postgres`.
as_pg() {
    if is_root; then sudo -u postgres -- "$@"; else "$@"; fi
}

# Where the runtime and model are installed: readable by the postgres user, and the
# extension derives the same paths from the server's own directories.
vigil_model_dir() { echo "$("$PG_CONFIG" --sharedir)/vigil/model"; }
vigil_runtime_path() { echo "$("$PG_CONFIG" --pkglibdir)/vigil/libonnxruntime.so.1.31.1"; }
# A directory holding only the published model.onnx and the tokenizer (links),
# readable by the postgres user: `vigil.model_dir` set to it runs the published
# model rather than the int8 rewrite beside it, for benches that compare them.
published_model_dir() {
    local dir="/tmp/vigil-model-published-$(id -u)"
    mkdir -p "$dir" && chmod 0755 "$dir"
    ln -sf "$(vigil_model_dir)/model.onnx" "$(vigil_model_dir)/tokenizer.json" "$dir/"
    echo "$dir"
}
vigil_geoip_path() { echo "$("$PG_CONFIG" --sharedir)/vigil/geoip/geo-whois-asn-country.mmdb"; }
GEOIP_VERSION="2.3.2026061719"
GEOIP_SHA256="91757a1b06cdcd1955f292e4c4cfc54e091204f998e159a3187f7a2ef3724be0"

# The tests' builds: the release profile without cross-crate LTO (Cargo.toml
# says why what ships has it), since each test binary would compile its
# dependencies again at link time. The code is the same; only the inlining
# across crates differs. Called by make test and by the test drivers run alone.
#
# And every build sees the CARGO_MANIFEST_DIR that cargo-pgrx gives its cargo:
# a build script that watches it (ring's) compiled again, with everything
# above it, each time a pgrx build followed another build.
test_profile() {
    export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
    export CARGO_MANIFEST_DIR="$VIGIL_ROOT/extension"
}

# Builds the extension in release mode (`cargo pgrx package`, into
# $VIGIL_STATE/package) and installs each file into this server's directories
# (through sudo when we are not root) by renaming a copy over the old one.
# Backends that have the old vigil.so loaded keep their mapping of it;
# overwriting it in place, as `cargo pgrx install` does, can crash them.
install_extension() {
    local stage="$VIGIL_STATE/package" file dest mode
    rm -rf "$stage"
    (cd "$VIGIL_ROOT/extension" && cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$stage") \
        || die "the extension did not build; nothing was installed"
    # pgrx packages the upgrade scripts (extension/sql/vigil--A--B.sql); the full
    # script of the previous version goes too, so a cluster of it can be made to
    # test the upgrade from it.
    local base
    for base in "$VIGIL_ROOT"/extension/sql/vigil--*.sql; do
        [ -e "$base" ] || continue
        case "$(basename "$base")" in vigil--*--*) continue ;; esac
        install -D -m 0644 "$base" "$stage$("$PG_CONFIG" --sharedir)/extension/$(basename "$base")"
    done
    while IFS= read -r -d '' file; do
        dest="${file#"$stage"}"
        case "$dest" in *.so) mode=0755 ;; *) mode=0644 ;; esac
        "${SUDO[@]}" install -D -m "$mode" "$file" "$dest.vigil-new"
        "${SUDO[@]}" mv -f "$dest.vigil-new" "$dest"
    done < <(find "$stage" -type f -print0)
    step "installed the extension into $("$PG_CONFIG" --pkglibdir) and $("$PG_CONFIG" --sharedir)/extension"
}

# A private, relocated copy of the PostgreSQL 15 installation, for `cargo pgrx
# test`: its test build of vigil.so and its SQL are installed there, never into the
# directories a running server (`make run`'s) loads from. PostgreSQL finds its
# library and share directories relative to its own binary, so copies of
# bin/, lib/ and share/ under one prefix make a working installation; the headers
# and vigil's model, runtime and IP data are linked, since nothing writes them.
# Recopied when the system's server changes (a Debian update). Prints the root;
# as root it lives where the `postgres` user can read it.
private_pg() {
    local root="$VIGIL_STATE/pg15-private"
    if is_root && ! sudo -u postgres test -x "$VIGIL_STATE" 2>/dev/null; then
        root="/var/lib/postgresql/vigil/$(echo -n "$VIGIL_ROOT" | sha256sum | cut -c1-16)/pg15-private"
    fi
    copy_pg_installation "$root"
    echo "$root"
}

# Copies the system's PostgreSQL 15 installation to ROOT (once; again when the
# system's server changes), without vigil's own files; vigil's model, runtime and
# IP data are linked.
copy_pg_installation() {
    local root="$1" stamp want
    want="$("$PG_CONFIG" --version) $(stat -c %Y "$PG_BIN/postgres")"
    stamp="$root/.copied-from"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        step "copying the PostgreSQL 15 installation to $root" >&2
        rm -rf "$root"
        mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql" "$root/usr/include"
        cp -a /usr/lib/postgresql/15 "$root/usr/lib/postgresql/"
        cp -a /usr/share/postgresql/15 "$root/usr/share/postgresql/"
        # The copies of vigil's own files are dropped: the copy's user installs its build.
        rm -rf "$root"/usr/lib/postgresql/15/lib/vigil* "$root"/usr/share/postgresql/15/extension/vigil*
        rm -rf "$root/usr/lib/postgresql/15/lib/vigil" "$root/usr/share/postgresql/15/vigil"
        ln -s /usr/include/postgresql "$root/usr/include/postgresql"
        ln -s "$("$PG_CONFIG" --pkglibdir)/vigil" "$root/usr/lib/postgresql/15/lib/vigil"
        ln -s "$("$PG_CONFIG" --sharedir)/vigil" "$root/usr/share/postgresql/15/vigil"
        chmod -R a+rX "$root"
        echo "$want" > "$stamp"
    fi
}

# A relocated copy of the installation holding the extension and sidecar as built
# at git revision REV, for benches that compare a change against its base (both
# clusters running at once). The revision is checked out in a worktree under
# $VIGIL_STATE/revisions/ that shares this checkout's target directory (its
# crates have their own version, so the two builds' artifacts live side by side).
# Prints the copy's root; its sidecar is ROOT/vigil-sidecar.
revision_pg() {
    local rev commit tree root stage file
    rev="$1"
    commit="$(git -C "$VIGIL_ROOT" rev-parse --verify "$rev^{commit}")" || die "no revision $rev"
    tree="$VIGIL_STATE/revisions/src-${commit:0:12}"
    root="$VIGIL_STATE/revisions/pg-${commit:0:12}"
    if [ ! -x "$root/vigil-sidecar" ]; then
        step "building the extension and sidecar at $rev (${commit:0:12}) in $tree" >&2
        [ -d "$tree" ] || git -C "$VIGIL_ROOT" worktree add --detach "$tree" "$commit" >&2
        [ -e "$tree/target" ] || ln -s "$VIGIL_ROOT/target" "$tree/target"
        copy_pg_installation "$root"
        stage="$VIGIL_STATE/revisions/package-${commit:0:12}"
        rm -rf "$stage"
        (cd "$tree/extension" && cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$stage") >&2 \
            || die "the extension at $rev did not build"
        while IFS= read -r -d '' file; do
            install -D -m 0755 "$file" "$root${file#"$stage"}"
        done < <(find "$stage" -type f -print0)
        (cd "$tree" && cargo build --release -p vigil-sidecar) >&2 || die "the sidecar at $rev did not build"
        cp "$tree/target/release/vigil-sidecar" "$root/vigil-sidecar.new"
        chmod -R a+rX "$root"
        # The shared target's sidecar is this checkout's again. The
        # extension's library has one file name whatever the version
        # (target/release/libvigil.so), so the base's build just replaced
        # this checkout's, and cargo, whose fingerprints still hold, would
        # install it as this checkout's (a 0.16.0 library as 0.17.0, seen
        # 2026-11-29): touched, the next build compiles it again.
        (cd "$VIGIL_ROOT" && cargo build --locked --release -p vigil-sidecar) >&2
        touch "$VIGIL_ROOT/extension/src/lib.rs"
        mv "$root/vigil-sidecar.new" "$root/vigil-sidecar"
    fi
    echo "$root"
}

# PGRX_HOME for the extension tests: pgrx's config names the private copy's
# pg_config, so `cargo pgrx test` installs into and runs from it. Written only
# when it changes: pgrx's bindings rebuild when the config file does.
pgrx_test_home() {
    local root home config
    root="$(private_pg)"
    home="$VIGIL_STATE/pgrx-home"
    config="[configs]
pg15 = \"$root/usr/lib/postgresql/15/bin/pg_config\""
    mkdir -p "$home"
    if [ "$(cat "$home/config.toml" 2>/dev/null)" != "$config" ]; then
        echo "$config" > "$home/config.toml"
    fi
    echo "$home"
}

# SQL giving recall@10 of the rows in temp table `got` (qid, id: what an
# index returned for each query of bench-hnsw's dataset $1) against its
# ground truth, ties counted: a returned row is a hit when it is no farther
# than the 10th exact.
hnsw_recall_sql() {
    cat <<SQL
SELECT round(count(*) FILTER (WHERE (i.v <=> q.v) <= t.d)::numeric
             / (10 * (SELECT count(*) FROM bench.$1_queries)), 4)
FROM got g
JOIN bench.$1_items i ON i.id = g.id
JOIN bench.$1_queries q ON q.id = g.qid
JOIN bench.$1_truth t ON t.qid = g.qid AND t.rank = 10
SQL
}

# The many-client step of bench-hnsw (and of `bench/hnsw/ab.sh clients`): pgbench on
# the cluster in DIR with CLIENTS clients for SECONDS s running SCRIPT, as an
# application runs queries (prepared, ef_search 40 for both indexes set per
# connection); pgbench's output on stdout.
hnsw_pgbench() {
    local dir="$1" clients="$2" seconds="$3" script="$4"
    PGOPTIONS="-c vigil.hnsw_ef_search=40 -c hnsw.ef_search=40 -c enable_seqscan=off" \
        "$VIGIL_ROOT/scripts/pg-cluster.sh" pgbench "$dir" -n -M prepared -c "$clients" \
        -j "$(( clients < 2 ? clients : 2 ))" -T "$seconds" -f "$script"
}

# --- Clusters: what scripts/pg-cluster.sh (one server) and scripts/ha-cluster.sh
# (three, under Patroni) share, so a node of either is made the same way.

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

# initdb's options for every vigil cluster: peer authentication over the local
# socket (the superuser is the OS user running the server), passwords
# (scram-sha-256) over TCP, UTF-8.
VIGIL_INITDB_OPTIONS=(--auth-local=peer --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8)

# The server settings of a vigil cluster whose files are in DIR, as
# postgresql.conf lines: TCP on loopback only, its socket in DIR/run.
vigil_server_conf() {
    cat <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$1/run'
password_encryption = 'scram-sha-256'
logging_collector = off
CONF
}

# Makes (or upgrades) database `vigil` in the running cluster reached through
# DIR (DIR/run, DIR/port): the extension, its search_path, and the roles
# `vigil_app` and `vigil_admin` (sql/bootstrap.sql) with the passwords kept in
# SECRETS (made there the first time). With VERSION, a new database gets that
# earlier version of the extension, and no upgrade is made.
vigil_database() {
    local dir="$1" secrets="$2" version="${3:-}" password admin_password
    psql_super "$dir" -d postgres <<'SQL'
SELECT 'CREATE DATABASE vigil' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'vigil') \gexec
SQL
    password="$(role_password "$secrets" app_password)"
    admin_password="$(role_password "$secrets" admin_password)"
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
}

# Demo credentials for `make run` and `make run-ha` (WHAT, e.g. "make run"):
# keeps those in CREDS of an earlier run while they are still active, otherwise
# makes new ones with the admin command (keys are shown once, so CREDS is where
# they live); makes the demo account and its database `demo` (through PSQL...,
# a superuser psql command on database vigil); writes CREDS, readable by its
# owner only, and prints it. Needs VIGIL_ADMIN_DATABASE_URL in the environment.
demo_credentials() {
    local what="$1" creds="$2" http_addr="$3" database_url="$4"; shift 4
    local sidecar="$VIGIL_ROOT/target/release/vigil-sidecar"
    local account="demo@vigil.local" db="demo" api_key user_key
    old() { [ -f "$creds" ] && sed -n "s/^$1=//p" "$creds" || true; }
    active() { [ -n "$1" ] && [ "$("$sidecar" keys status "${1:0:11}" 2>/dev/null)" = active ]; }
    api_key="$(old VIGIL_API_KEY)"
    user_key="$(old VIGIL_USER_KEY)"
    active "$api_key" || api_key="$("$sidecar" keys create --name "demo ($what)")"
    "$sidecar" accounts create "$account"
    active "$user_key" || user_key="$("$sidecar" user-keys create "$account" --name "demo ($what)")"
    # The demo database, made as the account (a superuser may select it directly).
    printf "SET vigil.account = :'a';\nSELECT FROM vigil.create_database(:'d');\n" |
        "$@" -q -v a="$account" -v d="$db" >/dev/null
    (
        umask 077
        cat > "$creds" <<CREDS
# Written by \`$what\`. Source it: set -a; . ${creds#"$VIGIL_ROOT"/}; set +a
# Manage keys with target/release/vigil-sidecar keys|accounts|user-keys (docs/reference/admin-command.md).
DATABASE_URL=$database_url
VIGIL_ADMIN_DATABASE_URL=$VIGIL_ADMIN_DATABASE_URL
VIGIL_HTTP=http://$http_addr
VIGIL_API_KEY=$api_key
VIGIL_USER_KEY=$user_key
VIGIL_ACCOUNT=$account
VIGIL_DB=$db
CREDS
    )
    step "credentials (also in $creds)"
    grep -v '^#' "$creds"
}

# Stage timing for set-up and builds: `timed NAME COMMAND...` runs COMMAND and
# notes how long it took; `print_times` lists what was timed (nothing when every
# stage was already in place).
TIMES=()
timed() {
    local name="$1" started=$SECONDS
    shift
    "$@" || return
    TIMES+=("$(since "$started" "$name")")
}
# "  MmSSs  NAME": the time since STARTED (a value of $SECONDS), as the
# scripts print each stage's.
since() {
    local seconds=$((SECONDS - $1))
    printf '%4dm%02ds  %s' $((seconds / 60)) $((seconds % 60)) "$2"
}
print_times() {
    ((${#TIMES[@]})) || return 0
    printf '  %s\n' "${TIMES[@]}" >&2
}

# Citus is installed by its users (docs/scaling-out.md), never by this project:
# it is in none of the package registries it installs from. Dies, saying how to
# install it, unless this PostgreSQL has Citus 13.x (citus.so and citus.control).
require_citus() {
    local lib control version
    lib="$("$PG_CONFIG" --pkglibdir)/citus.so"
    control="$("$PG_CONFIG" --sharedir)/extension/citus.control"
    version="$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$control" 2>/dev/null || true)"
    if [ -f "$lib" ] && [[ "$version" == 13.* ]]; then
        return 0
    fi
    cat >&2 <<MSG
error: Citus 13.x is not installed into this PostgreSQL ($PG_CONFIG):
  $lib: $([ -f "$lib" ] && echo present || echo missing)
  $control: ${version:+default_version $version}$([ -n "$version" ] || echo missing)
Citus is not in the package registries this project installs from, so the
project does not install it. Install it as its users do (docs/scaling-out.md,
"Installing Citus"): Citus's own packages for Debian and Ubuntu
(Citus 13.x for PostgreSQL 15 from Citus's package repository), or its container
image. Then run this again. make test does not include the cluster test.
MSG
    exit 1
}

# The sidecar `make run` (`make run-ha`) serves in the foreground writes its
# pid to DIR/sidecar.pid (DIR: the cluster's directory), so stopping the
# cluster stops it first: `make stop-ha` once left it serving on 8081 in
# front of no database. Only a process that is a vigil-sidecar is signalled
# (the pid may have been reused); SIGTERM lets it finish its requests, and
# this returns once it has exited.
record_sidecar() {
    echo "$$" >"$1/sidecar.pid"
}
stop_recorded_sidecar() {
    local file="$1/sidecar.pid" pid
    [ -f "$file" ] || return 0
    pid="$(cat "$file")"
    if [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q 'vigil-sidecar serve'; then
        step "stopping the sidecar (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        # Until it has exited: gone, or a zombie its parent (make, or a
        # test) has yet to reap.
        local waited=0
        while [ -e "/proc/$pid" ] && [ "$(cut -d' ' -f3 2>/dev/null </proc/$pid/stat)" != Z ]; do
            ((waited++ < 600)) || die "the sidecar (pid $pid) did not stop within 60 s"
            sleep 0.1
        done
    fi
    rm -f "$file"
}
