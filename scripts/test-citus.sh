#!/usr/bin/env bash
# `make test-citus`: the Citus cluster test (tests/tests/citus.rs) against the
# Citus installed into this PostgreSQL by its user (docs/scaling-out.md). Fails
# at once, saying how to install Citus, where it is not; never skips.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$VIGIL_ROOT"
require_citus
scripts/setup.sh
step "release build: extension and sidecar"
install_extension
cargo build --locked --release -p vigil-sidecar
step "the Citus cluster test (coordinator + 2 workers on loopback, about 3 minutes)"
cargo test --locked --release -p vigil-e2e --features citus --test citus
