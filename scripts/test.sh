#!/usr/bin/env bash
# `make test`: every test, in order of cost. Expects scripts/setup.sh done.
# Everything builds in the release profile, so a cold machine compiles once.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$VIGIL_ROOT"

step "unit tests of the pure crates and the sidecar"
export VIGIL_GEOIP_MMDB="$(vigil_geoip_path)"
cargo test --locked --release -p vigil-auth -p vigil-embed -p vigil-hnsw -p vigil-risk -p vigil-sidecar

step "extension tests in PostgreSQL 15 (cargo pgrx test)"
if is_root; then
    # Postgres will not run as root: run it as `postgres` in a directory it owns.
    pgdata="$VIGIL_STATE/pgrx-test-data"
    rm -rf "$pgdata"
    install -d -o postgres -g postgres -m 0700 "$pgdata"
    if ! sudo -u postgres test -w "$pgdata"; then
        pgdata="/var/lib/postgresql/vigil-pgrx-test"
        rm -rf "$pgdata"; install -d -o postgres -g postgres -m 0700 "$pgdata"
    fi
    (cd extension && cargo pgrx test pg15 --release --runas postgres --pgdata "$pgdata")
else
    (cd extension && cargo pgrx test pg15 --release)
fi

step "release build: extension and sidecar"
install_extension
cargo build --locked --release -p vigil-sidecar

step "end-to-end tests (cluster + sidecar + HTTP)"
cargo test --locked --release -p vigil-e2e
