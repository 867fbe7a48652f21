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

# Builds the extension in release mode (`cargo pgrx package`, into
# $VIGIL_STATE/package) and installs each file into this server's directories
# (through sudo when we are not root) by renaming a copy over the old one.
# Backends that have the old vigil.so loaded keep their mapping of it;
# overwriting it in place, as `cargo pgrx install` does, can crash them.
install_extension() {
    local stage="$VIGIL_STATE/package" file dest mode
    rm -rf "$stage"
    (cd "$VIGIL_ROOT/extension" && cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$stage")
    while IFS= read -r -d '' file; do
        dest="${file#"$stage"}"
        case "$dest" in *.so) mode=0755 ;; *) mode=0644 ;; esac
        "${SUDO[@]}" install -D -m "$mode" "$file" "$dest.vigil-new"
        "${SUDO[@]}" mv -f "$dest.vigil-new" "$dest"
    done < <(find "$stage" -type f -print0)
    step "installed the extension into $("$PG_CONFIG" --pkglibdir) and $("$PG_CONFIG" --sharedir)/extension"
}
