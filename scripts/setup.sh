#!/usr/bin/env bash
# Installs what Vigil needs on a Debian 12 machine, skipping what is in place:
# Debian packages, cargo-pgrx, mdbook, its PG15 registration, and the data files
# (docker/fetch-data.sh). Used by `make run` and `make test`.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# fonts-ocr-b: the MRZ reading tests draw their zones in OCR-B (crates/identity/src/mrz/render.rs).
packages=(postgresql-15 postgresql-server-dev-15 libclang-dev clang sudo python3-pip python3-venv curl jq fonts-ocr-b)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    step "installing Debian packages: ${missing[*]}"
    if ! is_root && ! command -v sudo >/dev/null; then
        die "need root or sudo to install ${missing[*]}"
    fi
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! cargo pgrx --version 2>/dev/null | grep -q " $PGRX_VERSION\$"; then
    step "installing cargo-pgrx $PGRX_VERSION (about 10 minutes on 2 cores)"
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
fi

# mdBook builds docs/ into a browsable book (`make docs`); without its default
# features (a file watcher and a web server) it builds in about two minutes.
if ! mdbook --version 2>/dev/null | grep -q "v$MDBOOK_VERSION\$"; then
    step "installing mdbook $MDBOOK_VERSION (about 2 minutes on 2 cores)"
    cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features
fi

pgrx_config="${PGRX_HOME:-$HOME/.pgrx}/config.toml"
if ! grep -q "^pg15 = \"$PG_CONFIG\"" "$pgrx_config" 2>/dev/null; then
    step "registering PostgreSQL 15 with pgrx"
    cargo pgrx init --pg15 "$PG_CONFIG"
fi

# ONNX Runtime, the embedding model (and its int8 rewrite), the tokenizer and the
# IP-to-country database: the same script and pins as the Docker image.
"$VIGIL_ROOT/docker/fetch-data.sh"

step "set-up complete"
