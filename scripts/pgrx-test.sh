#!/usr/bin/env bash
# The extension's own tests (`cargo pgrx test pg15 --release [TESTNAME]`), run in a
# private, relocated copy of the PostgreSQL 15 installation (lib.sh: private_pg):
# pgrx installs its test build of vigil.so and the extension's SQL there, never
# into the system directories, where a server started by `make run` may have the
# release vigil.so mapped. Used by `make test` and by the e2e test that checks a
# running server is untouched by it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
test_profile
cd "$VIGIL_ROOT/extension"

PGRX_HOME="$(pgrx_test_home)"
export PGRX_HOME
if is_root; then
    # Postgres will not run as root: run it as `postgres` in a directory it owns.
    pgdata="$VIGIL_STATE/pgrx-test-data"
    rm -rf "$pgdata"
    install -d -o postgres -g postgres -m 0700 "$pgdata"
    if ! sudo -u postgres test -w "$pgdata"; then
        pgdata="/var/lib/postgresql/vigil-pgrx-test"
        rm -rf "$pgdata"; install -d -o postgres -g postgres -m 0700 "$pgdata"
    fi
    exec cargo pgrx test pg15 --release --runas postgres --pgdata "$pgdata" "$@"
else
    exec cargo pgrx test pg15 --release "$@"
fi
