#!/usr/bin/env bash
# Coverage-guided fuzzing of the identity check's image paths (issue 60):
# cargo fuzz (libFuzzer) on the pure crate, crates/identity/fuzz/. Two
# targets: `decode` (the sniff, the JPEG structure walk and the decoders,
# about 400 inputs a second here) and `analyse` (every check after them,
# about 15 a second), from the seeds in crates/identity/fuzz/seeds (issue
# 60's slivers among them).
#
#   scripts/fuzz.sh test     `make test`: `decode` 20 s, `analyse` 40 s, from
#                            the seeds alone, so its time does not grow
#   scripts/fuzz.sh [SECONDS]  `make fuzz`: each target SECONDS (default 900),
#                            from the seeds and the corpus it grew before on
#                            this machine (.vigil/fuzz/TARGET), which it grows
#
# A finding is a panic, an input that runs past 20 s, or an allocation past
# 1 GiB (a working copy out of bounds): the run stops, exits non-zero, and
# keeps the input in .vigil/fuzz/artifacts/TARGET/; cargo fuzz prints the
# command that replays it. Built on the stable toolchain without a sanitizer
# (`-s none`): the crate has no unsafe code, and what is sought (panics,
# hangs, runaway allocations) libFuzzer catches without one; debug
# assertions and overflow checks are on.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if ! cargo fuzz --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
    step "installing cargo-fuzz $CARGO_FUZZ_VERSION (under a minute on 2 cores)"
    env CARGO_PROFILE_DEV_DEBUG=0 \
        cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --debug
fi

if [ "${1:-}" = test ]; then
    decode_s=20 analyse_s=40 kept=0
else
    decode_s="${1:-900}" analyse_s="${1:-900}" kept=1
fi
cd "$VIGIL_ROOT/crates/identity"
fuzz=(cargo fuzz run -s none --target-dir "$VIGIL_ROOT/target/fuzz")
for pair in "decode $decode_s" "analyse $analyse_s"; do
    read -r target seconds <<<"$pair"
    corpus="$VIGIL_STATE/fuzz/$target"
    if [ "$kept" -eq 0 ]; then
        corpus="$VIGIL_STATE/fuzz/test-$target"
        rm -rf "$corpus"
    fi
    artifacts="$VIGIL_STATE/fuzz/artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    step "fuzzing $target for $seconds s"
    started=$SECONDS
    # libFuzzer's progress lines (each new input) and its dictionary left out.
    set +e
    "${fuzz[@]}" "$target" "$corpus" fuzz/seeds -- \
        -max_total_time="$seconds" -max_len=65536 -timeout=20 \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 -artifact_prefix="$artifacts/" \
        -print_final_stats=1 2>&1 | grep -v '^#[0-9]*	\(NEW\|REDUCE\|pulse\)\|^"'
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" -ne 0 ]; then
        die "fuzzing $target found an input that fails (kept in $artifacts/, above)"
    fi
    step "$(since "$started" "fuzzed $target")"
done
