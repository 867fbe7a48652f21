#!/usr/bin/env bash
# Installs mdBook, which builds docs/ into a browsable book, for `make docs` and
# `make test` (running Vigil does not need it). Without its default features (a
# file watcher and a web server), unoptimised and without debug information, as
# cargo-pgrx is: 47 s on 2 cores against 1m58s for the release build; the book
# still builds in under a second.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if ! mdbook --version 2>/dev/null | grep -q "v$MDBOOK_VERSION\$"; then
    step "installing mdbook $MDBOOK_VERSION (about a minute on 2 cores)"
    started=$SECONDS
    env CARGO_PROFILE_DEV_DEBUG=0 \
        cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features --debug
    step "mdbook installed in $((SECONDS - started)) s"
fi
