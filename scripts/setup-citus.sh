#!/usr/bin/env bash
# Builds Citus (issue 47: vector databases spread over machines) from its
# release source and installs it into this PostgreSQL 15, for the cluster
# tests and scripts/citus-cluster.sh. Opt-in: `make setup` does not call it.
#
# Citus is AGPL-3.0, a separate extension a user installs on their servers:
# it is never linked into vigil and none of its code is in this repository.
# The source is the release tarball beside the project
# (../shared/baselines/citus-13.2.2.tar.gz; CITUS_SRC overrides), built under
# .vigil/citus-build and installed once per tarball (a stamp). One local change
# to build against PostgreSQL 15.20: the server now exports
# have_createdb_privilege(), which Citus 13.2.2 also defines for versions
# before 16 (src/include/pg_version_compat.h); its copy is kept for servers
# before 15.20 only.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

src="${CITUS_SRC:-$VIGIL_ROOT/../shared/baselines/citus-13.2.2.tar.gz}"
build="$VIGIL_STATE/citus-build"
if [ ! -f "$src" ]; then
    # A checkout elsewhere than beside ../shared: the Citus this PostgreSQL
    # has installed, when it is the release the tests expect.
    control="$("$PG_CONFIG" --sharedir)/extension/citus.control"
    if [ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ] && grep -q "default_version = '13.2" "$control" 2>/dev/null; then
        step "no Citus source at $src: using the Citus 13.2 installed in $("$PG_CONFIG" --pkglibdir)"
        exit 0
    fi
    die "no Citus source at $src (set CITUS_SRC to citus-13.2.2.tar.gz)"
fi
stamp="$(sha256sum "$src" | cut -c1-16) $("$PG_CONFIG" --version)"
if [ "$(cat "$build/.stamp" 2>/dev/null)" = "$stamp" ] && [ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ]; then
    exit 0
fi

# Citus's build needs these headers beyond what setup.sh installs.
packages=(libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    step "installing Debian packages for Citus's build: ${missing[*]}"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get could not install ${missing[*]}"
fi

step "building Citus from $src (a few minutes on 2 cores; once per tarball)"
rm -rf "$build" && mkdir -p "$build"
tar -xzf "$src" -C "$build" --strip-components=1
python3 - "$build/src/include/pg_version_compat.h" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
# Citus's own have_createdb_privilege(): a static inline function up to the
# first closing brace at the start of a line.
match = re.search(r"static inline bool\nhave_createdb_privilege\(void\)\n\{.*?\n\}\n", text, re.S)
if not match:
    sys.exit("pg_version_compat.h: have_createdb_privilege() not where Citus 13.2.2 has it")
guarded = "#if PG_VERSION_NUM < 150020\n" + match.group(0) + "#endif\n"
open(path, "w").write(text[:match.start()] + guarded + text[match.end():])
PY
(
    cd "$build"
    ./configure --quiet PG_CONFIG="$PG_CONFIG" >/dev/null
    make -s -j"$(nproc)" >/dev/null
) || die "Citus did not build (log: rerun make in $build)"
"${SUDO[@]}" make -s -C "$build" install >/dev/null
echo "$stamp" > "$build/.stamp"
step "installed Citus $(sed -n 's/^default_version = .\(.*\)./\1/p' "$("$PG_CONFIG" --sharedir)/extension/citus.control") into $("$PG_CONFIG" --pkglibdir)"
