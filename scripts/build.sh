#!/usr/bin/env bash
# `make build` (and so `make run`): set-up (scripts/setup.sh), then the
# extension built and installed and the sidecar built, both in the release
# profile; prints each stage's time at the end.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$VIGIL_ROOT"

"$VIGIL_ROOT/scripts/setup.sh" packages
# The sidecar needs nothing of set-up's but the Debian packages: it builds
# while set-up installs cargo-pgrx (in a target directory of cargo install's
# own, so neither waits for the other's lock) and fetches the data files, and
# the two builds fill each other's single-threaded stretches (linking, LTO).
# The extension's build then waits for the sidecar's lock, if it still runs.
started=$SECONDS
sidecar_log="$VIGIL_STATE/build-sidecar.log"
mkdir -p "$VIGIL_STATE"
step "building the sidecar beside set-up (its log: $sidecar_log)"
cargo build --locked --release -p vigil-sidecar >"$sidecar_log" 2>&1 &
sidecar=$!
trap 'kill $sidecar 2>/dev/null || true' EXIT
"$VIGIL_ROOT/scripts/setup.sh"
timed "the extension (cargo pgrx package, installed)" install_extension
if ! wait "$sidecar"; then
    tail -n 30 "$sidecar_log" >&2
    die "the sidecar did not build (cargo build --release -p vigil-sidecar; log: $sidecar_log)"
fi
trap - EXIT
TIMES+=("$(since "$started" "the sidecar (cargo build --release), beside set-up and the extension; done by then")")
step "built in $((SECONDS))s"
print_times
