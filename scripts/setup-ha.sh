#!/usr/bin/env bash
# Installs what `make run-ha` and the failover test need beyond scripts/setup.sh:
# Patroni (which manages each PostgreSQL node and fails over) and etcd (where
# the nodes agree on who leads), both Debian packages. Opt-in: only `make
# run-ha` and tests/tests/e2e/ha.rs call it. Skips what is in place; exits non-zero
# when they cannot be installed (no root, no sudo, no registry).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

packages=(patroni etcd-server)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
step "installing Debian packages: ${missing[*]}"
if ! is_root && ! command -v sudo >/dev/null; then
    die "need root or sudo to install ${missing[*]}"
fi
# The packages' own services (a default etcd on 2379, a Patroni unit) are not
# wanted: our scripts start private ones. policy-rc.d keeps the installation
# from starting them where an init system would.
policy=/usr/sbin/policy-rc.d
made_policy=""
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
    "${SUDO[@]}" chmod 0755 "$policy"
    made_policy=1
fi
status=0
# Waits for dpkg's lock (another apt-get, such as make test's set-up) rather than failing.
wait_lock=(-o DPkg::Lock::Timeout=300)
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" update -qq || status=$?
if [ "$status" -eq 0 ]; then
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" install -y -qq \
        --no-install-recommends "${missing[@]}" || status=$?
fi
if [ -n "$made_policy" ]; then "${SUDO[@]}" rm -f "$policy"; fi
[ "$status" -eq 0 ] || die "apt-get could not install ${missing[*]}"
step "installed ${missing[*]}"
