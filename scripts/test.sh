#!/usr/bin/env bash
# `make test`: every test, in order of cost. Expects scripts/setup.sh done.
# Everything builds in the release profile, so a cold machine compiles once.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$VIGIL_ROOT"

step "unit tests of the pure crates and the sidecar"
export VIGIL_GEOIP_MMDB="$(vigil_geoip_path)"
cargo test --locked --release -p vigil-auth -p vigil-embed -p vigil-hnsw -p vigil-hnsw-page -p vigil-identity -p vigil-risk -p vigil-risk-sim -p vigil-search -p vigil-sidecar
# The MRZ read by the real recogniser (PP-OCRv4 on the installed ONNX Runtime), behind a feature.
cargo test --locked --release -p vigil-identity --features ocr-ort --test mrz_model

step "extension tests in PostgreSQL 15 (cargo pgrx test, in a private copy of the installation)"
scripts/pgrx-test.sh

step "release build: extension and sidecar"
install_extension
cargo build --locked --release -p vigil-sidecar

step "the documentation builds (mdBook; its examples and links are checked by tests/tests/docs.rs)"
mdbook build docs

step "Citus for the cluster test (built once from its release tarball, cached in .vigil/)"
scripts/setup-citus.sh

step "end-to-end tests (cluster + sidecar + HTTP)"
cargo test --locked --release -p vigil-e2e
