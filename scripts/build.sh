#!/usr/bin/env bash
# `make build` (and so `make run`): set-up (scripts/setup.sh), then the
# extension built and installed and the sidecar built, both in the release
# profile; prints each stage's time at the end.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$VIGIL_ROOT"

"$VIGIL_ROOT/scripts/setup.sh"
timed "the extension (cargo pgrx package, installed)" install_extension
timed "the sidecar (cargo build --release)" cargo build --locked --release -p vigil-sidecar
step "built"
print_times
