#!/usr/bin/env bash
# `make test`: every test, in order of cost. Expects scripts/setup.sh done.
# Everything builds in the release profile, so a cold machine compiles once.
#
# Each stage runs even when one before it failed (but for what needs the
# release build), every cargo test with --no-fail-fast, so one failure hides no
# other; the end prints each stage's time and result and every failed test.
#
# VIGIL_TEST_OPT_OUT (docs/getting-started.md) names groups whose dependency
# this machine cannot have, space- or comma-separated: `ha` (Patroni and etcd)
# and `mrz-model` (the ONNX Runtime library and the MRZ model file). Nothing
# else can be opted out of; a group's test without its dependency fails.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$VIGIL_ROOT"

opted_out="$(tr ',' ' ' <<<"${VIGIL_TEST_OPT_OUT:-}" | xargs)"
for group in $opted_out; do
    case "$group" in ha|mrz-model) ;; *) die "VIGIL_TEST_OPT_OUT: unknown group '$group' (ha, mrz-model)" ;; esac
done
export VIGIL_TEST_OPT_OUT="$opted_out"
[ -z "$opted_out" ] || step "opted out (VIGIL_TEST_OPT_OUT): $opted_out"

test_profile

log="$VIGIL_STATE/test-logs"
rm -rf "$log" && mkdir -p "$log"
results=()   # "status seconds name", in order
failed=0

# Runs one stage (a name, then its command), its output shown and kept in
# $log/N.log; records its time and result and goes on either way.
stage() {
    local name="$1" started=$SECONDS status n="${#results[@]}"
    shift
    step "$name"
    "$@" 2>&1 | tee "$log/$n.log"
    status=${PIPESTATUS[0]}
    if [ "$status" -eq 0 ]; then
        results+=("ok $((SECONDS - started)) $name")
    else
        results+=("FAILED $((SECONDS - started)) $name")
        failed=1
    fi
    return "$status"
}

summary() {
    local r status seconds name
    printf '\n\033[1m==> make test: each stage\033[0m\n'
    for r in "${results[@]}"; do
        read -r status seconds name <<<"$r"
        printf '  %-7s %4dm%02ds  %s\n' "$status" $((seconds / 60)) $((seconds % 60)) "$name"
    done
    printf '  total   %4dm%02ds\n' $((SECONDS / 60)) $((SECONDS % 60))
    [ -z "$opted_out" ] || printf '  opted out (VIGIL_TEST_OPT_OUT): %s\n' "$opted_out"
    # Every failed test, as the runners named them (`test NAME ... FAILED`),
    # every test binary that failed as a whole (cargo's closing list), and
    # every e2e module with a failure.
    if grep -h -E '^test .* \.\.\. FAILED$|^    `-p .*`$|^e2e: modules with failures' "$log"/*.log >"$log/failed.txt" 2>/dev/null; then
        printf '\033[1m==> failed:\033[0m\n'
        sed 's/^/  /' "$log/failed.txt"
    fi
}
trap summary EXIT

units=(-p vigil-auth -p vigil-embed -p vigil-hnsw -p vigil-hnsw-page -p vigil-identity -p vigil-risk
       -p vigil-risk-sim -p vigil-search -p vigil-sidecar)
export VIGIL_GEOIP_MMDB="$(vigil_geoip_path)"

stage "formatting (cargo fmt --check)" bash -c \
    'cargo fmt --all --check && cargo fmt --check --manifest-path crates/identity/fuzz/Cargo.toml'
# The benches' Python helpers (bench/*/test_*.py; a folder with tests is a
# package, which discovery needs): the standard library only, about a second.
stage "unit tests of the bench helpers (python3 -m unittest)" \
    python3 -m unittest discover -s bench -p 'test_*.py'
# With the MRZ read by the real recogniser (PP-OCRv4 on the installed ONNX
# Runtime, crates/identity/tests/identity/mrz_model.rs), behind a feature: in
# the same build, since a build of other features compiles the shared crates
# again. `--tests`: the unit and integration tests, not the examples (which
# clippy compiles below) nor doc tests (the crates have none; the docs'
# examples are run by tests/tests/e2e/docs.rs).
stage "unit tests of the pure crates and the sidecar, the MRZ read by the real model" \
    cargo test --locked --release --no-fail-fast "${units[@]}" --features vigil-identity/ocr-ort --tests
# The release build before the extension's tests: both build the extension's
# library to one file (a cdylib's name has no hash), so each build of the
# other features rebuilds it. In this order the test build is the last, and
# the e2e test that runs it again beside a server (side_by_side) finds it
# built; the other order rebuilt it there (1m34s).
released=0
stage "release build: extension and sidecar" \
    bash -c '. scripts/lib.sh && install_extension && cargo build --locked --release -p vigil-sidecar' \
    && released=1
stage "extension tests in PostgreSQL 15 (cargo pgrx test, in a private copy of the installation)" \
    scripts/pgrx-test.sh
stage "lints (cargo clippy -D warnings, every crate and its tests)" \
    cargo clippy --locked --release --keep-going --workspace --all-targets -- -D warnings
# The fuzz targets are a workspace of their own (crates/identity/fuzz).
stage "lints of the fuzz targets" \
    cargo clippy --locked --release --manifest-path crates/identity/fuzz/Cargo.toml -- -D warnings
stage "fuzzing the image paths (cargo fuzz: decode 20 s, analyse 40 s, from the seeds)" \
    scripts/fuzz.sh test
if [ "$released" -eq 1 ]; then
    stage "the documentation builds (mdBook; its examples and links are checked by tests/tests/e2e/docs.rs)" \
        bash -c 'scripts/setup-docs.sh && mdbook build docs'
    stage "end-to-end tests (cluster + sidecar + HTTP), a process per module" \
        scripts/e2e.sh
else
    results+=("FAILED 0 end-to-end tests: not run, the release build failed")
fi
exit "$failed"
