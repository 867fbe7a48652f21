# Shared by the scripts in this folder: paths, privilege and logging helpers.
# Source it; it defines variables and functions and runs nothing.

VIGIL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VIGIL_STATE="$VIGIL_ROOT/.vigil"
PG_CONFIG="${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}"
PG_BIN="/usr/lib/postgresql/15/bin"
PGRX_VERSION="0.18.0"
export PATH="$HOME/.cargo/bin:$PATH"

step() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Root runs privileged steps directly; an ordinary user goes through sudo.
if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
is_root() { [ "$(id -u)" -eq 0 ]; }

# Postgres refuses to run as root: as root, server commands run as `postgres`.
as_pg() {
    if is_root; then sudo -u postgres -- "$@"; else "$@"; fi
}

# Where the runtime and model are installed: readable by the postgres user, and the
# extension derives the same paths from the server's own directories.
vigil_model_dir() { echo "$("$PG_CONFIG" --sharedir)/vigil/model"; }
vigil_runtime_path() { echo "$("$PG_CONFIG" --pkglibdir)/vigil/libonnxruntime.so.1.31.1"; }
vigil_geoip_path() { echo "$("$PG_CONFIG" --sharedir)/vigil/geoip/geo-whois-asn-country.mmdb"; }
GEOIP_VERSION="2.3.2026061719"
GEOIP_SHA256="91757a1b06cdcd1955f292e4c4cfc54e091204f998e159a3187f7a2ef3724be0"

# Builds the extension in release mode and installs it into this server's
# directories (through sudo when we are not root).
install_extension() {
    local flags=(--release --pg-config "$PG_CONFIG")
    is_root || flags+=(--sudo)
    (cd "$VIGIL_ROOT/extension" && cargo pgrx install "${flags[@]}")
}
