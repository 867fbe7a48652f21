"""Baseline for `make bench-embed`: raw ONNX Runtime on the model file Vigil uses.

Same tokenizer file, same truncation (256 word pieces), the same input form
(texts packed into one row where the model takes them so, else padded to the
longest of each batch: bench/embed/model_feed.py), mean pooling, L2 normalisation:
the work `vigil.embed` does, without Postgres. Prints texts/s for each batch size.

usage: raw.py MODEL_DIR TEXTS_FILE THREADS BATCH [BATCH...]
"""
import os
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_feed  # noqa: E402


def model_file(model_dir):
    """The file vigil.embed runs (vigil_embed::model_path): the int8 rewrite where
    the CPU has VNNI, else the published model."""
    int8 = f"{model_dir}/model-int8.onnx"
    flags = open("/proc/cpuinfo").read()
    if os.path.isfile(int8) and ("avx512_vnni" in flags or "avx_vnni" in flags):
        return int8
    return f"{model_dir}/model.onnx"


def main():
    model_dir, texts_file, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    batches = [int(b) for b in sys.argv[4:]]
    texts = [line.rstrip("\n") for line in open(texts_file, encoding="utf-8")]

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    path = model_file(model_dir)
    print(f"model {path}", flush=True)
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)

    def embed(chunk):
        return model_feed.embed(session, [e.ids for e in tokenizer.encode_batch(chunk)])

    embed(texts[:8])  # warm-up, as the database side does
    for batch in batches:
        start = time.perf_counter()
        for i in range(0, len(texts), batch):
            embed(texts[i : i + batch])
        elapsed = time.perf_counter() - start
        print(f"raw batch={batch} texts={len(texts)} seconds={elapsed:.3f} texts_per_s={len(texts) / elapsed:.1f}")


if __name__ == "__main__":
    main()
