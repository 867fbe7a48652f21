#!/usr/bin/env bash
# `make bench-embed-int8`: the embedding model with int8 matrix products (the
# per-token rewrite set-up installs, and onnxruntime's dynamic quantization)
# against the published model, on one thread, and their search quality on
# bench/vectordb's labelled set (bench/embed/int8.py says how). Nothing here
# changes the installed files.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

dir="$VIGIL_STATE/bench-int8"
mkdir -p "$dir"
if [ ! -x "$dir/venv/bin/python" ]; then
    step "Python venv with onnxruntime and onnx for the experiment"
    python3 -m venv "$dir/venv"
    "$dir/venv/bin/pip" install --quiet onnxruntime==1.31.1 onnx==1.23.2 tokenizers==0.22.1 numpy==2.4.6
fi
"$dir/venv/bin/python" "$VIGIL_ROOT/bench/embed/int8.py" "$(vigil_model_dir)" "$dir" | tee "$dir/result.txt"
