"""`make bench-embed-int8`: the embedding model with int8 matrix products
against the published model, speed and search quality.

The published file keeps its matrix weights as int8 with a scale per output
column (Cast to float, then Mul by the scale), and ONNX Runtime folds them
back to float when it loads the file, so every MatMul runs in fp32. Two int8
versions are compared with it:

- "int8": onnxruntime.quantization's dynamic mode on the weights folded to
  float (activations quantized per call, over the whole batch; weights int8
  with a scale per column, which gives back the file's own int8 weights);
- "int8 per token": scripts/model_int8.py's `rewrite` (activations
  quantized per token, so a text's embedding never depends on its
  batch-mates), fed padded; "packed" is the same taking each call's texts
  packed into one row (`expose_packing`), the model set-up installs.

This script:

1. writes both int8 models;
2. times them on one thread (as the extension runs them: SkipLayerNorm
   fusion off; the per-token model also with it on), interleaved over ROUNDS rounds: the labelled
   queries in batches of 1, 8 and 16, and the labelled corpus's records (title
   and content cut to 500 characters, as bench-vectordb stores them) in
   batches of 32, sorted by length;
3. compares search quality on bench/vectordb's labelled set (300 queries,
   3,000 records, one right answer each), vector branch alone: R@1, R@10,
   MRR@10, and the cosine of each embedding to the published model's; also
   queries of the per-token model against records of the published one (a
   database stored before the switch).

The packed per-token model is the one set-up installs (scripts/model_int8.py).

usage: int8.py MODEL_DIR WORK_DIR
"""
import gzip
import json
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model_feed  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))


def fold_weights(src, dst):
    """MatMul(x, Mul(Cast(int8 W), scale)) becomes MatMul(x, W * scale)."""
    model = onnx.load(src)
    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    readers = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    dropped, folded = set(), []
    for matmul in (n for n in graph.node if n.op_type == "MatMul"):
        mul = producer.get(matmul.input[1])
        if mul is None or mul.op_type != "Mul" or readers[matmul.input[1]] != 1:
            continue
        cast = producer.get(mul.input[0])
        if (cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers
                or mul.input[1] not in initializers or readers[cast.output[0]] != 1):
            continue
        weight = numpy_helper.to_array(initializers[cast.input[0]]).astype(np.float32)
        weight *= numpy_helper.to_array(initializers[mul.input[1]]).astype(np.float32)
        name = cast.input[0] + "_folded"
        folded.append(numpy_helper.from_array(weight, name))
        matmul.input[1] = name
        dropped.update((id(mul), id(cast)))
    kept = [n for n in graph.node if id(n) not in dropped]
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(folded)
    used = {name for node in graph.node for name in node.input}
    live = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(live)
    onnx.checker.check_model(model)
    onnx.save(model, dst)
    return len(folded)


