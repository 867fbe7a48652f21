"""What one model call costs by its shape: the installed model (the int8
rewrite where the extension runs it) on one thread, as the extension runs it
(SkipLayerNormalization fusion off), on inputs of n tokens, alone and in
batches of texts of one length; then ONNX Runtime's own profile of the 300
labelled queries one at a time, per operator type.

Run in the venv `make bench-embed-int8` creates:

    . scripts/lib.sh
    .vigil/bench-int8/venv/bin/python bench/embed/scaling.py "$(vigil_model_dir)"

The profile adds about 3 us to every node, so its total is above the
unprofiled time; the unprofiled figures are the first table.
"""

import collections
import json
import os
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model_feed  # noqa: E402


def session(path, profile=False):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    if profile:
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join("/tmp", "vigil-embed-profile")
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=["SkipLayerNormFusion"])


def feed(s, texts):
    """One call's inputs over `texts` (rows of token ids)."""
    return model_feed.inputs(s, [[int(i) for i in row] for row in texts])


def main():
    model_dir = sys.argv[1]
    int8 = os.path.join(model_dir, "model-int8.onnx")
    path = int8 if os.path.exists(int8) else os.path.join(model_dir, "model.onnx")
    print(f"model {path}, one thread")
    s = session(path)
    for batch, tokens in [(1, 4), (1, 8), (1, 12), (1, 16), (1, 32), (1, 64), (1, 128), (4, 12), (8, 12), (16, 12)]:
        ids = np.full((batch, tokens), 2000, np.int64)
        ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
        f = feed(s, ids)
        for _ in range(20):
            s.run(None, f)
        runs = 200 if batch * tokens < 100 else 40
        t0 = time.perf_counter()
        for _ in range(runs):
            s.run(None, f)
        ms = (time.perf_counter() - t0) / runs * 1000
        print(f"RESULT batch {batch:2d} of {tokens:3d} tokens: {ms:.3f} ms a call, {ms / batch:.3f} ms a text")

    tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tokenizer.no_padding()
    with open(os.path.join(HERE, "..", "vectordb", "queries.tsv")) as f:
        queries = [line.split("\t", 1)[1].strip() for line in f.read().splitlines()[1:] if "\t" in line]
    encoded = [tokenizer.encode(q).ids for q in queries]
    feeds = [feed(s, [ids]) for ids in encoded]
    tokens = sum(map(len, encoded)) / len(encoded)
    t0 = time.perf_counter()
    for f in feeds:
        s.run(None, f)
    ms = (time.perf_counter() - t0) / len(feeds) * 1000
    print(f"RESULT {len(feeds)} labelled queries one at a time ({tokens:.1f} tokens on average): {ms:.3f} ms a query")
    # As the sidecar's query embedders get them: calls of a few queries of
    # different lengths, packed where the model takes them so.
    for batch in (4, 8, 16):
        calls = [feed(s, encoded[i:i + batch]) for i in range(0, len(encoded) - batch + 1, batch)]
        for f in calls[:5]:
            s.run(None, f)
        t0 = time.perf_counter()
        for f in calls:
            s.run(None, f)
        ms = (time.perf_counter() - t0) / (len(calls) * batch) * 1000
        form = "packed" if model_feed.takes_packed(s) else "padded"
        print(f"RESULT the labelled queries in calls of {batch}, {form}: {ms:.3f} ms a query")

    p = session(path, profile=True)
    for f in feeds:
        p.run(None, f)
    trace = p.end_profiling()
    with open(trace) as f:
        events = json.load(f)
    os.unlink(trace)
    per_type, calls = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per_type[e["args"]["op_name"]] += e["dur"]
            calls[e["args"]["op_name"]] += 1
    total = sum(per_type.values()) / len(feeds)
    print(f"RESULT profiled: {total / 1000:.3f} ms of operators a query, {sum(calls.values()) / len(feeds):.0f} nodes")
    for op, us in per_type.most_common(8):
        print(f"RESULT   {op}: {us / len(feeds) / 1000:.3f} ms a query in {calls[op] / len(feeds):.0f} calls")


if __name__ == "__main__":
    main()
