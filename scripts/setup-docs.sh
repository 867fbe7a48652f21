#!/usr/bin/env bash
# Installs mdBook, which builds docs/ into a browsable book, for `make docs` and
# `make test` (running Vigil does not need it). Without its default features (a
# file watcher and a web server) it builds in about two minutes on 2 cores.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if ! mdbook --version 2>/dev/null | grep -q "v$MDBOOK_VERSION\$"; then
    step "installing mdbook $MDBOOK_VERSION (about 2 minutes on 2 cores)"
    started=$SECONDS
    cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features
    step "mdbook installed in $((SECONDS - started)) s"
fi