def session(path, fuse_skip_layer_norm=False):
    """One thread, and SkipLayerNormFusion off, as the extension runs a model
    (crates/embed); `fuse_skip_layer_norm` puts ONNX Runtime's default back."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    disabled = [] if fuse_skip_layer_norm else ["SkipLayerNormFusion"]
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=disabled)


def feeds(tokenizer, texts, batch):
    """Token ids per call of `batch` texts, in order."""
    return [[tokenizer.encode(t).ids for t in texts[i:i + batch]] for i in range(0, len(texts), batch)]


def embed(sess, batches):
    """Each call fed in the form the model takes, mean pooling and unit
    length as vigil.embed does (bench/embed/model_feed.py)."""
    return np.concatenate([model_feed.embed(sess, calls) for calls in batches])


def main():
    model_dir, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    folded, int8 = f"{work}/model-fp32.onnx", f"{work}/model-int8.onnx"
    count = fold_weights(f"{model_dir}/model.onnx", folded)
    quantize_dynamic(folded, int8, op_types_to_quantize=["MatMul"], weight_type=QuantType.QInt8,
                     per_channel=True)
    print(f"{count} MatMul weights folded; int8 model {os.path.getsize(int8) / 1e6:.1f} MB", flush=True)
    per_token = f"{work}/model-int8-per-token.onnx"
    sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
    import model_int8
    model = onnx.load(f"{model_dir}/model.onnx")
    model_int8.rewrite(model)
    onnx.save(model, per_token)
    packed = f"{work}/model-int8-packed.onnx"
    model_int8.expose_packing(model)
    onnx.save(model, packed)

    tokenizer = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    lines = open(f"{HERE}/../vectordb/queries.tsv", encoding="utf-8").read().splitlines()[1:]
    targets = [line.split("\t", 1)[0] for line in lines]
    queries = [line.split("\t", 1)[1] for line in lines]
    records = [json.loads(line) for line in gzip.open(f"{HERE}/../vectordb/eval-corpus.jsonl.gz", "rt")]
    names = [r["name"] for r in records]
    texts = [r["title"] + "\n" + r["content"][:500] for r in records]
    by_length = sorted(range(len(texts)), key=lambda i: len(texts[i]))

    models = {"published": session(f"{model_dir}/model.onnx"), "int8": session(int8),
              "int8 per token": session(per_token),
              "int8 per token, SkipLayerNorm fused": session(per_token, fuse_skip_layer_norm=True),
              "int8 per token, packed (installed)": session(packed)}
    work_sets = {f"queries, batches of {b}": feeds(tokenizer, queries, b) for b in (1, 8, 16)}
    work_sets["records, batches of 32"] = feeds(tokenizer, [texts[i] for i in by_length[:640]], 32)
    timings = {(name, kind): [] for name in models for kind in work_sets}
    for _ in range(ROUNDS):
        for kind, batches in work_sets.items():
            n = sum(len(calls) for calls in batches)
            for name, sess in models.items():
                embed(sess, batches[:2])  # warm
                start = time.perf_counter()
                embed(sess, batches)
                timings[name, kind].append((time.perf_counter() - start) * 1000 / n)
    for kind in work_sets:
        cur = timings["published", kind]
        line = f"RESULT one thread, {kind}: published {' '.join(f'{t:.2f}' for t in cur)} ms a text"
        for name in list(models)[1:]:
            new = timings[name, kind]
            line += f"; {name} {' '.join(f'{t:.2f}' for t in new)}: {np.median(cur) / np.median(new):.2f}x"
        print(line, flush=True)

    query_feeds = feeds(tokenizer, queries, 16)
    record_feeds = feeds(tokenizer, [texts[i] for i in by_length], 32)
    position = {name: i for i, name in enumerate(names)}
    right = np.array([position[t] for t in targets])
    reference = None
    embedded = {}
    for name, sess in models.items():
        q = embed(sess, query_feeds)
        d = np.empty((len(texts), q.shape[1]), np.float32)
        d[by_length] = embed(sess, record_feeds)
        embedded[name] = (q, d)
    # Records stored before the int8 model and searched with it after.
    embedded["int8 per token queries, published records"] = (embedded["int8 per token"][0],
                                                             embedded["published"][1])
    for name, (q, d) in embedded.items():
        scores = q @ d.T
        rank = (scores > scores[np.arange(len(q)), right][:, None]).sum(1) + 1
        if reference is None:
            reference = (q, d)
        cos_q, cos_d = (q * reference[0]).sum(1), (d * reference[1]).sum(1)
        print(f"RESULT {name}: R@1 {np.mean(rank == 1):.3f}, R@10 {np.mean(rank <= 10):.3f}, "
              f"MRR@10 {np.mean(np.where(rank <= 10, 1 / rank, 0)):.3f}; cosine to published, "
              f"queries min {cos_q.min():.4f} mean {cos_q.mean():.4f}, "
              f"records min {cos_d.min():.4f} mean {cos_d.mean():.4f}", flush=True)


if __name__ == "__main__":
    main()
