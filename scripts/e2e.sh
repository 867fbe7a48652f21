#!/usr/bin/env bash
# The end-to-end suite (tests/tests/e2e/): one test binary, built once, run as
# one process per module in order, so that no two areas share a process or
# run at the same time (a memory budget is measured on a quiet machine). Every
# module runs even after one fails; exits 1 if any failed. Expects the release
# extension installed and the sidecar built (scripts/test.sh does both).
#
#   scripts/e2e.sh                 every module
#   scripts/e2e.sh hnsw identity   those modules
#   scripts/e2e.sh -- --nocapture  every module, arguments to the test binary
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_profile
cd "$VIGIL_ROOT"

modules=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do modules+=("$1"); shift; done
[ "${1:-}" != "--" ] || shift
if [ ${#modules[@]} -eq 0 ]; then
    mapfile -t modules < <(sed -n 's/^mod \([a-z_0-9]*\);$/\1/p' tests/tests/e2e/main.rs)
fi
[ ${#modules[@]} -gt 0 ] || die "no modules in tests/tests/e2e/main.rs"

cargo=(cargo test --locked --release -p vigil-e2e --test e2e)
"${cargo[@]}" --no-run || exit 1
# A module runs by the filter `MODULE::`, a substring: it must not match
# another module's tests (a `mod alpha` inside would match `ha::`).
tests="$("${cargo[@]}" -q -- --list --format terse 2>/dev/null | sed -n 's/: test$//p')"
[ -n "$tests" ] || die "the e2e binary lists no tests"
failed=()
times=()
for module in "${modules[@]}"; do
    grep -qx "mod $module;" tests/tests/e2e/main.rs || die "no module '$module' in tests/tests/e2e/main.rs"
    stray="$(grep -F "$module::" <<<"$tests" | grep -v "^$module::" || true)"
    [ -z "$stray" ] || die "the filter '$module::' would also run: $stray"
    step "e2e: $module"
    started=$SECONDS
    "${cargo[@]}" -- "$module::" "$@" || failed+=("$module")
    times+=("$(since "$started" "$module")")
done
printf 'e2e: each module\n' >&2
printf '  %s\n' "${times[@]}" >&2
if [ ${#failed[@]} -gt 0 ]; then
    printf 'e2e: modules with failures: %s\n' "${failed[*]}" >&2
    exit 1
fi
